"""The trail writer: file naming, roll-over, file headers, durability and crash recovery
(trail-format.md §2, §14; properties.md §10.1).

Transactions are encoded whole and appended with as few ``write()`` calls as possible; bytes
are buffered in memory only between ``write()`` calls, never split inside a transaction unless
the transaction itself is larger than a file. ``open()`` validates the existing trail before
anything is appended: the writer never appends after bytes it has not read back.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

from gendef.durable import fsync_parent
from msgcap import __version__
from msgcap.trail.encoder import TrailEncoder
from msgcap.trail.fileheader import default_uri, encode_file_header
from msgcap.trail.layout import MIN_RECORD, REC_G, REC_Z, layout_for
from msgcap.trail.reader import TrailFile, sequence_files, stray_warning, trail_file_name
from msgcap.trail.records import TRANSIND_END, TRANSIND_WHOLE, Position, TrailTransaction
from props.errors import TrailError

if TYPE_CHECKING:
    from props.settings import ByteOrder, SyncMode

log = logging.getLogger("msgcap.trail")

SYNC_MODES = ("transaction", "batch", "none")
_WRITE_BUFFER = 1 << 20
_TRANSIND_OFFSET = 8 + 28  # G head + H head + GHDR offset 28
_new_tuple = tuple.__new__  # builds a Position without NamedTuple's Python-level __new__


@dataclass(frozen=True, slots=True)
class Recovery:
    """What ``open()`` found: the last complete transaction and where appending continues.

    ``last_*`` describe the last record of the last complete transaction (None for an empty
    trail); ``txnum`` is its transaction number (AuditRBA; 0 when empty). ``seqno``/``rba``/
    ``file`` are the position where the next transaction is appended. ``truncated`` counts the
    bytes of incomplete data removed, ``deleted`` the files removed.
    """

    last_seqid: str | None = None
    last_audit_pos: int | None = None
    last_txid: str | None = None
    txnum: int = 0
    seqno: int = 0
    rba: int = 0
    file: str = ""
    truncated: int = 0
    deleted: tuple[str, ...] = ()

    @property
    def position(self) -> Position:
        return Position(self.seqno, self.rba, self.file)


@dataclass(slots=True)
class _Scan:
    """One file as recovery saw it."""

    seqno: int
    path: str
    size: int
    header_len: int | None  # None: F record absent or partial
    byteorder: str | None
    last_end: int | None = None  # end of the last record with TransInd 2 or 3
    last: tuple[str | None, int | None, str | None, int] | None = None  # seqid, pos, txid, auditrba


def _scan(seqno: int, path: str, start: int | None = None) -> _Scan:
    """Read one file forwards from ``start`` (default: its first record); the valid prefix ends
    at the first partial or invalid record."""
    with TrailFile(path) as tf:
        if tf.header is None:
            return _Scan(seqno, path, tf.size, None, None)
        s = _Scan(seqno, path, tf.size, tf.data_start, tf.header.byteorder)
        try:
            for rec in tf.records(start):
                if rec.transind in (TRANSIND_END, TRANSIND_WHOLE):
                    s.last_end = rec.end
                    s.last = (rec.seqid, rec.audit_pos, rec.txid, rec.audit_rba)
        except TrailError as exc:
            log.warning("trail recovery: %s", exc)
    return s


def check_continuity(prefix: str, files: list[tuple[int, str]], width: int) -> None:
    """A trail's files must follow each other: a missing one is data lost for every reader."""
    for (a, _), (b, path) in itertools.pairwise(files):
        if b != a + 1:
            missing = trail_file_name(prefix, a + 1, width)
            more = f" (and {b - a - 2} more)" if b - a > 2 else ""
            raise TrailError(f"trail file {missing}{more} is missing before {path}: the trail's "
                             "files must be continuous; restore it, or move the files after the "
                             "gap away", file=prefix)


def verify_trail(path: str, files: list[tuple[int, str]], seqlen: int,
                 durable: Position | Recovery | None
                 ) -> tuple[str | None, int | None, str | None, int] | None:
    """What ``TrailWriter.open`` refuses before it changes anything, read-only (``msgcap
    check`` asks the same): the files of ``path`` (``sequence_files``) continuous and, with the
    checkpoint's ``durable`` position, holding it (``_durable_floor``'s result)."""
    check_continuity(path, files, seqlen)
    if durable is None:
        return None
    if not files:
        if durable.rba > 0:
            raise TrailError(f"the trail is empty but the checkpoint's durable position is "
                             f"seqno {durable.seqno} RBA {durable.rba}: durable data is "
                             f"missing", file=path)
        return None
    return _durable_floor(path, files, durable)


def _durable_floor(trail: str, files: list[tuple[int, str]], durable: Position | Recovery
                   ) -> tuple[str | None, int | None, str | None, int] | None:
    """(seqid, ordinal, txid, transaction number) of the last transaction that ends at the
    durable position, read from the trail there (one record, whatever the trail's size);
    None when no transaction precedes it."""
    def damaged(reason: str, path: str = trail, rba: int | None = None) -> TrailError:
        return TrailError(f"{reason}; the checkpoint's durable position is seqno "
                          f"{durable.seqno} RBA {durable.rba}: durable data is damaged or "
                          "missing; nothing was truncated", file=path, rba=rba)
    paths = dict(files)
    path = paths.get(durable.seqno)
    if path is None:
        newest = files[-1][0]
        raise damaged(f"the trail ends with seqno {newest}" if durable.seqno > newest else
                      f"the trail file of seqno {durable.seqno} is missing")
    given = None
    if isinstance(durable, Recovery) and durable.last_seqid is not None:
        given = (durable.last_seqid, durable.last_audit_pos, durable.last_txid,
                 durable.txnum)
    with TrailFile(path) as tf:
        if tf.header is None or tf.size < durable.rba or durable.rba < tf.data_start:
            raise damaged(f"the file ends at RBA {tf.size}", path)
        if durable.rba > tf.data_start:
            try:
                rec = next(tf.backward(durable.rba))
            except TrailError as exc:
                raise damaged(f"no record ends at the durable position ({exc.reason})",
                              path, durable.rba) from None
            if rec.transind not in (TRANSIND_END, TRANSIND_WHOLE):
                raise damaged("no transaction ends at the durable position", path,
                              durable.rba)
            found = (rec.seqid, rec.audit_pos, rec.txid, rec.audit_rba)
            if given is not None and (given[0], given[3]) != (found[0], found[3]):
                raise TrailError(
                    f"the checkpoint does not match the trail: it names seqid {given[0]} "
                    f"of transaction {given[3]} at seqno {durable.seqno} RBA {durable.rba}, "
                    f"the trail holds seqid {found[0]} of transaction {found[3]} there "
                    "(a checkpoint of another trail, or a trail restored from elsewhere)",
                    file=path, rba=durable.rba)
            return found
    previous = paths.get(durable.seqno - 1)
    if previous is not None:  # the position starts its file: the last transaction ends
        with TrailFile(previous) as tf:  # the previous one
            for rec in tf.backward():
                return rec.seqid, rec.audit_pos, rec.txid, rec.audit_rba
    if given is None and durable.seqno > 0:
        raise damaged(f"the files before seqno {durable.seqno} are gone and nothing "
                      "says where the trail stood")
    return given


class TrailWriter:
    """Appends transactions to the trail ``path`` (directory + two-character prefix)."""

    __slots__ = ("_broken", "_buf", "_buflen", "_fd", "_file", "_head", "_header_len",
                 "_open_tx", "_roll_first", "_seqno", "_size", "_tx_start", "byteorder",
                 "durable", "encoder", "extract", "header_path", "last_audit_pos", "last_seqid",
                 "last_txid", "limit", "path", "seqlen", "sync", "txnum", "uri")

    def __init__(self, path: str, *, seqlen: int = 9, megabytes: int = 100,
                 byteorder: ByteOrder = "big", sync: SyncMode = "batch", extract: str = "MSGCAP",
                 uri: str | None = None, header_path: str | None = None,
                 partition: int | None = None) -> None:
        if seqlen not in (6, 9):
            raise ValueError(f"seqlen {seqlen} (expected 6 or 9)")
        if not 1 <= megabytes <= 2000:
            raise ValueError(f"megabytes {megabytes} (expected 1–2000)")
        if sync not in SYNC_MODES:
            raise ValueError(f"sync {sync!r} (expected one of {', '.join(SYNC_MODES)})")
        layout_for(byteorder)
        self.path, self.seqlen, self.byteorder, self.sync = path, seqlen, byteorder, sync
        self.limit = megabytes * 1024 * 1024
        self.extract = extract
        self.uri = uri if uri is not None else default_uri(extract)
        # the prefix file headers name: ``msgcap batch`` writes trail.path's files elsewhere
        self.header_path = header_path if header_path is not None else path
        self.encoder = TrailEncoder(byteorder, partition)  # (partition: §10 user token)
        self._head = layout_for(byteorder).head.unpack_from
        self._fd: int | None = None
        self._seqno = 0
        self._file = ""
        self._size = 0  # logical size of the current file, buffered bytes included
        self._header_len = 0
        self._buf: list[bytes] = []
        self._buflen = 0
        self._broken: str | None = None
        self._roll_first = False
        self._open_tx = False
        self._tx_start: Position | None = None  # where the transaction written in parts begins
        self.txnum = 0
        self.last_seqid: str | None = None
        self.last_audit_pos: int | None = None
        self.last_txid: str | None = None
        self.durable: Position | None = None

    # -- opening and recovery ------------------------------------------------------------------

    def open(self, durable: Position | Recovery | None = None) -> Recovery:
        """Recover the trail (§14) and get ready to append.

        ``durable`` is the checkpoint's durable position (a ``Recovery`` also carries the last
        seqid, ordinal, txid and transaction number the checkpoint recorded there). With it,
        recovery reads only what follows it: the record ending there must end a transaction
        (and match the checkpoint), and a trail that ends before it is an error, nothing
        truncated. Without it, the newest files are scanned back to the last transaction end.
        """
        if self._fd is not None:
            raise TrailError("trail writer is already open", file=self._file)
        d = os.path.dirname(self.path)
        if d:
            os.makedirs(d, exist_ok=True)
        files = sequence_files(self.path, self.seqlen)
        stray = stray_warning(self.path, self.seqlen)
        if stray is not None:
            log.warning("trail %s: %s", self.path, stray)
        floor = verify_trail(self.path, files, self.seqlen, durable)
        if not files:
            self._create(0)
            self.durable = self.position
            return Recovery(seqno=0, rba=self._size, file=self._file)
        if durable is not None:  # only what follows the durable position is read
            files = [f for f in files if f[0] >= durable.seqno]
        scans: list[_Scan] = []
        for seqno, path in reversed(files):
            start = durable.rba if durable is not None and seqno == durable.seqno else None
            s = _scan(seqno, path, start)
            scans.append(s)
            if s.last_end is not None:
                break
        newest, found = scans[0], scans[-1]
        if found.last_end is None and durable is not None:  # nothing complete after it
            found.last_end, found.last = durable.rba, floor
        r_end = found.last_end if found.last_end is not None else (found.header_len or 0)
        # continue in the next file when R ends its file and the next one is only a header
        later = scans[:-1]  # newer files than R's, newest first
        nxt = later[-1] if later else None
        target, cut_to = found, r_end
        if (found.last_end is not None and r_end == found.size and nxt is not None
                and nxt.header_len is not None and nxt.size == nxt.header_len):
            target, cut_to = nxt, nxt.header_len
            later = later[:-1]
        other_order = target.byteorder is not None and target.byteorder != self.byteorder
        deleted = []
        truncated = 0
        for s in later:
            truncated += s.size
            os.unlink(s.path)
            deleted.append(s.path)
        if target.header_len is None or (other_order and cut_to == target.header_len):
            # F record absent or partial, or a header-only file in the other byte order
            truncated += target.size - (target.header_len or 0)
            self._create(target.seqno, replace=True)
        else:
            truncated += target.size - cut_to
            self._reopen(target, cut_to)
            self._roll_first = other_order  # never mix byte orders in one file
        if deleted and self.sync != "none":
            fsync_parent(self.path)
        if newest is not target and not deleted:
            log.info("trail recovery: continuing in %s", target.path)
        if truncated:
            log.warning("trail recovery: removed %d bytes of incomplete data after %s RBA %d",
                        truncated, self._file, self._size)
        rec = Recovery(seqno=self._seqno, rba=self._size, file=self._file, truncated=truncated,
                       deleted=tuple(deleted))
        if found.last is not None:
            seqid, pos, txid, audit_rba = found.last
            self.last_seqid, self.last_audit_pos, self.last_txid = seqid, pos, txid
            self.txnum = audit_rba
            rec = Recovery(seqid, pos, txid, audit_rba, self._seqno, self._size, self._file,
                           truncated, tuple(deleted))
        self.durable = self.position
        return rec

    def _reopen(self, s: _Scan, cut_to: int) -> None:
        fd = os.open(s.path, os.O_WRONLY)
        try:
            if s.size != cut_to:
                os.ftruncate(fd, cut_to)
                if self.sync != "none":
                    os.fsync(fd)
            os.lseek(fd, cut_to, os.SEEK_SET)
        except OSError:
            os.close(fd)
            raise
        self._fd, self._seqno, self._file = fd, s.seqno, s.path
        self._size, self._header_len = cut_to, s.header_len or 0

    def _create(self, seqno: int, replace: bool = False) -> None:
        """A new file with its F record, fsynced with its directory (unless sync=none)."""
        if seqno >= 10 ** self.seqlen:
            raise TrailError(f"trail sequence number {seqno} exceeds {self.seqlen} digits",
                             file=self.path)
        path = trail_file_name(self.path, seqno, self.seqlen)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if replace else os.O_EXCL)
        try:
            fd = os.open(path, flags, 0o644)
        except FileExistsError:
            raise TrailError("next trail file already exists; not overwriting it",
                             file=path) from None
        name = trail_file_name(self.header_path, seqno, self.seqlen)
        header = encode_file_header(byteorder=self.byteorder, seqno=seqno, file_name=name,
                                    uri=self.uri, extract=self.extract,
                                    created_us=time.time_ns() // 1000, version=__version__)
        self._fd, self._seqno, self._file = fd, seqno, path
        self._size = self._header_len = 0
        self._write_all(header)
        self._size = self._header_len = len(header)
        if self.sync != "none":
            os.fsync(fd)
            fsync_parent(path)

    # -- appending -----------------------------------------------------------------------------

    @property
    def position(self) -> Position:
        """End of the data written so far (buffered bytes included)."""
        return Position(self._seqno, self._size, self._file)

    def write_transaction(self, tx: TrailTransaction) -> Position:
        """Encode and append one transaction; returns the position after it."""
        if self._fd is None or self._broken or self._open_tx:
            self._check()
        last = tx.records[-1]
        return self.append_whole(self.encoder.encode_transaction(tx, self.txnum + 1),
                                 last.seqid, last.audit_pos, tx.txid)

    def append_whole(self, data: bytes, last_seqid: str, last_audit_pos: int,
                     last_txid: str) -> Position:
        """Append one whole transaction this writer's ``encoder`` encoded as transaction
        number ``txnum + 1`` (``write_transaction``, or the compiled path of
        ``Assembler.encode_whole``), its last record's seqid and ordinal and its txid;
        returns the position after it."""
        if self._fd is None or self._broken or self._open_tx:
            self._check()
        n = len(data)
        if self._size + n <= self.limit and not self._roll_first:  # the common case, inline
            self._buf.append(data)
            self._buflen += n
            self._size += n
            if self._buflen >= _WRITE_BUFFER:
                self.flush()
        else:
            self._append(data)
        self.txnum += 1
        self.last_seqid, self.last_audit_pos, self.last_txid = last_seqid, last_audit_pos, last_txid
        if self.sync == "transaction":
            return self.flush_durable()
        return _new_tuple(Position, (self._seqno, self._size, self._file))

    def append_wholes(self, wholes: list[tuple[bytes, str, int, str]]
                      ) -> tuple[Position, list[str]]:
        """``append_whole`` of each of ``wholes`` (its data and the mark after it), numbered
        from ``txnum + 1`` in order: the position after the last and the files they went to.

        When they fit the current file and ``trail.sync`` is not ``transaction``, as one
        append: buffered, and ``write()`` once the buffer holds a megabyte.
        """
        total = 0
        for whole in wholes:
            total += len(whole[0])
        if (self._fd is None or self._broken or self._open_tx or self._roll_first
                or self.sync == "transaction" or self._size + total > self.limit):
            files: list[str] = []
            for data, seqid, pos, txid in wholes:
                position = self.append_whole(data, seqid, pos, txid)
                if not files or files[-1] != position.file:
                    files.append(position.file)
            return position, files
        buf = self._buf
        for whole in wholes:
            buf.append(whole[0])
        self._buflen += total
        self._size += total
        self.txnum += len(wholes)
        _, self.last_seqid, self.last_audit_pos, self.last_txid = wholes[-1]
        if self._buflen >= _WRITE_BUFFER:
            self.flush()
        return _new_tuple(Position, (self._seqno, self._size, self._file)), [self._file]

    def write_records(self, tx: TrailTransaction, *, first: bool, last: bool) -> Position:
        """Append a part of a transaction too large to hold in memory.

        ``first``: this part begins the transaction; ``last``: it ends it. The parts of one
        transaction follow each other with nothing in between; the transaction counts (``txnum``,
        ``last_*``, ``sync=transaction`` fsync) once its last part is written. A position
        returned before that is inside the transaction: do not checkpoint it.
        """
        if first == self._open_tx:
            raise TrailError("a transaction is already open" if first else
                             "no open transaction to continue", file=self._file)
        self._check(allow_open=True)
        data = self.encoder.encode_transaction(tx, self.txnum + 1, first=first, last=last)
        if first:
            self._tx_start = self.position
        self._append(data)
        self._open_tx = not last
        if not last:
            return self.position
        last_rec = tx.records[-1]
        return self._commit(b"", 1, last_rec.seqid, last_rec.audit_pos, tx.txid)

    def append_encoded(self, data: bytes | memoryview, *, transactions: int, last_seqid: str | None,
                       last_audit_pos: int | None, last_txid: str | None,
                       partial: bool = False, checked: bool = False) -> Position:
        """Append transactions encoded elsewhere (``encode_transaction`` with transaction
        numbers ``txnum + 1`` onwards, in this writer's byte order). ``data`` holds whole
        records; it must end a transaction unless ``partial`` (more of the last transaction
        follows in the next call, which does not count it again).

        Every record is checked here, unless ``checked``: the bytes were walked by
        ``check_records`` where they were framed (a batch's tasks, which scale; the driver's
        single writer does not) and came here under a checksum. Then only their ends are
        checked: the first record's head, the last one's trailer and transaction end."""
        self._check(allow_open=True)
        if type(data) is not bytes:  # buffered until the next write(): own the bytes
            data = bytes(data)
        if data:
            try:
                if checked:
                    _check_ends(data, self.byteorder, partial)
                else:
                    check_records(data, self.byteorder, partial)
            except TrailError as exc:
                raise TrailError(exc.reason, file=self._file) from None
        if partial:
            if not self._open_tx:
                self._tx_start = self.position
            self._open_tx = True
            if data:
                self._append(data)
            self.txnum += transactions
            return self.position
        self._open_tx = False
        return self._commit(data, transactions, last_seqid, last_audit_pos, last_txid)

    def _commit(self, data: bytes, transactions: int, seqid: str | None, pos: int | None,
                txid: str | None) -> Position:
        if data:
            self._append(data)
        self.txnum += transactions
        if seqid is not None or txid is not None:
            self.last_seqid, self.last_audit_pos, self.last_txid = seqid, pos, txid
        if self.sync == "transaction":
            self.flush_durable()
        return self.position

    def _append(self, data: bytes) -> None:
        if self._roll_first:
            self._roll_first = False
            if self._size > self._header_len:
                self._roll()
        n = len(data)
        if self._size + n <= self.limit:
            self._add(data)
            return
        if self._size > self._header_len:
            self._roll()
        if self._size + n <= self.limit:
            self._add(data)
            return
        # larger than a file: continue into following files at record boundaries
        p, start = 0, 0
        while p < n:
            total = self._head(data, p)[2]
            if self._size + (p - start) + total > self.limit and (
                    self._size + (p - start) > self._header_len):
                self._add(data[start:p])
                self._roll()
                start = p
            p += total
        self._add(data[start:])

    def _add(self, data: bytes) -> None:
        if not data:
            return
        self._buf.append(data)
        self._buflen += len(data)
        self._size += len(data)
        if self._buflen >= _WRITE_BUFFER:
            self.flush()

    def _roll(self) -> None:
        self.flush()
        assert self._fd is not None  # (open)
        if self.sync != "none":
            os.fsync(self._fd)
        os.close(self._fd)
        self._fd = None
        self._create(self._seqno + 1)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        done = 0
        assert self._fd is not None  # (open)
        try:
            while done < len(view):
                done += os.write(self._fd, view[done:])
        except OSError as exc:
            self._broken = f"write failed: {exc.strerror}"
            where = os.lseek(self._fd, 0, os.SEEK_CUR)  # what reached the file ends here
            raise TrailError(self._broken, file=self._file, rba=where) from None

    def _check(self, allow_open: bool = False) -> None:
        if self._fd is None:
            raise TrailError("trail writer is not open", file=self.path)
        if self._open_tx and not allow_open:
            raise TrailError("a transaction written in parts is still open", file=self._file)
        if self._broken:
            raise TrailError(f"trail writer stopped after an error ({self._broken}); "
                             "reopen to recover", file=self._file)

    def flush(self) -> None:
        """``write()`` the buffered transactions (no fsync)."""
        if self._buf:
            data = b"".join(self._buf) if len(self._buf) > 1 else self._buf[0]
            self._buf.clear()
            self._buflen = 0
            self._write_all(data)

    @property
    def broken(self) -> bool:
        """True after a failed write or fsync: nothing more can be appended until reopened."""
        return self._broken is not None

    @property
    def in_transaction(self) -> bool:
        """True while a transaction written in parts has not had its last part."""
        return self._open_tx

    def drop_open(self) -> Recovery:
        """Remove the parts of a transaction that will not be ended here (the capture stops or
        restarts inside it), keeping every complete transaction: the recovery of a restart."""
        self._check(allow_open=True)
        self.flush()
        assert self._fd is not None  # (_check)
        os.close(self._fd)
        self._fd = None
        self._open_tx = False
        return self.open(self.durable)

    def flush_durable(self) -> Position:
        """Write buffered data and fsync it (``sync=none``: write only); the durable position.

        Inside a transaction written in parts, that is where the transaction begins: its parts
        are on disk, but only its end makes them part of the trail (recovery truncates them).
        """
        self._check(allow_open=True)
        self.flush()
        if self.sync != "none":
            assert self._fd is not None  # (_check)
            try:
                os.fsync(self._fd)
            except OSError as exc:
                self._broken = f"fsync failed: {exc.strerror}"
                raise TrailError(self._broken, file=self._file) from None
        durable = self._tx_start if self._open_tx and self._tx_start is not None else self.position
        self.durable = durable  # (an open transaction has its start)
        return durable

    def close(self) -> None:
        if self._fd is None:
            return
        try:
            if not self._broken:
                self.flush_durable()
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_records(data: bytes, byteorder: str, partial: bool = False) -> None:
    """Encoded data must be whole records, ending a transaction unless ``partial``."""
    head = layout_for(byteorder).head.unpack_from
    p, n, last = 0, len(data), -1
    while p < n:
        if p + 4 > n:
            raise TrailError("encoded data ends inside a record head")
        rid, _, total = head(data, p)
        if rid != REC_G or total < MIN_RECORD or p + total > n:
            raise TrailError(f"encoded data: no complete record at offset {p}")
        zid, _, ztotal = head(data, p + total - 4)
        if zid != REC_Z or ztotal != total:
            raise TrailError(f"encoded data: bad trailer at offset {p}")
        last, p = p, p + total
    if not partial:
        _check_end(data, last)


def _check_ends(data: bytes, byteorder: str, partial: bool) -> None:
    """The ends of records walked elsewhere (``append_encoded(checked=True)``): a record
    starts the data, and a record whose trailer ends it starts where that trailer says."""
    head = layout_for(byteorder).head.unpack_from
    n = len(data)
    rid, _, total = head(data, 0) if n >= 4 else (0, 0, 0)
    if rid != REC_G or total < MIN_RECORD or total > n:
        raise TrailError("encoded data: no complete record at offset 0")
    zid, _, ztotal = head(data, n - 4)
    last = n - ztotal
    lid, _, ltotal = head(data, last) if last >= 0 else (0, 0, 0)
    if zid != REC_Z or ztotal < MIN_RECORD or lid != REC_G or ltotal != ztotal:
        raise TrailError(f"encoded data: bad trailer at offset {max(last, 0)}")
    if not partial:
        _check_end(data, last)


def _check_end(data: bytes, last: int) -> None:
    if data[last + _TRANSIND_OFFSET] not in (TRANSIND_END, TRANSIND_WHOLE):
        raise TrailError("encoded data does not end with a complete transaction")
