"""The compiled copybook: frozen records, fields and items, and the limits the compiler
checks as it reads (every other module of the package produces or reads these)."""

from __future__ import annotations

from dataclasses import dataclass

DISPLAY, COMP, COMP3, COMP5, COMP1, COMP2 = "DISPLAY", "COMP", "COMP-3", "COMP-5", "COMP-1", "COMP-2"

MAX_BINARY_DIGITS = 38
# Limits checked as soon as the copybook is read, so that one line cannot make the compiler
# build an unbounded layout (a table holds at most 65,536 columns, sourcedefs.md).
MAX_OCCURS = 65_535  # OCCURS count (or OCCURS … TO maximum)
MAX_FIELDS = 65_536  # elementary fields of one record, every occurrence counted
MAX_RECORD_SIZE = 16 * 1024 * 1024  # bytes of one record
IMPLICIT_RECORD = "RECORD"  # name of the record that holds a copybook without a 01 level


# -- the frozen result -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Picture:
    """A parsed PIC string: what the decoders and the definition mapping need from it."""

    text: str
    kind: str  # 'alnum' | 'numeric'
    digits: int = 0  # digit positions (9, Z, *), without P
    scale: int = 0  # digits after V or '.'
    scale_factor: int = 0  # P positions: < 0 left of the digits, > 0 right of them
    signed: bool = False  # S, or an editing sign
    explicit_point: bool = False
    edit_sign: str | None = None  # 'leading' | 'trailing' for editing +/- symbols
    display_length: int = 0  # characters in DISPLAY usage, sign included when it is separate

    @property
    def precision(self) -> int:
        """Significant decimal digits including P scaling positions."""
        return self.digits + abs(self.scale_factor)

    @property
    def effective_scale(self) -> int:
        """Decimal places of the value (left P positions add to the scale, right ones do not)."""
        return self.scale - self.scale_factor if self.scale_factor < 0 else self.scale


@dataclass(frozen=True, slots=True)
class Odo:
    """One enclosing OCCURS … DEPENDING ON: the counter field and this occurrence (1-based)."""

    counter: str
    index: int


@dataclass(frozen=True, slots=True)
class FieldLayout:
    """One elementary item of a record, at one occurrence: where it is and how to read it."""

    name: str  # copybook name
    column: str  # flattened definition column name (sourcedefs.md §7.1)
    offset: int
    length: int
    usage: str
    kind: str  # 'alnum' | 'numeric' | 'float'
    digits: int = 0
    scale: int = 0
    scale_factor: int = 0
    signed: bool = False
    sign_leading: bool = False
    sign_separate: bool = False
    explicit_point: bool = False
    date_format: str | None = None
    key: bool = False
    redefined: bool = False  # this item (or an ancestor) is redefined by a later one
    redefining: bool = False  # this item (or an ancestor) REDEFINES an earlier one
    filler: bool = False
    depending_on: tuple[Odo, ...] = ()
    occurs_index: tuple[int, ...] = ()  # 1-based index in each enclosing OCCURS
    line: int = 0
    path: tuple[str, ...] = ()  # names of the enclosing groups, the 01 record first
    # a binary field whose every bit pattern is a value (COMP-5; COMP, COMP-4, BINARY under
    # TRUNC(BIN)); other binary fields hold at most their PICTURE's digits (TRUNC(STD), (OPT))
    native: bool = False

    @property
    def value_digits(self) -> int:
        """The most digits a value of the field has (without P scaling): the PICTURE's, or
        those of the largest magnitude its bytes hold when it is ``native``."""
        if not self.native:
            return self.digits
        bits = 8 * self.length
        return len(str(1 << (bits - 1) if self.signed else (1 << bits) - 1))

    @property
    def precision(self) -> int:
        return self.value_digits + abs(self.scale_factor)

    @property
    def effective_scale(self) -> int:
        return self.scale - self.scale_factor if self.scale_factor < 0 else self.scale


@dataclass(frozen=True, slots=True)
class Item:
    """A node of the compiled tree: a group (``children``) or an elementary item (``picture``).

    ``offset`` is that of the first occurrence; ``size`` the bytes of one occurrence as the item
    itself declares them; ``actual_size`` the bytes its REDEFINES block takes (the largest
    member, as Cobrix reports it); an OCCURS item spans ``actual_size × occurs``.
    """

    level: int
    name: str
    line: int
    column: int
    offset: int = 0
    size: int = 0
    actual_size: int = 0
    picture: Picture | None = None
    usage: str = DISPLAY
    sign_leading: bool = False
    sign_separate: bool = False
    occurs: int | None = None
    occurs_min: int | None = None
    depending_on: str | None = None
    redefines: str | None = None
    redefined: bool = False
    filler: bool = False
    key: bool = False
    date_format: str | None = None
    children: tuple[Item, ...] = ()

    @property
    def is_group(self) -> bool:
        return self.picture is None and self.usage not in (COMP1, COMP2)

    @property
    def kind(self) -> str:
        if self.usage in (COMP1, COMP2):
            return "float"
        return self.picture.kind if self.picture else "group"

    @property
    def clean_name(self) -> str:
        """The name as Cobrix shows it: '-' → '_', ':' and quotes removed, case kept."""
        return clean_name(self.name)


@dataclass(frozen=True, slots=True)
class RecordLayout:
    """One 01 record: its length and its elementary fields, flattened, OCCURS expanded."""

    name: str
    length: int
    fields: tuple[FieldLayout, ...]
    item: Item

    def field(self, name: str) -> FieldLayout | None:
        """The first field of this copybook or column name (case-insensitive, '-' = '_')."""
        key = normalize_name(name)
        for f in self.fields:
            if normalize_name(f.name) == key or f.column == key:
                return f
        return None


@dataclass(frozen=True, slots=True)
class Copybook:
    """A compiled copybook: its 01 records in order."""

    records: tuple[RecordLayout, ...]
    file: str | None = None
    trunc: str = "std"  # the TRUNC option its binary fields were compiled under (fixed.trunc)

    def record(self, name: str) -> RecordLayout | None:
        """A record by name, case-insensitive, '-' equal to '_'."""
        key = normalize_name(name)
        for r in self.records:
            if normalize_name(r.name) == key:
                return r
        return None

    @property
    def roots(self) -> tuple[Item, ...]:
        return tuple(r.item for r in self.records)

    @property
    def length(self) -> int:
        """The longest record (01 records overlay the same bytes)."""
        return max((r.length for r in self.records), default=0)


def normalize_name(name: str) -> str:
    """Field and record names compare case-insensitively with '-' equal to '_'."""
    return name.upper().replace("-", "_")


def clean_name(name: str) -> str:
    return name.replace("-", "_").replace(":", "").replace("'", "").replace('"', "")
