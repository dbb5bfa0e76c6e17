"""Every example's README runs as written and leaves the checkout clean.

Each ``<!-- run -->`` block of an example README starts by copying the example to a temporary
directory (``work=$(mktemp -d) && cp -R examples/NAME/. "$work" && cd "$work"``); the tests run
the blocks from the repository root and check their exit status, what they print and that
``git status --porcelain`` is unchanged. They also run the same commands *in place* — in the
example directory of a scratch repository holding the example's tracked files and the project's
.gitignore — which must not move tracked files or leave anything .gitignore does not cover.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from props.loader import load_settings

from .markdown import output_problem, run_shell, steps, user_env

ROOT = Path(__file__).resolve().parents[2]
READMES = sorted((ROOT / "examples").rglob("README.md"))
COPY = re.compile(r'work=\$\(mktemp -d\) && cp -R (examples/[\w/]+)/\. "\$work" && cd "\$work"\Z')


def _blocks(readme: Path) -> list[tuple[int, str, str | None]]:
    """(line, script, expected output) of each run block."""
    found: list[tuple[int, str, str | None]] = []
    for step in steps(readme):
        if step.kind == "run":
            found.append((step.line, step.text, None))
        elif step.kind == "output" and found:
            line, text, _ = found[-1]
            found[-1] = (line, text, step.text)
    return found


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


def _check(readme: Path, line: int, done: subprocess.CompletedProcess[str],
           expected: str | None) -> None:
    where = f"{readme.relative_to(ROOT)}:{line}"
    assert done.returncode == 0, f"{where}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    if expected is not None:
        problem = output_problem(expected, done)
        assert problem is None, f"{where}: {problem}\n{done.stdout}{done.stderr}"


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.parent.relative_to(ROOT)) for p in paths]


@pytest.mark.parametrize("readme", READMES, ids=_ids(READMES))
def test_every_run_block_starts_in_a_copy(readme):
    blocks = _blocks(readme)
    assert blocks, f"{readme}: no runnable commands"
    for line, script, expected in blocks:
        first = script.splitlines()[0]
        match = COPY.match(first)
        assert match, f"{readme.relative_to(ROOT)}:{line}: starts with {first!r}"
        assert (ROOT / match.group(1)).is_dir()
        assert expected is not None, f"{readme.relative_to(ROOT)}:{line}: no output shown"


@pytest.mark.parametrize("readme", READMES, ids=_ids(READMES))
def test_readme_runs_in_a_copy_and_the_checkout_stays_clean(readme, tmp_path):
    before = _git(ROOT, "status", "--porcelain", "--untracked-files=all")
    for line, script, expected in _blocks(readme):
        _check(readme, line, run_shell(script, ROOT, user_env(tmp_path)), expected)
    assert _git(ROOT, "status", "--porcelain", "--untracked-files=all") == before


@pytest.mark.parametrize("readme", READMES, ids=_ids(READMES))
def test_readme_runs_in_place_without_dirtying_a_checkout(readme, tmp_path):
    """The commands without the copy, in a scratch clone of the example: outputs are ignored,
    tracked files stay where they are."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    example = readme.parent.relative_to(ROOT)
    for name in _git(ROOT, "ls-files", str(example)).splitlines():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, repo / name)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "example")
    for line, script, expected in _blocks(readme):
        first, _, rest = script.partition("\n")
        place = repo / COPY.match(first).group(1)
        _check(readme, line, run_shell(rest, place, user_env(tmp_path)), expected)
        assert _git(repo, "status", "--porcelain", "--untracked-files=all") == "", \
            f"{readme.relative_to(ROOT)}:{line} leaves files .gitignore does not cover"
        _git(repo, "clean", "-qfdX")  # the ignored outputs: the next block starts afresh


def test_every_example_properties_file_has_its_own_extract(monkeypatch):
    """trail.extract names the checkpoint and log: two files sharing one would share them."""
    extracts: dict[str, str] = {}
    for path in sorted((ROOT / "examples").rglob("dirprm/*.properties")):
        monkeypatch.chdir(path.parent.parent)
        extract = load_settings(str(path.relative_to(path.parent.parent))).trail.extract
        assert extract not in extracts, f"{path} and {extracts.get(extract)}: {extract}"
        extracts[extract] = str(path)
    assert len(extracts) == 5
