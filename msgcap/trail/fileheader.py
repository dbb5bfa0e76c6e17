"""The F record at RBA 0 of every trail file: token groups, encode and decode
(trail-format.md §4)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from msgcap.trail.julian import julian_to_iso, to_julian
from msgcap.trail.layout import REC_F, REC_Z, Layout, layout_for
from props.errors import TrailError

SIGNATURE = b"GG\r\nTL\n\r"
COMPATIBILITY = 3
CHARSET = b"\x20\x00\x00\x00"  # written unchanged in either byte order (§4)
VENDOR_GENERIC = 19
DATA_SOURCE = 3
RECOVERY_MODE = 1
VENDORS = {7: "ORACLE", 19: "GENERIC"}

G_TRAIL, G_MACHINE, G_DATABASE, G_PRODUCER, G_CONTINUITY = 0x30, 0x31, 0x32, 0x33, 0x34


@dataclass(slots=True)
class FileHeader:
    """A decoded F record; dicts keep the keys msgcap dump prints (§17.2), in that order."""

    byteorder: str
    length: int
    trail: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    database: dict[str, Any] = field(default_factory=dict)
    producer: dict[str, Any] = field(default_factory=dict)
    continuity: dict[str, Any] = field(default_factory=dict)
    other: dict[str, str] = field(default_factory=dict)

    @property
    def seqno(self) -> int | None:
        return self.trail.get("seqno")


def version_parts(version: str) -> list[int]:
    """``0.1.0`` → [0, 1, 0, 0, 0] (major, minor, maintenance, bug-fix, build)."""
    parts = [int(p) if p.isdigit() else 0 for p in version.split(".")[:3]]
    return (parts + [0] * 5)[:5]


def default_uri(extract: str, host: str | None = None, cwd: str | None = None) -> str:
    """``uri:<host, . → :>:<working dir, / → :>:<extract>`` (properties.md §10.1)."""
    host = host if host is not None else os.uname().nodename
    cwd = cwd if cwd is not None else os.getcwd()
    return f"uri:{host.replace('.', ':')}:{cwd.replace('/', ':')}:{extract}"


def header_file_name(path: str) -> str:
    """The FileName token: relative names get ``./`` (§4)."""
    if os.path.isabs(path) or path.startswith(("./", "../")):
        return path
    return "./" + path


class _Tokens:
    """Builds a token sequence in one byte order."""

    def __init__(self, lay: Layout) -> None:
        self.lay = lay
        self.parts: list[bytes] = []

    def raw(self, tid: int, value: bytes) -> None:
        self.parts.append(self.lay.head.pack(tid, 0, len(value)) + value)

    def string(self, tid: int, text: str) -> None:
        b = text.encode()
        self.raw(tid, self.lay.u16.pack(len(b)) + b)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


def encode_file_header(*, byteorder: str, seqno: int, file_name: str, uri: str, extract: str,
                       created_us: int, version: str,
                       machine: tuple[str, str, str, str, str] | None = None) -> bytes:
    """The whole F record (head to trailer) msgcap writes at RBA 0 of a new file."""
    lay = layout_for(byteorder)
    vparts = version_parts(version)

    def group(gid: int, sub: _Tokens) -> bytes:
        value = sub.bytes()
        return lay.head.pack(gid, 0, len(value)) + value

    trail = _Tokens(lay)
    trail.raw(0x30, SIGNATURE)
    trail.raw(0x31, lay.u16.pack(COMPATIBILITY))
    trail.raw(0x32, CHARSET)
    trail.raw(0x33, lay.u64.pack(to_julian(created_us)))
    trail.string(0x34, uri)
    trail.string(0x36, header_file_name(file_name))
    trail.raw(0x37, bytes((1,)))
    trail.raw(0x38, lay.u32.pack(seqno))
    mach = _Tokens(lay)
    u = machine or tuple(os.uname())
    for tid, text in zip(range(0x30, 0x35), u, strict=False):  # at most five
        mach.string(tid, text)
    db = _Tokens(lay)
    db.raw(0x30, lay.u16.pack(VENDOR_GENERIC))
    db.string(0x31, "MSGCAP")
    db.string(0x32, "MSGCAP")
    db.raw(0x34, lay.u16.pack(vparts[0]))
    db.raw(0x35, lay.u16.pack(vparts[1]))
    db.string(0x36, f"msgcap {version} JMS message capture")
    prod = _Tokens(lay)
    prod.string(0x30, extract)
    prod.raw(0x31, lay.u16.pack(DATA_SOURCE))
    for tid, part in zip(range(0x32, 0x37), vparts, strict=False):  # at most five
        prod.raw(tid, lay.u16.pack(part))
    prod.string(0x37, f"msgcap {version}")
    cont = _Tokens(lay)
    cont.raw(0x30, lay.u32.pack(RECOVERY_MODE))
    body = b"".join((group(G_TRAIL, trail), group(G_MACHINE, mach), group(G_DATABASE, db),
                     group(G_PRODUCER, prod), group(G_CONTINUITY, cont)))
    total = len(body) + 8
    return lay.head.pack(REC_F, 0, total) + body + lay.head.pack(REC_Z, 0, total)


def detect_byteorder(buf: bytes) -> str | None:
    """Byte order from bytes 10–11 (the signature's length, §11); None if not a trail start."""
    if len(buf) < 12 or buf[0] != REC_F:
        return None
    if buf[10:12] == b"\x00\x08":
        return "big"
    if buf[10:12] == b"\x08\x00":
        return "little"
    return None


def _tokens(lay: Layout, buf: bytes, start: int, end: int) -> list[tuple[int, int, bytes]] | None:
    """(id, info, value) of the tokens exactly filling buf[start:end], or None."""
    out, p, head = [], start, lay.head
    while p < end:
        if p + 4 > end:
            return None
        tid, info, n = head.unpack_from(buf, p)
        if p + 4 + n > end:
            return None
        out.append((tid, info, bytes(buf[p + 4:p + 4 + n])))
        p += 4 + n
    return out


def _string(lay: Layout, v: bytes) -> str | None:
    if len(v) < 2 or lay.u16.unpack_from(v)[0] != len(v) - 2:
        return None
    return v[2:].decode(errors="replace")


def _int(lay: Layout, v: bytes) -> int | None:
    if len(v) == 1:
        return v[0]
    st = {2: lay.u16, 4: lay.u32, 8: lay.u64}.get(len(v))
    return None if st is None else st.unpack(v)[0]


# (group, token) → (section, key, kind); kind: s string, i integer, h hex, t Julian time.
_KNOWN = {
    (0x30, 0x31): ("trail", "compatibility", "i"), (0x30, 0x32): ("trail", "charset", "h"),
    (0x30, 0x33): ("trail", "creation_time", "t"), (0x30, 0x34): ("trail", "uri", "s"),
    (0x30, 0x36): ("trail", "file_name", "s"), (0x30, 0x37): ("trail", "multipart", "i"),
    (0x30, 0x38): ("trail", "seqno", "i"),
    (0x31, 0x30): ("machine", "os", "s"), (0x31, 0x31): ("machine", "node", "s"),
    (0x31, 0x32): ("machine", "release", "s"), (0x31, 0x33): ("machine", "version", "s"),
    (0x31, 0x34): ("machine", "hardware", "s"),
    (0x32, 0x30): ("database", "vendor", "i"), (0x32, 0x31): ("database", "name", "s"),
    (0x32, 0x32): ("database", "instance", "s"), (0x32, 0x34): (None, "major", "i"),
    (0x32, 0x35): (None, "minor", "i"), (0x32, 0x36): ("database", "version", "s"),
    (0x33, 0x30): ("producer", "name", "s"), (0x33, 0x31): ("producer", "data_source", "i"),
    (0x33, 0x37): ("producer", "version_string", "s"),
    (0x34, 0x30): ("continuity", "recovery_mode", "i"),
}
_ORDER = {
    "trail": ("compatibility", "charset", "creation_time", "uri", "file_name", "multipart",
              "seqno"),
    "machine": ("os", "node", "release", "version", "hardware"),
    "database": ("vendor", "name", "instance", "version"),
    "producer": ("name", "data_source", "version", "version_string"),
    "continuity": ("recovery_mode",),
}


def decode_file_header(buf: bytes, file: str) -> FileHeader:
    """Decode the F record at the start of ``buf``; TrailError "not a trail file" if it is not one.

    ``buf`` must hold the whole F record (callers check ``f_record_length`` first).
    """
    order = detect_byteorder(buf)
    if order is None:
        raise TrailError("not a trail file (no file header record)", file=file, rba=0)
    lay = layout_for(order)
    _, _, total = lay.head.unpack_from(buf, 0)
    if total < 8 or total > len(buf):
        raise TrailError(f"not a trail file (file header length {total})", file=file, rba=0)
    zid, _, ztotal = lay.head.unpack_from(buf, total - 4)
    groups = _tokens(lay, buf, 4, total - 4)
    if zid != REC_Z or ztotal != total or groups is None:
        raise TrailError("not a trail file (file header record is corrupt)", file=file, rba=0)
    hdr = FileHeader(order, total)
    found: dict[str, dict[str, Any]] = {k: {} for k in _ORDER}
    version: list[int] = []
    signature = False
    for gid, _, gval in groups:
        subs = _tokens(lay, gval, 0, len(gval))
        if subs is None:
            hdr.other[f"{gid:02x}"] = gval.hex()
            continue
        for tid, info, v in subs:
            if gid == G_TRAIL and tid == 0x30:
                signature = v == SIGNATURE
                continue
            if info == 0xFF:
                continue
            if gid == G_PRODUCER and 0x32 <= tid <= 0x36 and len(v) == 2:
                version.append(lay.u16.unpack(v)[0])
                continue
            known = _KNOWN.get((gid, tid))
            value: Any = None
            if known is not None:
                kind = known[2]
                if kind == "s":
                    value = _string(lay, v)
                elif kind == "h":
                    value = v.hex()
                else:
                    value = _int(lay, v)
                    if kind == "t" and value is not None:
                        value = julian_to_iso(value)
            if value is None:
                hdr.other[f"{gid:02x}.{tid:02x}"] = v.hex()
            elif known is not None and known[0] is not None:  # (a value has a known place)
                found[known[0]][known[1]] = value
    if not signature:
        raise TrailError("not a trail file (no GoldenGate signature)", file=file, rba=0)
    if version:
        found["producer"]["version"] = version
    for section, keys in _ORDER.items():
        setattr(hdr, section, {k: found[section][k] for k in keys if k in found[section]})
    return hdr


def f_record_length(buf: bytes) -> int | None:
    """The F record's length from its head, once the byte order is known; None if undecidable."""
    order = detect_byteorder(buf)
    if order is None:
        return None
    return layout_for(order).head.unpack_from(buf, 0)[2]


def vendor_name(code: int | None) -> str:
    return VENDORS.get(code, "?") if code is not None else "?"
