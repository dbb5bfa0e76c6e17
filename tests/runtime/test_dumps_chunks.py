"""JSON Lines dumps are read in chunks of whole lines: the same messages, line numbers and
errors wherever the chunks end."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgcap import dumps
from msgcap.dumps import read_jsonl
from props.errors import SourceError


def _entries(n: int) -> list[str]:
    return [json.dumps({"id": f"m{i}", "headers": {"k": "é" * (i % 3)},
                        "body_b64": base64.b64encode(bytes([i % 256]) * (i % 50)).decode()})
            if i % 4 else json.dumps({"id": f"m{i}", "body": f"text {i} ü"})
            for i in range(n)]


@pytest.mark.parametrize("chunk", [7, 64, 1000, 1 << 20])
def test_chunks_give_the_lines_in_order(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(dumps, "_CHUNK", chunk)
    lines = _entries(40)
    lines[5] = "   "  # blank lines are skipped but counted
    path = tmp_path / "d.jsonl"
    path.write_bytes(("\ufeff" + "\r\n".join(lines)).encode())  # BOM, CRLF, no final newline
    got = list(read_jsonl(str(path)))
    assert [m.id for m in got] == [f"m{i}" for i in range(40) if i != 5]
    assert got[-1].origin == f"{path}:40"
    assert got[3].body == bytes([3]) * 3 and got[4].body == "text 4 ü"


@pytest.mark.parametrize("chunk", [16, 1 << 20])
def test_invalid_utf8_and_bad_json_name_their_line(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(dumps, "_CHUNK", chunk)
    path = tmp_path / "d.jsonl"
    good = [line.encode() for line in _entries(6)]
    path.write_bytes(b"\n".join([*good[:3], b'{"id": "x\xff", "body": ""}', *good[3:]]))
    with pytest.raises(SourceError, match=r"d.jsonl:4: not a JSON object"):
        list(read_jsonl(str(path)))
    path.write_bytes(b"\n".join([*good, b"{oops"]) + b"\n")
    with pytest.raises(SourceError, match=r"d.jsonl:7: not a JSON object"):
        list(read_jsonl(str(path)))


def test_base64_must_be_strict(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a", "body_b64": "QQ==QQ=="}\n')
    with pytest.raises(SourceError, match="d.jsonl:1: .*not valid Base64"):
        list(read_jsonl(str(path)))


def _one_by_one(path):
    """Each line alone through ``jsonl_message`` (what the Spark batch does), errors included."""
    out = []
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:
                message = dumps.jsonl_message(raw.removesuffix(b"\n"), str(path), number)
            except SourceError as exc:
                return out, str(exc)
            if message is not None:
                out.append((message.id, message.headers, message.body, message.origin))
    return out, None


LINES = [b'{"id": "a", "body": "x"}', b"", b"  \t", "\u3000".encode(), b"\r",
         '\ufeff{"id": "b", "body_b64": "/w=="}'.encode(), b'{"id": "c", "body": "\xc3\xa9"}\r',
         b"\xa0"]


@pytest.mark.parametrize("chunk", [5, 64, 1 << 20])
@pytest.mark.parametrize("last", range(len(LINES)))
def test_chunked_reading_equals_one_line_at_a_time(tmp_path, monkeypatch, chunk, last):
    """``read_jsonl``'s chunked path and ``jsonl_message`` agree line for line, errors too."""
    monkeypatch.setattr(dumps, "_CHUNK", chunk)
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\n".join(LINES[:last + 1]) + b"\n")
    got, error = [], None
    try:
        for m in read_jsonl(str(path)):
            got.append((m.id, m.headers, m.body, m.origin))
    except SourceError as exc:
        error = str(exc)
    assert (got, error) == _one_by_one(path)


_ID_CHARS = st.sampled_from(['a', '7', '"', "\\", "\x01", "é", "\u2028", " ", "/", "{"])


@st.composite
def _b64_lines(draw) -> str:
    """Lines near the fixed shape ``read_jsonl`` reads without a JSON decoder, and off it."""
    ident = "".join(draw(st.lists(_ID_CHARS, max_size=6)))
    body = draw(st.binary(max_size=40))
    b64 = base64.b64encode(body).decode()
    how = draw(st.sampled_from(("dumps", "writer", "spaces", "headers", "bad64", "raw", "order",
                                "cut")))
    if how == "dumps":
        return json.dumps({"id": ident, "headers": {}, "body_b64": b64})
    if how == "writer":
        return json.dumps({"id": ident, "headers": {}, "body_b64": b64}, ensure_ascii=False)
    if how == "spaces":
        return json.dumps({"id": ident, "headers": {}, "body_b64": b64}, separators=(",", ":"))
    if how == "headers":
        return json.dumps({"id": ident, "headers": {"h": ident}, "body_b64": b64})
    if how == "bad64":  # what base64's strict mode refuses: excess padding, a cut, padding inside
        cut = draw(st.integers(0, len(b64)))
        b64 = draw(st.sampled_from((b64 + "=", b64 + "A", b64[:-1], b64[:cut] + "=" + b64[cut:])))
        return json.dumps({"id": ident, "headers": {}, "body_b64": b64})
    if how == "cut":  # the shape's parts overlapping: not JSON
        return '{"id": "' + ident + '", "headers": {}, "body_b64": "}'
    if how == "order":
        return json.dumps({"headers": {}, "id": ident, "body_b64": b64})
    # the shape with an id as is (no JSON escaping): control characters, quotes, backslashes
    return '{"id": "' + ident + '", "headers": {}, "body_b64": "' + b64 + '"}'


def _by_json(path: str, lines: list[str]) -> list:
    out = []
    for number, line in enumerate(lines, 1):
        try:
            message = dumps.jsonl_message(line.encode(), path, number)
        except SourceError as error:
            out.append(str(error))
            break
        if message is not None:
            out.append((message.id, message.headers, message.body, message.origin))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(_b64_lines(), min_size=1, max_size=8))
def test_fixed_shape_lines_read_as_the_json_decoder_reads_them(tmp_path_factory, lines):
    """Lines of the ``body_b64`` shape (read without ``json.loads``) give the Messages, or the
    error, that the JSON decoder's path gives."""
    path = str(tmp_path_factory.mktemp("d") / "d.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    got = []
    try:
        for message in read_jsonl(path):
            got.append((message.id, message.headers, message.body, message.origin))
    except SourceError as error:
        got.append(str(error))
    assert got == _by_json(path, lines)


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_a_byte_order_mark_is_no_part_of_the_first_text_line(tmp_path, monkeypatch, chunk):
    """Issue 35: text lines as replay reads them (and batch, tests/batch): the mark that
    starts a UTF-8 file is dropped, the first line is the first message; a mark elsewhere is
    data."""
    monkeypatch.setattr(dumps, "_CHUNK", chunk)
    path = tmp_path / "t.txt"
    path.write_bytes("\ufefffirst\r\n\ufeffsecond\nthird".encode())
    got = list(dumps.read_text_lines(str(path)))
    assert [(m.id, m.body) for m in got] == [("t.txt:1", "first"), ("t.txt:2", "\ufeffsecond"),
                                            ("t.txt:3", "third")]
    path.write_bytes(b"\xef\xbb\xbf")
    assert list(dumps.read_text_lines(str(path))) == []
