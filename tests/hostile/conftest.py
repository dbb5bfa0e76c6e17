"""Fixtures for the hostile-condition tests: a home for ``msgcap`` subprocesses, broken file
systems built for one test, and polling with a deadline."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import _free_port as free_port  # noqa: F401 - for the tests here
from tests.live.conftest import Work


@pytest.fixture
def work(tmp_path: Path) -> Work:
    return Work(tmp_path / "home")


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """``condition()``'s first true value, polled until ``timeout``."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)
    return value


@contextlib.contextmanager
def tmpfs(mount: Path, options: str) -> Iterator[Path]:
    """A 64 KiB tmpfs mounted on directory ``mount`` (``options``: e.g. ``ro``), unmounted
    afterwards. Needs root; skips the test with the reason otherwise."""
    if os.geteuid() != 0:
        pytest.skip("a tmpfs of its own needs root to mount")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"{options},size=64k".lstrip(","),
                           "tmpfs", str(mount)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.fixture
def full_fs(tmp_path: Path) -> Iterator[Path]:
    """A directory on a tiny tmpfs (64 KiB) filled to the last byte: creating directories and
    empty files still works, writing any byte fails with ENOSPC. Needs root (mount); skipped
    with the reason otherwise. Unmounted after the test."""
    mount = tmp_path / "full"
    mount.mkdir()
    with tmpfs(mount, ""):
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
        finally:
            os.close(fd)
        yield mount
