"""The one durability helper: directory fsync errors, atomic replacement."""

from __future__ import annotations

import errno
import os

import pytest

from gendef import durable


def _fsync_failing_on_directories(code: int):
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(code, os.strerror(code))
        real(fd)
    return fsync


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOTSUP])
def test_a_file_system_without_directory_fsync_is_not_an_error(tmp_path, monkeypatch, code):
    monkeypatch.setattr(durable.os, "fsync", _fsync_failing_on_directories(code))
    durable.fsync_dir(tmp_path)
    durable.atomic_write(tmp_path / "f", b"x")
    assert (tmp_path / "f").read_bytes() == b"x"


def test_an_io_error_of_directory_fsync_raises(tmp_path, monkeypatch):
    monkeypatch.setattr(durable.os, "fsync", _fsync_failing_on_directories(errno.EIO))
    with pytest.raises(OSError) as info:
        durable.fsync_parent(tmp_path / "f")
    assert info.value.errno == errno.EIO
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(OSError):
            durable.fsync_dir(fd)
    finally:
        os.close(fd)


def test_atomic_write_replaces_and_syncs_file_and_directory(tmp_path, monkeypatch):
    synced: list[str] = []
    real = os.fsync
    monkeypatch.setattr(durable.os, "fsync",
                        lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd)))
    target = tmp_path / "sub" / "defs"
    durable.atomic_write(target, b"old")
    durable.atomic_write(target, b"new", mode=0o600)
    assert target.read_bytes() == b"new"
    assert os.stat(target).st_mode & 0o777 == 0o600
    assert os.listdir(target.parent) == ["defs"]
    assert synced[-1] == str(target.parent) and synced[-2].startswith(str(target.parent / ".defs."))
    synced.clear()
    durable.atomic_write(target, b"again", sync_dir=False)
    assert len(synced) == 1


def test_a_failed_atomic_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "cp"
    durable.atomic_write(target, b"old")

    def full(fd: int, data) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(durable.os, "write", full)
    with pytest.raises(OSError):
        durable.atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["cp"]
