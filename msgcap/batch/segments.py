"""What a task receives from Spark, turned back into messages, one **segment** at a time.

Spark hands a task raw byte strings (``jobs`` builds them in the JVM). A task of a lines scan
reads one block of one file: one string per line (without its ``\\n``), the first one prefixed
with ``L`` + file index (4 bytes) + block start (8 bytes). A task of a whole-files scan gets one
string per file: ``F`` + scan number (4 bytes) + file URI (UTF-8) + ``\\0`` + the file's bytes
(a file given twice in one scan is one string: its segments are made for each place it has).

A segment is what one key names: the lines of one block of a file, or one whole file. Its
messages come out as replay makes them (``msgcap.dumps``; a byte-order mark that starts a file
of lines is no part of its first line: Spark's text source drops it, whole files here), each with its line's index in the
segment and its offset in the concatenated input (``time`` ids grow with it). A block's lines
are read from Spark a chunk at a time as its messages are taken, so that the JVM reads the
block while the task parses (``Segment.chunks``), not before.

Line numbers: a block's first line number is only known once the lines of the blocks before it
are counted (the driver does that, in order). Until then a line is named by a **label**,
``\\0<index in the segment>\\0``, which ``resolve`` later turns into the number in any text
(message names, error messages). Names never contain NUL otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, count, islice

from msgcap import dumps
from msgcap.batch.inputs import KIND_FILE, KIND_JSONL, KIND_LINES, InputFile, Scan
from msgcap.sources.base import entry_bytes, too_large
from parsers.model import Message
from props.errors import MessageError

LINE_TAG, FILE_TAG = b"L", b"F"
_LINE_HEAD = 13  # tag, file index, block start
# A line label until its number is known: private-use characters, which error texts keep as they
# are (props.text escapes control characters), so that a label inside an error resolves too.
_MARK = "\ue000"
_LABEL = re.compile(f"{_MARK}([0-9]+){_MARK}")

SegmentKey = tuple[int, int]  # (file index, block start): the order of the input
CHUNK = 4096  # lines of a block read (and decoded) at a time


@dataclass(slots=True)
class Segment:
    """The lines of one block of a line file (``lines``, then those still to be read from
    ``rest``), or one file read whole (``content``; for a line file, its lines are cut from
    it)."""

    file: InputFile
    start: int
    lines: list[bytes]
    whole: bool
    rest: Iterator[bytes] | None = None

    @property
    def key(self) -> SegmentKey:
        return (self.file.index, self.start)

    def chunks(self) -> Iterator[tuple[int, list[bytes]]]:
        """(index of the first, lines) of all the segment's lines, a chunk at a time, read from
        ``rest`` as they are taken (and kept in ``lines``)."""
        at = 0
        while True:
            if at == len(self.lines) and not self._read(CHUNK):
                return
            chunk = self.lines[at:]
            yield at, chunk
            at += len(chunk)

    def complete(self) -> list[bytes]:
        """All the segment's lines (the rest read)."""
        if self.rest is not None:
            self.lines.extend(self.rest)
            self.rest = None
        return self.lines

    def _read(self, size: int) -> bool:
        if self.rest is None:
            return False
        before = len(self.lines)
        self.lines.extend(islice(self.rest, size))
        if len(self.lines) == before:
            self.rest = None
        return self.rest is not None


WholeFiles = dict[tuple[int, str], tuple[int, ...]]  # (scan, URI) → indexes of the file


def whole_files(files: Sequence[InputFile], scans: Sequence[Scan]) -> WholeFiles:
    """Where each file element of a scan read whole goes: (scan, URI) → file indexes."""
    whole: WholeFiles = {}
    for number, scan in enumerate(scans):
        if scan.whole:
            for index in scan.files:
                key = (number, files[index].uri)
                whole[key] = (*whole.get(key, ()), index)
    return whole


def line_head(index: int) -> bytes:
    """The start of a line element of file ``index`` (the JVM appends block start and line)."""
    return LINE_TAG + index.to_bytes(4, "big")


def file_head(scan: int) -> bytes:
    """The start of a file element of scan ``scan`` (the JVM appends URI and bytes)."""
    return FILE_TAG + scan.to_bytes(4, "big")


def segments(elements: Iterable[bytes], files: Sequence[InputFile], whole: WholeFiles, *,
             lines: bool) -> Iterator[Segment]:
    """The segments of one task's elements (``lines``: the task reads a block of lines)."""
    if lines:
        it = iter(elements)
        first = next(it, None)
        if first is None:  # no line starts in the block
            return
        if first[:1] != LINE_TAG:
            raise ValueError("a block of lines without its head")
        yield Segment(files[int.from_bytes(first[1:5], "big")],
                      int.from_bytes(first[5:_LINE_HEAD], "big"), [first[_LINE_HEAD:]], False, it)
        return
    for element in elements:
        cut = element.index(b"\0", 5)
        content = element[cut + 1:]
        scan = int.from_bytes(element[1:5], "big")
        for index in whole[(scan, element[5:cut].decode("utf-8"))]:
            f = files[index]
            yield Segment(f, 0, [content] if f.kind == KIND_FILE else dumps.without_bom(
                content).split(b"\n"), True)


def pick_lines(elements: Iterable[bytes], files: Sequence[InputFile], whole: WholeFiles,
               wanted: dict[SegmentKey, list[int]], *,
               lines: bool) -> dict[SegmentKey, dict[int, bytes]]:
    """The raw lines ``wanted`` (line indexes in their segments; 0 for a file read whole:
    its bytes) of one task's elements, read again: messages rejected in pass 2."""
    out: dict[SegmentKey, dict[int, bytes]] = {}
    for seg in segments(elements, files, whole, lines=lines):
        numbers = wanted.get(seg.key)
        if numbers:
            got = seg.complete()
            out[seg.key] = {n: got[n] for n in numbers}
    return out


def label(number: int, first_line: int | None) -> str:
    """Line ``number`` (0-based in its segment) as messages name it."""
    return str(first_line + number) if first_line is not None else f"{_MARK}{number}{_MARK}"


def resolve(text: str, first_line: int) -> str:
    """``text`` with every line label replaced by the line number it stands for."""
    if _MARK not in text:
        return text
    return _LABEL.sub(lambda m: str(first_line + int(m[1])), text)


def message_of(file: InputFile, raw: bytes, number: str) -> Message | None:
    """The message of one line (or of the whole file), as replay reads it; None for a blank line.

    Raises SourceError for a line that is not a dump entry (JSON Lines).
    """
    if file.kind == KIND_FILE:
        return dumps.whole_file_message(file.name, raw)
    if file.kind == KIND_JSONL:
        return dumps.jsonl_message(raw, file.name, number)
    for _, message in dumps.line_messages(raw, file.basename, file.name, iter((number,))):
        return message
    return None


def messages(seg: Segment, first_line: int | None, max_bytes: int
             ) -> Iterator[tuple[int, int, Message]]:
    """(line index in the segment, offset in the input, message) of each message in order.

    ``first_line``: the number of the segment's first line, None when not known yet (labels).
    A message over ``max_bytes`` (``jms.maxbytes``) is a SourceError naming file:line, raised
    where it comes in order and before it is parsed (a line too long for any message within the
    limit: before it is decoded), as replay refuses it.
    """
    f = seg.file
    if seg.whole or seg.start == 0:
        first_line = 1
    offset = f.base + seg.start + (1 if seg.start else 0)
    for at, chunk in seg.chunks():
        too_long = _too_long(f, chunk, max_bytes)
        if too_long is not None:
            chunk = chunk[:too_long[0]]  # the lines before it first
        if f.kind == KIND_LINES:  # decoded together, as replay reads a chunk of lines
            # line i starts after the lines before it and their i newlines
            starts = list(accumulate(map(len, chunk), initial=offset))
            numbers = (label(number, first_line) for number in count(at))
            for i, message in dumps.line_messages(b"\n".join(chunk), f.basename, f.name,
                                                  numbers):
                yield at + i, starts[i] + i, message
            offset = starts[-1] + len(chunk)
        else:
            for number, raw in enumerate(chunk, at):
                found = message_of(f, raw, label(number, first_line))
                if found is not None:
                    if len(raw) > max_bytes:  # a JSON Lines body: counted once decoded
                        dumps.within(found, max_bytes)
                    yield number, offset, found
                offset += len(raw) + 1
        if too_long is not None:
            index, error = too_long
            where = f.name if f.kind == KIND_FILE else f"{f.name}:{label(at + index, first_line)}"
            raise dumps.refused(error, where)


def _too_long(file: InputFile, chunk: list[bytes], max_bytes: int
              ) -> tuple[int, MessageError] | None:
    """(index, why) of the first line of ``chunk`` longer than one of ``file``'s messages
    within ``max_bytes`` can be (a whole file: its bytes), if one is."""
    entries = file.kind == KIND_JSONL
    if max(map(len, chunk), default=0) <= (entry_bytes(max_bytes) if entries else max_bytes):
        return None
    for index, raw in enumerate(chunk):
        if file.kind == KIND_FILE:
            if len(raw) > max_bytes:
                return index, too_large(len(raw), max_bytes)
        else:
            error = dumps.line_too_long(raw, max_bytes, entries=entries)
            if error is not None:
                return index, error
    return None
