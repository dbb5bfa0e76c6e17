"""``msgcap batch``: replay archived message dumps with Spark (properties.md §13.1).

The same parser, assembler, error policy and trail encoding as ``msgcap replay``, with the parse
in Spark tasks (``msgcap.batch``); the trail under ``DIR/trail/`` equals replay's, and
``--format parquet,json`` adds one row per operation for analysts.

It logs to ``DIR/batch.log`` (warnings and errors also on stderr, as ``msgcap run``), and the Spark
JVM it starts writes its own output there too: a failed task's Java stack trace stays out of the
terminal, which shows msgcap's one line.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

log = logging.getLogger("msgcap.batch")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prop", required=True, metavar="FILE",
                        help="properties file (the same as for msgcap replay)")
    parser.add_argument("--input", required=True, nargs="+", action="extend", metavar="PATH",
                        help="dump files, globs (name order) or directories, in order")
    parser.add_argument("--output", required=True, metavar="DIR",
                        help="output directory: trail/, parquet/, json/, errors/")
    parser.add_argument("--master", default="local[*]", metavar="URL",
                        help="Spark master (default local[*]; spark://…, yarn, k8s://…)")
    parser.add_argument("--partitions", type=int, metavar="N",
                        help="number of input splits (default: twice the cores, at least 4, "
                             "blocks of at most 32 MB)")
    parser.add_argument("--format", default="trail", metavar="LIST",
                        help="comma-separated outputs: trail (default), parquet, json")
    parser.add_argument("--lines", action="store_true",
                        help="each line of an input is one message body (id FILE:LINE)")
    parser.add_argument("--progress-interval", type=float, default=5.0, metavar="SECONDS",
                        help="seconds between task progress lines on stderr (default 5; "
                             "0 = steps only, negative = quiet)")
    parser.add_argument("--json", action="store_true",
                        help="print the summary as one JSON object on stdout (nothing there "
                             "when an error stops the batch)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting (repeatable), e.g. spark.executor.memory=4g")
    parser.add_argument("--python-env", metavar="ARCHIVE",
                        help="a packed Python environment with msgcap (venv-pack) shipped to "
                             "the executors (cluster masters)")
    parser.add_argument("--rows-output", metavar="URI",
                        help="where --format parquet/json rows go (default: the --output "
                             "directory); a URI the executors can write, e.g. hdfs://…")


def run(args: argparse.Namespace) -> int:
    from gendef.logsetup import FILE_ONLY, configure_logging
    from msgcap.batch.driver import FORMATS, LOG_NAME, check_output, run_batch
    from msgcap.batch.session import spark_session
    from msgcap.lock import writer_locks
    from msgcap.summary import END_OF_INPUT, print_results, results
    from props.errors import MsgcapError, SourceError
    from props.loader import load_settings

    formats = tuple(f.strip() for f in args.format.split(",") if f.strip())
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise SourceError(f"unknown format {','.join(bad) or '(none)'} (expected a list of "
                          f"{', '.join(FORMATS)})", url="--format")
    if args.partitions is not None and args.partitions < 1:
        raise SourceError("--partitions must be at least 1", url="--partitions")
    conf = []
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SourceError(f"{item!r} is not KEY=VALUE", url="--conf")
        conf.append((key.strip(), value))
    settings = load_settings(args.prop)
    check_output(args.output, formats)
    from pyspark.sql import SparkSession

    # one batch per output directory (held until the process ends, released when it stops)
    locks = writer_locks(checkpoint_dir=None, extract=None, trail=None, directory=args.output)
    log_file = os.path.join(args.output, LOG_NAME)
    started = time.monotonic()
    try:
        configure_logging(settings, command="msgcap batch", log_to_file=True, log_file=log_file)
        log.info("batch of %s into %s", " ".join(args.input), args.output)
        existing = SparkSession.getActiveSession()
        spark = spark_session(args.master, conf=conf, python_env=args.python_env,
                              jvm_output=log_file)  # Spark's log at its default level, WARN
        try:
            result = run_batch(settings, args.input, args.output, spark=spark,
                               formats=formats, partitions=args.partitions, lines=args.lines,
                               progress_out=sys.stderr,
                               progress_interval=args.progress_interval,
                               rows_output=args.rows_output)
        finally:
            if existing is None:
                spark.stop()
    except MsgcapError as exc:
        log.error("stopped by an error: %s", exc, extra=FILE_ONLY)  # the CLI prints the line
        raise
    finally:
        locks.close()
    if args.json:
        print_results(results("batch", result.stats, exit_reason=END_OF_INPUT,
                              elapsed=time.monotonic() - started,
                              discarded_to=result.discard_file, definitions=settings.trail.defs,
                              outputs=result.outputs))
    else:
        print(result.stats.summary())
        for name, path in result.outputs.items():
            if name != "trail":
                print(f"{name} rows: {path}")
        if result.discard_file:
            print(f"discarded messages: {result.discard_file}")
        if settings.trail.defs:
            print(f"definitions: {settings.trail.defs}")
    log.debug("batch of %d messages in %d splits took %.2f s", result.stats.messages,
              result.splits, time.monotonic() - started)
    return 0
