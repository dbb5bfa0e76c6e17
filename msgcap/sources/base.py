"""The one interface every live message source offers to the capture loop.

A source delivers ``Message(id, headers, body)`` objects in order and learns, through ``ack``, how
far the trail has got:

* ``receive_many(timeout)`` returns the messages that are ready, in order, or none when none
  arrived in time (the loop uses that to end a commit group); ``receive`` returns one. They raise
  ``Redelivery`` when the connection was lost (later calls reconnect): every message not yet
  acknowledged will be delivered again, so the loop must drop whatever is not durable (the open
  transaction, the messages it was holding). They raise ``Unreadable`` for a message that cannot
  be read as one (for ``error.policy``).
* ``ack(done, discarded)`` says these messages are durable (in the trail, the discard file or the
  capture's spill journal): the source may forget them for good. It sets ``message.ack`` to None
  and skips messages whose handle is None, so a message is never acknowledged twice.
* ``interrupt()`` may be called from a signal handler: waits (back-off, polling) end early.
* ``connection`` says where the connection stands (``ConnectionState``): ``msgcap status``, the
  heartbeat line, ``/health`` and ``/metrics`` read it, from other threads too, so a source
  replaces it (``_connection_is``), never changes it. Every protocol words its failures alike
  (``failure_words``: "connection refused", "host not found", ...).

``Message.ack`` is the source's own opaque handle; ``Message.id`` the source's raw id (the capture
applies ``jms.id`` to it).
"""

from __future__ import annotations

import errno
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol, Self

from msgcap.trail.julian import unix_us_to_iso
from parsers.model import Message
from props.errors import MessageError

# What a message's headers may add to ``jms.maxbytes``: the header section of a STOMP frame, the
# headers and keys of a dump entry. More is refused, whatever the body's size.
HEADER_BYTES = 1 << 20


# The header of a message msgcap could not capture whose body is kept in another form (an AMQP
# message's encoded body sections, a JMS MapMessage as JSON ...), or as it came.
BODY_KIND = "msgcap-body-kind"


def too_large(size: int, limit: int, *, source: str | None = None,
              at_least: bool = False) -> MessageError:
    """The message error of a body over ``jms.maxbytes`` (``at_least``: reading stopped after
    ``size`` bytes, there was more). Every source words it this way; ``position`` names the
    property, as ``xml.maxbytes`` does."""
    more = "more than " if at_least else ""
    return MessageError(f"message of {more}{size} bytes exceeds jms.maxbytes={limit}",
                        source=source, position="jms.maxbytes")


def entry_too_long(size: int, limit: int, *, source: str | None = None,
                   at_least: bool = False) -> MessageError:
    """The message error of a dump entry longer than ``entry_bytes(limit)``: whatever its
    body, it cannot be read without holding more than the limit allows."""
    more = "more than " if at_least else ""
    return MessageError(f"dump entry of {more}{size} bytes is longer than one whose message is "
                        f"within jms.maxbytes={limit} can be", source=source,
                        position="jms.maxbytes")


def body_size(body: str | bytes) -> int:
    """The size ``jms.maxbytes`` counts: the bytes, or a text body's UTF-8 encoding."""
    return len(body) if isinstance(body, bytes) else len(body.encode("utf-8", "surrogatepass"))


def text_charset(content_type: str | None) -> str | None:
    """The character set of a ``text/*`` content type (UTF-8 when it names none, as STOMP 1.2
    says), None for any other type or none at all."""
    if content_type is None:
        return None
    kind, _, params = content_type.partition(";")
    if not kind.strip().lower().startswith("text/"):
        return None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"


def entry_bytes(limit: int) -> int:
    """The longest dump entry (a JSON Lines line, a ``.msg.json`` file) whose body can be within
    ``limit``: a JSON escape takes up to 6 bytes per body byte (``\\u0000``), plus headers."""
    return 6 * limit + HEADER_BYTES


CONNECTING, CONNECTED, DISCONNECTED = "connecting", "connected", "disconnected"
STATES = (CONNECTING, CONNECTED, DISCONNECTED)


@dataclass(frozen=True, slots=True)
class ConnectionState:
    """Where a source's connection stands: ``connecting`` (not connected yet in this run),
    ``connected``, or ``disconnected`` (lost, and being tried again; or closed); ``since_us``:
    when it entered that state (Unix time, µs); ``error``: the latest failure in words while
    not connected. While a broker stays away the state and its time stay those of the loss
    (or the start), and the error follows each failed attempt."""

    state: str
    since_us: int
    error: str | None = None

    @property
    def since(self) -> str:
        """``since_us`` as ISO-8601 UTC (``2026-11-26T05:12:40.123456Z``), as status shows times."""
        return unix_us_to_iso(self.since_us)

    def as_dict(self) -> dict[str, Any]:
        """The shape of the status file and of ``status --json``."""
        return {"state": self.state, "since": self.since, "error": self.error}

    def text(self) -> str:
        """For people: ``disconnected since 2026-11-26 05:12:40 UTC, last error: connection
        refused``."""
        when = datetime.fromtimestamp(self.since_us / 1e6, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return state_text(self.state, when, self.error)


def state_text(state: str, when: str, error: str | None, age: float | None = None) -> str:
    """``ConnectionState.text``, also of a state read back from the status file (``age``:
    seconds since ``when``, shown when given)."""
    ago = f" ({age:.3f} s ago)" if age is not None else ""
    return f"{state} since {when}{ago}" + (f", last error: {error}" if error else "")


def failure_words(exc: OSError) -> str:
    """What a failed connection means, in the words of ``ping`` and ``ssh``: "connection
    refused" (nothing listens there), "host not found", "no route to host", "timed out"."""
    if isinstance(exc, socket.gaierror):
        if exc.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)):
            return "host not found"
        return f"host not found ({exc.strerror or exc})"
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset by the broker"
    if exc.errno == errno.EHOSTUNREACH:
        return "no route to host"
    if exc.errno == errno.ENETUNREACH:
        return "network unreachable"
    return (exc.strerror or str(exc) or type(exc).__name__).lower()


def unreachable(host: str, port: int, timeout: float) -> str | None:
    """Why a TCP connection to ``host:port`` fails (``failure_words``), None when it works: for
    a client library that reports a failed connection without its reason."""
    try:
        socket.create_connection((host, port), timeout).close()
    except OSError as exc:
        return failure_words(exc)
    return None


def duration_text(seconds: float) -> str:
    """``0.3 s`` below 10 s, else whole seconds (``312 s``)."""
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


@dataclass(frozen=True, slots=True)
class QueueFacts:
    """What ``msgcap check`` learned of a queue without creating it: whether it exists and how
    many messages wait in it (None: the broker does not tell, ``unknown_because`` says why).
    Its text follows "subscribed to DESTINATION" in the report."""

    exists: bool | None
    messages: int | None
    unknown_because: str = ""

    def __str__(self) -> str:
        count = (None if self.messages is None else
                 f"{self.messages} message{'' if self.messages == 1 else 's'} waiting")
        why = f": {self.unknown_because}" if self.unknown_because else ""
        if self.exists is None:
            if count is None:
                return f"whether it existed and how many messages wait is unknown{why}"
            return f"{count}; whether it existed before is unknown{why}"
        if count is None:
            return f"it exists; how many messages wait is unknown{why}"
        return f"it exists, {count}"


class Redelivery(Exception):
    """The connection was lost: unacknowledged messages will come again once it is back."""


class Unreadable(Exception):
    """Raised by ``receive``: a message arrived but cannot be read as one (a malformed
    ``.msg.json`` spool file). The capture applies ``error.policy`` to it as to a message the
    parser refuses: ``discard`` records and acknowledges it, ``abend`` stops with ``error``."""

    def __init__(self, message: Message, error: MessageError) -> None:
        super().__init__(str(error))
        self.message, self.error = message, error


class Probe(Protocol):
    """A source as ``msgcap check`` looks at it (``source_for(settings, probe=True)``):
    ``probe()`` connects, takes nothing, and says what it reached."""

    url: str

    def probe(self) -> str: ...


class Source(ABC):
    """A live message source: STOMP broker or spool directory."""

    url: str = ""
    # How many consumed messages may wait for durability before the capture should end its commit
    # group (a broker stops delivering at its prefetch limit); None: no limit.
    window: int | None = None
    _state: ConnectionState | None = None

    @property
    def connection(self) -> ConnectionState:
        """Where the connection stands (see the module doc); a source that never says
        otherwise is connected from the first look."""
        if self._state is None:
            self._state = ConnectionState(CONNECTED, time.time_ns() // 1000)
        return self._state

    @property
    def connected(self) -> bool:
        """Whether the source can currently deliver (``/health`` reports 503 when not)."""
        return self.connection.state == CONNECTED

    def _connection_is(self, state: str, error: str | None = None) -> None:
        """Record the connection's state: its time moves only when the state changes, the error
        is the latest failure."""
        current = self._state
        if current is None or current.state != state:
            self._state = ConnectionState(state, time.time_ns() // 1000, error)
        elif current.error != error:
            self._state = replace(current, error=error)

    def cannot_be_idle(self) -> str | None:
        """Why ``--max-idle`` must not end the run as idle now, None when it may: a quiet queue
        is known only through a connection, so a source that never connected in this run is
        not idle (``connecting``, with its last error)."""
        state = self.connection
        if state.state != CONNECTING:
            return None
        return "never connected to the source" + (f" (last error: {state.error})"
                                                  if state.error else "")

    def open(self) -> None:  # noqa: B027 - optional: a source with nothing to prepare
        """Connect / prepare; errors that must stop capture raise ``SourceError``. A source
        that can reconnect may return unconnected (``connected`` False) after a failure that a
        retry may cure: ``receive_many`` tries again."""

    @abstractmethod
    def receive(self, timeout: float) -> Message | None:
        """The next message, ``None`` after ``timeout`` seconds without one."""

    def receive_many(self, timeout: float) -> list[Message]:
        """The messages ready now (a source that reads one at a time: one), none after
        ``timeout`` seconds without one."""
        message = self.receive(timeout)
        return [] if message is None else [message]

    @abstractmethod
    def ack(self, done: Sequence[Message], discarded: Sequence[Message] = ()) -> None:
        """These messages are durable (see the module doc)."""

    def interrupt(self) -> None:  # noqa: B027 - optional: a source that never waits
        """End any wait early; called from another thread than the capture's."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection; unacknowledged messages stay with the broker."""

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
