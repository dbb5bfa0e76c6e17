"""A small misbehaving AMQP 1.0 broker on loopback for fault tests (python-qpid-proton's
reactor in a thread, not msgcap): one queue of messages that it delivers to whoever attaches a
receiver and takes back when a connection ends unsettled, plus the misbehaviours a real broker
shows only now and then, each switched on by a keyword:

* ``settle_mode``: the sender settle mode it answers the attach with, whatever was asked;
* ``presettle``: it sends each delivery settled (and forgets it, as a broker that deletes a
  message as it sends it);
* ``idle_timeout``: its own idle timeout (s): a peer silent that long is dropped;
* ``reset_after``: on the first connection, once that many messages were sent, it resets the
  socket (``SO_LINGER`` 0, an RST) at once, or ``reset_delay`` s later;
* ``reset_on_dead_letter``: the first message sent to it (a dead letter) makes it reset the
  connection instead of answering with an outcome.

What it did is in ``accepted`` (message ids, in order), ``dead_letters`` (bodies accepted on any
other address) and ``connections`` (how many were accepted).

``tests.fake_amqp_peer`` plays a broker whose transfers misbehave (bodies, aborts, sizes); this
one a broker whose connection and settlement do.
"""

from __future__ import annotations

import collections
import socket
import struct
import threading
from collections.abc import Iterable
from typing import Any, Self

from proton import Delivery, Endpoint, Link, Message
from proton.handlers import MessagingHandler
from proton.reactor import Container


class FakeBroker(MessagingHandler):
    """The broker (see the module doc); ``url`` once started (``with FakeBroker(...) as b``)."""

    def __init__(self, bodies: Iterable[str | bytes], *, settle_mode: int | None = None,
                 presettle: bool = False, idle_timeout: float | None = None,
                 reset_after: int | None = None, reset_delay: float = 0.0,
                 reset_on_dead_letter: bool = False) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        self.queue: collections.deque[tuple[str, str | bytes]] = collections.deque(
            (f"m{n}", body) for n, body in enumerate(bodies, 1))
        self.settle_mode, self.presettle, self.idle_timeout = settle_mode, presettle, idle_timeout
        self.reset_after, self.reset_delay = reset_after, reset_delay
        self.reset_on_dead_letter = reset_on_dead_letter
        self.accepted: list[str] = []
        self.dead_letters: list[Any] = []
        self.connections = 0
        self.sent = 0
        self._in_flight: dict[Any, tuple[str, str | bytes]] = {}
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"amqp://127.0.0.1:{self.port}"
        self._container = Container(self)
        self._thread = threading.Thread(target=self._container.run, daemon=True)

    def __enter__(self) -> Self:
        self._sock.close()  # (the port was only reserved)
        self._container.listen(f"127.0.0.1:{self.port}")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._container.stop()
        self._thread.join(5)

    # -- connections --

    def on_connection_opening(self, event: Any) -> None:
        self.connections += 1
        transport = event.transport
        if self.idle_timeout:
            transport.idle_timeout = self.idle_timeout
        event.connection.properties = {"product": "FakeBroker", "version": "1"}

    def on_link_opening(self, event: Any) -> None:
        link = event.link
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        if link.is_sender:
            link.snd_settle_mode = (link.remote_snd_settle_mode if self.settle_mode is None
                                    else self.settle_mode)
            link.rcv_settle_mode = link.remote_rcv_settle_mode
        else:
            link.flow(100)

    def on_sendable(self, event: Any) -> None:
        sender = event.sender
        while sender.credit and self.queue:
            if self.reset_after is not None and self.sent >= self.reset_after:
                return
            msg_id, body = item = self.queue.popleft()
            delivery = sender.send(Message(id=msg_id, body=body, durable=True))
            self.sent += 1
            if self.presettle:
                delivery.settle()
            else:
                self._in_flight[delivery] = item
            if self.reset_after is not None and self.sent == self.reset_after:
                self._reset_later(event.transport)

    def on_delivery(self, event: Any) -> None:
        delivery = event.delivery
        if delivery.link.is_sender:
            item = self._in_flight.pop(delivery, None)
            if item is not None and delivery.remote_state == Delivery.ACCEPTED:
                self.accepted.append(item[0])
            elif item is not None:  # released, or anything else: it comes again
                self.queue.appendleft(item)
            delivery.settle()
            return
        if delivery.partial:
            return
        msg = Message()
        msg.decode(delivery.link.recv(delivery.pending))
        delivery.link.advance()
        if self.reset_on_dead_letter:
            self.reset_on_dead_letter = False
            self._reset(event.transport)
            return
        self.dead_letters.append(msg.body)
        delivery.update(Delivery.ACCEPTED)
        delivery.settle()

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

    # -- misbehaving --

    def _reset_later(self, transport: Any) -> None:
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


SETTLED, UNSETTLED, MIXED = Link.SND_SETTLED, Link.SND_UNSETTLED, Link.SND_MIXED
__all__ = ["MIXED", "SETTLED", "UNSETTLED", "Endpoint", "FakeBroker"]
