"""Issue 24, condition 4: one message larger than ``jms.maxbytes`` is refused under
``error.policy`` (discard: recorded with its size, the capture goes on; abend: one line, exit 2,
the message stays), from every source, without ever being held in memory whole."""

from __future__ import annotations

import json

import pytest

from msgcap.sources.base import Unreadable
from msgcap.sources.spool import SpoolSource
from tests.live.conftest import Work

LIMIT = 4096


@pytest.fixture
def work(tmp_path) -> Work:
    return Work(tmp_path / "home")


def discard_records(work: Work) -> list[dict]:
    path = work.root / "dirrpt" / "SALES.dsc"
    return [json.loads(line) for line in path.read_text().splitlines()]


def big_body(size: int) -> str:
    """Message 2 as records of SALES.CUSTOMER inserts, ``size`` bytes in all (a valid message
    but for its size): the NAME column (1 to 30 characters) makes up the length."""
    head = "I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,W,0000000002,2,"
    tail = ",City 2,2024-03-01 10:15:30\n"
    bare = len(head) + len(tail)
    count = -(-size // (bare + 30))
    names = size - count * bare
    assert count <= names <= 30 * count
    lengths = [names // count + (i < names % count) for i in range(count)]
    return "".join(f"{head}{'N' * n}{tail}" for n in lengths)


# -- the spool directory ------------------------------------------------------------------------

def test_spool_file_over_the_limit_is_discarded_and_moved_to_error_intact(work) -> None:
    d = work.spool(error_policy="discard", error_file="dirrpt/SALES.dsc", jms_maxbytes=LIMIT)
    (d / "0001.msg").write_text(work.body(1))
    (d / "0002.msg").write_text(big_body(LIMIT + 1))
    (d / "0003.msg").write_text(work.body(3))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert "discarded 1" in done.stdout
    assert work.seqids() == ["0000000001", "0000000003"]
    assert (d / ".error" / "0002.msg").read_text() == big_body(LIMIT + 1)
    (record,) = discard_records(work)
    assert record["error"] == f"message of {LIMIT + 1} bytes exceeds jms.maxbytes={LIMIT}"
    assert record["position"] == "jms.maxbytes"
    assert record["message"]["id"] == "0002.msg" and record["message"]["body"] == ""
    assert record["message"]["headers"]["message-id"] == "0002.msg"


def test_spool_file_over_the_limit_stops_abend_with_one_line_and_stays(work) -> None:
    d = work.spool(error_policy="abend", jms_maxbytes=LIMIT)
    (d / "0001.msg").write_text(work.body(1))
    (d / "0002.msg").write_text(big_body(LIMIT + 1))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "5")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, done.stderr
    assert "0002.msg" in errors[0]
    assert f"message of {LIMIT + 1} bytes exceeds jms.maxbytes={LIMIT}" in errors[0]
    assert work.seqids() == ["0000000001"]
    assert (d / "0002.msg").stat().st_size == LIMIT + 1


def test_spool_msg_json_whose_body_is_over_the_limit_is_unreadable(tmp_path) -> None:
    (tmp_path / "a.msg.json").write_text(json.dumps(
        {"id": "X-1", "headers": {"h": "v"}, "body": "é" * (LIMIT // 2 + 1)}))
    with SpoolSource(f"dir:{tmp_path}", max_bytes=LIMIT) as source, \
            pytest.raises(Unreadable) as info:
        source.receive(1.0)
    assert info.value.error.reason == (
        f"message of {LIMIT + 2} bytes exceeds jms.maxbytes={LIMIT}")
    assert info.value.message.body == b"" and info.value.message.ack == "a.msg.json"


def test_spool_file_at_the_limit_is_captured(work) -> None:
    d = work.spool(jms_maxbytes=LIMIT)
    (d / "0002.msg").write_text(big_body(LIMIT))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert set(work.seqids()) == {"0000000002"}
    assert len(work.seqids()) == big_body(LIMIT).count("\n")


def test_a_64_mb_spool_file_is_never_read_into_memory(work) -> None:
    d = work.spool(error_policy="discard", error_file="dirrpt/SALES.dsc")
    size = 64 << 20
    with open(d / "0001.msg", "wb") as fh:  # sparse: no disk, but 64 MB to read
        fh.truncate(size)
    proc = work.start("run", "--prop", str(work.prop), "--max-idle", "0.5")
    peak = work.wait_peak_rss_mb(proc)
    assert proc.returncode == 0, (work.root / "run.out").read_text()
    (record,) = discard_records(work)
    assert record["error"] == f"message of {size} bytes exceeds jms.maxbytes=16777216"
    assert (d / ".error" / "0001.msg").stat().st_size == size
    assert peak < 48, f"peak RSS {peak:.0f} MB for a {size >> 20} MB message"
