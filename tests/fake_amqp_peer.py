"""A fake AMQP 1.0 broker for fault tests (python-qpid-proton's reactor, not msgcap): it listens
on loopback, lets receivers attach to any address and sends them the transfers it was given, raw,
taking back (in front of its queue) what a receiver releases or leaves unsettled when its
connection ends; it accepts what is sent to it (dead letters), keeping each message. The
transfers may be what no well-behaved broker sends: several data sections, a payload that is no
AMQP message, a message far larger than the max-message-size the receiver asked for, streamed in
frames, or aborted half way (``Stream``). Its connection and settlement misbehave when a keyword
says so:

* ``settle_mode``: the sender settle mode it answers the attach with, whatever was asked;
* ``presettle``: it sends each delivery settled (and forgets it, as a broker that deletes a
  message as it sends it);
* ``idle_timeout``: its own idle timeout (s): a peer silent that long is dropped;
* ``reset_after``: on the first connection, once that many transfers were sent, it resets the
  socket (``SO_LINGER`` 0, an RST) at once, or ``reset_delay`` s later;
* ``reset_on_dead_letter``: the first message sent to it (a dead letter) makes it reset the
  connection instead of answering with an outcome.

What it did is in ``outcomes`` ((transfer number, outcome), as the receivers gave them; a
transfer's number is its place in the list it was given, from 1), ``accepted`` (the numbers
accepted), ``received`` ((address, message) sent to it) and ``connections`` (how many).

Used in a thread of the test process (``FakeBroker`` as a context manager) or as a process of
its own for a capture under measurement::

    python -m tests.fake_amqp_peer PORT huge SIZE TEXT  # SIZE body bytes, then TEXT, then idle
"""

from __future__ import annotations

import collections
import socket
import struct
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Self

from proton import Delivery, Link, Message, symbol
from proton.handlers import MessagingHandler
from proton.reactor import Container

from tests.conftest import _free_port

CHUNK = 1 << 20  # what the fake broker hands proton at a time while streaming a large transfer
SETTLED, UNSETTLED, MIXED = Link.SND_SETTLED, Link.SND_UNSETTLED, Link.SND_MIXED
OUTCOMES = {Delivery.ACCEPTED: "accepted", Delivery.REJECTED: "rejected",
            Delivery.RELEASED: "released", Delivery.MODIFIED: "modified"}


@dataclass(frozen=True)
class Stream:
    """A transfer of ``head`` then ``size - len(head)`` filler bytes, handed to proton a chunk
    at a time (it is never held whole here either); ``abort_after``: aborted once that many
    bytes went."""

    head: bytes
    size: int
    abort_after: int | None = None


Transfer = bytes | Stream


def encoded(message: Message) -> bytes:
    return bytes(message.encode())


def text_messages(bodies: Iterable[str]) -> list[bytes]:
    """Encoded durable messages with ids ``m1``, ``m2``, … and these amqp-value string bodies."""
    return [encoded(Message(id=f"m{n}", body=body, durable=True))
            for n, body in enumerate(bodies, 1)]


def data_message(*sections: bytes, message_id: str | None = None,
                 content_type: str | None = None, **properties: object) -> bytes:
    """An encoded message whose body is these data sections (header sections by proton)."""
    head = Message(id=message_id, properties=properties or None, durable=True)
    if content_type is not None:
        head.content_type = symbol(content_type)
    return encoded(head) + b"".join(data_section(s) for s in sections)


def data_section(data: bytes) -> bytes:
    """A data section (AMQP 1.0 §3.2.6) as every client writes it."""
    if len(data) < 256:
        return b"\x00Su\xa0" + bytes([len(data)]) + data
    return b"\x00Su\xb0" + len(data).to_bytes(4) + data


def huge_message(size: int, message_id: str = "ID:huge-1") -> Stream:
    """A valid message with one data section of ``size`` bytes."""
    head = encoded(Message(id=message_id, durable=True)) + b"\x00Su\xb0" + size.to_bytes(4)
    return Stream(head, len(head) + size)


class FakeBroker(MessagingHandler):
    """The broker (see the module doc); ``url`` to connect to once started (``with
    FakeBroker(...) as broker``, a thread), or ``Container(broker).run()`` in a process."""

    def __init__(self, transfers: Iterable[Transfer], *, port: int | None = None,
                 settle_mode: int | None = None, presettle: bool = False,
                 idle_timeout: float | None = None, reset_after: int | None = None,
                 reset_delay: float = 0.0, reset_on_dead_letter: bool = False) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        self.queue: collections.deque[tuple[int, Transfer]] = collections.deque(
            enumerate(transfers, 1))
        self.settle_mode, self.presettle, self.idle_timeout = settle_mode, presettle, idle_timeout
        self.reset_after, self.reset_delay = reset_after, reset_delay
        self.reset_on_dead_letter = reset_on_dead_letter
        self.port = _free_port() if port is None else port
        self.url = f"amqp://127.0.0.1:{self.port}"
        self.outcomes: list[tuple[int, str]] = []
        self.received: list[tuple[str, Message]] = []
        self.connections = 0
        self.sent = 0
        self._in_flight: dict[Any, tuple[int, Transfer]] = {}
        self._sender: Any = None
        self._streaming: tuple[Any, Iterator[bytes], bool] | None = None
        self._streaming_left = False  # whether the stream has chunks left
        self._container: Container | None = None
        self._listening = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def accepted(self) -> list[int]:
        return [number for number, outcome in self.outcomes if outcome == "accepted"]

    def __enter__(self) -> Self:
        container = Container(self)
        self._thread = threading.Thread(target=container.run, daemon=True)
        self._thread.start()
        if not self._listening.wait(10):
            raise AssertionError("the fake AMQP broker did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._container is not None and self._thread is not None
        self._container.stop()
        self._thread.join(10)

    # -- connections --

    def on_start(self, event: Any) -> None:
        self._container = event.container
        event.container.listen(f"127.0.0.1:{self.port}")
        self._listening.set()

    def on_connection_opening(self, event: Any) -> None:
        self.connections += 1
        if self.idle_timeout:
            event.transport.idle_timeout = self.idle_timeout

    def on_link_opening(self, event: Any) -> None:
        link = event.link
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        if link.is_sender:
            self._sender = link
            link.snd_settle_mode = (link.remote_snd_settle_mode if self.settle_mode is None
                                    else self.settle_mode)
            link.rcv_settle_mode = link.remote_rcv_settle_mode
        else:
            link.flow(100)

    def on_transport_closed(self, event: Any) -> None:
        self._give_back(event.transport)

    def on_disconnected(self, event: Any) -> None:
        self._give_back(event.transport)

    def _give_back(self, transport: Any) -> None:
        """What the ended connection held unsettled goes back in front of the queue."""
        conn = transport.connection if transport is not None else None
        mine = [d for d in self._in_flight if conn is None or d.link.connection == conn]
        for delivery in reversed(mine):
            self.queue.appendleft(self._in_flight.pop(delivery))
        if self._streaming is not None and self._streaming[0] in mine:
            self._streaming = None

    # -- sending --

    def on_sendable(self, event: Any) -> None:
        self._send(event.sender)

    def _send(self, sender: Any) -> None:
        while self._streaming is None and self.queue and sender.credit > 0:
            if self.reset_after is not None and self.sent >= self.reset_after:
                return
            item = self.queue.popleft()
            transfer = item[1]
            self.sent += 1
            delivery = sender.delivery(str(self.sent).encode())
            self._in_flight[delivery] = item
            if isinstance(transfer, Stream):
                self._streaming = (delivery, _chunks(transfer), transfer.abort_after is not None)
                self._streaming_left = True
                self._stream(sender)
            else:
                sender.send(transfer)
                sender.advance()
                if self.presettle:
                    del self._in_flight[delivery]
                    delivery.settle()
            if self.reset_after is not None and self.sent == self.reset_after:
                self._reset_later(sender.connection.transport)

    def _stream(self, sender: Any) -> None:
        """Hand proton the next chunks while it has sent what it had (``on_timer_task``)."""
        assert self._streaming is not None and self._container is not None
        delivery, chunks, abort = self._streaming
        while sender.session.outgoing_bytes < 4 * CHUNK:
            chunk = next(chunks, None) if self._streaming_left else None
            self._streaming_left = chunk is not None
            if chunk is None:
                if abort and sender.session.outgoing_bytes:
                    break  # what went before is on the wire first, then the abort
                if abort:
                    del self._in_flight[delivery]
                    delivery.abort()  # (settles it)
                else:
                    sender.advance()
                self._streaming = None
                self._send(sender)
                return
            sender.send(chunk)
        self._container.schedule(0.002, self)

    def on_timer_task(self, event: Any) -> None:
        if self._streaming is not None and self._sender is not None:
            self._stream(self._sender)

    # -- outcomes and dead letters --

    def on_delivery(self, event: Any) -> None:
        delivery = event.delivery
        if delivery.link.is_sender:
            if not (delivery.remote_state or delivery.remote_settled):
                return
            item = self._in_flight.pop(delivery, None)
            if item is not None:
                outcome = OUTCOMES.get(delivery.remote_state, str(delivery.remote_state))
                self.outcomes.append((item[0], outcome))
                if outcome != "accepted":  # released, or anything else: it comes again
                    self.queue.appendleft(item)
            delivery.settle()
            return
        if delivery.partial:
            return
        message = Message()
        message.decode(delivery.link.recv(delivery.pending))
        delivery.link.advance()
        if self.reset_on_dead_letter:
            self.reset_on_dead_letter = False
            self._reset(event.transport)
            return
        self.received.append((delivery.link.remote_target.address, message))
        delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        delivery.link.flow(1)

    # -- resets --

    def _reset_later(self, transport: Any) -> None:
        assert self._container is not None
        if not self.reset_delay:
            self._reset(transport)
            return
        broker = self

        class Reset:
            def on_timer_task(self, event: Any) -> None:
                broker._reset(transport)

        self._container.schedule(self.reset_delay, Reset())

    def _reset(self, transport: Any) -> None:
        """An RST on the socket: ``SO_LINGER`` 0, then the transport closed (the reactor then
        closes the socket), nothing more written."""
        self.reset_after = None
        selectable = transport._selectable
        if selectable is None:
            return
        sock = selectable._delegate
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        selectable._delegate = None
        selectable.terminate()
        selectable.update()
        transport.close_tail()
        transport.close_head()
        self._give_back(transport)


def _chunks(stream: Stream) -> Iterator[bytes]:
    yield stream.head
    size = stream.size if stream.abort_after is None else min(stream.size, stream.abort_after)
    left = size - len(stream.head)
    filler = b"x" * CHUNK
    while left > 0:
        yield filler[:min(left, CHUNK)]
        left -= CHUNK


def main(argv: list[str]) -> None:
    port, scenario, size, after = int(argv[0]), argv[1], int(argv[2]), argv[3]
    if scenario != "huge":
        raise SystemExit(f"unknown scenario {scenario}")
    transfers = [huge_message(size), data_message(after.encode(), message_id="ID:after-1")]
    Container(FakeBroker(transfers, port=port)).run()


if __name__ == "__main__":
    main(sys.argv[1:])

