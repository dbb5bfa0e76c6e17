"""The STOMP source against the real broker and a stub server: text vs bytes, failover, refusal at
CONNECT, and a crash inside a long (spilled) transaction."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import threading
import time

import pytest

from msgcap.sources.stomp import StompSource
from props.errors import SourceError


def _drain(src: StompSource, n: int) -> list:
    got = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        m = src.receive(1.0)
        if m is not None:
            got.append(m)
    return got


@pytest.mark.broker
def test_text_messages_arrive_as_str_and_bytes_messages_as_bytes(work, broker, queue) -> None:
    """Pins ActiveMQ's mapping: msgcap send gives text without content-length (TextMessage)
    and body_b64 with it (BytesMessage); the source decides str vs bytes on that header."""
    work.properties(jms_url=broker.url, jms_destination=queue)
    dump = work.root / "in.jsonl"
    dump.write_text("\n".join(json.dumps(e) for e in (
        {"id": "t", "headers": {"JMSTxId": "TX-7"}, "body": "caf\u00e9"},
        {"id": "b", "headers": {}, "body_b64": base64.b64encode(b"\xf1\xf2\x00").decode()},
    )) + "\n")
    work.msgcap("send", "--prop", str(work.prop), str(dump), check=True)
    src = StompSource([broker.url], queue)
    src.open()
    try:
        text, data = _drain(src, 2)
        assert text.body == "caf\u00e9" and text.headers["JMSTxId"] == "TX-7"
        assert text.headers["persistent"] == "true" and text.id.startswith("ID:")
        assert data.body == b"\xf1\xf2\x00"
        assert "content-length" not in data.headers and "ack" not in data.headers
        src.ack([text, data])
    finally:
        src.close()


@pytest.mark.broker
def test_failover_list_skips_an_unreachable_broker(work, broker, queue) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    work.properties(jms_url=f"stomp://127.0.0.1:{dead},{broker.url}", jms_destination=queue)
    work.msgcap("send", "--prop", str(work.prop),
                str(work.dump("in.jsonl", [work.body(i) for i in (1, 2, 3)])), check=True)
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert [s for s, _, _ in work.trail()] == ["0000000001", "0000000002", "0000000003"]
    assert "cannot connect" in (work.root / "dirrpt" / "SALES.log").read_text()
    assert "messages 3" in done.stdout


class StubBroker:
    """A STOMP server that answers CONNECT with an ERROR frame (bad credentials)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                data = b""
                while b"\x00" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(b"ERROR\nmessage:User name [bob] or password is invalid.\n\n\x00")
                time.sleep(0.2)

    def close(self) -> None:
        self.sock.close()


def test_an_error_frame_at_connect_stops_with_one_line() -> None:
    stub = StubBroker()
    try:
        src = StompSource([f"stomp://127.0.0.1:{stub.port}"], "/queue/q", user="bob",
                          password="secret")
        with pytest.raises(SourceError, match="refused the connection: User name"):
            src.open()
    finally:
        stub.close()


def test_run_reports_the_refusal_without_the_password(work) -> None:
    stub = StubBroker()
    try:
        work.properties(jms_url=f"stomp://127.0.0.1:{stub.port}", jms_destination="q",
                        jms_user="bob", jms_password="s3cr3t-pw")
        done = work.msgcap("run", "--prop", str(work.prop), timeout=60)
    finally:
        stub.close()
    assert done.returncode == 2
    lines = [ln for ln in done.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1 and "refused the connection" in lines[0]
    assert "s3cr3t-pw" not in done.stderr + done.stdout


@pytest.mark.broker
def test_kill9_inside_a_spilled_transaction_then_restart(work, broker, queue) -> None:
    n = 6_000
    work.properties(jms_url=broker.url, jms_destination=queue, jms_prefetch=200)
    bodies = [work.body(i, "B" if i == 1 else "E" if i == n else "M") for i in range(1, n + 1)]
    bodies += [work.body(i) for i in range(n + 1, n + 11)]
    work.msgcap("send", "--prop", str(work.prop), str(work.dump("in.jsonl", bodies)),
                check=True)
    spill = work.root / "dirchk" / "SALES.spill.jsonl"
    proc = work.start("run", "--prop", str(work.prop))
    deadline = time.monotonic() + 120
    while not (spill.exists() and spill.stat().st_size > 200_000):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert work.trail() == []  # nothing of the open transaction is in the trail
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    trail = work.trail()
    assert [s for s, _, _ in trail] == [f"{i:010d}" for i in range(1, n + 11)]
    assert [t for _, t, _ in trail[:n]] == [0] + [1] * (n - 2) + [2]
    assert not spill.exists()
    assert "replayed" in (work.root / "dirrpt" / "SALES.log").read_text()


@pytest.mark.broker
def test_capture_waits_while_the_broker_still_holds_its_previous_connection(work, broker, queue):
    """The client-id (trail.extract) keeps a restarted capture out until the broker has put the
    old connection's unacknowledged messages back, so the queue order is kept."""
    import stomp

    work.properties(jms_url=broker.url, jms_destination=queue)
    work.msgcap("send", "--prop", str(work.prop),
                str(work.dump("in.jsonl", [work.body(i) for i in (1, 2)])), check=True)
    blocker = stomp.Connection12([("127.0.0.1", broker.port)])
    blocker.connect(wait=True, headers={"client-id": "SALES"})
    proc = work.start("run", "--prop", str(work.prop))  # (--max-idle counts the wait)
    log = work.root / "dirrpt" / "SALES.log"
    deadline = time.monotonic() + 60
    while not (log.exists() and "already connected" in log.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    assert work.trail() == []
    blocker.disconnect()
    deadline = time.monotonic() + 120
    while len(work.trail()) < 2:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    assert [s for s, _, _ in work.trail()] == ["0000000001", "0000000002"]
