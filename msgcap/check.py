"""``msgcap check``: everything ``msgcap run`` would refuse, found before it runs, writing nothing.

Kafka Connect validates a connector's configuration and NiFi a processor before they start; a
capture found its mistakes one at a time, at ``run``. ``Check`` asks the questions ``run`` asks
at its start, through the same code, read-only:

* the parser: definitions (copybook, DEFGEN files, user tables, header items: ``gendef.build``),
  the parser built from them, the ``jms.id`` mode, ``trail.defs`` writable;
* the directories ``run`` writes (trail, checkpoint, log, archive, discard file, definitions):
  each writable, or creatable in its nearest existing parent; the trail's free space;
* the writer locks (``msgcap.lock.holder``: a live holder is named by its pid), the checkpoint
  and the trail from it (``msgcap.trail.writer.verify_trail``, what ``TrailWriter.open``
  refuses before it changes anything);
* the source: a spool directory readable and writable; a STOMP or AMQP 1.0 broker connected,
  logged in, TLS verified, the destination subscribed (``jms.selector`` accepted) without
  consuming anything (``msgcap.sources.probe``, ``msgcap.sources.amqp.AmqpProbe``), unless
  told not to connect. The entries of a failover list are probed at the same time, a bounded
  number at once, and the answer comes within ``SOURCE_DEADLINE`` however many stall: what
  ``run`` reaches first in the list's order, or why each entry failed or was not reached;
* the resolved layout of every table, and, for sample messages, the operations they become.

Checks that do not depend on each other all run: each problem is one line (``problems``), in
the order found. Nothing is created, locked, truncated or logged to a file.
"""

from __future__ import annotations

import os
import queue
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, TextIO, TypeVar, cast

from gendef.build import build_definitions, check_names_known
from gendef.model import Definitions, Table
from msgcap.checkpoint import Checkpoint, CheckpointFile
from msgcap.lock import LockedError, holder
from msgcap.pipeline import OP_LABELS
from msgcap.trail.dumpfmt import scaled
from msgcap.trail.reader import sequence_files, stray_warning
from msgcap.trail.writer import verify_trail
from parsers.base import Parser, build_parser
from parsers.model import MISSING, Message, Op
from props.errors import MessageError, MsgcapError, SourceError
from props.text import LISTED, listed, quoted

if TYPE_CHECKING:
    from gendef.copybook import FieldLayout
    from msgcap.sources.base import Probe
    from parsers.fixed.plan import FixedPlan
    from props.settings import Settings

T = TypeVar("T")
MIB = 1024 * 1024
VALUE_CHARS = 40  # of one column value in a sample's operation
# A failover list: entries probed at the same time, and how long the check waits for them in
# all (one entry's connection gives up after about 10 s; hundreds of stalled entries must not
# take hundreds of times that).
PROBES_AT_ONCE = 16
SOURCE_DEADLINE = 25.0


@dataclass
class Check:
    """One check of ``settings``: ``out`` gets the report, ``problems`` one line per problem."""

    settings: Settings
    out: TextIO
    problems: list[str] = field(default_factory=list)
    definitions: Definitions | None = None
    parser: Parser | None = None
    checkpoint: Checkpoint | None = None

    def say(self, line: str) -> None:
        print(line, file=self.out)

    def attempt(self, step: Callable[[], T]) -> T | None:
        """``step()``, or None with its problem listed: a user error (``MsgcapError``) or a file
        the system refuses (``OSError``)."""
        try:
            return step()
        except MsgcapError as exc:
            self.problems.append(str(exc))
        except OSError as exc:
            self.problems.append(f"{exc.filename or ''}: {exc.strerror or exc}")
        return None

    # -- the parts ------------------------------------------------------------------------------

    def parser_part(self) -> None:
        """Definitions, parser, ids: what ``run`` builds before it touches the trail."""
        from msgcap.msgid import MessageIds

        settings = self.settings
        self.definitions = self.attempt(lambda: build_definitions(settings))
        if self.definitions is not None:
            definitions = self.definitions
            self.parser = self.attempt(lambda: build_parser(settings, definitions))
        if settings.trail.defs:
            self.attempt(lambda: check_names_known(settings))
        self.attempt(lambda: MessageIds(settings.jms.id))
        if self.parser is not None:
            self.say(f"parser: {settings.parser_type}, {len(self.definitions or ())} tables")

    def directories_part(self) -> None:
        """Every directory ``run`` writes in: writable, or creatable."""
        settings, trail = self.settings, self.settings.trail
        wanted = [("trail", trail.directory), ("checkpoint.dir", settings.checkpoint_dir),
                  ("log file", _parent(settings.log_file))]
        if trail.defs:
            wanted.append(("trail.defs", _parent(trail.defs)))
        if settings.archive_dir:
            wanted.append(("archive.dir", settings.archive_dir))
        if settings.error.policy == "discard" and not settings.error.destination:
            wanted.append(("error.file", _parent(settings.error.file)))
        users: dict[str, list[str]] = {}
        for what, path in wanted:
            users.setdefault(os.path.normpath(path), []).append(what)
        for path, whats in users.items():
            line = self.attempt(partial(writable_dir, path))
            if line is None:
                continue
            if path == os.path.normpath(trail.directory):
                free = self.attempt(lambda: free_bytes(trail.directory))
                if free is not None:
                    line += f", {free // MIB} MB free" + (
                        "" if free >= trail.megabytes * MIB else
                        f": less than one trail file (trail.megabytes={trail.megabytes})")
            self.say(f"directory {path} ({', '.join(whats)}): {line}")

    def locks_part(self) -> None:
        """The writer locks ``run`` takes: a live holder would make it refuse to start."""
        settings, trail = self.settings, self.settings.trail
        free = True
        for path, what in ((os.path.join(settings.checkpoint_dir, f"{trail.extract}.lock"),
                            f"the checkpoint of extract {trail.extract}"),
                           (f"{trail.path}.lock", f"trail {trail.path}")):
            pid = holder(path)
            if pid is not None:
                self.problems.append(str(LockedError(path, pid, what)))
            elif os.path.exists(path) and not os.access(path, os.W_OK):
                self.problems.append(f"{path}: cannot open the lock file: permission denied")
            else:
                continue
            free = False
        if free:
            self.say("locks: free (no msgcap writes this trail or checkpoint)")

    def trail_part(self) -> None:
        """The checkpoint, and the trail from its durable position, as ``run`` recovers them."""
        trail = self.settings.trail
        checkpoints = CheckpointFile(self.settings.checkpoint_dir, trail.extract)
        loaded = self.attempt(lambda: (checkpoints.load(trail.path),))
        if loaded is None:
            return
        cp = self.checkpoint = loaded[0]
        # (a trail directory that is not one is the directories' problem, said once)
        listed = os.path.isdir(trail.directory)
        files = self.attempt(lambda: sequence_files(trail.path, trail.seqlen)) if listed else []
        if files is None:
            return
        if self.attempt(lambda: (verify_trail(trail.path, files, trail.seqlen,
                                              cp.recovery if cp else None),)) is None:
            return
        where = (f"{_count(len(files), 'file')}, the last {files[-1][1]}" if files
                 else "no files yet")
        self.say(f"trail {trail.path}: {where}")
        stray = stray_warning(trail.path, trail.seqlen) if listed else None
        if stray is not None:
            self.say(f"trail {trail.path}: {stray}")
        if cp is None:
            self.say(f"checkpoint {checkpoints.path}: none yet (the capture starts a new trail "
                     "or continues after its last complete transaction)")
        else:
            self.say(f"checkpoint {checkpoints.path}: {cp.file} RBA {cp.rba}, "
                     f"{cp.txnum} transactions, consistent with the trail")

    def source_part(self, *, connect: bool) -> None:
        """The source ``jms.url`` names, reached as ``run`` reaches it (unless ``connect`` is
        False), without taking a message from it."""
        from msgcap.sources import source_for

        settings = self.settings
        try:
            settings.jms.require_env()  # run would refuse it: a problem with --no-connect too
        except MsgcapError as exc:
            self.problems.append(str(exc))
            return
        spool = settings.jms.spool_dir
        if spool is not None:
            self.attempt(lambda: source_for(settings))
            line = self.attempt(lambda: spool_dir(spool))
            if line is not None:
                self.say(f"source dir:{spool}: {line}")
            return
        probe = cast("Probe | None", self.attempt(lambda: source_for(settings, probe=True)))
        if probe is None:
            return
        if not connect:
            self.say(f"source {probe.url}: not contacted (--no-connect)")
            return
        many = settings.jms.provider is None and len(settings.jms.url) > 1
        line = self.attempt(partial(probe_entries, settings) if many else probe.probe)
        if line is not None:
            self.say(f"source {line}")

    # -- what the parser makes of it ------------------------------------------------------------

    def layouts(self) -> None:
        """Each table's resolved layout: fixed-width slices (1-based, as a copybook listing
        shows them), or the columns of delimited and XML tables."""
        if self.parser is None or self.definitions is None:
            return
        plan = getattr(self.parser, "plan", None)
        from parsers.fixed.plan import FixedPlan

        if isinstance(plan, FixedPlan):
            self.say("")
            self.say("\n".join(fixed_layout(plan)))
            return
        for table in self.definitions:
            self.say("")
            self.say("\n".join(columns_layout(table)))

    def samples(self, messages: Iterable[Message]) -> None:
        """The operations each sample message becomes (none is written); a message the parser
        refuses is a problem, and the next one is tried."""
        from msgcap.msgid import MessageIds

        if self.parser is None:
            return
        parser, settings = self.parser, self.settings
        last = self.checkpoint.last_message_id if self.checkpoint else None
        ids = self.attempt(lambda: MessageIds(settings.jms.id, last))
        if ids is None:
            return
        self.say("")
        count = 0
        iterator = iter(messages)
        while True:
            try:
                message = next(iterator)
            except StopIteration:
                break
            except MsgcapError as exc:  # a dump that cannot be read: the rest of it neither
                self.problems.append(str(exc))
                break
            count += 1
            try:
                message.id = ids.next_id(message)
                ops = parser.parse(message)
            except MessageError as exc:
                self.problems.append(str(exc.located(message.name)))
                self.say(f"message {message.name}: refused (see the errors)")
                continue
            self.say(f"message {message.name}: {_count(len(ops), 'operation')}")
            for op in ops:
                self.say(f"  {operation_text(op)}")
        self.say(f"samples: {_count(count, 'message')} parsed, nothing written")


def run_check(settings: Settings, out: TextIO, *, connect: bool = True,
              samples: Iterable[Message] | None = None) -> list[str]:
    """Every check of ``settings``, the report on ``out``; the problems, one line each."""
    check = Check(settings, out)
    check.say(f"properties {settings.file}: read")
    check.parser_part()
    check.directories_part()
    check.locks_part()
    check.trail_part()
    check.source_part(connect=connect)
    check.layouts()
    if samples is not None:
        check.samples(samples)
    return check.problems


def probe_entries(settings: Settings, *, at_once: int = PROBES_AT_ONCE,
                  deadline: float = SOURCE_DEADLINE) -> str:
    """What ``run`` reaches of a failover list: each ``jms.url`` entry probed on its own (the
    first ``at_once`` at the same time, then the next as one ends), the answers read in the
    list's order as ``run`` tries them: the first entry that works, or a refusal no other
    entry cures (a ``PropertyError``: login, certificate, selector). Entries that do not
    answer within ``deadline`` seconds in all are named as not reached. ``SourceError`` when
    none works."""
    from msgcap.sources import source_for

    urls = settings.jms.url
    answers: list[str | Exception | None] = [None] * len(urls)
    answered = [threading.Event() for _ in urls]
    waiting: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(urls)):
        waiting.put(index)
    decided = threading.Event()  # no more entries to start

    def probe_next() -> None:
        while not decided.is_set():
            try:
                index = waiting.get_nowait()
            except queue.Empty:
                return
            one = replace(settings, jms=replace(settings.jms, url=(urls[index],)))
            try:
                answers[index] = cast("Probe", source_for(one, probe=True)).probe()
            except Exception as exc:  # noqa: BLE001 (said by the caller, in the list's order)
                answers[index] = exc
            finally:
                answered[index].set()

    # daemon threads: an entry still stalled when the check is over does not hold the process
    for _ in range(min(at_once, len(urls))):
        threading.Thread(target=probe_next, name="check-probe", daemon=True).start()
    end = time.monotonic() + deadline
    failures: list[str] = []
    unreached: list[str] = []
    try:
        for index in range(len(urls)):
            if not answered[index].wait(max(0.0, end - time.monotonic())):
                unreached.append(urls[index])
                continue
            answer = answers[index]
            if isinstance(answer, str):
                if unreached:
                    return f"{answer}; before it, {_not_reached(unreached, deadline)}"
                return answer
            if not isinstance(answer, SourceError):
                assert answer is not None
                raise answer
            failures.append(answer.reason)
    finally:
        decided.set()
    said = [listed(failures, sep="; ")] if failures else []
    if unreached:
        said.append(_not_reached(unreached, deadline))
    raise SourceError("; ".join(said), url=",".join(urls) if len(urls) <= LISTED
                      else listed(list(urls)))


def _not_reached(urls: list[str], deadline: float) -> str:
    """The entries of a failover list that gave no answer in time, a bounded few named."""
    return f"not reached within {deadline:.0f} s: {listed(urls)}"


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 's'}"


# -- directories ------------------------------------------------------------------------------------

def _parent(path: str) -> str:
    return os.path.dirname(path) or "."


def writable_dir(path: str) -> str:
    """How ``path`` stands for a writer: ``writable``, or ``will be created in PARENT``;
    ``MsgcapError`` when a writer could not use it."""
    if os.path.isdir(path):
        if not os.access(path, os.W_OK | os.X_OK):
            raise MsgcapError(f"{path}: directory not writable")
        return "writable"
    if os.path.lexists(path):
        raise MsgcapError(f"{path}: not a directory")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise MsgcapError(f"{path}: cannot be created: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise MsgcapError(f"{path}: cannot be created: {parent} is not writable")
    return f"will be created (in {parent})"


def free_bytes(path: str) -> int:
    """Free bytes for an unprivileged writer where ``path`` is, or would be created."""
    while not os.path.isdir(path):
        path = os.path.dirname(os.path.abspath(path))
    return shutil.disk_usage(path).free


def spool_dir(path: str) -> str:
    """A spool directory as ``run`` uses it: it reads files there and moves them (``.done/``,
    ``.error/``), so it must exist, be readable and writable."""
    if not os.path.isdir(path):
        raise MsgcapError(f"dir:{path}: spool directory does not exist")
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        raise MsgcapError(f"dir:{path}: spool directory not readable and writable")
    from msgcap.sources.spool import DONE_DIR, ERROR_DIR, is_message_name

    for sub in (DONE_DIR, ERROR_DIR):
        full = os.path.join(path, sub)
        if os.path.lexists(full) and not (os.path.isdir(full)
                                          and os.access(full, os.W_OK | os.X_OK)):
            raise MsgcapError(f"dir:{path}: {sub} is not a writable directory")
    waiting = sum(1 for name in os.listdir(path) if is_message_name(name))
    return f"readable and writable, {_count(waiting, 'file')} waiting"


# -- layouts ----------------------------------------------------------------------------------------

def _usage(layout: FieldLayout | None) -> str:
    """A copybook field's usage and picture, as a listing shows it (text columns: CHAR)."""
    if layout is None:
        return "text"
    if layout.kind == "alnum":
        return f"{layout.usage} X({layout.length})"
    if layout.kind == "float":
        return layout.usage
    whole = layout.digits - layout.scale
    picture = ("S" if layout.signed else "") + (f"9({whole})" if whole else "") + (
        f"V9({layout.scale})" if layout.scale else "")
    return f"{layout.usage} {picture}"


_FIXED_HEAD = f"  {'COLUMN':<30} {'START':>6} {'END':>6} {'LENGTH':>6}  {'USAGE':<20} {'TYPE':<18} KEY"


def _fixed_row(name: str, start: int, end: int, usage: str, kind: str, key: bool) -> str:
    return (f"  {name:<30} {start + 1:>6} {end:>6} {end - start:>6}  {usage:<20} {kind:<18} "
            f"{'key' if key else ''}").rstrip()


def fixed_layout(plan: FixedPlan) -> list[str]:
    """The header record, then each table's columns: where each lies in a message (1-based
    START/END, LENGTH in bytes), its usage and trail type, key columns marked."""
    lines = [f"header {plan.header_name}: {plan.header_length} bytes", _FIXED_HEAD]
    lines += [_fixed_row(h.name, h.start, h.end, _usage(h.field), "", False)
              for h in plan.header]
    for tp in plan.tables:
        title = f"table {tp.table.name}: message of {tp.end} bytes, {len(tp.slots)} columns"
        lines += ["", title, _FIXED_HEAD]
        lines += [_fixed_row(s.column.name, s.start, s.end, _usage(s.field), s.column.kind,
                             s.key) for s in tp.slots]
    return lines


def columns_layout(table: Table) -> list[str]:
    """A delimited or XML table: its columns in order, their trail types, keys marked."""
    lines = [f"table {table.name}: {len(table.columns)} columns",
             f"  {'COLUMN':<30} {'TYPE':<18} KEY"]
    lines += [f"  {c.name:<30} {c.kind:<18} {'key' if c.key else ''}".rstrip()
              for c in table.columns]
    return lines


# -- samples ----------------------------------------------------------------------------------------

def operation_text(op: Op) -> str:
    """``TABLE insert COL=value ...``: the image an operation carries (a delete's before image,
    else its after image); absent columns left out, NULL as NULL."""
    image = op.after if op.after is not None else op.before
    parts = [f"{op.table.name} {OP_LABELS.get(op.optype, op.optype)}"]
    for col, value in zip(op.table.columns, image or (), strict=False):
        if value is MISSING:
            continue
        if value is None:
            text = "NULL"
        elif isinstance(value, int):
            text = scaled(value, col.scale)
        elif isinstance(value, bytes):
            text = value.hex()
        else:
            text = quoted(value, VALUE_CHARS)
        parts.append(f"{col.name}={text}")
    return " ".join(parts)
