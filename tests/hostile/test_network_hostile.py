"""Hostile peers on the network (issue 24, conditions 2 and 3), against a real ``msgcap run``:
local clients that open connections to ``report.http`` and never finish their request, and a
STOMP broker (or proxy) that accepts, subscribes, then drops every connection at once."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from msgcap.report import MAX_CONNECTIONS, REQUEST_SECONDS
from msgcap.sources.base import Redelivery
from msgcap.sources.broker import Backoff
from msgcap.sources.stomp import StompSource
from msgcap.tally import Tally
from tests.hostile.conftest import free_port, wait_for
from tests.live.conftest import Work

# -- report.http -------------------------------------------------------------------------------


def health(port: int) -> int | None:
    """/health's status code, or None when the endpoint does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^Threads:\s+(\d+)", status, re.MULTILINE).group(1))


@pytest.fixture
def capture_with_http(work: Work) -> Iterator[tuple[int, int]]:
    """A ``msgcap run`` on a spool directory with ``report.http``: (pid, port)."""
    port = free_port()
    work.spool(report_http=f"127.0.0.1:{port}")
    proc = work.start("run", "--prop", str(work.prop))
    try:
        wait_for(lambda: proc.poll() is None and health(port) == 200, "/health")
        yield proc.pid, port
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, (work.root / "run.out").read_text()


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (whatever it answered before)."""
    sock.settimeout(0.05)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:  # reset
        return True
    return True


def test_idle_connections_to_health_are_capped_and_time_out(capture_with_http) -> None:
    """60 idle connections once held 60 threads and descriptors of the capture, forever."""
    pid, port = capture_with_http
    fds, live = descriptors(pid), threads(pid)
    idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(60)]
    try:
        for _ in range(10):  # while they are open
            assert descriptors(pid) <= fds + MAX_CONNECTIONS + 2
            assert threads(pid) <= live + MAX_CONNECTIONS + 2
            time.sleep(0.05)
        wait_for(lambda: all(closed_by_server(s) for s in idle),
                   "the server to close every idle connection", REQUEST_SECONDS + 5)
        assert health(port) == 200  # a fresh client is served
    finally:
        for sock in idle:
            sock.close()
    wait_for(lambda: descriptors(pid) <= fds, "the capture's descriptors back")


def test_a_request_sent_a_byte_at_a_time_is_cut_at_its_deadline(capture_with_http) -> None:
    """Each byte comes before the read timeout: only a deadline for the whole request ends it."""
    _, port = capture_with_http
    request = b"GET /health HTTP/1.0\r\n" + b"X-Slow: " + b"x" * 200
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        started = time.monotonic()
        for byte in request:
            try:
                sock.send(bytes([byte]))
            except OSError:
                break
            if closed_by_server(sock):
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the server waited for the whole slow request")
        assert time.monotonic() - started < REQUEST_SECONDS + 2


# -- a broker that drops every connection --------------------------------------------------------


class DroppingBroker:
    """A STOMP server playing a broken broker or proxy: it answers CONNECT and the SUBSCRIBE's
    receipt, then closes the connection at once. ``attempts`` holds when each connection came."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.attempts: list[float] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"stomp://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.attempts.append(time.monotonic())
            with conn, contextlib.suppress(OSError):
                conn.settimeout(5)
                frames = _Frames(conn)
                frames.next()  # CONNECT
                conn.sendall(b"CONNECTED\nversion:1.2\nserver:Dropper/1.0\nheart-beat:0,0\n\n\0")
                receipt = re.search(rb"^receipt:(.*)$", frames.next(), re.MULTILINE)
                if receipt is not None:
                    conn.sendall(b"RECEIPT\nreceipt-id:" + receipt.group(1) + b"\n\n\0")

    def close(self) -> None:
        self._sock.close()


class _Frames:
    """The client's frames, one at a time (up to their NUL)."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn, self._buffer = conn, b""

    def next(self) -> bytes:
        while b"\0" not in self._buffer:
            data = self._conn.recv(4096)
            if not data:
                raise ConnectionError("client closed")
            self._buffer += data
        frame, _, self._buffer = self._buffer.partition(b"\0")
        return frame.lstrip(b"\r\n")


@pytest.fixture
def dropping_broker() -> Iterator[DroppingBroker]:
    broker = DroppingBroker()
    yield broker
    broker.close()


def run_until_idle(work: Work, url: str, max_idle: float):
    work.properties(jms_url=url, jms_destination="/queue/q")
    started = time.monotonic()
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", str(max_idle), timeout=30)
    return done, time.monotonic() - started


def warnings(work: Work) -> list[str]:
    return [line for line in (work.root / "dirrpt" / "SALES.log").read_text().splitlines()
            if " WARNING " in line]


def test_a_broker_that_drops_each_connection_gets_the_growing_back_off(work,
                                                                      dropping_broker) -> None:
    """The back-off was reset by every successful subscribe: ~10 connections and WARNING lines a
    second, for ever, and --max-idle never stopped the run."""
    done, took = run_until_idle(work, dropping_broker.url, 5)
    assert done.returncode == 0, done.stderr  # --max-idle's documented status
    assert took < 20
    # 0.1 + 0.2 + 0.4 + 0.8 + 1.6 + 3.2 s of back-off (with up to 10 % jitter) fill 5 s
    assert 4 <= len(dropping_broker.attempts) <= 8, dropping_broker.attempts
    gaps = [b - a for a, b in itertools.pairwise(dropping_broker.attempts)]
    assert gaps == sorted(gaps), gaps
    lines = warnings(work)
    assert len(lines) == 1, lines  # the rest are counted, for a line a minute
    assert re.search(r"connection closed by the broker after \d\.\d s; retrying in 0\.1 s",
                     lines[0]), lines
    assert "no message for 5.0 s" in (
        work.root / "dirrpt" / "SALES.log").read_text()


def test_max_idle_stops_a_run_that_cannot_reach_its_broker(work) -> None:
    """It retried for ever ("cannot connect ...") whatever --max-idle said (issue 26 too); it
    never connected, so it does not end as idle: exit 2 (issue 35)."""
    done, took = run_until_idle(work, f"stomp://127.0.0.1:{free_port()}", 2)
    assert done.returncode == 2, done.stderr
    assert "but never connected to the source (last error: connection refused)" in done.stderr
    assert took < 15
    lines = warnings(work)
    assert len(lines) == 1 and "cannot connect to" in lines[0], lines
    assert lines[0].endswith(": connection refused; retrying in 0.1 s (until a connection works, "
                             "failures are logged once a minute)"), lines
    assert "messages 0" in done.stdout


def test_failures_are_logged_once_per_interval_with_their_count(dropping_broker, caplog) -> None:
    """The log had one WARNING per attempt; now the first, then one line per interval (here 1 s
    instead of 60) with how many failed and the last reason."""
    source = StompSource([dropping_broker.url], "/queue/q", backoff=Backoff(first=0.05, cap=0.2),
                         failures=Tally(interval=1.0))
    deadline = time.monotonic() + 2.5
    with caplog.at_level(logging.WARNING, logger="msgcap.source"):
        source.open()
        while time.monotonic() < deadline:
            with contextlib.suppress(Redelivery):
                source.receive_many(0.1)
    source.close()
    lines = [r.getMessage() for r in caplog.records]
    assert len(dropping_broker.attempts) >= 10
    assert 2 <= len(lines) <= 3, lines
    assert re.search(r"connection closed by the broker after \d\.\d s; retrying in 0\.1 s "
                     r"\(until a connection works, failures are logged once a minute\)$",
                     lines[0]), lines
    counted = re.fullmatch(r"(\d+) connection failures in the last 1 s, the last: "
                           r"stomp://127\.0\.0\.1:\d+: connection closed by the broker after "
                           r"\d\.\d s; retrying in 0\.2 s",
                           lines[1])
    assert counted is not None, lines[1]
    assert int(counted.group(1)) >= 4
