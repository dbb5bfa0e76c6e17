"""``msgcap --help`` tells what a user needs without the repository at hand: every command
(``gendef`` included), the exit statuses the code really returns, and where the log goes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from msgcap.cli import COMMANDS, INTERRUPTED, main
from props.errors import MsgcapError
from props.settings import Settings, TrailSettings

BIN = Path(sys.executable).parent


def _help(command: str = "msgcap", *args: str) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it."""
    return subprocess.run([str(BIN / command), *args, "--help"], capture_output=True,
                          text=True, check=False, timeout=60)


@pytest.fixture(scope="module")
def help_text() -> str:
    done = _help()
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_lists_every_command_and_gendef(help_text):
    for name in COMMANDS:
        assert re.search(rf"^\s+{name}\s+\S", help_text, re.MULTILINE), name
    assert re.search(r"^\s+gendef -prop FILE \[-out FILE\]$", help_text, re.MULTILINE)
    assert "gendef --help" in help_text


def _status_lines(help_text: str) -> dict[int, str]:
    section = help_text.split("exit status:\n", 1)[1].split("\n\n", 1)[0]
    return {int(m.group(1)): m.group(2)
            for m in re.finditer(r"^  (\d+)\s+(.*)$", section, re.MULTILINE)}


def test_documents_the_exit_statuses_the_code_returns(help_text, tmp_path, capsys):
    statuses = _status_lines(help_text)
    assert set(statuses) == {0, 1, MsgcapError.exit_code, 3, 4, INTERRUPTED}
    assert "error" in statuses[MsgcapError.exit_code]
    assert "Ctrl-C" in statuses[INTERRUPTED]
    assert statuses[3].startswith("msgcap status: no capture is running")
    assert statuses[4].startswith("msgcap status: the last run abended")
    # a bad property and a bad command line both end with the documented error status
    bad = tmp_path / "bad.properties"
    bad.write_text("parser.type=csv\n")
    assert main(["replay", "--prop", str(bad), str(bad)]) == MsgcapError.exit_code
    assert "bad.properties:1: parser.type:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["dump"])
    assert exc.value.code == MsgcapError.exit_code


def test_says_where_the_log_goes(help_text):
    text = " ".join(help_text.split())
    default = Settings(trail=TrailSettings(extract="EXTRACT")).log_file
    assert default == "dirrpt/EXTRACT.log"
    assert "msgcap run logs to gg.log.file (default dirrpt/<trail.extract>.log" in text
    assert "msgcap batch logs to DIR/batch.log of its --output" in text
    assert "The other commands log to stderr." in text


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_help(command):
    done = _help("msgcap", command)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: msgcap {command}")
    assert ("--defs" if command == "dump" else "--prop") in done.stdout


def test_gendef_help_names_its_exit_statuses():
    done = _help("gendef")
    assert done.returncode == 0
    assert f"Exit status: 0 done, {MsgcapError.exit_code} error." in done.stdout


def test_status_help_names_its_exit_statuses():
    from msgcap.commands.status import ABENDED, NOT_RUNNING, RUNNING

    done = _help("msgcap", "status")
    assert done.returncode == 0
    statuses = _status_lines(done.stdout)
    assert set(statuses) == {RUNNING, NOT_RUNNING, ABENDED, MsgcapError.exit_code}
    assert "running" in statuses[RUNNING] and "abended" in statuses[ABENDED]
