"""``msgcap send`` failing part-way against the real broker says what the broker confirmed, and
``--skip`` resends from there (issue 11). ActiveMQ drops the connection on a SEND whose
``priority`` header is not a number: a real broker failure in the middle of a send."""

from __future__ import annotations

import json

import pytest

from msgcap.commands.send import RECEIPT_EVERY

pytestmark = pytest.mark.broker


def _dump(work, name: str, bad: int | None) -> str:
    path = work.root / name
    with open(path, "w") as fh:
        for i in range(1, 701):
            headers = {"priority": "x"} if i == bad else {}
            fh.write(json.dumps({"id": f"m{i}", "headers": headers, "body": work.body(i)}) + "\n")
    return str(path)


def test_a_failure_part_way_reports_what_was_confirmed(work, broker, queue) -> None:
    assert RECEIPT_EVERY == 500
    work.properties(jms_url=broker.url, jms_destination=queue)
    failed = work.msgcap("send", "--prop", str(work.prop), _dump(work, "bad.jsonl", bad=601))
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    (line,) = failed.stderr.strip().splitlines()
    assert line.startswith(f"msgcap send: error: {broker.url}: sending failed after ")
    assert ("the broker confirmed the first 500, messages 501–" in line
            and "may or may not have arrived; resend with --skip 500" in line), line
    again = work.msgcap("send", "--prop", str(work.prop), "--skip", "500",
                        _dump(work, "good.jsonl", bad=None), check=True)
    assert "sent 200 messages after skipping 500" in again.stdout
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", check=True)
    # 501-600 reached the broker before the bad frame and came again: duplicates, skipped
    assert "duplicates 100" in done.stdout
    assert [s for s, _, _ in work.trail()] == [f"{i:010d}" for i in range(1, 701)]
