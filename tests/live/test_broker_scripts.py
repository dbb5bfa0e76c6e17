"""The broker scripts clean up after a test run that was killed midway."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import BROKERS, Broker, _free_port

pytestmark = pytest.mark.broker


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("kind", BROKERS)
def test_a_broker_stops_by_itself_once_its_owner_is_gone(tmp_path: Path, kind: str) -> None:
    owner = subprocess.Popen(["sleep", "600"])
    broker = Broker(tmp_path / kind, _free_port(), {"MSGCAP_BROKER_OWNER": str(owner.pid)}, kind)
    broker.start()
    try:
        pid = int((broker.dir / f"{kind}.pid").read_text())
        assert broker.running() and _alive(pid)
        owner.kill()
        owner.wait()
        deadline = time.monotonic() + 90  # the watcher looks every second; the stop takes a few
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _alive(pid), f"{kind} still runs after its owner exited"
        assert not broker.running()
        assert not (broker.dir / "watchdog.pid").exists()
    finally:
        owner.kill()
        owner.wait()
        broker.stop()


def test_stop_ends_the_watcher_too(tmp_path: Path) -> None:
    owner = subprocess.Popen(["sleep", "600"])
    broker = Broker(tmp_path / "activemq", _free_port(),
                    {"MSGCAP_BROKER_OWNER": str(owner.pid)}, "activemq")
    try:
        broker.start()
        watcher = int((broker.dir / "watchdog.pid").read_text())
        assert _alive(watcher)
        broker.stop()
        assert not _alive(watcher) and not broker.running()
    finally:
        owner.kill()
        owner.wait()
        broker.stop()
