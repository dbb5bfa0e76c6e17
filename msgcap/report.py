"""Statistics out of ``msgcap run`` (properties.md §11): periodic reports, health and metrics.

The numbers are the pipeline's ``Stats`` (the same counters replay prints); this module only
decides when to print them (``jms.report.time`` / ``jms.report.records``), formats a report with
"since start" and "since last report" parts, and serves ``GET /health`` and ``GET /metrics``
(Prometheus text format) when ``report.http`` is set. The HTTP thread only reads counters.

Lag is now − the source commit timestamp of the last transaction written (GoldenGate's lag: how
far the trail is behind the source), computed when it is shown, so it grows while no message
comes. That alone cannot tell "no traffic" from "stuck"; the heartbeat (``report.heartbeat``)
can: every interval the capture loop itself writes a heartbeat line and sets
``Stats.heartbeat_us`` (``msgcap_heartbeat_timestamp_seconds``), so a growing lag with a fresh
heartbeat is a quiet source, and a heartbeat that stops advancing is a stuck capture.

The source's connection state (``msgcap.sources.base.ConnectionState``: connected, connecting or
disconnected, since when, the last error in words) is in the heartbeat line, ``/health`` and
``/metrics``; the status file is published again whenever it changes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO

from msgcap.pipeline import OP_LABELS, Stats
from msgcap.sources.base import STATES, ConnectionState
from msgcap.tally import Tally

log = logging.getLogger("msgcap.report")

# report.http: connections served at once, and the time each has for its request and answer.
MAX_CONNECTIONS = 16
REQUEST_SECONDS = 3.0
_BUSY_TEXT = b"too many connections\n"
_BUSY = (b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: "
         + str(len(_BUSY_TEXT)).encode() + b"\r\nConnection: close\r\n\r\n" + _BUSY_TEXT)


def lag_seconds(stats: Stats, now_us: int) -> float | None:
    """now − the source commit timestamp of the last transaction written, in seconds (None
    before the first; after a restart, the checkpoint's last durable one)."""
    if stats.last_commit_us is None:
        return None
    return (now_us - stats.last_commit_us) / 1e6


def lag_words(seconds: float | None) -> str:
    """Lag as a person reads it, in the two largest units ("2 h 05 min", "3 min 12 s",
    "45 s", "4 d 3 h"; tenths under 10 s): every text that shows lag uses this, JSON gives
    seconds. Negative when the source's clock is ahead of this host's."""
    if seconds is None:
        return "n/a"
    if seconds < 0:
        return "-" + lag_words(-seconds)
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    minutes = round(whole / 60)
    if minutes < 24 * 60:
        return f"{minutes // 60} h {minutes % 60:02d} min"
    hours = round(whole / 3600)
    return f"{hours // 24} d {hours % 24} h"


def _now_us() -> int:
    return time.time_ns() // 1000


class Reporter:
    """Writes a report every ``every_seconds`` and/or every ``every_records`` messages, and a
    heartbeat line every ``heartbeat`` seconds; ``publish`` is called after each of them and
    when ``connection()`` (the source's state) changes (``msgcap run`` replaces its status file
    there)."""

    def __init__(self, stats: Stats, *, every_seconds: float | None = None,
                 every_records: int | None = None, heartbeat: float | None = None,
                 output: str = "report", out: TextIO | None = None,
                 publish: Callable[[], None] | None = None,
                 connection: Callable[[], ConnectionState] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 now_us: Callable[[], int] = _now_us) -> None:
        self.stats = stats
        self.every_seconds = every_seconds
        self.every_records = every_records
        self.heartbeat = heartbeat
        self.output = output
        self.out = out or sys.stdout
        self.publish = publish
        self.connection = connection
        self._published_connection = connection() if connection is not None else None
        self._clock, self._now_us = clock, now_us
        self.started = self._last_time = self._last_beat = self._last_message = clock()
        self._last = stats.copy()
        self._messages_seen = stats.messages
        self.reports = 0
        if heartbeat:
            stats.heartbeat_us = now_us()  # starting is the first sign of life

    def tick(self) -> None:
        """Report or beat if an interval is due (cheap: called once per loop iteration, after
        each message and each poll that found none)."""
        now = self._clock()
        if self.stats.messages != self._messages_seen:
            self._messages_seen, self._last_message = self.stats.messages, now
        by_records = bool(self.every_records and (
            self.stats.messages - self._last.messages >= self.every_records))
        by_time = bool(self.every_seconds and now - self._last_time >= self.every_seconds)
        if by_records or by_time:
            self.emit(self.report())
            if self.publish is not None:
                self.publish()
        if self.heartbeat and now - self._last_beat >= self.heartbeat:
            self.beat(now)
        if self.connection is not None:
            connection = self.connection()
            if connection is not self._published_connection:  # replaced: it changed
                self._published_connection = connection
                if self.publish is not None:
                    self.publish()

    def beat(self, now: float) -> None:
        """One heartbeat: the loop is alive; how long it has been idle and the lag."""
        self._last_beat = now
        stats = self.stats
        stats.heartbeat_us = self._now_us()
        lag = lag_seconds(stats, stats.heartbeat_us)
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        source = f"source {self.connection().text()}; " if self.connection is not None else ""
        self.emit(f"msgcap heartbeat at {when}: idle {now - self._last_message:.0f} s, lag "
                  f"{lag_words(lag)}, messages {stats.messages}; {source}{stats.trail_status()}")
        if self.publish is not None:
            self.publish()

    def report(self, title: str = "report") -> str:
        """The text of one report; advances "since last"."""
        now = self._clock()
        stats = self.stats
        interval = stats.since(self._last)
        elapsed, span = now - self.started, now - self._last_time
        lag = lag_seconds(stats, self._now_us())
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        lines = [f"msgcap {title} at {when}",
                 f"since start ({elapsed:.0f} s): " + _counts(stats, elapsed)]
        if self.reports:  # the first report (or a summary without reports) would repeat it
            lines.append(f"since last ({span:.0f} s): " + _counts(interval, span))
        lines += [f"  {table}  {parts}" for table, parts in _tables(stats)]
        lines.append(stats.trail_status())
        lines.append(f"lag: {lag_words(lag)}")
        self._last, self._last_time = stats.copy(), now
        self.reports += 1
        return "\n".join(lines)

    def emit(self, text: str) -> None:
        if self.output in ("report", "both"):
            self.out.write(text + "\n")
            self.out.flush()
        if self.output in ("log", "both"):
            for line in text.splitlines():
                log.info("%s", line)


def _counts(stats: Stats, seconds: float) -> str:
    rate = stats.messages / seconds if seconds > 0 else 0.0
    return (f"messages {stats.messages}  duplicates {stats.duplicates}  "
            f"discarded {stats.discarded}  transactions {stats.transactions}  "
            f"operations {stats.total_operations}  ({rate:,.1f} messages/s)")


def _tables(stats: Stats) -> list[tuple[str, str]]:
    tables: dict[str, dict[str, int]] = {}
    for (table, optype), n in sorted(stats.operations.items()):
        tables.setdefault(table, {})[optype] = n
    return [(t, "  ".join(f"{OP_LABELS.get(o, o)} {c[o]}" for o in ("I", "U", "D", "T") if o in c))
            for t, c in tables.items()]


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _seconds(unix_us: int | None) -> str:
    """A timestamp sample: seconds since the Unix epoch, NaN before there is one."""
    return f"{unix_us / 1e6:.6f}" if unix_us is not None else "NaN"


def metrics_text(stats: Stats, *, connected: bool, trail_bytes: int,
                 now_us: int | None = None, connection: ConnectionState | None = None) -> str:
    """The Prometheus text exposition of §11's metrics."""
    now_us = _now_us() if now_us is None else now_us
    out: list[str] = []

    def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, Any]]) -> None:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        out.extend(f"{name}{labels} {value}" for labels, value in samples)

    metric("msgcap_messages_total", "counter", "Messages consumed.", [("", stats.messages)])
    metric("msgcap_duplicates_total", "counter", "Messages skipped as already in the trail.",
           [("", stats.duplicates)])
    metric("msgcap_discarded_total", "counter", "Messages written to the discard file.",
           [("", stats.discarded)])
    metric("msgcap_transactions_total", "counter", "Transactions written to the trail.",
           [("", stats.transactions)])
    metric("msgcap_operations_total", "counter", "Operations written, by table and type.",
           [(f'{{table="{_label(t)}",op="{OP_LABELS.get(o, o)}"}}', n)
            for (t, o), n in sorted(stats.operations.items())])
    metric("msgcap_trail_bytes_total", "counter", "Bytes appended to the trail since start.",
           [("", trail_bytes)])
    pos = stats.last_position
    metric("msgcap_trail_seqno", "gauge", "Sequence number of the current trail file.",
           [("", pos.seqno if pos else 0)])
    metric("msgcap_trail_rba", "gauge", "Byte offset after the last transaction written.",
           [("", pos.rba if pos else 0)])
    metric("msgcap_durable_transactions_total", "counter",
           "Transactions written and made durable (fsynced and checkpointed).",
           [("", stats.durable_transactions)])
    durable = stats.durable_position
    metric("msgcap_trail_durable_seqno", "gauge",
           "Sequence number of the trail file of the durable position.",
           [("", durable.seqno if durable else 0)])
    metric("msgcap_trail_durable_rba", "gauge",
           "Byte offset where the durable part of the trail ends.",
           [("", durable.rba if durable else 0)])
    durable_commit = _seconds(stats.durable_commit_us)
    metric("msgcap_last_durable_commit_timestamp_seconds", "gauge",
           "When a transaction was last made durable in the trail (fsynced and checkpointed).",
           [("", durable_commit)])
    source_commit = _seconds(stats.last_commit_us)
    metric("msgcap_last_source_commit_timestamp_seconds", "gauge",
           "Source commit timestamp of the last transaction written.", [("", source_commit)])
    metric("msgcap_last_commit_timestamp_seconds", "gauge",
           "Deprecated, to be removed: msgcap_last_source_commit_timestamp_seconds under its "
           "old name.", [("", source_commit)])
    lag = lag_seconds(stats, now_us)
    metric("msgcap_lag_seconds", "gauge",
           "Now minus the source commit timestamp of the last transaction written.",
           [("", f"{lag:.6f}" if lag is not None else "NaN")])
    if stats.heartbeat_us is not None:
        metric("msgcap_heartbeat_timestamp_seconds", "gauge",
               "When the capture loop last beat (report.heartbeat): it is alive.",
               [("", f"{stats.heartbeat_us / 1e6:.6f}")])
    metric("msgcap_source_connected", "gauge", "1 while the message source is connected.",
           [("", 1 if connected else 0)])
    if connection is not None:
        metric("msgcap_source_state", "gauge",
               "1 for the source's connection state (connecting, connected, disconnected).",
               [(f'{{state="{state}"}}', int(state == connection.state)) for state in STATES])
        metric("msgcap_source_state_since_timestamp_seconds", "gauge",
               "When the source's connection entered its current state.",
               [("", f"{connection.since_us / 1e6:.6f}")])
    return "\n".join(out) + "\n"


class _Server(ThreadingHTTPServer):
    """The endpoint's server, bounded: any local user can connect, so a connection may never hold
    a thread and a descriptor of the capture for long. At most ``MAX_CONNECTIONS`` at once (one
    more is answered 503 and closed at once, on the accepting thread), and each gets
    ``REQUEST_SECONDS`` in all for its request and answer: a per-read timeout alone would let a
    client sending a byte every few seconds hold on forever. A client that goes away is its own
    business, not a traceback."""

    daemon_threads = True
    request_queue_size = 4 * MAX_CONNECTIONS  # the kernel's, before accept: no descriptor of ours

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._lock = threading.Lock()
        self._deadlines: dict[socket.socket, float] = {}  # open connections → when they end
        self._refused = Tally()
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            busy = len(self._deadlines) >= MAX_CONNECTIONS
            if not busy:
                self._deadlines[request] = time.monotonic() + REQUEST_SECONDS
        if busy:
            self._refuse(request, client_address)
        else:
            super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._deadlines.pop(request, None)

    def _refuse(self, request: socket.socket, client_address: Any) -> None:
        """503 and close, without reading the request: never waits for the client."""
        with contextlib.suppress(OSError):
            request.setblocking(False)
            request.send(_BUSY)
        self.shutdown_request(request)
        count = self._refused.add()
        if count == 1 and not self._refused.span:
            log.warning("http: connection from %s refused: %d connections are open, the most "
                        "report.http serves at once; further refusals are counted and logged "
                        "once a minute", address_text(client_address), MAX_CONNECTIONS)
        elif count:
            log.warning("http: %d connections refused in the last %.0f s (more than %d at once)",
                        count, self._refused.span, MAX_CONNECTIONS)

    def service_actions(self) -> None:
        """Between accepts (every ``poll_interval``): end the connections past their deadline.
        Shutting a socket down wakes its handler's read (the handler thread closes it)."""
        now = time.monotonic()
        with self._lock:
            late = [request for request, deadline in self._deadlines.items() if deadline <= now]
        for request in late:
            with contextlib.suppress(OSError):  # ended meanwhile
                request.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):  # BrokenPipe, reset, …
            log.debug("http: client %s went away: %s", client_address, exc)
        else:
            log.warning("http: request from %s failed: %r", client_address, exc)


class _Server6(_Server):
    address_family = socket.AF_INET6


class HttpReport:
    """``report.http``: ``GET /health`` and ``GET /metrics`` on a daemon thread.

    ``state()`` returns ``(capturing, connected, trail_bytes)``, ``connection()`` the source's
    connection state; the server never blocks capture. ``address`` is (host, port); an IPv6
    literal host (``::1``) listens on IPv6.
    """

    def __init__(self, address: tuple[str, int], stats: Stats,
                 state: Callable[[], tuple[bool, bool, int]],
                 connection: Callable[[], ConnectionState] | None = None) -> None:
        report = self

        class Handler(BaseHTTPRequestHandler):
            timeout = REQUEST_SECONDS  # each read; the server's deadline bounds the whole

            def do_GET(self) -> None:
                report._serve(self)

            def log_message(self, fmt: str, *args: Any) -> None:
                log.debug("http: " + fmt, *args)

        self.stats, self.state, self.connection = stats, state, connection
        server = _Server6 if ":" in address[0] else _Server
        try:
            self.server = server(address, Handler)
        except (OSError, UnicodeError) as exc:
            from props.errors import PropertyError
            raise PropertyError(f"cannot listen on {address_text(address)}: "
                                f"{getattr(exc, 'strerror', None) or exc}",
                                prop="report.http") from None
        self.address = self.server.server_address
        self._thread = threading.Thread(target=self.server.serve_forever, name="report-http",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _serve(self, req: BaseHTTPRequestHandler) -> None:
        capturing, connected, trail_bytes = self.state()
        connection = self.connection() if self.connection is not None else None
        path = req.path.split("?", 1)[0]
        if path == "/health":
            ok = capturing and connected
            health: dict[str, Any] = {
                "status": "ok" if ok else "unavailable", "capturing": capturing,
                "connected": connected, "messages": self.stats.messages,
                "transactions": self.stats.transactions}
            if connection is not None:
                health["source"] = connection.as_dict()
            body = json.dumps(health).encode()
            code, ctype = (200 if ok else 503), "application/json"
        elif path == "/metrics":
            body = metrics_text(self.stats, connected=connected, trail_bytes=trail_bytes,
                                connection=connection).encode()
            code, ctype = 200, "text/plain; version=0.0.4; charset=utf-8"
        else:
            body, code, ctype = b"not found\n", 404, "text/plain"
        req.send_response(code)
        req.send_header("Content-Type", ctype)
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        req.wfile.write(body)

    @property
    def url(self) -> str:
        """``http://host:port``, the port the OS chose for port 0."""
        return f"http://{address_text(self.address)}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def address_text(address: tuple[Any, ...]) -> str:
    """``host:port``, an IPv6 host in brackets (``[::1]:9464``)."""
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
