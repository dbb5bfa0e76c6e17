"""What ``msgcap status`` shows (GGSCI's INFO EXTRACT), read from files, without a broker.

A capture is described by these things on disk, none of which ``status`` locks or changes:

* the writer lock ``<checkpoint.dir>/<EXTRACT>.lock``: its holder (``lock.holder``) is the
  running capture; a capture killed with ``kill -9`` holds nothing;
* the checkpoint ``<EXTRACT>.cpj``: the durable position, and the source commit time of the last
  durable transaction (lag = now − that time);
* the trail files and their sizes;
* the purge record ``<EXTRACT>.purge`` (the last purge that removed trail files) and the
  positions of the downstream readers ``trail.purge.readers`` names;
* the registrations of hot standbys ``<EXTRACT>.standby.<host>.<pid>`` (``msgcap.standby``),
  which wait for the writer lock to take over;
* the status file ``<EXTRACT>.status`` that ``msgcap run`` publishes (``StatusPublisher``) at
  start, at each report and heartbeat, when the source's connection state changes, and when it
  stops: its pid, start time, the last report's counters, the heartbeat, the connection state
  (connected, connecting or disconnected, since when, the last error), the address
  ``report.http`` serves on, and how it ended (``stopped``, or ``abended`` with the error). A
  file that still says ``running`` while nobody holds the lock is a run that ended
  without stopping (killed, crashed): abended as well.

``capture_status`` gathers them into one JSON-able dict (the stable shape of ``msgcap status
--json``, docs/operations.md); ``status_text`` formats it for people.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from gendef.durable import atomic_write
from msgcap.checkpoint import CheckpointFile
from msgcap.lock import holder
from msgcap.pipeline import OP_LABELS, Stats
from msgcap.report import lag_words
from msgcap.sources.base import ConnectionState, state_text
from msgcap.standby import standbys
from msgcap.trail.julian import datetime_to_unix_us, unix_us_to_iso
from msgcap.trail.reader import sequence_files
from msgcap.trail.retention import load_record, reader_seqno
from props.errors import MsgcapError
from props.inputs import read_input

log = logging.getLogger("msgcap.status")

VERSION = 1  # of the status file and of the --json shape; grows only by new keys
STATES = ("running", "stopped", "abended", "never-started")


def status_path(checkpoint_dir: str, extract: str) -> str:
    return os.path.join(checkpoint_dir, f"{extract}.status")


def now_us() -> int:
    return time.time_ns() // 1000


def _iso(us: int | None) -> str | None:
    return unix_us_to_iso(us) if us is not None else None


def counters(stats: Stats) -> dict[str, Any]:
    """The counters of a report, as the status file and ``--json`` carry them."""
    return {"messages": stats.messages, "duplicates": stats.duplicates,
            "discarded": stats.discarded, "transactions": stats.transactions,
            "durable_transactions": stats.durable_transactions,
            "operations": [{"table": table, "op": OP_LABELS.get(op, op), "count": n}
                           for (table, op), n in sorted(stats.operations.items())]}


class StatusPublisher:
    """``msgcap run``'s side: replaces the status file (atomically) when asked to publish.

    A status file that cannot be written is a warning, never a reason to stop capturing: the
    trail and the checkpoint are what count.
    """

    def __init__(self, path: str, stats: Stats, *, heartbeat: float | None = None,
                 connection: Callable[[], ConnectionState] | None = None) -> None:
        self.path, self.stats, self.connection = path, stats, connection
        self.heartbeat = float(heartbeat) if heartbeat else None
        self.pid = os.getpid()
        self.started_us = now_us()
        self.http: str | None = None  # report.http's URL once it serves (the port 0 chose)
        self._failing = False

    def publish(self, state: str = "running", error: str | None = None) -> None:
        now = now_us()
        record = {"version": VERSION, "pid": self.pid, "state": state, "error": error,
                  "started": _iso(self.started_us), "updated": _iso(now),
                  "heartbeat_seconds": self.heartbeat,
                  "heartbeat": _iso(self.stats.heartbeat_us) if self.heartbeat else None,
                  "http": self.http,
                  "source": self.connection().as_dict() if self.connection else None,
                  "report": {"time": _iso(now), **counters(self.stats)}}
        try:
            # no directory fsync: a status lost in a crash is rewritten at the next report
            atomic_write(self.path, json.dumps(record, indent=1).encode("utf-8"), sync_dir=False)
        except OSError as exc:
            if not self._failing:
                log.warning("%s: cannot write the status file: %s", self.path,
                            exc.strerror or exc)
            self._failing = True
            return
        self._failing = False


def load_status_file(path: str) -> dict[str, Any] | None:
    """The status file's content, None when there is none; a damaged one is a MsgcapError
    naming the file."""
    try:
        data = json.loads(read_input(path))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise MsgcapError(f"{path}: unreadable status file: {exc}") from None
    if not isinstance(data, dict) or data.get("state") not in STATES or not isinstance(
            data.get("pid"), int) or not isinstance(data.get("report"), dict):
        raise MsgcapError(f"{path}: bad status file: not one written by msgcap run")
    return data


def _age(iso_time: str | None, now: int) -> float | None:
    """Seconds from an ISO-8601 UTC time (``...Z``) to ``now`` µs."""
    if not iso_time:
        return None
    try:
        then = datetime_to_unix_us(datetime.fromisoformat(iso_time))
    except (ValueError, TypeError):
        return None
    return round((now - then) / 1e6, 3)


def capture_status(settings: Any, now: int | None = None) -> dict[str, Any]:
    """The status of the capture ``settings`` configure (the ``--json`` shape); damaged files
    are listed in ``problems`` (one line each, naming the file) and left out."""
    now = now_us() if now is None else now
    trail = settings.trail
    problems: list[str] = []
    lock = os.path.join(settings.checkpoint_dir, f"{trail.extract}.lock")
    status_file = status_path(settings.checkpoint_dir, trail.extract)
    pid, published = holder(lock), _published(status_file, problems)
    if pid is None and published is not None and published["state"] == "running":
        # a run that started, or stopped, while we looked? It publishes "stopped" before it
        # lets the lock go, and takes the lock before it publishes "running": look again
        pid, published = holder(lock), _published(status_file, [])
    checkpoints = CheckpointFile(settings.checkpoint_dir, trail.extract)
    try:
        cp = checkpoints.load(trail.path)
    except MsgcapError as exc:
        problems.append(str(exc))
        cp = None

    if published is not None and pid is not None and published["pid"] != pid:
        published = None  # the previous run's: the new one has not published yet
    state, error = _state(pid, published, cp is not None or os.path.exists(checkpoints.path))
    last_commit = cp.last_commit_us if cp is not None else None
    heartbeat = None
    if published is not None and published.get("heartbeat_seconds"):
        heartbeat = {"every_seconds": published["heartbeat_seconds"],
                     "last": published.get("heartbeat"),
                     "age_seconds": _age(published.get("heartbeat"), now)}
    source = (published or {}).get("source") if state == "running" else None
    if isinstance(source, dict):
        source = {**source, "url": ",".join(settings.jms.url),
                  "age_seconds": _age(source.get("since"), now)}
    files = []
    for _, path in sequence_files(trail.path, trail.seqlen):
        try:
            files.append({"file": path, "bytes": os.stat(path).st_size})
        except FileNotFoundError:  # purged between listing and stat
            continue
    writer = holder(f"{trail.path}.lock")
    last_purge = None
    try:
        last_purge = load_record(settings.checkpoint_dir, trail.extract)
    except MsgcapError as exc:
        problems.append(str(exc))
    return {
        "version": VERSION,
        "extract": trail.extract,
        "partition": settings.partition,
        "state": state,
        "pid": pid if pid is not None else (published or {}).get("pid"),
        "standbys": standbys(settings.checkpoint_dir, trail.extract, now),
        "started": (published or {}).get("started"),
        "updated": (published or {}).get("updated"),
        "error": error,
        "checkpoint": None if cp is None else {
            "path": checkpoints.path, "file": cp.file, "seqno": cp.seqno, "rba": cp.rba,
            "transactions": cp.txnum, "messages": cp.messages, "last_seqid": cp.last_seqid,
            "last_message_id": cp.last_message_id, "time": cp.time or None,
            "age_seconds": _age(cp.time, now)},
        "last_commit": _iso(last_commit),
        "lag_seconds": round((now - last_commit) / 1e6, 3) if last_commit is not None else None,
        "trail": {"path": trail.path, "files": files,
                  "bytes": sum(f["bytes"] for f in files),
                  "writer_pid": writer if writer != pid else None},
        "report": (published or {}).get("report"),
        "heartbeat": heartbeat,
        "source": source if isinstance(source, dict) else None,
        "http": (published or {}).get("http") if state == "running" else None,
        "retention": _retention(trail),
        "last_purge": last_purge,
        "problems": problems,
    }


def _retention(trail: Any) -> dict[str, Any] | None:
    """The ``trail.purge.*`` settings and where each reader is (null: no purging)."""
    rules = trail.purge
    if not rules.enabled:
        return None
    readers = []
    for path in rules.readers:
        try:
            readers.append({"path": path, "seqno": reader_seqno(path, trail), "error": None})
        except MsgcapError as exc:
            readers.append({"path": path, "seqno": None, "error": str(exc)})
    return {"minkeepfiles": rules.minkeepfiles, "minkeephours": rules.minkeephours,
            "maxmegabytes": rules.maxmegabytes, "readers": readers}


def _published(path: str, problems: list[str]) -> dict[str, Any] | None:
    try:
        return load_status_file(path)
    except MsgcapError as exc:
        problems.append(str(exc))
        return None


def _state(pid: int | None, published: dict[str, Any] | None, has_checkpoint: bool
           ) -> tuple[str, str | None]:
    """(state, why it abended)."""
    if pid is not None:
        return "running", None
    if published is None:
        return ("stopped" if has_checkpoint else "never-started"), None
    if published["state"] == "running":
        return "abended", (f"process {published['pid']} ended without stopping "
                           "(killed or crashed)")
    if published["state"] == "abended":
        return "abended", published.get("error") or "stopped by an error"
    return "stopped", None


def _seconds(value: float | None) -> str:
    return f"{value:.3f} s" if value is not None else "n/a"


def _when(iso_time: str | None) -> str:
    """``2026-11-26 05:12:40 UTC`` from an ISO time (as the reports print times)."""
    if not iso_time:
        return "unknown"
    return iso_time.replace("T", " ").split(".")[0].removesuffix("Z") + " UTC"


def status_text(status: dict[str, Any]) -> str:
    """``status`` for people: one line per part, labelled like the report."""
    state = status["state"]
    head = f"extract {status['extract']}: {state}"
    waiting = len(status["standbys"])
    if state == "running":
        active = f", active; {waiting} standby{'s' * (waiting > 1)}" if waiting else ""
        head += f" (pid {status['pid']}{active}), started {_when(status['started'])}"
    elif state == "never-started":
        head += " (no checkpoint and no status file: no capture has run with these properties)"
    elif status["pid"] is not None:
        head += f"; the last run (pid {status['pid']}) started {_when(status['started'])}"
    lines = [head]
    lines += [f"standby: pid {s['pid']} on {s['host']}, waiting since {_when(s['since'])} to "
              "take over" for s in status["standbys"]]
    if status["error"]:
        lines.append(f"error: {status['error']}")
    cp = status["checkpoint"]
    if cp is not None:
        lines.append(f"checkpoint: {cp['file']} RBA {cp['rba']} ({cp['transactions']} "
                     f"transactions, {cp['messages']} messages, last seqid {cp['last_seqid']}), "
                     f"written {_when(cp['time'])} ({_seconds(cp['age_seconds'])} ago)")
    elif state != "never-started" and not status["problems"]:
        lines.append("checkpoint: none yet (no transaction made durable)")
    lines.append(f"last commit: {_when(status['last_commit']) if status['last_commit'] else 'none'}"
                 f"; lag {lag_words(status['lag_seconds'])}")
    trail = status["trail"]
    files = trail["files"]
    line = f"trail {trail['path']}: files {len(files)}, bytes {trail['bytes']}"
    if files:
        line += f"; last {files[-1]['file']} {files[-1]['bytes']} bytes"
    if trail["writer_pid"] is not None:
        line += f"; being written by process {trail['writer_pid']}"
    lines.append(line)
    lines += _retention_lines(status)
    report = status["report"]
    if report is not None:
        ops = report["operations"]
        lines.append(f"report at {_when(report['time'])}: messages {report['messages']}  "
                     f"duplicates {report['duplicates']}  discarded {report['discarded']}  "
                     f"transactions {report['transactions']} "
                     f"({report['durable_transactions']} durable)  "
                     f"operations {sum(o['count'] for o in ops)}")
        tables: dict[str, list[str]] = {}
        for o in ops:
            tables.setdefault(o["table"], []).append(f"{o['op']} {o['count']}")
        lines += [f"  {table}  {'  '.join(parts)}" for table, parts in tables.items()]
    source = status["source"]
    if source is not None:
        lines.append(f"source {source['url']}: " + state_text(
            source["state"], _when(source["since"]), source["error"], source["age_seconds"]))
    if status["http"] is not None:
        lines.append(f"serving /health and /metrics on {status['http']}")
    beat = status["heartbeat"]
    if beat is not None:
        lines.append(f"heartbeat: every {beat['every_seconds']:g} s; last {_when(beat['last'])} "
                     f"({_seconds(beat['age_seconds'])} ago)")
    return "\n".join(lines)


def _retention_lines(status: dict[str, Any]) -> list[str]:
    """The retention settings, the readers' positions and the last purge."""
    rules, purge = status["retention"], status["last_purge"]
    if rules is None:
        lines = ["retention: none (no trail.purge.* property: trail files are never removed)"]
    else:
        parts = [f"trail.purge.{key}={rules[key]}" for key in (
            "minkeepfiles", "minkeephours", "maxmegabytes") if rules[key] is not None]
        parts += [f"reader {r['path']} at seqno {r['seqno']}" if r["error"] is None
                  else f"reader {r['path']} unreadable (every file kept)"
                  for r in rules["readers"]]
        lines = [f"retention: {'; '.join(parts)}"]
    if purge is not None:
        files = purge["files"]
        lines.append(f"last purge: {_when(purge['time'])}: {len(files)} files, "
                     f"{purge['bytes']} bytes"
                     + (f" ({files[0]['file']} to {files[-1]['file']})" if files else ""))
    elif rules is not None:
        lines.append("last purge: none yet")
    return lines


def group_status(statuses: list[dict[str, Any]], file: str) -> dict[str, Any]:
    """``msgcap status --partition A-B`` (the ``--json`` shape): each partition's status, in
    the order asked, and what a monitor wants of the group at a glance: how many are in each
    state, the largest lag, and every problem prefixed by its partition."""
    states: dict[str, int] = {}
    for status in statuses:
        states[status["state"]] = states.get(status["state"], 0) + 1
    lags = [s["lag_seconds"] for s in statuses if s["lag_seconds"] is not None]
    return {"version": VERSION, "file": file,
            "states": {state: states[state] for state in STATES if state in states},
            "max_lag_seconds": max(lags, default=None),
            "messages": sum(s["checkpoint"]["messages"] for s in statuses
                            if s["checkpoint"] is not None),
            "partitions": statuses,
            "problems": [f"partition {s['partition']}: {problem}" for s in statuses
                         for problem in s["problems"]]}


def group_text(group: dict[str, Any]) -> str:
    """The group for people: a head line, then one line per partition (its extract, state and
    standbys, durable position, counters, lag and trail size); ``--partition N`` shows one in
    full."""
    states = ", ".join(f"{n} {state}" for state, n in group["states"].items())
    head = (f"{group['file']}: {len(group['partitions'])} partitions ({states}); "
            f"{group['messages']} messages durable; largest lag "
            f"{lag_words(group['max_lag_seconds'])}")
    lines = [head]
    for status in group["partitions"]:
        state = status["state"]
        if state == "running":
            state += f" (pid {status['pid']})"
        if status["standbys"]:
            state += "; standby " + ", ".join(f"pid {s['pid']} on {s['host']}"
                                              for s in status["standbys"])
        cp = status["checkpoint"]
        where = ("no checkpoint" if cp is None else
                 f"{cp['file']} RBA {cp['rba']}, {cp['transactions']} transactions, "
                 f"{cp['messages']} messages")
        trail = status["trail"]
        lines.append(f"partition {status['partition']}: extract {status['extract']}: {state}; "
                     f"{where}; lag {lag_words(status['lag_seconds'])}; trail "
                     f"{trail['path']}: {len(trail['files'])} files, {trail['bytes']} bytes")
        if status["error"]:
            lines.append(f"  error: {status['error']}")
    return "\n".join(lines)
