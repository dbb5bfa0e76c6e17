"""``msgcap check``'s look at a STOMP broker: connect and subscribe as ``msgcap run`` does, take
nothing, disconnect.

``StompProbe`` is the ``StompSource`` of the properties, so the connection is made by the same
code (``jms.url`` failover order, login, ``jms.vhost``, TLS verified against ``jms.ssl.*``, the
broker kind's refusals of ``jms.selector`` and ``jms.id``), with three differences that keep the
destination as it was:

* the subscription asks for nothing to be delivered: on ActiveMQ its selector is
  ``(jms.selector) AND 1 = 0`` (the broker still parses the configured selector and refuses a bad
  one), elsewhere the prefetch is one message; nothing is ever acknowledged, so a message
  delivered all the same goes back to the destination when the probe disconnects;
* a topic is subscribed to without a durable subscription (a durable one under the capture's
  name, with another selector, would replace the capture's own and lose what it holds);
* its client-id is the extract's with ``-check`` added: a running capture (``client-id``
  already connected) does not make the probe fail, and the probe does not disturb it;
* on RabbitMQ a queue ``/queue/NAME`` is subscribed to as ``/amq/queue/NAME``, which takes an
  existing queue and never declares one: a queue that does not exist is one line naming it,
  not a new queue. (ActiveMQ creates a queue a consumer subscribes to: there the check cannot
  tell whether it existed.) STOMP tells neither broker's message count.

A failed attempt is not retried after a back-off: the next ``jms.url`` entry is tried, and when
none works the failures are the problem.
"""

from __future__ import annotations

from typing import Any

from stomp.exception import StompException

from msgcap.sources.base import QueueFacts
from msgcap.sources.broker import Endpoint, rabbitmq_existing_queue
from msgcap.sources.stomp import BrokerKind, StompSource, _Listener, confirmed, quiet_disconnect
from props.errors import SourceError

# a JMS selector no message matches: ActiveMQ parses the rest, and delivers nothing
NOTHING = "1 = 0"


class StompProbe(StompSource):
    """The capture's STOMP source, for one look (see the module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["client_id"] = f"{kwargs.get('client_id', 'MSGCAP')}-check"
        kwargs["prefetch"] = 1
        super().__init__(*args, **kwargs)
        self._failure: str | None = None
        self._trying: Endpoint | None = None  # the endpoint ``_connect`` is trying

    def probe(self) -> str:
        """Connect and subscribe (each ``jms.url`` entry once, until one works), then
        disconnect: what was reached. ``SourceError`` / ``PropertyError`` when none works."""
        failures = []
        for _ in self.endpoints:
            self._attempt()  # a refusal no retry cures (login, certificate, selector) raises
            if self._conn is not None and self.endpoint is not None and self.broker is not None:
                self.close()
                said = [str(self._facts(self.broker))]
                if self.selector:
                    said.append("jms.selector accepted")
                return (f"{self.endpoint.url}: connected to {self.broker.name}, subscribed to "
                        f"{self.destination} ({'; '.join(said)}); disconnected, nothing consumed")
            failures.append(self._failure or "failed")
        raise SourceError("; ".join(failures), url=self.url)

    def _failed(self, what: str, why: str, *, at_once: bool = False,
                permanent: bool = False) -> None:
        self._failure = f"{what}: {why}"  # no back-off, no log: probe() says it

    def _connect(self, endpoint: Endpoint, epoch: int) -> str:
        self._trying = endpoint
        return super()._connect(endpoint, epoch)

    def _facts(self, broker: BrokerKind) -> QueueFacts:
        """What the subscription told of the destination: on RabbitMQ a queue exists (it was
        subscribed to without declaring it); nothing else is told over STOMP."""
        said = f"{broker.name} does not say over STOMP"
        if self.topic:
            return QueueFacts(None, None, "a topic, subscribed to without a durable "
                                          "subscription")
        if self._existing(broker) != self.destination:
            return QueueFacts(True, None, said)
        if broker.activemq:
            said = f"{broker.name} creates a queue a consumer subscribes to"
        return QueueFacts(None, None, said)

    def _existing(self, broker: BrokerKind) -> str:
        """The destination to subscribe to: on RabbitMQ a queue's ``/amq/queue/NAME``, which
        never declares it (``/queue/NAME`` does)."""
        if broker.server.startswith("RabbitMQ/"):
            return rabbitmq_existing_queue(self.destination) or self.destination
        return self.destination

    def _subscribe(self, conn: Any, listener: _Listener, broker: BrokerKind) -> str | None:
        headers = broker.subscribe_headers(1, None)
        if broker.activemq:
            headers["selector"] = (f"({self.selector}) AND {NOTHING}" if self.selector
                                   else NOTHING)
        destination = self._existing(broker)
        errors = _Errors()
        conn.set_listener("check-errors", errors)
        failure = confirmed(conn, listener, lambda receipt: conn.subscribe(
            destination, id="check", ack="client", headers={**headers, "receipt": receipt}))
        if destination == self.destination:
            return failure
        # RabbitMQ may send the receipt before the ERROR of a queue that does not exist: the
        # UNSUBSCRIBE's receipt comes only if the consumer is there (it cancels it)
        if failure is None:
            try:
                failure = confirmed(conn, listener, lambda receipt: conn.unsubscribe(
                    id="check", headers={"receipt": receipt}))
            except (StompException, OSError) as exc:  # closed after its ERROR frame
                failure = str(exc) or "connection closed by the broker"
        if failure is not None and any("NOT_FOUND" in error for error in errors.seen):
            quiet_disconnect(conn)
            url = self._trying.url if self._trying is not None else self.url
            raise SourceError(f"queue {self.destination.removeprefix('/queue/')} does not exist "
                              f"on {broker.name} at {url}")
        return failure


class _Errors:
    """A stomp.py listener that keeps the text of every ERROR frame, also those that come when
    no receipt is awaited."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_error(self, frame: Any) -> None:
        body = frame.body.decode("utf-8", "replace") if isinstance(frame.body, bytes) else ""
        self.seen.append(f"{frame.headers.get('message', '')}: {body}")
