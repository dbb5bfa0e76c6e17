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

``Message.ack`` is the source's own opaque handle; ``Message.id`` the source's raw id (the capture
applies ``jms.id`` to it).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Self

from parsers.model import Message
from props.errors import MessageError

# What a message's headers may add to ``jms.maxbytes``: the header section of a STOMP frame, the
# headers and keys of a dump entry. More is refused, whatever the body's size.
HEADER_BYTES = 1 << 20


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


def entry_bytes(limit: int) -> int:
    """The longest dump entry (a JSON Lines line, a ``.msg.json`` file) whose body can be within
    ``limit``: a JSON escape takes up to 6 bytes per body byte (``\\u0000``), plus headers."""
    return 6 * limit + HEADER_BYTES


class Redelivery(Exception):
    """The connection was lost: unacknowledged messages will come again once it is back."""


class Unreadable(Exception):
    """Raised by ``receive``: a message arrived but cannot be read as one (a malformed
    ``.msg.json`` spool file). The capture applies ``error.policy`` to it as to a message the
    parser refuses: ``discard`` records and acknowledges it, ``abend`` stops with ``error``."""

    def __init__(self, message: Message, error: MessageError) -> None:
        super().__init__(str(error))
        self.message, self.error = message, error


class Source(ABC):
    """A live message source: STOMP broker or spool directory."""

    url: str = ""
    # How many consumed messages may wait for durability before the capture should end its commit
    # group (a broker stops delivering at its prefetch limit); None: no limit.
    window: int | None = None

    @property
    def connected(self) -> bool:
        """Whether the source can currently deliver (``/health`` reports 503 when not)."""
        return True

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
        """End any wait early (safe to call from a signal handler)."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection; unacknowledged messages stay with the broker."""

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
