"""``msgcap send --prop P [--lines] DUMP...``: publish message dumps to the configured destination.

For demos, tests and load (properties.md §13): each dump entry is sent with its headers to
``jms.destination`` on the first reachable ``jms.url`` broker, persistent unless the entry says
otherwise. Text bodies go without ``content-length`` (JMS TextMessage), ``body_b64`` bodies with
it (BytesMessage). The last frame asks for a receipt, so when the command returns the broker has
every message. With ``jms.url=dir:PATH`` each message becomes a ``.msg.json`` file (temporary
name, then rename) that the spool source reads in send order.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

HELP = "publish message dumps to the configured destination"

log = logging.getLogger("msgcap.send")

# Headers the broker sets itself, or that describe a delivery rather than the message.
_NOT_SENT = frozenset(("message-id", "destination", "timestamp", "redelivered", "subscription",
                       "ack", "content-length", "receipt", "transaction", "expires"))
RECEIPT_TIMEOUT = 120.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prop", required=True, metavar="FILE",
                        help="properties file (jms.url, jms.destination, jms.user, ...)")
    parser.add_argument("--lines", action="store_true",
                        help="each line of a DUMP is one message body (no headers)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="send the whole input N times (load tests; default 1)")
    parser.add_argument("dumps", nargs="+", metavar="DUMP",
                        help="JSON Lines dumps (*.jsonl), text-line files with --lines, or one "
                             "message per file; globs and directories in name order")


def run(args: argparse.Namespace) -> int:
    from gendef.logsetup import configure_logging
    from msgcap.dumps import expand_inputs, read_messages
    from props.errors import PropertyError
    from props.settings import load_settings

    settings = load_settings(args.prop)
    configure_logging(settings, command="msgcap send", log_to_file=False)
    if not logging.getLogger("msgcap").isEnabledFor(logging.DEBUG):
        # stomp.py logs each failed attempt itself; the one error line below says it all
        logging.getLogger("stomp.py").setLevel(logging.ERROR)
    jms = settings.jms
    if not jms.url:
        raise PropertyError("required by msgcap send", prop="jms.url")
    paths = expand_inputs(args.dumps)

    def messages() -> Iterable[Any]:
        for _ in range(max(args.repeat, 0)):
            yield from read_messages(paths, lines=args.lines)

    started = time.monotonic()
    if jms.url[0].startswith("dir:"):
        count = send_to_spool(jms.url[0][4:], messages())
        where = jms.url[0]
    else:
        if not jms.destination:
            raise PropertyError("required for a STOMP broker", prop="jms.destination")
        count, where = send_to_broker(settings, messages())
    elapsed = time.monotonic() - started
    rate = count / elapsed if elapsed > 0 else 0.0
    print(f"sent {count} messages to {where} ({rate:,.0f} messages/s)")
    return 0


def frame_of(message: Any) -> tuple[bytes, dict[str, str]]:
    """The body and SEND headers of one dump message."""
    headers = {k: v for k, v in message.headers.items() if k.lower() not in _NOT_SENT}
    headers.setdefault("persistent", "true")
    body = message.body
    if isinstance(body, bytes):
        headers["content-length"] = str(len(body))
        return body, headers
    return body.encode("utf-8"), headers


class _SendListener:
    """Records receipts and ERROR frames (stomp.py's receiver thread only sets events)."""

    def __init__(self) -> None:
        self.receipts: dict[str, threading.Event] = {}
        self.failure: list[str] = []
        self.answered = threading.Event()  # CONNECTED, ERROR or a closed connection

    def on_connected(self, frame: Any) -> None:
        self.answered.set()

    def on_disconnected(self) -> None:
        self.answered.set()

    def on_receipt(self, frame: Any) -> None:
        event = self.receipts.get(frame.headers.get("receipt-id", ""))
        if event is not None:
            event.set()

    def on_error(self, frame: Any) -> None:
        self.failure.append(frame.headers.get("message", "ERROR frame"))
        self.answered.set()
        for event in self.receipts.values():
            event.set()


def send_to_broker(settings: Any, messages: Iterable[Any]) -> tuple[int, str]:
    """Publish over STOMP; returns (count, broker URL)."""
    import stomp
    from stomp.exception import StompException

    from msgcap.sources.stomp import (
        CONNECT_TIMEOUT,
        parse_urls,
        quiet_disconnect,
        set_tls,
        tls_failure,
    )
    from msgcap.sources.tls import tls_files
    from props.errors import SourceError

    jms = settings.jms
    endpoints = parse_urls(jms.url)
    tls = (tls_files(jms.ssl_ca, jms.ssl_cert, jms.ssl_key, url=",".join(jms.url))
           if any(e.tls for e in endpoints) else None)
    errors: list[str] = []
    for endpoint in endpoints:
        listener = _SendListener()
        receipts, failure = listener.receipts, listener.failure
        conn = stomp.Connection12([(endpoint.host, endpoint.port)], auto_decode=False,
                                  auto_content_length=False, heartbeats=(0, 0),
                                  reconnect_attempts_max=1, try_loopback_connect=False,
                                  timeout=CONNECT_TIMEOUT)
        if endpoint.tls and tls is not None:
            set_tls(conn, endpoint, tls)
        conn.set_listener("send", listener)
        reason = None
        try:
            # not stomp.py's wait=True: it has no deadline, and can miss a TLS connection that
            # the broker closes (a client certificate refused after the handshake)
            conn.connect(jms.user, jms.password, wait=False)
            if not listener.answered.wait(CONNECT_TIMEOUT):
                reason = "no CONNECTED frame in time"
            elif failure or not conn.is_connected():
                reason = failure[0] if failure else "connection closed"
        except (StompException, OSError) as exc:
            reason = failure[0] if failure else (str(exc) or type(exc).__name__)
        if reason is not None:
            quiet_disconnect(conn)
            if endpoint.tls and tls is not None and not failure:
                reason = tls_failure(endpoint, tls, reason)  # raises for a certificate problem
            errors.append(f"{endpoint.url}: {reason}")
            continue
        count = 0
        try:
            pending: tuple[bytes, dict[str, str]] | None = None
            for message in messages:
                if pending is not None:
                    conn.send(jms.destination, pending[0], headers=pending[1])
                    count += 1
                pending = frame_of(message)
            if pending is not None:  # the last one with a receipt: all earlier are in, too
                receipt = f"send-{count}"
                receipts[receipt] = threading.Event()
                conn.send(jms.destination, pending[0], headers={**pending[1],
                                                                "receipt": receipt})
                count += 1
                if not receipts[receipt].wait(RECEIPT_TIMEOUT) or failure:
                    raise SourceError("the broker did not confirm the messages: "
                                      + (failure[0] if failure else "no receipt"),
                                      url=endpoint.url)
        except (StompException, OSError) as exc:
            raise SourceError(f"sending failed after {count} messages: {exc}",
                              url=endpoint.url) from None
        finally:
            try:
                conn.disconnect()
            except (StompException, OSError):
                pass
        return count, f"{endpoint.url} {jms.destination}"
    raise SourceError("no broker reachable: " + "; ".join(errors), url=",".join(jms.url))


def send_to_spool(path: str, messages: Iterable[Any]) -> int:
    """Write ``.msg.json`` files named so that name order is send order."""
    from msgcap.dumps import entry

    os.makedirs(path, exist_ok=True)
    stamp = time.time_ns() // 1000
    count = 0
    for message in messages:
        name = f"{stamp:017d}-{count:09d}.msg.json"
        tmp = os.path.join(path, f".{name}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(entry(message), fh, ensure_ascii=False)
        os.replace(tmp, os.path.join(path, name))
        count += 1
    return count
