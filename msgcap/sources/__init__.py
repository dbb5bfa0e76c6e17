"""Live message sources for ``msgcap run``: the STOMP broker source and the spool directory.

``source_for(settings)`` picks one from ``jms.url`` (properties.md §8); both implement
``msgcap.sources.base.Source``.
"""

from __future__ import annotations

from typing import Any

from msgcap.sources.base import Redelivery, Source
from props.errors import PropertyError

__all__ = ["Redelivery", "Source", "source_for"]


def source_for(settings: Any) -> Source:
    """The source ``jms.url`` names: ``dir:PATH`` or a list of ``stomp[+ssl]://`` brokers."""
    jms = settings.jms
    urls = tuple(jms.url)
    if not urls:
        raise PropertyError("required: stomp://host:port, stomp+ssl://host:port or dir:PATH",
                            prop="jms.url")
    if any(u.startswith("dir:") for u in urls):
        if len(urls) != 1:
            raise PropertyError("dir:PATH cannot be part of a failover list", prop="jms.url")
        from msgcap.sources.spool import SpoolSource
        return SpoolSource(urls[0], min_age=jms.spool_minage)
    if not jms.destination:
        raise PropertyError("required for a STOMP source", prop="jms.destination")
    from msgcap.sources.stomp import StompSource
    return StompSource(urls, jms.destination, user=jms.user, password=jms.password,
                       prefetch=jms.prefetch, heartbeat=tuple(jms.heartbeat), ssl_ca=jms.ssl_ca,
                       ssl_cert=jms.ssl_cert, ssl_key=jms.ssl_key,
                       client_id=settings.trail.extract, vhost=jms.vhost,
                       selector=jms.selector, ack=jms.ack, ack_batch=jms.ack_batch,
                       id_mode=jms.id)
