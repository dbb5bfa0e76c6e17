"""Fixtures for the hostile-condition tests: broken file systems built for one test."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def full_fs(tmp_path: Path) -> Iterator[Path]:
    """A directory on a tiny tmpfs (64 KiB) filled to the last byte: creating directories and
    empty files still works, writing any byte fails with ENOSPC. Needs root (mount); skipped
    with the reason otherwise. Unmounted after the test."""
    if os.geteuid() != 0:
        pytest.skip("a full file system needs root to mount a tmpfs")
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip() or done.returncode}")
    try:
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
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)
