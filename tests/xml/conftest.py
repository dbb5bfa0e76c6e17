"""Shared builders for the XML parser tests: settings from property text, small definitions."""

from __future__ import annotations

import pytest

from gendef.model import (
    Definitions,
    Table,
    char_column,
    datetime_column,
    number_column,
    varchar_column,
)
from parsers.model import Message
from parsers.xml import XmlParser
from props.loader import settings_from_text

HEAD = "parser.type=xml\nxml.sourcedefs=dirdef/test.def\n"


def defs() -> Definitions:
    return Definitions((
        Table.build("MY.TABLE", [varchar_column("KEYCOL", 10, key=True),
                                 varchar_column("COL1", 20)]),
        Table.build("HR.EMP", [number_column("ID", 9, key=True), varchar_column("NAME", 30),
                               number_column("SALARY", 9, 2), char_column("GRADE", 2),
                               datetime_column("HIRED", 10)]),
    ))


def build(props: str, definitions: Definitions | None = None) -> XmlParser:
    """An XmlParser from rule properties (the parser.type/sourcedefs head is added)."""
    settings = settings_from_text(HEAD + props, file="test.properties")
    return XmlParser.build(settings, definitions or defs())


def msg(body: str | bytes, id_: str = "00000000000000000001", **headers: str) -> Message:
    return Message(id=id_, headers=dict(headers), body=body)


@pytest.fixture
def make():
    return build
