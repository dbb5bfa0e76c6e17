"""``archive.dir`` (properties.md §10.3): every consumed message, once, as a JSON Lines dump.

Files are ``<archive.dir>/<EXTRACT>-<YYYYMMDD>-<nnnnnn>.jsonl`` (UTC date), a new one per day and
after ``trail.megabytes``; every start opens a new file, so an entry cut by a crash never has
another appended after it. Entries carry the raw source id and ``"received"``; they are made
durable with the trail's policy before any message is acknowledged, so ``msgcap replay`` of the
archive sees at least every acknowledged message.

Once means once per message, not per delivery: after the source reconnected (``reconnected``),
a broker redelivers what it had not seen acknowledged — at most its prefetch window, all among
the messages consumed last — and those are not archived again. The raw ids of the last
``REMEMBERED`` consumed messages are kept for that. Across a restart nothing is remembered: a
message archived but not acknowledged before a stop or a crash is archived again when it is
delivered again (``msgcap replay`` of the archive skips it as a duplicate).
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, BinaryIO

from gendef.durable import fsync_dir
from msgcap.dumps import entry_line
from parsers.model import Message
from props.errors import SourceError

if TYPE_CHECKING:
    from props.settings import SyncMode

REMEMBERED = 20_000  # raw ids: far more than a broker redelivers (jms.prefetch, 1000 by default)


class Archive:
    """Appends dump entries; ``flush_durable`` writes (and, unless ``sync='none'``, fsyncs)."""

    def __init__(self, directory: str, extract: str, *, megabytes: int = 100,
                 sync: SyncMode = "batch", clock: Callable[[], datetime] = lambda: datetime.now(UTC)
                 ) -> None:
        self.directory = directory
        self.extract = extract
        self.limit = megabytes * 1024 * 1024
        self.sync = sync
        self._clock = clock
        self._fh: BinaryIO | None = None
        self._day = ""
        self._size = 0
        self._dirty = False
        self.path = ""
        self.files: list[str] = []
        self._lately: OrderedDict[str, None] = OrderedDict()  # raw ids consumed lately
        self._again: OrderedDict[str, None] = OrderedDict()  # ... that may be redelivered

    def append(self, message: Message, received: datetime | None = None, *,
               id: str | None = None) -> None:
        """Add one consumed message, unless it is one redelivered after ``reconnected``;
        ``id``: its raw id, once the pipeline replaced it."""
        raw = message.id if id is None else id
        _remember(self._lately, raw)
        if raw in self._again:
            del self._again[raw]
            return
        now = received or self._clock()
        day = now.strftime("%Y%m%d")
        line = entry_line(message, id=id, received=now.isoformat(timespec="microseconds")
                          .replace("+00:00", "Z")).encode("utf-8")
        if self._fh is None or day != self._day or (self._size and
                                                    self._size + len(line) > self.limit):
            self._next_file(day)
        assert self._fh is not None  # (_next_file opened one)
        try:
            self._fh.write(line)
        except OSError as exc:
            raise SourceError(f"cannot write the archive: {exc.strerror}", url=self.path) from None
        self._size += len(line)
        self._dirty = True

    def _next_file(self, day: str) -> None:
        self._close_file()
        # ASCII digits only: ``\d`` and ``int`` take other scripts' digits too
        pattern = re.compile(rf"{re.escape(self.extract)}-{day}-([0-9]{{6}})\.jsonl\Z")
        try:
            os.makedirs(self.directory, exist_ok=True)
            numbers = [int(m.group(1)) for n in os.listdir(self.directory)
                       if (m := pattern.match(n))]
        except OSError as exc:
            raise SourceError(f"cannot use the archive directory: {exc.strerror}",
                              url=self.directory) from None
        self.path = os.path.join(self.directory,
                                 f"{self.extract}-{day}-{max(numbers, default=-1) + 1:06d}.jsonl")
        try:
            self._fh = open(self.path, "xb", buffering=1 << 20)  # noqa: SIM115 - kept open
        except OSError as exc:
            raise SourceError(f"cannot create the archive: {exc.strerror}",
                              url=self.path) from None
        self._day, self._size = day, 0
        self.files.append(self.path)
        if self.sync != "none":
            try:
                fsync_dir(self.directory)
            except OSError as exc:
                raise SourceError(f"cannot create the archive: {exc.strerror}",
                                  url=self.path) from None

    def reconnected(self) -> None:
        """The source reconnected: what was consumed lately may be delivered again (it was not
        acknowledged, or its acknowledgement was lost), and is archived already."""
        for raw in self._lately:
            _remember(self._again, raw)
        self._lately.clear()

    def flush_durable(self) -> None:
        """Everything appended so far reaches the file (and the disk, unless sync is none)."""
        if self._fh is None or not self._dirty:
            return
        try:
            self._fh.flush()
            if self.sync != "none":
                os.fsync(self._fh.fileno())
        except OSError as exc:
            raise SourceError(f"cannot write the archive: {exc.strerror}", url=self.path) from None
        self._dirty = False

    def _close_file(self) -> None:
        if self._fh is not None:
            self.flush_durable()
            self._fh.close()
            self._fh = None

    def close(self) -> None:
        self._close_file()


def _remember(ids: OrderedDict[str, None], raw: str) -> None:
    """Add ``raw`` as the newest of ``ids``, forgetting the oldest past ``REMEMBERED``."""
    ids[raw] = None
    ids.move_to_end(raw)
    if len(ids) > REMEMBERED:
        ids.popitem(last=False)
