"""A plain AMQP 1.0 client for tests (python-qpid-proton, not msgcap): it puts messages on a
broker as other producers would and looks at what a queue holds, so the AMQP runs of the live
suite do not check msgcap's source with msgcap's own ``send``.

Bodies go as a producer sends them: ``bytes`` as a ``data`` section (what a JMS BytesMessage is),
``str`` as an ``amqp-value`` string (a TextMessage); headers as application properties; every
message durable. Addresses are RabbitMQ 3.x's (``/queue/NAME``), as the tests name queues,
attached with a durable terminus: RabbitMQ 3.x declares the queue with the first attach's
durability and refuses later attaches that ask otherwise (STOMP and msgcap declare it durable).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping

from proton import Message, Terminus
from proton.handlers import MessagingHandler
from proton.reactor import Container, LinkOption

Body = bytes | str
Received = tuple[dict[str, str], Body]  # (application properties, body)


class DurableQueue(LinkOption):
    """The link's terminus at the queue is durable (its configuration), as the queue is."""

    def apply(self, link) -> None:
        (link.target if link.is_sender else link.source).durability = Terminus.CONFIGURATION


class _Client(MessagingHandler):
    """What a refusal said (a connection, session or link closed with an error), if any."""

    failure = ""

    def on_connection_error(self, event) -> None:
        self._fail(event, f"connection refused: {event.connection.remote_condition}")

    def on_session_error(self, event) -> None:
        self._fail(event, f"session refused: {event.session.remote_condition}")

    def on_link_error(self, event) -> None:
        self._fail(event, f"link refused: {event.link.remote_condition}")

    def on_transport_error(self, event) -> None:
        self.failure = self.failure or f"transport error: {event.transport.condition}"

    def _fail(self, event, why: str) -> None:
        self.failure = self.failure or why
        event.connection.close()


class _Sender(_Client):
    """Sends while the broker gives credit, at most ``window`` unconfirmed; counts acceptances."""

    def __init__(self, url: str, address: str, messages: Iterator[Message], window: int) -> None:
        super().__init__()
        self.url, self.address, self.messages, self.window = url, address, messages, window
        self.sent = self.confirmed = 0
        self.exhausted = False

    def on_start(self, event) -> None:
        conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS", reconnect=False)
        event.container.create_sender(conn, self.address, options=DurableQueue())

    def on_sendable(self, event) -> None:
        sender = event.sender
        while (not self.exhausted and sender.credit > 0
               and self.sent - self.confirmed < self.window):
            message = next(self.messages, None)
            if message is None:
                self.exhausted = True
                break
            sender.send(message)
            self.sent += 1
        self._close_when_done(event)

    def on_accepted(self, event) -> None:
        self.confirmed += 1
        self._close_when_done(event)
        if not self.exhausted:
            self.on_sendable(event)

    def on_rejected(self, event) -> None:
        self._fail(event, f"message {self.confirmed + 1} rejected: {event.delivery.remote.condition}")

    def on_released(self, event) -> None:
        self._fail(event, f"message {self.confirmed + 1} released by the broker")

    def _close_when_done(self, event) -> None:
        if self.exhausted and self.confirmed == self.sent:
            event.connection.close()


def message(body: Body, properties: Mapping[str, str] | None = None) -> Message:
    """A durable message: bytes in a ``data`` section, text as an ``amqp-value`` string."""
    return Message(body=body, inferred=isinstance(body, bytes), durable=True,
                   properties=dict(properties or {}))


def send(url: str, address: str, bodies: Iterable[Body],
         properties: Mapping[str, str] | None = None, window: int = 500) -> int:
    """Put ``bodies`` on ``address`` in order (each with ``properties``); the number the broker
    accepted, which is all of them or an AssertionError saying what went wrong."""
    handler = _Sender(url, address, (message(b, properties) for b in bodies), window)
    Container(handler).run()
    if handler.failure or not handler.exhausted:
        raise AssertionError(f"proton send to {url} {address}: {handler.failure or 'cut short'} "
                             f"({handler.confirmed} confirmed)")
    return handler.confirmed


class _Receiver(_Client):
    """Takes what ``address`` holds until nothing came for ``quiet`` seconds; accepts each
    message (consumed) or leaves it unsettled, so closing the connection gives it back."""

    def __init__(self, url: str, address: str, quiet: float, consume: bool) -> None:
        super().__init__(prefetch=100, auto_accept=False)
        self.url, self.address, self.quiet, self.consume = url, address, quiet, consume
        self.got: list[Received] = []
        self.last = time.monotonic()

    def on_start(self, event) -> None:
        conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS", reconnect=False)
        event.container.create_receiver(conn, self.address, options=DurableQueue())
        event.container.schedule(self.quiet, self)
        self.connection = conn

    def on_message(self, event) -> None:
        msg = event.message
        body = bytes(msg.body) if isinstance(msg.body, memoryview) else msg.body
        self.got.append(({k: str(v) for k, v in (msg.properties or {}).items()}, body))
        self.last = time.monotonic()
        if self.consume:
            self.accept(event.delivery)

    def on_timer_task(self, event) -> None:
        left = self.last + self.quiet - time.monotonic()
        if left > 0:
            event.container.schedule(left, self)
        else:
            self.connection.close()



def receive(url: str, address: str, quiet: float, consume: bool) -> list[Received]:
    """Every message on ``address`` (application properties, body) until none came for
    ``quiet`` seconds, consumed or left there."""
    handler = _Receiver(url, address, quiet, consume)
    Container(handler).run()
    if handler.failure:
        raise AssertionError(f"proton receive from {url} {address}: {handler.failure}")
    return handler.got

