"""``msgcap replay --prop P [--lines] DUMP...``: message dumps through the capture pipeline.

The same parser, assembler, trail writer and error policy as ``msgcap run``, fed from dump files
(properties.md §13) instead of a broker; it ends with a summary of what was written and how far
the trail is durable (``--json``: one JSON object), also when an error stops it. An open transaction at the end of the input
is an error (§3.4). The trail's lock keeps a ``msgcap run`` or another replay off it meanwhile.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, TextIO

from props.partition import partition_argument

if TYPE_CHECKING:
    from collections.abc import Iterable

    from msgcap.checkpoint import CheckpointFile
    from msgcap.pipeline import Pipeline, Stats
    from parsers.model import Message
    from props.settings import Settings

log = logging.getLogger("msgcap.replay")

PROGRESS_INTERVAL = 2.0  # seconds between progress lines, by default


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prop", required=True, metavar="FILE",
                        help="properties file (e.g. dirprm/jmsvam.properties)")
    parser.add_argument("--partition", type=partition_argument, metavar="N",
                        help="the partition number ${PARTITION} stands for in the properties "
                             "(default: $MSGCAP_PARTITION)")
    parser.add_argument("--lines", action="store_true",
                        help="each line of a DUMP is one message body (id FILE:LINE)")
    parser.add_argument("--progress-interval", type=float, default=PROGRESS_INTERVAL,
                        metavar="SECONDS",
                        help="seconds between progress lines on stderr (default 2; 0 = every "
                             "message, negative = never)")
    parser.add_argument("--json", action="store_true",
                        help="print the summary as one JSON object on stdout")
    parser.add_argument("dumps", nargs="+", metavar="DUMP",
                        help="JSON Lines dumps (*.jsonl), discard files (*.dsc), text-line "
                             "files with --lines, or one message per file; globs and "
                             "directories are expanded in name order")


def run(args: argparse.Namespace) -> int:
    from gendef.build import build_definitions
    from gendef.logsetup import configure_logging
    from msgcap.checkpoint import checkpoint_of
    from msgcap.dumps import expand_inputs, read_messages
    from msgcap.lock import writer_locks
    from msgcap.pipeline import build_pipeline, write_trail_defs
    from msgcap.summary import END_OF_INPUT, print_results, results, why_stopped
    from msgcap.trail.writer import TrailWriter
    from parsers.base import build_parser
    from props.loader import load_settings

    settings = load_settings(args.prop, partition=args.partition)
    configure_logging(settings, command="msgcap replay", log_to_file=False)
    paths = expand_inputs(args.dumps)
    definitions = build_definitions(settings)
    parser = build_parser(settings, definitions)
    trail = settings.trail
    checkpoints = captures_checkpoint(settings)
    with writer_locks(checkpoint_dir=settings.checkpoint_dir if checkpoints else None,
                      extract=trail.extract if checkpoints else None, trail=trail.path):
        saved = checkpoints.load(trail.path) if checkpoints else None
        write_trail_defs(settings, definitions)
        writer = TrailWriter(trail.path, seqlen=trail.seqlen, megabytes=trail.megabytes,
                             byteorder=trail.byteorder, sync=trail.sync, extract=trail.extract,
                             uri=trail.uri, partition=settings.partition)
        recovery = writer.open(saved.recovery if saved else None)
        pipeline = build_pipeline(settings, writer, recovery, definitions=definitions,
                                  parser=parser,
                                  last_message_id=saved.last_message_id if saved else None)
        stats = pipeline.stats
        progress = Progress(sys.stderr, args.progress_interval)
        messages = read_messages(paths, lines=args.lines, max_bytes=settings.jms.maxbytes)
        started = time.monotonic()
        ended: tuple[str, str | None] = (END_OF_INPUT, None)
        try:
            try:
                replay_messages(pipeline, messages, progress)
            finally:  # what was written before an error is kept: make it durable first
                progress.done()
                if not writer.broken:
                    durable = writer.flush_durable()
                    pipeline.mark_durable(durable)
                    if checkpoints is not None and saved is not None and stats.transactions:
                        checkpoints.save(checkpoint_of(
                            writer, durable, last_message_id=pipeline.ids.last,
                            messages=stats.messages, last_commit_us=stats.last_commit_us))
        except BaseException as exc:
            ended = why_stopped(exc)
            raise
        finally:
            writer.close()
            if pipeline.discard is not None:
                pipeline.discard.close()
            if args.json:
                print_results(results("replay", stats, exit_reason=ended[0], error=ended[1],
                                      elapsed=time.monotonic() - started,
                                      discarded_to=settings.error.file,
                                      definitions=trail.defs))
            else:
                print(stats.summary())
                if stats.discarded:
                    print(f"discarded messages: {settings.error.file}")
                sys.stdout.flush()
    if trail.defs and not args.json:
        print(f"definitions: {trail.defs}")
    log.debug("replay of %d messages took %.2f s", stats.messages, time.monotonic() - started)
    return 0


def captures_checkpoint(settings: Settings) -> CheckpointFile | None:
    """The checkpoint of the capture (``msgcap run``) that writes this trail, if there is one:
    replay then continues from it and keeps it in step, so that ``status`` and the next run's
    recovery see what replay added."""
    from msgcap.checkpoint import CheckpointFile

    trail = settings.trail
    checkpoints = CheckpointFile(settings.checkpoint_dir, trail.extract)
    if not os.path.exists(checkpoints.path):
        return None
    saved = checkpoints.load()
    if saved is not None and os.path.normpath(saved.trail or trail.path) != os.path.normpath(
            trail.path):
        return None  # another configuration's trail
    return checkpoints


def replay_messages(pipeline: Pipeline, messages: Iterable[Message], progress: Progress
                    ) -> None:
    """Every message through ``pipeline``, as ``msgcap replay`` runs them (bench/ times this
    loop): a warning for each duplicate or discarded one, progress lines, then the end of the
    input (an open transaction is an error)."""
    stats = pipeline.stats
    seen = 0
    for general in pipeline.consume(messages):  # a batch of messages at a time
        for message, result in general:
            if result.duplicate:
                log.warning("message %s: duplicate (already in the trail), skipped",
                            message.name)
            elif result.discarded is not None:
                log.warning("discarded: %s", result.discarded)
        progress.tick(stats, stats.messages - seen)
        seen = stats.messages
    pipeline.finish()


class Progress:
    """Progress lines on a long replay: at most one per ``interval`` seconds, after the first.

    On a terminal the line is rewritten in place; elsewhere (logs, pipes) each is a new line.
    The clock is read once ``CLOCK_EVERY`` messages have been ticked since it was last read
    (at every tick for an interval of 0), not per message.
    """

    CLOCK_EVERY = 64

    def __init__(self, out: TextIO, interval: float) -> None:
        self.out = out
        self.interval = interval
        self.start = self.last = time.monotonic()
        self.tty = out.isatty()
        self.shown = False
        self._every = 1 if interval == 0 else self.CLOCK_EVERY
        self._countdown = self._every

    def tick(self, stats: Stats, messages: int = 1) -> None:
        """``messages`` more were processed (``stats`` counts them)."""
        self._countdown -= messages
        if self._countdown > 0 or self.interval < 0:
            return
        self._countdown = self._every
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        rate = stats.messages / max(now - self.start, 1e-9)
        line = (f"replay: {stats.messages} messages, {stats.transactions} transactions, "
                f"{stats.total_operations} operations, {stats.discarded} discarded "
                f"({rate:,.0f} messages/s)")
        self.out.write(f"\r{line}\x1b[K" if self.tty else line + "\n")
        self.out.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown and self.tty:
            self.out.write("\n")
            self.out.flush()
