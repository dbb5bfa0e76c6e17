"""AMQP 1.0 over TLS: a broker certificate that only proton refuses (an IP address it cannot
match) is one line, not a retry."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from msgcap.sources.amqp import AmqpSource
from props.errors import SourceError
from tests.conftest import REPO


def _certs(factory: pytest.TempPathFactory, san: str) -> Path:
    directory = factory.mktemp("certs")
    subprocess.run(["bash", str(REPO / "scripts" / "test-certs.sh"), str(directory), san],
                   check=True, capture_output=True, timeout=120)
    return directory


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
