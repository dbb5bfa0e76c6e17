"""Bytes stay bytes in Spark batch: one-message files holding binary records (their bytes valid
UTF-8 or not) decode to the values encoded, as in replay (issue 24)."""

from __future__ import annotations

import random

from msgcap.batch.driver import run_batch
from msgcap.cli import main
from props.loader import load_settings
from tests.binrec import Layout, trail_rows


def test_binary_files_in_batch_decode_to_their_values(local_spark, tmp_path, monkeypatch,
                                                      capsys):
    rng = random.Random(11)
    layout = Layout.random(rng)
    records = layout.records(rng, 16)
    prop = layout.write_home(tmp_path)
    monkeypatch.chdir(tmp_path)
    files = tmp_path / "files"
    files.mkdir()
    for n, (_, data) in enumerate(records):
        (files / f"{n:04d}.dat").write_bytes(data)
    run_batch(load_settings(str(prop)), [str(files)], "out", spark=local_spark,
              progress_interval=-1, partitions=3)
    capsys.readouterr()
    assert main(["dump", "--json", "--defs", "dirdat/bn.def", "out/trail/bn000000000"]) == 0
    rows = trail_rows(capsys.readouterr().out)
    assert rows == [layout.dumped(values) for values, _ in records]
