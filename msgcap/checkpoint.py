"""``<checkpoint.dir>/<trail.extract>.cpj`` (properties.md §10.2): where the last durable group ends.

The trail is the source of truth; the checkpoint is written atomically (temporary file, fsync,
rename) after every durable group and serves three purposes on start: recovery reads the trail
only from the checkpointed durable position on (restart time does not grow with the trail), the
trail writer refuses a trail that ends before it (damage, never truncated), and the last message
id fixes the id width and the floor of ``time`` ids. It names its trail (``trail.path``): two
configurations sharing one ``trail.extract`` would otherwise take each other's checkpoint. It
also keeps the source commit time of the last durable transaction: ``msgcap status`` and a
restarted capture measure lag from it.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime

from gendef.durable import atomic_write
from msgcap.trail.julian import datetime_to_unix_us
from msgcap.trail.records import Position
from msgcap.trail.writer import Recovery, TrailWriter
from props.errors import TrailError
from props.inputs import read_input


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
    trail: str = ""  # trail.path of the trail it describes ("" in checkpoints of older versions)
    last_commit_us: int | None = None  # source commit time of the last durable transaction

    @property
    def position(self) -> Position:
        return Position(self.seqno, self.rba, self.file)

    @property
    def time_us(self) -> int | None:
        """When it was written (µs since the Unix epoch): the last durable commit's wall time;
        None when ``time`` is not an ISO time with its zone."""
        try:
            written = datetime.fromisoformat(self.time)
        except ValueError:
            return None
        return datetime_to_unix_us(written) if written.tzinfo is not None else None

    @property
    def recovery(self) -> Recovery:
        """The durable position with what the trail holds there, for ``TrailWriter.open``."""
        return Recovery(self.last_seqid, self.last_ordinal, self.last_txid, self.txnum,
                        self.seqno, self.rba, self.file)


def checkpoint_of(writer: TrailWriter, position: Position, *, last_message_id: str | None,
                  messages: int, last_commit_us: int | None) -> Checkpoint:
    """The checkpoint of what ``writer`` made durable at ``position`` (capture and replay)."""
    return Checkpoint(file=position.file, seqno=position.seqno, rba=position.rba,
                      last_seqid=writer.last_seqid, last_ordinal=writer.last_audit_pos,
                      last_txid=writer.last_txid, last_message_id=last_message_id,
                      txnum=writer.txnum, messages=messages, trail=writer.path,
                      last_commit_us=last_commit_us)


_OPTIONAL_TEXT = (str, type(None))
_KINDS: dict[str, tuple[type, ...]] = {
    "file": (str,), "seqno": (int,), "rba": (int,), "last_seqid": _OPTIONAL_TEXT,
    "last_ordinal": (int, type(None)), "last_txid": _OPTIONAL_TEXT,
    "last_message_id": _OPTIONAL_TEXT, "txnum": (int,), "messages": (int,), "time": (str,),
    "trail": (str,), "last_commit_us": (int, type(None))}


class CheckpointFile:
    """Reads and atomically replaces one checkpoint file."""

    def __init__(self, directory: str, extract: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, f"{extract}.cpj")

    def load(self, trail: str | None = None) -> Checkpoint | None:
        """The stored checkpoint, None when there is none yet; with ``trail``, a checkpoint of
        another trail is an error."""
        try:
            data = json.loads(read_input(self.path))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise TrailError(f"unreadable checkpoint: {exc}", file=self.path) from None
        if not isinstance(data, dict):
            raise TrailError("bad checkpoint: not a JSON object", file=self.path)
        known = {f.name for f in fields(Checkpoint)}
        try:
            cp = Checkpoint(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:
            raise TrailError(f"bad checkpoint: {exc}", file=self.path) from None
        for name, kinds in _KINDS.items():
            if not isinstance(getattr(cp, name), kinds) or isinstance(getattr(cp, name), bool):
                raise TrailError(f"bad checkpoint: {name} is {getattr(cp, name)!r}",
                                 file=self.path)
        if trail is not None and cp.trail and os.path.normpath(cp.trail) != os.path.normpath(
                trail):
            raise TrailError(f"this checkpoint belongs to trail {cp.trail}, not to trail.path="
                             f"{trail}: give each configuration its own trail.extract (or "
                             "checkpoint.dir)", file=self.path)
        return cp

    def save(self, cp: Checkpoint) -> None:
        """Replace the checkpoint atomically and durably."""
        if not cp.time:
            cp = Checkpoint(**{**asdict(cp), "time": datetime.now(UTC).isoformat(
                timespec="microseconds").replace("+00:00", "Z")})
        data = json.dumps(asdict(cp), indent=1).encode("utf-8")
        try:
            # No fsync of the directory: a lost rename leaves the previous, older checkpoint,
            # which is still a correct (if less precise) damage check; the trail is the truth.
            atomic_write(self.path, data, sync_dir=False)
        except OSError as exc:
            raise TrailError(f"cannot write the checkpoint: {exc.strerror}",
                             file=self.path) from None
