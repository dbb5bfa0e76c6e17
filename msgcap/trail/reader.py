"""Trail reading: the writer's exact inverse (trail-format.md §13).

``TrailFile`` walks one file forwards (chunked reads, ``unpack_from`` at offsets) or backwards
(the ``Z`` trailer's length), stops cleanly at a partial tail (``tail`` tells where) and raises
``TrailError`` naming file and RBA on corruption. ``TrailReader`` follows roll-over across a
sequence of files and decodes columns when given definitions.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Self

from gendef.model import Definitions, Table
from msgcap.trail.columns import TableDecoder
from msgcap.trail.fileheader import FileHeader, decode_file_header, f_record_length
from msgcap.trail.julian import from_julian
from msgcap.trail.layout import (
    HEADER_FIXED,
    MIN_RECORD,
    REC_G,
    REC_Z,
    TOK_D,
    TOK_H,
    TOK_T,
    TOK_U,
    TOKEN_TRANID,
    TOKEN_VAMSEQID,
    Layout,
    layout_for,
)
from msgcap.trail.records import IOTYPE_PKUPDATE
from props.errors import TrailError
from props.inputs import open_input
from props.text import escape, name_text

log = logging.getLogger("msgcap.trail")

CHUNK = 1 << 20

# Indexes into Record.header (the 34 fixed GHDR bytes, §5).
(H_HDR_IND, H_PARTITION, H_UNDO, H_BEFORE_AFTER, H_REC_LENGTH, H_IOTYPE, H_ORIG_NODE, H_IO_TIME,
 H_AUDIT_POS, H_RESERVED, H_AUDIT_RBA, H_TRANSIND, H_FORMAT_TYPE, H_SYSKEY_LEN, H_INCOMPLETE,
 H_CONTINUED, H_REC_COUNT) = range(17)


@dataclass(slots=True, eq=False)
class Record:
    """One data record as read: header fields, table name, tokens and the raw D area."""

    file: str
    rba: int
    length: int
    layout: Layout
    header: tuple[int, ...]
    table: str
    data: bytes
    tokens: dict[int, bytes]
    user_tokens: dict[str, bytes]

    @property
    def end(self) -> int:
        return self.rba + self.length

    @property
    def before_after(self) -> str:
        return chr(self.header[H_BEFORE_AFTER])

    @property
    def iotype(self) -> int:
        return self.header[H_IOTYPE]

    @property
    def transind(self) -> int:
        return self.header[H_TRANSIND]

    @property
    def io_time(self) -> int:
        """Julian µs as stored."""
        return self.header[H_IO_TIME]

    @property
    def io_time_us(self) -> int:
        """µs since 1970-01-01 UTC."""
        return from_julian(self.header[H_IO_TIME])

    @property
    def audit_pos(self) -> int:
        return self.header[H_AUDIT_POS]

    @property
    def audit_rba(self) -> int:
        return self.header[H_AUDIT_RBA]

    @property
    def rec_length(self) -> int:
        return self.header[H_REC_LENGTH]

    @property
    def txid(self) -> str | None:
        v = self.tokens.get(TOKEN_TRANID)
        return None if v is None else v.decode(errors="replace")

    @property
    def seqid(self) -> str | None:
        v = self.tokens.get(TOKEN_VAMSEQID)
        return None if v is None else v.decode(errors="replace")

    def _entries(self, data: bytes, start: int, end: int) -> list[tuple[int, bytes]]:
        out, p, entry = [], start, self.layout.entry.unpack_from
        while p < end:
            if p + 4 > end:
                raise TrailError("column entries do not fill the data area", file=self.file,
                                 rba=self.rba)
            index, n = entry(data, p)
            if p + 4 + n > end:
                raise TrailError(f"column {index} length {n} runs past the data area",
                                 file=self.file, rba=self.rba)
            out.append((index, data[p + 4:p + 4 + n]))
            p += 4 + n
        return out

    def entries(self) -> list[tuple[int, bytes]]:
        """(column index, span) of the image; for a PK update, the after image."""
        return self.images()[1]

    def images(self) -> tuple[list[tuple[int, bytes]] | None, list[tuple[int, bytes]]]:
        """(key before entries or None, entries): the before part exists for PK updates only."""
        d = self.data
        if self.iotype != IOTYPE_PKUPDATE:
            return None, self._entries(d, 0, len(d))
        if len(d) < 2:
            raise TrailError("PK update without before_len", file=self.file, rba=self.rba)
        (blen,) = self.layout.u16.unpack_from(d, 0)
        if 2 + blen > len(d):
            raise TrailError(f"PK update before_len {blen} runs past the data area",
                             file=self.file, rba=self.rba)
        return self._entries(d, 2, 2 + blen), self._entries(d, 2 + blen, len(d))

    def values(self, decoder: TableDecoder) -> tuple[list[Any] | None, list[Any]]:
        """Typed (key before values or None, values), MISSING where the record has no entry."""
        d = self.data
        try:
            if self.header[H_IOTYPE] != IOTYPE_PKUPDATE:
                return None, decoder.decode(d, 0, len(d))
            if len(d) < 2:
                raise ValueError("PK update without before_len")
            (blen,) = self.layout.u16.unpack_from(d, 0)
            if 2 + blen > len(d):
                raise ValueError(f"PK update before_len {blen} runs past the data area")
            return decoder.decode(d, 2, 2 + blen), decoder.decode(d, 2 + blen, len(d))
        except ValueError as exc:
            raise TrailError(f"table {self.table}: {exc}", file=self.file, rba=self.rba) from None


@dataclass(frozen=True, slots=True)
class Tail:
    """Where data ends without a complete record: ``pending`` bytes at ``rba`` (a partial tail)."""

    file: str
    rba: int
    pending: int

    def __str__(self) -> str:
        return f"{self.file}: end of data at RBA {self.rba} ({self.pending} bytes pending)"


def _parse_tokens(lay: Layout, v: bytes) -> dict[int, bytes]:
    out, p, n_all, head = {}, 0, len(v), lay.head.unpack_from
    while p + 4 <= n_all:
        tid, _, n = head(v, p)
        out[tid] = v[p + 4:p + 4 + n]
        p += 4 + n
    if p != n_all:
        raise ValueError("GGS token area is corrupt")
    return out


def _parse_user_tokens(v: bytes) -> dict[str, bytes]:
    parts = v.split(b"\x00")
    if parts and parts[-1] == b"":
        parts.pop()
    return {parts[i].decode(errors="replace"): parts[i + 1] for i in range(0, len(parts) - 1, 2)}


def _trailer_before(lay: Layout, buf: bytes, p: int, avail: int) -> int | None:
    """The real length of a record whose head claims more bytes than remain, when its inner
    tokens lead to a complete trailer (a corrupt length, not a partial tail); else None."""
    head, end, q = lay.head.unpack_from, p + avail, p + 4
    while q + 4 <= end:
        tid, _, n = head(buf, q)
        if tid == REC_Z:
            return n if n == q + 4 - p else None
        if tid not in (TOK_H, TOK_D, TOK_T, TOK_U):
            return None
        q += 4 + n
    return None


def parse_record(buf: bytes, p: int, total: int, lay: Layout, file: str, rba: int,
                 names: dict[bytes, str]) -> Record:
    """The record at buf[p:p+total] (head and trailer already checked); corruption raises."""
    end = p + total - 4
    q = p + 4
    head = lay.head.unpack_from
    header = None
    table = ""
    data = b""
    has_d = False
    tokens: dict[int, bytes] = {}
    user: dict[str, bytes] = {}
    while q < end:
        if q + 4 > end:
            raise TrailError("inner tokens do not fill the record", file=file, rba=rba)
        tid, _, n = head(buf, q)
        v0 = q + 4
        q = v0 + n
        if q > end:
            raise TrailError(f"inner token x{tid:02x} runs past the record", file=file, rba=rba)
        if tid == TOK_H:
            if n < HEADER_FIXED + 1:
                raise TrailError(f"record header of {n} bytes", file=file, rba=rba)
            header = lay.header.unpack_from(buf, v0)
            raw = buf[v0 + HEADER_FIXED:q]
            name = names.get(raw)
            if name is None:
                name = raw.split(b"\x00", 1)[0].decode(errors="replace")
                names[raw] = name
            table = name
        elif tid == TOK_D:
            data = buf[v0:q]
            has_d = True
        elif tid == TOK_T:
            try:
                tokens = _parse_tokens(lay, buf[v0:q])
            except ValueError as exc:
                raise TrailError(str(exc), file=file, rba=rba) from None
        elif tid == TOK_U:
            user = _parse_user_tokens(buf[v0:q])
    if header is None:
        raise TrailError("record without header token", file=file, rba=rba)
    if header[H_REC_LENGTH] != len(data) and not (has_d is False and header[H_REC_LENGTH] == 0):
        raise TrailError(f"RecLength {header[H_REC_LENGTH]} but data area of {len(data)} bytes",
                         file=file, rba=rba)
    return Record(file, rba, total, lay, header, table, data, tokens, user)


class TrailFile:
    """One trail file: its F header, then records forwards or backwards."""

    def __init__(self, path: str, display: str | None = None, *, finished: bool = False) -> None:
        self.path = path
        self.name = display or path
        self.finished = finished  # the writer had left it: a partial tail is a cut, not a write
        try:
            self._f = open_input(path)  # closed by close()
        except OSError as exc:
            raise TrailError(f"cannot open: {exc.strerror}", file=self.name) from None
        self.size = os.fstat(self._f.fileno()).st_size
        self.header: FileHeader | None = None
        self.tail: Tail | None = None
        self._names: dict[bytes, str] = {}
        first = self._f.read(min(self.size, 1 << 16))
        flen = f_record_length(first) if len(first) >= 12 else None
        if flen is None:
            if self.size < 12 and (not first or first[0] == 0x46):
                self.tail = Tail(self.name, 0, self.size)
                return
            raise TrailError("not a trail file (no file header record)", file=self.name, rba=0)
        if flen > len(first):
            if flen > self.size:
                self.tail = Tail(self.name, 0, self.size)
                return
            first += self._f.read(flen - len(first))
        self.header = decode_file_header(first[:flen], self.name)
        self.layout = layout_for(self.header.byteorder)
        self.data_start = flen

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def byteorder(self) -> str | None:
        return self.header.byteorder if self.header else None

    def records(self, start: int | None = None) -> Iterator[Record]:
        """Records from ``start`` (a record start; default the first after the F record).

        Ends at the end of the file or at a partial tail (then ``self.tail`` is set).
        """
        if self.header is None:
            return
        pos = self.data_start if start is None else start
        if pos < self.data_start or pos > self.size:
            raise TrailError(f"RBA {pos} is outside the data of the file", file=self.name, rba=pos)
        self.tail = None
        lay = self.layout
        head = lay.head.unpack_from
        names, file, size = self._names, self.name, self.size
        f = self._f
        f.seek(pos)
        buf = f.read(CHUNK)
        base = pos  # file offset of buf[0]
        p = 0
        while True:
            avail = len(buf) - p
            if avail < 4 or head(buf, p)[2] > avail:
                if base + len(buf) < size:  # more in the file: refill
                    buf = buf[p:] + f.read(max(CHUNK, 65540))
                    base += p
                    p = 0
                    avail = len(buf)
                    if avail >= 4 and head(buf, 0)[2] <= avail:
                        continue
                if avail == 0:
                    return
                rid, _, total = head(buf, p) if avail >= 4 else (buf[p], 0, 0)
                if rid != REC_G or (avail >= 4 and total < MIN_RECORD):
                    raise TrailError(f"invalid record head x{rid:02x}", file=file, rba=base + p)
                real = _trailer_before(lay, buf, p, avail)
                if real is not None:
                    raise TrailError(f"record length {total} but its trailer says {real}",
                                     file=file, rba=base + p)
                self.tail = Tail(file, base + p, avail)
                return
            rid, _, total = head(buf, p)
            rba = base + p
            zid, _, ztotal = head(buf, p + total - 4) if total >= 8 else (0, 0, -1)
            if rid != REC_G or total < MIN_RECORD:
                if rid != REC_G and total >= 8 and zid == REC_Z and ztotal == total:
                    log.warning("%s: RBA %d: skipping record of unknown type x%02x", file, rba,
                                rid)
                    p += total
                    continue
                raise TrailError(f"invalid record head x{rid:02x} length {total}", file=file,
                                 rba=rba)
            if zid != REC_Z or ztotal != total:
                if rba + total == size:  # the trailer is missing at the very end: partial
                    self.tail = Tail(file, rba, total)
                    return
                raise TrailError("record trailer missing or length mismatch", file=file,
                                 rba=rba)
            yield parse_record(buf, p, total, lay, file, rba, names)
            p += total

    def record_at(self, rba: int) -> Record:
        """The record starting at ``rba`` (must be complete and valid)."""
        if self.header is None:
            raise TrailError("file has no complete header", file=self.name, rba=0)
        f, head = self._f, self.layout.head.unpack_from
        f.seek(rba)
        first = f.read(4)
        if len(first) < 4:
            raise TrailError("no record here (end of file)", file=self.name, rba=rba)
        rid, _, total = head(first)
        if rid != REC_G or total < MIN_RECORD:
            raise TrailError(f"no record starts here (x{rid:02x})", file=self.name, rba=rba)
        buf = first + f.read(total - 4)
        if len(buf) < total:
            raise TrailError("partial record", file=self.name, rba=rba)
        zid, _, ztotal = head(buf, total - 4)
        if zid != REC_Z or ztotal != total:
            raise TrailError("record trailer missing or length mismatch", file=self.name,
                             rba=rba)
        return parse_record(buf, 0, total, self.layout, self.name, rba, self._names)

    def backward(self, end: int | None = None) -> Iterator[Record]:
        """Records ending at ``end`` (a record end; default the end of the file), newest first."""
        if self.header is None:
            return
        e = self.size if end is None else end
        f, head = self._f, self.layout.head.unpack_from
        while e > self.data_start:
            if e - 4 < self.data_start:
                raise TrailError("no record trailer before this point", file=self.name, rba=e)
            f.seek(e - 4)
            zid, _, total = head(f.read(4))
            start = e - total
            if zid != REC_Z or total < MIN_RECORD or start < self.data_start:
                raise TrailError("no record trailer ends here", file=self.name, rba=e)
            rec = self.record_at(start)
            yield rec
            e = start


def trail_seqno(name: str, base: str, width: int) -> int | None:
    """The sequence number of the file called ``name`` in a trail of prefix ``base`` (the
    prefix's file-name part, ``sa``) and ``width``-digit numbers; None when ``name`` is not
    one of its files. The one reading of trail file names (trail-format.md §2): ``base`` and
    exactly ``width`` ASCII digits. ``str.isdigit``, ``\\d`` and ``int`` take other digits too
    (``٣``, ``²``): a name with them is no trail file."""
    digits = name[len(base):]
    if (name.startswith(base) and len(digits) == width and digits.isascii()
            and digits.isdigit()):
        return int(digits)
    return None


def split_trail_name(path: str) -> tuple[str, int, int] | None:
    """``dirdat/aa000000012`` → ("dirdat/aa", 12, 9); None for other names.

    Nine digits are taken as a 12.3+ name; six digits only after a two-character prefix.
    """
    name = os.path.basename(path)
    for width in (9, 6):
        base = name[:-width]
        seqno = trail_seqno(name, base, width)
        if seqno is not None and (width == 9 or len(base) == 2):
            return path[:-width], seqno, width
    return None


def trail_file_name(prefix: str, seqno: int, width: int) -> str:
    return f"{prefix}{seqno:0{width}d}"


def has_later_file(path: str) -> bool:
    """Whether a file with a higher sequence number than trail file ``path`` exists."""
    parts = split_trail_name(path)
    if parts is None:
        return False
    prefix, seqno, width = parts
    return os.path.exists(trail_file_name(prefix, seqno + 1, width)) or any(
        s > seqno for s, _ in sequence_files(prefix, width))


def sequence_files(prefix: str, width: int) -> list[tuple[int, str]]:
    """Existing files ``<prefix><exactly width ASCII digits>`` (``trail_seqno``), by sequence
    number."""
    d, base = os.path.split(prefix)
    out = []
    for n in _names(d):
        seqno = trail_seqno(n, base, width)
        if seqno is not None:
            out.append((seqno, os.path.join(d, n) if d else n))
    return sorted(out)


def stray_files(prefix: str, width: int) -> list[str]:
    """Files named like the trail's (``<prefix>`` and ``width`` characters) that are not its
    files (``trail_seqno``: other digits than ASCII ones, other characters): every reader and
    the writer ignore them; the commands name them in a warning."""
    d, base = os.path.split(prefix)
    return sorted(os.path.join(d, n) if d else n for n in _names(d)
                  if n.startswith(base) and len(n) == len(base) + width
                  and trail_seqno(n, base, width) is None)


def stray_warning(prefix: str, width: int) -> str | None:
    """The warning naming the trail's stray files (``stray_files``); None without any."""
    strays = stray_files(prefix, width)
    if not strays:
        return None
    names = ", ".join(escape(name_text(path)) for path in strays)
    return (f"ignored {names}: not a trail file name ({os.path.basename(prefix)} and {width} "
            "ASCII digits)")


def _names(directory: str) -> list[str]:
    """The names in ``directory`` (the current one for ''); none when it is no directory."""
    try:
        return os.listdir(directory or ".")
    except (FileNotFoundError, NotADirectoryError):
        return []


class TrailReader:
    """Records of trail files in order, following roll-over; typed columns with definitions.

    ``paths``: files in the order given; with ``follow`` (default), after the last one the
    reader continues with ``<prefix><seqno+1>`` while such files exist; when that file is missing
    but a later one of the sequence exists, the gap is logged as a warning, recorded in ``gaps``
    (missing file, the file read next) and reading goes on there. ``start_rba`` positions the
    first file. ``tail`` is set when reading stopped at a partial tail. ``cuts`` holds the
    partial tails of files that are not the last of their sequence (``files()``): records lost,
    not records being written.
    """

    def __init__(self, paths: list[str] | str, definitions: Definitions | None = None, *,
                 start_rba: int | None = None, follow: bool = True) -> None:
        self.paths = [paths] if isinstance(paths, str) else list(paths)
        self.definitions = definitions
        self.start_rba = start_rba
        self.follow = follow
        self.tail: Tail | None = None
        self.gaps: list[tuple[str, str]] = []
        self.cuts: list[Tail] = []
        self._decoders: dict[tuple[str, str], TableDecoder] = {}
        self.current: TrailFile | None = None

    def files(self) -> Iterator[TrailFile]:
        """Each file opened in turn (closed when the next one is opened).

        A partial tail is a record being written, unless a later file of the sequence existed
        before the file was opened: the writer finishes a file before it creates the next, so
        such a tail will never be completed, and it goes to ``cuts``."""
        queue = list(self.paths)
        while queue:
            path = queue.pop(0)
            tf = TrailFile(path, finished=has_later_file(path))  # (evaluated before opening)
            self.current = tf
            try:
                yield tf
            finally:
                tf.close()
            if tf.tail is not None and tf.finished:
                self.cuts.append(tf.tail)
                log.warning("%s; the file is not the last of its trail, so that record is lost",
                            tf.tail)
            if not queue and self.follow:
                parts = split_trail_name(path)
                if parts:
                    prefix, seqno, width = parts
                    nxt = trail_file_name(prefix, seqno + 1, width)
                    if os.path.exists(nxt):
                        queue.append(nxt)
                        continue
                    later = [p for s, p in sequence_files(prefix, width) if s > seqno]
                    if later:
                        self.gaps.append((nxt, later[0]))
                        log.warning("%s is missing: the trail has a gap; going on with %s",
                                    nxt, later[0])
                        queue.append(later[0])

    def __iter__(self) -> Iterator[Record]:
        first = True
        for tf in self.files():
            if self.tail is not None:  # a partial tail before a further file is corruption
                raise TrailError(f"incomplete record ({self.tail.pending} bytes) before the "
                                 f"next file {tf.name}", file=self.tail.file, rba=self.tail.rba)
            start = self.start_rba if first else None
            first = False
            yield from tf.records(start)
            self.tail = tf.tail

    def decoder(self, rec: Record) -> TableDecoder:
        """The decoder for the record's table; TrailError if it is not in the definitions."""
        key = (rec.table, rec.layout.byteorder)
        dec = self._decoders.get(key)
        if dec is None:
            table: Table | None = self.definitions.get(rec.table) if self.definitions else None
            if table is None:
                raise TrailError(f"table {rec.table} is not in the definitions", file=rec.file,
                                 rba=rec.rba)
            dec = TableDecoder(table, rec.layout)
            self._decoders[key] = dec
        return dec
