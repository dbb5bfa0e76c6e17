"""The delimited parser (properties.md §5): records of metadata columns, then column values.

``Dialect`` is the compiled splitting rule set (§5.1), validated when the parser is built, like a
``csv`` dialect. A body with no quote and no delimiter-like escape is split with ``str.split``,
a quoted body of the classic form (one-character delimiter and quote, doubled-quote escape) by
``csv.reader`` when that reads it exactly as §5.1 does, anything else by one compiled tokenizer
regex; all three agree (property tests). ``DelimParser`` turns each record into
an ``Op``: header items through ``parsers.values``, column text through per-table converters
compiled on first use of the table (§2.5), images per optype and ``hasbefores`` (§5.2, §3.6).
"""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

from gendef.model import Definitions, Table
from parsers.base import ParserBase
from parsers.convert import Converter, RowConverter, build_converter, compile_row
from parsers.model import DELETE, INSERT, MISSING, TRUNCATE, Message, Op
from parsers.timefmt import TimeFormat, compile_format
from parsers.values import FieldIndex, compile_items
from props.errors import MessageError, PropertyError
from props.expr import SysSeqid, SysTs, SysTxid
from props.settings import DelimSettings, Settings

Record = list[str | None]


def _char_class(chars: set[str]) -> str:
    return "".join(re.escape(c) for c in sorted(chars))


class Dialect:
    """Field/line delimiters, quote, NULL indicator and the four escapes of §5.1, compiled."""

    __slots__ = (
        "_always_scan",
        "_csv_args",
        "_csv_doubled",
        "_csv_escapes",
        "_csv_feed",
        "_csv_reader",
        "_escape_re",
        "_escapes",
        "_plain_escapes",
        "_quoted_null",
        "_scan_escapes",
        "_scan_unquoted",
        "_token",
        "crlf",
        "fielddelim",
        "linedelim",
        "nullindicator",
        "one_line",
        "quote",
    )

    def __init__(self, fielddelim: str = ",", linedelim: str = "\n", quote: str = '"',
                 nullindicator: str | None = None, *, fielddelim_escaped: str | None = None,
                 linedelim_escaped: str | None = None, quote_escaped: str | None = None,
                 nullindicator_escaped: str | None = None) -> None:
        for prop, value in (("delim.fielddelim", fielddelim), ("delim.linedelim", linedelim),
                            ("delim.quote", quote)):
            if not value:
                raise PropertyError("empty value", prop=prop)
        if fielddelim == linedelim:
            raise PropertyError("field and line delimiters are the same",
                                prop="delim.fielddelim")
        if nullindicator_escaped is not None and nullindicator is None:
            raise PropertyError("needs delim.nullindicator", prop="delim.nullindicator.escaped")
        self.fielddelim, self.linedelim, self.quote = fielddelim, linedelim, quote
        self.nullindicator = nullindicator
        self.crlf = linedelim == "\n"
        escapes: dict[str, str] = {}
        for prop, seq, meaning in (
                ("delim.fielddelim.escaped", fielddelim_escaped, fielddelim),
                ("delim.linedelim.escaped", linedelim_escaped, linedelim),
                ("delim.quote.escaped", quote_escaped or quote * 2, quote),
                ("delim.nullindicator.escaped", nullindicator_escaped, nullindicator)):
            if seq is None or meaning is None:  # (no nullindicator: no escaped one, above)
                continue
            if not seq:
                raise PropertyError("empty value", prop=prop)
            if escapes.setdefault(seq, meaning) != meaning:
                raise PropertyError(f"{seq!r} already stands for another character", prop=prop)
        self._escapes = escapes
        ordered = sorted(escapes, key=len, reverse=True)
        alternation = "|".join(re.escape(seq) for seq in ordered)
        self._escape_re = re.compile(alternation)
        # Escapes that share a character with a delimiter or the quote could be cut by
        # str.split: a body holding one of them takes the tokenizer.
        delimiter_chars = set(fielddelim) | set(linedelim) | set(quote)
        self._scan_escapes = tuple(s for s in ordered if set(s) & delimiter_chars)
        self._plain_escapes = tuple(s for s in ordered if s not in self._scan_escapes)
        # those a body without the quote may still hold
        self._scan_unquoted = tuple(s for s in self._scan_escapes if quote not in s)
        self._always_scan = linedelim in fielddelim
        # csv.reader (C speed) reads quoted bodies of the classic form (see _csv_rows)
        classic = (len(fielddelim) == 1 and len(quote) == 1 and linedelim == "\n"
                   and quote_escaped in (None, quote * 2) and fielddelim != quote
                   and "\r" not in fielddelim + quote)
        self._quoted_null = f"{quote}{nullindicator}{quote}" if nullindicator else None
        # csv unescapes a doubled quote inside a quoted value as §5.1 does. It reads one
        # otherwise only in an unquoted value, where it keeps both quotes (a value holding a
        # doubled quote goes to the tokenizer, see _csv_valid), and in an empty quoted value,
        # which it cannot tell from an empty unquoted one: the NULL without an indicator.
        self._csv_doubled = quote * 2 if classic and nullindicator else None
        # the escapes that send a quoted body to the tokenizer
        self._csv_escapes = tuple(s for s in self._scan_escapes if s != self._csv_doubled)
        self._csv_args: dict[str, Any] | None = (
            {"delimiter": fielddelim, "quotechar": quote, "doublequote": True, "strict": True}
            if classic else None)
        self._token = self._tokenizer(ordered)
        # one-line quoted bodies: one csv.reader kept, fed a line at a time (see _csv_line)
        self._csv_feed: list[str] = []
        self._csv_reader = self._line_reader()
        # one_line(body): the values of a one-record body (no line delimiter but an optional
        # final one) that ``str.split`` or ``csv.reader`` reads (a message per record, the
        # common case), the same ``split`` returns as its one record; None: use ``split``.
        self.one_line = self._one_line_function()

    def _tokenizer(self, escapes: list[str]) -> re.Pattern[str]:
        """One value and the separator after it: quoted, or unquoted up to a delimiter."""
        esc = "|".join(re.escape(s) for s in escapes)
        q = re.escape(self.quote)
        fd = re.escape(self.fielddelim)
        ld = r"\r?\n" if self.crlf else re.escape(self.linedelim)
        firsts = {s[0] for s in escapes}
        quoted = (f"(?:[^{_char_class(firsts | {self.quote[0]})}]++|{esc}|(?!{q})[\\s\\S])*+")
        stops = firsts | {self.fielddelim[0], self.linedelim[0]} | ({"\r"} if self.crlf else set())
        seps = sorted([(fd, len(self.fielddelim)), (ld, len(self.linedelim))],
                      key=lambda pair: -pair[1])
        stop = "|".join(s for s, _ in seps)
        unquoted = f"(?:[^{_char_class(stops)}]++|{esc}|(?!{stop})[\\s\\S])*+"
        return re.compile(f"(?:{q}(?P<q>{quoted}){q}|(?P<u>{unquoted}))(?P<sep>{stop}|\\Z)")

    @classmethod
    def from_settings(cls, d: DelimSettings) -> Dialect:
        return cls(d.fielddelim, d.linedelim, d.quote, d.nullindicator,
                   fielddelim_escaped=d.fielddelim_escaped, linedelim_escaped=d.linedelim_escaped,
                   quote_escaped=d.quote_escaped, nullindicator_escaped=d.nullindicator_escaped)

    def _unescaper(self, body: str, candidates: Iterable[str]) -> Callable[[str], str] | None:
        """Replaces the escapes that occur in ``body`` (None when none does)."""
        present = [seq for seq in candidates if seq in body]
        if not present:
            return None
        if len(present) == 1:
            seq, meaning = present[0], self._escapes[present[0]]
            return lambda value: value.replace(seq, meaning)
        escapes, sub = self._escapes, self._escape_re.sub

        def unescape(value: str) -> str:
            return sub(lambda m: escapes[m.group()], value)
        return unescape

    def _one_line_function(self) -> Callable[[str], Record | None]:
        """``one_line`` with the dialect's settings bound once."""
        linedelim, quote, fielddelim, crlf = self.linedelim, self.quote, self.fielddelim, self.crlf
        scan_escapes, scan_unquoted = self._scan_escapes, self._scan_unquoted
        csv_escapes = self._csv_escapes
        plain, unescaper, csv_line = self._plain_escapes, self._unescaper, self._csv_line
        null = "" if self.nullindicator is None else self.nullindicator
        if self._always_scan:
            return lambda body: None
        # a final line delimiter is cut off, unless it could be part of a quote or an escape
        cut_final = not (set(linedelim) & set(quote)) and not any(
            set(linedelim) & set(seq) for seq in scan_escapes)
        end = len(linedelim)

        def one_line(body: str) -> Record | None:
            line = body
            at = body.find(linedelim)
            if at >= 0:  # only a final one, as a message of one record ends
                if not cut_final or at != len(body) - end:
                    return None
                line = body[:at]
                if crlf and line.endswith("\r"):
                    return None
            if not line:
                return None
            if quote in line:
                for seq in csv_escapes:
                    if seq in line:
                        return None
                values: Record | None = csv_line(line)
                if values is None:
                    return None
            else:
                for seq in scan_unquoted:
                    if seq in line:
                        return None
                values = cast(Record, line.split(fielddelim))
            if null in line if null else True:  # the text first: C speed
                values = _nulls(values, null)
            if plain:
                unescape = unescaper(line, plain)
                if unescape is not None:
                    values = [unescape(v) if v is not None else None for v in values]
            return values
        return one_line

    def _line_reader(self) -> Any:
        """A csv.reader over ``_csv_feed`` (None without the classic form)."""
        if self._csv_args is None:
            return None
        return csv.reader(iter(self._csv_feed.pop, None), **self._csv_args)

    def _csv_line(self, body: str) -> Record | None:
        """``_csv_rows`` of a one-line body, by the kept reader: no reader built per message.

        A line csv cannot finish (an open quote asks for the next line: the empty feed raises
        IndexError) or rejects leaves the reader mid-record, so it is replaced. The feed is
        shared state: a dialect (like the parser holding it) serves one thread at a time.
        """
        reader, quoted_null = self._csv_reader, self._quoted_null
        if reader is None or "\r" in body or (quoted_null and quoted_null in body):
            return None
        self._csv_feed.append(body)
        try:
            values: Record = next(reader)
        except (csv.Error, IndexError, StopIteration):
            self._csv_feed.clear()
            self._csv_reader = self._line_reader()
            return None
        doubled = self._csv_doubled
        if doubled is not None and doubled in body and not _csv_valid([values], doubled):
            return None
        return values

    def split(self, body: str) -> list[Record]:
        """Records of values: NULL as None, escapes replaced. An empty record is ``[]``."""
        if self._always_scan:
            return self._scan(body)
        for seq in self._csv_escapes:  # (the doubled quote: csv tells, _csv_rows)
            if seq in body:
                return self._scan(body)
        if self.quote in body:
            rows = self._csv_rows(body)
            if rows is None:
                return self._scan(body)
        else:
            lines = body.split(self.linedelim)
            last = lines.pop()  # after the final line delimiter, which is optional
            if self.crlf and "\r" in body:
                lines = [line.removesuffix("\r") for line in lines]
            if last:
                lines.append(last)  # no line delimiter follows it: a \r there is data
            fd = self.fielddelim
            rows = [cast(Record, line.split(fd)) if line else [] for line in lines]
        null = self.nullindicator
        null_text = "" if null is None else null
        # escapes sharing a delimiter character are absent here (else: the tokenizer)
        plain = self._plain_escapes
        unescape = self._unescaper(body, plain) if plain else None
        records: list[Record] = []
        for values in rows:
            values = _nulls(values, null_text)
            if unescape is not None:
                values = [unescape(v) if v is not None else None for v in values]
            records.append(values)
        return records

    def _csv_rows(self, body: str) -> list[Record] | None:
        """Rows by ``csv.reader`` when it reads this body exactly as §5.1 does, else None.

        That holds for one-character delimiter and quote, ``\\n`` lines without ``\\r``, no
        quoted null indicator, and doubled quotes only inside quoted values with a NULL
        indicator set (``_csv_doubled``): then every value csv returns is unquoted or quoted
        without ambiguity for the NULL test, and unescaped as §5.1 unescapes it.
        """
        csv_args, quoted_null = self._csv_args, self._quoted_null
        if csv_args is None or "\r" in body or (quoted_null and quoted_null in body):
            return None
        # one line (a message per record) needs no line iterator
        lines = [body] if body.find("\n") in (-1, len(body) - 1) else io.StringIO(body, newline="")
        try:
            rows = cast("list[Record]", list(csv.reader(lines, **csv_args)))
        except csv.Error:
            return None  # the tokenizer reports the error with its position
        doubled = self._csv_doubled
        if doubled is not None and doubled in body and not _csv_valid(rows, doubled):
            return None
        return rows

    def _scan(self, body: str) -> list[Record]:
        """The general path: quotes, and escapes that contain delimiter characters."""
        match, fd, quote = self._token.match, self.fielddelim, self.quote
        null_text = "" if self.nullindicator is None else self.nullindicator
        unescape = self._unescaper(body, self._escapes)
        records: list[Record] = []
        record: Record = []
        pos, end = 0, len(body)
        while True:
            m = match(body, pos)
            assert m is not None  # the tokenizer matches at every position
            value = m.group("q")
            if value is None:
                value = m.group("u")
                if value.startswith(quote):
                    raise MessageError("quoted value not closed, or text after its closing quote",
                                       position=f"record {len(records) + 1}, "
                                                f"field {len(record) + 1}")
                if not record:
                    blank = not value  # an unquoted empty first value: maybe an empty line
                if value == null_text:
                    value = None
            elif not record:
                blank = False
            if value and unescape is not None:
                value = unescape(value)
            record.append(value)
            sep = m.group("sep")
            pos = m.end()
            if sep == fd:
                continue
            if not (blank and len(record) == 1):
                records.append(record)
            elif sep:
                records.append([])  # an empty line (an empty body yields no record)
            if not sep or pos >= end:
                break
            record = []
        return records


def _csv_valid(rows: list[Record], doubled: str) -> bool:
    """Whether csv read a body holding doubled quotes as §5.1 does: no value it returns holds
    one. A quoted value's doubled quotes came back as one quote each; a value that still holds
    two was unquoted (§5.1 unescapes those) or quoted with four (rare: the tokenizer reads it).
    (csv's values are all text; joined by NUL, no two of them make a doubled quote together.)"""
    return not any(doubled in "\0".join(cast("list[str]", values)) for values in rows)


def _nulls(values: Record, null: str) -> Record:
    """``values`` (a list of its own) with None for each value that is the NULL text: a
    value or two replaced in place (C-speed scans), more by a new list."""
    count = values.count(null)
    if count > 3:
        return [None if v == null else v for v in values]
    for _ in range(count):
        values[values.index(null)] = None
    return values


@dataclass(frozen=True, slots=True)
class _TablePlan:
    """What a record of one table needs: converters, names to check, key positions."""

    table: Table
    converters: tuple[Converter, ...]
    upper_names: tuple[str, ...]
    keys: tuple[int, ...]
    min_groups: int  # column groups a record must hold so that every key column is present
    width: int  # number of columns
    row: RowConverter  # the header fields, then one text per column → the converted image


@dataclass(frozen=True, slots=True)
class DelimPlan:
    """What a delimited parser runs over: the ``delim.*`` settings and the definitions (both
    plain values: the dialect, items and converters are compiled from them on each side)."""

    delim: DelimSettings
    definitions: Definitions


class DelimParser(ParserBase[DelimPlan]):
    """``parser.type=delim``: one Op per record, in message order."""

    @classmethod
    def compile_plan(cls, settings: Settings, definitions: Definitions) -> DelimPlan:
        if settings.delim is None:
            raise PropertyError("no delim.* settings", prop="parser.type")
        return DelimPlan(settings.delim, definitions)

    def __init__(self, plan: DelimPlan) -> None:
        super().__init__(plan)
        d = plan.delim
        self.definitions = plan.definitions
        if not d.header:
            raise PropertyError("required", prop="delim.header")
        self._dialect = Dialect.from_settings(d)
        fields = FieldIndex(d.header)
        if len(fields) != len(d.header):
            raise PropertyError("header names must be unique (case-insensitive)",
                                prop="delim.header")
        self._items = compile_items(d, fields, prefix="delim")
        self._n = len(d.header)
        self._hasnames, self._hasbefores = d.hasnames, d.hasbefores
        self._afterfirst, self._grouped = d.afterfirst, d.isgrouped
        self._k = 1 + d.hasnames + d.hasbefores
        self._dateformats = d.dateformats
        # every configured date format compiles now, so a bad one stops at start
        self._formats: dict[str | None, TimeFormat] = {None: compile_format(None, date_only=True)}
        for suffix, fmt in (("", d.dateformats.default), *(
                (f".{name}", fmt) for name, fmt in d.dateformats.by_name.items())):
            if fmt is not None and fmt not in self._formats:
                self._formats[fmt] = compile_format(fmt, date_only=True,
                                                    prop=f"delim.dateformat{suffix}")
        self._plans: dict[str, _TablePlan] = {}
        self._one_line = self._dialect.one_line
        self._record = self._record_function(d)
        self._needs_now = isinstance(d.timestamp, SysTs) or (
            d.timestamp is None and "timestamp" not in fields)

    # -- tables ------------------------------------------------------------------------------

    def _plan(self, name: str) -> _TablePlan:
        table = self.definitions.get(name)
        if table is None:
            raise MessageError(f"unknown table {name}")
        plan = self._plans.get(table.name)
        if plan is None:
            converters = []
            for col in table.columns:
                fmt = self._formats[self._dateformats.lookup(table.name, col.name)]
                converters.append(build_converter(col, fmt, table=table.name))
            keys = table.key_indexes
            plan = _TablePlan(table, tuple(converters),
                              tuple(c.name.upper() for c in table.columns), keys,
                              max(keys) + 1 if keys else 0, len(converters),
                              compile_row(converters, self._n, table=table.name))
            self._plans[table.name] = plan
        self._plans[name] = plan
        return plan

    # -- messages ----------------------------------------------------------------------------

    def parse(self, message: Message) -> list[Op]:
        body = message.body
        if type(body) is not str:
            try:
                body = cast(bytes, body).decode("utf-8")
            except UnicodeDecodeError as error:
                raise MessageError(f"body is not UTF-8 text ({error.reason} at byte "
                                   f"{error.start})", source=message.name) from None
        now = time.time_ns() // 1000 if self._needs_now else 0
        values = self._one_line(body)
        if values is not None:
            try:
                return [self._record(message, values, now, 0)]
            except MessageError as error:
                where = "record 1" + (f", {error.position}" if error.position else "")
                raise MessageError(error.reason, source=message.name, position=where) from None
        try:
            records = self._dialect.split(body)
        except MessageError as error:
            raise MessageError(error.reason, source=message.name,
                               position=error.position) from None
        ops: list[Op] = []
        for number, values in enumerate(records, 1):
            if not values:
                continue
            try:
                ops.append(self._record(message, values, now, len(ops)))
            except MessageError as error:
                where = f"record {number}" + (f", {error.position}" if error.position else "")
                raise MessageError(error.reason, source=message.name, position=where) from None
        return ops

    def _record_function(self, d: DelimSettings) -> Callable[[Message, Record, int, int], Op]:
        """The per-record step with every getter bound once (items that are always None, such
        as ``*txid`` or an unset txname, are not called at all; ``*ts``, ``$jmsid`` and an
        optype code are read inline; a table named by one header field is found by that
        field's text)."""
        n, items, plans, plan_for = self._n, self._items, self._plans, self._plan
        images, single = self._images, self._k == 1
        table_of, optype_of, timestamp_of = items.table, items.optype, items.timestamp
        table_field, optype_field = items.table_field, items.optype_field
        codes = items.optype_codes if optype_field is not None else None
        ts_now, seqid_is_id = items.timestamp_is_now, items.seqid_is_id
        seqid_of = None if isinstance(d.seqid, SysSeqid) else items.seqid
        txid_of = None if d.txid is None or isinstance(d.txid, SysTxid) else items.txid
        txind_of = items.txind
        txname_of = items.txname if d.txname is not None else None
        txowner_of = items.txowner if d.txowner is not None else None
        convert = self._convert
        plain_items = (ts_now and seqid_is_id and not (txid_of or txind_of or txname_of
                                                       or txowner_of))
        by_text: dict[str | None, _TablePlan] = {}  # table field text → plan (names with a dot)

        def record(message: Message, values: Record, now: int, ordinal: int) -> Op:
            if len(values) < n:
                raise MessageError(f"{len(values)} fields, fewer than the {n} header fields")
            text = values[table_field] if table_field is not None else None
            plan = by_text.get(text)
            if plan is None:
                name = table_of(message, values)
                plan = plans.get(name) or plan_for(name)
                if text is not None and "." in text:  # a two-part name: the field's text alone
                    if len(by_text) >= 1024:
                        by_text.clear()
                    by_text[text] = plan
            optype = (codes.get(values[optype_field])  # type: ignore[arg-type]  # NULL: no code
                      if codes is not None and optype_field is not None else None)
            if optype is None:
                optype = optype_of(message, values)
            if optype == TRUNCATE:
                before = after = None
            elif single and len(values) - n == plan.width:  # every column, one value each
                try:
                    after = plan.row(values)
                except MessageError:  # again column by column, for the field's position
                    after = convert(plan, values[n:], plan.width, 0)
                before = None
                if optype == DELETE:
                    before, after = after, before
            else:
                before, after = images(plan, optype, values)
            if plain_items:  # *ts, $jmsid, *txid and nothing else configured
                return Op(plan.table, optype, now, message.id, None, None, None, None, before,
                          after, ordinal, message.id)
            return Op(plan.table, optype, now if ts_now else timestamp_of(message, values, now),
                      message.id if seqid_is_id else seqid_of(message, values) if seqid_of
                      else None,
                      txid_of(message, values) if txid_of else None,
                      txind_of(message, values) if txind_of else None,
                      txname_of(message, values) if txname_of else None,
                      txowner_of(message, values) if txowner_of else None,
                      before, after, ordinal, message.id)
        return record

    def _field_number(self, plan: _TablePlan, column: int, role: int) -> int:
        """1-based field number of a column's name or value; ``role`` is its offset in the
        column's group (isgrouped=false) or its block (isgrouped=true)."""
        if self._grouped:
            return self._n + role * len(plan.table.columns) + column + 1
        return self._n + column * self._k + role + 1

    def _images(self, plan: _TablePlan, optype: str,
                values: Record) -> tuple[list[Any] | None, list[Any] | None]:
        n, k = self._n, self._k
        m = plan.width
        count = len(values) - n
        if self._grouped:
            if count != m * k:
                raise MessageError(f"{len(values)} fields; table {plan.table.name} needs "
                                   f"{n} + {m}×{k} = {n + m * k} (isgrouped=true)")
            groups = m
            blocks = [values[n + j * m:n + (j + 1) * m] for j in range(k)]
        else:
            groups, partial = divmod(count, k)
            if groups > m or (groups == m and partial):
                raise MessageError(f"{len(values)} fields, more than the {n + m * k} of table "
                                   f"{plan.table.name}")
            if partial:
                raise MessageError(f"partial column group ({partial} of {k} values)",
                                   position=f"field {len(values) - partial + 1}")
            blocks = [values[n + j::k] for j in range(k)] if k > 1 else [values[n:]]
        if groups < plan.min_groups:
            missing = next(i for i in plan.keys if i >= groups)
            raise MessageError(f"key column {plan.table.columns[missing].name} is missing")
        if self._hasnames:
            self._check_names(plan, blocks[0], groups)
        role = int(self._hasnames)
        first = blocks[self._hasnames]
        if not self._hasbefores:
            image = self._convert(plan, first, groups, role)
            return (image, None) if optype == DELETE else (None, image)
        if self._afterfirst:
            after_texts, before_texts = first, blocks[self._hasnames + 1]
            after_role, before_role = role, role + 1
        else:
            before_texts, after_texts = first, blocks[self._hasnames + 1]
            before_role, after_role = role, role + 1
        if optype == INSERT:
            return None, self._convert(plan, after_texts, groups, after_role)
        if optype == DELETE:
            return self._convert(plan, before_texts, groups, before_role), None
        before = self._convert(plan, before_texts, groups, before_role)
        after = self._convert(plan, after_texts, groups, after_role, before_texts, before)
        for i in plan.keys:
            if before[i] != after[i]:
                col = plan.table.columns[i].name
                raise MessageError(
                    f"key column {col} changes from {before_texts[i]!r} to "
                    f"{after_texts[i]!r}; the delimited parser does not support primary-key "
                    f"updates", position=f"field {self._field_number(plan, i, after_role)}")
        return before, after

    def _check_names(self, plan: _TablePlan, names: Record, groups: int) -> None:
        expected = plan.upper_names
        for i in range(groups):
            name = names[i]
            if name is None or name.upper() != expected[i]:
                raise MessageError(f"column name {name!r}, expected "
                                   f"{plan.table.columns[i].name}",
                                   position=f"field {self._field_number(plan, i, 0)}")

    def _convert(self, plan: _TablePlan, texts: Record, groups: int, role: int,
                 same_texts: Record | None = None, same: list[Any] | None = None) -> list[Any]:
        """Typed values of present columns, MISSING for absent ones.

        ``same_texts``/``same``: an image already converted; equal texts reuse its values.
        """
        converters = plan.converters
        try:
            if same_texts is None or same is None:
                out = [None if t is None else c(t)
                       for c, t in zip(converters, texts, strict=False)]  # (groups, below)
            else:
                out = [same[i] if t == same_texts[i] else None if t is None else c(t)
                       for i, (c, t) in enumerate(zip(converters, texts, strict=False))]
        except MessageError:
            for i, (c, t) in enumerate(zip(converters, texts, strict=False)):
                try:
                    if t is not None:
                        c(t)
                except MessageError as error:
                    col = plan.table.columns[i].name
                    raise MessageError(error.reason, position=f"field "
                                       f"{self._field_number(plan, i, role)} ({col})") from None
            raise
        if groups < len(converters):
            out.extend([MISSING] * (len(converters) - groups))
        return out
