"""``<checkpoint.dir>/<trail.extract>.cpj`` (properties.md §10.2): where the last durable group ends.

The trail is the source of truth; the checkpoint is written atomically (temporary file, fsync,
rename) after every durable group and serves two purposes on start: the
trail writer refuses a trail that ends before the checkpointed durable position (damage, never
truncated), and the last message id fixes the id width and the floor of ``time`` ids.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime

from msgcap.trail.records import Position
from props.errors import TrailError


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One durable point: the trail position after it and the counters to continue from."""

    file: str
    seqno: int
    rba: int
    last_seqid: str | None = None
    last_ordinal: int | None = None
    last_txid: str | None = None
    last_message_id: str | None = None
    txnum: int = 0
    messages: int = 0
    time: str = ""

    @property
    def position(self) -> Position:
        return Position(self.seqno, self.rba, self.file)


class CheckpointFile:
    """Reads and atomically replaces one checkpoint file."""

    def __init__(self, directory: str, extract: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, f"{extract}.cpj")

    def load(self) -> Checkpoint | None:
        """The stored checkpoint, None when there is none yet."""
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise TrailError(f"unreadable checkpoint: {exc}", file=self.path) from None
        known = {f.name for f in fields(Checkpoint)}
        try:
            return Checkpoint(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:
            raise TrailError(f"bad checkpoint: {exc}", file=self.path) from None

    def save(self, cp: Checkpoint) -> None:
        """Replace the checkpoint atomically and durably."""
        if not cp.time:
            cp = Checkpoint(**{**asdict(cp), "time": datetime.now(UTC).isoformat(
                timespec="microseconds").replace("+00:00", "Z")})
        os.makedirs(self.directory, exist_ok=True)
        tmp = self.path + ".tmp"
        data = json.dumps(asdict(cp), indent=1).encode("utf-8")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            # No fsync of the directory: a lost rename leaves the previous, older checkpoint,
            # which is still a correct (if less precise) damage check; the trail is the truth.
            os.replace(tmp, self.path)
        except OSError as exc:
            raise TrailError(f"cannot write the checkpoint: {exc.strerror}",
                             file=self.path) from None
