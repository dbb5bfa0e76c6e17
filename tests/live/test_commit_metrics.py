"""The two commit times of ``/metrics`` (issue 35, item 7), through a real ``msgcap run``: when a
transaction was last made durable (this host's clock, what "nothing committed for too long"
alerts need) and the source commit time of the last one written (what lag is measured from),
plus the deprecated old name of the latter."""

from __future__ import annotations

import json
import re
import signal
import time
from datetime import datetime

from tests.live.test_capture_status import durable, put, scrape, wait_for

SOURCE_COMMIT = 1709288130.0  # 2024-03-01T10:15:30Z, the source timestamp of every test message


def serving_url(work, proc, runs: int) -> str:
    """The /metrics URL the ``runs``-th run of this work directory printed."""
    log = work.root / "dirrpt" / "SALES.log"
    found = wait_for(f"run {runs}'s metrics URL in the log", lambda: log.exists() and (
        urls := re.findall(r"serving /health and /metrics on (http://\S+)", log.read_text())
    )[runs - 1:] and urls, proc, work)
    return found[runs - 1] + "/metrics"


def test_durable_and_source_commit_times_are_two_gauges(work) -> None:
    work.spool(report_http="127.0.0.1:0")
    put(work, 1)
    started = time.time()
    proc = work.start("run", "--prop", str(work.prop))
    try:
        wait_for("1 durable transaction", durable(work, 1), proc, work)
        url = serving_url(work, proc, 1)
        text, first = scrape(url)
        assert "# TYPE msgcap_last_durable_commit_timestamp_seconds gauge" in text
        assert first["msgcap_last_source_commit_timestamp_seconds"] == SOURCE_COMMIT
        assert first["msgcap_last_commit_timestamp_seconds"] == SOURCE_COMMIT  # deprecated
        assert started <= first["msgcap_last_durable_commit_timestamp_seconds"] <= time.time()

        # a later transaction of the same source time: the durable commit time moves on
        put(work, 2)
        wait_for("2 durable transactions", durable(work, 2), proc, work)
        _, second = scrape(url)
        assert second["msgcap_last_durable_commit_timestamp_seconds"] > first[
            "msgcap_last_durable_commit_timestamp_seconds"]
        assert second["msgcap_last_source_commit_timestamp_seconds"] == SOURCE_COMMIT
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0

    # restarted, before any new transaction: the checkpoint's time, not NaN and not now
    written = json.loads((work.root / "dirchk" / "SALES.cpj").read_text())["time"]
    proc = work.start("run", "--prop", str(work.prop))
    try:
        _, again = scrape(serving_url(work, proc, 2))
        assert again["msgcap_last_durable_commit_timestamp_seconds"] == round(
            datetime.fromisoformat(written).timestamp(), 6)
        assert again["msgcap_last_source_commit_timestamp_seconds"] == SOURCE_COMMIT
        assert again["msgcap_transactions_total"] == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
