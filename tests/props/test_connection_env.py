"""``${NAME}`` in the settings only a broker connection reads is resolved by the commands that
connect (issue 35): ``jms.password=${MQ_PASSWORD}``, as the guide recommends, does not stop the
commands that never contact the broker when the variable is unset; run, send and check still
refuse with the one line naming it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROP = "dirprm/jmsvam.properties"
UNSET = f"{PROP}:13: jms.password: environment variable MQ_PASSWORD is not set"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The copybook example with a broker source (nothing listens there) and its password in
    ``${MQ_PASSWORD}``."""
    root = tmp_path_factory.mktemp("offline") / "home"
    shutil.copytree(REPO / "examples" / "fixed" / "copybook", root)
    prop = root / PROP
    prop.write_text(prop.read_text().replace(
        "jms.url=dir:dirspool\n", "jms.url=stomp://127.0.0.1:9\njms.destination=retail.changes\n"
        "jms.user=capture\njms.password=${MQ_PASSWORD}\n"))
    assert prop.read_text().splitlines()[12] == "jms.password=${MQ_PASSWORD}"
    return root


def command(home: Path, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MQ_PASSWORD"}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=home, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_gendef_replay_and_status_need_no_password(home):
    done = command(home, "gendef.cli", "-prop", PROP, "-out", "dirdef/out.def")
    assert done.returncode == 0, done.stderr
    done = command(home, "msgcap.cli", "replay", "--prop", PROP, "messages.jsonl")
    assert done.returncode == 0, done.stderr
    assert (home / "dirdat" / "rt000000000").stat().st_size > 0
    done = command(home, "msgcap.cli", "status", "--prop", PROP)
    assert done.returncode == 3, done.stderr  # no capture running: the state, not an error
    assert "MQ_PASSWORD" not in done.stderr


def test_batch_needs_no_password(home):
    done = command(home, "msgcap.cli", "batch", "--prop", PROP, "--input", "messages.jsonl",
                   "--output", "batch-out", "--master", "local[1]")
    assert done.returncode == 0, done.stderr
    assert "MQ_PASSWORD" not in done.stderr


@pytest.mark.parametrize("args", [("run", "--prop", PROP, "--max-idle", "1"),
                                  ("send", "--prop", PROP, "messages.jsonl"),
                                  ("check", "--prop", PROP),
                                  ("check", "--prop", PROP, "--no-connect")])
def test_the_commands_that_connect_refuse_with_one_line(home, args):
    done = command(home, "msgcap.cli", *args)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"msgcap {args[0]}: error: {UNSET}"]
