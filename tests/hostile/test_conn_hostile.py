"""The source's connection state under hostile conditions (issue 26, item 2), against a real
``msgcap run``: no broker where ``jms.url`` points, a broker stopped and started again, a broker
that falls silent. ``msgcap status`` (text and ``--json``), the heartbeat line, ``/health`` and
``/metrics`` say connected, connecting or disconnected, since when, and the last error in words;
before, a run that could not reach its broker said "running" and logged "cannot connect …
(ConnectFailedException)"."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from msgcap.sources.base import (
    CONNECTED,
    DISCONNECTED,
    Redelivery,
    failure_words,
    unreachable,
)
from msgcap.sources.spool import SpoolSource
from msgcap.sources.stomp import StompSource
from props.errors import SourceError
from tests.hostile.conftest import free_port, wait_for
from tests.live.conftest import Work


def status(work: Work) -> dict[str, Any]:
    return json.loads(work.msgcap("status", "--prop", str(work.prop), "--json").stdout)


def get(port: int, path: str) -> str:
    """The body of ``path`` on ``report.http`` ("" while the endpoint is not up yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.read().decode()
    except urllib.error.HTTPError as exc:  # /health: 503 while not connected
        return exc.read().decode()
    except OSError:
        return ""


def since_seconds(metrics: str) -> float:
    found = re.search(r"^msgcap_source_state_since_timestamp_seconds (\S+)$", metrics, re.MULTILINE)
    assert found is not None, metrics
    return float(found.group(1))


@contextlib.contextmanager
def running(work: Work) -> Iterator[Any]:
    run = work.start("run", "--prop", str(work.prop))
    try:
        yield run
    finally:
        run.terminate()
        assert run.wait(timeout=60) == 0, (work.root / "run.out").read_text()


# -- words --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("error", "words"), [
    (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), "connection refused"),
    (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "host not found"),
    (OSError(errno.EHOSTUNREACH, "No route to host"), "no route to host"),
    (OSError(errno.ENETUNREACH, "Network is unreachable"), "network unreachable"),
    (TimeoutError("timed out"), "timed out"),
    (ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
     "connection reset by the broker"),
])
def test_socket_errors_are_said_in_words(error: OSError, words: str) -> None:
    assert failure_words(error) == words


def test_an_unreachable_broker_is_found_out_in_words() -> None:
    """stomp.py says only ConnectFailedException: one TCP connection of our own says why."""
    assert unreachable("127.0.0.1", free_port(), 5) == "connection refused"
    assert unreachable("no-such-host.invalid", 61613, 5) == "host not found"


# -- no broker ----------------------------------------------------------------------------------


def test_a_run_without_its_broker_says_connection_refused_and_since_when(work) -> None:
    port, http = free_port(), free_port()
    work.properties(jms_url=f"stomp://127.0.0.1:{port}", jms_destination="/queue/q",
                    report_heartbeat="1sec", report_http=f"127.0.0.1:{http}")
    started = time.time()
    with running(work):
        source = wait_for(lambda: (status(work)["source"] or {}).get("error") and
                          status(work)["source"], "status to say why it is not connected")
        assert source["state"] == "connecting"
        assert source["error"] == "connection refused"
        assert source["url"] == f"stomp://127.0.0.1:{port}"
        since = datetime.fromisoformat(source["since"]).timestamp()
        assert started - 1 <= since <= time.time()
        assert source["age_seconds"] >= 0

        text = work.msgcap("status", "--prop", str(work.prop)).stdout
        assert re.search(rf"^source stomp://127\.0\.0\.1:{port}: connecting since "
                         r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+\.\d{3} s ago\), "
                         r"last error: connection refused$", text, re.MULTILINE), text

        metrics = get(http, "/metrics")
        assert 'msgcap_source_state{state="connecting"} 1' in metrics
        assert 'msgcap_source_state{state="connected"} 0' in metrics
        assert "msgcap_source_connected 0" in metrics
        assert since_seconds(metrics) == pytest.approx(since, abs=1e-3)
        assert json.loads(get(http, "/health"))["source"]["error"] == "connection refused"

        out = work.root / "run.out"
        beat = wait_for(lambda: re.search(r"^msgcap heartbeat at .*; source connecting since "
                                          r".* UTC, last error: connection refused; trail ",
                                          out.read_text(), re.MULTILINE), "a heartbeat line")
        assert beat is not None
    log = (work.root / "dirrpt" / "SALES.log").read_text()
    assert f"cannot connect to stomp://127.0.0.1:{port}: connection refused; retrying" in log
    assert "ConnectFailedException" not in log


# -- a broker stopped and started again ---------------------------------------------------------


@pytest.mark.broker
def test_a_broker_outage_shows_as_disconnected_then_connected_again(work, broker, queue) -> None:
    """No report.heartbeat, no report.time: the status file follows the state by itself."""
    http = free_port()
    work.properties(jms_url=broker.url, jms_destination=queue, report_http=f"127.0.0.1:{http}")
    try:
        with running(work):
            wait_for(lambda: 'msgcap_source_state{state="connected"} 1' in get(http, "/metrics"),
                     "the first connection")
            first = since_seconds(get(http, "/metrics"))
            wait_for(lambda: status(work)["source"]["state"] == CONNECTED,
                     "the status file to say connected")  # at the capture loop's next turn

            broker.stop()
            lost = wait_for(lambda: (s := status(work)["source"])["state"] == DISCONNECTED and s,
                            "status to say disconnected")
            assert lost["error"] and (lost["error"].startswith(
                "connection closed by the broker after ") or lost["error"] == "connection refused")
            metrics = get(http, "/metrics")
            assert 'msgcap_source_state{state="disconnected"} 1' in metrics
            assert "msgcap_source_connected 0" in metrics
            down = since_seconds(metrics)
            assert down > first

            broker.start()
            again = wait_for(lambda: (s := status(work)["source"])["state"] == CONNECTED and s,
                             "status to say connected again", timeout=120)
            assert again["error"] is None
            metrics = get(http, "/metrics")
            assert 'msgcap_source_state{state="connected"} 1' in metrics
            assert since_seconds(metrics) > down
    finally:
        if not broker.running():
            broker.start()
    log = (work.root / "dirrpt" / "SALES.log").read_text()
    assert re.search(r"connection closed by the broker after \d+(\.\d)? s", log), log


# -- a broker that falls silent -----------------------------------------------------------------


class SilentBroker:
    """A STOMP server that connects, confirms the subscription and then sends nothing, no
    heart-beat either, while keeping the connection open."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"stomp://127.0.0.1:{self._sock.getsockname()[1]}"
        self._open: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self._sock.accept()
                self._open.append(conn)
                frames = conn.makefile("rb")
                self._frame(frames)  # CONNECT
                conn.sendall(b"CONNECTED\nversion:1.2\nserver:Silent/1.0\nheart-beat:500,500\n\n\0")
                receipt = re.search(rb"^receipt:(.*)$", self._frame(frames), re.MULTILINE)
                assert receipt is not None  # (msgcap waits for the SUBSCRIBE's receipt)
                conn.sendall(b"RECEIPT\nreceipt-id:" + receipt.group(1) + b"\n\n\0")

    @staticmethod
    def _frame(frames: Any) -> bytes:
        """The next frame the client sent, without its NUL."""
        frame = b""
        while not frame.endswith(b"\0"):
            byte = frames.read(1)
            if not byte:
                raise ConnectionError("client closed")
            frame += byte
        return frame[:-1]

    def close(self) -> None:
        self._sock.close()
        for conn in self._open:
            conn.close()


def test_a_silent_broker_is_said_to_send_no_heart_beat() -> None:
    broker = SilentBroker()
    source = StompSource([broker.url], "/queue/q", heartbeat=(500, 500))
    try:
        source.open()
        assert source.connection.state == CONNECTED
        deadline = time.monotonic() + 20
        with pytest.raises(Redelivery):
            while time.monotonic() < deadline:
                source.receive_many(0.2)
        state = source.connection
        assert state.state == DISCONNECTED
        assert re.fullmatch(r"no heart-beat from the broker for \d\.\d s; connection closed "
                            r"after \d\.\d s", state.error or ""), state
    finally:
        source.close()
        broker.close()


# -- spool directory ----------------------------------------------------------------------------


def test_a_spool_directory_that_cannot_be_listed_says_so(tmp_path: Path) -> None:
    """Connected while the directory can be listed; when it cannot (here its descriptor is
    gone, as on a file system that fails), "directory unreadable" with the reason."""
    (tmp_path / "spool").mkdir()
    source = SpoolSource(f"dir:{tmp_path / 'spool'}", poll=0.01)
    source.open()
    assert source.connection.state == CONNECTED and source.receive(0.05) is None
    assert source._dir is not None
    os.close(source._dir)
    with pytest.raises(SourceError, match="directory unreadable: Bad file descriptor"):
        source.receive(0.05)
    assert source.connection.state == DISCONNECTED
    assert source.connection.error == "directory unreadable: Bad file descriptor"
