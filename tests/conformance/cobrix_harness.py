"""A Cobrix-shaped reader over msgcap's copybook compiler and decoders, for the conformance corpus.

Everything that is Spark/Cobrix behaviour rather than msgcap behaviour lives here
(testdata/cobrix/README.md): cutting files into records (F, D/D2 text lines, variable OCCURS),
Cobrix's string code pages, trimming and null detection, filler naming, segment options, Spark's
numeric types (a value that does not fit is null) and the nested row shape. Layouts and values
come from ``gendef.copybook`` and ``parsers.decoders``; a decoder's MessageError becomes null here,
as Cobrix does.
"""

from __future__ import annotations

import decimal
import gzip
import json
import os
import re
import struct
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gendef.copybook import (
    COMP1,
    COMP2,
    DISPLAY,
    Copybook,
    Item,
    compile_copybook,
    item_field,
)
from parsers.decoders import DecodeOptions, decoder_for
from props.errors import MessageError

# The team's shared test data sits beside the repository (../shared/testdata); MSGCAP_TESTDATA
# points elsewhere.
TESTDATA = Path(os.environ.get("MSGCAP_TESTDATA")
                or Path(__file__).resolve().parents[3] / "shared" / "testdata")
CORPUS = TESTDATA / "cobrix"


def require_corpus() -> None:
    """Skip where the corpus is absent (a user's clone without ../shared); in CI it must be
    there, so a missing corpus fails instead of passing silently."""
    if (CORPUS / "index.json").is_file():
        return
    reason = f"Cobrix test data not found at {CORPUS} (set MSGCAP_TESTDATA)"
    if os.environ.get("CI"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)

# -- options ---------------------------------------------------------------------------------


@dataclass
class Options:
    raw: dict[str, Any]
    encoding: str = "ebcdic"
    record_format: str = "F"
    is_text: bool = False
    code_page: str = "common"
    ascii_charset: str = "utf-8"
    trimming: str = "both"
    keep_original: bool = False
    strict_overpunch: bool = True
    improved_null: bool = True
    float_format: str = "IBM"
    variable_occurs: bool = False
    drop_value_fillers: bool = True
    drop_group_fillers: bool = False
    filler_naming: str = "sequence_numbers"
    record_id: bool = False
    partial: bool = False
    min_len: int | None = None
    max_len: int | None = None
    start_offset: int = 0
    segment_field: str | None = None
    segment_filter: set[str] | None = None
    segment_redefines: dict[str, set[str]] = field(default_factory=dict)
    segment_children: dict[str, str] = field(default_factory=dict)
    non_terminals: set[str] = field(default_factory=set)
    occurs_mappings: dict[str, dict[str, int]] = field(default_factory=dict)


def _key(name: str) -> str:
    return name.upper().replace("-", "_")


def parse_options(raw: dict[str, Any], variant: dict[str, Any]) -> Options:
    """Cobrix reader options with Cobrix's defaults (README: "Every case's notes end with…")."""
    o = Options(raw)
    get = raw.get
    fmt = get("record_format")
    if get("is_text") == "true" or variant.get("record_format", "").startswith(("is_text", "one")):
        o.is_text, fmt = True, fmt or "D"
    o.record_format = fmt or "F"
    o.encoding = get("encoding") or ("ascii" if o.record_format in ("D", "D2") or o.is_text
                                     or variant.get("encoding") == "ascii" else "ebcdic")
    o.code_page = get("ebcdic_code_page", "common")
    o.ascii_charset = (get("ascii_charset") or "utf-8").lower()
    o.trimming = get("string_trimming_policy", "both")
    o.keep_original = get("schema_retention_policy") == "keep_original"
    o.strict_overpunch = get("strict_sign_overpunching", "true") == "true"
    o.improved_null = get("improved_null_detection", "true") == "true"
    o.float_format = get("floating_point_format", "IBM")
    o.variable_occurs = get("variable_size_occurs") == "true"
    o.drop_value_fillers = get("drop_value_fillers", "true") == "true"
    o.drop_group_fillers = get("drop_group_fillers", "false") == "true"
    o.filler_naming = get("filler_naming_policy", "sequence_numbers")
    o.record_id = get("generate_record_id") == "true"
    o.partial = get("allow_partial_records") == "true"
    o.min_len = int(get("minimum_record_length")) if get("minimum_record_length") else None
    o.max_len = int(get("maximum_record_length")) if get("maximum_record_length") else None
    o.start_offset = int(get("record_start_offset") or 0)
    o.segment_field = get("segment_field")
    if get("segment_filter"):
        o.segment_filter = {s.strip() for s in str(get("segment_filter")).split(",")}
    for k, v in raw.items():
        if k.startswith(("redefine_segment_id_map", "redefine-segment-id-map")):
            name, ids = v.split("=>")
            o.segment_redefines[_key(name.strip())] = {s.strip() for s in ids.split(",")}
        elif k.startswith(("segment-children", "segment_children")):
            parent, children = v.split("=>")
            for c in children.split(","):
                o.segment_children[_key(c.strip())] = _key(parent.strip())
    if get("non_terminals"):
        o.non_terminals = {_key(s.strip()) for s in get("non_terminals").split(",")}
    if get("occurs_mappings"):
        o.occurs_mappings = {_key(k): v for k, v in json.loads(get("occurs_mappings")).items()}
    return o


# -- strings ------------------------------------------------------------------------------------

def _common_table() -> list[str]:
    """Cobrix's default EBCDIC 'common' code page: invariant characters only, else a space."""
    table = [" "] * 256
    cp = bytes(range(256)).decode("cp037")
    invariant = [*range(0x4B, 0x51), *range(0x5A, 0x5F), 0x60, 0x61, *range(0x6B, 0x70),
                 *range(0x79, 0x80), *range(0x81, 0x8A), *range(0x91, 0x9A), 0xA1,
                 *range(0xA2, 0xAA), 0xC0, *range(0xC1, 0xCA), 0xD0, *range(0xD1, 0xDA), 0xE0,
                 *range(0xE2, 0xEA), *range(0xF0, 0xFA)]
    for b in invariant:
        table[b] = cp[b]
    table[0x6A], table[0xB0], table[0xBA], table[0xBB], table[0xCA] = "¦", "^", "[", "]", "-"
    table[0x0D], table[0x25] = "\n", "\r"
    return table


_C1_SPACES = (0x04, 0x06, 0x08, 0x09, 0x0A, 0x14, 0x17, 0x1A, 0x1B, *range(0x20, 0x25),
              *range(0x28, 0x2D), 0x30, 0x31, *range(0x33, 0x37), *range(0x38, 0x3C), 0x3E,
              0xFF)


def _python_table(name: str, extended: bool) -> list[str]:
    """Python's code page with Cobrix's control-character rules (README of ebcdic-test9)."""
    table = list(bytes(range(256)).decode(name))
    for b, ch in enumerate(table):
        if extended:
            if b in _C1_SPACES:
                table[b] = " "
        elif (ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F) and ch != "\x85":
            table[b] = " "
    table[0x0D], table[0x25] = "\n", "\r" if extended else " "
    if name == "cp273":
        table[0xBC] = "\u00af"
    return table


def ebcdic_table(code_page: str) -> list[str]:
    if code_page == "common":
        return _common_table()
    extended = code_page.endswith("_extended") or code_page in ("cp273", "cp1140")
    return _python_table(code_page.removesuffix("_extended"), extended)


def _java_trim(s: str, how: str) -> str:
    if how in ("both", "left"):
        i = 0
        while i < len(s) and s[i] <= " ":
            i += 1
        s = s[i:]
    if how in ("both", "right"):
        j = len(s)
        while j > 0 and s[j - 1] <= " ":
            j -= 1
        s = s[:j]
    return s


def string_decoder(o: Options):
    """bytes → str as Cobrix decodes alphanumeric fields for these options."""
    trim = o.trimming if o.trimming != "keep_all" else "none"
    null_check = o.improved_null and o.trimming != "keep_all"
    if o.encoding == "ebcdic":
        table = ebcdic_table(o.code_page)
        tmap = {b: table[b] for b in range(256)}

        def ebcdic(data: bytes) -> str | None:
            if null_check and all(b == 0 for b in data):
                return None
            return _java_trim(data.decode("latin-1").translate(tmap), trim)
        return ebcdic
    charset = o.ascii_charset.replace("_", "-")
    keep_controls = o.trimming == "keep_all"

    def ascii_(data: bytes) -> str | None:
        if null_check and all(b == 0 for b in data):
            return None
        if not keep_controls:
            data = bytes(b for b in data if b >= 0x20)
        if charset in ("us-ascii", "ascii"):
            text = "".join(chr(b) if b < 0x80 else " " for b in data)
        elif charset in ("iso-8859-1", "latin-1", "latin1"):
            text = data.decode("latin-1")
        else:
            text = data.decode("utf-8", "replace")
        return _java_trim(text, trim)
    return ascii_


# -- numbers: msgcap decoders + Spark's types -----------------------------------------------------

def spark_fits(item: Item, value: Any, strict_integral: bool) -> bool:
    """Cobrix gives null for a value that its Spark column type cannot hold."""
    if not isinstance(value, (int, Decimal)) or item.kind == "float":
        return True
    pic = item.picture
    assert pic is not None
    precision, scale = pic.precision, pic.effective_scale
    integral = scale == 0 and not pic.explicit_point
    if integral and not strict_integral:
        if precision <= 9:
            return -(2**31) <= value < 2**31
        if precision <= 18:
            return -(2**63) <= value < 2**63
    v = Decimal(value)
    if v == 0:
        return True
    int_digits = max(v.adjusted() + 1, 0)
    return int_digits <= precision - scale


class Reader:
    """Decodes records of one copybook with one set of options into Cobrix-shaped rows."""

    def __init__(self, copybook: Copybook, o: Options) -> None:
        self.cb = copybook
        self.o = o
        self.strings = string_decoder(o)
        self.num_encoding = "cp037" if o.encoding == "ebcdic" else "latin-1"
        self.dec_opts = DecodeOptions(strict_sign_overpunching=o.strict_overpunch,
                                      floating_point_format=o.float_format,
                                      blank_is_null=o.improved_null)
        self.strict_integral = o.raw.get("strict_integral_precision") == "true"
        self._decoders: dict[int, Any] = {}
        self.names, self.dropped = self._names()

    # names and filler policies
    def _names(self) -> tuple[dict[int, str], set[int]]:
        names: dict[int, str] = {}
        dropped: set[int] = set()
        counters = {"value": 0, "group": 0}
        prev = [""]

        def visit(it: Item) -> None:
            name = it.clean_name
            if it.filler:
                is_group = bool(it.children)
                drop = self.o.drop_group_fillers if is_group else self.o.drop_value_fillers
                if drop:
                    dropped.add(id(it))
                elif self.o.filler_naming == "previous_field_name":
                    name = f"FILLER_AFTER_{prev[0]}"
                else:
                    kind = "group" if is_group else "value"
                    counters[kind] += 1
                    name = f"FILLER_{counters[kind]}" if is_group else f"FILLER_P{counters[kind]}"
            names[id(it)] = name
            prev[0] = name
            for c in it.children:
                visit(c)

        for root in self.cb.roots:
            visit(root)
        return names, dropped

    def layout_name(self, it: Item) -> str:
        return self.names[id(it)]

    def record_length(self) -> int:
        return self.cb.length

    def _decoder(self, it: Item):
        d = self._decoders.get(id(it))
        if d is None:
            if it.kind == "alnum":
                d = self.strings
            else:
                enc = self.num_encoding
                d = decoder_for(item_field(it), enc, options=self.dec_opts)
            self._decoders[id(it)] = d
        return d

    def value(self, it: Item, data: bytes) -> Any:
        dec = self._decoder(it)
        if it.kind == "alnum":
            return dec(data)
        if not data:
            return None
        try:
            v = dec(data)
        except MessageError:
            if (not self.o.improved_null and it.usage == DISPLAY and it.picture is not None
                    and (it.picture.scale or it.picture.scale_factor)
                    and not data.strip(b" \x00@")):
                return Decimal(0)
            return None
        if it.usage == COMP1:
            return Float32(v)
        if it.usage == COMP2:
            return float(v)
        if v is not None and not spark_fits(it, v, self.strict_integral):
            return None
        return v

    # walking the tree over one record
    def decode(self, data: bytes) -> tuple[dict[str, Any], int]:
        """One record → (row, bytes it used)."""
        self.counters: dict[str, Any] = {}
        self.segment = None
        if self.o.segment_field:
            self.segment = self._segment_value(data)
        rows: dict[str, Any] = {}
        used = 0
        for root in self.cb.roots:
            value, size = self._group(root, data, 0)
            used = max(used, size)
            if self.o.keep_original:
                rows[self.names[id(root)]] = value
            else:
                rows.update(value)
        return rows, used

    def _segment_value(self, data: bytes) -> str | None:
        target = _key(self.o.segment_field)
        for root in self.cb.roots:
            for it, off in _static_items(root):
                if _key(it.name) == target and not it.children:
                    v = self.value(it, data[off:off + it.size])
                    return v.strip() if isinstance(v, str) else v
        return None

    def _group(self, grp: Item, data: bytes, pos: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        p = pos
        for block in _blocks(grp.children):
            widest = 0
            for c in block:
                v, size = self._item(c, data, p)
                widest = max(widest, size)
                if id(c) in self.dropped or v is _DROP:
                    continue
                out[self.names[id(c)]] = v
                if c.children and _key(c.name) in self.o.non_terminals:
                    out[self.names[id(c)] + "_NT"] = self.strings(data[p:p + c.actual_size])
            static = max(c.actual_size * (c.occurs or 1) for c in block)
            p += widest if self.o.variable_occurs else static
        return out, p - pos

    def _count(self, it: Item) -> int:
        maximum = it.occurs or 1
        if it.depending_on is None:
            return maximum
        raw = self.counters.get(_key(it.depending_on))
        mapping = self.o.occurs_mappings.get(_key(it.name))
        if mapping is not None:
            raw = mapping.get(raw if isinstance(raw, str) else str(raw))
        if not isinstance(raw, (int, Decimal)):
            return 0
        return max(0, min(int(raw), maximum))

    def _item(self, it: Item, data: bytes, pos: int) -> tuple[Any, int]:
        if it.redefines is not None or it.redefined:
            allowed = self.o.segment_redefines.get(_key(it.name))
            if allowed is not None and self.segment not in allowed:
                size = it.actual_size * (it.occurs or 1)
                return None, size
        if it.occurs is None:
            return self._one(it, data, pos)
        count = self._count(it)
        elems = []
        p = pos
        for k in range(it.occurs):
            if self.o.variable_occurs and k >= count:
                break
            v, size = self._one(it, data, p)
            if k < count:
                elems.append(v)
            p += size if self.o.variable_occurs else it.actual_size
        used = p - pos if self.o.variable_occurs else it.actual_size * it.occurs
        return elems, used

    def _one(self, it: Item, data: bytes, pos: int) -> tuple[Any, int]:
        if it.children:
            v, size = self._group(it, data, pos)
            if not v and all(id(c) in self.dropped or _all_dropped(c, self.dropped)
                             for c in it.children):
                return _DROP, size
            return v, size
        v = self.value(it, data[pos:pos + it.size])
        self.counters[_key(it.name)] = v
        return v, it.actual_size


_DROP = object()


class Float32(float):
    """A COMP-1 value: compared with the expected text rounded to float32."""


def _all_dropped(it: Item, dropped: set[int]) -> bool:
    if id(it) in dropped:
        return True
    return bool(it.children) and all(_all_dropped(c, dropped) for c in it.children)


def _blocks(children: tuple[Item, ...]) -> list[list[Item]]:
    out: list[list[Item]] = []
    for c in children:
        if c.redefines is not None and out:
            out[-1].append(c)
        else:
            out.append([c])
    return out


def _static_items(root: Item):
    stack = [root]
    while stack:
        it = stack.pop(0)
        yield it, it.offset
        stack[:0] = list(it.children)


# -- records ---------------------------------------------------------------------------------------

def text_records(data: bytes, size: int, partial: bool) -> list[bytes]:
    """Cobrix's D/D2 text extraction: a line is a record; an over-long line gives its first
    ``size`` bytes and (with partial records) continues as the next record, else its rest is
    dropped; empty lines give no record."""
    out: list[bytes] = []
    i, n, window = 0, len(data), size + 2
    while i < n:
        chunk = data[i:i + window]
        lf = chunk.find(b"\n")
        if lf >= 0:
            rec = chunk[:lf - 1] if lf > 0 and chunk[lf - 1] == 0x0D else chunk[:lf]
            i += lf + 1
        elif i + window > n:
            rec = chunk.rstrip(b"\r")
            i = n
        elif partial:
            rec = chunk[:size]
            i += size
        else:
            rec = chunk[:size]
            nl = data.find(b"\n", i)
            i = n if nl < 0 else nl + 1
        if rec:
            out.append(rec)
    return out


def fixed_records(data: bytes, reader: Reader, o: Options) -> list[bytes]:
    out = []
    if o.variable_occurs:
        pos = 0
        while pos < len(data):
            _, used = reader.decode(data[pos:])
            out.append(data[pos:pos + used])
            pos += used
        return out
    size = reader.record_length() + o.start_offset
    for pos in range(0, len(data) - size + 1, size):
        out.append(data[pos:pos + size])
    return out


# -- a whole variant ---------------------------------------------------------------------------------

def load_copybook(case_dir: Path, variant: dict[str, Any]) -> Copybook:
    records = []
    for f in variant["copybooks"]:
        p = case_dir / f
        records += compile_copybook(p.read_text(encoding="utf-8"), file=str(p)).records
    return Copybook(tuple(records))


def read_rows(case_dir: Path, variant: dict[str, Any]) -> list[dict[str, Any]]:
    """All rows a variant produces, in file order (File_Id/Record_Id when asked)."""
    o = parse_options(variant["options"], variant)
    cb = load_copybook(case_dir, variant)
    reader = Reader(cb, o)
    inputs: list[list[bytes]] = []
    if variant.get("records"):
        inputs.append([r.encode() for r in variant["records"]])
    else:
        for name in variant["data"]:
            raw = (case_dir / name).read_bytes()
            if name.endswith(".gz"):
                raw = gzip.decompress(raw)
            if o.record_format in ("D", "D2") or o.is_text:
                size = reader.record_length() + o.start_offset
                if variant.get("input_kind", "").startswith("lines"):
                    recs = [ln.rstrip(b"\r") for ln in raw.split(b"\n") if ln.strip(b"\r")]
                else:
                    recs = text_records(raw, size, o.partial)
            else:
                recs = fixed_records(raw, reader, o)
            inputs.append(recs)
    rows = []
    for file_id, recs in enumerate(inputs):
        rec_id = 0
        for rec in recs:
            if o.min_len is not None and len(rec) < o.min_len:
                continue
            if o.max_len is not None and len(rec) > o.max_len:
                continue
            body = rec[o.start_offset:]
            row, _ = reader.decode(body)
            if o.segment_filter is not None and reader.segment not in o.segment_filter:
                continue
            if o.record_id:
                row = {"File_Id": file_id, "Record_Id": rec_id,
                       "Record_Byte_Length": len(rec), **row}
            rec_id += 1
            rows.append(row)
    if o.segment_children:
        rows = _nest_children(rows, o, reader)
    return rows


def _nest_children(rows: list[dict[str, Any]], o: Options, reader: Reader) -> list[dict]:
    """segment-children: child segment rows become an array inside the preceding parent."""
    out: list[dict[str, Any]] = []
    names = {_key(n) for n in o.segment_redefines}
    for row in rows:
        present = [k for k in row if _key(k) in names and row[k] is not None]
        seg = present[0] if present else None
        parent = o.segment_children.get(_key(seg)) if seg else None
        if parent is None:
            out.append(row)
            continue
        if not out:
            continue
        holder = out[-1]
        pkey = next(k for k in holder if _key(k) == parent)
        holder[pkey] = holder[pkey] if isinstance(holder[pkey], dict) else {}
        holder[pkey].setdefault(seg, []).append(row[seg])
    for row in out:
        for k in list(row):
            if _key(k) in o.segment_children:
                row.pop(k)
    return out


# -- expected files and comparison -------------------------------------------------------------------

def load_expected(case_dir: Path, variant: dict[str, Any]) -> list[dict[str, Any]] | None:
    name = variant.get("expected")
    if not name:
        return None
    text = (case_dir / name).read_text(encoding=variant.get("expected_encoding", "utf-8"))
    parse = {"parse_float": Decimal}
    kind = variant["expected_format"]
    if kind == "jsonl":
        return [json.loads(ln, **parse) for ln in text.split("\n") if ln.strip()]
    if kind == "json_array":
        return json.loads(text, **parse)
    dec = json.JSONDecoder(**parse)
    out, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)


def _sort_key(value: Any) -> tuple:
    if value is None:
        return (0, 0)
    if isinstance(value, (int, Decimal, float)):
        return (1, Decimal(value))
    return (1, str(value))


def select_rows(rows: list[dict], variant: dict[str, Any], expected: list[dict] | None
                ) -> list[dict]:
    spec = " ".join(str(variant.get(k) or "") for k in ("row_selection", "row_order"))
    m = re.search(r"select\(([^)]*)\)", spec)
    if m:
        keys = re.findall(r'"([^"]+)"', m.group(1))
        rows = [{k: r.get(k) for k in keys} for r in rows]
    m = re.search(r"orderBy\(([^)]*)\)", spec)
    if m:
        keys = re.findall(r'"([^"]+)"', m.group(1))

        def key(r: dict) -> tuple:
            return tuple(_sort_key(_get_ci(r, k)) for k in keys)
        rows = sorted(rows, key=key)
    if expected is not None and re.search(rf"\b{len(expected)}\b", spec):
        rows = rows[:len(expected)]
    return rows


def _get_ci(row: dict, key: str) -> Any:
    for k, v in row.items():
        if k.upper() == key.upper():
            return v
    return None


def compare(actual: Any, expected: Any, path: str, mode: dict[str, Any], out: list[str]) -> None:
    """Field-by-field comparison; a key missing from expected means null."""
    if isinstance(expected, dict) or isinstance(actual, dict):
        if not isinstance(expected, dict) or not isinstance(actual, dict):
            out.append(f"{path}: expected {expected!r}, got {actual!r}")
            return
        for k in sorted(set(expected) | set(actual)):
            if k in mode["ignore"]:
                continue
            compare(actual.get(k), expected.get(k), f"{path}.{k}", mode, out)
        return
    if isinstance(expected, list) or isinstance(actual, list):
        if not isinstance(expected, list) or not isinstance(actual, list) or len(
                expected) != len(actual):
            out.append(f"{path}: expected {expected!r}, got {actual!r}")
            return
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            compare(a, e, f"{path}[{i}]", mode, out)
        return
    if not _equal(actual, expected, mode):
        out.append(f"{path}: expected {expected!r}, got {actual!r}")


def _equal(a: Any, e: Any, mode: dict[str, Any]) -> bool:
    if a is None or e is None:
        return a is None and e is None
    if isinstance(a, Float32):
        return struct.pack(">f", a) == struct.pack(">f", float(e))
    if isinstance(a, float):
        return a == float(e)
    if isinstance(e, (int, Decimal)) and not isinstance(e, bool):
        if not isinstance(a, (int, Decimal)):
            return False
        if mode["via_double"]:
            return float(a) == float(e)
        with decimal.localcontext(decimal.Context(prec=80)):
            return Decimal(a) == Decimal(e)
    if isinstance(e, str) and isinstance(a, str):
        if mode["no_spaces"]:
            return a.replace(" ", "").lower() == e.replace(" ", "").lower()
        return a == e
    return a == e


def check_variant(case_dir: Path, variant: dict[str, Any]) -> list[str]:
    """Problems found in one variant (empty when it conforms)."""
    rows = read_rows(case_dir, variant)
    expected = load_expected(case_dir, variant)
    problems: list[str] = []
    count = variant.get("expected_count")
    if count is not None and len(rows) != count:
        problems.append(f"row count: expected {count}, got {len(rows)}")
    if expected is None:
        return problems
    rows = select_rows(rows, variant, expected)
    if len(rows) != len(expected):
        problems.append(f"rows: expected {len(expected)}, got {len(rows)}")
    mode = {
        "ignore": {"Record_Byte_Length"},
        "via_double": "via_double" in str(variant.get("numbers", "")),
        "no_spaces": "removeWhiteSpace" in str(variant.get("upstream_assertion", "")),
    }
    for i, (a, e) in enumerate(zip(rows, expected, strict=False)):
        compare(a, e, f"row {i}", mode, problems)
        if len(problems) > 20:
            break
    return problems


def all_variants() -> list[tuple[str, str]]:
    index = json.loads((CORPUS / "index.json").read_text())
    out = []
    for case in index["cases"]:
        c = json.loads((CORPUS / case["id"] / "case.json").read_text())
        for v in c["variants"]:
            out.append((case["id"], v["id"]))
    return out


def variant_of(case_id: str, variant_id: str) -> tuple[Path, dict[str, Any]]:
    case_dir = CORPUS / case_id
    c = json.loads((case_dir / "case.json").read_text())
    v = next(v for v in c["variants"] if v["id"] == variant_id)
    return case_dir, v


