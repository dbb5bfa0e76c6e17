"""The broker core's policy (msgcap.sources.broker), through a tiny in-memory adapter that plays a
broker's wire: which deliveries are settled, the order of messages, losses and unreadable ones,
failover and its log, the commit window, dead letters. The adapters over a real broker are
tested in tests/live and tests/hostile."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from msgcap.sources.base import CONNECTED, DISCONNECTED, Redelivery, Unreadable
from msgcap.sources.broker import (
    Backoff,
    BrokerSource,
    ConnectFailed,
    Delivery,
    Endpoint,
    Lost,
)
from parsers.model import Message
from props.errors import MessageError, SourceError


class _Wire(BrokerSource):
    """An adapter whose broker is a list: ``refusing`` hosts fail to connect, ``deliver`` puts
    messages of the current connection into the inbox, settlements and publications are
    recorded."""

    protocol = "MEM"
    ack_unit = "settlements"

    def __init__(self, *hosts: str, cumulative: bool = True, **kwargs: Any) -> None:
        options = {"prefetch": 10, "ack": "client", "ack_batch": None, "id_mode": "time",
                   "selector": None, "client_id": "X", "max_bytes": 10,
                   "backoff": Backoff(first=0.0), **kwargs}
        super().__init__([Endpoint(f"mem://{h}", h, 1, False) for h in hosts or ("a",)], "q",
                         **options)
        self.cumulative_acks = cumulative
        self.refusing: set[str] = set()
        self.refusing_for_good: set[str] = set()  # what no retry cures (a refused login)
        self.attempts: list[str] = []
        self.settled: list[list[str]] = []
        self.settle_error: Exception | None = None
        self.published: list[tuple[str, str, dict[str, str]]] = []
        self.publish_failure: str | None = None

    def _connect(self, endpoint: Endpoint, epoch: int) -> str:
        self.attempts.append(endpoint.host)
        if endpoint.host in self.refusing:
            raise ConnectFailed("connection refused")
        if endpoint.host in self.refusing_for_good:
            raise ConnectFailed("the broker refused the login", permanent=True)
        return "Mem/1"

    def _disconnect(self) -> None:
        pass  # nothing to drop: the wire is a list

    def _acknowledge(self, deliveries: list[Delivery]) -> None:
        if self.settle_error is not None:
            raise self.settle_error
        self.settled.append([d.token for d in deliveries])

    def _publish(self, destination: str, message: Message, extra: dict[str, str]) -> str | None:
        self.published.append((destination, message.id, extra))
        return self.publish_failure

    def deliver(self, *ids: str) -> list[Message]:
        messages = [Message(i, {}, "x", Delivery(self._epoch, i)) for i in ids]
        self._inbox.extend(list(messages))
        return messages


def _connected(*hosts: str, **kwargs: Any) -> _Wire:
    wire = _Wire(*hosts, **kwargs)
    wire.open()
    assert wire.connected
    return wire


@pytest.mark.parametrize("cumulative", [True, False])
def test_client_acks_settle_the_delivered_run_up_to_the_first_message_not_durable(
        cumulative: bool) -> None:
    wire = _connected(cumulative=cumulative)
    m = wire.deliver("m0", "m1", "m2", "m3", "m4")
    assert wire.receive_many(0) == m
    # m1 is held by an open transaction; m0 and m2 (discarded inside it) are durable
    wire.ack([m[0]], [m[2]])
    wire.ack([m[1], m[3]])  # the transaction ends: m1..m3 are settled at once
    wire.ack([m[4], m[3]])  # acknowledged messages are not acknowledged again
    if cumulative:
        assert wire.settled == [["m0"], ["m3"], ["m4"]]
    else:
        assert wire.settled == [["m0"], ["m1", "m2", "m3"], ["m4"]]
    assert (wire.acknowledged, wire.ack_frames) == (5, 3 if cumulative else 5)


def test_individual_acks_settle_every_durable_message_at_once() -> None:
    wire = _connected(ack="client-individual")
    m = wire.deliver("m0", "m1", "m2")
    assert wire.receive_many(0) == m
    wire.ack([m[0], m[2]])
    assert wire.settled == [["m0", "m2"]]


def test_a_loss_comes_after_the_messages_before_it_and_theirs_are_never_settled() -> None:
    wire = _connected()
    before = wire.deliver("m0", "m1")
    wire._inbox.put(Lost(wire._epoch, "connection closed by the broker"))
    assert wire.receive_many(0) == before
    with pytest.raises(Redelivery, match="connection closed by the broker"):
        wire.receive_many(0)
    assert wire.connection.state == DISCONNECTED
    wire.ack(before)  # durable now, but the broker redelivers them: not settled
    assert wire.settled == [] and wire.acknowledged == 0
    assert wire.receive_many(0) == [] and wire.connected  # reconnected after the back-off
    again = wire.deliver("m0", "m1")
    assert wire.receive_many(0) == again


def test_a_marker_of_a_connection_closed_before_is_passed_over() -> None:
    wire = _connected()
    wire._inbox.put(Lost(wire._epoch - 1, "old"))
    m = wire.deliver("m0")
    assert wire.receive_many(0) == m


def test_an_unreadable_message_comes_in_its_turn_and_is_settled_in_its_turn() -> None:
    wire = _connected()
    m0, = wire.deliver("m0")
    bad = wire._over_limit(Message("m1", {"h": "v"}, b"x" * 20, Delivery(wire._epoch, "m1")), 20)
    wire._inbox.extend([bad])
    m2, = wire.deliver("m2")
    assert wire.receive_many(0) == [m0]
    with pytest.raises(Unreadable) as raised:
        wire.receive_many(0)
    assert raised.value.message.body == b"" and raised.value.message.headers == {"h": "v"}
    assert str(raised.value.error) == ("message m1: jms.maxbytes: message of 20 bytes "
                                     "exceeds jms.maxbytes=10")
    assert wire.receive_many(0) == [m2]
    wire.ack([m0, m2], [raised.value.message])
    assert wire.settled == [["m2"]]


def test_a_failed_settlement_is_a_loss_of_the_connection() -> None:
    wire = _connected()
    m = wire.deliver("m0")
    wire.receive_many(0)
    wire.settle_error = ConnectionResetError()
    wire.ack(m)
    with pytest.raises(Redelivery, match=r"sending failed \(connection reset by the broker\)"):
        wire.receive_many(0)


def test_failover_tries_the_endpoints_in_turn_and_says_why_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "msgcap.source")
    wire = _Wire("a", "b")
    wire.refusing = {"a"}
    wire.open()
    assert wire.connection.state != CONNECTED
    assert wire.connection.error == "connection refused"
    assert wire.receive_many(0) == [] and wire.connected
    assert wire.attempts == ["a", "b"]
    m = wire.deliver("m0")
    wire.receive_many(0)
    wire.ack(m)  # a message settled through it: the connection worked
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert said[0] == ("cannot connect to mem://a: connection refused; retrying in 0.0 s "
                       "(until a connection works, failures are logged once a minute)")
    assert said[1].startswith("connected to mem://b (Mem/1), consuming q, after 1 connection "
                              "failure in ")


def test_a_failed_subscription_is_said_as_one(caplog: pytest.LogCaptureFixture) -> None:
    class Unsubscribed(_Wire):
        def _connect(self, endpoint: Endpoint, epoch: int) -> str:
            raise ConnectFailed("subscription failed: no receipt", subscribing=True)

    wire = Unsubscribed()
    wire.open()
    assert wire.connection.error == "subscription failed: no receipt"
    assert caplog.records[-1].getMessage().startswith(
        "cannot subscribe at mem://a: subscription failed: no receipt; retrying in ")


def test_the_commit_window_is_half_the_prefetch_at_most_the_ack_batch() -> None:
    class Paging(_Wire):
        _default_ack_batch = 3

    assert _Wire(prefetch=10).window == 5
    assert _Wire(prefetch=1).window == 1
    assert _Wire(prefetch=10, ack_batch=2).window == 2
    assert Paging(prefetch=10).window == 3
    assert Paging(prefetch=10, ack_batch=4).window == 4


def test_a_dead_letter_carries_why_and_is_confirmed_before_the_original_is_settled() -> None:
    wire = _connected()
    m = wire.deliver("m0")
    wire.receive_many(0)
    error = MessageError("bad field", source="m0", position="F1")
    wire.dead_letters("DLQ").write(m[0], error, raw_id="raw")
    assert wire.published == [("DLQ", "m0", {
        "msgcap-error": "bad field", "msgcap-source-destination": "q",
        "msgcap-source-message-id": "raw", "msgcap-error-position": "F1"})]


@pytest.mark.parametrize(("failure", "connected", "said"), [
    ("refused by the broker", True, "refused by the broker"),
    (None, False, "not connected"),
])
def test_an_unconfirmed_dead_letter_stops_with_the_original_on_the_queue(
        failure: str | None, connected: bool, said: str) -> None:
    wire = _connected()
    wire.publish_failure = failure
    if not connected:
        wire.close()
    with pytest.raises(SourceError) as raised:
        wire.publish_confirmed("DLQ", Message("m0"), {})
    assert raised.value.reason == (f"error.destination DLQ: the broker did not confirm message "
                                   f"m0 ({said}); it stays on the queue")


def test_close_says_how_many_messages_took_how_many_acknowledgements(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "msgcap.source")
    wire = _connected()
    m = wire.deliver("m0", "m1")
    wire.receive_many(0)
    wire.ack(m)
    wire.close()
    assert wire.connection.state == DISCONNECTED
    assert caplog.records[-1].getMessage() == ("2 messages acknowledged with 1 settlements "
                                               "(jms.ack=client)")


def test_a_source_without_a_destination_is_refused_in_the_protocol_s_words() -> None:
    with pytest.raises(SourceError, match="jms.destination is required for a MEM source"):
        BrokerSource.__init__(_Wire(), [Endpoint("mem://a", "a", 1, False)], "", prefetch=1,
                              ack="client", ack_batch=None, id_mode="time", selector=None,
                              client_id="X", max_bytes=1)


def test_a_failure_no_retry_cures_stops_a_source_that_never_connected() -> None:
    """A refused login, a virtual host that does not exist, TLS to a plain port: retried for
    ever, and --max-idle then ended the run as if the queue were quiet (issue 35)."""
    wire = _Wire("a")
    wire.refusing_for_good.add("a")
    with pytest.raises(SourceError) as raised:
        wire.open()
    assert str(raised.value) == "mem://a: the broker refused the login"
    assert wire.attempts == ["a"]


def test_a_failover_list_stops_only_when_every_entry_failed_for_a_reason_no_retry_cures(
        ) -> None:
    """One entry with TLS to a plain port must not stop a run whose next entry works; when
    every entry failed so, the one line names each with its reason."""
    wire = _Wire("a", "b", "c")
    wire.refusing_for_good.add("a")
    wire.refusing.add("b")
    wire.open()  # a: refused for good, b tried next
    wire.receive_many(0)  # b: refused, retried
    wire.receive_many(0)  # c works
    assert wire.connected and wire.attempts == ["a", "b", "c"]

    wire = _Wire("a", "b")
    wire.refusing_for_good.update({"a", "b"})
    wire.open()
    with pytest.raises(SourceError) as raised:
        wire.receive_many(0)
    assert str(raised.value) == ("mem://a: the broker refused the login; "
                                 "mem://b: the broker refused the login")


def test_a_source_that_never_connected_is_never_idle() -> None:
    wire = _Wire("a")
    wire.refusing.add("a")
    wire.open()
    assert wire.cannot_be_idle() == ("never connected to the source (last error: connection "
                                     "refused)")
    wire.refusing.clear()
    wire.receive_many(0)
    assert wire.connected and wire.cannot_be_idle() is None


def test_after_a_connection_worked_a_failure_no_retry_cures_is_retried_as_an_error(
        caplog: pytest.LogCaptureFixture) -> None:
    """A broker restarting may refuse a login or a virtual host until its configuration is
    loaded: the run goes on with the back-off, but the failure is an ERROR, and the source is
    not idle while it lasts."""
    caplog.set_level(logging.INFO, "msgcap.source")
    wire = _connected("a")
    wire._inbox.put(Lost(wire._epoch, "connection closed by the broker"))
    with pytest.raises(Redelivery):
        wire.receive_many(0)
    wire.refusing_for_good.add("a")
    wire.receive_many(0)  # the attempt: refused, retried later
    assert wire.connection.state == DISCONNECTED
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == [("cannot connect to mem://a: the broker refused the login; retrying in "
                      "0.0 s (no retry cures this unless the broker or the properties change)")]
    assert wire.cannot_be_idle() == ("not connected to the source, for a reason no retry "
                                     "cures: the broker refused the login")
    wire.refusing_for_good.clear()
    wire.receive_many(0)
    assert wire.connected and wire.cannot_be_idle() is None
