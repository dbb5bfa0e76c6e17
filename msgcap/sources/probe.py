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
  already connected) does not make the probe fail, and the probe does not disturb it.

A failed attempt is not retried after a back-off: the next ``jms.url`` entry is tried, and when
none works the failures are the problem.
"""

from __future__ import annotations

from typing import Any

from msgcap.sources.stomp import BrokerKind, StompSource, _Listener, confirmed
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

    def probe(self) -> str:
        """Connect and subscribe (each ``jms.url`` entry once, until one works), then
        disconnect: what was reached. ``SourceError`` / ``PropertyError`` when none works."""
        failures = []
        for _ in self.endpoints:
            self._attempt()  # a refusal no retry cures (login, certificate, selector) raises
            if self._conn is not None and self.endpoint is not None and self.broker is not None:
                self.close()
                selector = " (jms.selector accepted)" if self.selector else ""
                return (f"{self.endpoint.url}: connected to {self.broker.name}, subscribed to "
                        f"{self.destination}{selector}; disconnected, nothing consumed")
            failures.append(self._failure or "failed")
        raise SourceError("; ".join(failures), url=self.url)

    def _failed(self, what: str, why: str, *, at_once: bool = False) -> None:
        self._failure = f"{what}: {why}"  # no back-off, no log: probe() says it

    def _subscribe(self, conn: Any, listener: _Listener, broker: BrokerKind) -> str | None:
        headers = broker.subscribe_headers(1, None)
        if broker.activemq:
            headers["selector"] = (f"({self.selector}) AND {NOTHING}" if self.selector
                                   else NOTHING)
        return confirmed(conn, listener, lambda receipt: conn.subscribe(
            self.destination, id="check", ack="client", headers={**headers, "receipt": receipt}))
