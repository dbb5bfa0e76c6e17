"""examples/fixed/copybook (``jms.id=activemq``) against the real broker: ``msgcap send`` publishes
over STOMP, so the broker's ids carry session ``-1``, which ``jms.id=activemq`` reads as 0."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.live.conftest import REPO

pytestmark = pytest.mark.broker


def test_copybook_example_runs_against_the_broker_with_activemq_ids(tmp_path, broker,
                                                                    queue) -> None:
    home = tmp_path / "copybook"
    shutil.copytree(REPO / "examples" / "fixed" / "copybook", home)
    prop = home / "dirprm" / "jmsvam.properties"
    text = prop.read_text()
    assert "jms.id=activemq" in text
    prop.write_text(re.sub(r"(?m)^jms\.url=.*$",
                           f"jms.url={broker.url}\njms.destination={queue}", text))

    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def msgcap(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "msgcap.cli", *args], cwd=home, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    msgcap("send", "--prop", str(prop), "messages.jsonl")
    done = msgcap("run", "--prop", str(prop), "--max-idle", "1")
    assert "messages 4" in done.stdout and "discarded 0" in done.stdout
    sys.path.insert(0, str(REPO))
    from msgcap.trail.reader import TrailReader

    seqids = [r.seqid for r in TrailReader(str(home / "dirdat" / "rt000000000"))]
    assert len(seqids) == 4 and all(len(s) == 64 and s.isdigit() for s in seqids)
    assert seqids == sorted(seqids) and len(set(seqids)) == 4
    # the session part (digits 29-38) of a STOMP producer's id is -1, read as 0
    assert {s[28:38] for s in seqids} == {"0" * 10}
