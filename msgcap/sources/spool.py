"""The spool-directory source ``dir:PATH`` (properties.md §8.1): one file, one message.

Producers write under a temporary name (``.x``, ``*.tmp``, ``*.part``) and rename; files are
consumed in byte-wise name order. A file stays where it is until its transactions are durable,
then moves to ``PATH/.done/`` (discarded ones to ``PATH/.error/``) and the directories are
fsynced, so a crash at any point leaves every undone message in ``PATH`` to be read again.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Sequence

from msgcap.dumps import message_from_entry
from msgcap.sources.base import Source
from parsers.model import Message
from props.errors import SourceError

POLL_SECONDS = 1.0
DONE_DIR, ERROR_DIR = ".done", ".error"


def is_message_name(name: str) -> bool:
    """Whether a directory entry name is a ready message (not hidden, not being written)."""
    return not (name.startswith(".") or name.endswith((".tmp", ".part")))


def spool_path(url: str) -> str:
    """``dir:PATH`` → ``PATH``."""
    if not url.startswith("dir:") or not url[4:]:
        raise SourceError("a spool-directory URL is dir:PATH", url=url)
    return url[4:]


class SpoolSource(Source):
    """Reads ``dir:PATH``; polls once per second when no file is ready."""

    def __init__(self, url: str, *, poll: float = POLL_SECONDS) -> None:
        self.url = url
        self.path = spool_path(url)
        self._poll = poll
        self._pending: deque[str] = deque()
        self._inflight: set[str] = set()
        self._next_list = 0.0
        self._wake = threading.Event()

    def open(self) -> None:
        if not os.path.isdir(self.path):
            raise SourceError("spool directory does not exist", url=self.url)
        for sub in (DONE_DIR, ERROR_DIR):
            os.makedirs(os.path.join(self.path, sub), exist_ok=True)

    def receive(self, timeout: float) -> Message | None:
        deadline = time.monotonic() + timeout
        while True:
            while self._pending:
                name = self._pending.popleft()
                message = self._read(name)
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
        try:
            with os.scandir(self.path) as it:
                names = [e.name for e in it
                         if is_message_name(e.name) and e.name not in self._inflight
                         and e.is_file()]
        except OSError as exc:
            raise SourceError(f"cannot list: {exc.strerror or exc}", url=self.url) from None
        names.sort(key=os.fsencode)
        self._pending.extend(names)

    def _read(self, name: str) -> Message | None:
        path = os.path.join(self.path, name)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
                mtime = os.fstat(fh.fileno()).st_mtime_ns
        except FileNotFoundError:
            return None  # taken away since the listing
        except OSError as exc:
            raise SourceError(f"cannot read {name}: {exc.strerror or exc}", url=self.url) from None
        headers = {"message-id": name, "timestamp": str(mtime // 1_000_000),
                   "destination": self.url}
        if name.endswith(".msg.json"):
            try:
                entry = message_from_entry(json.loads(data), path)
            except ValueError as exc:
                raise SourceError(f"not a JSON message: {exc}", url=path) from None
            headers.update(entry.headers)
            return Message(entry.id, headers, entry.body, name, path)
        try:
            body: str | bytes = data.decode("utf-8")
        except UnicodeDecodeError:
            body = data
        return Message(name, headers, body, name, path)

    def ack(self, done: Sequence[Message], discarded: Sequence[Message] = ()) -> None:
        if not done and not discarded:
            return
        for messages, sub in ((done, DONE_DIR), (discarded, ERROR_DIR)):
            for message in messages:
                name = message.ack
                if name is None:
                    continue  # acknowledged already (spilled)
                message.ack = None
                try:
                    os.replace(os.path.join(self.path, name), os.path.join(self.path, sub, name))
                except FileNotFoundError:
                    pass  # moved by someone else; nothing left to redo
                self._inflight.discard(name)
        for sub in ((DONE_DIR,) if done else ()) + ((ERROR_DIR,) if discarded else ()):
            _fsync_dir(os.path.join(self.path, sub))
        _fsync_dir(self.path)

    def interrupt(self) -> None:
        self._wake.set()

    def close(self) -> None:
        self._pending.clear()
        self._inflight.clear()


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
