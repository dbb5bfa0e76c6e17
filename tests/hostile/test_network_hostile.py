"""Hostile peers on the network (issue 24, conditions 2 and 3), against a real ``msgcap run``:
local clients that open connections to ``report.http`` and never finish their request, and a
STOMP broker (or proxy) that accepts, subscribes, then drops every connection at once."""

from __future__ import annotations

import os
import re
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from msgcap.report import MAX_CONNECTIONS, REQUEST_SECONDS
from tests.live.conftest import Work


@pytest.fixture
def work(tmp_path: Path) -> Work:
    return Work(tmp_path / "home")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


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
        wait_until(lambda: proc.poll() is None and health(port) == 200, "/health")
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
        wait_until(lambda: all(closed_by_server(s) for s in idle),
                   "the server to close every idle connection", REQUEST_SECONDS + 5)
        assert health(port) == 200  # a fresh client is served
    finally:
        for sock in idle:
            sock.close()
    wait_until(lambda: descriptors(pid) <= fds, "the capture's descriptors back")


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
