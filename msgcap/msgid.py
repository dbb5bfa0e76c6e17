"""Message ids (properties.md §9.1): ``jms.id`` → a function of the message, plus the width rule.

``id_function(mode)`` turns the configured mode into ``Message -> str``; ``MessageIds`` applies it
to every message, keeps ``time`` ids strictly increasing (also across restarts, from the last id
recovered) and stops capture when the id width changes — a message error would let the rest of
the stream be compared as strings of different widths, so that one is never discardable.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable

from parsers.model import Message
from props.errors import MessageError, MsgcapError, PropertyError
from props.jmsnames import header_key, header_text
from props.text import quoted, shown

IdFunction = Callable[[Message], str]

# start (13) + instance (5) + conn (10) + session (10) + producer (10) + seq (16) = 64 digits.
_ACTIVEMQ_WIDTHS = (13, 5, 10, 10, 10, 16)


class IdWidthError(MsgcapError):
    """A message id or seqid whose width differs from the previous one: capture stops, never
    discarded (properties.md §9.1, §14 #19): ids are compared as strings."""

    def located(self, source: str) -> IdWidthError:
        """The same error naming the message."""
        return IdWidthError(f"message {source}: {self}")

    @classmethod
    def between(cls, name: str, previous: str | None, ident: str,
                width: int | None = None) -> IdWidthError:
        """The error for message ``name`` whose id ``ident`` follows ``previous`` (of
        ``width`` characters when only the width is known)."""
        if width is None and previous is not None:
            width = len(previous)
        # (no previous id: only the width was recovered, from a trail of another jms.id mode)
        before = f"previous id {quoted(previous)}, " if previous is not None else ""
        return cls(f"message {name}: id width changed from {width} to {len(ident)} "
                   f"({before}new id {quoted(ident)}); jms.id ids must be fixed-width")


def id_function(mode: str) -> IdFunction:
    """The id function of a ``jms.id`` value (``time`` is stateful: see ``MessageIds``)."""
    low = mode.strip().lower()
    if low == "wmq":
        raise PropertyError("WebSphere MQ ids are not available over STOMP; "
                            "use a header or module:function", prop="jms.id")
    if low == "activemq":
        return activemq_message_id
    if low == "time":
        raise PropertyError("time ids need MessageIds (they must increase)", prop="jms.id")
    if ":" in mode:
        return _callable_id(mode.strip())
    header = id_header(mode)
    if header is None:
        raise PropertyError("empty value", prop="jms.id")
    return _header_id(header)


def id_header(mode: str) -> str | None:
    """The header (JMS property) a ``jms.id`` value takes the id from (``ogg``: ``GG_ID``); None
    for an id made otherwise (``time``, ``activemq``, ``wmq``, ``module:function``) or none."""
    name = mode.strip()
    low = name.lower()
    if low == "ogg":
        return "GG_ID"
    if not name or low in ("time", "activemq", "wmq") or ":" in name:
        return None
    return name


def header_value(message: Message, name: str, *, jms_default: bool = True) -> str | None:
    """A JMS header field or property by name (the table of ``props.jmsnames``); dumps and
    spool files carry the source id outside the headers. ``jms_default``: JMS's value for a
    field the transport left out (``JMSTimestamp`` 0...), else no value."""
    key = header_key(name)
    value = header_text(message.headers, key, jms_default=jms_default)
    if value is None and key == "message-id":
        return message.id or None  # no id at all: JMSMessageID is null
    return value


def _header_id(name: str) -> IdFunction:
    def from_header(message: Message) -> str:
        value = header_value(message, name, jms_default=False)  # 0 for all is no id
        if value is None:
            raise MessageError(f"no header {name} for the message id (jms.id)",
                               source=message.name)
        return value
    return from_header


def _callable_id(spec: str) -> IdFunction:
    module_name, _, func_name = spec.partition(":")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
    except (ImportError, AttributeError) as exc:
        raise PropertyError(f"cannot load {spec}: {exc}", prop="jms.id") from None
    if not callable(func):
        raise PropertyError(f"{spec} is not callable", prop="jms.id")

    def from_callable(message: Message) -> str:
        try:
            value = func(message)
        except Exception as exc:  # noqa: BLE001 - user code: its failure is the message's error
            raise MessageError(f"{spec} failed: {exc!r}", source=message.name) from None
        if not isinstance(value, str) or not value:
            raise MessageError(f"{spec} returned {shown(repr(value))}, not a non-empty string",
                               source=message.name)
        return value
    return from_callable


def activemq_message_id(message: Message) -> str:
    """The ActiveMQ id ``ID:host-port-start-instance:conn:session:producer:seq`` as 64 digits."""
    raw = header_value(message, "JMSMessageID") or ""
    try:
        return activemq_digits(raw)
    except ValueError as exc:
        raise MessageError(str(exc), source=message.name, position="jms.id=activemq") from None


def activemq_digits(raw: str) -> str:
    """Reformat an ActiveMQ message id (parsed from the right; missing leading numbers are 0).

    A part ``-1`` (ActiveMQ's session of a message published over STOMP) counts as 0; any other
    negative or non-numeric part is an error.
    """
    if not raw.startswith("ID:"):
        raise ValueError(f"{quoted(raw)} is not an ActiveMQ message id")
    head, *colon = raw[3:].split(":")
    # -1 is what ActiveMQ gives the session (and producer) of a STOMP client: read as 0
    colon = ["0" if p == "-1" else p for p in colon]
    if len(colon) > 4 or not all(p.isdigit() for p in colon):
        raise ValueError(f"{quoted(raw)}: expected :conn:session:producer:seq numbers")
    dashed = head.split("-")
    # host-port-start-instance: host may contain '-', so take numbers from the right.
    tail: list[str] = []
    for part in reversed(dashed[1:]):
        if not part.isdigit() or len(tail) == 3:
            break
        tail.insert(0, part)
    start_instance = tail[-2:] if len(tail) >= 2 else tail
    numbers = ["0"] * (2 - len(start_instance)) + start_instance
    numbers += ["0"] * (4 - len(colon)) + colon
    out = []
    for value, width in zip(numbers, _ACTIVEMQ_WIDTHS, strict=True):
        digits = value.lstrip("0") or "0"
        if len(digits) > width:
            raise ValueError(f"{quoted(raw)}: part {value} does not fit in {width} digits")
        out.append(digits.zfill(width))
    return "".join(out)


class MessageIds:
    """Assigns ``$jmsid`` to messages: the configured function, fixed width, ``time`` increasing.

    ``last_id`` is the id recovered at start (checkpoint or trail); it fixes the width and, for
    ``time``, the value the next id must exceed. ``clock`` returns nanoseconds (tests pass a fake).
    """

    __slots__ = ("_clock", "_func", "_last", "_last_us", "_width", "mode")

    def __init__(self, mode: str = "time", last_id: str | None = None,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self.mode = mode.strip()
        self._clock = clock
        self._func = None if self.mode.lower() == "time" else id_function(self.mode)
        self._last = last_id
        self._width = len(last_id) if last_id else None
        if self._func is None and last_id is not None and not (
                len(last_id) == 20 and last_id.isdigit()):
            self._last, self._width = None, 20  # recovered id of another mode: width only
        # time mode: the last id as a number, so the next one is compared without parsing
        self._last_us = int(self._last) if self._func is None and self._last else -1

    @property
    def last(self) -> str | None:
        return self._last

    def next_id(self, message: Message) -> str:
        """The id of this message; raises MessageError (discardable) or IdWidthError (fatal)."""
        if self._func is None:
            now = self._clock() // 1000
            if now <= self._last_us:
                now = self._last_us + 1
            ident = str(now).zfill(20)  # f"{now:020d}", faster
            if len(ident) != self._width:
                self._check_width(message, ident)
            self._last_us = now
        else:
            ident = self._func(message)
            if len(ident) != self._width:
                self._check_width(message, ident)
        self._last = ident
        return ident

    def _check_width(self, message: Message, ident: str) -> None:
        """The first id fixes the width; a later one of another width is fatal."""
        if self._width is not None:
            raise IdWidthError.between(message.name, self._last, ident, self._width)
        self._width = len(ident)
