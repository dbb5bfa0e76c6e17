"""TLS for STOMP (``stomp+ssl://``, properties.md §8 ``jms.ssl.*``): settings checked at start, and
the reason a broker's TLS connection fails.

stomp.py wraps the socket itself from file paths; when the handshake fails it logs the reason and
raises a bare ``ConnectFailedException``, and when the broker refuses our client certificate after
a TLS 1.3 handshake, the connection just closes. Neither tells a certificate problem (which no
retry will cure) from a broker that is down. So after a failed TLS connection, ``diagnose`` makes
one TLS connection of its own with the same settings and reads why it fails.
"""

from __future__ import annotations

import os
import re
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass

from msgcap.sources.base import failure_words
from props.errors import SourceError

_SSL_C = re.compile(r"\(?_ssl\.c:\d+\)?:?")
# How long ``diagnose`` waits for the broker's verdict on our certificate after the handshake
# (TLS 1.3 sends a refusal as an alert then); a broker that accepts us is silent until CONNECT.
ALERT_WAIT = 5.0

# OpenSSL X509_V_ERR_* codes of a verification failure, by what the user has to fix.
_VALIDITY = {10: "expired certificate: the broker's certificate has expired",
             9: "certificate not valid yet: the broker's certificate is not valid yet (check the "
                "clocks)"}
_HOST_MISMATCH = {62, 64}  # HOSTNAME_MISMATCH, IP_ADDRESS_MISMATCH
# UNABLE_TO_GET_ISSUER_CERT(_LOCALLY), DEPTH_ZERO_SELF_SIGNED_CERT, SELF_SIGNED_CERT_IN_CHAIN,
# UNABLE_TO_VERIFY_LEAF_SIGNATURE, CERT_SIGNATURE_FAILURE
_UNKNOWN_CA = {2, 7, 18, 19, 20, 21}
# Alerts with which a broker refuses the client certificate (or its absence).
_CLIENT_CERT_ALERTS = {
    "SSLV3_ALERT_BAD_CERTIFICATE": "bad certificate",
    "TLSV13_ALERT_CERTIFICATE_REQUIRED": "certificate required",
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN": "certificate unknown",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED": "certificate expired",
    "SSLV3_ALERT_CERTIFICATE_REVOKED": "certificate revoked",
    "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE": "unsupported certificate",
    "TLSV1_ALERT_UNKNOWN_CA": "unknown CA",
    "TLSV1_ALERT_ACCESS_DENIED": "access denied",
}


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """``jms.ssl.ca`` (or the system bundle), ``jms.ssl.cert`` and ``jms.ssl.key``."""

    ca: str
    cert: str | None = None
    key: str | None = None


@dataclass(frozen=True, slots=True)
class TlsProblem:
    """Why a TLS connection failed; ``permanent``: a certificate problem, retrying cannot help."""

    reason: str
    permanent: bool


def tls_files(ca: str | None, cert: str | None, key: str | None, *, url: str) -> TlsFiles:
    """The files TLS will use, checked now (exists, parses, key matches, not encrypted), so that a
    mistake stops ``msgcap run`` at start and not at the first connection."""
    if ca is None:
        paths = ssl.get_default_verify_paths()
        ca = next((p for p in (paths.cafile, paths.openssl_cafile) if p and os.path.isfile(p)),
                  None)
        if ca is None:
            raise SourceError("TLS needs a CA bundle: set jms.ssl.ca (no system bundle found)",
                              url=url)
    for name, path in (("jms.ssl.ca", ca), ("jms.ssl.cert", cert), ("jms.ssl.key", key)):
        if path is not None and not os.path.isfile(path):
            raise SourceError(f"{name}: no such file {path}", url=url)
    if (cert is None) != (key is None):
        raise SourceError("jms.ssl.cert and jms.ssl.key go together", url=url)
    files = TlsFiles(ca, cert, key)
    client_context(files, url=url)
    return files


class _EncryptedKey(Exception):
    pass


def _no_password() -> str:
    # Called only for an encrypted key: without a callback OpenSSL would prompt on the terminal.
    raise _EncryptedKey


def client_context(files: TlsFiles, *, url: str) -> ssl.SSLContext:
    """The client context stomp.py builds from the same files: the broker's chain and host name
    are verified against ``files.ca``; ``files.cert``/``files.key`` are shown if asked for."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(files.ca)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise SourceError(f"jms.ssl.ca: no CA certificate in {files.ca} "
                          f"({_ssl_text(exc)})", url=url) from None
    if files.cert is not None:
        try:
            context.load_cert_chain(files.cert, files.key, password=_no_password)
        except _EncryptedKey:
            raise SourceError(f"jms.ssl.key: {files.key} is encrypted; msgcap needs the key "
                              "unencrypted (protect it with file permissions)", url=url) from None
        except (ssl.SSLError, OSError, ValueError) as exc:
            what = ("jms.ssl.key does not belong to jms.ssl.cert"
                    if "KEY_VALUES_MISMATCH" in str(exc) else
                    f"jms.ssl.cert/jms.ssl.key: cannot load {files.cert} and {files.key}")
            raise SourceError(f"{what} ({_ssl_text(exc)})", url=url) from None
    return context


def diagnose(host: str, port: int, files: TlsFiles, *, url: str, timeout: float = 10.0,
             speaks_plain: Callable[[socket.socket], bool] | None = None) -> TlsProblem | None:
    """Connect once with ``files`` and say why it fails; None if it does not. A port that does
    not speak TLS is a permanent problem: one that answers the handshake with something else
    than TLS (``WRONG_VERSION_NUMBER``), or that closes it and, asked in plain text, answers
    in the broker's protocol (``speaks_plain``: says whether the socket does)."""
    context = client_context(files, url=url)
    try:
        with socket.create_connection((host, port), timeout) as raw, \
                context.wrap_socket(raw, server_hostname=host) as tls:
            tls.settimeout(ALERT_WAIT)
            try:
                tls.recv(1)
            except TimeoutError:
                return None  # no verdict: the broker accepts us, and waits for CONNECT
    except ssl.SSLCertVerificationError as exc:
        return TlsProblem(_verify_reason(exc, host, files), True)
    except ssl.SSLError as exc:
        alert = _CLIENT_CERT_ALERTS.get(exc.reason or "")
        if alert is None:
            if exc.reason == "WRONG_VERSION_NUMBER" or (
                    speaks_plain is not None and _plain(host, port, speaks_plain, timeout)):
                return TlsProblem(f"TLS failed: port {port} does not speak TLS (the handshake "
                                  f"failed: {_ssl_text(exc)}): use the broker's TLS port, or a "
                                  "URL without TLS", True)
            return TlsProblem(f"TLS failed: {_ssl_text(exc)}", False)
        if files.cert is None:
            return TlsProblem("TLS: the broker requires a client certificate (set jms.ssl.cert "
                              f"and jms.ssl.key); broker alert: {alert}", True)
        return TlsProblem(f"TLS: the broker refused the client certificate {files.cert} "
                          f"(jms.ssl.cert); broker alert: {alert}", True)
    except OSError as exc:  # not reachable, or no TLS on that port (a handshake timeout)
        if (isinstance(exc, TimeoutError) and speaks_plain is not None
                and _plain(host, port, speaks_plain, timeout)):
            return TlsProblem(f"TLS failed: port {port} does not speak TLS (no answer to the "
                              "handshake, an answer in plain text): use the broker's TLS port, "
                              "or a URL without TLS", True)
        return TlsProblem(failure_words(exc), False)
    return None


def _plain(host: str, port: int, speaks_plain: Callable[[socket.socket], bool],
           timeout: float) -> bool:
    """Whether ``host:port`` answers in the broker's protocol without TLS."""
    try:
        with socket.create_connection((host, port), timeout) as sock:
            sock.settimeout(timeout)
            return speaks_plain(sock)
    except OSError:
        return False


def _verify_reason(exc: ssl.SSLCertVerificationError, host: str, files: TlsFiles) -> str:
    code = exc.verify_code
    detail = exc.verify_message or "certificate verify failed"
    if code in _VALIDITY:
        return f"TLS: {_VALIDITY[code]} ({detail})"
    if code in _HOST_MISMATCH:
        return (f"TLS: host name mismatch: the broker's certificate is not valid for {host} "
                f"({detail})")
    if code in _UNKNOWN_CA:
        return (f"TLS: unknown CA: the broker's certificate is not issued by a CA in {files.ca} "
                f"(jms.ssl.ca) ({detail})")
    return f"TLS: the broker's certificate is not accepted ({detail})"


def _ssl_text(exc: BaseException) -> str:
    """An ssl/OS error as one short line, without OpenSSL's ``(_ssl.c:1006)`` suffix."""
    text = _SSL_C.sub("", str(exc)) or type(exc).__name__
    return " ".join(text.split())
