"""One writer per trail and per checkpoint: an OS lock held for the life of the process.

Two ``msgcap run`` on the same properties both appended to one trail and replaced one checkpoint:
records were lost, doubled and reordered while every spool file went to ``.done/``. So ``run``,
``replay`` and ``batch`` take an exclusive ``flock`` on a lock file before they touch anything
(``<checkpoint.dir>/<EXTRACT>.lock``, ``<trail.path>.lock`` beside the trail files, the
``--output`` directory's ``msgcap.lock``) and keep it until they exit. The kernel drops the lock
with the last descriptor, so a process killed with ``kill -9`` leaves no stale lock behind; the
lock file itself stays (deleting it would let a third process lock a new file while the second
still holds the old one).

``holder(path)`` tells, without taking the lock, which process holds it (from ``/proc/locks``):
the second process's error names it, and ``msgcap status`` can show it.

``Lock.try_acquire`` asks without raising and keeps the file open: ``msgcap run --standby``
(``msgcap.standby``) asks again and again until the active capture's locks are free.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import ExitStack
from typing import Self

from props.errors import MsgcapError

PROC_LOCKS = "/proc/locks"


class LockedError(MsgcapError):
    """Another process holds the lock: ``path: locked by process PID (what)``."""

    def __init__(self, path: str, pid: int | None, what: str) -> None:
        self.path, self.pid = path, pid
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(f"{path}: locked by {holder}: another msgcap writes {what}; "
                         "one writer at a time")


class Lock:
    """An exclusive ``flock`` on ``path`` (created if missing), which then holds our pid."""

    def __init__(self, path: str, what: str) -> None:
        self.path, self.what = path, what
        self._fd: int | None = None  # the lock file, open (held or not)
        self.held = False

    def acquire(self) -> None:
        """Take the lock now or raise ``LockedError`` naming the holder; never waits."""
        if not self.try_acquire():
            pid = self.holder()
            self.release()
            raise LockedError(self.path, pid, self.what)

    def try_acquire(self) -> bool:
        """Take the lock if it is free: True; False when another process holds it (the file
        stays open for the next try: a standby asks again and again)."""
        if self.held:
            return True
        if self._fd is None:
            try:
                os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
                                   | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise MsgcapError(f"{self.path}: cannot open the lock file: "
                                  f"{exc.strerror or exc}") from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as exc:
            self.release()
            raise MsgcapError(f"{self.path}: cannot lock: {exc.strerror or exc}") from None
        try:  # the pid is for people (holder() asks the kernel), but a lock directory that
            # cannot take 8 bytes (a full file system) cannot take a checkpoint or trail either
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as exc:
            self.release()
            raise MsgcapError(f"{self.path}: cannot write the lock file: "
                              f"{exc.strerror or exc}") from None
        self.held = True
        return True

    def holder(self) -> int | None:
        """The pid of the process holding the lock (the kernel's table, else the pid it wrote)."""
        return holder(self.path) or _written_pid(self.path)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor drops the lock
            self._fd = None
        self.held = False

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def holder(path: str) -> int | None:
    """The pid of the process holding a ``flock`` on ``path``, None when it is free (or the
    file does not exist). Reads the kernel's lock table: nothing is locked, nothing waits."""
    try:
        st = os.stat(path)
        with open(PROC_LOCKS, encoding="ascii", errors="replace") as fh:
            table = fh.read()
    except OSError:
        return None
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 14017 fe:00:2154513 0 EOF" (blocked waiters have "->")
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and "->" not in fields \
                and fields[5] == device:
            return int(fields[4])
    return None


def _written_pid(path: str) -> int | None:
    """The pid the holder wrote into the lock file (when the kernel's table is not readable)."""
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read(32).strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def writer_locks(*, checkpoint_dir: str | None, extract: str | None, trail: str | None,
                 directory: str | None = None) -> ExitStack:
    """Take the locks of one writer (checkpoint, then trail, then an output directory) and
    return them in an ``ExitStack`` that releases them; the first one held elsewhere raises."""
    stack = ExitStack()
    try:
        for lock in writer_lock_list(checkpoint_dir=checkpoint_dir, extract=extract,
                                     trail=trail, directory=directory):
            stack.enter_context(lock)
    except BaseException:
        stack.close()
        raise
    return stack


def writer_lock_list(*, checkpoint_dir: str | None, extract: str | None, trail: str | None,
                     directory: str | None = None) -> list[Lock]:
    """The locks of one writer, not taken, in the one order every writer takes them (so that
    two processes waiting for them never hold one each)."""
    locks = []
    if checkpoint_dir is not None and extract is not None:
        locks.append(Lock(os.path.join(checkpoint_dir, f"{extract}.lock"),
                          f"the checkpoint of extract {extract}"))
    if trail is not None:
        locks.append(Lock(f"{trail}.lock", f"trail {trail}"))
    if directory is not None:
        locks.append(Lock(os.path.join(directory, "msgcap.lock"), f"output {directory}"))
    return locks
