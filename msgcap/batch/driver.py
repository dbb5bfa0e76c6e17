"""The batch driver: plan in input order, frame in the tasks, append in order — one writer.

``run_batch``:

1. lists the inputs and cuts them into scans (``inputs``); compiles the parser's plan, here,
   once (``Job`` is broadcast to the tasks);
2. runs pass 1 over every partition (``parse``, one job), keeping the results in Spark; only
   the segments' summaries come back, each partition's as soon as its task ends;
3. plans the segments in order (``plan.Planner``), submitting each partition's pass 2
   (``encode``, one job per partition) as soon as its plans are made, while pass 1 still runs
   for later partitions;
4. appends the framed bytes as they come back, in order, with the one ``TrailWriter`` of this
   process; at most ``window`` partitions' bytes wait for it;
5. writes ``--format`` rows with Spark's own writers, then renames the outputs into place: a
   failed job leaves no partial trail (``Outputs``).

A transaction that fails to be written under ``discard`` moves the transaction numbers of all
later ones: the partitions after it are framed again from corrected plans (rare, as in replay).
"""

from __future__ import annotations

import bisect
import os
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO

from gendef.durable import fsync_dir
from msgcap.batch.direct import (
    Counted,
    Direct,
    Fallback,
    Start,
    border,
    changed,
    in_input_order,
    starts,
    steps,
)
from msgcap.batch.encode import Encoded, discard_records
from msgcap.batch.inputs import (
    KIND_FILE,
    MAX_BLOCK,
    MIN_SPLITS,
    block_size,
    has_scheme,
    plan_scans,
    refuse_large_files,
)
from msgcap.batch.parse import Job
from msgcap.batch.plan import Plan, Planner
from msgcap.batch.segments import SegmentKey
from msgcap.pipeline import Stats
from props.errors import MessageError, MsgcapError, SourceError

if TYPE_CHECKING:
    from gendef.model import Definitions
    from msgcap.batch.jobs import SparkJobs
    from msgcap.trail.writer import TrailWriter
    from props.settings import Settings

FORMATS = ("trail", "parquet", "json")
# ``DIR/batch.log``: msgcap's log and the output of the Spark JVM ``msgcap batch`` starts. Not an
# output: appended to by every run, kept when a job fails (it says why).
LOG_NAME = "batch.log"
Framed = tuple[Encoded, str]  # a segment's pass 2 and its discard records


@dataclass(slots=True)
class Result:
    """What ``run_batch`` did: the summary's counters and where the outputs went."""

    stats: Stats
    discard_file: str | None = None
    outputs: dict[str, str] = field(default_factory=dict)
    splits: int = 0
    planned_fast: int = 0  # segments planned from a trial
    planned_slow: int = 0  # segments planned message by message
    most_held: int = 0  # the most partitions whose framed bytes the driver waited for at once
    one_pass: bool = False  # every segment parsed and encoded at once (``direct``)


def check_output(output: str, formats: tuple[str, ...]) -> None:
    """Refuse an ``--output`` that already holds a batch's outputs; ``msgcap batch`` asks
    before it starts Spark (seconds), ``Outputs`` again before writing."""
    if os.path.exists(output) and not os.path.isdir(output):
        raise SourceError("not a directory; --output names the directory the batch creates",
                          url=output)
    for sub in ("trail", "errors", *formats):
        d = os.path.join(output, sub)
        if os.path.isdir(d) and os.listdir(d):
            raise SourceError("output exists and is not empty; remove it or choose "
                              "another --output", url=d)


class Outputs:
    """``DIR``'s outputs, written under temporary names and renamed into place by ``commit``;
    ``abort`` removes them (a failed job leaves no partial output)."""

    def __init__(self, output: str, formats: tuple[str, ...], rows_output: str | None) -> None:
        check_output(output, formats)
        os.makedirs(output, exist_ok=True)
        self.output = output
        self.formats = formats
        self.work = tempfile.mkdtemp(prefix=".batch-", dir=output)
        self.trail_dir = os.path.join(self.work, "trail")
        self.errors_dir = os.path.join(self.work, "errors")
        base = rows_output if rows_output is not None else "file:" + os.path.abspath(output)
        self.rows = {f: base.rstrip("/") + "/" + f for f in formats if f != "trail"}

    def final(self, path: str) -> str:
        """Where a file written under the temporary name ends up."""
        return os.path.join(self.output, os.path.relpath(path, self.work))

    def commit(self, trail: bool) -> None:
        if trail:
            os.replace(self.trail_dir, os.path.join(self.output, "trail"))
        if os.path.isdir(self.errors_dir):
            os.replace(self.errors_dir, os.path.join(self.output, "errors"))
        fsync_dir(self.output)  # the renames: the job's outputs are there after a crash too
        shutil.rmtree(self.work, ignore_errors=True)

    def abort(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)


class Appender:
    """Appends framed segments to the trail in order (whole transactions; the parts of one
    open across segments are held until it completes)."""

    def __init__(self, writer: TrailWriter, stats: Stats, errors_dir: str, *,
                 compressed: bool = False) -> None:
        self.writer = writer
        self.compressed = compressed
        self.stats = stats
        self.errors_dir = errors_dir
        self.discard_file: str | None = None
        self._discards: TextIO | None = None
        self.pending: list[bytes] = []
        self.pending_keys: list[SegmentKey] = []
        self.pending_error: str | None = None
        self.dropped: list[SegmentKey] = []  # segments whose tail rows are of a lost transaction

    def expects(self, r: Encoded) -> bool:
        """True when ``r`` was framed from a plan that still holds."""
        return r.txnum == self.writer.txnum and r.head_error == self.pending_error

    def append(self, r: Encoded, discards: str = "") -> MsgcapError | None:
        """Append one segment and the records of its discarded messages
        (``encode.discard_records``); the error that stops the job there, if any."""
        if discards:
            if self._discards is None:
                os.makedirs(self.errors_dir, exist_ok=True)
                self.discard_file = os.path.join(self.errors_dir, "discarded.jsonl")
                self._discards = open(self.discard_file, "a", encoding="utf-8")  # noqa: SIM115
            self._discards.write(discards)
        self.stats.add(r.stats)
        view = memoryview(r.framed(self.compressed))
        pos = 0
        ends = r.ends
        if r.head_completed:
            if not r.head_failed:
                self._write(b"".join(self.pending) + view[:ends[0]], 1, r.last)
                pos = ends[0]
                ends = ends[1:]
            else:
                self.dropped.extend(self.pending_keys)
            self.pending, self.pending_keys, self.pending_error = [], [], None
        self._write_group(view, ends, pos, r.last)
        if ends:
            pos = ends[-1]
        if r.tail:
            self.pending.append(bytes(view[pos:]))
            self.pending_keys.append(r.key)
        if r.tail_error is not None:
            self.pending_error = r.tail_error
        if r.error is not None:
            return MsgcapError(r.error) if r.fatal else MessageError(r.error)
        return None

    def _write(self, data: Any, transactions: int,
               last: tuple[str | None, int | None, str | None]) -> None:
        writer = self.writer
        writer.append_encoded(data, transactions=transactions, last_seqid=last[0],
                              last_audit_pos=last[1], last_txid=last[2], checked=True)
        position = writer.position
        stats = self.stats
        if not stats.trail_files or stats.trail_files[-1] != position.file:
            stats.trail_files.append(position.file)
        stats.last_position = position

    def _write_group(self, view: memoryview, ends: Any, pos: int,
                     last: tuple[str | None, int | None, str | None]) -> None:
        """Whole transactions ending at ``ends``: as many at once as fit the current file, so
        that the writer rolls over before the same transaction as when it gets them one by
        one."""
        writer = self.writer
        i, n = 0, len(ends)
        while i < n:
            room = writer.limit - writer.position.rba
            j = max(bisect.bisect_right(ends, pos + room, i) - 1, i)
            self._write(view[pos:ends[j]], j - i + 1, last)
            pos = ends[j]
            i = j + 1

    def close(self) -> None:
        if self._discards is not None:
            self._discards.close()


def run_batch(settings: Settings, inputs: list[str], output: str, *, spark: Any,
              formats: tuple[str, ...] = ("trail",), partitions: int | None = None,
              lines: bool = False, definitions: Definitions | None = None,
              progress: Callable[[str], None] | None = None,
              progress_out: TextIO | None = None, progress_interval: float = 5.0,
              rows_output: str | None = None) -> Result:
    """The whole batch (see the module doc); raises MsgcapError like replay does."""
    from gendef.build import build_definitions
    from msgcap.batch.jobs import Progress, SparkJobs
    from msgcap.pipeline import write_trail_defs
    from parsers.base import build_parser

    for f in formats:
        if f not in FORMATS:
            raise SourceError(f"unknown format {f!r} (expected {', '.join(FORMATS)})",
                              url="--format")
    if definitions is None:
        definitions = build_definitions(settings)
    parser = build_parser(settings, definitions)
    jobs = SparkJobs(spark)
    files = jobs.list_inputs(inputs, lines=lines)
    refuse_large_files(files, settings.jms.maxbytes)
    block = block_size(files, target=partitions or max(MIN_SPLITS, 2 * jobs.parallelism),
                       cap=None if partitions else MAX_BLOCK)
    scans = plan_scans(files, block=block)
    outputs = Outputs(output, formats, rows_output)
    job = Job.create(settings, parser, definitions, files, scans,
                     rows=any(f != "trail" for f in formats), time_base=time.time_ns() // 1000)
    job.compress = not jobs.local  # on a cluster, fewer bytes through the JVMs and network
    spool_dir = os.path.abspath(os.path.join(outputs.work, "spool"))
    os.mkdir(spool_dir)
    if jobs.local:
        job.spool = spool_dir
    else:
        job.nearby = spool_dir
    out = progress_out if progress_out is not None else sys.stderr
    try:
        with Progress(jobs.sc, out, progress_interval) as prog:
            run = _Run(jobs, job, settings, outputs, progress or prog.say)
            result = run.execute(scans)
        if "trail" not in formats:
            result.stats.trail_files.clear()
            result.stats.last_position = None
        else:
            result.outputs["trail"] = os.path.join(output, "trail")
        for f, uri in outputs.rows.items():
            result.outputs[f] = os.path.join(output, f) if rows_output is None else uri
        if result.discard_file is not None:
            result.discard_file = outputs.final(result.discard_file)
        result.stats.trail_files = [outputs.final(p) for p in result.stats.trail_files]
        if result.stats.last_position is not None:
            lp = result.stats.last_position
            result.stats.last_position = lp._replace(file=outputs.final(lp.file))
        write_trail_defs(settings, definitions)
        outputs.commit("trail" in formats)
        if "trail" in formats:  # fsynced and in place: all of it is durable, as replay says
            result.stats.durable_position = result.stats.last_position
            result.stats.durable_transactions = result.stats.transactions
    except BaseException:
        outputs.abort()
        raise
    return result


def trail_writer(settings: Settings, directory: str) -> TrailWriter:
    """The writer of the batch's trail: ``trail.path``'s files (and file headers) in
    ``directory``."""
    from msgcap.trail.writer import TrailWriter

    trail = settings.trail
    return TrailWriter(os.path.join(directory, os.path.basename(trail.path)),
                       seqlen=trail.seqlen, megabytes=trail.megabytes, byteorder=trail.byteorder,
                       sync=trail.sync, extract=trail.extract, uri=trail.uri,
                       header_path=trail.path, partition=settings.partition)


class _Run:
    """One run of the driver loop (module doc, steps 2–5)."""

    def __init__(self, jobs: SparkJobs, job: Job, settings: Settings, outputs: Outputs,
                 say: Callable[[str], None]) -> None:
        self.jobs, self.job, self.settings, self.outputs, self.say = (
            jobs, job, settings, outputs, say)
        self.window = window(jobs.parallelism, spooled=job.spool is not None)
        self.local_blocks: list[tuple[SegmentKey, int]] | None = None  # (``execute``)

    def execute(self, scans: list) -> Result:
        jobs, job = self.jobs, self.job
        source, kinds = jobs.source(list(job.files), scans)
        self.source, self.kinds = source, kinds
        one_pass = _one_pass_possible(job)
        on_driver = one_pass and all(  # the driver reads local files faster than Spark counts
            f.uri.startswith("file:") and not has_scheme(f.name) for f in job.files)
        counted: list[Counted] | None = None
        if job.first_lines is None and (one_pass or _ids_need_lines(job)):
            counted = self._count(scans, on_driver=on_driver)
        # local files of lines alone: the one pass's tasks read their blocks themselves, not
        # through Spark's text source (whose JVM would read the input a second time)
        if on_driver and counted and not any(s.whole for s in scans):
            block = {s.files[0]: s.block for s in scans}
            self.local_blocks = sorted((c.key, block[c.key[0]]) for c in counted)
        step = steps(job, counted) if one_pass and counted is not None else None
        if step is not None and counted is not None and job.first_lines is not None:
            bjob = jobs.broadcast(job)
            try:
                done = self._one_pass(bjob, starts(counted, job.first_lines, step))
            finally:
                bjob.unpersist()
            if isinstance(done, Result):
                return done
            self.say(f"{done.reason}: two passes instead")
        if on_driver and counted is not None:  # line numbers as Spark's own reading counts them
            job.first_lines = None
            if _ids_need_lines(job):
                self._count(scans, on_driver=False)
        bjob = jobs.broadcast(job)
        parsed = jobs.parse(source, kinds, bjob)
        n = parsed.getNumPartitions()
        result = Result(Stats(), splits=n)
        writer, appender = self._trail(result)
        pool = ThreadPoolExecutor(max_workers=2 * self.window + 2,
                                  thread_name_prefix="batch-job")
        self.parsed, self.bjob, self.pool, self.appender = parsed, bjob, pool, appender
        self.order = jobs.in_order()
        writer.open()
        try:
            self.say(f"parsing {len(job.files)} input files in {n} splits")
            error = self._loop()
            writer.flush_durable()
            if error is not None:
                raise error
            for f, uri in self.outputs.rows.items():
                self.say(f"writing {f} rows")
                jobs.write_rows(parsed, bjob, self.final, frozenset(appender.dropped), f, uri)
        except BaseException:
            self.order.close()  # before the cancel: no job waiting its turn starts after it
            jobs.cancel()
            raise
        finally:
            writer.close()
            appender.close()
            pool.shutdown(wait=True, cancel_futures=True)
            parsed.unpersist()
            bjob.unpersist()
        result.discard_file = appender.discard_file
        result.planned_fast, result.planned_slow = self.planner.fast, self.planner.slow
        result.most_held = self.most_held
        return result

    def _trail(self, result: Result) -> tuple[TrailWriter, Appender]:
        """The trail's writer, and the appender counting into ``result``."""
        writer = trail_writer(self.settings, self.outputs.trail_dir)
        return writer, Appender(writer, result.stats, self.outputs.errors_dir,
                                compressed=self.job.compress)

    def _count(self, scans: list, *, on_driver: bool) -> list[Counted]:
        """Count every segment's lines and messages (``SparkJobs.segment_counts``), setting the
        job's first line numbers."""
        job = self.job
        self.say("counting lines")
        bare = self.jobs.broadcast(job)
        try:
            counted = self.jobs.segment_counts(list(job.files), scans, bare, on_driver=on_driver)
        finally:
            bare.unpersist()
        job.first_lines = _first_lines(counted)
        return counted

    def _one_pass(self, bjob: Any, todo: dict[SegmentKey, Start]) -> Result | Fallback:
        """The whole run in one pass (``direct``); why not, with nothing left of it, as soon as
        a segment turns out not to be common or not to follow the one before it."""
        jobs = self.jobs
        if self.local_blocks is not None:  # the tasks read the blocks of local files
            blocks = jobs.blocks(self.local_blocks)
            task: Callable[[int], list[Direct | Fallback]] = partial(
                jobs.direct_blocks, blocks, bjob, todo)
            n = len(self.local_blocks)
        else:
            task = partial(jobs.direct, self.source, self.kinds, bjob, todo)
            n = self.source.getNumPartitions()
        result = Result(Stats(), splits=n, one_pass=True)
        writer, appender = self._trail(result)
        pool = ThreadPoolExecutor(max_workers=self.window + 1, thread_name_prefix="batch-job")
        order = jobs.in_order()
        queue: deque[Future[list[Direct | Fallback]]] = deque()
        submitted = 0
        whole = False
        previous: Direct | None = None

        def submit() -> None:
            nonlocal submitted
            ticket = order.queue()
            queue.append(pool.submit(order.run, ticket, partial(task, submitted)))
            submitted += 1
            result.most_held = max(result.most_held, len(queue))

        writer.open()
        try:
            self.say(f"parsing and encoding {len(self.job.files)} input files in {n} splits "
                     "(one pass)")
            while submitted < min(n, self.window + 1):
                submit()
            done: set[SegmentKey] = set()
            while queue:
                done_here = in_input_order(queue.popleft().result())
                if isinstance(done_here, Fallback):
                    return done_here
                for d in done_here:
                    name = self.job.files[d.encoded.key[0]].name
                    stop = border(previous, d, name)
                    if stop is None and not appender.expects(d.encoded):
                        stop = changed(name)  # (a segment before it was not read as counted)
                    if stop is not None:
                        return stop
                    appender.append(d.encoded)
                    done.add(d.encoded.key)
                    if d.first_mark is not None:
                        previous = d
                if submitted < n:
                    submit()
            unread = [key for key, start in todo.items() if start.messages and key not in done]
            if unread:  # (a segment counted but not read)
                return changed(self.job.files[min(unread)[0]].name)
            writer.flush_durable()
            whole = True
        finally:
            if not whole:
                order.close()
                jobs.cancel()
            writer.close()
            appender.close()
            pool.shutdown(wait=True, cancel_futures=True)
            if not whole:
                shutil.rmtree(self.outputs.trail_dir, ignore_errors=True)
        return result

    def _loop(self) -> MsgcapError | None:
        """Steps 2–4 for every partition; the error that stops the job, if any."""
        jobs, parsed = self.jobs, self.parsed
        self.planner = planner = Planner(self.job.rules, self.job.policy, self.job.files)
        self.final: dict[SegmentKey, Plan] = {}
        self.shift = 0  # planned minus actual transaction numbers (discard at write time)
        self.most_held = 0
        self.queue: deque[tuple[int, dict[SegmentKey, Plan], Future[list[Framed]], int]] = (
            deque())
        last: SegmentKey | None = None
        with closing(jobs.summaries(parsed)) as every:  # closed early: pass 1 stops
            for p, found in enumerate(every):
                if p == 0:
                    self.say("assembling transactions")
                plans: dict[SegmentKey, Plan] = {}
                for s in sorted(found, key=lambda s: s.key):
                    if last is not None and s.key <= last:
                        raise SourceError(f"Spark read the inputs out of order ({s.key} after "
                                          f"{last})")
                    last = s.key
                    plan = planner.plan(s, partial(jobs.skeleton, parsed, p, s.key))
                    if self.shift:
                        plan = plan.moved(plan.txnum - self.shift, plan.head_error)
                    plans[s.key] = plan
                    if planner.stopped:
                        break
                if plans:
                    self._submit(p, plans)
                while len(self.queue) > self.window:
                    error = self._append_next()
                    if error is not None:
                        return error
                if planner.stopped:
                    break
        self.say(f"encoding {len(self.final) + sum(len(q[1]) for q in self.queue)} segments")
        while self.queue:
            error = self._append_next()
            if error is not None:
                return error
        if not planner.stopped:
            return planner.finish()
        return None

    def _submit(self, p: int, plans: dict[SegmentKey, Plan]) -> None:
        """Pass 2 of partition ``p`` in a pool thread, its job submitted after the ones
        queued before it (``jobs.InOrder``)."""
        ticket = self.order.queue()
        future = self.pool.submit(self.order.run, ticket, partial(self._encode, p, plans))
        self.queue.append((p, plans, future, ticket))
        self.most_held = max(self.most_held, len(self.queue))

    def _encode(self, p: int, plans: dict[SegmentKey, Plan]) -> list[Framed]:
        """Pass 2 of partition ``p``, each segment with the records of its discarded messages,
        whose lines are read again here (a second job, only when there are any)."""
        jobs, files = self.jobs, self.job.files
        encoded = jobs.encode(self.parsed, self.bjob, plans, p)
        wanted = {r.key: [d[0] for d in r.discarded] for r in encoded if r.discarded}
        if not wanted:
            return [(r, "") for r in encoded]
        lines = jobs.pick_lines(self.source, self.kinds, self.bjob, p, wanted)
        return [(r, discard_records(files[r.key[0]], plans[r.key].first_line, r.discarded,
                                    lines[r.key]) if r.discarded else "") for r in encoded]

    def _append_next(self) -> MsgcapError | None:
        """Append the oldest partition's segments; frame again from corrected plans when a
        transaction before them failed to be written."""
        p, plans, future, _ = self.queue.popleft()
        appender = self.appender
        for r, discards in sorted(future.result(), key=lambda e: e[0].key):
            if not appender.expects(r):
                self._replan(p, plans, r)
                return None
            self.final[r.key] = plans[r.key]
            error = appender.append(r, discards)
            if error is not None:
                return error
        return None

    def _replan(self, p: int, plans: dict[SegmentKey, Plan], r: Encoded) -> None:
        """``r`` was framed before a transaction ahead of it failed: move the numbers of it and
        of every later plan, and frame them again."""
        delta = r.txnum - self.appender.writer.txnum
        self.shift += delta
        self.say(f"framing segments from {r.key} again (a transaction failed to be written)")
        head = self.appender.pending_error
        redo = {k: plan.moved(plan.txnum - delta, head if k == r.key else None)
                for k, plan in plans.items() if k >= r.key}
        queued = list(self.queue)
        self.queue.clear()
        self._submit(p, redo)
        for q, qplans, future, ticket in queued:
            if future.cancel():
                self.order.drop(ticket)
            self._submit(q, {k: plan.moved(plan.txnum - delta, None)
                             for k, plan in qplans.items()})


def window(parallelism: int, *, spooled: bool) -> int:
    """Pass-2 jobs in flight besides the one whose bytes are being appended: the partitions
    whose bytes may wait for the driver. Their bytes in spool files, not in memory: twice as
    many, so that jobs Spark runs in another order than submitted keep the executors busy
    while the driver waits for the oldest."""
    return 2 * parallelism + 2 if spooled else parallelism + 1


def _ids_need_lines(job: Job) -> bool:
    """Text-line ids (``file:line``) go into ``jms.id`` unless ids are ``time``."""
    return job.id_mode.strip().lower() != "time" and any(
        f.kind == "lines" for f in job.files)


def _one_pass_possible(job: Job) -> bool:
    """Whether the one pass may be tried: every input read by lines (a count of its lines
    gives each segment's start), no ``--format`` rows (made from the general path's records)."""
    return not job.rows and bool(job.files) and all(f.kind != KIND_FILE for f in job.files)


def _first_lines(counts: list[Counted]) -> dict[SegmentKey, int]:
    out: dict[SegmentKey, int] = {}
    seen: dict[int, int] = {}
    for c in sorted(counts, key=lambda c: c.key):
        out[c.key] = seen.get(c.key[0], 0) + 1
        seen[c.key[0]] = seen.get(c.key[0], 0) + c.lines
    return out
