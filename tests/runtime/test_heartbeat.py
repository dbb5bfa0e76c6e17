"""The heartbeat and the status file, with a fake clock (issue 14): when the heartbeat beats and
what it says, the gauge it sets, off by default, and a status file that cannot be written."""

from __future__ import annotations

import io
import json
import logging

import pytest

from msgcap.checkpoint import Checkpoint, CheckpointFile
from msgcap.pipeline import Stats
from msgcap.report import Reporter, metrics_text
from msgcap.status import StatusPublisher, load_status_file
from props.errors import MsgcapError, PropertyError
from props.loader import settings_from_text

COMMIT_US = 1_700_000_000_000_000


def _reporter(**kwargs):
    stats, out, now, wall = Stats(messages=4), io.StringIO(), [0.0], [COMMIT_US]
    stats.last_commit_us = COMMIT_US
    published = []
    r = Reporter(stats, out=out, clock=lambda: now[0], now_us=lambda: wall[0],
                 publish=lambda: published.append(stats.heartbeat_us), **kwargs)
    return r, stats, out, now, wall, published


def test_the_heartbeat_beats_every_interval_with_idle_time_and_growing_lag() -> None:
    r, stats, out, now, wall, published = _reporter(heartbeat=30)
    assert stats.heartbeat_us == COMMIT_US  # starting counts as a beat
    now[0], wall[0] = 29.0, COMMIT_US + 29_000_000
    r.tick()
    assert out.getvalue() == "" and published == []
    now[0], wall[0] = 30.0, COMMIT_US + 30_000_000
    r.tick()
    stats.messages += 1  # a message at 45 s
    now[0], wall[0] = 45.0, COMMIT_US + 45_000_000
    r.tick()
    now[0], wall[0] = 60.0, COMMIT_US + 60_000_000
    r.tick()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and published == [COMMIT_US + 30_000_000, COMMIT_US + 60_000_000]
    assert ": idle 30 s, lag 30 s, messages 4; trail durable: none" in lines[0]
    assert ": idle 15 s, lag 1 min 00 s, messages 5; trail durable: none" in lines[1]
    assert stats.heartbeat_us == COMMIT_US + 60_000_000
    assert "msgcap_heartbeat_timestamp_seconds 1700000060.000000" in metrics_text(
        stats, connected=True, trail_bytes=0, now_us=wall[0]).splitlines()


def test_no_heartbeat_by_default() -> None:
    r, stats, out, now, _, published = _reporter()
    now[0] = 3600.0
    r.tick()
    assert out.getvalue() == "" and published == [] and stats.heartbeat_us is None
    assert "heartbeat" not in metrics_text(stats, connected=True, trail_bytes=0)
    base = "parser.type=delim\ndelim.header=a\ndelim.sourcedefs=x.def\n"
    assert settings_from_text(base).report_heartbeat is None
    assert settings_from_text(base + "report.heartbeat=2min\n").report_heartbeat == 120
    with pytest.raises(PropertyError, match=r"^p:4: report.heartbeat: '500ms' is less than "):
        settings_from_text(base + "report.heartbeat=500ms\n", "p")


def test_reports_are_published_too() -> None:
    r, _, out, now, _, published = _reporter(every_seconds=10)
    now[0] = 10.0
    r.tick()
    assert "msgcap report at" in out.getvalue() and len(published) == 1


def test_a_status_file_that_cannot_be_written_is_one_warning(tmp_path, caplog) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    publisher = StatusPublisher(str(blocked / "SALES.status"), Stats())
    with caplog.at_level(logging.WARNING, logger="msgcap.status"):
        publisher.publish()
        publisher.publish()  # the same failure again: not repeated
    assert [r.getMessage() for r in caplog.records] == [
        f"{blocked}/SALES.status: cannot write the status file: Not a directory"]
    good = StatusPublisher(str(tmp_path / "SALES.status"), Stats(messages=2), heartbeat=5)
    good.publish("abended", "why")
    data = load_status_file(str(tmp_path / "SALES.status"))
    assert (data["state"], data["error"], data["report"]["messages"]) == ("abended", "why", 2)
    assert data["heartbeat_seconds"] == 5.0 and data["heartbeat"] is None
    (tmp_path / "SALES.status").write_text(json.dumps({"state": "dancing"}))
    with pytest.raises(MsgcapError, match="SALES.status: bad status file: "):
        load_status_file(str(tmp_path / "SALES.status"))


def test_the_checkpoint_keeps_the_last_commit_time(tmp_path) -> None:
    cpf = CheckpointFile(str(tmp_path), "SALES")
    cpf.save(Checkpoint("dirdat/sa000000000", 0, 100, last_commit_us=COMMIT_US))
    assert cpf.load().last_commit_us == COMMIT_US
    old = json.loads((tmp_path / "SALES.cpj").read_text())
    del old["last_commit_us"]  # a checkpoint of a version before it
    (tmp_path / "SALES.cpj").write_text(json.dumps(old))
    assert cpf.load().last_commit_us is None
