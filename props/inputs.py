"""Input files are read only when they are regular files.

Reading ``/dev/zero`` whole (``delim.sourcedefs=/dev/zero``, ``--prop /dev/zero``) grows until
memory runs out, and opening a FIFO waits for a writer forever. So every file msgcap reads
(properties, definitions, copybooks, dumps, trails, checkpoints) is opened here: with
``O_NONBLOCK`` (a FIFO opens at once) and refused, before anything is read, unless the opened
descriptor is a regular file. The refusal is an ``OSError`` whose ``strerror`` says what the
file is, so each caller's own error names the file, as for any other file it cannot read.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def open_input(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for binary reading; ``OSError`` ("not a regular file (a FIFO)") when it
    is anything else than a regular file (a symbolic link to one is followed)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((what for test, what in _KINDS if test(mode)), "a special file")
            raise OSError(errno.EINVAL, f"not a regular file ({kind})", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | os.PathLike[str]) -> bytes:
    """The whole content of regular file ``path`` (``open_input``)."""
    with open_input(path) as fh:
        return fh.read()
