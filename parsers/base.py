"""The parser interface and the factory that picks a parser by ``parser.type``.

A parser is built once from settings + definitions and then is a pure function of a message.
Compiled pieces (regexes, lxml XPath objects) may not pickle, so every parser pickles as its
inputs and is rebuilt on the other side (Spark tasks).
"""

from __future__ import annotations

from importlib import import_module
from typing import Protocol, runtime_checkable

from gendef.model import Definitions
from parsers.model import Message, Op
from props.errors import PropertyError
from props.settings import Settings

# parser.type → (module, class); the class is built as ``cls(settings, definitions)``.
_PARSERS = {
    "fixed": ("parsers.fixed", "FixedParser"),
    "delim": ("parsers.delim", "DelimParser"),
    "xml": ("parsers.xml", "XmlParser"),
}


@runtime_checkable
class Parser(Protocol):
    """Turns one message into its operations; raises MessageError for a bad message."""

    def parse(self, message: Message) -> list[Op]: ...


class ParserBase:
    """Keeps the build inputs so that the parser pickles as ``(class, (settings, defs))``."""

    def __init__(self, settings: Settings, definitions: Definitions) -> None:
        self.settings = settings
        self.definitions = definitions

    def __reduce__(self):
        return (type(self), (self.settings, self.definitions))

    def parse(self, message: Message) -> list[Op]:
        raise NotImplementedError


def build_parser(settings: Settings, definitions: Definitions) -> Parser:
    """The parser of ``settings.parser_type`` (its module imported only when selected)."""
    found = _PARSERS.get(settings.parser_type)
    if found is None:
        raise PropertyError(f"unknown parser type {settings.parser_type!r}", prop="parser.type")
    module, cls = found
    return getattr(import_module(module), cls)(settings, definitions)
