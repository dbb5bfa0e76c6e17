"""The batch driver and tasks without a JVM: a stand-in SparkContext runs the tasks in this
process (results pickled as Spark would), so many split layouts can be checked against replay."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path

import pytest

from msgcap.batch import run_batch
from msgcap.cli import main
from props.errors import MessageError
from props.settings import load_settings

from .conftest import copy_example, trail_view
from .test_batch import _messages, _record, _write_jsonl

PROP = "dirprm/jmsvam.properties"


class _RDD:
    def __init__(self, items) -> None:
        self.items = list(items)

    def map(self, f) -> _RDD:
        return _RDD(f(x) for x in self.items)

    def collect(self) -> list:
        return [pickle.loads(pickle.dumps(x)) for x in self.items]


class _Broadcast:
    def __init__(self, value) -> None:
        self.value = pickle.loads(pickle.dumps(value))  # the parser must pickle

    def unpersist(self) -> None:
        pass


class _Context:
    master = "local[2]"
    defaultParallelism = 2

    def parallelize(self, items, slices) -> _RDD:
        assert slices == len(items)
        return _RDD(items)

    def broadcast(self, value) -> _Broadcast:
        return _Broadcast(value)


class _Spark:
    sparkContext = _Context()


def _replay(capsys, *inputs: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["replay", "--prop", PROP, "--progress-interval", "-1", *inputs])
    out, err = capsys.readouterr()
    return code, out + err


def _batch(inputs: list[str], out: str, parts: int):
    return run_batch(load_settings(PROP), inputs, out, spark=_Spark(), partitions=parts,
                     progress_interval=-1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_split_layout_equals_replay(tmp_path, monkeypatch, capsys, seed):
    copy_example("delimited", tmp_path, monkeypatch)
    rng = random.Random(seed)
    bodies = _messages(120, seed)
    bad = "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,9999999999,NULL,1\n"
    for _ in range(3):  # discarded; a transaction open around one stays open
        bodies.insert(rng.randrange(len(bodies)), bad)
    cut = rng.randrange(20, 100)
    _write_jsonl(tmp_path / "a.jsonl", bodies[:cut], 0)
    _write_jsonl(tmp_path / "b.jsonl", bodies[cut:], cut)
    code, out = _replay(capsys, "a.jsonl", "b.jsonl")
    assert code == 0 and "discarded 3" in out
    want = trail_view("dirdat/sa")
    dsc = [json.loads(x) for x in Path("dirrpt/SALES.dsc").read_text().splitlines()]
    for parts in (1, 2, 3, 5, 8, 13, 21, 34, 60, 130):
        result = _batch(["a.jsonl", "b.jsonl"], f"out{parts}", parts)
        assert trail_view(f"out{parts}/trail/sa") == want, parts
        assert result.stats.summary().split("trail files:")[0] == out.split("trail files:")[0]
        got = [json.loads(x) for x in Path(result.discard_file).read_text().splitlines()]
        assert [(g["error"], g["source"], g["message"]) for g in got] == [
            (d["error"], d["source"], d["message"]) for d in dsc]


def test_long_transaction_through_many_splits(tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    inds = ["W", "B", *["M"] * 30, "E", "W"]
    _write_jsonl(tmp_path / "a.jsonl", [_record(n + 1, i) + "\n" for n, i in enumerate(inds)], 0)
    assert _replay(capsys, "a.jsonl")[0] == 0
    for parts in (4, 17, 40):
        _batch(["a.jsonl"], f"out{parts}", parts)
        assert trail_view(f"out{parts}/trail/sa") == trail_view("dirdat/sa")


def test_abend_at_every_position(tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    prop = Path(PROP)
    prop.write_text(prop.read_text().replace("error.policy=discard", "error.policy=abend"))
    bodies = _messages(30, 5)
    bodies.insert(17, "I,SALES.NOSUCH,2024-03-01 10:15:30.000000,W,9999999999,NULL,1\n")
    _write_jsonl(tmp_path / "a.jsonl", bodies, 0)
    code, out = _replay(capsys, "a.jsonl")
    assert code == 2
    for parts in (1, 3, 7, 31):
        with pytest.raises(MessageError) as info:
            _batch(["a.jsonl"], f"out{parts}", parts)
        assert str(info.value) in out
        assert trail_view(f"out{parts}/trail/sa") == trail_view("dirdat/sa")


def test_empty_inputs(tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    Path("empty.jsonl").write_text("")
    Path("blank.jsonl").write_text("\n\n\n")
    code, out = _replay(capsys, "empty.jsonl", "blank.jsonl")
    assert code == 0
    result = _batch(["empty.jsonl", "blank.jsonl"], "out", 3)
    assert trail_view("out/trail/sa") == trail_view("dirdat/sa")  # a file header only
    assert result.stats.summary().split("trail files:")[0] == out.split("trail files:")[0]
