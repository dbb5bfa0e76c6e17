"""Trail retention (properties.md §10.1.1, operations.md "Trail retention"): the old trail files
a long-running capture removes, in the spirit of GoldenGate's PURGEOLDEXTRACTS.

``msgcap run`` purges at start and after each rollover. A file is kept when any rule keeps it;
keeping always wins:

* the file being written, and every file from the checkpoint's on (a restart reads from there);
* every file from a downstream reader's position on (``trail.purge.readers``); a reader whose
  position cannot be read keeps every file (a warning says why);
* the newest ``trail.purge.minkeepfiles`` files, and every file modified less than
  ``trail.purge.minkeephours`` ago.

Files go oldest first and only from the start of the sequence, because every reader refuses a
trail with a gap: the first kept file ends the purge. Without ``trail.purge.maxmegabytes`` every
file no rule keeps is removed; with it, only while the trail is larger than that, and a kept file
that leaves it larger is a warning, never a removal. Each removal is logged; the last purge that
removed files is recorded in ``<checkpoint.dir>/<trail.extract>.purge`` for ``msgcap status``.

A reader's position file is JSON, ``{"file": "dirdat/sa000000012", "rba": 1234}`` (or
``"seqno": 12`` instead of ``"file"``): the reader has finished every file before that one.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from gendef.durable import atomic_write, fsync_parent
from msgcap.trail.julian import unix_us_to_iso
from msgcap.trail.reader import sequence_files, trail_seqno
from props.errors import MsgcapError, TrailError
from props.inputs import open_input

if TYPE_CHECKING:
    from props.settings import TrailSettings

log = logging.getLogger("msgcap.trail")

MIB = 1024 * 1024
MAX_POSITION_BYTES = 4096  # a reader's position file is one small JSON object


@dataclass(frozen=True, slots=True)
class Purged:
    """One removed trail file and why it could go."""

    file: str
    bytes: int
    why: str


def record_path(checkpoint_dir: str, extract: str) -> str:
    """Where the last purge is recorded (beside the checkpoint)."""
    return os.path.join(checkpoint_dir, f"{extract}.purge")


def reader_seqno(path: str, trail: TrailSettings) -> int:
    """The sequence number of the file a downstream reader is in, from its position file: it
    has finished every file before it. TrailError (naming the file) when it cannot tell."""
    try:
        with open_input(path) as fh:
            raw = fh.read(MAX_POSITION_BYTES + 1)
    except OSError as exc:
        raise TrailError(f"cannot read the reader position: {exc.strerror or exc}",
                         file=path) from None
    if len(raw) > MAX_POSITION_BYTES:
        raise TrailError(f"not a reader position: over {MAX_POSITION_BYTES} bytes", file=path)
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise TrailError(f"not a reader position: {exc}", file=path) from None
    if not isinstance(data, dict) or not ("file" in data or "seqno" in data):
        raise TrailError('not a reader position: expected {"file": "<trail file>", "rba": N} '
                         'or {"seqno": N, "rba": N}', file=path)
    found = []
    if "seqno" in data:
        seqno = data["seqno"]
        if not isinstance(seqno, int) or isinstance(seqno, bool) or seqno < 0:
            raise TrailError(f"not a reader position: seqno {seqno!r}", file=path)
        found.append(seqno)
    if "file" in data:
        found.append(_file_seqno(data["file"], trail, path))
    if len(set(found)) > 1:
        raise TrailError(f"not a reader position: file and seqno disagree ({found[1]} and "
                         f"{found[0]})", file=path)
    return found[0]


def _file_seqno(name: object, trail: TrailSettings, path: str) -> int:
    """The sequence number of a trail file name of this trail (``sa000000012``, any directory:
    the reader may see the trail under another path)."""
    seqno = (trail_seqno(os.path.basename(name), trail.prefix, trail.seqlen)
             if isinstance(name, str) else None)
    if seqno is None:
        raise TrailError(f"not a reader position: file {name!r} is not a file of trail "
                         f"{trail.path} ({trail.prefix} and {trail.seqlen} ASCII digits)",
                         file=path)
    return seqno


class Retention:
    """The purge of one capture's trail, by ``trail.purge.*``."""

    def __init__(self, trail: TrailSettings, checkpoint_dir: str, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.trail, self.rules = trail, trail.purge
        self.record = record_path(checkpoint_dir, trail.extract)
        self.checkpoint_dir = checkpoint_dir
        self._clock = clock
        self._purged_below: int | None = None  # the checkpoint seqno of the last purge

    def after_checkpoint(self, checkpoint_seqno: int, current_seqno: int) -> list[Purged]:
        """Purge when the checkpoint has reached a newer file than at the last purge (after a
        rollover; at start, the first call)."""
        if self._purged_below is not None and checkpoint_seqno <= self._purged_below:
            return []
        return self.purge(checkpoint_seqno, current_seqno)

    def purge(self, checkpoint_seqno: int, current_seqno: int) -> list[Purged]:
        """Remove the old files no rule keeps; the files removed."""
        self._purged_below = checkpoint_seqno
        files = []
        for seqno, path in sequence_files(self.trail.path, self.trail.seqlen):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            files.append((seqno, path, st.st_size, st.st_mtime))
        total = sum(size for _, _, size, _ in files)
        limit = self.rules.maxmegabytes * MIB if self.rules.maxmegabytes else None
        readers = self._readers()
        now = self._clock()
        doomed: list[Purged] = []
        for index, (seqno, path, size, mtime) in enumerate(files):
            if limit is not None and total <= limit:
                break
            kept = self._kept(seqno, mtime, len(files) - index, now, checkpoint_seqno,
                              current_seqno, readers)
            if kept is not None:
                if limit is not None:
                    log.warning("trail %s: %d bytes, over trail.purge.maxmegabytes=%d, but %s "
                                "is kept: %s", self.trail.path, total, self.rules.maxmegabytes,
                                path, kept)
                break
            doomed.append(Purged(path, size, self._why(total, len(readers))))
            total -= size
        if not doomed or not self._checkpoint_is_durable():
            return []
        removed = []
        for purged in doomed:
            if not self._remove(purged):
                break
            removed.append(purged)
        if removed:
            self._sync(removed[-1].file)
            self._record(removed, total + sum(p.bytes for p in doomed[len(removed):]))
        return removed

    def _readers(self) -> dict[str, int | str]:
        """Each reader's position file → its seqno, or why it cannot be read (logged)."""
        out: dict[str, int | str] = {}
        for path in self.rules.readers:
            try:
                out[path] = reader_seqno(path, self.trail)
            except MsgcapError as exc:
                log.warning("%s; keeping every trail file", exc)
                out[path] = str(exc)
        return out

    def _kept(self, seqno: int, mtime: float, newer: int, now: float, checkpoint_seqno: int,
              current_seqno: int, readers: dict[str, int | str]) -> str | None:
        """Why the file must stay (``newer``: files from it to the newest), None if it may go."""
        rules = self.rules
        if seqno >= current_seqno:
            return "it is the file being written"
        if seqno >= checkpoint_seqno:
            return f"the capture's checkpoint (seqno {checkpoint_seqno}) has not passed it"
        for path, position in readers.items():
            if isinstance(position, str):
                return f"the position of reader {path} cannot be read"
            if seqno >= position:
                return f"reader {path} (at seqno {position}) has not finished it"
        if rules.minkeepfiles and newer <= rules.minkeepfiles:
            return f"it is one of the newest trail.purge.minkeepfiles={rules.minkeepfiles}"
        if rules.minkeephours and now - mtime < rules.minkeephours * 3600:
            return (f"it was modified less than trail.purge.minkeephours={rules.minkeephours} "
                    "hours ago")
        return None

    def _why(self, total: int, readers: int) -> str:
        rules = self.rules
        parts = ["the checkpoint" + (f" and {readers} reader(s)" if readers else "")
                 + " passed it"]
        if rules.maxmegabytes:
            parts.append(f"the trail ({total} bytes) was over trail.purge.maxmegabytes="
                         f"{rules.maxmegabytes}")
        if rules.minkeepfiles:
            parts.append(f"older than the newest trail.purge.minkeepfiles={rules.minkeepfiles}")
        if rules.minkeephours:
            parts.append(f"unchanged for trail.purge.minkeephours={rules.minkeephours} hours")
        return "; ".join(parts)

    def _remove(self, purged: Purged) -> bool:
        """Remove one file; a failure is a warning that ends this purge (capturing goes on)."""
        try:
            os.unlink(purged.file)
        except FileNotFoundError:  # someone else removed it: it is gone all the same
            log.info("trail file %s: already removed", purged.file)
            return True
        except OSError as exc:
            log.warning("trail file %s: cannot purge it: %s; trying again after the next "
                        "rollover", purged.file, exc.strerror or exc)
            return False
        log.info("purged trail file %s (%d bytes): %s", purged.file, purged.bytes, purged.why)
        return True

    def _checkpoint_is_durable(self) -> bool:
        """Make the checkpoint a purge relies on survive a crash: it is renamed into place
        without a directory sync, so a crash could bring back an older one, from a file this
        purge removes."""
        if self.trail.sync == "none":
            return True
        try:
            fsync_parent(self.record)
        except OSError as exc:
            log.warning("%s: cannot sync the checkpoint's directory: %s; not purging",
                        self.checkpoint_dir, exc.strerror or exc)
            return False
        return True

    def _sync(self, removed: str) -> None:
        if self.trail.sync == "none":
            return
        try:
            fsync_parent(removed)
        except OSError as exc:  # the files may come back after a crash: purged again then
            log.warning("%s: cannot sync the trail's directory after a purge: %s",
                        os.path.dirname(removed) or ".", exc.strerror or exc)

    def _record(self, removed: list[Purged], remaining: int) -> None:
        record = {"time": unix_us_to_iso(time.time_ns() // 1000),
                  "files": [asdict(p) for p in removed],
                  "bytes": sum(p.bytes for p in removed), "trail_bytes": remaining}
        try:  # no directory fsync: a record lost in a crash only hides one purge from status
            atomic_write(self.record, json.dumps(record, indent=1).encode("utf-8"),
                         sync_dir=False)
        except OSError as exc:
            log.warning("%s: cannot record the purge: %s", self.record, exc.strerror or exc)


def load_record(checkpoint_dir: str, extract: str) -> dict[str, Any] | None:
    """The last purge as recorded, None when none is; MsgcapError naming the file when damaged."""
    path = record_path(checkpoint_dir, extract)
    try:
        with open_input(path) as fh:
            data = json.loads(fh.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise MsgcapError(f"{path}: unreadable purge record: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), list) or not isinstance(
            data.get("bytes"), int) or not isinstance(data.get("time"), str):
        raise MsgcapError(f"{path}: bad purge record: not one written by msgcap run")
    return data
