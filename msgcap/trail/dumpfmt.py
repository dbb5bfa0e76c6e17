"""What ``msgcap dump`` prints: JSON objects (trail-format.md §17.2) and Logdump-style
text (§17.1).

Pure functions of decoded headers and records, so tests check them without files.
"""

from __future__ import annotations

import logging
from typing import Any

from gendef.model import Table
from msgcap.trail.columns import TableDecoder
from msgcap.trail.fileheader import FileHeader, vendor_name
from msgcap.trail.julian import julian_to_iso
from msgcap.trail.layout import NULL_IND, TOKEN_NAMES, VALUE_IND
from msgcap.trail.reader import (
    H_CONTINUED,
    H_FORMAT_TYPE,
    H_HDR_IND,
    H_INCOMPLETE,
    H_ORIG_NODE,
    H_PARTITION,
    H_REC_COUNT,
    H_SYSKEY_LEN,
    H_UNDO,
    Record,
)
from msgcap.trail.records import IOTYPE_TRUNCATE, OP_NAMES
from props.text import escape

log = logging.getLogger("msgcap.trail")

TEXT_OPS = {5: "Insert", 3: "Delete", 10: "Update", 15: "FieldComp", 115: "GGSPKUpdate",
            100: "PurgeData"}
_TRANSIND_LETTER = "bmes"


def scaled(value: int, scale: int) -> str:
    """An integer holding value × 10^scale as decimal text with exactly ``scale`` digits."""
    if scale <= 0:
        return str(value)
    digits = str(abs(value)).rjust(scale + 1, "0")
    return f"{'-' if value < 0 else ''}{digits[:-scale]}.{digits[-scale:]}"


def _text(v: bytes) -> str:
    """Token text, or lowercase hex when it is not printable UTF-8."""
    try:
        s = v.decode()
    except UnicodeDecodeError:
        return v.hex()
    return s if s.isprintable() else v.hex()


def tokens(rec: Record) -> dict[str, str]:
    out = {TOKEN_NAMES.get(tid, f"x{tid:02x}"): _text(v) for tid, v in rec.tokens.items()}
    for name, v in rec.user_tokens.items():
        out[name] = _text(v)
    return out


def header_json(file: str, hdr: FileHeader) -> dict[str, Any]:
    obj: dict[str, Any] = {"file": file, "rba": 0, "kind": "file-header",
                           "byte_order": hdr.byteorder}
    for key in ("trail", "machine", "database", "producer", "continuity"):
        section = getattr(hdr, key)
        if section:
            obj[key] = section
    if hdr.other:
        obj["other"] = hdr.other
    return obj


def _value_text(value: Any, scale: int) -> Any:
    if isinstance(value, int):
        return scaled(value, scale)
    if isinstance(value, bytes):
        return value.hex()
    return value


def _odd_indicators(rec: Record, entries: list[tuple[int, bytes]]) -> dict[int, bytes]:
    """Spans whose null indicator is neither 00 00 nor FF FF: shown raw, with a warning (§9.3)."""
    odd = {i: bytes(span) for i, span in entries if span[:2] not in (VALUE_IND, NULL_IND)}
    for i, span in odd.items():
        log.warning("%s: RBA %d: column %d has null indicator %s; showing raw bytes", rec.file,
                    rec.rba, i, span[:2].hex())
    return odd


def _typed(rec: Record, table: Table, entries: list[tuple[int, bytes]], values: list[Any],
           all_columns: bool) -> list[dict[str, Any]]:
    present = {i for i, _ in entries}
    odd = _odd_indicators(rec, entries)
    out = []
    for i, col in enumerate(table.columns):
        if i in odd:
            out.append({"index": i, "name": col.name, "null": False, "value": odd[i].hex()})
        elif i in present:
            v = values[i]
            out.append({"index": i, "name": col.name, "null": v is None,
                        "value": None if v is None else _value_text(v, col.scale)})
        elif all_columns:
            out.append({"index": i, "name": col.name, "missing": True, "null": False,
                        "value": None})
    return out


def _raw(entries: list[tuple[int, bytes]]) -> list[dict[str, Any]]:
    out = []
    for i, span in sorted(entries, key=lambda e: e[0]):
        null = span[:2] == NULL_IND
        out.append({"index": i, "name": None, "null": null,
                    "value": None if null else bytes(span).hex()})
    return out


def record_json(rec: Record, decoder: TableDecoder | None) -> dict[str, Any]:
    """One data record as §17.2's object; ``decoder`` None shows raw spans."""
    iotype = rec.iotype
    op = OP_NAMES.get(iotype)
    obj: dict[str, Any] = {"file": rec.file, "rba": rec.rba, "kind": "record", "iotype": iotype,
                           "op": op, "before_after": rec.before_after, "transind": rec.transind,
                           "io_time": julian_to_iso(rec.io_time), "table": rec.table}
    before_cols = None
    if op is None:
        obj["data_hex"] = bytes(rec.data).hex()
        obj["columns"] = []
    elif iotype == IOTYPE_TRUNCATE:
        obj["columns"] = []
    else:
        before, after = rec.images()
        if decoder is None:
            obj["columns"] = _raw(after)
            before_cols = None if before is None else _raw(before)
        else:
            bvals, avals = rec.values(decoder)
            obj["columns"] = _typed(rec, decoder.table, after, avals, True)
            if before is not None and bvals is not None:  # (a PK update has both)
                before_cols = _typed(rec, decoder.table, before, bvals, False)
    if before_cols is not None:
        obj["before"] = before_cols
    obj["tokens"] = tokens(rec)
    return obj


# -- text ---------------------------------------------------------------------------------------

def _ch(b: int) -> str:
    return chr(b) if 0x21 <= b < 0x7F else "."


def header_text(file: str, hdr: FileHeader) -> str:
    t, m, d, p = hdr.trail, hdr.machine, hdr.database, hdr.producer
    lines = [
        f"File {file}  {hdr.byteorder}-endian  compatibility {t.get('compatibility', '?')}",
        f"FileHeader  Len {hdr.length}  RBA 0",
        f"  TrailInfo     created {t.get('creation_time', '?')}  uri {t.get('uri', '?')}",
        (f"                file {t.get('file_name', '?')}  seqno {t.get('seqno', '?')}  "
        f"multipart {t.get('multipart', '?')}  charset {t.get('charset', '?')}"),
    ]
    if m:
        lines.append("  MachineInfo   " + " ".join(str(v) for v in m.values()))
    if d:
        lines.append(f"  DatabaseInfo  vendor {d.get('vendor', '?')} "
                     f"({vendor_name(d.get('vendor'))})  name {d.get('name', '?')}  "
                     f"{d.get('version', '')}")
    if p:
        version = ".".join(str(v) for v in p.get("version", []))
        lines.append(f"  ProducerInfo  {p.get('name', '?')}  data source "
                     f"{p.get('data_source', '?')}  version {version}")
    for key, value in hdr.other.items():
        lines.append(f"  Other {key}: {value}")
    return "\n".join(lines)


def _field(label: str, v: int, width: int = 2) -> str:
    return f"{label:<11}:{_ch(v):>6}  (x{v:0{width}x})"


def record_text(rec: Record, decoder: TableDecoder | None) -> str:
    h = rec.header
    ind = rec.transind
    lines = [
        "_" * 67,
        f"{_field('Hdr-Ind', h[H_HDR_IND])}     {_field('Partition', h[H_PARTITION])}",
        f"{_field('UndoFlag', h[H_UNDO])}     {_field('BeforeAfter', ord(rec.before_after))}",
        (f"{'RecLength':<11}:{rec.rec_length:>6}  (x{rec.rec_length:04x})   "
        f"{'IO Time':<11}: {julian_to_iso(rec.io_time)}"),
        (f"{'IOType':<11}:{rec.iotype:>6}  (x{rec.iotype:02x})     "
        f"{'OrigNode':<11}:{h[H_ORIG_NODE]:>6}  (x{h[H_ORIG_NODE]:02x})"),
        f"{_field('TransInd', ind)}     {_field('FormatType', h[H_FORMAT_TYPE])}",
        (f"{'SyskeyLen':<11}:{h[H_SYSKEY_LEN]:>6}  (x{h[H_SYSKEY_LEN]:02x})     "
        f"{_field('Incomplete', h[H_INCOMPLETE])}"),
        f"{'AuditRBA':<11}:{rec.audit_rba:>11}       {'AuditPos':<11}: {rec.audit_pos}",
        (f"{'Continued':<11}:{'Y' if h[H_CONTINUED] else 'N':>6}  (x{h[H_CONTINUED]:02x})     "
        f"{'RecCount':<11}:{h[H_REC_COUNT]:>6}  (x{h[H_REC_COUNT]:02x})"),
        "",
        (f"{julian_to_iso(rec.io_time)} {TEXT_OPS.get(rec.iotype, f'IOType {rec.iotype}'):<20} "
        f"Len {rec.rec_length:>5} RBA {rec.rba}"),
        f"Name: {escape(rec.table)}",
    ]
    image = "After  Image:" if rec.before_after == "A" else "Before Image:"
    letter = _TRANSIND_LETTER[ind] if ind < 4 else "?"
    lines.append(f"{image:<58}Partition x{h[H_PARTITION]:02x}   G  {letter}")
    if OP_NAMES.get(rec.iotype) is None:
        if rec.data:
            lines.append(f"Data (hex): {bytes(rec.data).hex()}")
    elif rec.iotype != IOTYPE_TRUNCATE:
        before, after = rec.images()
        if decoder is None:
            if before is not None:
                lines.append("Key before image:")
                lines.extend(_raw_lines(before))
            lines.extend(_raw_lines(after))
        else:
            bvals, avals = rec.values(decoder)
            if before is not None and bvals is not None:  # (a PK update has both)
                lines.append("Key before image:")
                lines.extend(_typed_lines(rec, decoder.table, before, bvals))
            lines.extend(_typed_lines(rec, decoder.table, after, avals))
    if rec.tokens:
        lines.append("GGS tokens:")
        for tid, v in rec.tokens.items():
            lines.append(f"  {TOKEN_NAMES.get(tid, f'x{tid:02x}'):<8} (x{tid:02x}) : {_text(v)}")
    if rec.user_tokens:
        lines.append("User tokens:")
        for name, v in rec.user_tokens.items():
            lines.append(f"  {name:<8} : {_text(v)}")
    return "\n".join(lines)


def _hex_groups(span: bytes) -> str:
    h = bytes(span).hex()
    return " ".join(h[i:i + 4] for i in range(0, len(h), 4))


def _raw_lines(entries: list[tuple[int, bytes]]) -> list[str]:
    return [f"Column {i:>5} (x{i:04x}), Len {len(s):>5} (x{len(s):04x})  {_hex_groups(s)}"
            for i, s in entries]


def _typed_lines(rec: Record, table: Table, entries: list[tuple[int, bytes]],
                 values: list[Any]) -> list[str]:
    width = max((len(c.name) for c in table.columns), default=0)
    odd = _odd_indicators(rec, entries)
    out = []
    for i, _ in entries:
        col, v = table.columns[i], values[i]
        if i in odd:
            shown = f"raw {_hex_groups(odd[i])}"
        elif v is None:
            shown = "NULL"
        else:
            shown = repr(_value_text(v, col.scale))
        out.append(f"Column {i:>5} {col.name:<{width}} : {shown}")
    return out
