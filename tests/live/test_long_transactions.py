"""Transactions spanning many messages in the live capture: written to the trail in parts so memory
stays bounded, yet the trail ends up byte-identical to writing them whole, and a stop, an abend,
a reconnection or a crash inside one leaves exactly the complete transactions before it.

The capture runs in-process on a scripted source with low thresholds (``stream_at``/``spill_at``).
"""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from collections.abc import Callable, Sequence

import pytest

from msgcap.assembler import Assembler, ImageRules, Restart
from msgcap.capture import Capture
from msgcap.checkpoint import CheckpointFile
from msgcap.pipeline import build_pipeline
from msgcap.sources.base import Redelivery, Source
from msgcap.trail.reader import TrailFile
from msgcap.trail.writer import TrailWriter
from parsers.model import Message
from props.errors import MessageError
from props.loader import load_settings


class Crash(Exception):
    """Stands for kill -9: nothing after it runs."""


class ScriptedSource(Source):
    """A queue: delivers what is not acknowledged, in order; redelivers after a reconnection."""

    def __init__(self, bodies: Sequence[str], *, reconnect_after: int | None = None,
                 crash_after: int | None = None) -> None:
        self.items = [(f"m{i:06d}", b) for i, b in enumerate(bodies)]
        self.flags = bytearray(len(self.items) + 1000)  # acknowledged, by index (no growth)
        self.epoch = 0
        self.pos = 0
        self.delivered = 0
        self.reconnect_after = reconnect_after
        self.crash_after = crash_after
        self.when_empty: Callable[[], None] | None = None

    def receive(self, timeout: float) -> Message | None:
        if self.delivered == self.reconnect_after:
            self.reconnect_after = None
            self.epoch += 1
            self.pos = 0
            raise Redelivery("scripted reconnection")
        if self.delivered == self.crash_after:
            raise Crash
        while self.pos < len(self.items) and self.flags[self.pos]:
            self.pos += 1
        if self.pos >= len(self.items):
            if self.when_empty is not None:
                self.when_empty()
            return None
        ident, body = self.items[self.pos]
        self.pos += 1
        self.delivered += 1
        return Message(ident, {}, body, ack=(self.epoch, ident))

    def ack(self, done: Sequence[Message], discarded: Sequence[Message] = ()) -> None:
        for m in (*done, *discarded):
            if m.ack is not None and m.ack[0] == self.epoch:
                self.flags[int(m.ack[1][1:])] = 1
                m.ack = None

    @property
    def acked(self) -> set[str]:
        return {ident for n, (ident, _) in enumerate(self.items) if self.flags[n]}

    def close(self) -> None:
        pass


def spanning(work, first: int, last: int) -> list[str]:
    """One transaction of the messages first..last (txind B, M..., E)."""
    return [work.body(i, "B" if i == first else "E" if i == last else "M")
            for i in range(first, last + 1)]


def whole(work, *seqs: int) -> list[str]:
    return [work.body(i) for i in seqs]


class Run:
    """One ``msgcap run`` in-process (what msgcap.commands.run wires), on ``source``."""

    def __init__(self, work, source: Source, *, stream_at: int | None, spill_at: int = 40
                 ) -> None:
        settings = load_settings(str(work.prop))
        self.checkpoints = CheckpointFile(settings.checkpoint_dir, "SALES")
        saved = self.checkpoints.load()
        self.writer = TrailWriter(settings.trail.path, extract="SALES", sync=settings.trail.sync)
        recovery = self.writer.open(saved.position if saved else None)
        self.pipeline = build_pipeline(settings, self.writer, recovery)
        rules = ImageRules.from_settings(settings)
        os.makedirs(settings.checkpoint_dir, exist_ok=True)
        self.capture = Capture(
            source, self.pipeline, self.writer, checkpoint=self.checkpoints, max_idle=0.05,
            restart=lambda: Assembler(rules, Restart.from_recovery(self.writer)),
            spill_path=os.path.join(settings.checkpoint_dir, "SALES.spill.jsonl"),
            spill_at=spill_at, stream_at=stream_at)

    def __call__(self) -> None:
        try:
            self.capture.recover_spill()
            self.capture.run()
        except Crash:
            self.writer.flush()  # what the process had written reached the file, no more
            os.close(self.writer._fd)
            self.writer._fd = None
            raise
        finally:
            self.writer.close()


@pytest.fixture
def home(work, monkeypatch):
    work.properties(jms_url="dir:dirspool", trail_sync="none")
    monkeypatch.chdir(work.root)
    return work


def trail_data(work) -> bytes:
    """The records of the first trail file (the header holds its creation time)."""
    path = work.root / "dirdat" / "sa000000000"
    with TrailFile(str(path)) as tf:
        start = tf.data_start
    return path.read_bytes()[start:]


def seqids(work) -> list[str]:
    return [s for s, _, _ in work.trail()]


def ids(first: int, last: int) -> list[str]:
    return [f"{i:010d}" for i in range(first, last + 1)]


def checkpoint(work) -> dict:
    return json.loads((work.root / "dirchk" / "SALES.cpj").read_text())


def mixed(work, span: int = 500) -> list[str]:
    """Two single-message transactions, one spanning ``span`` messages, one more."""
    return (whole(work, 1, 2) + spanning(work, 3, span + 2)
            + whole(work, span + 3))


def test_a_streamed_transaction_is_byte_identical_to_one_written_whole(home, monkeypatch
                                                                       ) -> None:
    bodies = mixed(home)
    Run(home, ScriptedSource(bodies), stream_at=None)()
    expected = trail_data(home)
    for p in (home.root / "dirdat").iterdir():
        p.unlink()
    (home.root / "dirchk" / "SALES.cpj").unlink()
    parts: list[int] = []
    write_records = TrailWriter.write_records

    def counting(self, tx, *, first, last):
        parts.append(len(tx.records))
        return write_records(self, tx, first=first, last=last)

    monkeypatch.setattr(TrailWriter, "write_records", counting)
    run = Run(home, ScriptedSource(bodies), stream_at=30)
    run()
    assert trail_data(home) == expected
    assert len(parts) == 500 // 30 + 1 and max(parts) == 30
    trail = home.trail()
    assert [t for _, t, _ in trail] == [3, 3, 0] + [1] * 498 + [2, 3]
    assert run.capture.spilled_messages > 0


def test_the_assembler_holds_at_most_stream_at_records_and_no_messages(home) -> None:
    run = Run(home, ScriptedSource(spanning(home, 1, 2000)), stream_at=50)
    asm = run.pipeline.assembler
    held: list[tuple[int, int]] = []
    complete = run.pipeline.complete

    def watching(message, raw_id, parsed):
        result = complete(message, raw_id, parsed)
        tx = asm._open
        if tx is not None:
            held.append((len(tx.records), len(tx.messages) + len(tx.ops)))
        return result

    run.pipeline.complete = watching
    run()
    assert len(held) == 1999
    assert max(r for r, _ in held) == 49 and max(m for _, m in held) <= 2 * 49
    assert seqids(home) == ids(1, 2000)


def _peak_bytes(work, n: int) -> int:
    for p in (work.root / "dirdat").glob("*"):
        p.unlink()
    for p in (work.root / "dirchk").glob("*"):
        p.unlink()
    bodies = spanning(work, 1, n)
    source = ScriptedSource(bodies)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        Run(work, source, stream_at=100, spill_at=100)()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert seqids(work) == ids(1, n)
    return peak


def test_memory_does_not_grow_with_the_transaction(home) -> None:
    """The source's bodies are made before measuring; the peak is what the capture allocates.

    Holding the records in memory (``stream_at=None``) takes about 1.2 KB per message of these
    small rows here (11.6 MB for 10k messages, 24 MB for 20k); with parts the only growth left
    is the spill journal's set of raw ids (under 100 bytes per message: 4.3 MB for 30k).
    """
    _peak_bytes(home, 500)  # first use: imports and compiled code are not the transaction's
    # both past the size where the trail writer's bounded write buffer first fills
    small = _peak_bytes(home, 10_000)
    large = _peak_bytes(home, 30_000)
    per_message = (large - small) / 20_000
    print(f"peak traced memory: 10k messages {small / 1e6:.2f} MB, 30k {large / 1e6:.2f} MB "
          f"({per_message:.0f} B per extra message)")
    assert per_message < 150


def test_a_checkpoint_inside_a_streamed_transaction_names_where_it_begins(home) -> None:
    bodies = whole(home, 1) + spanning(home, 2, 300)
    source = ScriptedSource(bodies)
    run = Run(home, source, stream_at=20)
    # stop half-way through: the group of message 1 is made durable inside the transaction
    source.crash_after = 150
    with pytest.raises(Crash):
        run()
    cp = checkpoint(home)
    assert cp["last_seqid"] == "0000000001" and cp["txnum"] == 1
    with TrailFile(str(home.root / "dirdat" / "sa000000000")) as tf:
        records = list(tf.records())
    first_end = records[0].end
    assert cp["rba"] == first_end and len(records) > 1  # parts are on disk, after it
    # restart: recovery cuts the parts, the journal and the queue give the transaction again
    source.crash_after = None
    source.epoch += 1
    source.pos = 0
    Run(home, source, stream_at=20)()
    assert seqids(home) == ids(1, 300)
    assert [t for _, t, _ in home.trail()] == [3, 0] + [1] * 297 + [2]


def test_crash_inside_a_streamed_transaction_then_restart_writes_it_exactly_once(home) -> None:
    bodies = mixed(home, 800)
    source = ScriptedSource(bodies, crash_after=600)
    with pytest.raises(Crash):
        Run(home, source, stream_at=30)()
    assert (home.root / "dirchk" / "SALES.spill.jsonl").exists()
    source.crash_after = None
    source.epoch += 1  # a new connection: unacknowledged messages come again
    source.pos = 0
    Run(home, source, stream_at=30)()
    assert seqids(home) == ids(1, 803)
    assert not (home.root / "dirchk" / "SALES.spill.jsonl").exists()
    assert source.acked == {ident for ident, _ in source.items}


def test_messages_without_a_source_id_are_spilled_and_all_written(home) -> None:
    """An AMQP producer need not set a message-id: messages that have none are spilled and
    written like any other, never taken for one the spill journal already holds."""
    class Anonymous(ScriptedSource):
        def receive(self, timeout: float) -> Message | None:
            message = super().receive(timeout)
            if message is not None:
                message.id = ""
            return message

    source = Anonymous(spanning(home, 1, 200))
    deadline = time.monotonic() + 10

    def still_waiting() -> None:  # without an end, the run would wait for it forever
        assert time.monotonic() < deadline, "the run waits for the end of its transaction"

    source.when_empty = still_waiting
    Run(home, source, stream_at=30)()
    assert seqids(home) == ids(1, 200)
    assert source.acked == {ident for ident, _ in source.items}


def test_reconnection_inside_a_streamed_transaction_drops_its_parts(home) -> None:
    source = ScriptedSource(mixed(home, 500), reconnect_after=300)
    run = Run(home, source, stream_at=25)
    run()
    assert run.capture.redeliveries == 1
    assert seqids(home) == ids(1, 503)
    assert [t for _, t, _ in home.trail()] == [3, 3, 0] + [1] * 498 + [2, 3]
    assert source.acked == {ident for ident, _ in source.items}


def test_abend_inside_a_streamed_transaction_leaves_the_transactions_before_it(home) -> None:
    bodies = mixed(home, 400)
    bodies[200] = "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,M,0000000201,5\n"
    source = ScriptedSource(bodies)
    run = Run(home, source, stream_at=20)
    with pytest.raises(MessageError, match="NOSUCH"):
        run()
    assert seqids(home) == ids(1, 2)
    assert [t for _, t, _ in home.trail()] == [3, 3]
    cp = checkpoint(home)
    assert cp["last_seqid"] == "0000000002"
    assert cp["rba"] == (home.root / "dirdat" / "sa000000000").stat().st_size
    assert source.acked >= {"m000000", "m000001"} and "m000200" not in source.acked
    # fixed and run again: the journal and the queue supply the transaction once
    source.items[200] = (source.items[200][0], home.body(201, "M"))
    source.epoch += 1
    source.pos = 0
    Run(home, source, stream_at=20)()
    assert seqids(home) == ids(1, 403)


def test_stop_inside_a_streamed_transaction_removes_its_parts(home) -> None:
    bodies = whole(home, 1) + spanning(home, 2, 400)
    source = ScriptedSource(bodies[:300])  # the rest arrives later
    run = Run(home, source, stream_at=20)
    run.capture.stop_grace = 0.05
    source.when_empty = lambda: run.capture.stop("SIGTERM")
    run()
    source.when_empty = None
    assert seqids(home) == ids(1, 1)
    source.items += [(f"m{i:06d}", b) for i, b in enumerate(bodies) if i >= 300]
    source.epoch += 1
    source.pos = 0
    Run(home, source, stream_at=20)()
    assert seqids(home) == ids(1, 400)
