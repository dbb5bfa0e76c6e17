"""AMQP 1.0 over TLS against a real RabbitMQ (its AMQP 1.0 plugin): capture with the broker
verified against ``jms.ssl.ca``; an unknown CA and a host name mismatch refused in one line
(exit 2) by ``msgcap run``, ``send`` and ``check``; mutual TLS logging in with SASL EXTERNAL;
a client without a certificate refused; PLAIN over TLS, its password never printed. The same
cases as STOMP's (tests/live/test_tls.py), whose helpers these tests share.

Two private nodes, started by ``scripts/rabbitmq.sh`` with certificates from
``scripts/test-certs.sh`` issued for ``localhost`` only (so ``127.0.0.1`` is a host name
mismatch): one whose TLS listener verifies a client certificate if shown and has a user named
as the test client certificate's CN (SASL EXTERNAL), and, started only when needed, one that
refuses clients without a certificate (RabbitMQ's TLS options hold for all its listeners).
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from msgcap.sources.amqp import AmqpSource
from props.errors import SourceError
from tests.conftest import REPO, Broker, _free_port
from tests.live.test_tls import _capture, _refused

CERT_USER = "msgcap test client"  # the CN of test-certs.sh's client.pem
LOGIN = {"jms_user": "guest", "jms_password": "guest"}


def _certs(factory: pytest.TempPathFactory, san: str) -> Path:
    directory = factory.mktemp("certs")
    subprocess.run(["bash", str(REPO / "scripts" / "test-certs.sh"), str(directory), san],
                   check=True, capture_output=True, timeout=120)
    return directory


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _certs(tmp_path_factory, "DNS:localhost")


def _node(factory: pytest.TempPathFactory, certs: Path, **env: str) -> Iterator[int]:
    """A private RabbitMQ with an AMQP 1.0 TLS listener: its port."""
    port = _free_port()
    node = Broker(factory.mktemp("rabbitmq-amqps"), _free_port(), {
        "MSGCAP_BROKER_OWNER": str(os.getpid()), "MSGCAP_AMQPS_PORT": str(port),
        "MSGCAP_BROKER_CERT": str(certs / "broker.pem"),
        "MSGCAP_BROKER_KEY": str(certs / "broker.key"),
        "MSGCAP_BROKER_CA": str(certs / "ca.pem"), **env}, "rabbitmq")
    node.start()
    try:
        yield port
    finally:
        node.stop()


@pytest.fixture(scope="module")
def amqps(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[int]:
    """A client certificate is verified if shown; its CN is a user (SASL EXTERNAL)."""
    yield from _node(tmp_path_factory, certs, MSGCAP_AMQPS_CERT_USER=CERT_USER)


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[int]:
    """A client without a certificate is refused; no user for any certificate's CN."""
    yield from _node(tmp_path_factory, certs, MSGCAP_AMQPS_MTLS="1")


@pytest.fixture
def tls_queue() -> str:
    return f"/queue/tls-{uuid.uuid4().hex}"


def _url(port: int, host: str = "localhost") -> str:
    return f"amqps://{host}:{port}"


@pytest.mark.broker
def test_capture_over_amqps_with_plain_verifies_the_broker_against_the_ca(
        work, amqps, certs, tls_queue) -> None:
    _capture(work, tls_queue, _url(amqps), jms_ssl_ca=certs / "ca.pem", **LOGIN)


@pytest.mark.broker
@pytest.mark.parametrize("command", ["run", "send", "check"])
@pytest.mark.parametrize(("case", "expected"), [
    ("wrong CA", "TLS: unknown CA: the broker's certificate is not issued by a CA in "),
    ("host name", "TLS: host name mismatch: the broker's certificate is not valid for 127.0.0.1"),
])
def test_a_certificate_that_fails_verification_stops_with_one_line_saying_why(
        work, amqps, certs, tls_queue, case, expected, command) -> None:
    ca, url = {"wrong CA": (certs / "other-ca.pem", _url(amqps)),
               "host name": (certs / "ca.pem", _url(amqps, "127.0.0.1"))}[case]
    work.properties(jms_url=url, jms_destination=tls_queue, jms_ssl_ca=ca, **LOGIN)
    line = _refused(work, command)
    assert line.startswith(f"msgcap {command}: error: {url}: {expected}"), line


@pytest.mark.broker
def test_mutual_tls_logs_in_with_sasl_external_and_captures(work, amqps, certs,
                                                            tls_queue) -> None:
    """No jms.user: the client certificate is the login (its CN is the broker's user)."""
    files = {"ssl_ca": str(certs / "ca.pem"), "ssl_cert": str(certs / "client.pem"),
             "ssl_key": str(certs / "client.key")}
    assert AmqpSource([_url(amqps)], tls_queue, **files).options.mechanisms == "EXTERNAL"
    _capture(work, tls_queue, _url(amqps), **{f"jms_{k}": v for k, v in files.items()})


@pytest.mark.broker
def test_a_client_certificate_of_a_ca_the_broker_does_not_trust_is_refused(
        work, amqps, certs, tls_queue) -> None:
    url = _url(amqps)
    work.properties(jms_url=url, jms_destination=tls_queue, jms_ssl_ca=certs / "ca.pem",
                    jms_ssl_cert=certs / "other-client.pem",
                    jms_ssl_key=certs / "other-client.key")
    assert _refused(work, "run").startswith(
        f"msgcap run: error: {url}: TLS: the broker refused the client certificate "
        f"{certs / 'other-client.pem'} (jms.ssl.cert)")


@pytest.mark.broker
@pytest.mark.parametrize("command", ["run", "send"])
def test_the_broker_refuses_a_client_without_a_certificate(work, mtls, certs, tls_queue,
                                                           command) -> None:
    url = _url(mtls)
    work.properties(jms_url=url, jms_destination=tls_queue, jms_ssl_ca=certs / "ca.pem",
                    **LOGIN)
    assert _refused(work, command).startswith(
        f"msgcap {command}: error: {url}: TLS: the broker requires a client certificate "
        "(set jms.ssl.cert and jms.ssl.key)")


@pytest.mark.broker
def test_sasl_external_for_a_certificate_without_a_user_is_a_refused_login(
        work, mtls, certs, tls_queue) -> None:
    url = _url(mtls)
    work.properties(jms_url=url, jms_destination=tls_queue, jms_ssl_ca=certs / "ca.pem",
                    jms_ssl_cert=certs / "client.pem", jms_ssl_key=certs / "client.key")
    assert _refused(work, "run").startswith(
        f"msgcap run: error: {url}: the broker refused the login (SASL EXTERNAL)")


@pytest.mark.broker
def test_a_wrong_password_over_amqps_is_one_line_and_never_printed(work, amqps, certs,
                                                                   tls_queue) -> None:
    url = _url(amqps)
    work.properties(jms_url=url, jms_destination=tls_queue, jms_ssl_ca=certs / "ca.pem",
                    jms_user="guest", jms_password="s3cret-wrong")
    line = _refused(work, "run")
    assert line.startswith(f"msgcap run: error: {url}: the broker refused the login "
                           "(SASL PLAIN)"), line
    log = work.root / "dirrpt" / "SALES.log"
    assert "s3cret-wrong" not in line + (log.read_text() if log.exists() else "")


@pytest.fixture
def ip_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """A TLS server (no AMQP) whose certificate names 127.0.0.1 only as an IP address, each
    connection ended after the handshake: its port and the CA of its certificate."""
    certs = _certs(tmp_path_factory, "IP:127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs / "broker.pem", certs / "broker.key")
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                raw, _ = server.accept()
            except OSError:
                return  # closed: the test is over
            try:
                context.wrap_socket(raw, server_side=True).close()
            except OSError:  # (ssl.SSLError too) the client refused our certificate
                raw.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], certs / "ca.pem"
    finally:
        server.shutdown(socket.SHUT_RDWR)  # wakes the accept
        server.close()
        thread.join(10)


def test_an_ip_address_proton_cannot_match_is_one_line_not_a_retry(ip_broker) -> None:
    """proton matches the host only against DNS names (and the CN), not IP addresses: a
    certificate that Python's ssl accepts for 127.0.0.1 was an unexplained "certificate verify
    failed", retried for ever. Now it stops at once saying what to do."""
    port, ca = ip_broker
    url = f"amqps://127.0.0.1:{port}"
    src = AmqpSource([url], "/queue/q", ssl_ca=str(ca))
    with pytest.raises(SourceError) as caught:
        src.open()
    assert str(caught.value).startswith(
        f"{url}: TLS: host name mismatch: 127.0.0.1 is an IP address, and python-qpid-proton "
        "checks the host only against the DNS names in the broker's certificate")
