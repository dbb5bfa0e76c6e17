"""A fake AMQP 1.0 broker for fault tests (python-qpid-proton, not msgcap): it listens on
loopback, lets one receiver attach to any address, and sends it the transfers it was given, raw,
as a misbehaving broker might: several data sections, a payload that is no AMQP message, a
message far larger than the max-message-size the receiver asked for, streamed in frames. It
records the outcome the receiver gave each delivery, and accepts what is sent to it (dead
letters), keeping each message.

Used in a thread of the test process (``FakeBroker`` as a context manager) or as a process of
its own for a capture under measurement::

    python -m tests.fake_amqp_peer PORT huge SIZE TEXT  # SIZE body bytes, then TEXT, then idle
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Self

from proton import Delivery, Message, symbol
from proton.handlers import MessagingHandler
from proton.reactor import Container

CHUNK = 1 << 20  # what the fake broker hands proton at a time while streaming a large transfer


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


class _Peer(MessagingHandler):
    def __init__(self, port: int, transfers: list[Transfer]) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        self.port, self.pending = port, list(transfers)
        self.outcomes: list[tuple[int, str]] = []  # (transfer number, outcome), as they came
        self.received: list[tuple[str, Message]] = []  # (address, message) sent to us
        self.max_message_size: int | None = None  # what the receiver asked for
        self.listening = threading.Event()
        self.sender = None
        self.streaming: tuple[object, Iterator[bytes], bool] | None = None
        self.streaming_left = False  # whether the stream has chunks left
        self.sent = 0
        self.container: Container | None = None

    def on_start(self, event) -> None:
        self.container = event.container
        event.container.listen(f"127.0.0.1:{self.port}")
        self.listening.set()

    def on_link_opening(self, event) -> None:
        link = event.link
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        if link.is_sender:
            self.sender = link
            self.max_message_size = link.remote_max_message_size
            link.snd_settle_mode = link.remote_snd_settle_mode  # as asked: unsettled
            link.rcv_settle_mode = link.remote_rcv_settle_mode
        else:
            link.flow(100)

    def on_message(self, event) -> None:
        message = Message()
        message.decode(event.message.encode())  # a copy: proton reuses event.message
        self.received.append((event.link.remote_target.address, message))
        self.accept(event.delivery)
        event.link.flow(1)

    def on_sendable(self, event) -> None:
        self._send(event.sender)

    def _send(self, sender) -> None:
        while self.streaming is None and self.pending and sender.credit > 0:
            transfer = self.pending.pop(0)
            self.sent += 1
            delivery = sender.delivery(str(self.sent).encode())
            delivery.number = self.sent  # type: ignore[attr-defined]
            if isinstance(transfer, Stream):
                self.streaming = (delivery, _chunks(transfer, transfer.abort_after),
                                  transfer.abort_after is not None)
                self.streaming_left = True
                self._stream(sender)
            else:
                sender.send(transfer)
                sender.advance()

    def _stream(self, sender) -> None:
        """Hand proton the next chunks while it has sent what it had (``on_timer_task``)."""
        assert self.streaming is not None
        delivery, chunks, abort = self.streaming
        while sender.session.outgoing_bytes < 4 * CHUNK:
            chunk = next(chunks, None) if self.streaming_left else None
            self.streaming_left = chunk is not None
            if chunk is None:
                if abort and sender.session.outgoing_bytes:
                    break  # what went before is on the wire first, then the abort
                if abort:
                    delivery.abort()  # type: ignore[attr-defined]
                else:
                    sender.advance()
                self.streaming = None
                self._send(sender)
                return
            sender.send(chunk)
        assert self.container is not None
        self.container.schedule(0.002, self)

    def on_timer_task(self, event) -> None:
        if self.streaming is not None and self.sender is not None:
            self._stream(self.sender)

    def on_delivery(self, event) -> None:
        delivery = event.delivery  # (one sent to us: MessagingHandler's on_message)
        if delivery.link.is_sender and delivery.remote_state:
            names = {Delivery.ACCEPTED: "accepted", Delivery.REJECTED: "rejected",
                     Delivery.RELEASED: "released", Delivery.MODIFIED: "modified"}
            self.outcomes.append((delivery.number, names.get(delivery.remote_state,
                                                            str(delivery.remote_state))))
            delivery.settle()


def _chunks(stream: Stream, abort_after: int | None) -> Iterator[bytes]:
    yield stream.head
    size = stream.size if abort_after is None else min(stream.size, abort_after)
    left = size - len(stream.head)
    filler = b"x" * CHUNK
    while left > 0:
        yield filler[:min(left, CHUNK)]
        left -= CHUNK


class FakeBroker:
    """The fake broker in a thread: ``url`` to connect to, ``outcomes`` the receiver gave."""

    def __init__(self, port: int, transfers: list[Transfer]) -> None:
        self.peer = _Peer(port, transfers)
        self.url = f"amqp://127.0.0.1:{port}"
        self._container = Container(self.peer)
        self._thread = threading.Thread(target=self._container.run, daemon=True)

    @property
    def outcomes(self) -> list[tuple[int, str]]:
        return list(self.peer.outcomes)

    @property
    def received(self) -> list[tuple[str, Message]]:
        return list(self.peer.received)

    def __enter__(self) -> Self:
        self._thread.start()
        if not self.peer.listening.wait(10):
            raise AssertionError("the fake AMQP broker did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._container.stop()
        self._thread.join(10)


def main(argv: list[str]) -> None:
    port, scenario, size, after = int(argv[0]), argv[1], int(argv[2]), argv[3]
    if scenario != "huge":
        raise SystemExit(f"unknown scenario {scenario}")
    peer = _Peer(port, [huge_message(size), data_message(after.encode(), message_id="ID:after-1")])
    Container(peer).run()


if __name__ == "__main__":
    main(sys.argv[1:])
