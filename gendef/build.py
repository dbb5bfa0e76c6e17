"""The definitions a configuration uses, from its settings (sourcedefs.md §7).

Two views of the same sources:

* ``load_source_definitions`` — as read: a DEFGEN file's offsets kept, user-defined tables in
  their fixed-width message layout (columns end to end). The fixed-width parser lays messages
  out by these.
* ``build_definitions`` — what the trail carries and ``gendef`` / ``trail.defs`` write: the
  fixed-width header table left out, its unused columns leading every table, offsets by the
  slot rule, DEFGEN 4.0 header.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gendef.defgen import read_defs
from gendef.model import UTF8_WIDTH, Definitions, DefsHeader, Table, sized_text
from gendef.userdefs import user_definitions
from props.codepages import code_page
from props.errors import DefinitionError, PropertyError
from props.expr import Const, Field, normalize_field
from props.settings import FixedSettings, ParserCommon, Settings

if TYPE_CHECKING:
    from gendef.copybook import Copybook

log = logging.getLogger(__name__)

# Header fields an item reads when its property is not set (properties.md §3.2).
_DEFAULT_FIELDS = {"optype": "OPTYPE", "timestamp": "TIMESTAMP", "seqid": "ID", "txind": "TXIND"}
_ITEMS = ("optype", "txind", "timestamp", "seqid", "txid", "txname", "txowner", "schema",
          "schemaandtable")


def copybook_schema(parser: FixedSettings) -> str | None:
    """``fixed.schema`` in copybook mode; None: each message's table value names its schema."""
    return parser.schema.text if isinstance(parser.schema, Const) else None


def check_names_known(settings: Settings) -> None:
    """Source definitions name every table; in copybook mode without ``fixed.schema`` the
    schemas come with the messages, so they are not known before the messages are."""
    parser = settings.parser
    if isinstance(parser, FixedSettings) and parser.schematype == "copybook" \
            and copybook_schema(parser) is None:
        raise _error(settings, "fixed.schema",
                     "needed to write source definitions: without it each message's table "
                     "value names its own schema (SCHEMA.RECORD); set it, e.g. "
                     "fixed.schema=${SCHEMA}, once per schema")


def used_header_fields(parser: ParserCommon, header_fields: Iterable[str]) -> frozenset[str]:
    """The header fields some ``<p>.*`` item reads, configured or by its default name.

    Matching is case-insensitive with ``-`` equal to ``_``; the result holds the names as given.
    The other header fields become columns of every table (sourcedefs.md §7.1).
    """
    present = {normalize_field(n): n for n in header_fields}
    wanted: set[str] = set()
    for item in _ITEMS:
        expr = getattr(parser, item)
        if isinstance(expr, Field):
            wanted.add(expr.key)
        elif expr is None and item in _DEFAULT_FIELDS:
            wanted.add(_DEFAULT_FIELDS[item])
    wanted.update(e.key for e in parser.table if isinstance(e, Field))
    if not parser.table and parser.schemaandtable is None:
        if "SCHEMAANDTABLE" in present:
            wanted.add("SCHEMAANDTABLE")
        else:
            wanted.add("TABLE")
            if parser.schema is None:
                wanted.add("SCHEMA")
    return frozenset(name for key, name in present.items() if key in wanted)


def unknown_header_field(name: str, names: Sequence[str], prop: str) -> PropertyError:
    """The error of an item that names a header field the header does not have: one wording
    for gendef, which checks the items before it writes definitions, and the parsers."""
    return PropertyError(f"no header field named {name} (header fields: "
                         f"{', '.join(names) or 'none'})", prop=prop)


def check_header_fields(settings: Settings, parser: FixedSettings, names: Sequence[str]) -> None:
    """Every header field a ``fixed.*`` item names is in the header record (``names``).

    ``run`` refuses an item naming no header field when it builds the parser; definitions are
    built first, and by ``gendef`` alone, so they check it too: a typo such as
    ``fixed.optype=H-OPP`` would otherwise pass and turn the real field into a column of every
    table. (``delim.header`` is a property: the loader checks the ``delim.*`` items against it.)
    """
    prefix = settings.parser_type
    known = {normalize_field(n) for n in names}
    items = [(f"{prefix}.{item}", getattr(parser, item)) for item in _ITEMS]
    items += [(f"{prefix}.table", expr) for expr in parser.table]
    for prop, expr in items:
        if isinstance(expr, Field) and normalize_field(expr.name) not in known:
            error = unknown_header_field(expr.name, names, prop)
            raise _error(settings, prop, error.reason)


def load_source_definitions(settings: Settings) -> Definitions:
    """The parser's definition sources as read (see the module docstring).

    DEFGEN tables come first, then user-defined tables; in copybook mode the copybook's tables.
    """
    parser = settings.parser
    prefix = settings.parser_type
    if isinstance(parser, FixedSettings) and parser.schematype == "copybook":
        return _copybook_definitions(settings, parser)
    users = user_definitions(parser.userdefs, prefix, layout=True)
    defs = Definitions()
    if parser.sourcedefs:
        _check_exists(settings, f"{prefix}.sourcedefs", parser.sourcedefs)
        defs = read_defs(parser.sourcedefs)
    for ut in parser.userdefs:
        if defs.get(ut.name) is not None:
            raise PropertyError(f"user-defined table {ut.name} is also defined in "
                                f"{parser.sourcedefs}", prop=f"{prefix}.userdefs.tables",
                                file=ut.file, line=ut.line or None)
    return Definitions(defs.tables + users.tables, defs.header)


def build_definitions(settings: Settings) -> Definitions:
    """The definitions the parser uses for the trail, normalised as gendef writes them."""
    parser = settings.parser
    copybook = None
    if isinstance(parser, FixedSettings) and parser.schematype == "copybook":
        source = _copybook_definitions(settings, parser)
        tables, copybook = source.tables, source.copybook
    elif isinstance(parser, FixedSettings):
        tables = _fixed_sourcedefs_tables(settings, parser, load_source_definitions(settings))
    else:
        tables = load_source_definitions(settings).tables
    log.debug("definitions for %s: %s", settings.file, ", ".join(t.name for t in tables))
    width = text_width(settings)
    return Definitions(tuple(Table.build(t.name, [sized_text(c, width) for c in t.columns])
                             for t in tables), DefsHeader(), copybook)


def text_width(settings: Settings) -> int:
    """The most UTF-8 bytes a character of the parser's text columns takes in the trail: one
    of ``fixed.encoding``'s characters; any character for the delimited and XML parsers,
    whose text is Unicode (source-definitions.md §6.3)."""
    parser = settings.parser
    if isinstance(parser, FixedSettings):
        return code_page(parser.encoding).utf8_width()
    return UTF8_WIDTH


def shared_copybook(path: str, definitions: Definitions | None, trunc: str = "std"
                    ) -> Copybook:
    """The copybook at ``path`` under ``trunc``: the one ``definitions`` were built from when it
    is that (one compilation per run, shared by gendef's definitions and the parser), else
    compiled."""
    from gendef.copybook import compile_copybook_file

    found = definitions.copybook if definitions is not None else None
    if found is not None and found.file == str(Path(path)) and found.trunc == trunc:
        return found
    return compile_copybook_file(path, trunc)


def _fixed_sourcedefs_tables(settings: Settings, parser: FixedSettings,
                             source: Definitions) -> tuple[Table, ...]:
    """Every table but the header, the header's unused columns first (§7.2)."""
    header = source.get(parser.header) if parser.header else None
    if header is None:
        raise _error(settings, "fixed.header",
                     f"header table {parser.header!r} is not defined in fixed.sourcedefs or "
                     "fixed.userdefs")
    check_header_fields(settings, parser, [c.name for c in header.columns])
    used = used_header_fields(parser, (c.name for c in header.columns))
    lead = [c for c in header.columns if c.name not in used]
    tables = []
    for table in source:
        if table is header:
            continue
        try:
            tables.append(Table.build(table.name, lead + list(table.columns)))
        except DefinitionError as exc:
            raise _error(settings, "fixed.header",
                         f"header {header.name} leads every table with its unused columns, "
                         f"but {exc.reason}") from None
    return tuple(tables)


def _copybook_definitions(settings: Settings, parser: FixedSettings) -> Definitions:
    """Copybook records as tables (§7.1), then any user-defined tables."""
    from gendef.copybook import column_fields, compile_copybook_file, copybook_definitions

    if not parser.copybook:
        raise _error(settings, "fixed.copybook", "required when fixed.schematype=copybook")
    _check_exists(settings, "fixed.copybook", parser.copybook)
    copybook = compile_copybook_file(parser.copybook, parser.trunc)
    header = copybook.record(parser.header) if parser.header else None
    if parser.header and header is None:
        raise _error(settings, "fixed.header",
                     f"header record {parser.header!r} is not an 01 record of "
                     f"{parser.copybook}")
    names = [f.name for f in column_fields(header)] if header is not None else []
    if header is not None:
        check_header_fields(settings, parser, names)
    defs = copybook_definitions(copybook, schema=copybook_schema(parser),
                                header=parser.header or None,
                                used_header_fields=set(used_header_fields(parser, names)))
    users = user_definitions(parser.userdefs, "fixed")
    for ut in parser.userdefs:
        if defs.get(ut.name) is not None:
            raise PropertyError(f"user-defined table {ut.name} is also a copybook record",
                                prop="fixed.userdefs.tables", file=ut.file,
                                line=ut.line or None)
    return Definitions(defs.tables + users.tables, copybook=copybook)


def _check_exists(settings: Settings, prop: str, path: str) -> None:
    """A file property naming nothing: the error names the property and, for a relative path,
    the directory it starts from (the working directory, not the properties file's)."""
    if os.path.lexists(path):
        return
    where = "" if os.path.isabs(path) else (
        f" (relative to the working directory {os.getcwd()}, not to the properties file)")
    raise _error(settings, prop, f"{path}: no such file{where}")


def _error(settings: Settings, prop: str, reason: str) -> PropertyError:
    return PropertyError(reason, prop=prop, file=settings.file,
                         line=settings.lines.get(prop))
