"""The spool-directory source ``dir:PATH`` (properties.md §8.1): one file, one message.

Producers write under a temporary name (``.x``, ``*.tmp``, ``*.part``) and rename; files are
consumed in byte-wise name order. A file stays where it is until its transactions are durable,
then moves to ``PATH/.done/`` (discarded ones to ``PATH/.error/``) and the directories are
fsynced, so a crash at any point leaves every undone message in ``PATH`` to be read again.

Nothing outside the directory is ever read: every operation is relative to a descriptor of the
directory (``dir_fd``), files are opened with ``O_NOFOLLOW`` (a symbolic link is refused, not
followed) and ``O_NONBLOCK`` (a FIFO cannot stall capture), and the opened descriptor must be a
regular file with one link (a hard link can make a file from elsewhere appear here). Anything
else is left in place with one warning and not looked at again until it is replaced (another
inode under its name) or msgcap restarts. ``jms.spool.minage`` serves producers that cannot
rename: a file is read once it has not changed for that long; a younger one (and every file
after it in name order) waits.

A ``.msg.json`` file that is not a message in the dump form is not a source failure: it reaches
the capture as ``Unreadable``, for ``error.policy`` (``discard`` moves it to ``.error/``). So does
a file over ``jms.maxbytes`` (``max_bytes``), unread: its size is known before reading, and a file
still growing is read no further than one byte past the limit, so memory stays bounded by it. The
capture keeps its name and headers with an empty body; the file itself moves to ``.error/``
intact.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import NoReturn

from gendef.durable import fsync_dir
from msgcap.dumps import message_from_entry
from msgcap.sources.base import (
    CONNECTED,
    DISCONNECTED,
    Source,
    Unreadable,
    body_size,
    entry_bytes,
    entry_too_long,
    too_large,
)
from parsers.model import Message
from props.errors import MessageError, SourceError
from props.text import name_text

log = logging.getLogger("msgcap.source")

POLL_SECONDS = 1.0
DONE_DIR, ERROR_DIR = ".done", ".error"
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def is_message_name(name: str) -> bool:
    """Whether a directory entry name is a ready message (not hidden, not being written)."""
    return not (name.startswith(".") or name.endswith((".tmp", ".part")))


def spool_path(url: str) -> str:
    """``dir:PATH`` → ``PATH``."""
    if not url.startswith("dir:") or not url[4:]:
        raise SourceError("a spool-directory URL is dir:PATH", url=url)
    return url[4:]


class _NotYet(Exception):
    """The file changed less than ``min_age`` seconds ago; it is ready at ``ready_at``."""

    def __init__(self, ready_at: float) -> None:
        self.ready_at = ready_at


class SpoolSource(Source):
    """Reads ``dir:PATH``; polls once per second when no file is ready."""

    def __init__(self, url: str, *, poll: float = POLL_SECONDS, min_age: float = 0.0,
                 max_bytes: int = 16777216, clock: Callable[[], float] = time.time) -> None:
        self.url = url
        self.path = spool_path(url)
        self._poll = poll
        self.min_age = min_age
        self.max_bytes = max_bytes
        self._clock = clock  # wall clock, compared with file modification times
        self._pending: deque[str] = deque()
        self._inflight: set[str] = set()
        self._refused: dict[str, int] = {}  # name → inode, warned about once, left in place
        self._next_list = 0.0
        self._wake = threading.Event()
        self._dir: int | None = None
        self._subdirs: dict[str, int] = {}

    def open(self) -> None:
        try:
            self._dir = os.open(self.path, _OPEN_DIR)
        except FileNotFoundError:
            raise SourceError("spool directory does not exist", url=self.url) from None
        except OSError as exc:
            raise SourceError(f"cannot open the spool directory: {exc.strerror or exc}",
                              url=self.url) from None
        for sub in (DONE_DIR, ERROR_DIR):
            self._subdirs[sub] = self._open_subdir(sub)
        self._connection_is(CONNECTED)

    def _open_subdir(self, sub: str) -> int:
        """A descriptor of ``PATH/sub``, created (and its name made durable) when missing."""
        assert self._dir is not None  # (open)
        try:
            os.mkdir(sub, 0o755, dir_fd=self._dir)
        except FileExistsError:
            pass
        except OSError as exc:
            raise SourceError(f"cannot create {sub}: {exc.strerror or exc}",
                              url=self.url) from None
        else:
            try:
                fsync_dir(self._dir)
            except OSError as exc:
                raise SourceError(f"cannot make {sub} durable: {exc.strerror or exc}",
                                  url=self.url) from None
        try:  # never a link: discarded and done files must stay inside
            return os.open(sub, _OPEN_DIR | os.O_NOFOLLOW, dir_fd=self._dir)
        except OSError:
            raise SourceError(f"{sub} is not a directory (a link or a file?)",
                              url=self.url) from None

    def receive(self, timeout: float) -> Message | None:
        deadline = time.monotonic() + timeout
        while True:
            while self._pending:
                name = self._pending.popleft()
                try:
                    message = self._read(name)
                except _NotYet as later:  # it and every later name wait (name order)
                    self._pending.clear()
                    wait = max(later.ready_at - self._clock(), 0.01)
                    self._next_list = time.monotonic() + min(wait, self._poll)
                    break
                if message is not None:
                    self._inflight.add(name)
                    return message
            now = time.monotonic()
            if now >= self._next_list:
                self._list()
                if self._pending:
                    continue
                self._next_list = now + self._poll
            wait = min(deadline, self._next_list) - now
            if wait <= 0 and now >= deadline:
                return None
            if self._wake.wait(max(wait, 0.0)):
                self._wake.clear()
                return None

    def _list(self) -> None:
        names = []
        try:
            with os.scandir(self._dir) as it:
                for entry in it:
                    name = entry.name
                    if (not is_message_name(name) or name in self._inflight
                            or self._refused.get(name) == entry.inode()):
                        continue
                    if entry.is_file(follow_symlinks=False):
                        names.append(name)
                    else:
                        self._refuse(name, entry.inode(), "a symbolic link" if
                                     entry.is_symlink() else "not a regular file")
        except OSError as exc:
            why = f"directory unreadable: {exc.strerror or exc}"
            self._connection_is(DISCONNECTED, why)
            raise SourceError(why, url=self.url) from None
        names.sort(key=os.fsencode)
        self._pending.extend(names)

    def _refuse(self, name: str, inode: int, why: str) -> None:
        self._refused[name] = inode
        log.warning("%s: %s: %s; left in place, not read", self.url, name_text(name), why)

    def _inode(self, name: str) -> int:
        try:
            return os.stat(name, dir_fd=self._dir, follow_symlinks=False).st_ino
        except OSError:
            return -1  # gone: nothing to remember

    def _read(self, name: str) -> Message | None:
        """The message of file ``name``; None when it is gone or refused."""
        try:
            fd = os.open(name, _OPEN_FILE, dir_fd=self._dir)
        except FileNotFoundError:
            return None  # taken away since the listing
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):  # a link, since the listing
                self._refuse(name, self._inode(name), "a symbolic link")
                return None
            raise SourceError(f"cannot read {name_text(name)}: {exc.strerror or exc}",
                              url=self.url) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                self._refuse(name, st.st_ino, "not a regular file")
                return None
            if st.st_nlink != 1:
                self._refuse(name, st.st_ino, f"a file with {st.st_nlink} hard links (it may "
                             "be a file from elsewhere); copy it in instead")
                return None
            if self.min_age:
                ready_at = st.st_mtime + self.min_age
                if self._clock() < ready_at:
                    raise _NotYet(ready_at)
            entry = name.endswith(".msg.json")
            longest = entry_bytes(self.max_bytes) if entry else self.max_bytes
            data = _read_at_most(fd, longest + 1) if st.st_size <= longest else b""
            if self.min_age and os.fstat(fd).st_mtime_ns != st.st_mtime_ns:
                raise _NotYet(self._clock() + self.min_age)  # still being written
        except OSError as exc:
            raise SourceError(f"cannot read {name_text(name)}: {exc.strerror or exc}",
                              url=self.url) from None
        finally:
            os.close(fd)
        ident = name_text(name)  # the id and headers are text; moves use the real name
        headers = {"message-id": ident, "timestamp": str(st.st_mtime_ns // 1_000_000),
                   "destination": self.url}
        path = os.path.join(self.path, ident)
        if st.st_size > longest or len(data) > longest:
            refused = entry_too_long if entry else too_large
            self._refuse_message(name, headers, path, refused(
                max(st.st_size, longest), self.max_bytes, source=path,
                at_least=st.st_size <= longest))
        if entry:
            try:
                message = message_from_entry(json.loads(data), path)
            except (ValueError, SourceError) as exc:  # ValueError: bad JSON or UTF-8
                self._refuse_message(name, headers, path, MessageError(
                    f"not a JSON message: {exc}", source=path), data)
            size = body_size(message.body)
            if size > self.max_bytes:
                self._refuse_message(name, headers, path, too_large(size, self.max_bytes,
                                                                    source=path))
            headers.update(message.headers)
            return Message(message.id, headers, message.body, name, path)
        return Message(ident, headers, data, name, path)

    def _refuse_message(self, name: str, headers: dict[str, str], path: str,
                        error: MessageError, body: str | bytes = b"") -> NoReturn:
        """File ``name`` is not a message the capture can take: ``Unreadable``, for
        ``error.policy`` (it stays in flight until acknowledged: moved to ``.error/``)."""
        self._inflight.add(name)
        raise Unreadable(Message(headers["message-id"], headers, body, name, path), error)

    def ack(self, done: Sequence[Message], discarded: Sequence[Message] = ()) -> None:
        if not done and not discarded:
            return
        for messages, sub in ((done, DONE_DIR), (discarded, ERROR_DIR)):
            for message in messages:
                name = message.ack
                if name is None:
                    continue  # acknowledged already (spilled)
                message.ack = None
                self._move(name, sub)
                self._inflight.discard(name)
        try:
            for sub in ((DONE_DIR,) if done else ()) + ((ERROR_DIR,) if discarded else ()):
                fsync_dir(self._subdirs[sub])
            assert self._dir is not None  # (open)
            fsync_dir(self._dir)
        except OSError as exc:
            raise SourceError(f"cannot make the moves durable: {exc.strerror or exc}",
                              url=self.url) from None

    def _move(self, name: str, sub: str) -> None:
        """Move file ``name`` into ``sub``. A file gone was moved by someone else. A ``sub``
        removed meanwhile (its descriptor then names a deleted directory, and a rename into
        it fails with ENOENT too) is created again, once: a file left in place would be
        captured again at the next poll."""
        for attempt in (1, 2):
            try:
                os.replace(name, name, src_dir_fd=self._dir, dst_dir_fd=self._subdirs[sub])
                return
            except FileNotFoundError:
                if not self._exists(name):
                    return  # moved by someone else; nothing left to redo
                if attempt == 2:
                    raise SourceError(f"cannot move {name_text(name)} to {sub}: it vanishes "
                                      "while msgcap moves files into it", url=self.url) from None
            except OSError as exc:
                raise SourceError(f"cannot move {name_text(name)} to {sub}: "
                                  f"{exc.strerror or exc}", url=self.url) from None
            log.warning("%s: %s was removed while msgcap ran; created again", self.url, sub)
            os.close(self._subdirs.pop(sub))
            self._subdirs[sub] = self._open_subdir(sub)

    def _exists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self._dir, follow_symlinks=False)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise SourceError(f"cannot look at {name_text(name)}: {exc.strerror or exc}",
                              url=self.url) from None
        return True

    def interrupt(self) -> None:
        self._wake.set()

    def close(self) -> None:
        self._pending.clear()
        self._inflight.clear()
        for fd in (self._dir, *self._subdirs.values()):
            if fd is not None:
                os.close(fd)
        self._dir, self._subdirs = None, {}


def _read_at_most(fd: int, size: int) -> bytes:
    """The file's bytes, but no more than ``size`` of them (a file may grow while read)."""
    chunks = []
    while size > 0 and (chunk := os.read(fd, min(size, 1 << 20))):
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
