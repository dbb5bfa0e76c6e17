"""DEFGEN source-definition files: the reader (versions 2.0, 4.0, 5.0) and the 4.0 writer.

The grammar, field meanings and exact output layout are spec/sourcedefs.md §2, §3, §6 and §9.
Reading keeps offsets and record lengths as written (the fixed-width parser lays messages out by
them) and only warns when they differ from the slot rule; writing is byte-exact so that DEFGEN's
own files and gendef's output read back to the same model.
"""

from __future__ import annotations

import codecs
import logging
import os
import re
from datetime import UTC, datetime
from typing import Any, cast

from gendef.durable import atomic_write
from gendef.model import Column, Definitions, DefsHeader, Table
from props.errors import DefinitionError
from props.inputs import read_input
from props.kinds import DEFGEN, misplaced

log = logging.getLogger(__name__)

FIELD_NAMES = (
    "Name", "Data Type", "External Length", "Fetch Offset", "Scale", "Level", "Null",
    "Bump if Odd", "Internal Length", "Binary Length", "Table Length", "Most Significant DT",
    "Least Significant DT", "High Precision", "Low Precision", "Elementary Item", "Occurs",
    "Key Column", "Sub Data Type", "Native Data Type", "Character Set", "Character Length",
    "LOB Type", "Partial Type",
)

_VERSION = re.compile(r"\*\+-\s*Defgen\s+version\s+(\d+\.\d+)\s*(?:,\s*Encoding\s+(\S+))?",
                      re.IGNORECASE)
_CREATED = re.compile(r"\*\s*Definitions created/modified\s+(.*\S)")
_TABLE = re.compile(r"Definition for table\s+(\S+)")
_INT = re.compile(r"[+-]?\d+")
_END = "End of definition"

# Header lines (sourcedefs.md §2) and the DefsHeader fields they fill.
_HEADER_KEYS = {
    "database type": "database_type",
    "character set id": "charset",
    "national character set id": "national_charset",
    "locale": "locale",
    "case sensitivity": "case_sensitivity",
    "timezone": "timezone",
}
_HEADER_LABELS = (
    ("Database type", "database_type"),
    ("Character set ID", "charset"),
    ("National character set ID", "national_charset"),
    ("Locale", "locale"),
    ("Case sensitivity", "case_sensitivity"),
)

# Field counts of a column line (name included) per DEFGEN version.
_FIELDS_BY_VERSION = {"2.0": 19}
_FULL_FIELDS = 24
# Right-aligned widths of fields 2–24 in DEFGEN's column lines (sourcedefs.md §6.1).
_WIDTHS = (4, 7, 9, 3, 3, 2, 2, 7, 7, 7, 2, 2, 2, 2, 2, 5, 2, 4, 5, 9, 7, 2, 2)


# -- reading ------------------------------------------------------------------------------------

def read_defs(path: str | os.PathLike[str]) -> Definitions:
    """Read a DEFGEN file, decoded with the encoding its version line names (default UTF-8)."""
    name = os.fspath(path)
    try:
        data = read_input(name)
    except OSError as exc:
        raise DefinitionError(f"cannot read source definitions: {exc.strerror}",
                              file=name) from None
    data = data.removeprefix(codecs.BOM_UTF8)
    first = data.split(b"\n", 1)[0].decode("latin-1").strip()
    m = _VERSION.match(first)
    encoding = (m.group(2) if m and m.group(2) else None) or "UTF-8"
    try:
        b"x".decode(encoding)  # LookupError also for codecs that are not text encodings (rot13)
    except (LookupError, ValueError):  # ValueError: a name with a NUL in it
        raise DefinitionError(f"unknown encoding {encoding!r} on the version line",
                              file=name, line=1) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DefinitionError(f"bytes not valid in {encoding}: {exc.reason}",
                              file=name, line=line) from None
    try:
        defs = parse_defs(text, name)
    except DefinitionError:
        if (reason := misplaced(text, name, DEFGEN)) is not None:
            raise DefinitionError(reason, file=name) from None
        raise
    log.debug("%s: %d tables (Defgen %s, %s)", name, len(defs), defs.header.version, encoding)
    return defs


def parse_defs(text: str, file: str = "<defs>") -> Definitions:
    """Parse DEFGEN text; errors name ``file:line`` (sourcedefs.md §9)."""
    return _Reader(text, file).read()


class _Reader:
    """One pass over the lines: header section, then table blocks."""

    def __init__(self, text: str, file: str) -> None:
        self.lines = [ln.rstrip("\r") for ln in text.lstrip("\ufeff").split("\n")]
        if self.lines[-1] == "":
            self.lines.pop()  # the final newline ends the last line; it starts no new one
        self.file = file
        self.pos = 0  # index of the next line to read
        self.version: str | None = None
        self.mismatch_warned = False
        self.pending: str | None = None  # the first table line, found by read_header

    def error(self, reason: str, lineno: int | None = None) -> DefinitionError:
        return DefinitionError(reason, file=self.file, line=lineno or self.pos)

    def warn(self, lineno: int, reason: str) -> None:
        log.warning("%s:%d: %s", self.file, lineno, reason)

    def next_line(self) -> str | None:
        """The next significant line, stripped (blank and ``*`` comment lines skipped)."""
        while self.pos < len(self.lines):
            line = self.lines[self.pos].strip()
            self.pos += 1
            if line and not line.startswith("*"):
                return line
        return None

    def read(self) -> Definitions:
        header, extra = self.read_header()
        tables: list[Table] = []
        seen: dict[str, int] = {}
        line = self.pending
        while line is not None:
            if not _TABLE.fullmatch(line):
                raise self.error(f"expected 'Definition for table NAME', found {line!r}")
            start = self.pos
            table = self.read_table(line)
            if table.name in seen:
                raise self.error(f"duplicate table {table.name} (first defined at line "
                                 f"{seen[table.name]})", start)
            seen[table.name] = start
            tables.append(table)
            line = self.next_line()
        if not tables:
            raise self.error("no table definitions ('Definition for table NAME')",
                             len(self.lines))
        # the keys are DefsHeader fields; only timezone may be None (read_header)
        fields = cast("dict[str, Any]", header)
        return Definitions(tuple(tables), DefsHeader(**fields, extra=tuple(extra)))

    def read_header(self) -> tuple[dict[str, str | None], list[tuple[str, str]]]:
        """The version line, the creation comment and ``Key: value`` lines before table 1."""
        header: dict[str, str | None] = {}
        extra: list[tuple[str, str]] = []
        while self.pos < len(self.lines):
            raw = self.lines[self.pos].strip()
            self.pos += 1
            if not raw:
                continue
            if raw.startswith("*"):
                if (m := _VERSION.match(raw)) and self.version is None:
                    self.version = m.group(1)
                    header["version"] = m.group(1)
                    header["encoding"] = m.group(2) or "UTF-8"
                elif m := _CREATED.match(raw):
                    header["created"] = m.group(1)
                continue
            if _TABLE.fullmatch(raw):
                self.pending = raw
                break
            key, sep, value = raw.partition(":")
            if not sep:
                raise self.error(f"expected a 'Key: value' header line or 'Definition for "
                                 f"table NAME', found {raw!r}")
            attr = _HEADER_KEYS.get(key.strip().lower())
            if attr:
                header[attr] = value.strip()
            else:
                extra.append((key.strip(), value.strip()))
        if "timezone" not in header and self.version == "2.0":
            header["timezone"] = None
        return header, extra

    def expect_int(self, label: str, table: str) -> tuple[int, int]:
        """The value of a ``label: INT`` line of a table block, and its line number."""
        line = self.next_line()
        if line is None:
            raise self.error(f"table {table}: expected '{label}: N', found end of file")
        key, sep, value = line.partition(":")
        if not sep or key.strip().lower() != label.lower() or not _INT.fullmatch(value.strip()):
            raise self.error(f"table {table}: expected '{label}: N', found {line!r}")
        return int(value.strip()), self.pos

    def read_table(self, first: str) -> Table:
        start = self.pos
        name = first.split(None, 3)[3]
        parts = name.split(".")
        if not 2 <= len(parts) <= 3 or not all(parts):
            raise self.error(f"table name {name!r}: expected SCHEMA.TABLE or "
                             "CATALOG.SCHEMA.TABLE", start)
        record_length, record_line = self.expect_int("Record length", name)
        syskey, syskey_line = self.expect_int("Syskey", name)
        count, count_line = self.expect_int("Columns", name)
        if syskey != 0:
            self.warn(syskey_line, f"table {name}: Syskey {syskey} ignored")
        columns: list[Column] = []
        col_lines: list[int] = []
        names: dict[str, int] = {}
        while True:
            line = self.next_line()
            if line is None or _TABLE.fullmatch(line):
                where = "end of file" if line is None else repr(line)
                raise self.error(f"table {name} (line {start}): missing '{_END}' "
                                 f"(found {where})")
            if line == _END:
                break
            if len(columns) == count:
                raise self.error(f"table {name}: 'Columns: {count}' (line {count_line}) but "
                                 f"more column lines follow; expected '{_END}'")
            col = self.read_column(line, name)
            if col.name in names:
                raise self.error(f"table {name}: duplicate column {col.name} (first at line "
                                 f"{names[col.name]})")
            names[col.name] = self.pos
            columns.append(col)
            col_lines.append(self.pos)
        if len(columns) != count:
            raise self.error(f"table {name}: 'Columns: {count}' (line {count_line}) but "
                             f"{len(columns)} column lines")
        table = Table(name, tuple(columns), record_length, syskey)
        self.check_offsets(table, record_line, col_lines)
        return table

    def read_column(self, line: str, table: str) -> Column:
        parts = line.split()
        name, values = parts[0], parts[1:]
        if len(parts) not in (19, _FULL_FIELDS):
            raise self.error(f"table {table}: column {name}: {len(parts)} fields, expected 19 "
                             f"(DEFGEN 2.0) or {_FULL_FIELDS} (4.0, 5.0)")
        for k, v in enumerate(values):
            if not _INT.fullmatch(v):
                raise self.error(f"table {table}: column {name}: field {k + 2} "
                                 f"({FIELD_NAMES[k + 1]}) is not an integer: {v!r}")
        expected = _FIELDS_BY_VERSION.get(self.version or "", _FULL_FIELDS)
        if self.version and len(parts) != expected and not self.mismatch_warned:
            self.mismatch_warned = True
            self.warn(self.pos, f"column lines of {len(parts)} fields in a Defgen "
                                f"{self.version} file (expected {expected}); accepted")
        return Column.from_fields(name, [int(v) for v in values])

    def check_offsets(self, table: Table, record_line: int, col_lines: list[int]) -> None:
        """Warn (once per table) where offsets or the record length differ from §5."""
        rule = table.normalized()
        for col, want, lineno in zip(table.columns, rule.columns, col_lines, strict=True):
            if col.fetch_offset != want.fetch_offset:
                self.warn(lineno, f"table {table.name}: column {col.name}: fetch offset "
                                  f"{col.fetch_offset}, the slot rule gives {want.fetch_offset} "
                                  "(kept as read)")
                break
        if table.record_length != rule.record_length:
            self.warn(record_line, f"table {table.name}: record length {table.record_length}, "
                                   f"the slot rule gives {rule.record_length} (kept as read)")


# -- writing ------------------------------------------------------------------------------------

def format_defs(defs: Definitions, created: datetime | str | None = None) -> str:
    """DEFGEN text with 24-field column lines (sourcedefs.md §6.1).

    ``created`` is the date line: a datetime (shown in UTC), a preformatted ``YYYY-MM-DD HH:MM``,
    or None for the header's own date, else ``SOURCE_DATE_EPOCH``, else now.
    """
    h = defs.header
    version = h.version if h.version in ("4.0", "5.0") else "4.0"
    out = [
        f"*+- Defgen version {version}, Encoding {h.encoding}",
        "*",
        f"* Definitions created/modified  {_created_text(created, h.created)}",
        "*",
        "*  Field descriptions for each column entry:",
        "*",
    ]
    out += [f"*{i:>6}    {label}" for i, label in enumerate(FIELD_NAMES, 1)]
    out.append("*")
    out += [f"{label}: {getattr(h, attr)}" for label, attr in _HEADER_LABELS]
    out.append(f"TimeZone: {h.timezone or 'GMT'}")
    out += [f"{key}: {value}" for key, value in h.extra]
    for table in defs.tables:
        out.append("*")
        out += format_table(table)
    return "\n".join(out) + "\n"


def format_table(table: Table) -> list[str]:
    """The lines of one table block, in DEFGEN's exact column layout.

    A value too wide for its DEFGEN column gets one leading space instead of touching its
    neighbour, so the line still splits into the same fields.
    """
    for name in (table.name, *(c.name for c in table.columns)):
        if not name or any(ch.isspace() for ch in name):
            raise DefinitionError(f"table {table.name}: name {name!r} cannot be written to a "
                                  "DEFGEN file (empty or contains whitespace)")
    w = max((len(c.name) for c in table.columns), default=0)
    lines = [
        f"Definition for table {table.name}",
        f"Record length: {table.record_length}",
        f"Syskey: {table.syskey}",
        f"Columns: {len(table.columns)}",
    ]
    for c in table.columns:
        values = "".join(_cell(v, width) for v, width in zip(c.fields(), _WIDTHS, strict=True))
        lines.append(f"{c.name:<{w}} {values}")
    lines.append(_END)
    return lines


def _cell(value: int, width: int) -> str:
    text = str(value)
    return text.rjust(width) if len(text) < width else " " + text


def _created_text(created: datetime | str | None, own: str | None) -> str:
    if isinstance(created, str):
        return created
    if created is None:
        if own is not None:
            return own
        epoch = os.environ.get("SOURCE_DATE_EPOCH")
        if epoch is not None:
            try:
                created = datetime.fromtimestamp(int(epoch), UTC)
            except (ValueError, OverflowError, OSError):
                log.warning("SOURCE_DATE_EPOCH=%r is not a Unix time; using the current time",
                            epoch)
        if created is None:
            created = datetime.now(UTC)
    if created.tzinfo is not None:
        created = created.astimezone(UTC)
    return created.strftime("%Y-%m-%d %H:%M")


def encode_defs(defs: Definitions, created: datetime | str | None = None) -> bytes:
    """The file bytes: ``format_defs`` in the encoding the version line names."""
    text = format_defs(defs, created)
    try:
        return text.encode(defs.header.encoding)
    except (LookupError, UnicodeEncodeError) as exc:
        raise DefinitionError(f"cannot encode definitions as {defs.header.encoding}: "
                              f"{exc}") from None


def write_defs(defs: Definitions, path: str | os.PathLike[str],
               created: datetime | str | None = None) -> None:
    """Write atomically: a temporary file in the same directory, fsynced, then renamed.

    Missing parent directories are created; on any error nothing is left at ``path``.
    """
    data = encode_defs(defs, created)
    try:
        atomic_write(path, data)
    except OSError as exc:
        raise DefinitionError(f"cannot write source definitions: {exc.strerror}",
                              file=os.fspath(path)) from None
