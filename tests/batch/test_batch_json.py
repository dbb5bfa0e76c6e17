"""``msgcap batch --json`` (issue 26): the same object as ``msgcap replay --json`` for the same
input, with the batch's outputs, on stdout alone."""

from __future__ import annotations

import json

from msgcap.cli import main

from .conftest import copy_example

PROP = "dirprm/jmsvam.properties"
RUN_SPECIFIC = ("command", "trail", "definitions", "outputs", "lag_seconds", "elapsed_seconds")


def test_batch_json_counts_as_replay_json(local_spark, tmp_path, monkeypatch, capsys):
    copy_example("delimited", tmp_path, monkeypatch)
    assert main(["replay", "--prop", PROP, "--json", "--progress-interval", "-1",
                 "messages.jsonl"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert main(["batch", "--prop", PROP, "--input", "messages.jsonl", "--output", "out",
                 "--format", "trail,json", "--partitions", "2", "--json"]) == 0
    got = capsys.readouterr()
    batched = json.loads(got.out)  # the whole of stdout; progress went to stderr
    assert "batch: parsing 1 input files in 2 splits" in got.err
    assert batched["command"] == "batch" and batched["messages"] == 5
    assert ({k: v for k, v in batched.items() if k not in RUN_SPECIFIC}
            == {k: v for k, v in replayed.items() if k not in RUN_SPECIFIC})
    position = {"file": "out/trail/sa000000000", "seqno": 0,
                "rba": (tmp_path / "out/trail/sa000000000").stat().st_size}
    assert batched["trail"] == {"files": ["out/trail/sa000000000"], "written": position,
                                "durable": position}
    assert batched["trail"]["durable"]["rba"] == replayed["trail"]["durable"]["rba"]
    assert batched["outputs"] == {"trail": "out/trail", "json": "out/json"}
    assert batched["lag_seconds"] > 0 and batched["definitions"] == "dirdat/sales.def"
