"""A bad properties file stops a command with one line ``file:line: property: reason``, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_replay(tmp_path: Path, properties: str, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    (tmp_path / "bad.properties").write_text(properties)
    (tmp_path / "in.jsonl").write_text('{"id": "1", "body": "x"}\n')
    environ = {k: v for k, v in os.environ.items() if k not in ("MQ_USER", "MQ_PASSWORD")}
    environ.update(env or {})
    environ["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "msgcap.cli", "replay", "--prop", "bad.properties", "in.jsonl"],
        check=False, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120)


BASE = "parser.type=delim\ndelim.sourcedefs=dirdef/x.def\ndelim.header=optype\n"


def test_bad_value_is_one_line_and_exit_2(tmp_path):
    result = run_replay(tmp_path, BASE + "trail.sync=always\n")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].endswith("bad.properties:4: trail.sync: 'always' is not one of "
                             "transaction, batch, none")
    assert not (tmp_path / "dirdat").exists()


def test_secret_not_echoed_on_errors(tmp_path):
    result = run_replay(tmp_path, BASE + "jms.password=${MQ_PASSWORD}\njms.pasword=Hunter22\n",
                        {"MQ_PASSWORD": "Hunter22"})
    assert result.returncode == 2
    assert "Hunter22" not in result.stderr + result.stdout
    assert "bad.properties:5: jms.pasword: unknown property; did you mean jms.password?" in (
        result.stderr)


def test_unset_env_names_variable(tmp_path):
    result = run_replay(tmp_path, BASE + "trail.extract=${MQ_USER}\n")
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "bad.properties:4: trail.extract: environment variable MQ_USER is not set")


def test_a_loader_warning_carries_the_warning_tag(tmp_path):
    """(issue 35) as every other warning of the command does, on stderr."""
    result = run_replay(tmp_path, BASE + "trail.sync=batch\ntrail.sync=none\n")
    lines = result.stderr.splitlines()
    assert ("msgcap replay: WARNING: bad.properties:5: trail.sync is set again; line 5 wins over "
            "line 4") in lines, result.stderr
