"""The table-definition model: tables, columns, GoldenGate type codes, slots and offsets.

One place for spec/sourcedefs.md §3–§6: the 24 DEFGEN column fields, the column kinds msgcap
writes (§6.2) and the slot rule that yields fetch offsets and record lengths (§5).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from props.errors import DefinitionError

if TYPE_CHECKING:
    from gendef.copybook.model import Copybook

# GoldenGate type codes (sourcedefs.md §4).
CHAR = 0
VARCHAR = 64
INT16, UINT16, INT32, UINT32 = 130, 131, 132, 133
NUMBER = 134
UINT64 = 135
DATETIME = 192

SUBTYPE_NUMBER_TEXT = 2  # type 64 carrying a NUMBER without fixed precision
SUBTYPE_FIXED_NUMBER = 3  # type 134

MAX_NUMBER_PRECISION = 18


@dataclass(frozen=True, slots=True)
class Column:
    """One column line of a DEFGEN file: all 24 fields, named after sourcedefs.md §3."""

    name: str
    type_code: int  # 2
    external_length: int  # 3
    fetch_offset: int = 0  # 4
    scale: int = 0  # 5
    level: int = 0  # 6
    null: int = 1  # 7
    bump_if_odd: int = 0  # 8
    internal_length: int = 0  # 9
    binary_length: int = 0  # 10
    table_length: int = 0  # 11
    most_significant_dt: int = 0  # 12
    least_significant_dt: int = 0  # 13
    high_precision: int = 0  # 14
    low_precision: int = 0  # 15
    elementary_item: int = 1  # 16
    occurs: int = 0  # 17
    key: bool = False  # 18
    sub_type: int = 0  # 19
    native_type: int = 1  # 20
    character_set: int = -1  # 21
    character_length: int = 0  # 22
    lob_type: int = 0  # 23
    partial_type: int = 0  # 24

    def fields(self) -> tuple[int, ...]:
        """Fields 2–24 as integers, in file order."""
        return (
            self.type_code, self.external_length, self.fetch_offset, self.scale, self.level,
            self.null, self.bump_if_odd, self.internal_length, self.binary_length,
            self.table_length, self.most_significant_dt, self.least_significant_dt,
            self.high_precision, self.low_precision, self.elementary_item, self.occurs,
            int(self.key), self.sub_type, self.native_type, self.character_set,
            self.character_length, self.lob_type, self.partial_type,
        )

    @classmethod
    def from_fields(cls, name: str, values: list[int] | tuple[int, ...]) -> Column:
        """Build from fields 2–19 (DEFGEN 2.0) or 2–24; 2.0 columns get §6.2's fields 20–24."""
        if len(values) == 18:
            fields = (*values[:16], bool(values[16]), values[17])
            col = cls(name, *fields)
            return replace(col, native_type=default_native_type(col))
        if len(values) == 23:
            fields = (*values[:16], bool(values[16]), *values[17:])
            return cls(name, *fields)
        raise ValueError(f"column {name}: {len(values) + 1} fields (expected 19 or 24)")

    # -- derived facts -------------------------------------------------------------------------

    @property
    def slot(self) -> int:
        """Bytes this column takes in the record image (sourcedefs.md §5)."""
        size = 2 + (2 if self.type_code == VARCHAR else 0) + self.internal_length + 1
        return size + (size & 1)

    @property
    def is_number_text(self) -> bool:
        return self.type_code == VARCHAR and self.sub_type == SUBTYPE_NUMBER_TEXT

    @property
    def is_text(self) -> bool:
        """A CHAR or VARCHAR of characters (not a NUMBER carried as text)."""
        return self.type_code == CHAR or (self.type_code == VARCHAR and not self.is_number_text)

    @property
    def characters(self) -> int:
        """How many characters the column holds: field 22 (Character Length) when set, else
        field 3, whose bytes are then characters too (source-definitions.md §6.3)."""
        return self.character_length or self.external_length

    @property
    def kind(self) -> str:
        """A short readable kind: CHAR(n), VARCHAR(n), NUMBER(p,s), NUMBER, DATE, TIMESTAMP(f)."""
        t = self.type_code
        if t == CHAR:
            return f"CHAR({self.characters})"
        if t == VARCHAR:
            return "NUMBER" if self.is_number_text else f"VARCHAR({self.characters})"
        if t == NUMBER:
            return f"NUMBER(scale {self.scale})"
        if t == DATETIME:
            if self.external_length <= 10:
                return "DATE"
            if self.external_length <= 19:
                return "DATETIME"
            return f"TIMESTAMP({self.external_length - 20})"
        return f"TYPE {t}"


def default_native_type(col: Column) -> int:
    """Native data type (field 20) msgcap writes for a column kind (sourcedefs.md §6.2)."""
    t = col.type_code
    if t == CHAR:
        return 96
    if t == VARCHAR:
        return 2 if col.sub_type == SUBTYPE_NUMBER_TEXT else 1
    if t in (NUMBER, INT16, UINT16, INT32, UINT32, UINT64):
        return 2
    if t == DATETIME:
        return 187 if col.external_length > 19 else 12
    return col.native_type


# -- column kinds (sourcedefs.md §6.2) ----------------------------------------------------------

def char_column(name: str, length: int, key: bool = False) -> Column:
    return Column(name, CHAR, length, internal_length=length, binary_length=length,
                  key=key, native_type=96)


def varchar_column(name: str, length: int, key: bool = False) -> Column:
    return Column(name, VARCHAR, length, internal_length=length, binary_length=length,
                  key=key, native_type=1)


def number_column(name: str, precision: int, scale: int = 0, key: bool = False) -> Column:
    """NUMBER(p,s): type 134 when p ≤ 18, else NUMBER carried as text (64, sub type 2)."""
    if precision < 1 or scale < 0 or scale > precision:
        raise DefinitionError(f"column {name}: invalid NUMBER({precision},{scale})")
    display = precision + 1 + (1 if scale > 0 else 0)
    if precision <= MAX_NUMBER_PRECISION:
        return Column(name, NUMBER, max(8, display), scale=scale, internal_length=8,
                      binary_length=8, table_length=8, key=key,
                      sub_type=SUBTYPE_FIXED_NUMBER, native_type=2)
    return number_text_column(name, display, key)


def number_text_column(name: str, length: int, key: bool = False) -> Column:
    return Column(name, VARCHAR, length, internal_length=length, binary_length=length,
                  table_length=length, key=key, sub_type=SUBTYPE_NUMBER_TEXT, native_type=2)


def datetime_column(name: str, length: int, key: bool = False) -> Column:
    """DATETIME of external length 10 (date), 19 (seconds) or 20 + f (f fraction digits)."""
    if length not in (10, 19) and not 21 <= length <= 29:
        raise DefinitionError(
            f"column {name}: datetime length {length} (expected 10, 19 or 21–29)")
    lsdt = 2 if length == 10 else 5 if length == 19 else 6
    return Column(name, DATETIME, length, internal_length=length, binary_length=length,
                  table_length=length, least_significant_dt=lsdt, key=key,
                  native_type=187 if length > 19 else 12)


UTF8_WIDTH = 4  # the most bytes a character takes in UTF-8: text of any character (XML, delimited)


def sized_text(col: Column, width: int) -> Column:
    """A text column of n characters of ``width`` UTF-8 bytes at most, as the trail (UTF-8)
    carries it: fields 3, 9 and 10 the n × width bytes a value may take, field 22 the n
    characters (0 when every character is one byte, so ASCII definitions keep their bytes).
    Other columns, and text columns already that wide, are returned as they are."""
    if not col.is_text:
        return col
    n = col.characters
    size = n * width
    if size == n or (col.external_length >= size and col.internal_length >= size):
        return col
    return replace(col, external_length=size, internal_length=size, binary_length=size,
                   character_length=n)


# -- tables --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Table:
    """A table definition; columns in definition order (their index is the trail column index)."""

    name: str
    columns: tuple[Column, ...]
    record_length: int = 0
    syskey: int = 0
    _by_name: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    _by_upper: dict[str, int | None] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for i, col in enumerate(self.columns):
            if col.name in self._by_name:
                raise DefinitionError(f"table {self.name}: duplicate column {col.name}")
            self._by_name[col.name] = i
            upper = col.name.upper()
            self._by_upper[upper] = None if upper in self._by_upper else i

    @classmethod
    def build(cls, name: str, columns: list[Column] | tuple[Column, ...]) -> Table:
        """A table whose fetch offsets and record length follow the slot rule (§5)."""
        placed, offset = [], 0
        for col in columns:
            placed.append(replace(col, fetch_offset=offset))
            offset += col.slot
        if len(placed) > 65536:
            raise DefinitionError(f"table {name}: more than 65536 columns")
        return cls(name, tuple(placed), offset)

    def normalized(self) -> Table:
        """This table with offsets and record length recomputed by §5, as msgcap writes it."""
        return Table.build(self.name, self.columns)

    def offsets_follow_rule(self) -> bool:
        """Whether the fetch offsets and record length are those of the slot rule (§5)."""
        rule = self.normalized()
        return rule.columns == self.columns and rule.record_length == self.record_length

    def column_index(self, name: str) -> int | None:
        """Index of a column by name: exact, then case-insensitive (must be unique)."""
        i = self._by_name.get(name)
        if i is None:
            i = self._by_upper.get(name.upper())
        return i

    @property
    def key_indexes(self) -> tuple[int, ...]:
        """Key column indexes; a table without keys uses all columns (properties.md §3.6)."""
        keys = tuple(i for i, c in enumerate(self.columns) if c.key)
        return keys or tuple(range(len(self.columns)))

    @property
    def has_declared_keys(self) -> bool:
        return any(c.key for c in self.columns)


@dataclass(frozen=True, slots=True)
class DefsHeader:
    """The header lines of a DEFGEN file (kept so that files read back identically)."""

    version: str = "4.0"
    encoding: str = "UTF-8"
    created: str | None = None
    database_type: str = "GENERIC"
    charset: str = "UTF-8"
    national_charset: str = "UTF-16"
    locale: str = "neutral"
    case_sensitivity: str = "14 14 14 14 14 14 14 14 14 14 14 14 11 14 14 14"
    timezone: str | None = "GMT"
    extra: tuple[tuple[str, str], ...] = ()  # other ``Key: value`` header lines, in file order


@dataclass(frozen=True, slots=True)
class Definitions:
    """An ordered set of table definitions, looked up exactly, then case-insensitively."""

    tables: tuple[Table, ...] = ()
    header: DefsHeader = DefsHeader()
    # The compiled copybook the tables came from (copybook mode): the parser reuses it instead
    # of compiling the file again (gendef.build.shared_copybook).
    copybook: Copybook | None = field(default=None, compare=False, repr=False)
    _by_name: dict[str, Table] = field(default_factory=dict, compare=False, repr=False)
    _by_upper: dict[str, Table | None] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for t in self.tables:
            if t.name in self._by_name:
                raise DefinitionError(f"duplicate table {t.name}")
            self._by_name[t.name] = t
            upper = t.name.upper()
            self._by_upper[upper] = None if upper in self._by_upper else t

    def get(self, name: str) -> Table | None:
        """The table of this name: exact match, else a unique case-insensitive one."""
        t = self._by_name.get(name)
        if t is None:
            t = self._by_upper.get(name.upper())
        return t

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def __iter__(self) -> Iterator[Table]:
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.tables)

    def normalized(self) -> Definitions:
        """Offsets recomputed, 4.0 header: the form gendef and trail.defs write."""
        return Definitions(tuple(t.normalized() for t in self.tables),
                           replace(self.header, version="4.0", encoding="UTF-8",
                                   timezone=self.header.timezone or "GMT"))
