"""The Spark side of a batch (Spark-facing: imports pyspark): listing, reading, the kept pass-1
results, one-partition jobs, the rows writers, and Spark's failures as one line.

Inputs are read by Spark's own readers, through Hadoop, so any URI the cluster reads works:
the text source for the lines of large files (cut into blocks; ``lineSep`` ``\\n``, and the raw
bytes kept, never decoded in the JVM), ``binaryFile`` for files read whole. Each line or file
becomes one byte string (``segments``) built by Spark SQL expressions and passed to the Python
tasks as is (``Encoders.BINARY``, read by ``RawElements``: no pickling per line). A private
session holds the scan settings (block size, no packing of blocks), so the user's session is
left alone.
"""

from __future__ import annotations

import logging
import re
import struct
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import CancelledError
from dataclasses import replace
from typing import Any, Self, TextIO

from gendef.logsetup import FILE_ONLY
from msgcap.batch.direct import (
    Counted,
    Direct,
    Fallback,
    Start,
    count_local,
    count_segments,
    direct_blocks,
    direct_partition,
)
from msgcap.batch.encode import Encoded, encode_partition, rows_partition
from msgcap.batch.inputs import KIND_LINES, InputFile, Scan, has_scheme, input_files, local_inputs
from msgcap.batch.parse import Skeleton, Summary, parse_partition
from msgcap.batch.plan import Plan
from msgcap.batch.rows import COLUMNS, SCHEMA
from msgcap.batch.segments import SegmentKey, file_head, line_head, pick_lines
from props.errors import MsgcapError, SourceError

log = logging.getLogger("msgcap.batch")
_GLOB_CHARS = re.compile(r"([\\*?\[\]{}])")
_PY_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$")
# Seconds between looks at pass 1's summaries while its job runs
SUMMARY_POLL = 0.005


class SparkJobError(MsgcapError):
    """A Spark job of the batch failed: the cause as one line."""


def task_failure(exc: BaseException) -> MsgcapError:
    """One line for a failed Spark job, naming its cause; the whole error (a Py4J error holds
    the Java stack traces, the executors' included) goes to the log file only."""
    log.error("a Spark job failed", exc_info=exc, extra=FILE_ONLY)
    text = str(exc)
    missing = re.search(r"ModuleNotFoundError: No module named '([^']+)'", text)
    if missing:
        return SparkJobError(
            f"the executors' Python cannot import {missing[1]}: install msgcap on every node, "
            "or ship a packed environment with --python-env (see docs/cluster.md)")
    version = re.search(r"Python in worker has different version[^\n]*", text)
    if version:
        return SparkJobError(version[0].strip())
    for pattern in (r"java\.io\.FileNotFoundException: [^\n]*",
                    r"java\.nio\.file\.AccessDeniedException: [^\n]*",
                    r"org\.apache\.hadoop\.security\.AccessControlException: [^\n]*"):
        found = re.search(pattern, text)
        if found:
            return SourceError(f"cannot read an input: {found[0].split(': ', 1)[1]}")
    read = re.search(r"FileNotFoundError: \[Errno 2\] No such file or directory: '([^']*)'", text)
    if read:  # a local file a one-pass task reads itself (``direct.local_segment``)
        return SourceError(f"cannot read an input: File file:{read[1]} does not exist")
    gone = re.search(r"\[PATH_NOT_FOUND\] Path does not exist: (\S+?)\.?(?: SQLSTATE|$)", text,
                     re.MULTILINE)
    if gone:  # a file gone before a scan of it is planned again (the counts' own scans)
        return SourceError(f"cannot read an input: File {gone[1]} does not exist")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    python = [m for m in map(_PY_ERROR.match, lines) if m]
    if python:
        return SparkJobError(f"a Spark task failed: {python[-1][0]}")
    return SparkJobError(f"a Spark job failed: {lines[0] if lines else type(exc).__name__}")


def _blank(kind: str) -> Any:
    """Spark SQL's test of a line that is no message, as ``direct.blank`` tests it."""
    from pyspark.sql import functions as F

    value = F.col("value")
    if kind == KIND_LINES:
        return (F.length(value) == 0) | (value == "\r")
    return value.rlike("^\\s*$")  # Java's \s: ASCII white space, as bytes.isspace


def _spark_path(uri: str) -> str:
    """A file's URI as Spark's readers take it: glob characters escaped (a path, not a glob)."""
    return _GLOB_CHARS.sub(r"\\\1", uri)


class _ListParam:
    """An accumulator of lists (``AccumulatorParam``): the tasks' items, concatenated."""

    def zero(self, value: list) -> list:
        return []

    def addInPlace(self, a: list, b: list) -> list:
        a.extend(b)
        return a


_LENGTH = struct.Struct("!i")
_NULL = -5  # pyspark.serializers.SpecialLengths.NULL; other negative lengths end the data


class RawElements:
    """The byte strings a task gets from the JVM, as they are: ``NoOpSerializer``'s frames,
    read in a tighter loop (a million lines: 0.2 CPU-seconds less in the tasks)."""

    def load_stream(self, stream: Any) -> Iterator[bytes | None]:
        read, unpack = stream.read, _LENGTH.unpack
        while True:
            head = read(4)
            if len(head) < 4:
                return
            (size,) = unpack(head)
            if size < 0:
                if size != _NULL:
                    return
                yield None
                continue
            data = read(size)
            if len(data) < size:
                return
            yield data

    def dump_stream(self, iterator: Iterable[bytes], stream: Any) -> None:
        for data in iterator:
            stream.write(_LENGTH.pack(len(data)))
            stream.write(data)

    def __eq__(self, other: object) -> bool:
        return type(other) is RawElements

    def __hash__(self) -> int:
        return hash(RawElements)

    def __repr__(self) -> str:
        return "RawElements()"


class InOrder:
    """Hands one-partition jobs that several threads submit to Spark in the order they were
    queued. Spark's FIFO scheduler runs jobs in the order it gets them; threads that submit at
    once reach it in any order, and a later partition run first leaves the driver waiting for
    the oldest while the executors work ahead (on two 1-core workers: a second of an idle core
    per 1M messages). A job is submitted once every job queued before it has been (or was
    dropped), and Spark's status tracker shows the last of them, waiting at most ``patience``
    seconds."""

    def __init__(self, sc: Any, patience: float = 2.0) -> None:
        self._sc = sc
        self._tracker = sc.statusTracker()
        self._group = f"msgcap-batch-{uuid.uuid4().hex[:12]}-"
        self._patience = patience
        self._cond = threading.Condition()
        self._queued = 0
        self._next = 0  # every ticket before it has started or was dropped
        self._last = -1  # the latest ticket started
        self._gone: set[int] = set()  # started or dropped, at or after ``_next``
        self._ended: set[int] = set()
        self._closed = False

    def queue(self) -> int:
        """The ticket of the next job, in the order ``run`` is to submit them."""
        with self._cond:
            self._queued += 1
            return self._queued - 1

    def drop(self, ticket: int) -> None:
        """The job of ``ticket`` will never run (cancelled before it started)."""
        with self._cond:
            self._gone_by(ticket)

    def close(self) -> None:
        """Jobs not yet submitted are not submitted (the batch stops)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def job_ids(self, ticket: int) -> list[int]:
        """The Spark jobs ``ticket`` has submitted so far."""
        return list(self._tracker.getJobIdsForGroup(self._group + str(ticket)))

    def run(self, ticket: int, submit: Callable[[], Any]) -> Any:
        """``submit()`` (which runs Spark jobs) once the jobs queued before are Spark's."""
        deadline = time.monotonic() + self._patience
        with self._cond:
            self._cond.wait_for(lambda: self._closed or self._next >= ticket,
                                timeout=self._patience)
            last = self._last
        while (not self._closed and last >= 0 and last not in self._ended
               and time.monotonic() < deadline and not self.job_ids(last)):
            time.sleep(0.001)
        if self._closed:
            raise CancelledError
        self._sc.setJobGroup(self._group + str(ticket), f"msgcap batch, job {ticket}")
        with self._cond:
            self._last = max(self._last, ticket)
            self._gone_by(ticket)
        try:
            return submit()
        finally:
            with self._cond:
                self._ended.add(ticket)

    def _gone_by(self, ticket: int) -> None:
        self._gone.add(ticket)
        while self._next in self._gone:
            self._gone.discard(self._next)
            self._next += 1
        self._cond.notify_all()


class SparkJobs:
    """The Spark operations of one batch run."""

    def __init__(self, spark: Any) -> None:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException

        self.spark = spark
        self.sc = spark.sparkContext
        self.scans = spark.newSession()  # own SQL settings for the scans
        self._failures = (Py4JJavaError, PySparkException)

    @property
    def parallelism(self) -> int:
        return max(1, self.sc.defaultParallelism)

    @property
    def local(self) -> bool:
        return self.sc.master.startswith("local")

    # -- inputs -------------------------------------------------------------------------------

    def list_inputs(self, patterns: list[str], *, lines: bool) -> list[InputFile]:
        """The input files in order: local paths as replay expands them, URIs through Hadoop."""
        found: list[tuple[str, str, int]] = []
        local: list[str] = []
        for pattern in patterns:
            if not has_scheme(pattern):
                local.append(pattern)
                continue
            found.extend(local_inputs(local))
            local = []
            found.extend(self._hadoop_files(pattern))
        found.extend(local_inputs(local))
        return input_files(found, lines=lines)

    def _hadoop_files(self, pattern: str) -> list[tuple[str, str, int]]:
        """(uri, name, size) of a URI: a file, a directory's non-hidden files, or a glob; in
        name order."""
        jvm = self.sc._jvm
        try:
            path = jvm.org.apache.hadoop.fs.Path(pattern)
            fs = path.getFileSystem(self.sc._jsc.hadoopConfiguration())
            if _GLOB_CHARS.search(pattern):
                statuses = [s for s in (fs.globStatus(path) or []) if s.isFile()]
                if not statuses:
                    raise SourceError("no file matches", url=pattern)
            elif not fs.exists(path):
                raise SourceError("no such file", url=pattern)
            elif fs.getFileStatus(path).isDirectory():
                statuses = [s for s in fs.listStatus(path)
                            if s.isFile() and not s.getPath().getName().startswith(".")]
            else:
                statuses = [fs.getFileStatus(path)]
        except self._failures as exc:
            raise SourceError(task_failure(exc).args[0], url=pattern) from None
        found = [(s.getPath().toString(), s.getLen()) for s in statuses]
        return [(uri, uri, size) for uri, size in sorted(found)]

    def source(self, files: list[InputFile], scans: list[Scan]) -> tuple[Any, list[bool]]:
        """One RDD of the byte strings of every scan, in input order, and which of its
        partitions are blocks of lines."""
        rdds = []
        kinds: list[bool] = []
        for number, scan in enumerate(scans):
            df = self._whole(files, scan, number) if scan.whole else self._lines(files, scan)
            rdd = self._elements(df)
            rdds.append(rdd)
            kinds.extend([not scan.whole] * rdd.getNumPartitions())
        if not rdds:
            return self.sc.parallelize([], 1), [False]
        return (self.sc.union(rdds) if len(rdds) > 1 else rdds[0]), kinds

    def _elements(self, df: Any) -> Any:
        """The RDD of a DataFrame's one binary column, as the tasks read it (``RawElements``)."""
        from pyspark.rdd import RDD

        binary = self.sc._jvm.org.apache.spark.sql.Encoders.BINARY()
        return RDD(getattr(df._jdf, "as")(binary).javaRDD(), self.sc, RawElements())

    def segment_counts(self, files: list[InputFile], scans: list[Scan], bjob: Any, *,
                       on_driver: bool = False) -> list[Counted]:
        """``Counted`` of every segment, in no order: the blocks of a large file counted in
        the JVM (a row a block comes back to Python, not the lines), or with ``on_driver``
        (local files) read here (``direct.count_local``); the files of a scan read whole by
        tasks (``direct.count_segments``). Of the blocks, only the input's first message is
        read (``Counted.first``), if it is in one."""
        from pyspark.sql import functions as F

        out: list[Counted] = []
        whole = []
        try:
            for number, scan in enumerate(scans):
                if scan.whole:
                    whole.append(self._elements(self._whole(files, scan, number)))
                elif on_driver:
                    out.extend(count_local(files[scan.files[0]], scan.block))
                else:
                    out.extend(self._block_counts(files, scan))
            if whole:
                rdd = self.sc.union(whole) if len(whole) > 1 else whole[0]
                out.extend(rdd.mapPartitions(
                    lambda it: count_segments(bjob.value, it, lines=False)).collect())
            first = min((c for c in out if c.messages), key=lambda c: c.key, default=None)
            if first is not None and first.first is None:
                scan = next(s for s in scans if not s.whole and s.files[0] == first.key[0])
                line = (self._lines(files, scan, raw=True)
                        .where(~_blank(files[first.key[0]].kind))
                        .select(F.col("value").cast("binary")).limit(1).collect())
                out[out.index(first)] = replace(first, first=bytes(line[0][0]) if line else None)
        except self._failures as exc:
            raise task_failure(exc) from None
        return out

    def _block_counts(self, files: list[InputFile], scan: Scan) -> list[Counted]:
        """``Counted`` of each block of a large file's scan, without its first message."""
        from pyspark.sql import functions as F

        f = files[scan.files[0]]
        rows = (self._lines(files, scan, raw=True)
                .groupBy(F.col("_metadata.file_block_start"))
                .agg(F.count(F.lit(1)), F.count(F.when(~_blank(f.kind), 1)))
                .collect())
        return [Counted((f.index, start), lines, messages, None)
                for start, lines, messages in rows]

    def _lines(self, files: list[InputFile], scan: Scan, *, raw: bool = False) -> Any:
        """The lines of a large file's scan, each a task's element (``raw``: its text rows)."""
        from pyspark.sql import functions as F

        f = files[scan.files[0]]
        conf = self.scans.conf
        conf.set("spark.sql.files.maxPartitionBytes", str(scan.block))
        conf.set("spark.sql.files.openCostInBytes", str(scan.block))  # one block per task
        df = self.scans.read.text(_spark_path(f.uri), lineSep="\n")
        if raw:
            return df
        line = F.col("value").cast("binary")
        start = F.unhex(F.lpad(F.hex("_metadata.file_block_start"), 16, "0"))
        # the first line of a task's block says which block it is (the id's low 33 bits are
        # the row's number in its partition)
        first = (F.monotonically_increasing_id() % (1 << 33)) == 0
        return df.select(F.when(first, F.concat(F.lit(line_head(f.index)), start, line))
                         .otherwise(line))

    def _whole(self, files: list[InputFile], scan: Scan, number: int) -> Any:
        from pyspark.sql import functions as F

        conf = self.scans.conf
        conf.set("spark.sql.files.maxPartitionBytes", str(scan.block))
        conf.set("spark.sql.files.openCostInBytes", "0")
        conf.set("spark.sql.files.minPartitionNum", "1")
        uris = list(dict.fromkeys(_spark_path(files[i].uri) for i in scan.files))
        df = self.scans.read.format("binaryFile").load(uris)
        return df.select(F.concat(F.lit(file_head(number)), F.encode("path", "UTF-8"),
                                  F.lit(b"\0"), "content"))

    # -- jobs ---------------------------------------------------------------------------------

    def run(self, rdd: Any, fn: Callable, partition: int) -> list:
        """A job over one partition of ``rdd``; a failure as one MsgcapError line."""
        try:
            return self.sc.runJob(rdd, fn, [partition])
        except self._failures as exc:
            raise task_failure(exc) from None

    def broadcast(self, value: Any) -> Any:
        return self.sc.broadcast(value)

    def direct(self, source: Any, kinds: list[bool], bjob: Any, todo: dict[SegmentKey, Start],
               partition: int) -> list[Direct | Fallback]:
        """The one pass over one partition of the inputs (``direct.direct_partition``)."""
        lines = kinds[partition]
        return self.run(source, lambda it: direct_partition(bjob.value, todo, it, lines=lines),
                        partition)

    def blocks(self, blocks: list[tuple[SegmentKey, int]]) -> Any:
        """An RDD of one (key, block size) a partition: blocks of local files, which the
        one pass's tasks read themselves (``direct.direct_blocks``)."""
        return self.sc.parallelize(blocks, len(blocks))

    def direct_blocks(self, blocks: Any, bjob: Any, todo: dict[SegmentKey, Start],
                      partition: int) -> list[Direct | Fallback]:
        """The one pass over one partition of ``blocks``."""
        return self.run(blocks, lambda it: direct_blocks(bjob.value, todo, it), partition)

    def parse(self, source: Any, kinds: list[bool], bjob: Any) -> Any:
        """Pass 1 over every partition, kept (memory, spilled to disk) for pass 2; each task
        adds its partition's summaries to an accumulator as it finishes (``summaries``)."""
        from pyspark import StorageLevel

        acc = self._summaries = self.sc.accumulator([], _ListParam())

        def run(i: int, it: Any) -> Any:
            got = []
            for p in parse_partition(bjob.value, it, lines=kinds[i]):
                got.append(p.summary)
                yield p
            acc.add([(i, got)])

        return source.mapPartitionsWithIndex(run, preservesPartitioning=True).persist(
            StorageLevel.MEMORY_AND_DISK)

    def summaries(self, parsed: Any) -> Generator[list[Summary], None, None]:
        """Each partition's segment summaries, in partition order, as soon as its pass-1 task
        has finished. Pass 1 is one job over every partition, a count run in the JVM (the kept
        results are not read back by Python) from a thread of its own: the driver plans and
        submits the first partitions' pass 2 while the last ones are still parsed, so no
        executor waits for pass 1's slowest task. Closed early, it cancels pass 1."""
        from pyspark import InheritableThread

        group = f"msgcap-pass1-{uuid.uuid4().hex[:12]}"
        ended = threading.Event()
        failed: list[BaseException] = []

        def count() -> None:
            try:
                self.sc.setJobGroup(group, "msgcap batch, pass 1")
                parsed._jrdd.count()
            except self._failures as exc:
                failed.append(task_failure(exc))
            except BaseException as exc:  # noqa: BLE001 - raised in the driver's thread
                failed.append(exc)
            finally:
                ended.set()

        thread = InheritableThread(target=count, name="batch-pass-1", daemon=True)
        thread.start()
        try:
            for p in range(parsed.getNumPartitions()):
                while True:
                    over = ended.is_set()  # the job returns after its last update is in
                    # a partition computed twice: the same summaries
                    got = dict(self._summaries.value)
                    if p in got or over:
                        break
                    ended.wait(SUMMARY_POLL)
                if p not in got:
                    raise failed[0] if failed else SparkJobError(
                        f"pass 1 reported no summaries for split {p}")
                yield got[p]
        finally:
            if not ended.is_set():
                self.sc.cancelJobGroup(group)
            thread.join()

    def skeleton(self, parsed: Any, partition: int, key: SegmentKey) -> Skeleton:
        def pick(it: Any) -> list[bytes]:
            return [p.skeleton for p in it if p.summary.key == key]
        return Skeleton.load(self.run(parsed, pick, partition)[0])

    def encode(self, parsed: Any, bjob: Any, plans: dict[SegmentKey, Plan],
               partition: int) -> list[Encoded]:
        return self.run(parsed, lambda it: encode_partition(bjob.value, plans, it), partition)

    def pick_lines(self, source: Any, kinds: list[bool], bjob: Any, partition: int,
                   wanted: dict[SegmentKey, list[int]]) -> dict[SegmentKey, dict[int, bytes]]:
        """The raw lines ``wanted`` of one partition, read again from the inputs."""
        lines = kinds[partition]

        def pick(it: Any) -> list[dict]:
            job = bjob.value
            return [pick_lines(it, job.files, job.whole, wanted, lines=lines)]
        return self.run(source, pick, partition)[0]

    def write_rows(self, parsed: Any, bjob: Any, plans: dict[SegmentKey, Plan],
                   dropped: frozenset[SegmentKey], fmt: str, uri: str) -> None:
        """The rows of every planned segment, written by Spark's own writer to ``uri``,
        partitioned by table."""
        from pyspark.sql import functions as F

        bplans = self.sc.broadcast(plans)
        rdd = parsed.mapPartitions(
            lambda it: rows_partition(bjob.value, bplans.value, dropped, it))
        try:
            df = self.spark.createDataFrame(rdd, SCHEMA, verifySchema=False)
            df = df.withColumn("commit_time", F.timestamp_micros("commit_us")).select(*COLUMNS)
            writer = df.write.mode("errorifexists").partitionBy("table")
            (writer.parquet if fmt == "parquet" else writer.json)(uri)
        except self._failures as exc:
            raise task_failure(exc) from None
        finally:
            bplans.unpersist()

    def in_order(self) -> InOrder:
        return InOrder(self.sc)

    def cancel(self) -> None:
        self.sc.cancelAllJobs()


class Progress:
    """Progress lines on stderr while Spark runs: step, finished tasks of the running stages."""

    def __init__(self, sc: Any, out: TextIO, interval: float) -> None:
        self.sc, self.out, self.interval = sc, out, interval
        self.step = "starting"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        if self.interval > 0:
            self._thread = threading.Thread(target=self._run, name="batch-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def say(self, step: str) -> None:
        self.step = step
        if self.interval >= 0:
            self.out.write(f"batch: {step}\n")
            self.out.flush()

    def _run(self) -> None:
        tracker = self.sc.statusTracker()
        while not self._stop.wait(self.interval):
            done = total = 0
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                self.out.write(f"batch: {self.step}: {done}/{total} tasks done\n")
                self.out.flush()
