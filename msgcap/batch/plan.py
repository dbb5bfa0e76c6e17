"""The plan (driver): where each segment's pass 2 starts, taken in input order.

The trail must be what ``msgcap replay`` writes, so the assembler's state (counters, duplicate
mark, a transaction left open) runs across segment borders. The ``Planner`` walks the segments
in order and gives each a ``Plan``: the state at its start, the transactions written before it,
the last message id, the number of its first line, and where the job stops.

The state at a segment's end is usually taken from one of pass 1's trials in O(1) (``fits``):
a trial ran the real assembler from an assumed start; it is the true run whenever

* no transaction is open at the start (``fresh``), or the open one is the transaction the
  segment continues, not being skipped (``continuing``); and
* the duplicate mark at the start cannot change the run: no given seqid of the segment is at or
  before it (all of the mark's width), and the segment does not mix given and ``*seqid`` seqids;

the true run then differs only by the counters' start values, which are added. Otherwise the
driver runs the state machine over the segment's skeleton, message by message, from the true
state (``Planner.slow`` counts those segments).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

from msgcap.assembler import Assembler, AssemblerState, ImageRules, OpenState
from msgcap.batch.inputs import KIND_FILE, InputFile
from msgcap.batch.parse import BAD, FATAL, INHERITED, Boundaries, Skeleton, Summary, Trial
from msgcap.batch.segments import SegmentKey, resolve
from parsers.model import Message, Op
from props.errors import MessageError

if TYPE_CHECKING:
    from gendef.model import Table
    from props.settings import ErrorPolicy


@dataclass(slots=True)
class Plan:
    """Where pass 2 of one segment starts.

    ``stop``: the index of the message where the job stops (abend, fatal error), else None;
    ``width_at``: that message's id is of another width than ``last_id`` (a fatal error).
    ``head_error``: the transaction open at the start already failed to encode (its completing
    message is rejected with this error). ``trial``: the pass-1 trial that is the true run of
    the segment (``fresh``, ``continuing``), None when it was planned message by message.
    """

    key: SegmentKey
    state: AssemblerState
    txnum: int
    last_id: str | None
    first_line: int
    stop: int | None = None
    width_at: int | None = None
    head_error: str | None = None
    trial: str | None = None

    def moved(self, txnum: int, head_error: str | None) -> Plan:
        """This plan after a transaction before it failed to encode (discard)."""
        return replace(self, txnum=txnum, head_error=head_error)


class _TableName:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def message_name(file: InputFile, number: int, first_line: int) -> str:
    """How messages of a segment are named, once its first line number is known."""
    if file.kind == KIND_FILE:
        return file.name
    return f"{file.name}:{first_line + number}"


class Planner:
    """Plans segments in input order (see the module doc)."""

    def __init__(self, rules: ImageRules, policy: ErrorPolicy,
                 files: Sequence[InputFile]) -> None:
        self.rules = rules
        self.abend = policy == "abend"
        self.files = files
        self.state = AssemblerState()
        self.txnum = 0
        self.last_id: str | None = None
        self.width: int | None = None
        self.lines: dict[int, int] = {}  # per file: lines of its segments planned so far
        self.stopped = False
        self.fast = self.slow = 0
        self._names: dict[str, Table] = {}

    def plan(self, summary: Summary, skeleton: Callable[[], Skeleton]) -> Plan:
        """The plan of the next segment; ``skeleton`` fetches its skeleton if no trial fits."""
        key = summary.key
        seen = self.lines.get(key[0], 0)
        first_line = seen + 1 if key[1] else 1
        self.lines[key[0]] = seen + summary.lines
        plan = Plan(key, self.state, self.txnum, self.last_id, first_line)
        fid = summary.first_id
        if fid is not None:
            if self.width is None:
                self.width = len(fid[1])
            elif len(fid[1]) != self.width:
                plan.width_at = fid[0]
        fit = self.fits(summary)
        if fit is not None:
            self.fast += 1
            plan.trial, trial = fit
            stop = self._take(trial, summary, first_line)
        else:
            self.slow += 1
            stop = self._run(skeleton(), summary, first_line, plan.width_at)
        if plan.width_at is not None and (stop is None or plan.width_at < stop):
            stop = plan.width_at
        plan.stop = stop
        self.stopped = stop is not None
        if summary.last_id is not None:
            self.last_id = summary.last_id
        return plan

    def fits(self, s: Summary) -> tuple[str, Trial] | None:
        """The trial that is the true run of segment ``s`` from the current state, if any."""
        st = self.state
        if s.system_seqids and s.given_width is not None:
            return None
        last = st.last
        if last is not None and s.given_width is not None and (
                s.given_width != len(last[0]) or s.min_given is None
                or not s.min_given > last[0]):
            return None
        held = st.open
        if held is None:
            return "fresh", s.fresh
        if s.continuing is not None and not held.skipping and held.given_txid == s.continues:
            return "continuing", s.continuing
        return None

    def _take(self, trial: Trial, s: Summary, first_line: int) -> int | None:
        """Advance by a trial that fits: its counters added to the current ones."""
        st, t = self.state, trial.state
        system = s.system_seqids

        def mark(m: tuple[str, int]) -> tuple[str, int]:
            return (str(st.seq + int(m[0])).zfill(20), m[1]) if system else m

        o = t.open
        if o is None:
            held, base = None, None
        elif o.first_message == INHERITED:
            assert st.open is not None
            held, base = replace(st.open, ops=st.open.ops + o.ops), st.base
        else:
            txid = o.txid
            if o.given_txid is None and not o.skipping:
                txid = str(st.txid + int(o.txid))
            held = OpenState(txid, o.given_txid, o.txname, o.txowner, o.skipping,
                             resolve(o.first_message, first_line), o.ops)
            base = st.last if t.base is None else mark(t.base)
        self.state = AssemblerState(st.seq + t.seq, st.txid + t.txid,
                                    st.last if t.last is None else mark(t.last), held, base)
        self.txnum += trial.txns
        return trial.stop

    def _run(self, sk: Skeleton, s: Summary, first_line: int,
             width_at: int | None) -> int | None:
        """Advance message by message over the skeleton, from the true state."""
        boundaries = Boundaries()
        failing = boundaries.failing
        asm = Assembler(self.rules, records=boundaries)
        asm.resume(self.state)
        names = self._names
        headers: dict[str, str] = {}
        file = self.files[s.key[0]]
        for index, kind in enumerate(sk.kinds):
            if index == width_at or kind == FATAL or (kind == BAD and self.abend):
                self.state = asm.state()
                return index
            if kind == BAD:
                continue
            if failing:
                failing.clear()
            ops = []
            for t, optype, seqid, txid, txind, txname, txowner, ordinal, fails in sk.shapes[index]:
                table = names.get(t)
                if table is None:
                    # a stand-in for the Table: the replayed assembler reads only its name
                    table = names[t] = cast("Table", _TableName(t))
                op = Op(table, optype, 0, seqid, txid, txind, txname, txowner, None, None,
                        ordinal)
                if fails:
                    failing.add(id(op))
                ops.append(op)
            name = message_name(file, sk.numbers[index], first_line)
            try:
                self.txnum += len(asm.add(Message("", headers, "", None, name), ops).completed)
            except MessageError:
                if self.abend:
                    self.state = asm.state()
                    return index
        self.state = asm.state()
        return None

    def finish(self) -> MessageError | None:
        """After the last segment: an open transaction is an error naming where it began."""
        asm = Assembler(self.rules)
        asm.resume(self.state)
        try:
            asm.finish()
        except MessageError as exc:
            return exc
        return None
