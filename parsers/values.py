"""Value expressions evaluated against a message (properties.md §2.1, §2.2, §3.2, §3.5).

Each expression is compiled once into a getter ``(message, fields) -> value`` where ``fields`` is
the sequence of header-field values of the current record (delim metadata columns, the fixed
header record), indexed through a ``FieldIndex``. ``HeaderItems`` bundles the getters of every
common item with the default sources of §3.2, so the fixed and delimited parsers share them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast, overload

from gendef.build import unknown_header_field
from parsers.model import Message
from parsers.opmap import optype_codes, optype_mapper, txind_codes, txind_mapper
from parsers.timefmt import compile_format
from props.errors import MessageError, PropertyError
from props.expr import (
    Const,
    Expr,
    Field,
    JmsId,
    JmsProp,
    SysSeqid,
    SysTs,
    SysTxid,
)
from props.jmsnames import header_key, header_text
from props.settings import ParserCommon
from props.text import quoted

Fields = Sequence[str | None]
Getter = Callable[[Message, Fields], str | None]

_TIMESTAMP_HEADER = "timestamp"


class FieldIndex:
    """Header-field names → positions, matched case-insensitively (``normalize`` folds names).

    Fixed-width headers pass ``props.expr.normalize_field`` so that ``-`` equals ``_``.
    """

    __slots__ = ("_index", "_normalize", "names")

    def __init__(self, names: Iterable[str],
                 normalize: Callable[[str], str] = str.upper) -> None:
        self.names = tuple(names)
        self._normalize = normalize
        self._index: dict[str, int] = {}
        for i, name in enumerate(self.names):
            self._index.setdefault(normalize(name), i)

    def get(self, name: str) -> int | None:
        return self._index.get(self._normalize(name))

    def __len__(self) -> int:
        """Number of distinct names (fewer than ``names`` when some fold together)."""
        return len(self._index)

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None


def describe(expr: Expr) -> str:
    """How errors name an expression's source."""
    if isinstance(expr, Field):
        return f"field {expr.name}"
    if isinstance(expr, JmsProp):
        return f"${expr.name}"
    if isinstance(expr, JmsId):
        return "$jmsid"
    if isinstance(expr, Const):
        return f'"{expr.text}"'
    return {SysTs: "*ts", SysSeqid: "*seqid", SysTxid: "*txid"}.get(type(expr), repr(expr))


def _field_position(expr: Field, fields: FieldIndex | None, prop: str) -> int:
    i = fields.get(expr.name) if fields is not None else None
    if i is None:
        raise unknown_header_field(expr.name, fields.names if fields is not None else (), prop)
    return i


def compile_value(expr: Expr, fields: FieldIndex | None, *, prop: str,
                  required: bool = False) -> Getter:
    """A getter for a text-valued expression.

    It returns the text, or None for ``*seqid``/``*txid`` (assigned by the assembler) and for
    an absent optional source; an absent ``required`` source is a MessageError.
    """
    if isinstance(expr, (SysSeqid, SysTxid)):
        return lambda message, values: None
    if isinstance(expr, Const):
        text = expr.text
        return lambda message, values: text
    if isinstance(expr, JmsId):
        return lambda message, values: message.id
    if isinstance(expr, Field):
        i = _field_position(expr, fields, prop)
        if not required:
            return lambda message, values: values[i]
        what = f"no value for {prop} ({describe(expr)} is NULL)"

        def field_value(message: Message, values: Fields) -> str:
            value = values[i]
            if value is None:
                raise MessageError(what)
            return value
        return field_value
    if isinstance(expr, JmsProp):
        name = header_key(expr.name)
        if not required:
            return lambda message, values: header_text(message.headers, name)
        what = f"no value for {prop} (header {name} is absent)"

        def prop_value(message: Message, values: Fields) -> str:
            value = header_text(message.headers, name)
            if value is None:
                raise MessageError(what)
            return value
        return prop_value
    raise PropertyError(f"{describe(expr)} is not accepted here", prop=prop)


def compile_timestamp(expr: Expr, fmt: str | None, fields: FieldIndex | None, *,
                      prop: str) -> Callable[[Message, Fields, int], int]:
    """A getter ``(message, fields, now_us) -> µs since the epoch`` for a timestamp item.

    ``*ts`` is the parse time passed in; the ``timestamp`` header is epoch milliseconds and
    ignores the format (§2.2); any other source is text in ``fmt`` (default forms if None).
    """
    if isinstance(expr, SysTs):
        return lambda message, values, now: now
    text_of = compile_value(expr, fields, prop=prop, required=True)
    if isinstance(expr, JmsProp) and header_key(expr.name).lower() == _TIMESTAMP_HEADER:
        def millis(message: Message, values: Fields, now: int) -> int:
            text = text_of(message, values) or ""
            try:
                ms = int(text.strip())
            except ValueError:
                raise MessageError(
                    f"{prop}: header timestamp {quoted(text)} is not epoch milliseconds") from None
            if ms == 0:  # JMS's JMSTimestamp of a message the producer gave none: no time
                raise MessageError(f"no value for {prop} (the message has no JMSTimestamp)")
            return ms * 1000
        return millis
    micros = compile_format(fmt, prop=f"{prop}.format").micros

    def parsed(message: Message, values: Fields, now: int) -> int:
        text = text_of(message, values) or ""
        try:
            return micros(text)
        except MessageError as error:
            raise MessageError(f"{prop} ({describe(expr)}): {error.reason}") from None
    return parsed


@dataclass(frozen=True, slots=True)
class HeaderItems:
    """Compiled getters of the items every operation needs (§3.2), defaults applied.

    ``txind`` is None when no indicator is configured (one transaction per message). ``used``
    holds the header-field positions some item reads (fixed-width outputs the others).
    ``table_field``: the header field the table name is read from when that is its only source
    (a name holding a ``.`` then depends on that field's text alone, so parsers may cache by it).
    ``optype_field``/``optype_codes``: the optype header field and its exact codes, for parsers
    that look the code up inline (anything not in ``optype_codes`` goes through ``optype``).
    ``timestamp_is_now``: ``timestamp`` returns the parse time (``*ts``); ``seqid_is_id``:
    ``seqid`` returns ``message.id`` (``$jmsid``) — so parsers may skip those calls.
    ``timestamp_field``/``timestamp_micros``: the header field the timestamp is read from when
    that is its source, and the ``TimeFormat.micros`` it is read with (a field that is None, or
    text ``micros`` refuses, goes through ``timestamp``, whose errors name the item).
    """

    table: Callable[[Message, Fields], str]
    optype: Callable[[Message, Fields], str]
    timestamp: Callable[[Message, Fields, int], int]
    seqid: Getter
    txid: Getter
    txind: Callable[[Message, Fields], int] | None
    txname: Getter
    txowner: Getter
    used: frozenset[int]
    table_field: int | None = None
    optype_field: int | None = None
    optype_codes: Mapping[str, str] | None = None
    timestamp_is_now: bool = False
    seqid_is_id: bool = False
    timestamp_field: int | None = None
    timestamp_micros: Callable[[str], int] | None = None


@overload
def _default(configured: Expr | None, fields: FieldIndex, name: str, fallback: Expr) -> Expr: ...
@overload
def _default(configured: Expr | None, fields: FieldIndex, name: str,
             fallback: None) -> Expr | None: ...
def _default(configured: Expr | None, fields: FieldIndex, name: str,
             fallback: Expr | None) -> Expr | None:
    if configured is not None:
        return configured
    return Field(name) if name in fields else fallback


def compile_table(common: ParserCommon, fields: FieldIndex, *,
                  prefix: str) -> tuple[Callable[[Message, Fields], str], list[Expr]]:
    """The table-name getter (§3.2, §3.5) and the expressions it reads."""
    table, exprs, _ = _compile_table(common, fields, prefix=prefix)
    return table, exprs


def _compile_table(common: ParserCommon, fields: FieldIndex, *, prefix: str,
                   ) -> tuple[Callable[[Message, Fields], str], list[Expr], int | None]:
    """``compile_table``, plus the header-field position the name is read from when that is its
    one source (else None).

    Precedence: ``<p>.schemaandtable``, ``<p>.table`` (with ``<p>.schema``; for delim, else
    field ``schema``), header field ``schemaandtable``, header field ``table`` (with
    ``<p>.schema`` or field ``schema``). Several table sources are concatenated after trimming
    trailing blanks from each.
    """
    if common.schemaandtable is not None:
        sources, schema = [common.schemaandtable], None
    elif common.table:
        # delim.schema defaults to the field schema (§5); fixed.schema defaults to none (§4)
        sources = list(common.table)
        schema = (_default(common.schema, fields, "schema", None) if prefix == "delim"
                  else common.schema)
    elif "schemaandtable" in fields:
        sources, schema = [Field("schemaandtable")], None
    elif "table" in fields:
        sources = [Field("table")]
        schema = _default(common.schema, fields, "schema", None)
    else:
        raise PropertyError("no table source: set it or name a header field schemaandtable "
                            "or table", prop=f"{prefix}.table")
    prop = f"{prefix}.schemaandtable" if common.schemaandtable is not None else f"{prefix}.table"
    parts = [compile_value(e, fields, prop=prop, required=True) for e in sources]
    schema_of = (compile_value(schema, fields, prop=f"{prefix}.schema")
                 if schema is not None else None)
    exprs = sources + ([schema] if schema is not None else [])

    # the usual single header-field source is read by index (a NULL goes the checked way)
    field_i = (fields.get(sources[0].name)
               if len(sources) == 1 and isinstance(sources[0], Field) else None)

    def table(message: Message, values: Fields) -> str:
        name = values[field_i] if field_i is not None else None
        if name is not None:
            name = name.strip()
        elif len(parts) == 1:
            name = (parts[0](message, values) or "").strip()
        else:
            name = "".join((part(message, values) or "").rstrip() for part in parts).strip()
        if not name:
            raise MessageError(f"{prop}: empty table name")
        if "." in name:
            return name
        owner = schema_of(message, values) if schema_of is not None else None
        owner = owner.strip() if owner else ""
        if not owner:
            raise MessageError(f"table {quoted(name)}: two-part name needed (no schema)")
        return f"{owner}.{name}"
    return table, exprs, field_i


def _coded(expr: Expr, fields: FieldIndex, prop: str, codes: dict[str, Any],
           mapper: Callable[[str], Any]) -> Callable[[Message, Fields], Any]:
    """Optype/txind getter: a header field's exact code by one dict lookup, else the mapper
    (trimming, errors)."""
    # required: never None for the expressions an optype or txind accepts
    text_of = cast("Callable[[Message, Fields], str]",
                   compile_value(expr, fields, prop=prop, required=True))
    if not isinstance(expr, Field):
        return lambda message, values: mapper(text_of(message, values))
    i = _field_position(expr, fields, prop)

    def coded(message: Message, values: Fields) -> Any:
        found = codes.get(values[i])  # type: ignore[arg-type]  # NULL: no code, the mapper says
        return found if found is not None else mapper(text_of(message, values))
    return coded


def compile_items(common: ParserCommon, fields: FieldIndex, *, prefix: str) -> HeaderItems:
    """Compile every common item of a fixed or delimited parser against its header fields."""
    table, table_exprs, table_field = _compile_table(common, fields, prefix=prefix)
    optype_expr = _default(common.optype, fields, "optype", None)
    if optype_expr is None:
        raise PropertyError("no optype source: set it or name a header field optype",
                            prop=f"{prefix}.optype")
    timestamp_expr = _default(common.timestamp, fields, "timestamp", SysTs())
    seqid_expr = _default(common.seqid, fields, "id", JmsId())
    txid_expr = common.txid if common.txid is not None else SysTxid()
    txind_expr = _default(common.txind, fields, "txind", None)

    codes = optype_codes(common.optype_values)
    optype = _coded(optype_expr, fields, f"{prefix}.optype", codes,
                    optype_mapper(common.optype_values))
    optype_field = fields.get(optype_expr.name) if isinstance(optype_expr, Field) else None
    txind = None
    if txind_expr is not None:
        txind = _coded(txind_expr, fields, f"{prefix}.txind",
                       txind_codes(common.txind_values), txind_mapper(common.txind_values))

    def getter(expr: Expr | None, item: str, required: bool) -> Getter:
        if expr is None:
            return lambda message, values: None
        return compile_value(expr, fields, prop=f"{prefix}.{item}", required=required)

    exprs = [*table_exprs, optype_expr, timestamp_expr, seqid_expr, txid_expr, txind_expr,
             common.txname, common.txowner]
    # (a field that is not there fails when its getter is compiled, below)
    positions = (fields.get(e.name) for e in exprs if isinstance(e, Field))
    used = frozenset(i for i in positions if i is not None)
    return HeaderItems(
        table=table,
        optype=optype,
        timestamp=compile_timestamp(timestamp_expr, common.timestamp_format, fields,
                                    prop=f"{prefix}.timestamp"),
        seqid=getter(seqid_expr, "seqid", True),
        txid=getter(txid_expr, "txid", True),
        txind=txind,
        txname=getter(common.txname, "txname", False),
        txowner=getter(common.txowner, "txowner", False),
        used=used,
        table_field=table_field,
        optype_field=optype_field,
        optype_codes=codes if optype_field is not None else None,
        timestamp_is_now=isinstance(timestamp_expr, SysTs),
        seqid_is_id=isinstance(seqid_expr, JmsId),
        timestamp_field=(fields.get(timestamp_expr.name) if isinstance(timestamp_expr, Field)
                         else None),
        timestamp_micros=(compile_format(common.timestamp_format,
                                         prop=f"{prefix}.timestamp.format").micros
                          if isinstance(timestamp_expr, Field) else None),
    )
