"""Message dumps (properties.md §13): read the three forms into Messages, write dump entries.

One format is shared by ``archive.dir``, the discard file, ``msgcap replay``, ``msgcap batch`` and
``msgcap send``, so reading and writing live here as plain functions:

* JSON Lines (``*.jsonl``): ``{"id", "headers", "body" | "body_b64"}`` per line; a line that holds
  ``"message"`` (a discard-file record, §10.4) yields that message. Discard files (``*.dsc``) are
  JSON Lines too.
* text lines (``lines=True``): each line is a body, id ``<file name>:<line>``;
* any other file: one message, the whole file, id = file name.

Every message gets ``origin`` ``path:line`` (or ``path``) so errors can name where it came from.
A UTF-8 byte-order mark that starts a file of lines (``without_bom``) is no part of its first
line.

``max_bytes`` (``jms.maxbytes``): a message whose body is larger is an error naming file:line,
as a malformed entry is, found without holding more than the limit of it: a text line or a
file is read no further, a JSON Lines line no further than the longest entry whose body can be
within the limit (``entry_bytes``), and its body is counted once decoded.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import glob
import itertools
import json
import os
from collections.abc import Iterable, Iterator
from operator import itemgetter
from typing import Any, BinaryIO

from msgcap.sources.base import body_size, entry_bytes, entry_too_long, too_large
from parsers.model import Message
from props.errors import MessageError, SourceError
from props.inputs import open_input
from props.text import name_text

JSONL_SUFFIXES = (".jsonl", ".dsc")
UTF8_BOM = codecs.BOM_UTF8
_GLOB_CHARS = frozenset("*?[")


def expand_inputs(patterns: Iterable[str]) -> list[str]:
    """Input paths in the order given; globs expanded in name order, directories to their files.

    A directory contributes its regular, non-hidden files in byte-wise name order. A path or
    glob that names nothing is an error, so a typo never turns into an empty replay.
    """
    out: list[str] = []
    for pattern in patterns:
        if os.path.isdir(pattern):
            names = sorted(n for n in os.listdir(pattern) if not n.startswith("."))
            out.extend(p for p in (os.path.join(pattern, n) for n in names) if os.path.isfile(p))
        elif os.path.exists(pattern):
            out.append(pattern)
        elif _GLOB_CHARS & set(pattern):
            found = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
            if not found:
                raise SourceError("no file matches", url=pattern)
            out.extend(found)
        else:
            raise SourceError("no such file", url=pattern)
    return out


def read_messages(paths: Iterable[str], *, lines: bool = False,
                  max_bytes: int | None = None) -> Iterator[Message]:
    """All messages of the dump files, file by file, in order."""
    for path in paths:
        yield from read_dump(path, lines=lines, max_bytes=max_bytes)


def read_dump(path: str, *, lines: bool = False, max_bytes: int | None = None
              ) -> Iterator[Message]:
    """The messages of one dump file; its form follows from ``lines`` and the file name."""
    if lines:
        return read_text_lines(path, max_bytes)
    if path.endswith(JSONL_SUFFIXES):
        return read_jsonl(path, max_bytes)
    return iter((read_whole_file(path, max_bytes),))


def refused(error: MessageError, where: str) -> SourceError:
    """A message over ``jms.maxbytes`` in a dump: one line naming ``where`` (file:line)."""
    return SourceError(error.reason, url=where)


def within(message: Message, max_bytes: int) -> Message:
    """``message``, if its body is within ``max_bytes``."""
    size = body_size(message.body)
    if size > max_bytes:
        raise refused(too_large(size, max_bytes), message.name)
    return message


_decode_json = json.JSONDecoder().decode

# The line every dump writer (``dumps_line``, ``json.dumps`` with its default separators) writes
# for a message without headers whose body is not UTF-8, read without a JSON decoder:
# ``{"id": "<id>", "headers": {}, "body_b64": "<base64>"}`` with an id of printable characters
# without a backslash (no escapes) and Base64 that strict decoding takes (no escapes, no quote).
# Anything else — headers, other keys or order, escapes, a Base64 error — goes through JSON.
_B64_HEAD = '{"id": "'
_B64_MIDDLE = '", "headers": {}, "body_b64": "'
_B64_AT = len(_B64_MIDDLE)


def read_jsonl(path: str, max_bytes: int | None = None) -> Iterator[Message]:
    """JSON Lines entries; blank lines skipped, a malformed line is an error naming file:line,
    and so is one whose body is over ``max_bytes`` (checked in a chunk longer than that only).

    Read in chunks of whole lines, each decoded from UTF-8 once (as ``read_text_lines``); a
    chunk that is not valid UTF-8 goes line by line through ``jsonl_message``. A line of the
    fixed shape ``_B64_ENTRY`` is read by that expression, any other through the JSON decoder:
    the same Message either way.
    """
    a2b = binascii.a2b_base64
    path_at = f"{path}:"
    number = 0
    limit = max_bytes or 0
    for data in _line_chunks(path, max_bytes, entries=True):
        check = max_bytes is not None and len(data) > max_bytes
        try:
            lines = data.decode("utf-8").split("\n")
        except UnicodeDecodeError:
            for raw in data.split(b"\n"):
                number += 1
                message = jsonl_message(raw, path, number)
                if message is not None:
                    yield within(message, limit) if check else message
            continue
        for line in lines:
            number += 1
            if line.startswith(_B64_HEAD):
                q = line.find('"', 8)
                if (line.startswith(_B64_MIDDLE, q) and line.endswith('"}')
                        and len(line) >= q + _B64_AT + 2):  # the '"' of '"}' is not the middle's
                    ident = line[8:q]
                    if "\\" not in ident and ident.isprintable():
                        try:
                            body = a2b(line[q + _B64_AT:-2], strict_mode=True)
                        except binascii.Error:
                            pass  # JSON says what is wrong
                        else:
                            message = Message(ident, {}, body, None, path_at + str(number))
                            yield within(message, limit) if check else message
                            continue
            message = _jsonl_text_message(line, path, number)
            if message is not None:
                yield within(message, limit) if check else message


def without_bom(start: bytes) -> bytes:
    """The start of a file of lines (text lines, JSON Lines) without the UTF-8 byte-order mark
    that may begin it: a mark of the encoding, not data. The one rule of replay and batch
    (Spark's text source, Hadoop's ``LineRecordReader``, drops it as well)."""
    return start.removeprefix(UTF8_BOM)


def _line_chunks(path: str, max_bytes: int | None = None, *, entries: bool = False
                 ) -> Iterator[bytes]:
    """The file in chunks of about ``_CHUNK`` bytes that end at a line end (the last one may
    not), without the final ``\\n`` of each chunk, nor a byte-order mark (``without_bom``).

    With ``max_bytes``, a line longer than a message within it can be (its CR LF not counted;
    ``entries``: a JSON Lines entry, ``entry_bytes``) is an error naming file:line, raised
    before more than that of it is held.
    """
    limit = max_bytes or 0
    longest = None if max_bytes is None else entry_bytes(limit) if entries else limit
    lines = 0  # in the chunks yielded so far (counted when there is a limit)
    with _open(path) as fh:
        rest: list[bytes] = []  # the start of a line that continues in the next chunk
        held = 0
        first = True
        while True:
            chunk = fh.read(_CHUNK)
            if first:
                chunk, first = without_bom(chunk), False
            if not chunk:
                if rest:
                    data = b"".join(rest)
                    if longest is not None and len(data) > longest:
                        _long_line(data, path, lines, limit, entries)
                    yield data
                return
            cut = chunk.rfind(b"\n")
            if cut < 0:
                rest.append(chunk)  # (joined once: a long line is not copied per chunk)
                held += len(chunk)
                if longest is not None and held > longest + 1:  # + 1: a CR
                    raise refused(_line_error(longest, limit, entries, at_least=True),
                                  f"{path}:{lines + 1}")
                continue
            rest.append(chunk[:cut])
            data = b"".join(rest) if len(rest) > 1 else rest[0]
            rest = [chunk[cut + 1:]] if cut + 1 < len(chunk) else []
            held = len(chunk) - cut - 1
            if longest is not None:
                if len(data) > longest:
                    _long_line(data, path, lines, limit, entries)
                lines += data.count(b"\n") + 1
            yield data


def _line_error(size: int, max_bytes: int, entries: bool, *,
                at_least: bool = False) -> MessageError:
    """Why a line of ``size`` bytes is refused: a message (text line) or an entry too long."""
    return (entry_too_long if entries else too_large)(size, max_bytes, at_least=at_least)


def _long_line(data: bytes, path: str, lines: int, max_bytes: int, entries: bool) -> None:
    """Raise for the first line of ``data`` (after ``lines`` lines) too long for ``max_bytes``,
    if one is."""
    for number, line in enumerate(data.split(b"\n"), lines + 1):
        error = line_too_long(line, max_bytes, entries=entries)
        if error is not None:
            raise refused(error, f"{path}:{number}")


def line_too_long(line: bytes, max_bytes: int, *, entries: bool = False) -> MessageError | None:
    """Why one line (without its ``\\n``) is refused: longer than a message within ``max_bytes``
    can be (its CR not counted; ``entries``: a JSON Lines entry, ``entry_bytes``); None if it is
    not. The one rule of replay and of batch tasks, which get each line whole from Spark."""
    size = len(line) - line.endswith(b"\r")
    if size > (entry_bytes(max_bytes) if entries else max_bytes):
        return _line_error(size, max_bytes, entries)
    return None


def jsonl_message(raw: bytes, path: str, number: int | str) -> Message | None:
    """Line ``number`` of a JSON Lines dump as a Message; None for a blank line.

    One line at a time, so that Spark batch tasks can read a block of a large dump (which may
    name the line by a label until its number is known).
    """
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"not a JSON object: {exc}", url=f"{path}:{number}") from None
    return _jsonl_text_message(line, path, number)


def _jsonl_text_message(line: str, path: str, number: int | str) -> Message | None:
    """The one rule of a JSON Lines line (decoded): blank (any white space) → None, else an
    entry (a BOM before it ignored) or a SourceError naming ``path:number``."""
    if not line or line.isspace():
        return None
    where = f"{path}:{number}"
    try:
        obj = _decode_json(line.removeprefix("\ufeff"))
    except ValueError as exc:
        raise SourceError(f"not a JSON object: {exc}", url=where) from None
    return message_from_entry(obj, where)


# Bytes read at a time: the lines of one chunk are decoded and split at once, and stay in the
# CPU caches until their messages are parsed (1 MB chunks cost replay about 5 % more CPU).
_CHUNK = 1 << 16


def read_text_lines(path: str, max_bytes: int | None = None) -> Iterator[Message]:
    """Each non-empty line of a text-lines dump is one message (``line_messages``); a line
    over ``max_bytes`` is an error naming file:line.

    Read in chunks of whole lines, each given to ``line_messages`` at once.
    """
    shown_path = name_text(path)  # ids are text: a name's bytes that are not UTF-8 as \xhh
    name = os.path.basename(shown_path)
    numbers = map(str, itertools.count(1))  # consumed one a line, across the chunks
    for data in _line_chunks(path, max_bytes):
        yield from map(itemgetter(1), line_messages(data, name, shown_path, numbers))


def line_messages(data: bytes, name: str, path: str, numbers: Iterator[str]
                  ) -> Iterator[tuple[int, Message]]:
    """(index, message) of each non-empty line of ``data``: the one rule of text-lines dumps.

    The body is the line's text (``split_lines``), its id ``name:N`` and its origin ``path:N``,
    where N is the line's number, taken from ``numbers`` one per line (empty ones too).
    """
    name_at, path_at = f"{name}:", f"{path}:"
    for (index, body), n in zip(enumerate(split_lines(data)), numbers, strict=False):
        if body:
            yield index, Message(name_at + n, {}, body, None, path_at + n)


def split_lines(data: bytes) -> list[str] | list[str | bytes]:
    """The bodies of the lines of ``data`` (split at ``\\n``, a final ``\\r`` removed; empty
    ones kept, so that indexes count lines), as text-lines dumps read them.

    A text-lines dump is UTF-8 text by its form (§13), as JSON Lines are: ``data`` is decoded
    at once (its lines are then valid too, as ``\\n`` never occurs inside a UTF-8 sequence).
    When it is not valid UTF-8 each line is decoded alone, and a line that is not text stays
    the bytes it is (for a parser that reads a code page). A record with binary fields is no
    line (its bytes may hold a line end): it comes one file per message or as ``body_b64``.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [_line_text(raw[:-1] if raw[-1:] == b"\r" else raw) for raw in data.split(b"\n")]
    lines = text.split("\n")
    if "\r" in text:
        lines = [line[:-1] if line[-1:] == "\r" else line for line in lines]
    return lines


def _line_text(raw: bytes) -> str | bytes:
    """One line of a text-lines dump that is not all UTF-8: its text, or its bytes if not."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def read_whole_file(path: str, max_bytes: int | None = None) -> Message:
    """One file, one message: id = file name, body = the file's bytes; one
    over ``max_bytes`` is an error, read no further than that."""
    with _open(path) as fh:
        if max_bytes is None:
            data = fh.read()
        elif len(data := fh.read(max_bytes + 1)) > max_bytes:
            size = os.fstat(fh.fileno()).st_size  # (0 for what is not a regular file)
            raise refused(too_large(max(size, max_bytes), max_bytes, at_least=size <= max_bytes),
                          path)
    return whole_file_message(path, data)


def whole_file_message(path: str, data: bytes) -> Message:
    """The message of a one-message file named ``path`` holding ``data``; its id is the file
    name as text (bytes that are not UTF-8 as ``\\xhh``, as in a spool directory)."""
    path = name_text(path)
    return Message(os.path.basename(path), {}, data, None, path)


def message_from_entry(obj: Any, where: str) -> Message:
    """A Message from one decoded dump entry (or a discard record holding one)."""
    if isinstance(obj, dict) and "message" in obj and "id" not in obj:
        obj = obj["message"]
    if not isinstance(obj, dict):
        raise SourceError("a dump entry must be a JSON object", url=where)
    ident = obj.get("id")
    if not isinstance(ident, str):
        raise SourceError('"id" must be a string', url=where)
    headers = obj.get("headers") or {}
    if not isinstance(headers, dict) or headers and not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise SourceError('"headers" must map strings to strings', url=where)
    has_body, has_b64 = "body" in obj, "body_b64" in obj
    if has_body == has_b64:
        raise SourceError('exactly one of "body" and "body_b64" is needed', url=where)
    body: str | bytes
    if has_body:
        body = obj["body"]
        if not isinstance(body, str):
            raise SourceError('"body" must be a string', url=where)
    else:
        try:
            body = binascii.a2b_base64(obj["body_b64"], strict_mode=True)
        except (binascii.Error, TypeError, ValueError):
            raise SourceError('"body_b64" is not valid Base64', url=where) from None
    texts: list[str] = [ident, *headers, *headers.values()]
    if isinstance(body, str):
        texts.append(body)
    if not all(t.isascii() or _is_text(t) for t in texts):
        raise SourceError("a string holds a lone surrogate (a \\udXXX escape), which is "
                          'not text: write bytes as "body_b64"', url=where)
    return Message(ident, headers, body, None, where)


def _is_text(s: str) -> bool:
    """Whether ``s`` can be written as UTF-8: JSON's ``\\udcfc`` escapes give lone
    surrogates, which no output (trail, archive, discard file) takes."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def entry(message: Message, *, id: str | None = None, **extra: Any) -> dict[str, Any]:
    """The dump entry of a message; ``id`` overrides the message's (e.g. the raw source id).

    A text body is written as ``body``, bytes as ``body_b64`` (§13): what the transport said,
    not what the bytes look like. ``extra`` keys (``received`` for the archive) follow the
    standard ones.
    """
    out: dict[str, Any] = {"id": message.id if id is None else id, "headers": message.headers}
    body = message.body
    if isinstance(body, str):
        out["body"] = body
    else:
        out["body_b64"] = base64.b64encode(body).decode("ascii")
    out.update(extra)
    return out


def entry_line(message: Message, *, id: str | None = None, **extra: Any) -> str:
    """One JSON Lines line (with its ``\\n``) for a message."""
    return dumps_line(entry(message, id=id, **extra))


def dumps_line(obj: Any) -> str:
    """A compact, UTF-8-friendly JSON line; the one encoding every dump writer uses."""
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def write_jsonl(path: str, messages: Iterable[Message]) -> int:
    """Write messages as a JSON Lines dump (tests, demos, ``msgcap send`` inputs); returns count."""
    count = 0
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for message in messages:
            fh.write(entry_line(message))
            count += 1
    return count


def _open(path: str) -> BinaryIO:
    try:
        return open_input(path)
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc), url=path) from None
