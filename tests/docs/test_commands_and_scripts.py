"""What a newcomer reads and runs first (issue 26 items 5 and 6): the README's commands table
lists every option each command's --help lists, every ``scripts/*.sh --help`` answers on stdout,
and ``scripts/demo.sh`` (the README's first command) installs msgcap's runtime only."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from msgcap.cli import COMMANDS, main

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "scripts").glob("*.sh"))


def _options(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text)) - {"--help"}


def _readme_rows() -> dict[str, str]:
    """The first cell of each row of the README's Commands table, by command."""
    section = (REPO / "README.md").read_text().split("## Commands", 1)[1].split("\n## ", 1)[0]
    cells = re.findall(r"^\| (`[^\n]*?`) \|", section, re.MULTILINE)
    return {m.group(1): cell for cell in cells
            if (m := re.match(r"`msgcap ([a-z]+) ", cell)) is not None}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_readme_lists_every_option_of_each_command(command: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    help_options = _options(capsys.readouterr().out)
    rows = _readme_rows()
    assert command in rows, f"README.md's Commands table has no row for msgcap {command}"
    assert _options(rows[command]) == help_options


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_every_script_answers_help_on_stdout(script: Path) -> None:
    done = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True,
                          check=False, timeout=30, cwd=REPO / "scripts")
    assert (done.returncode, done.stderr) == (0, "")
    first = next(line for line in script.read_text().splitlines()
                 if not line.startswith("#!")).removeprefix("# ")
    assert done.stdout.splitlines()[0] == first


def test_msgcap_commands_take_gendef_spelling_of_prop(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(REPO / "examples" / "delimited", tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    props = "dirprm/jmsvam.properties"
    assert main(["status", "-prop", props]) == 3  # never run: read, not refused
    assert "never-started" in capsys.readouterr().out
    assert main(["replay", "-prop=" + props, "messages.jsonl"]) == 0
    assert main(["status", "-prop", props]) == 3
    assert "trail durable: dirdat/sa000000000" in capsys.readouterr().out


def test_demo_installs_the_runtime_only_and_runs(tmp_path: Path) -> None:
    """The README's first command as a user runs it, into a fresh virtualenv (pip's index or
    wheel cache must answer: about 10 s here)."""
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(MSGCAP_VENV=str(venv), TMPDIR=str(tmp_path),
               PATH=os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                    if Path(sys.executable).parent != Path(p)))
    done = subprocess.run(["bash", "scripts/demo.sh"], cwd=REPO, env=env, capture_output=True,
                          text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Column     3 CREATED : '2024-03-01:11:10:00'" in done.stdout
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list",
                                "--format=freeze"], capture_output=True, text=True, check=True)
    names = {line.split("==")[0].lower() for line in installed.stdout.splitlines()}
    assert {"msgcap", "lxml", "elementpath", "stomp.py"} <= names
    assert not names & {"pytest", "pyspark", "hypothesis", "atheris", "mypy", "ruff"}
