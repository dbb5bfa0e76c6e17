"""Input splitting without Spark: every split point keeps messages whole, in order, numbered."""

from __future__ import annotations

import json

import pytest

from msgcap import dumps
from msgcap.batch import (
    count_newlines,
    newline_ranges,
    plan_splits,
    read_split,
    with_line_numbers,
)


def _numbered(splits):
    ranges = newline_ranges(splits)
    return with_line_numbers(splits, [count_newlines(*r) for r in ranges])


def _read(splits):
    return [(m.id, m.origin, m.body, m.headers) for s in splits for _o, _p, _n, m in read_split(s)]


def _expected(paths, lines):
    return [(m.id, m.origin, m.body, m.headers)
            for m in dumps.read_messages(paths, lines=lines)]


@pytest.fixture
def inputs(tmp_path):
    jsonl = tmp_path / "a.jsonl"
    entries = [{"id": f"m{i}", "headers": {"k": str(i)}, "body": f"body {i} " + "x" * (i % 7)}
               for i in range(12)]
    text = "".join(json.dumps(e) + "\n" + ("\n" if i % 5 == 0 else "") for i, e in
                   enumerate(entries))
    jsonl.write_text(text)
    lines = tmp_path / "b.txt"
    lines.write_bytes(b"one\r\ntwo\n\nthree\nlast-no-newline")
    one = tmp_path / "c.msg"
    one.write_bytes(b"\xc1\xc2 whole file")
    return tmp_path, [str(jsonl), str(one), str(jsonl)], [str(lines), str(lines)]


@pytest.mark.parametrize("target", [1, 2, 3, 5, 8, 13, 40, 500])
def test_splits_read_like_replay(inputs, target):
    _, mixed, text = inputs
    splits = _numbered(plan_splits(mixed, lines=False, target=target))
    assert _read(splits) == _expected(mixed, False)
    splits = _numbered(plan_splits(text, lines=True, target=target))
    assert _read(splits) == _expected(text, True)


def test_offsets_increase(inputs):
    _, mixed, _ = inputs
    splits = _numbered(plan_splits(mixed, lines=False, target=4))
    assert [s.index for s in splits] == list(range(len(splits)))
    # over the whole input, in order and unique: time ids are built from them
    offsets = [o for s in splits for o, _p, _n, _m in read_split(s)]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


def test_one_message_files_are_grouped_never_cut(tmp_path):
    paths = []
    for i in range(10):
        p = tmp_path / f"{i:04d}.msg"
        p.write_text("x" * (100 + i))
        paths.append(str(p))
    splits = plan_splits(paths, lines=False, target=3)
    assert 2 <= len(splits) <= 4
    assert all(p.start == 0 and p.end == 100 + int(p.path[-8:-4]) for s in splits
               for p in s.pieces)
    assert _read(splits) == _expected(paths, False)
