"""Hot standby (``msgcap run --standby``, msgcap.standby) through the real CLI: a standby waits
without a broker connection, shows in ``msgcap status``, ends cleanly on SIGTERM, and takes over
a capture killed with ``kill -9`` (again and again, alternating the processes, while a producer
sends) with every message in the trail exactly once and in order."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from msgcap.lock import holder
from tests.live.conftest import Work, send, wait_for

KILLS = 4  # takeovers under the producer


def start(work: Work, name: str, *args: str) -> subprocess.Popen[str]:
    """``msgcap run --prop P ARGS`` in the background, stdout and stderr in ``<name>.out``."""
    out = open(work.root / f"{name}.out", "w")  # noqa: SIM115 - owned by the process
    return subprocess.Popen([sys.executable, "-m", "msgcap.cli", "run", "--prop",
                             str(work.prop), *args], cwd=work.root, env=work.env(),
                            stdout=out, stderr=subprocess.STDOUT, text=True)


def output(work: Work, name: str) -> str:
    return (work.root / f"{name}.out").read_text()


def said(work: Work, name: str, line: str) -> None:
    """Wait for ``line`` in the output of run ``name``: a standby takes the lock (what
    ``active`` sees) or registers (``waiting``) a moment before it says so."""
    wait_for(lambda: line in output(work, name), f"{name} to say {line!r}", timeout=30)


def status(work: Work) -> dict:
    done = work.msgcap("status", "--prop", str(work.prop), "--json")
    return json.loads(done.stdout)


def active(work: Work) -> int | None:
    return holder(str(work.root / "dirchk" / "SALES.lock"))


def waiting(work: Work) -> list[int]:
    return [s["pid"] for s in status(work)["standbys"]]


def broker_sockets(pid: int, port: int) -> int:
    """How many TCP sockets process ``pid`` has open to ``port`` (its descriptors' inodes
    matched against the kernel's TCP tables)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes and int(fields[2].rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


def last_seqid(work: Work) -> int:
    try:
        cp = json.loads((work.root / "dirchk" / "SALES.cpj").read_text())
    except (FileNotFoundError, ValueError):
        return 0
    return int(cp["last_seqid"] or 0)


def test_standby_waits_shows_in_status_and_ends_on_sigterm(work) -> None:
    spool = work.spool()
    first = start(work, "first")
    try:
        wait_for(lambda: active(work) == first.pid, "the first run to lock", procs=[first])
        standby = start(work, "standby", "--standby", "--json")
        wait_for(lambda: waiting(work) == [standby.pid], "the standby's registration",
                 procs=[standby])
        said(work, "standby", f"standby (pid {standby.pid}): dirchk/SALES.lock is held by "
             f"process {first.pid} (the active capture): waiting to take over")
        seen = status(work)
        assert (seen["state"], seen["pid"]) == ("running", first.pid)
        assert seen["standbys"][0]["host"] == socket.gethostname()
        text = work.msgcap("status", "--prop", str(work.prop)).stdout
        assert f"running (pid {first.pid}, active; 1 standby)" in text
        assert f"standby: pid {standby.pid} on {socket.gethostname()}, waiting since" in text

        (spool / "0001.msg").write_text(work.body(1))  # the active one captures meanwhile
        wait_for(lambda: last_seqid(work) == 1, "the active run to capture", procs=[first])
        standby.send_signal(signal.SIGTERM)
        assert standby.wait(timeout=30) == 0
        text = output(work, "standby")
        assert "stopped by SIGTERM while waiting: nothing taken, nothing written" in text
        summary = json.loads(text.strip().splitlines()[-1])
        assert (summary["exit_reason"], summary["messages"]) == ("SIGTERM", 0)
        assert "Traceback" not in text
        assert waiting(work) == [] and active(work) == first.pid
        assert not list((work.root / "dirchk").glob("SALES.standby.*"))
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 0
    assert work.seqids() == ["0000000001"]


def test_sigint_while_waiting_for_the_trail_lock_releases_the_checkpoint_lock(work) -> None:
    """Locks are taken in order: a standby may hold the checkpoint's while the trail's is held
    (here by this test, as a ``msgcap replay`` would); a signal then gives it back."""
    from msgcap.lock import Lock

    work.spool()
    with Lock(str(work.root / "dirdat" / "sa.lock"), "trail dirdat/sa"):
        standby = start(work, "standby", "--standby")
        wait_for(lambda: active(work) == standby.pid, "the checkpoint lock", procs=[standby])
        wait_for(lambda: f"dirdat/sa.lock is held by process {os.getpid()}" in output(
            work, "standby"), "the standby to say what it waits for", procs=[standby])
        standby.send_signal(signal.SIGINT)
        assert standby.wait(timeout=30) == 0
    assert "stopped by SIGINT while waiting" in output(work, "standby")
    assert active(work) is None and work.seqids() == []


def test_one_of_two_standbys_takes_over_a_killed_run(work) -> None:
    spool = work.spool()
    procs = {name: start(work, name, "--standby") for name in ("a",)}
    wait_for(lambda: active(work) == procs["a"].pid, "the first standby to take over at once",
             procs=procs.values())
    said(work, "a", "no capture is active: taking over at once")
    procs |= {name: start(work, name, "--standby") for name in ("b", "c")}
    try:
        wait_for(lambda: sorted(waiting(work)) == sorted([procs["b"].pid, procs["c"].pid]),
                 "two standbys", procs=procs.values())
        for n in range(1, 6):
            (spool / f"{n:04d}.msg").write_text(work.body(n))
        wait_for(lambda: last_seqid(work) == 5, "the active run to capture")
        procs["a"].send_signal(signal.SIGKILL)
        procs["a"].wait(timeout=30)
        live = [procs["b"], procs["c"]]
        wait_for(lambda: active(work) in {p.pid for p in live}, "a standby to take over",
                 procs=live)
        new = next(p for p in live if p.pid == active(work))
        other = next(p for p in live if p is not new)
        name = "b" if new is procs["b"] else "c"
        said(work, name, f"took over from process {procs['a'].pid} after waiting")
        wait_for(lambda: waiting(work) == [other.pid], "the other one to wait on",
                 procs=live)
        for n in range(6, 11):
            (spool / f"{n:04d}.msg").write_text(work.body(n))
        wait_for(lambda: last_seqid(work) == 10, "the new active run to capture", procs=live)
        assert status(work)["pid"] == new.pid
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                assert proc.wait(timeout=60) == 0
    assert work.seqids() == [f"{n:010d}" for n in range(1, 11)]


def produce(work: Work, broker, queue: str, n: int, chunks: int) -> int:
    """``n`` messages (ids 1..n) in ``chunks`` sends, a little apart: the kills fall between."""
    sent, size = 0, n // chunks
    for first in range(1, n + 1, size):
        sent += send(work, broker, queue, [work.body(i) for i in range(first,
                                                                       min(first + size, n + 1))])
        time.sleep(0.5)
    return sent


@pytest.mark.broker
@pytest.mark.parametrize("broker", ("rabbitmq-amqp", "activemq"), indirect=True)
def test_kill9_takeovers_alternating_write_every_message_once_in_order(work, broker,
                                                                       queue) -> None:
    n = 12_000
    work.properties(jms_url=broker.url, jms_destination=queue)
    port = broker.amqp_port if broker.protocol == "amqp" else broker.port
    names = iter(f"p{i}" for i in range(100))
    procs: list[subprocess.Popen[str]] = []

    def standby() -> subprocess.Popen[str]:
        proc = start(work, next(names), "--standby")
        procs.append(proc)
        return proc

    current, spare = standby(), None
    try:
        wait_for(lambda: active(work) == current.pid, "the first run", procs=[current])
        wait_for(lambda: (status(work)["source"] or {}).get("state") == "connected",
                 "the first run to connect", procs=[current])
        spare = standby()
        wait_for(lambda: waiting(work) == [spare.pid], "the standby", procs=[spare])
        assert broker_sockets(current.pid, port) >= 1
        assert broker_sockets(spare.pid, port) == 0, "a waiting standby holds no connection"
        with ThreadPoolExecutor(1) as pool:
            sent = pool.submit(produce, work, broker, queue, n, 12)
            for kill in range(1, KILLS + 1):
                wait_for(lambda k=kill: last_seqid(work) >= k * n // (KILLS + 2),
                         f"capture before kill {kill}", procs=[current])
                current.send_signal(signal.SIGKILL)
                current.wait(timeout=30)
                wait_for(lambda p=spare.pid: active(work) == p, f"takeover {kill}",
                         timeout=60, procs=[spare])
                current, spare = spare, standby()  # the killed one comes back as the standby
                wait_for(lambda p=spare.pid: waiting(work) == [p], f"standby {kill}",
                         procs=[spare, current])
                assert broker_sockets(spare.pid, port) == 0
                seen = status(work)
                assert (seen["state"], seen["pid"]) == ("running", current.pid)
            assert sent.result(timeout=300) == n
        wait_for(lambda: last_seqid(work) == n, "every message durable", timeout=300,
                 procs=[current])
    finally:
        for proc in reversed(procs):  # the standby first: it would take over from the active
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
    assert work.seqids() == [f"{i:010d}" for i in range(1, n + 1)], \
        "every message once, in order"
    took = sum(output(work, f"p{i}").count("took over from process") for i in range(len(procs)))
    assert took == KILLS


def test_try_acquire_waits_without_raising_and_takes_the_lock_once_free(tmp_path) -> None:
    from msgcap.lock import Lock

    path = str(tmp_path / "x.lock")
    active, standby = Lock(path, "trail x"), Lock(path, "trail x")
    active.acquire()
    assert not standby.try_acquire() and not standby.try_acquire()
    assert standby.holder() == os.getpid() and not standby.held
    active.release()
    assert standby.try_acquire() and standby.held and holder(path) == os.getpid()
    standby.release()
    assert holder(path) is None


def test_status_lists_live_registrations_only(tmp_path) -> None:
    from msgcap.standby import STALE_SECONDS, Registration, standbys

    me = Registration(str(tmp_path), "SALES")
    [seen] = standbys(str(tmp_path), "SALES")
    assert (seen["pid"], seen["host"]) == (os.getpid(), socket.gethostname())
    now = time.time_ns() // 1000

    def registration(host: str, pid: int, age: float) -> None:
        updated = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(now / 1e6 - age))
        (tmp_path / f"SALES.standby.{host}.{pid}").write_text(json.dumps(
            {"pid": pid, "host": host, "since": updated, "updated": updated}))

    registration(socket.gethostname(), 1, 0)  # killed on this host: nobody holds its lock
    registration("other-host", 2, 1)  # on another host, refreshed a second ago
    registration("gone-host", 3, STALE_SECONDS + 5)
    assert sorted(s["pid"] for s in standbys(str(tmp_path), "SALES", now)) == [2, os.getpid()]
    me.remove()
    assert [s["pid"] for s in standbys(str(tmp_path), "SALES", now)] == [2]
    Registration(str(tmp_path), "SALES").remove()  # a new one sweeps this host's dead ones
    assert not (tmp_path / f"SALES.standby.{socket.gethostname()}.1").exists()
    assert (tmp_path / "SALES.standby.other-host.2").exists()
