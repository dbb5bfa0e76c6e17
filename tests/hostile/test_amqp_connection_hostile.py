"""AMQP 1.0 peers that misbehave (``tests.fake_amqp_peer.FakeBroker`` on loopback): none makes
msgcap lose a message or stop a capture that could go on (issue 33, "An AMQP peer that stops a
capture"): pre-settled deliveries and a settle mode the broker ignores stop it with one line
before anything is written; a short idle timeout is kept alive while the capture is busy; a
reset is noticed while waiting and while busy, also with ``jms.heartbeat=0,0``; a connection
lost while a dead letter is confirmed is a reconnect, and the message is dead-lettered once."""

from __future__ import annotations

import re
import time

import pytest

from msgcap.sources.amqp import AmqpSource, Connection, Options, node_of, parse_urls
from msgcap.sources.base import Redelivery
from msgcap.sources.broker import Backoff
from parsers.model import Message
from props.errors import SourceError
from tests.fake_amqp_peer import MIXED, SETTLED, UNSETTLED, FakeBroker, text_messages
from tests.hostile.conftest import wait_for
from tests.live.conftest import Work, body, taken

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


def _source(url: str, **kwargs: object) -> AmqpSource:
    return AmqpSource([url], "/queue/q", prefetch=10, backoff=Backoff(first=0.05), **kwargs)


def _take(src: AmqpSource, n: int) -> list[Message]:
    """``n`` messages, none unreadable, within 10 s."""
    got = taken(src, n, timeout=10)
    messages = [m for m in got if isinstance(m, Message)]
    assert len(messages) == n, got
    return messages


@pytest.mark.parametrize("mode", [MIXED, SETTLED])
def test_a_broker_that_attaches_with_another_settle_mode_is_refused_at_once(mode: int) -> None:
    """msgcap asks for unsettled deliveries; an answer of mixed or settled (the broker may
    delete a message as it sends it) stops the capture at the attach, one line naming it."""
    with FakeBroker(text_messages([body(1)]), settle_mode=mode) as broker:
        src = _source(broker.url)
        with pytest.raises(SourceError) as refused:
            src.open()
        src.close()
        line = str(refused.value)
        assert broker.url in line and "settle mode" in line and "\n" not in line
        assert broker.accepted == [] and list(broker.queue)  # nothing taken


def test_a_delivery_sent_settled_stops_the_capture_before_it_is_written(work: Work) -> None:
    """A broker that agreed to unsettled deliveries and sends them settled anyway: msgcap run
    stops with one line naming the broker; nothing of it reaches the trail."""
    with FakeBroker(text_messages(body(n) for n in range(1, 5)), settle_mode=UNSETTLED,
                    presettle=True) as broker:
        work.properties(jms_url=broker.url, jms_destination="/queue/q")
        done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if "settled" in line]
    assert len(errors) == 1 and broker.url in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert work.seqids() == []


def test_a_busy_capture_keeps_a_short_idle_timeout_alive() -> None:
    """The broker drops a peer silent for 2 s; the capture holds its messages for 5 s
    without pumping (a large message being parsed and written), then accepts them: the
    connection is the same and the broker has the acceptances."""
    with FakeBroker(text_messages(body(n) for n in range(1, 4)), idle_timeout=2.0) as broker:
        src = _source(broker.url)
        src.open()
        try:
            got = _take(src, 3)
            time.sleep(5.0)  # busy: the capture thread does not touch the connection
            src.ack(got)
            assert src.receive_many(0.5) == []  # no Redelivery: the connection held
            wait_for(lambda: len(broker.accepted) == 3, "the acceptances", 10)
        finally:
            src.close()
        assert broker.accepted == [1, 2, 3] and broker.connections == 1
        assert src.reconnects == 0


@pytest.mark.parametrize("heartbeat", [(0, 0), (10000, 10000)])
def test_a_reset_while_waiting_is_noticed_at_once(heartbeat: tuple[int, int]) -> None:
    """The broker delivers 3 messages and resets the socket (SO_LINGER 0) while msgcap waits:
    the wait ends with Redelivery, long before it would have timed out; the messages come
    again over the next connection. (A guard: proton's select sees the reset; it was the busy
    capture that did not, below.)"""
    with FakeBroker(text_messages(body(n) for n in range(1, 4)), reset_after=3,
                    reset_delay=0.3) as broker:
        src = _source(broker.url, heartbeat=heartbeat)
        src.open()
        try:
            _take(src, 3)
            started = time.monotonic()
            with pytest.raises(Redelivery):
                src.receive_many(30)
            assert time.monotonic() - started < 20
            again = _take(src, 3)
            src.ack(again)
            assert src.receive_many(0.5) == []
            wait_for(lambda: len(broker.accepted) == 3, "the acceptances", 10)
        finally:
            src.close()


@pytest.mark.parametrize("idle_timeout", [0.0, 10.0])
def test_a_reset_while_busy_is_noticed_while_busy(idle_timeout: float) -> None:
    """The reset comes while the capture thread does not pump (busy with what it took): the
    connection knows it is gone before the capture comes back to it, also without
    heartbeats."""
    with FakeBroker(text_messages(body(n) for n in range(1, 4)), reset_after=3,
                    reset_delay=0.3) as broker:
        conn = Connection(parse_urls([broker.url])[0], Options(idle_timeout=idle_timeout))
        try:
            receiver = conn.attach_receiver(node_of("/queue/q", conn.open()), name="r",
                                            selector=None)
            receiver.flow(10)
            conn.keep_alive()  # as the capture does
            assert conn.wait_for(lambda: len(conn.arrived) == 3, 10)
            wait_for(lambda: conn.failure is not None, "the reset noticed", 10)  # no pump here
            assert conn.arrived[-1].reason == conn.failure
        finally:
            conn.close()


def test_a_connection_lost_while_a_dead_letter_is_confirmed_is_a_reconnect(work: Work) -> None:
    """The broker resets the connection instead of confirming the first dead letter: msgcap
    reconnects, the poison message comes again and is dead-lettered once, every good message
    is in the trail once and the run ends normally."""
    bodies = [body(1), body(2), "not a record\n", body(3), body(4)]
    with FakeBroker(text_messages(bodies), reset_on_dead_letter=True) as broker:
        work.properties(jms_url=broker.url, jms_destination="/queue/q", error_policy="discard",
                        error_destination="/queue/dead")
        done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert [letter.body for _, letter in broker.received] == ["not a record\n"]
        assert sorted(broker.accepted) == [1, 2, 3, 4, 5]
        assert broker.connections == 2
    assert work.seqids() == [f"{n:010d}" for n in range(1, 5)]


def test_proton_s_own_lines_name_the_broker_and_a_retried_reset_is_one_warning(
        work: Work) -> None:
    """proton logs a reset as ERROR lines of its own ("Couldn't recv: ConnectionResetError")
    naming no broker (issue 35): they are DEBUG lines with the broker's URL, and what the
    user sees of a reset that is retried is msgcap's one WARNING naming the URL."""
    with FakeBroker(text_messages(body(n) for n in range(1, 4)), reset_after=3,
                    reset_delay=0.3) as broker:
        prop = work.properties(jms_url=broker.url, jms_destination="/queue/q")
        prop.write_text(prop.read_text().replace("gg.log.level=INFO", "gg.log.level=DEBUG"))
        done = work.msgcap("run", "--prop", str(prop), "--max-idle", "3", timeout=60)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(said) == 1, said
    assert re.fullmatch(rf"msgcap run: WARNING: {re.escape(broker.url)}: connection aborted; "
                        r"connection closed after \d\.\d s; reconnecting \(until a connection "
                        r"works, failures are logged once a minute\)", said[0]), said
    log = (work.root / "dirrpt" / "SALES.log").read_text().splitlines()
    proton = [line for line in log if "python-qpid-proton" in line]
    assert any(f" DEBUG   msgcap.source: {broker.url}: python-qpid-proton: Couldn't recv: "
               "ConnectionResetError" in line for line in proton), log
    assert all(" DEBUG " in line for line in proton), proton
    assert not [line for line in log if " ERROR " in line], log
    assert work.seqids() == ["0000000001", "0000000002", "0000000003"]
