"""The parser interface, the plan every parser runs over, and the factory by ``parser.type``.

A parser is two things (the plan contract):

* a **plan**: a picklable, file-free value holding everything compiled from the properties and
  the definitions (record layouts, DEFGEN tables, rule sources, converters' parameters). It is
  made once, where the files are (``Parser.compile_plan(settings, definitions)``: the only step
  that may read a copybook or a DEFGEN file);
* a **runtime** built from the plan alone (``Parser(plan)``), a pure function of a message.

A parser pickles as ``(its class, (its plan,))``, so a Spark task rebuilds the runtime from the
plan without the properties file, the copybook, the DEFGEN files or the driver's working
directory. Compiled pieces that do not pickle (lxml XPath objects, generated converters) are made
again from the plan on the other side.
"""

from __future__ import annotations

from importlib import import_module
from typing import Generic, Protocol, Self, TypeVar, runtime_checkable

from gendef.model import Definitions
from parsers.model import Message, Op
from props.errors import PropertyError
from props.settings import Settings

# parser.type → (module, class)
_PARSERS = {
    "fixed": ("parsers.fixed", "FixedParser"),
    "delim": ("parsers.delim", "DelimParser"),
    "xml": ("parsers.xml", "XmlParser"),
}


@runtime_checkable
class Parser(Protocol):
    """Turns one message into its operations; raises MessageError for a bad message."""

    def parse(self, message: Message) -> list[Op]: ...


PlanT = TypeVar("PlanT")  # a parser's plan: FixedPlan, DelimPlan, XmlPlan


class ParserBase(Generic[PlanT]):
    """A runtime over ``plan``; subclasses compile the plan in ``compile_plan`` and build their
    runtime from it in ``__init__`` (after calling this one)."""

    def __init__(self, plan: PlanT) -> None:
        self.plan = plan

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.plan,))

    @classmethod
    def compile_plan(cls, settings: Settings, definitions: Definitions) -> PlanT:
        """The plan of this parser for ``settings`` (reads any file the settings name)."""
        raise NotImplementedError

    @classmethod
    def build(cls, settings: Settings, definitions: Definitions) -> Self:
        """The parser of ``settings``: its plan compiled, then its runtime."""
        return cls(cls.compile_plan(settings, definitions))

    def parse(self, message: Message) -> list[Op]:
        raise NotImplementedError


def build_parser(settings: Settings, definitions: Definitions) -> Parser:
    """The parser of ``settings.parser_type`` (its module imported only when selected)."""
    found = _PARSERS.get(settings.parser_type)
    if found is None:
        raise PropertyError(f"unknown parser type {settings.parser_type!r}", prop="parser.type")
    module, cls = found
    return getattr(import_module(module), cls).build(settings, definitions)
