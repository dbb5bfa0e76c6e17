"""Durable files: the one place that fsyncs directories and replaces files atomically.

A file's data is durable after ``fsync`` of the file; its *name* (a create, rename or unlink) is
durable only after ``fsync`` of the directory holding it. Every writer of msgcap and gendef that
needs either (trail files, checkpoint, archive, spill journal, spool moves, discard file,
``msgcap send`` spool files, batch outputs, source definitions) goes through this module, so the
rules below hold everywhere.

It lives in ``gendef``, the lowest layer that writes files (``props`` only reads them), so that
both ``gendef`` and ``msgcap`` can use it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile

# Errors of fsync on a directory that mean "this file system cannot do that", not "data lost".
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})


def fsync_dir(directory: str | os.PathLike[str] | int) -> None:
    """Make the names in ``directory`` (a path, or an open descriptor of it) durable.

    Some file systems (certain FUSE and network file systems) reject fsync of a directory with
    EINVAL or ENOTSUP: there is nothing more a program can do for their names, so that is
    ignored, as PostgreSQL and SQLite do. Every other error (EIO, ENOSPC, a directory that
    cannot be opened) raises OSError: it may mean a rename or a new file is not on disk, and
    the caller must not acknowledge anything that depends on it.
    """
    if isinstance(directory, int):
        _fsync_directory_fd(directory)
        return
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _fsync_directory_fd(fd)
    finally:
        os.close(fd)


def _fsync_directory_fd(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED:
            raise


def fsync_parent(path: str | os.PathLike[str]) -> None:
    """``fsync_dir`` of the directory holding ``path`` (after creating, renaming or removing it)."""
    fsync_dir(os.path.dirname(os.fspath(path)) or ".")


def atomic_write(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o644,
                 sync_dir: bool = True) -> None:
    """Replace ``path`` by a file holding ``data``, all or nothing, even across a crash.

    The data goes to a uniquely named temporary file in the same directory (created with its
    parents if missing), is fsynced and then renamed over ``path``, and the directory is
    fsynced. ``sync_dir=False`` leaves that last step to the caller: one ``fsync_dir`` after
    many files, or none where losing the rename in a crash only leaves the previous file. On an
    error, OSError is raised and no temporary file is left behind.
    """
    path = os.fspath(path)
    directory, name = os.path.split(path)
    try:
        os.makedirs(directory or ".", exist_ok=True)
    except FileExistsError:  # a file where the directory should be: say so
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), directory) from None
    fd, tmp = tempfile.mkstemp(dir=directory or ".", prefix=f".{name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync_dir:
        fsync_dir(directory or ".")
