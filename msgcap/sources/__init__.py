"""Live message sources for ``msgcap run``: the STOMP and AMQP 1.0 broker sources, a JMS
provider's own client (``msgcap.sources.jms``) and the spool directory.

``source_for(settings)`` picks one from ``jms.url``, else a JMS provider's JNDI settings
(properties.md §8); each implements ``msgcap.sources.base.Source``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgcap.sources.base import Redelivery, Source

if TYPE_CHECKING:
    from props.settings import Settings

__all__ = ["Redelivery", "Source", "source_for"]


def source_for(settings: Settings, *, probe: bool = False) -> Source:
    """The source ``jms.url`` names: ``dir:PATH``, a list of ``stomp[+ssl]://`` brokers or of
    ``amqp[s]://`` brokers; without it, a JMS provider's own client (``probe``: a broker's as
    ``msgcap check`` looks at it, ``msgcap.sources.probe``, ``msgcap.sources.amqp.AmqpProbe``,
    ``msgcap.sources.jms.JmsProbe``).

    The URLs and the destination were validated when the properties were loaded
    (``props.loader``); only their presence is a matter of the command.
    """
    jms = settings.jms
    if jms.provider is not None:
        from msgcap.sources.jms import JmsProbe, JmsSource
        return (JmsProbe if probe else JmsSource)(
            jms.provider, user=jms.user, password=jms.password,
            client_id=settings.trail.extract, selector=jms.selector, ack=jms.ack,
            ack_batch=jms.ack_batch, prefetch=jms.prefetch, id_mode=jms.id,
            max_bytes=jms.maxbytes)
    urls = tuple(jms.url)
    if not urls:
        raise jms.url_required()
    if urls[0].startswith("dir:"):
        from msgcap.sources.spool import SpoolSource
        return SpoolSource(urls[0], min_age=jms.spool_minage, max_bytes=jms.maxbytes)
    assert jms.destination is not None  # the loader requires it beside a broker URL
    if urls[0].lower().startswith(("amqp://", "amqps://")):
        from msgcap.sources.amqp import AmqpProbe, AmqpSource
        amqp = AmqpProbe if probe else AmqpSource
        return amqp(urls, jms.destination, user=jms.user, password=jms.password,
                    sasl_mechanisms=jms.sasl_mechanisms,
                    prefetch=jms.prefetch, heartbeat=jms.heartbeat, ssl_ca=jms.ssl_ca,
                    ssl_cert=jms.ssl_cert, ssl_key=jms.ssl_key,
                    client_id=settings.trail.extract, vhost=jms.vhost, selector=jms.selector,
                    ack=jms.ack, ack_batch=jms.ack_batch, id_mode=jms.id,
                    max_bytes=jms.maxbytes)
    from msgcap.sources.stomp import StompSource
    kind = StompSource
    if probe:
        from msgcap.sources.probe import StompProbe
        kind = StompProbe
    return kind(urls, jms.destination, user=jms.user, password=jms.password,
                prefetch=jms.prefetch, heartbeat=jms.heartbeat, ssl_ca=jms.ssl_ca,
                ssl_cert=jms.ssl_cert, ssl_key=jms.ssl_key, client_id=settings.trail.extract,
                vhost=jms.vhost, selector=jms.selector, ack=jms.ack, ack_batch=jms.ack_batch,
                id_mode=jms.id, max_bytes=jms.maxbytes)
