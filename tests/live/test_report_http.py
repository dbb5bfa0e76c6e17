"""``report.http`` exposure (issue 11): loopback only unless allowed, IPv6 literals, and clients
that go away are not tracebacks."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import urllib.request

import pytest

from msgcap.pipeline import Stats
from msgcap.report import HttpReport
from props.errors import PropertyError
from props.loader import settings_from_text

BASE = "parser.type=delim\ndelim.header=a\ndelim.sourcedefs=x.def\n"


def _http(value: str, *extra: str) -> tuple[str, int] | None:
    return settings_from_text(BASE + "\n".join((f"report.http={value}", *extra)) + "\n",
                              "p.properties").report_http


def test_only_loopback_addresses_unless_remote_access_is_allowed() -> None:
    assert _http("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert _http("localhost:9464") == ("localhost", 9464)
    assert _http("[::1]:9464") == ("::1", 9464)
    for value in ("0.0.0.0:9464", "[::]:9464", "10.1.2.3:9464", "metrics.example.com:9464"):
        with pytest.raises(PropertyError) as caught:
            _http(value)
        assert str(caught.value).startswith("p.properties:4: report.http: ")
        assert "is not a loopback address" in str(caught.value)
        assert "report.http.allowremote=true" in str(caught.value)
    assert _http("0.0.0.0:9464", "report.http.allowremote=true") == ("0.0.0.0", 9464)
    for value, why in (("::1:9464", "write an IPv6 address in brackets"),
                       ("[::1]9464", r"is not \[IPv6-address\]:port"),
                       ("[nope]:1", "is not an IPv6 address"),
                       ("127.0.0.1:70000", "is not host:port")):
        with pytest.raises(PropertyError, match=why):
            _http(value)


def _get(url: str) -> tuple[int, dict]:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, json.loads(r.read())


def test_an_ipv6_literal_serves_health() -> None:
    http = HttpReport(_http("[::1]:0"), Stats(), lambda: (True, True, 0))
    http.start()
    try:
        assert http.url.startswith("http://[::1]:")
        assert _get(http.url + "/health") == (200, {"status": "ok", "capturing": True,
                                                   "connected": True, "messages": 0,
                                                   "transactions": 0})
    finally:
        http.close()


def test_clients_that_disconnect_are_no_tracebacks(capfd) -> None:
    stats = Stats()
    stats.operations = {(f"S.T{i}", "I"): i for i in range(3000)}  # a /metrics of ~250 kB
    http = HttpReport(("127.0.0.1", 0), stats, lambda: (True, True, 0))
    http.start()
    try:
        for _ in range(20):  # ask, then reset the connection instead of reading the answer
            with socket.create_connection(http.address[:2], timeout=30) as s:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        assert _get(f"http://127.0.0.1:{http.address[1]}/health")[0] == 200  # still serving
        deadline = time.monotonic() + 60  # the handlers of the reset connections have ended
        while any("process_request" in t.name for t in threading.enumerate()):
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        http.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err
