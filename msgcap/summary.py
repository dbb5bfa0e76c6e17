"""The result of ``msgcap run``, ``replay`` and ``batch`` as one JSON object (``--json``).

Scripts read this instead of the text summary: ``results`` builds it from the pipeline's
``Stats`` (the counters the text summary shows) plus how the command ended, so every command
prints the same keys (docs/operations.md, "Results as JSON"; ``version`` grows only by new
keys). It goes to stdout alone; progress, warnings and errors stay on stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from msgcap.pipeline import Stats
from msgcap.report import lag_seconds
from msgcap.status import counters, now_us
from msgcap.trail.julian import unix_us_to_iso
from msgcap.trail.records import Position
from props.errors import MsgcapError
from props.text import printable_line

VERSION = 1
END_OF_INPUT = "end-of-input"  # replay and batch read all their input
MAX_IDLE = "max-idle"  # msgcap run: nothing received for --max-idle seconds
ERROR = "error"
INTERRUPTED = "interrupted"  # Ctrl-C outside msgcap run, which takes SIGINT as a stop


def why_stopped(exc: BaseException) -> tuple[str, str | None]:
    """(exit reason, the error in one line) of a command an exception ended."""
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED, None
    if isinstance(exc, MsgcapError):
        return ERROR, str(exc)
    return ERROR, printable_line(f"internal error: {type(exc).__name__}: {exc} (see the log)")


def _position(position: Position | None) -> dict[str, Any] | None:
    if position is None:
        return None
    return {"file": position.file or None, "seqno": position.seqno, "rba": position.rba}


def results(command: str, stats: Stats, *, exit_reason: str, error: str | None = None,
            elapsed: float, discarded_to: str | None = None, definitions: str | None = None,
            outputs: dict[str, str] | None = None, now: int | None = None) -> dict[str, Any]:
    """The ``--json`` object of one command's run (the keys docs/operations.md lists)."""
    lag = lag_seconds(stats, now_us() if now is None else now)
    return {
        "version": VERSION,
        "command": command,
        "exit_reason": exit_reason,
        "error": error,
        **counters(stats),
        "operations_total": stats.total_operations,
        "trail": {"files": list(stats.trail_files),
                  "written": _position(stats.last_position),
                  "durable": _position(stats.durable_position)},
        "last_commit": (unix_us_to_iso(stats.last_commit_us)
                        if stats.last_commit_us is not None else None),
        "lag_seconds": round(lag, 3) if lag is not None else None,
        "elapsed_seconds": round(elapsed, 3),
        "discarded_to": discarded_to if stats.discarded else None,
        "definitions": definitions,
        "outputs": dict(outputs or {}),
    }


def print_results(record: dict[str, Any]) -> None:
    """The object on stdout, one line (``json.loads`` of the whole output reads it)."""
    print(json.dumps(record))
    sys.stdout.flush()
