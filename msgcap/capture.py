"""The capture loop of ``msgcap run``: source → pipeline → trail, durable first, then ack.

Every message goes through the one ``Pipeline`` (ids, parser, assembler, writer, error policy).
This loop adds what only a live source needs:

* **Group commit** (``trail.sync``, properties.md §10.1): transactions are written as they
  complete; a group ends when no message is ready, at 1000 transactions, when half the broker's
  prefetch window waits for it, or, after the messages the source had ready at once
  (``receive_many``), 200 ms after its first one (``transaction``: after every transaction). At
  the end of a group the trail is flushed and fsynced, the checkpoint replaced, and only then are
  the group's messages acknowledged. A message held by an open transaction is released with that
  transaction. Every acknowledgement (a group's, a spill's, a skipped journaled message's) goes
  through ``_ack``, which makes the archive durable first.
* **Redelivery**: when the broker connection was lost, whatever is written is made durable and
  the assembler restarts from the trail's state, exactly as after a crash; the broker redelivers
  everything unacknowledged and the duplicate rule (§9.2) skips what the trail already holds.
  A connection lost while a dead letter waits for the broker's confirmation is the same
  (``Redelivery`` from the error policy, in ``_many`` / ``_unreadable``).
* **Errors**: under ``abend`` the transactions before the bad message are made durable and
  acknowledged, then the error propagates; the bad message (and any open transaction) stays
  unacknowledged. ``discard`` is the pipeline's, the loop only acknowledges after durability.
* **Stop**: ``stop()`` (SIGTERM/SIGINT) lets an open transaction finish (up to ``stop_grace``
  seconds without a message), then flushes and returns; ``max_idle`` ends a run that has seen no
  message for that long (demos, tests), connected or not: time spent reconnecting counts (a
  broker that cannot be reached must not keep a run alive) — but never inside a transaction:
  then it says, every
  ``WAIT_REPORT_SECONDS``, which transaction it is waiting for. A run whose source never
  connected, or whose last failure no retry cures (``Source.cannot_be_idle``), does not end as
  idle: it stops with a ``SourceError`` saying so.
* **Retention** (``trail.purge.*``): after a checkpoint in a newer file than the last purge's
  (a rollover), old trail files are purged (``Retention``), after the group is acknowledged.
* **Status**: after each durable group the pipeline's statistics learn the durable position
  (``Pipeline.mark_durable``); reports and the summary show it beside what was merely written.

**Long transactions** (txind spanning many messages): a broker stops delivering at its prefetch
limit, and the messages of an open transaction cannot be acknowledged before the transaction is
in the trail. So once ``spill_at`` messages are held by the open transaction, they are appended to
a spill journal (``<checkpoint.dir>/<extract>.spill.jsonl``, dump entries with their raw ids),
the journal is fsynced, and only then are they acknowledged and their bodies dropped. On start,
``recover_spill`` runs the journal through the pipeline first (rebuilding the open transaction;
what the trail already holds is skipped as duplicate); the journal is removed once no transaction
is open and the trail is durable. The open transaction's records do not stay in memory either:
once ``stream_at`` records are held, the pipeline writes them to the trail as a part
(``TrailWriter.write_records``: TransInd 0, then 1, the end record 2) and drops them, so memory
is bounded whatever the transaction's size. The parts are not part of the trail until the end
record is written: a checkpoint inside the transaction names where it begins, and a stop, an
error or a reconnection inside it removes the parts (``drop_open``), as recovery after a crash
does; the journal and the broker then supply its messages again. The messages of an open
transaction are released (acknowledged) with the transaction, from ``_held``, not from the
``Assembled`` of its end.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from gendef.durable import fsync_parent
from msgcap.archive import Archive
from msgcap.checkpoint import CheckpointFile, checkpoint_of
from msgcap.dumps import entry_line, jsonl_message
from msgcap.pipeline import Pipeline, Processed
from msgcap.report import Reporter
from msgcap.sources.base import Redelivery, Source, Unreadable, duration_text
from msgcap.summary import MAX_IDLE
from parsers.model import Message
from props.errors import MessageError, MsgcapError, SourceError

if TYPE_CHECKING:
    from msgcap.assembler import Assembler
    from msgcap.trail.records import Position
    from msgcap.trail.retention import Retention
    from msgcap.trail.writer import TrailWriter
    from props.settings import SyncMode

log = logging.getLogger("msgcap.capture")

GROUP_TRANSACTIONS = 1000
GROUP_SECONDS = 0.2
POLL_SECONDS = 0.5
WAIT_REPORT_SECONDS = 60.0  # while idle inside a transaction, say so this often
DUPLICATE_SECONDS = 60.0  # duplicates skipped are counted and said this often
SPILL_AT = 1000
STREAM_AT = 1000  # records of an open transaction held in memory before a part is written


class Capture:
    """One capture run; ``run()`` returns when stopped, idle or on an error (raised)."""

    def __init__(self, source: Source, pipeline: Pipeline, writer: TrailWriter, *,
                 sync: SyncMode = "batch",
                 checkpoint: CheckpointFile | None = None, archive: Archive | None = None,
                 reporter: Reporter | None = None, max_idle: float | None = None,
                 stop_grace: float = 30.0, restart: Callable[[], Assembler] | None = None,
                 spill_path: str | None = None, spill_at: int | None = None,
                 stream_at: int | None = STREAM_AT, retention: Retention | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.source = source
        self.pipeline = pipeline
        self.writer = writer
        self.sync = sync
        self.checkpoint = checkpoint
        self.archive = archive
        self.reporter = reporter
        self.retention = retention
        self.max_idle = max_idle
        self.stop_grace = stop_grace
        self._restart = restart
        self._clock = clock
        self._stopping = False
        self._stop_now = False
        self._stop_reason: str | None = None  # stop()'s: what run() returns then
        self.capturing = False
        self.trail_bytes = 0
        self.redeliveries = 0
        self._last_pos: Position | None = None
        self._done: list[Message] = []
        self._discarded: list[Message] = []
        self._group_txs = 0
        self._group_first: float | None = None
        self._window: int | None = None  # the source's, as of the messages in hand
        self.spill_path = spill_path
        self._spill_at = spill_at
        self._held: list[tuple[Message, str]] = []  # (message, raw id) held by the open tx
        self._spilled = False
        # raw ids in the journal (redelivered ones skip); a message without one (an AMQP
        # producer need not set a message-id) cannot be recognised, and is never skipped
        self._journaled: set[str] = set()
        self.spilled_messages = 0
        self._duplicates = Duplicates(clock)
        pipeline.stream_at = stream_at

    @property
    def spill_at(self) -> int:
        """Held messages that make the open transaction spill: at most the source's window,
        which a STOMP source knows once it is connected (it depends on the broker)."""
        return self._spill_at or min(self.source.window or SPILL_AT, SPILL_AT)

    # -- control --------------------------------------------------------------------------------

    def stop(self, reason: str) -> None:
        """Finish the open transaction (if any) and stop; a second call stops at once.
        ``reason`` (the signal's name) is what ``run()`` returns then.

        Called from the thread signals are delivered to (``msgcap.stopsignals``): it sets flags
        and wakes the source, whose wake-up may take a lock the capture holds.
        """
        if self._stopping:
            self._stop_now = True
        else:
            self._stop_reason = reason
        self._stopping = True
        self.source.interrupt()

    @property
    def connected(self) -> bool:
        return self.source.connected

    # -- the loop -------------------------------------------------------------------------------

    def run(self) -> str:
        """Capture until stopped or idle; why it returned (``stop()``'s reason, or MAX_IDLE)."""
        pipeline, source, clock = self.pipeline, self.source, self._clock
        last_message = clock()
        stop_deadline: float | None = None
        waiting_said: float | None = None  # when "waiting for transaction" was last logged
        self.capturing = True
        try:
            while True:
                self._duplicates.say()
                now = clock()
                open_tx = pipeline.assembler.open_transaction
                if self._stopping:
                    if stop_deadline is None:
                        stop_deadline = now + self.stop_grace
                        if open_tx is not None:
                            log.info("stopping after transaction begun in %s ends", open_tx)
                    if open_tx is None or self._stop_now or now >= stop_deadline:
                        break
                elif self.max_idle is not None and now - last_message >= self.max_idle:
                    if open_tx is None:
                        self._idle(self.max_idle)
                        break
                    if waiting_said is None or now - waiting_said >= WAIT_REPORT_SECONDS:
                        waiting_said = now
                        log.warning("no message for %.1f s, but the transaction begun in %s "
                                    "is open: waiting for its end before stopping",
                                    now - last_message, open_tx)
                elif (open_tx is not None and now - last_message >= WAIT_REPORT_SECONDS
                      and (waiting_said is None or now - waiting_said >= WAIT_REPORT_SECONDS)):
                    waiting_said = now
                    log.info("no message for %.0f s; waiting for the end of the transaction "
                             "begun in %s", now - last_message, open_tx)
                if self._group_first is not None:
                    timeout = max(0.0, self._group_first + GROUP_SECONDS - now)
                else:
                    timeout = POLL_SECONDS
                    if self.max_idle is not None and open_tx is None:
                        timeout = min(timeout, max(0.0, last_message + self.max_idle - now))
                try:
                    messages = source.receive_many(timeout)
                except Redelivery as event:  # an outage counts as idle time (--max-idle)
                    self._redelivery(str(event))
                    continue
                except Unreadable as bad:
                    self._unreadable(bad.message, bad.error)
                    last_message = clock()
                    continue
                if not messages:
                    self._flush()
                    if self._stopping and stop_deadline is not None:
                        stop_deadline = min(stop_deadline, clock() + self.stop_grace)
                    if self.reporter is not None:
                        self.reporter.tick()
                    continue
                waiting_said = None
                self._many(messages)
                last_message = clock()  # idle time starts once the messages are processed
                if self._stopping:
                    stop_deadline = last_message + self.stop_grace
                if self.reporter is not None:
                    self.reporter.tick()
            self._drop_open()
            self._flush()
            return self._stop_reason or MAX_IDLE
        except MsgcapError:
            self._drop_open(quietly=True)
            self._flush_quietly()
            raise
        finally:
            self._duplicates.say(final=True)
            self.capturing = False

    def _idle(self, max_idle: float) -> None:
        """``--max-idle`` is up: stop, unless the source never connected or failed for a reason
        no retry cures (a queue not looked at is not known to be quiet): then a
        ``SourceError``."""
        source = self.source
        unknown = source.cannot_be_idle()
        if unknown is not None:
            raise SourceError(f"no message for {max_idle:.1f} s (--max-idle), but {unknown}",
                              url=source.url)
        log.info("no message for %.1f s%s: stopping", max_idle,
                 "" if source.connected else " (not connected to the source)")

    def _many(self, messages: list[Message]) -> None:
        """The messages the source had ready at once through the pipeline, ids and parsing
        ahead (``Pipeline.parse_ahead``), then the end of a group past its time."""
        self._window = self.source.window
        if self._journaled:
            messages = [m for m in messages if not self._journaled_again(m)]
        pipeline, archive = self.pipeline, self.archive
        for message, raw_id, parsed in pipeline.parse_ahead(messages):
            if self._stopping and pipeline.assembler.open_transaction is None:
                break  # the rest stays unacknowledged and comes again
            if archive is not None:
                archive.append(message, id=raw_id)
            # a MessageError from here on is error.policy=abend
            try:
                self._take(message, raw_id, pipeline.complete(message, raw_id, parsed))
            except Redelivery as event:  # lost while a dead letter was confirmed
                self._redelivery(str(event))
                return
        if self._group_first is not None and self._clock() - self._group_first >= GROUP_SECONDS:
            self._flush()

    def _unreadable(self, message: Message, error: MessageError) -> None:
        """A message the source could not read: only the error policy applies."""
        self._window = self.source.window
        if self._journaled_again(message):
            return
        if self.archive is not None:
            self.archive.append(message)
        try:
            self._take(message, message.id, self.pipeline.refuse(message, error))
        except Redelivery as event:  # lost while its dead letter was confirmed
            self._redelivery(str(event))

    def _journaled_again(self, message: Message) -> bool:
        """Whether the message is in the spill journal (then it is acknowledged and skipped):
        the ack did not reach the broker before a crash or a lost connection, and the journal
        copy is the one in the open transaction."""
        if message.id not in self._journaled:
            return False
        log.warning("message %s: already in the spill journal, skipped", message.name)
        self.pipeline.stats.duplicates += 1
        self._ack([message])
        return True

    def _take(self, message: Message, raw_id: str, result: Processed) -> None:
        """What the pipeline did with one message: hold it with the open transaction or
        release it with a group, and end the group when it is due."""
        released = False
        for listed, position in result.written:
            self._done.extend(listed)
            if not released:  # the message that ends a transaction is its last: seen first
                released = any(m is message for m in reversed(listed))
            self._group_txs += 1
            self._count_bytes(position)
        if result.ack_now:
            (self._discarded if result.discarded is not None else self._done).append(message)
            released = True
        if result.duplicate:
            self._duplicates.add(message.name)
        elif result.discarded is not None:
            log.warning("discarded: %s", result.discarded)
        if self.pipeline.assembler.open_transaction is None:
            if self._held:
                self._release_held(result.written)
        elif not released:
            self._held.append((message, raw_id))
            if len(self._held) >= self.spill_at and self.spill_path is not None:
                self._spill()
        if not (self._done or self._discarded):
            return
        if self._group_first is None:
            self._group_first = self._clock()
        window = self._window
        if ((self.sync == "transaction" and result.written)
                or self._group_txs >= GROUP_TRANSACTIONS
                or (window is not None and len(self._done) + len(self._discarded) >= window)):
            self._flush()

    def _release_held(self, written: list[tuple[list[Message], Position]]) -> None:
        """The open transaction ended: its held messages go with it (those of parts written
        before its end are in no ``Assembled``; spilled ones are acknowledged already)."""
        listed = {id(m) for messages, _ in written for m in messages}
        self._done.extend(m for m, _ in self._held if id(m) not in listed)
        self._held.clear()

    def _drop_open(self, *, quietly: bool = False) -> None:
        """Leaving inside a transaction written in parts: remove the parts from the trail
        (they come again from the spill journal and the broker)."""
        if not getattr(self.writer, "in_transaction", False):
            return
        try:
            self.writer.drop_open()
        except MsgcapError as exc:
            if not quietly:
                raise
            log.error("could not remove the open transaction's parts: %s", exc)
            return
        log.info("removed the written parts of the open transaction from the trail")

    def _count_bytes(self, position: Position) -> None:
        last = self._last_pos
        if last is not None and last.seqno == position.seqno:
            self.trail_bytes += position.rba - last.rba
        else:
            self.trail_bytes += position.rba
        self._last_pos = position

    # -- durability and acknowledgement ---------------------------------------------------------

    def _flush(self, *, ack: bool = True) -> None:
        """Make the group durable, checkpoint it, then acknowledge its messages."""
        if not (self._done or self._discarded or self._group_txs):
            return
        writer = self.writer
        pos = writer.flush_durable()
        checkpoint = self.checkpoint if self._group_txs else None
        if checkpoint is not None:
            checkpoint.save(checkpoint_of(
                writer, pos, last_message_id=self.pipeline.ids.last,
                messages=self.pipeline.stats.messages,
                last_commit_us=self.pipeline.stats.last_commit_us))
        self.pipeline.mark_durable(pos)
        done, discarded = self._done, self._discarded
        self._done, self._discarded = [], []
        self._group_txs, self._group_first = 0, None
        if self._spilled and self.pipeline.assembler.open_transaction is None:
            self._drop_spill()
        if ack:
            self._ack(done, discarded)
        if checkpoint is not None and self.retention is not None:
            self.retention.after_checkpoint(pos.seqno, writer.position.seqno)

    def _ack(self, done: Sequence[Message], discarded: Sequence[Message] = ()) -> None:
        """The one way to the source's ``ack``: the archive first (properties.md §10.3), so
        that whatever a source forgets is in the archive, a spill's or a discard's included."""
        if self.archive is not None:
            self.archive.flush_durable()
        self.source.ack(done, discarded)

    # -- the spill journal of long transactions -------------------------------------------------

    def _spill(self) -> None:
        """Journal the open transaction's held messages durably, then acknowledge them.

        The group of complete transactions before it is made durable and acknowledged first: on
        a restart the journal is replayed before the source delivers again, so no message of an
        earlier transaction may still be waiting to come again.
        """
        if self._done or self._discarded:
            self._flush()
        held, self._held = self._held, []
        assert self.spill_path is not None  # (the caller checked)
        try:
            with open(self.spill_path, "a", encoding="utf-8") as fh:
                fh.writelines(entry_line(m, id=raw) for m, raw in held)
                fh.flush()
                os.fsync(fh.fileno())
            if not self._spilled:
                fsync_parent(self.spill_path)
        except OSError as exc:
            raise MsgcapError(f"{self.spill_path}: cannot write the spill journal: "
                              f"{exc.strerror}") from None
        self._spilled = True
        self._journaled.update(raw for _, raw in held if raw)
        self.spilled_messages += len(held)
        messages = [m for m, _ in held]
        self._ack(messages)
        for m in messages:
            m.body, m.headers = b"", {}

    def _drop_spill(self) -> None:
        assert self.spill_path is not None  # (something was spilled)
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.spill_path)
        self._journaled.clear()
        fsync_parent(self.spill_path)
        self._spilled = False

    def recover_spill(self) -> int:
        """Before consuming: run a spill journal left by the previous run through the pipeline.

        Its messages were acknowledged already; the trail's duplicate rule skips what a completed
        transaction wrote. The journal is read line by line and each message's body dropped once
        it is assembled, so the replay needs memory for one entry, not the journal. A cut last
        line (a crash or a failed write while spilling) was never acknowledged and comes again
        from the source: it is truncated away before anything is appended. Any other damaged
        line stops the run with an error naming it. Returns the number of messages replayed.
        """
        path = self.spill_path
        if path is None or not os.path.exists(path):
            return 0
        count = 0
        for message in _journal(path):
            if message.id:
                self._journaled.add(message.id)
            result = self.pipeline.process(message)
            message.body, message.headers = b"", {}
            for _, position in result.written:
                self._group_txs += 1
                self._count_bytes(position)
            count += 1
        self._spilled = True
        self.spilled_messages = count
        log.info("replayed %d messages of an open transaction from %s", count, path)
        self._flush(ack=False)
        if self.pipeline.assembler.open_transaction is None:
            self._drop_spill()
        return count

    def _flush_quietly(self) -> None:
        """On the way out after an error: keep what is complete, if the trail still works."""
        try:
            self._flush()
        except MsgcapError as exc:
            log.error("could not make the last group durable: %s", exc)

    def _redelivery(self, reason: str) -> None:
        """The source lost its connection: what was not acknowledged will come again.

        What is written is made durable (acks of the old connection are void), then the pipeline
        restarts as after a crash: from the trail, plus the spill journal of an open transaction.
        """
        self.redeliveries += 1
        self._flush(ack=False)
        self._drop_open()
        self._held.clear()
        if self.archive is not None:
            self.archive.reconnected()
        if self._restart is None:
            raise MsgcapError("the source reconnected and the assembler cannot be restarted")
        self.pipeline.assembler = self._restart()
        if self._spilled:
            self.recover_spill()
        log.debug("%s: unacknowledged messages will be redelivered", reason)


class Duplicates:
    """Messages skipped as already in the trail (§9.2: redelivered after a lost connection or a
    crash, or sent again): a broker restart may redeliver thousands, so the first of a series
    is named at INFO and then one WARNING per ``DUPLICATE_SECONDS`` says how many, the last
    one named; what is counted when the run ends is said then. A series ends after an interval
    without one."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 interval: float = DUPLICATE_SECONDS) -> None:
        self._clock, self.interval = clock, interval
        self._count = 0
        self._since: float | None = None  # start of the interval counted; None: no series
        self._last = ""

    def add(self, name: str) -> None:
        if self._since is None:
            self._since = self._clock()
            log.info("message %s: duplicate (already in the trail), skipped; duplicates are "
                     "counted, one line a minute", name)
        self._count += 1
        self._last = name

    def say(self, *, final: bool = False) -> None:
        """The count, once the interval is over (``final``: now); the end of a series after
        an interval without a duplicate."""
        if self._since is None:
            return
        now = self._clock()
        span = now - self._since
        if span < self.interval and not final:
            return
        if not self._count:
            self._since = None
            return
        log.warning("skipped %s duplicate%s (messages already in the trail) in the last %s, "
                    "the last: %s", f"{self._count:,}", "" if self._count == 1 else "s",
                    duration_text(span), self._last)
        self._count, self._since = 0, (None if final else now)


def _journal(path: str) -> Iterator[Message]:
    """The messages of a spill journal, one line at a time; a cut last line is cut off the file.

    A line is whole when it ends with its newline: a spill is acknowledged only after all its
    lines are written and fsynced, so an unterminated or damaged last line was never
    acknowledged (its message comes again from the source), and the next spill must not be
    glued to it.
    """
    whole = 0  # bytes up to the end of the last whole entry
    try:
        with open(path, "rb") as fh:
            for number, raw in enumerate(fh, 1):
                if not raw.endswith(b"\n"):
                    break  # the cut last line (only the last can lack its newline)
                try:
                    message = jsonl_message(raw[:-1], path, number)
                except SourceError:
                    if fh.read(1):
                        raise  # damage before the end, not a cut: SourceError names path:line
                    break
                whole += len(raw)
                if message is not None:
                    yield message
            size = fh.seek(0, os.SEEK_END)
    except OSError as exc:
        raise MsgcapError(f"{path}: cannot read the spill journal: {exc.strerror}") from None
    if whole == size:
        return
    log.warning("%s: cut last entry ignored (it was not acknowledged); removed", path)
    try:
        with open(path, "r+b") as fh:
            fh.truncate(whole)
            os.fsync(fh.fileno())
    except OSError as exc:
        raise MsgcapError(f"{path}: cannot remove the cut last entry of the spill journal: "
                          f"{exc.strerror}") from None
