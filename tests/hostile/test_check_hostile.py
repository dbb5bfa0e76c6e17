"""``msgcap check`` where the file system refuses: a read-only trail directory is a problem for
check as it is for run, which check finds without trying to write (issue 26)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.check.test_check import PROP, Home, errors
from tests.hostile.conftest import tmpfs


@pytest.fixture
def read_only_trail(tmp_path: Path) -> Iterator[Home]:
    """The example home whose ``dirdat`` is a read-only tmpfs (root ignores permission bits,
    not a read-only mount). Needs root; skipped otherwise."""
    home = Home(tmp_path / "home")
    dirdat = home.root / "dirdat"
    dirdat.mkdir()
    with tmpfs(dirdat, "ro"):
        yield home


def test_a_read_only_trail_directory_is_a_problem_as_run_finds_it(read_only_trail: Home
                                                                  ) -> None:
    home = read_only_trail
    [line] = errors(home.check())
    assert line == "msgcap check: error: dirdat: directory not writable"
    run = home.msgcap("run", "--prop", PROP, "--max-idle", "0.1")
    assert run.returncode == 2 and "dirdat" in run.stderr  # what check foretold
