"""STOMP over TLS against the real ActiveMQ broker: capture with the broker verified against
``jms.ssl.ca``; an unknown CA, an expired certificate and a host name mismatch refused in one line
(exit 2) by ``msgcap run`` and ``msgcap send``; mutual TLS.

One broker JVM for the module, started by ``scripts/activemq.sh`` with certificates that
``scripts/test-certs.sh`` makes in a tmp dir: a plain STOMP port, a TLS port, a TLS port that
requires a client certificate, and a second in-JVM broker that presents an expired certificate.
The broker's certificate is issued for 127.0.0.1 only, so ``localhost`` is a host name mismatch.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from msgcap.sources.stomp import StompSource, parse_urls, tls_failure
from msgcap.sources.tls import tls_files
from props.errors import SourceError
from tests.conftest import REPO, Broker, _free_port


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("certs")
    subprocess.run(["bash", str(REPO / "scripts" / "test-certs.sh"), str(directory),
                    "IP:127.0.0.1"], check=True, capture_output=True, timeout=120)
    return directory


@dataclass(slots=True)
class TlsBroker:
    broker: Broker
    tls_port: int  # server certificate only
    mtls_port: int  # needClientAuth=true
    expired_port: int  # the in-JVM second broker with an expired certificate

    def url(self, port: int, host: str = "127.0.0.1") -> str:
        return f"stomp+ssl://{host}:{port}"


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[TlsBroker]:
    tls, mtls, expired = _free_port(), _free_port(), _free_port()
    broker = Broker(tmp_path_factory.mktemp("tls-broker"), _free_port(), env={
        "MSGCAP_STOMP_SSL_PORT": str(tls), "MSGCAP_STOMP_MTLS_PORT": str(mtls),
        "MSGCAP_STOMP_SSL_ALT_PORT": str(expired),
        "MSGCAP_BROKER_KEYSTORE": str(certs / "broker.p12"),
        "MSGCAP_BROKER_TRUSTSTORE": str(certs / "truststore.p12"),
        "MSGCAP_BROKER_ALT_KEYSTORE": str(certs / "broker-expired.p12")})
    broker.start()
    try:
        yield TlsBroker(broker, tls, mtls, expired)
    finally:
        broker.stop()


@pytest.fixture
def tls_queue() -> str:
    """A queue of its own (not the ``queue`` fixture: that one starts the session's broker)."""
    return f"/queue/tls-{uuid.uuid4().hex}"


def _capture(work, queue: str, url: str, **tls: object) -> None:
    """send 3 messages, check and capture them, all over ``url``; a second run finds nothing
    (acked). (check before send would find no queue: it creates none.)"""
    work.properties(jms_url=url, jms_destination=queue, **tls)
    dump = work.dump("in.jsonl", [work.body(i) for i in (1, 2, 3)])
    sent = work.msgcap("send", "--prop", str(work.prop), str(dump), check=True)
    assert f"sent 3 messages to {url}" in sent.stdout
    checked = work.msgcap("check", "--prop", str(work.prop), check=True)
    assert f"source {url}: connected to " in checked.stdout
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "messages 3" in done.stdout
    assert [s for s, _, _ in work.trail()] == ["0000000001", "0000000002", "0000000003"]
    again = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", check=True)
    assert "messages 0" in again.stdout
    assert f"connected to {url}" in (work.root / "dirrpt" / "SALES.log").read_text()


def _refused(work, command: str) -> str:
    """The one stderr line of a ``command`` that must stop at connecting (exit 2)."""
    args = {"send": ("send", "--prop", str(work.prop),
                     str(work.dump("in.jsonl", [work.body(1)]))),
            "run": ("run", "--prop", str(work.prop), "--max-idle", "1"),
            "check": ("check", "--prop", str(work.prop))}[command]
    done = work.msgcap(*args, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert not (work.root / "dirdat").exists() or not work.trail()
    return lines[0]


@pytest.mark.broker
def test_capture_over_tls_verifies_the_broker_against_the_ca(work, tls_broker, certs,
                                                               tls_queue) -> None:
    _capture(work, tls_queue, tls_broker.url(tls_broker.tls_port), jms_ssl_ca=certs / "ca.pem")


@pytest.mark.broker
@pytest.mark.parametrize("command", ["run", "send", "check"])
@pytest.mark.parametrize(("case", "expected"), [
    ("wrong CA", "TLS: unknown CA: the broker's certificate is not issued by a CA in "),
    ("expired", "TLS: expired certificate: the broker's certificate has expired"),
    ("host name", "TLS: host name mismatch: the broker's certificate is not valid for localhost"),
])
def test_a_certificate_that_fails_verification_stops_with_one_line_saying_why(
        work, tls_broker, certs, tls_queue, case, expected, command) -> None:
    ca, url = {
        "wrong CA": (certs / "other-ca.pem", tls_broker.url(tls_broker.tls_port)),
        "expired": (certs / "ca.pem", tls_broker.url(tls_broker.expired_port)),
        "host name": (certs / "ca.pem", tls_broker.url(tls_broker.tls_port, "localhost")),
    }[case]
    work.properties(jms_url=url, jms_destination=tls_queue, jms_ssl_ca=ca)
    line = _refused(work, command)
    assert line.startswith(f"msgcap {command}: error: {url}: {expected}"), line


@pytest.mark.broker
def test_mutual_tls_captures_with_the_client_certificate(work, tls_broker, certs,
                                                         tls_queue) -> None:
    _capture(work, tls_queue, tls_broker.url(tls_broker.mtls_port), jms_ssl_ca=certs / "ca.pem",
             jms_ssl_cert=certs / "client.pem", jms_ssl_key=certs / "client.key")


@pytest.mark.broker
@pytest.mark.parametrize("command", ["run", "send"])
def test_the_broker_refuses_a_client_without_a_certificate(work, tls_broker, certs, tls_queue,
                                                           command) -> None:
    url = tls_broker.url(tls_broker.mtls_port)
    work.properties(jms_url=url, jms_destination=tls_queue, jms_ssl_ca=certs / "ca.pem")
    assert _refused(work, command).startswith(
        f"msgcap {command}: error: {url}: TLS: the broker requires a client certificate "
        "(set jms.ssl.cert and jms.ssl.key)")


@pytest.mark.broker
def test_the_broker_refuses_a_certificate_of_a_ca_it_does_not_trust(work, tls_broker, certs,
                                                                    tls_queue) -> None:
    url = tls_broker.url(tls_broker.mtls_port)
    work.properties(jms_url=url, jms_destination=tls_queue, jms_ssl_ca=certs / "ca.pem",
                    jms_ssl_cert=certs / "other-client.pem",
                    jms_ssl_key=certs / "other-client.key")
    assert _refused(work, "run").startswith(
        f"msgcap run: error: {url}: TLS: the broker refused the client certificate "
        f"{certs / 'other-client.pem'} (jms.ssl.cert)")


# -- files checked at start, before any connection ---------------------------------------------

def _source(**tls: str) -> StompSource:
    return StompSource(["stomp+ssl://127.0.0.1:1"], "/queue/q", **tls)


def test_an_encrypted_client_key_is_refused_at_start_without_a_prompt(certs: Path) -> None:
    encrypted = certs / "client-encrypted.key"
    subprocess.run(["openssl", "pkey", "-in", str(certs / "client.key"), "-aes256", "-passout",
                    "pass:secret", "-out", str(encrypted)], check=True, capture_output=True)
    with pytest.raises(SourceError, match=r"jms.ssl.key: .*client-encrypted.key is encrypted"):
        _source(ssl_ca=str(certs / "ca.pem"), ssl_cert=str(certs / "client.pem"),
                ssl_key=str(encrypted))


@pytest.mark.parametrize(("files", "message"), [
    (("client.key", None, None), r"jms.ssl.ca: no CA certificate in .*client.key"),
    (("ca.pem", "client.pem", "other-client.key"),
     "jms.ssl.key does not belong to jms.ssl.cert"),
    (("ca.pem", "client.key", "client.key"), r"jms.ssl.cert/jms.ssl.key: cannot load"),
])
def test_unusable_tls_files_are_refused_at_start(certs: Path, files, message) -> None:
    ca, cert, key = (str(certs / f) if f else None for f in files)
    with pytest.raises(SourceError, match=message):
        _source(ssl_ca=ca, ssl_cert=cert, ssl_key=key)


def test_a_broker_that_is_not_reachable_is_no_certificate_problem(certs: Path) -> None:
    """Retried like any lost broker (no SourceError), and logged with the socket's reason rather
    than stomp.py's empty ConnectFailedException."""
    endpoint = parse_urls([f"stomp+ssl://127.0.0.1:{_free_port()}"])[0]
    files = tls_files(str(certs / "ca.pem"), None, None, url=endpoint.url)
    assert tls_failure(endpoint, files, "connection failed") == "connection refused"


@pytest.mark.broker
def test_a_tls_broker_that_goes_away_is_noticed_without_heartbeats(work, tls_broker, certs,
                                                                   tls_queue) -> None:
    """stomp.py's TLS io loop took a closed socket for "no data yet": with heart-beats off,
    capture never noticed a stopped broker. Now it reconnects and goes on."""
    url = tls_broker.url(tls_broker.tls_port)
    work.properties(jms_url=url, jms_destination=tls_queue, jms_ssl_ca=certs / "ca.pem",
                    jms_heartbeat="0,0")
    log = work.root / "dirrpt" / "SALES.log"
    work.msgcap("send", "--prop", str(work.prop), str(work.dump("a.jsonl", [work.body(1)])),
                check=True)
    run = work.start("run", "--prop", str(work.prop))
    try:
        _wait_for(lambda: len(work.trail()) == 1, "the first message in the trail")
        tls_broker.broker.stop()
        try:
            _wait_for(lambda: "connection closed by the broker after" in log.read_text(),
                      "the lost connection noticed")
        finally:
            tls_broker.broker.start()
        work.msgcap("send", "--prop", str(work.prop),
                    str(work.dump("b.jsonl", [work.body(2), work.body(3)])), check=True)
        _wait_for(lambda: len(work.trail()) == 3, "the messages sent after the restart")
    finally:
        run.terminate()
        assert run.wait(timeout=120) == 0, (work.root / "run.out").read_text()
    assert [s for s, _, _ in work.trail()] == ["0000000001", "0000000002", "0000000003"]


def _wait_for(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.2)


@pytest.mark.broker
def test_a_tls_broker_that_hangs_is_left_when_its_heartbeats_stop(work, tls_broker, certs,
                                                                  tls_queue) -> None:
    """stomp.py closed a TLS connection by waiting, without a deadline, for the broker's
    close_notify: with the broker hung (SIGSTOP), the heart-beat timeout never got reported and
    capture hung with it. Now it reconnects when the broker comes back."""
    url = tls_broker.url(tls_broker.tls_port)
    work.properties(jms_url=url, jms_destination=tls_queue, jms_ssl_ca=certs / "ca.pem",
                    jms_heartbeat="1000,1000")
    log = work.root / "dirrpt" / "SALES.log"
    work.msgcap("send", "--prop", str(work.prop), str(work.dump("a.jsonl", [work.body(1)])),
                check=True)
    run = work.start("run", "--prop", str(work.prop))
    pid = int((tls_broker.broker.dir / "activemq.pid").read_text())
    try:
        _wait_for(lambda: len(work.trail()) == 1, "the first message in the trail")
        os.kill(pid, signal.SIGSTOP)
        try:
            _wait_for(lambda: "no heart-beat from the broker for" in log.read_text(),
                      "the hung broker left")
        finally:
            os.kill(pid, signal.SIGCONT)
        work.msgcap("send", "--prop", str(work.prop),
                    str(work.dump("b.jsonl", [work.body(2), work.body(3)])), check=True)
        _wait_for(lambda: len(work.trail()) == 3, "the messages sent after the broker woke up")
    finally:
        run.terminate()
        assert run.wait(timeout=120) == 0, (work.root / "run.out").read_text()
    assert [s for s, _, _ in work.trail()] == ["0000000001", "0000000002", "0000000003"]
