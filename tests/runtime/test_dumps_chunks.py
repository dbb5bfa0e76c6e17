"""JSON Lines dumps are read in chunks of whole lines: the same messages, line numbers and
errors wherever the chunks end."""

from __future__ import annotations

import base64
import json

import pytest

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
