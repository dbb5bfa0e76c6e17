"""Trail retention (issue 26 item 3): which old trail files ``Retention`` removes, by
``trail.purge.*``. The rules look only at names, sizes and modification times, so the files
here are sparse stand-ins; tests/hostile/test_retention_hostile.py purges real trails."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest

from msgcap.trail.retention import Retention, load_record, reader_seqno
from props.errors import MsgcapError, TrailError
from props.settings import PurgeSettings, TrailSettings

MIB = 1024 * 1024
HOUR = 3600.0


def trail_settings(tmp_path: Path, **purge: object) -> TrailSettings:
    return TrailSettings(path=str(tmp_path / "dirdat" / "sa"), extract="SALES",
                         purge=PurgeSettings(**purge))  # type: ignore[arg-type]


def make_files(tmp_path: Path, count: int, size: int = MIB) -> list[Path]:
    """Trail files sa000000000 … of ``size`` bytes each, modified 100 h ago and later in order."""
    (tmp_path / "dirdat").mkdir(exist_ok=True)
    paths = []
    for seqno in range(count):
        path = tmp_path / "dirdat" / f"sa{seqno:09d}"
        with open(path, "wb") as fh:
            fh.truncate(size)
        then = time.time() - (100 - seqno) * HOUR
        os.utime(path, (then, then))
        paths.append(path)
    return paths


def names(tmp_path: Path) -> list[str]:
    return sorted(os.listdir(tmp_path / "dirdat"))


def retention(tmp_path: Path, **purge: object) -> Retention:
    (tmp_path / "dirchk").mkdir(exist_ok=True)  # where the checkpoint is
    return Retention(trail_settings(tmp_path, **purge), str(tmp_path / "dirchk"))


def write_position(path: Path, **position: object) -> str:
    path.write_text(json.dumps(position))
    return str(path)


def test_minkeepfiles_keeps_the_newest_files_and_logs_each_removal(tmp_path, caplog) -> None:
    make_files(tmp_path, 6)
    with caplog.at_level(logging.INFO, logger="msgcap.trail"):
        removed = retention(tmp_path, minkeepfiles=3).purge(checkpoint_seqno=5, current_seqno=5)
    assert [Path(p.file).name for p in removed] == ["sa000000000", "sa000000001", "sa000000002"]
    assert names(tmp_path) == ["sa000000003", "sa000000004", "sa000000005"]
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("purged")]
    assert len(logged) == 3
    assert logged[0] == (f"purged trail file {tmp_path}/dirdat/sa000000000 ({MIB} bytes): the "
                         "checkpoint passed it; older than the newest "
                         "trail.purge.minkeepfiles=3")


def test_minkeephours_removes_only_files_unchanged_for_that_long(tmp_path) -> None:
    paths = make_files(tmp_path, 5)
    for path in paths[3:]:
        os.utime(path, (time.time() - 2 * HOUR,) * 2)
    retention(tmp_path, minkeephours=24).purge(checkpoint_seqno=4, current_seqno=4)
    assert names(tmp_path) == ["sa000000003", "sa000000004"]


def test_a_recent_file_stops_the_purge_so_that_no_gap_is_left(tmp_path) -> None:
    paths = make_files(tmp_path, 5)
    os.utime(paths[1], (time.time(),) * 2)  # touched after the files after it
    retention(tmp_path, minkeephours=1).purge(checkpoint_seqno=4, current_seqno=4)
    assert names(tmp_path) == [f"sa00000000{i}" for i in range(1, 5)]


def test_maxmegabytes_removes_the_oldest_files_only_while_the_trail_is_larger(tmp_path) -> None:
    make_files(tmp_path, 5)
    removed = retention(tmp_path, maxmegabytes=2).purge(checkpoint_seqno=4, current_seqno=4)
    assert len(removed) == 3 and "over trail.purge.maxmegabytes=2" in removed[0].why
    assert names(tmp_path) == ["sa000000003", "sa000000004"]
    retention(tmp_path, maxmegabytes=2).purge(checkpoint_seqno=4, current_seqno=4)
    assert names(tmp_path) == ["sa000000003", "sa000000004"]  # under the limit: nothing more


def test_maxmegabytes_never_removes_what_a_reader_still_needs_it_warns(tmp_path, caplog) -> None:
    make_files(tmp_path, 5)
    reader = write_position(tmp_path / "replicat.pos", file="dirdat/sa000000001", rba=1234)
    with caplog.at_level(logging.INFO, logger="msgcap.trail"):
        removed = retention(tmp_path, maxmegabytes=1, readers=(reader,)).purge(4, 4)
    assert [Path(p.file).name for p in removed] == ["sa000000000"]
    assert names(tmp_path)[0] == "sa000000001"
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.getMessage() == (
        f"trail {tmp_path}/dirdat/sa: {4 * MIB} bytes, over trail.purge.maxmegabytes=1, but "
        f"{tmp_path}/dirdat/sa000000001 is kept: reader {reader} (at seqno 1) has not "
        "finished it")


def test_maxmegabytes_yields_to_minkeepfiles(tmp_path) -> None:
    make_files(tmp_path, 5)
    retention(tmp_path, maxmegabytes=1, minkeepfiles=3).purge(4, 4)
    assert names(tmp_path) == ["sa000000002", "sa000000003", "sa000000004"]


def test_the_checkpoints_file_and_those_after_it_are_never_removed(tmp_path) -> None:
    make_files(tmp_path, 6)
    retention(tmp_path, minkeepfiles=1, maxmegabytes=1).purge(checkpoint_seqno=2,
                                                              current_seqno=5)
    assert names(tmp_path) == [f"sa00000000{i}" for i in range(2, 6)]


def test_the_current_file_is_never_removed(tmp_path) -> None:
    make_files(tmp_path, 3)
    retention(tmp_path, maxmegabytes=1).purge(checkpoint_seqno=9, current_seqno=2)
    assert names(tmp_path) == ["sa000000002"]


def test_readers_hold_back_the_file_they_are_in_and_the_slowest_wins(tmp_path) -> None:
    make_files(tmp_path, 6)
    fast = write_position(tmp_path / "fast.pos", seqno=4, rba=0)
    slow = write_position(tmp_path / "slow.pos", file="/elsewhere/dirdat/sa000000002", rba=9)
    removed = retention(tmp_path, readers=(fast, slow)).purge(5, 5)
    assert names(tmp_path) == [f"sa00000000{i}" for i in range(2, 6)]
    assert removed[0].why == "the checkpoint and 2 reader(s) passed it"


@pytest.mark.parametrize("content", [None, "", "{", '{"rba": 5}', '{"seqno": -1}',
                                     '{"file": "dirdat/xx000000003"}',
                                     '{"file": "dirdat/sa000000003", "seqno": 2}',
                                     '{"seqno": true}'])
def test_a_reader_position_that_cannot_be_read_keeps_every_file(tmp_path, caplog,
                                                                 content) -> None:
    make_files(tmp_path, 4)
    path = tmp_path / "replicat.pos"
    if content is not None:
        path.write_text(content)
    with caplog.at_level(logging.WARNING, logger="msgcap.trail"):
        assert retention(tmp_path, readers=(str(path),), maxmegabytes=1).purge(3, 3) == []
    assert len(names(tmp_path)) == 4
    assert any(str(path) in r.getMessage() and "keeping every trail file" in r.getMessage()
               for r in caplog.records)


def test_reader_position_formats(tmp_path) -> None:
    trail = trail_settings(tmp_path)
    assert reader_seqno(write_position(tmp_path / "a", seqno=7, rba=1), trail) == 7
    assert reader_seqno(write_position(tmp_path / "b", file="sa000000012"), trail) == 12
    assert reader_seqno(write_position(tmp_path / "c", file="x/sa000000003", seqno=3),
                        trail) == 3
    with pytest.raises(TrailError, match=r"file 'sa00012' is not a file of trail .*/dirdat/sa "
                                         r"\(sa and 9 ASCII digits\)"):
        reader_seqno(write_position(tmp_path / "d", file="sa00012"), trail)
    # issue 35: digits int() reads are no trail file's (٠٠٠٠٠٠٠١٢ would be 12)
    with pytest.raises(TrailError, match="is not a file of trail"):
        reader_seqno(write_position(tmp_path / "e", file="sa" + "\u0660" * 7 + "\u0661\u0662"),
                     trail)


def test_purges_after_a_rollover_only_and_records_the_last_purge(tmp_path) -> None:
    make_files(tmp_path, 3)
    keeper = retention(tmp_path, minkeepfiles=1)
    assert [Path(p.file).name for p in keeper.after_checkpoint(1, 2)] == ["sa000000000"]
    record = load_record(str(tmp_path / "dirchk"), "SALES")
    assert record is not None and record["bytes"] == MIB and record["trail_bytes"] == 2 * MIB
    assert record["files"][0]["file"].endswith("sa000000000")
    assert keeper.after_checkpoint(1, 2) == []  # the same checkpoint file: no purge
    assert names(tmp_path) == ["sa000000001", "sa000000002"]
    assert [Path(p.file).name for p in keeper.after_checkpoint(2, 2)] == ["sa000000001"]


@pytest.mark.parametrize("content", ["{", "[]", '{"time": "t", "files": {}, "bytes": 1}'])
def test_a_damaged_purge_record_is_an_error_naming_it(tmp_path, content) -> None:
    (tmp_path / "SALES.purge").write_text(content)
    with pytest.raises(MsgcapError, match=rf"^{tmp_path}/SALES.purge: (unreadable|bad) purge "
                                          "record"):
        load_record(str(tmp_path), "SALES")
    assert load_record(str(tmp_path / "none"), "SALES") is None
