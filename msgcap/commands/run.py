"""``msgcap run --prop P [--max-idle SECONDS]``: capture from the broker or spool dir into the trail.

Start-up order matters for exactly-once: the locks of the checkpoint and the trail are taken
first (one writer each), the trail is recovered from the checkpoint's durable position on, the
pipeline continues from what the trail holds, and only then is the source connected, so every
redelivered message meets the duplicate rule. SIGTERM/SIGINT finish the open transaction and
stop cleanly (a second signal stops at once); a summary with the durable position is always
printed (``--json``: as one JSON object, ``msgcap.summary``), and an error that stops the run goes
to the log as well as to stderr. ``report.http`` says on stderr where it serves (port 0: the
port the system chose) and publishes the address to the status file for ``msgcap status``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from typing import TYPE_CHECKING

from props.partition import partition_argument

if TYPE_CHECKING:
    from contextlib import ExitStack

    from msgcap.checkpoint import Checkpoint, CheckpointFile
    from msgcap.sources.base import Source
    from msgcap.status import StatusPublisher
    from msgcap.stopsignals import Relay
    from msgcap.trail.writer import TrailWriter
    from props.settings import Settings

log = logging.getLogger("msgcap.run")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prop", required=True, metavar="FILE",
                        help="properties file (e.g. dirprm/jmsvam.properties)")
    parser.add_argument("--partition", type=partition_argument, metavar="N",
                        help="the partition number ${PARTITION} stands for in the properties "
                             "(default: $MSGCAP_PARTITION)")
    parser.add_argument("--max-idle", type=float, default=None, metavar="SECONDS",
                        help="stop when no message arrived for SECONDS and no transaction is "
                             "open, connected to the broker or not (demos, tests); default: run "
                             "until stopped")
    parser.add_argument("--stop-grace", type=float, default=30.0, metavar="SECONDS",
                        help="on SIGTERM/SIGINT, wait at most SECONDS without a message for an "
                             "open transaction to end (default 30)")
    parser.add_argument("--standby", action="store_true",
                        help="when another msgcap run holds the checkpoint and trail, wait as a "
                             "hot standby (no broker connection) and take over when it ends, "
                             "instead of refusing")
    parser.add_argument("--json", action="store_true",
                        help="print the final summary as one JSON object on stdout (reports and "
                             "heartbeat lines then go to stderr)")


def run(args: argparse.Namespace) -> int:
    from gendef.logsetup import FILE_ONLY, configure_logging
    from msgcap.lock import writer_locks
    from msgcap.pipeline import Stats
    from msgcap.sources import source_for
    from msgcap.status import StatusPublisher, status_path
    from msgcap.stopsignals import Relay, delivered_to_thread
    from msgcap.summary import why_stopped
    from props.errors import MsgcapError
    from props.loader import load_settings

    settings = load_settings(args.prop, partition=args.partition)
    settings.jms.require_env()  # the connection settings' ${NAME}, unset: one line
    configure_logging(settings, command="msgcap run", log_to_file=True)
    if not logging.getLogger("msgcap").isEnabledFor(logging.DEBUG):
        logging.getLogger("stomp.py").setLevel(logging.ERROR)
    source = source_for(settings)  # property errors before anything is touched
    trail = settings.trail
    relay = Relay()  # from the locks on, SIGTERM/SIGINT stop the run cleanly, whatever it does
    try:
        with delivered_to_thread(relay):
            if args.standby:
                locks = _wait_as_standby(args, settings, relay)
                if locks is None:
                    return 0
            else:
                locks = writer_locks(checkpoint_dir=settings.checkpoint_dir,
                                     extract=trail.extract, trail=trail.path)
            with locks:
                publisher = StatusPublisher(status_path(settings.checkpoint_dir, trail.extract),
                                            Stats(), heartbeat=settings.report_heartbeat,
                                            connection=lambda: source.connection)
                publisher.publish()
                try:
                    done = _capture(args, settings, source, publisher, relay)
                except BaseException as exc:
                    reason, error = why_stopped(exc)
                    publisher.publish("abended", error or reason)
                    raise
                publisher.publish("stopped")
                return done
    except MsgcapError as exc:  # stderr gets it from the CLI, the log from here
        log.error("stopped by an error: %s", exc, extra=FILE_ONLY)
        raise
    except Exception:
        log.critical("stopped by an internal error", exc_info=True, extra=FILE_ONLY)
        raise


def _wait_as_standby(args: argparse.Namespace, settings: Settings,
                     relay: Relay) -> ExitStack | None:
    """``--standby``: the writer locks, once the capture holding them ends (at once when none
    does); None when SIGTERM/SIGINT ended the wait (said, and with ``--json`` the summary).
    A signal after the takeover is kept by ``relay`` for the capture."""
    import threading

    from msgcap.lock import writer_lock_list
    from msgcap.pipeline import Stats
    from msgcap.standby import Registration, say, take_over
    from msgcap.summary import print_results, results

    trail = settings.trail
    started = time.monotonic()
    stop, signals = threading.Event(), []

    def on_signal(name: str) -> None:
        signals.append(name)
        stop.set()

    registration = Registration(settings.checkpoint_dir, trail.extract)
    relay.to(on_signal)
    try:
        locks = take_over(writer_lock_list(checkpoint_dir=settings.checkpoint_dir,
                                           extract=trail.extract, trail=trail.path),
                          registration, stop)
    finally:
        relay.to(None)
        registration.remove()
    if locks is not None and not stop.is_set():
        return locks
    if locks is not None:  # the signal came as the locks were taken: stop all the same
        locks.close()
    say(f"standby (pid {os.getpid()}): stopped by {signals[0]} while waiting: nothing taken, "
        "nothing written")
    if args.json:
        print_results(results("run", Stats(), exit_reason=signals[0],
                              elapsed=time.monotonic() - started))
    return None


def _checkpoint_recovered(checkpoints: CheckpointFile, writer: TrailWriter,
                          saved: Checkpoint) -> Checkpoint:
    """The trail holds complete transactions that the last run wrote after its last checkpoint
    (it died between the two): checkpoint them now, durable. Otherwise, while only their
    redeliveries (duplicates) come, the checkpoint, and with it ``msgcap status``, the lag and
    retention, would stay behind the trail."""
    from msgcap.checkpoint import checkpoint_of

    checkpoint = checkpoint_of(writer, writer.flush_durable(),
                               last_message_id=saved.last_message_id, messages=saved.messages,
                               last_commit_us=saved.last_commit_us)
    checkpoints.save(checkpoint)
    return checkpoint


def _capture(args: argparse.Namespace, settings: Settings, source: Source,
             publisher: StatusPublisher, relay: Relay) -> int:
    from gendef.build import build_definitions
    from msgcap.archive import Archive
    from msgcap.assembler import Assembler, ImageRules, Restart
    from msgcap.capture import Capture
    from msgcap.checkpoint import CheckpointFile
    from msgcap.pipeline import build_pipeline, write_trail_defs
    from msgcap.report import HttpReport, Reporter
    from msgcap.summary import ERROR, print_results, results, why_stopped
    from msgcap.trail.retention import Retention
    from msgcap.trail.writer import TrailWriter
    from parsers.base import build_parser
    from props.errors import MsgcapError

    definitions = build_definitions(settings)
    parser = build_parser(settings, definitions)
    write_trail_defs(settings, definitions)

    trail = settings.trail
    checkpoints = CheckpointFile(settings.checkpoint_dir, trail.extract)
    saved = checkpoints.load(trail.path)
    writer = TrailWriter(trail.path, seqlen=trail.seqlen, megabytes=trail.megabytes,
                         byteorder=trail.byteorder, sync=trail.sync, extract=trail.extract,
                         uri=trail.uri, partition=settings.partition)
    recovery = writer.open(saved.recovery if saved else None)
    if saved is not None and (recovery.seqno, recovery.rba) != (saved.seqno, saved.rba):
        saved = _checkpoint_recovered(checkpoints, writer, saved)
    retention = Retention(trail, settings.checkpoint_dir) if trail.purge.enabled else None
    if retention is not None and saved is not None:  # nothing is passed without a checkpoint
        retention.after_checkpoint(saved.seqno, recovery.seqno)
    pipeline = build_pipeline(settings, writer, recovery, definitions=definitions, parser=parser,
                              last_message_id=saved.last_message_id if saved else None,
                              discard_sync=trail.sync != "none", stats=publisher.stats)
    if saved is not None:  # lag is measured from the last durable commit until the next one
        pipeline.stats.last_commit_us = saved.last_commit_us
        pipeline.stats.durable_commit_us = saved.time_us
    if settings.error.destination:  # the loader allows it with a broker source only
        from msgcap.sources.broker import BrokerSource
        assert isinstance(source, BrokerSource)
        pipeline.discard = source.dead_letters(settings.error.destination)
    rules = ImageRules.from_settings(settings)
    archive = (Archive(settings.archive_dir, trail.extract, megabytes=trail.megabytes,
                       sync=trail.sync) if settings.archive_dir else None)
    jms = settings.jms
    reporter = Reporter(pipeline.stats, every_seconds=jms.report_time,
                        every_records=jms.report_records, heartbeat=settings.report_heartbeat,
                        output=jms.report_output, publish=publisher.publish,
                        connection=publisher.connection,
                        out=sys.stderr if args.json else None)  # stdout: the JSON alone
    capture = Capture(source, pipeline, writer, sync=trail.sync, checkpoint=checkpoints,
                      archive=archive, reporter=reporter, max_idle=args.max_idle,
                      stop_grace=args.stop_grace,
                      restart=lambda: Assembler(rules, Restart.from_recovery(writer)),
                      spill_path=os.path.join(settings.checkpoint_dir,
                                              f"{trail.extract}.spill.jsonl"),
                      retention=retention)
    http = None
    if settings.report_http:
        http = HttpReport(settings.report_http, pipeline.stats,
                          lambda: (capture.capturing, capture.connected, capture.trail_bytes),
                          connection=publisher.connection)
        http.start()
        said = f"serving /health and /metrics on {http.url}"
        log.info("%s", said)
        print(said, file=sys.stderr, flush=True)
        publisher.http = http.url
        publisher.publish()

    ended: tuple[str, str | None] = (ERROR, None)  # (exit reason, error): set below
    try:
        relay.to(capture.stop)  # with any signal that came since the locks were taken
        log.info("msgcap run %s: trail %s from seqno %d RBA %d, source %s", trail.extract,
                 trail.path, recovery.seqno, recovery.rba, source.url)
        capture.recover_spill()
        source.open()
        ended = (capture.run(), None)
    except BaseException as exc:
        ended = why_stopped(exc)
        raise
    finally:
        source.close()
        try:
            writer.close()
        except MsgcapError as exc:  # the summary below says how far the trail is durable
            log.error("could not close the trail: %s", exc)
        if archive is not None:
            archive.close()
        if pipeline.discard is not None:
            pipeline.discard.close()
        if http is not None:
            http.close()
            publisher.http = None
        stats = pipeline.stats
        if args.json:
            print_results(results(
                "run", stats, exit_reason=ended[0], error=ended[1],
                elapsed=time.monotonic() - reporter.started,
                discarded_to=settings.error.destination or settings.error.file,
                definitions=trail.defs))
        else:
            print(reporter.report("summary"))
            sys.stdout.flush()
        log.info("stopped: %d messages, %d transactions written; %s", stats.messages,
                 stats.transactions, stats.trail_status())
    return 0
