"""``report.http``, ``report.http.allowremote`` and ``report.heartbeat`` (properties.md §11):
the status endpoint and the status file of a running capture."""

from __future__ import annotations

from props.reader import Reader, is_loopback, split_host_port
from props.text import quoted


def report_http(r: Reader) -> tuple[str, int] | None:
    """``host:port`` or ``[v6]:port``; the endpoint has no authentication, so a host other
    than a loopback address needs ``report.http.allowremote=true``."""
    value = r.text("report.http")
    remote = r.boolean("report.http.allowremote", False)
    if value is None:
        return None
    try:
        host, port = split_host_port(value)
    except ValueError as exc:
        raise r.error("report.http", str(exc)) from None
    if not remote and not is_loopback(host):
        raise r.error("report.http", f"{quoted(host)} is not a loopback address; the "
                      "endpoint has no authentication: bind to 127.0.0.1 or [::1], or "
                      "set report.http.allowremote=true to serve other hosts")
    return host, int(port)


def report_heartbeat(r: Reader) -> float | None:
    """A duration of at least a second (each heartbeat replaces the status file)."""
    seconds = r.duration("report.heartbeat")
    if seconds is not None and seconds < 1:
        raise r.error("report.heartbeat", f"{quoted(r.text('report.heartbeat') or '')} is "
                      "less than 1sec")
    return seconds
