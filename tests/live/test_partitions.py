"""Partitioned capture (issue 36): one properties file, a ``msgcap run --partition N`` per
partition, each into its own trail and checkpoint, and ``msgcap status --partition 0-3`` over
the group.

On RabbitMQ the recipe of docs/brokers.md is followed as written: its shell block declares a
consistent-hash exchange into four single-active-consumer queues through the management HTTP
API, its properties file is the one the four captures run with, and a producer publishes keyed
messages (the key is the routing key) while captures are killed with ``kill -9`` at random
moments and restarted: every message must be in exactly one trail exactly once, and each key in
one trail only, in the order sent. On Artemis, the recipe's filtered queues of one multicast
address, captured by their fully qualified names.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Broker, _free_port, _session_broker
from tests.docs.markdown import fenced_blocks, run_shell, steps, user_env
from tests.live.conftest import BASE_PROPS, BODY, Work, wait_for

REPO = Path(__file__).resolve().parents[2]
BROKERS_MD = REPO / "docs" / "brokers.md"
DOC_API = "http://rabbit1.example.com:15672"
DOC_URL = "amqp://rabbit1.example.com:5672"
PARTITIONS = range(4)

SPOOL_PROPS = BASE_PROPS.replace("trail.path=dirdat/sa", "trail.path=dirdat/sa${PARTITION}/sa") \
    .replace("trail.extract=SALES", "trail.extract=SALES${PARTITION}") + \
    "jms.url=dir:dirspool${PARTITION}\n"


def trail_seqids(path: Path) -> list[str]:
    """The VAMSEQID of every record of the trail ``path`` (DIR/XX), in trail order."""
    from msgcap.trail.reader import TrailFile, sequence_files

    out: list[str] = []
    for _, name in sequence_files(str(path), 9):
        with TrailFile(name) as tf:
            out.extend(r.seqid for r in tf.records())
    return out


def _durable(checkpoint: Path) -> int:
    try:
        return json.loads(checkpoint.read_text())["messages"]
    except (FileNotFoundError, ValueError):
        return 0


def status(work: Work, *args: str) -> tuple[int, str, str]:
    done = work.msgcap("status", "--prop", str(work.prop), *args)
    return done.returncode, done.stdout, done.stderr


# ---- the group over a spool directory per partition ---------------------------------------

def test_partitions_capture_into_their_own_trails_and_status_shows_the_group(work):
    work.prop.write_text(SPOOL_PROPS)
    seq = 0
    for n in PARTITIONS:
        (work.root / f"dirspool{n}").mkdir()
        for _ in range(n + 1):  # partition n gets n+1 messages
            seq += 1
            (work.root / f"dirspool{n}" / f"{seq:06d}.msg").write_text(work.body(seq))
    for n in (0, 1):
        work.msgcap("run", "--prop", str(work.prop), "--partition", str(n), "--max-idle", "1",
                    check=True)
    env = dict(work.env(), MSGCAP_PARTITION="2")  # the environment, as a service manager sets it
    done = subprocess.run([sys.executable, "-m", "msgcap.cli", "run", "--prop", str(work.prop),
                           "--max-idle", "1"], cwd=work.root, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    killed = work.start("run", "--prop", str(work.prop), "--partition", "3")
    deadline = time.monotonic() + 60
    while _durable(work.root / "dirchk" / "SALES3.cpj") < 4:  # its 4 messages are durable
        assert time.monotonic() < deadline and killed.poll() is None
        time.sleep(0.05)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(timeout=30)

    assert [trail_seqids(work.root / f"dirdat/sa{n}/sa") for n in PARTITIONS] == [
        ["0000000001"], ["0000000002", "0000000003"],
        ["0000000004", "0000000005", "0000000006"],
        ["0000000007", "0000000008", "0000000009", "0000000010"]]
    code, out, err = status(work, "--partition", "0-3", "--json")
    assert (code, err) == (4, "")  # the worst of the group: partition 3 abended
    group = json.loads(out)
    assert group["states"] == {"stopped": 3, "abended": 1}
    assert group["messages"] == 10 and group["problems"] == []
    assert [(p["partition"], p["extract"], p["state"], p["checkpoint"]["messages"],
             p["trail"]["path"]) for p in group["partitions"]] == [
        (n, f"SALES{n}", "abended" if n == 3 else "stopped", n + 1, f"dirdat/sa{n}/sa")
        for n in PARTITIONS]

    code, out, _ = status(work, "--partition", "0-3")
    lines = out.splitlines()
    assert code == 4 and lines[0].startswith(
        f"{work.prop}: 4 partitions (3 stopped, 1 abended); 10 messages durable; largest lag ")
    for n in PARTITIONS:
        assert any(re.fullmatch(
            rf"partition {n}: extract SALES{n}: (stopped|abended); dirdat/sa{n}/sa000000000 "
            rf"RBA \d+, {n + 1} transactions, {n + 1} messages; lag .+; trail dirdat/sa{n}/sa: "
            r"1 files, \d+ bytes", line) for line in lines), out
    assert "  error: process " in out and "ended without stopping (killed or crashed)" in out

    code, out, _ = status(work, "--partition", "1", "--json")  # one partition: its full status
    single = json.loads(out)
    assert (code, single["partition"], single["extract"], single["state"]) == (
        3, 1, "SALES1", "stopped")


def test_a_partitioned_file_without_a_partition_is_one_line_and_touches_nothing(work):
    work.prop.write_text(SPOOL_PROPS)
    for command in (["msgcap", "run"], ["msgcap", "check", "--no-connect"],
                    ["msgcap", "status"], ["gendef"]):
        module = "gendef.cli" if command[0] == "gendef" else "msgcap.cli"
        done = subprocess.run([sys.executable, "-m", module, *command[1:], "--prop",
                               str(work.prop)], cwd=work.root, env=work.env(),
                              capture_output=True, text=True, timeout=120, check=False)
        label = " ".join(command[:2]) if command[0] == "msgcap" else "gendef"
        expected = (f"{label}: error: {work.prop}:2: trail.path: ${{PARTITION}} needs a "
                    "partition number: give --partition N (or set MSGCAP_PARTITION=N)\n")
        assert (done.returncode, done.stderr) == (2, expected), command
    assert sorted(p.name for p in work.root.iterdir()) == ["dirdef", "dirprm"]
    done = subprocess.run([sys.executable, "-m", "gendef.cli", "-prop", str(work.prop),
                           "-partition", "1"], cwd=work.root, env=work.env(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and "SALES.CUSTOMER" in done.stdout, done.stderr


# ---- RabbitMQ: consistent-hash exchange, single-active-consumer queues ---------------------

@pytest.fixture(scope="module")
def rabbit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Broker, int]]:
    """A private RabbitMQ node with STOMP (the producer), AMQP 1.0 (the captures) and the
    management HTTP API (the recipe); its HTTP port."""
    http = _free_port()
    yield from ((b, http) for b in _session_broker(
        tmp_path_factory, "rabbitmq", _free_port(), _free_port(), "amqp",
        env={"MSGCAP_HTTP_PORT": str(http)}))


def _recipe() -> tuple[str, str]:
    """The recipe's shell block and the properties file right after it."""
    found = [s for s in steps(BROKERS_MD) if s.kind == "run" and s.arg == "rabbitmq-partitions"]
    assert len(found) == 1 and DOC_API in found[0].text
    props = [text for line, text in fenced_blocks(BROKERS_MD.read_text(), "properties")
             if line > found[0].line]
    assert "${PARTITION}" in props[0] and DOC_URL in props[0]
    return found[0].text, props[0]


def _artemis_recipe(broker: Broker, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """docs/brokers.md's Artemis recipe (the ``artemis queue create`` block) run as written
    against ``broker``, with the ``artemis`` command of the distribution the tests use."""
    recipe = [s.text for s in steps(BROKERS_MD)
              if s.kind == "run" and s.arg == "artemis-partitions"]
    assert len(recipe) == 1
    home = subprocess.run(["bash", str(REPO / "scripts" / "artemis.sh"), "home"], check=True,
                          capture_output=True, text=True, timeout=600).stdout.strip()
    script = recipe[0].replace("/opt/apache-artemis", home).replace(
        "tcp://artemis1.example.com:61616", f"tcp://127.0.0.1:{broker.port}")
    return run_shell(script, tmp_path, user_env(tmp_path, MQ_USER="msgcap", MQ_PASSWORD="x"))


def _rabbitmq_recipe(rabbit: tuple[Broker, int], work: Work, tmp_path: Path) -> list[str]:
    """docs/brokers.md's RabbitMQ recipe run as written against the test's broker (its
    management API on the test's port), its properties file in ``work.prop``: the partitions'
    queues."""
    broker, http = rabbit
    recipe, props = _recipe()
    done = run_shell(recipe.replace(DOC_API, f"http://127.0.0.1:{http}"), tmp_path,
                     user_env(tmp_path, MQ_USER="guest", MQ_PASSWORD="guest"))
    assert done.returncode == 0, done.stdout + done.stderr
    work.prop.write_text(props.replace(DOC_URL, broker.url))
    return [f"orders.changes.{n}" for n in PARTITIONS]


def _publish(broker: Broker, messages: list[tuple[int, int]], body) -> None:
    """Send (seq, key) messages to the exchange over STOMP, the key as the routing key, with
    small pauses so that captures are killed mid-stream; the last one with a receipt."""
    import stomp
    from stomp.listener import WaitingListener

    conn = stomp.Connection12([("127.0.0.1", broker.port)], vhost="/")
    waiting = WaitingListener("last")
    conn.set_listener("receipt", waiting)
    conn.connect("guest", "guest", wait=True)
    try:
        for i, (seq, key) in enumerate(messages):
            headers = {"persistent": "true", "content-type": "text/plain"}
            if i == len(messages) - 1:
                headers["receipt"] = "last"
            conn.send(f"/exchange/orders.changes/key{key}", body(seq), headers=headers)
            if i % 250 == 249:
                time.sleep(0.1)
        waiting.wait_on_receipt()
    finally:
        conn.disconnect()


def test_rabbitmq_consistent_hash_partitions_capture_every_message_once_in_key_order(
        rabbit, work, tmp_path):
    broker = rabbit[0]
    queues = _rabbitmq_recipe(rabbit, work, tmp_path)
    assert all(broker.queues()[q] == (0, True) for q in queues)
    env = dict(work.env(), MQ_USER="guest", MQ_PASSWORD="guest")

    def start(n: int) -> subprocess.Popen[str]:
        out = open(work.root / f"run{n}.out", "a")  # noqa: SIM115 - owned by the process
        return subprocess.Popen([sys.executable, "-m", "msgcap.cli", "run", "--prop",
                                 str(work.prop), "--partition", str(n), "--max-idle", "3"],
                                cwd=work.root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                text=True)

    def group() -> tuple[int, dict]:
        done = subprocess.run([sys.executable, "-m", "msgcap.cli", "status", "--prop",
                               str(work.prop), "--partition", "0-3", "--json"], cwd=work.root,
                              env=env, capture_output=True, text=True, timeout=60, check=False)
        return done.returncode, json.loads(done.stdout)

    rng = random.Random(36)
    total, keys = 6000, 60
    messages = [(seq, rng.randrange(keys)) for seq in range(1, total + 1)]
    captures = {n: start(n) for n in PARTITIONS}
    deadline = time.monotonic() + 120
    while (seen := group())[0] != 0 or any(  # all four running and connected
            (p["source"] or {}).get("state") != "connected" for p in seen[1]["partitions"]):
        assert time.monotonic() < deadline, seen
        time.sleep(0.2)
    shown = work.msgcap("status", "--prop", str(work.prop), "--partition", "0-3")
    assert shown.returncode == 0 and shown.stdout.startswith(
        f"{work.prop}: 4 partitions (4 running); "), shown.stdout
    for n in PARTITIONS:
        assert f"partition {n}: extract ORDERS{n}: running (pid {captures[n].pid}); " in (
            shown.stdout)

    producer = threading.Thread(target=_publish, args=(broker, messages, work.body))
    producer.start()
    kills = 0
    while producer.is_alive() or kills < 4:  # kill -9 a capture at a random moment, restart it
        time.sleep(rng.uniform(0.2, 1.2))
        n = rng.choice(PARTITIONS)
        os.kill(captures[n].pid, signal.SIGKILL)
        captures[n].wait(timeout=30)
        captures[n] = start(n)
        kills += 1
    producer.join()
    for n in PARTITIONS:  # each stops once its queue stayed empty for --max-idle
        assert captures[n].wait(timeout=300) == 0, (work.root / f"run{n}.out").read_text()
    while any(broker.queues()[q][0] for q in queues):  # one that stopped before the end
        for n, q in enumerate(queues):
            if broker.queues()[q][0]:
                assert start(n).wait(timeout=300) == 0

    trails = {n: trail_seqids(work.root / f"dirdat/orders{n}/oc") for n in PARTITIONS}
    every = sorted(s for seqids in trails.values() for s in seqids)
    assert every == [f"{seq:010d}" for seq in range(1, total + 1)]  # each once, in one trail
    key_of = dict(messages)
    homes: dict[int, set[int]] = {}
    for n, seqids in trails.items():
        assert seqids, f"partition {n} got no message"
        by_key: dict[int, list[int]] = {}
        for seq in map(int, seqids):
            by_key.setdefault(key_of[seq], []).append(seq)
            homes.setdefault(key_of[seq], set()).add(n)
        assert all(seqs == sorted(seqs) for seqs in by_key.values()), f"partition {n}"
    assert all(len(home) == 1 for home in homes.values()), homes  # a key in one trail only

    code, final = group()
    assert code == 3 and final["states"] == {"stopped": 4}, final
    assert [p["checkpoint"]["last_seqid"] for p in final["partitions"]] == [
        trails[n][-1] for n in PARTITIONS]


# ---- Artemis: filtered queues of a multicast address -------------------------------------

def test_artemis_filtered_queues_capture_each_partition_once(artemis, work, tmp_path):
    """docs/brokers.md's Artemis recipe as written (the ``artemis queue create`` block): a
    producer sends keyed messages to the address with ``partition`` = CRC-32 of the key mod 4;
    four captures of the fully qualified queues write each message once, each key into one
    trail, and a message without the property waits in ``orders.changes.unrouted``."""
    import zlib

    from tests.amqp_client import send
    from tests.live.conftest import peek

    broker = artemis
    done = _artemis_recipe(broker, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr

    rng = random.Random(36)
    total, keys = 800, 24
    key_of = {seq: rng.randrange(keys) for seq in range(1, total + 1)}
    partition_of = {key: zlib.crc32(f"key{key}".encode()) % 4 for key in range(keys)}
    for n in PARTITIONS:
        mine = [seq for seq in key_of if partition_of[key_of[seq]] == n]
        assert send(broker.url, "orders.changes", [work.body(s) for s in mine],
                    properties={"partition": n}) == len(mine)
    assert send(broker.url, "orders.changes", [work.body(total + 1)]) == 1  # no partition

    work.prop.write_text(BASE_PROPS.replace("trail.path=dirdat/sa",
                                            "trail.path=dirdat/orders${PARTITION}/oc")
                         .replace("trail.extract=SALES", "trail.extract=ORDERS${PARTITION}")
                         + f"jms.url={broker.url}\n"
                         "jms.destination=orders.changes::orders.changes.${PARTITION}\n")
    captures = [work.start("run", "--prop", str(work.prop), "--partition", str(n),
                           "--max-idle", "2") for n in PARTITIONS]
    assert [c.wait(timeout=300) for c in captures] == [0] * 4, (
        work.root / "run.out").read_text()

    trails = {n: [int(s) for s in trail_seqids(work.root / f"dirdat/orders{n}/oc")]
              for n in PARTITIONS}
    assert sorted(s for seqs in trails.values() for s in seqs) == list(range(1, total + 1))
    for n, seqs in trails.items():
        assert seqs == sorted(seqs) and {partition_of[key_of[s]] for s in seqs} == {n}
    unrouted = peek(broker, "/queue/orders.changes::orders.changes.unrouted")
    assert len(unrouted) == 1 and f"{total + 1:010d}" in str(unrouted[0][1])


class StandbyGroup:
    """Four partitions' captures, each an active ``msgcap run --standby`` and a waiting one
    (the properties in ``work.prop``, extract ``ORDERS<n>``): ``kill_in_turn`` kills the
    active capture of each partition in turn with ``kill -9`` while ``producing`` runs, waits
    for its standby to take over and starts a new standby (also when a quiet partition's active
    capture stopped after ``--max-idle`` and its standby took over); ``finish`` waits for them
    all to stop (``--max-idle``) and checks that each kill was answered by that partition's
    standby."""

    def __init__(self, work: Work, env: dict[str, str], max_idle: float = 3.0) -> None:
        self.work, self.env, self.max_idle = work, env, max_idle
        self.started: list[tuple[int, subprocess.Popen[str], Path]] = []
        self.killed: dict[int, list[int]] = {n: [] for n in PARTITIONS}
        self.pair = {n: [self.start(n), self.start(n)] for n in PARTITIONS}
        for n in PARTITIONS:
            wait_for(lambda n=n: self.active(n) in {p.pid for p in self.pair[n]},
                       f"partition {n}'s active capture")

    def start(self, n: int) -> subprocess.Popen[str]:
        out = self.work.root / f"run{n}-{len(self.started)}.out"
        proc = subprocess.Popen([sys.executable, "-m", "msgcap.cli", "run", "--prop",
                                 str(self.work.prop), "--partition", str(n), "--standby",
                                 "--max-idle", str(self.max_idle)], cwd=self.work.root, env=self.env,
                                stdout=open(out, "w"),  # noqa: SIM115 - owned by the process
                                stderr=subprocess.STDOUT, text=True)
        self.started.append((n, proc, out))
        return proc

    def active(self, n: int) -> int | None:
        from msgcap.lock import holder

        return holder(str(self.work.root / "dirchk" / f"ORDERS{n}.lock"))

    def waiting(self, n: int, active: int) -> bool:
        """Whether a capture of the partition other than ``active`` waits as its standby
        (registered, alive)."""
        from msgcap.standby import standbys

        registered = {s["pid"] for s in standbys(str(self.work.root / "dirchk"), f"ORDERS{n}")}
        return any(p.pid in registered - {active} and p.poll() is None for p in self.pair[n])

    def kill_in_turn(self, producing: threading.Thread, rng: random.Random) -> None:
        while producing.is_alive() or any(not pids for pids in self.killed.values()):
            time.sleep(rng.uniform(0.3, 1.2))
            n = min(PARTITIONS, key=lambda p: (len(self.killed[p]), rng.random()))
            victim = self.active(n)
            if victim is None:  # its captures stopped after --max-idle: a quiet partition
                assert self.killed[n], f"partition {n} stopped before it was killed"
                continue
            if not self.waiting(n, victim):  # not registered yet, or the active stopped after
                # --max-idle and its standby took over: a new standby first, for the next kill
                live = [p for p in self.pair[n] if p.poll() is None]
                self.pair[n] = live + [self.start(n)] if len(live) < 2 else live
                wait_for(lambda n=n, v=victim: self.waiting(n, v), f"partition {n}'s standby")
                continue
            os.kill(victim, signal.SIGKILL)
            [proc] = [p for p in self.pair[n] if p.pid == victim]
            proc.wait(timeout=30)
            self.killed[n].append(victim)
            wait_for(lambda n=n, v=victim: any(
                f"took over from process {v}" in out.read_text()
                for m, _, out in self.started if m == n), f"partition {n}'s takeover")
            self.pair[n] = [p for p in self.pair[n] if p is not proc] + [self.start(n)]

    def finish(self) -> None:
        for _, proc, out in self.started:  # the actives stop after --max-idle, then standbys
            if proc.poll() is None or proc.returncode != -signal.SIGKILL:
                assert proc.wait(timeout=300) == 0, out.read_text()
        for n, victims in self.killed.items():  # each kill answered by the partition's standby
            said = "".join(out.read_text() for m, _, out in self.started if m == n)
            for victim in victims:
                assert f"took over from process {victim}" in said, said


def test_rabbitmq_partitions_each_with_a_standby_take_over_every_kill_9(rabbit, work, tmp_path):
    """Issue 36's whole picture on RabbitMQ: four partitions (the recipe's consistent-hash
    exchange into single-active-consumer queues), each with an active capture and a hot standby;
    the active capture of each partition in turn is killed with ``kill -9`` while the producer
    sends. Every message is in exactly one trail once, each key in one trail in the order sent,
    and every kill was answered by that partition's standby."""
    broker = rabbit[0]
    queues = _rabbitmq_recipe(rabbit, work, tmp_path)
    assert all(broker.queues()[q][0] == 0 for q in queues)
    captures = StandbyGroup(work, dict(work.env(), MQ_USER="guest", MQ_PASSWORD="guest"))
    group = json.loads(work.msgcap("status", "--prop", str(work.prop), "--partition", "0-3",
                                   "--json").stdout)
    assert [len(p["standbys"]) for p in group["partitions"]] == [1] * 4, group
    text = work.msgcap("status", "--prop", str(work.prop), "--partition", "0-3").stdout
    for n, p in enumerate(group["partitions"]):
        assert (f"partition {n}: extract ORDERS{n}: running (pid {p['pid']}); standby pid "
                f"{p['standbys'][0]['pid']} on {socket.gethostname()}; ") in text, text

    rng = random.Random(3636)
    total, keys = 6000, 60
    messages = [(seq, rng.randrange(keys)) for seq in range(1, total + 1)]
    producer = threading.Thread(target=_publish, args=(broker, messages, work.body))
    producer.start()
    captures.kill_in_turn(producer, rng)
    producer.join()
    captures.finish()

    trails = {n: trail_seqids(work.root / f"dirdat/orders{n}/oc") for n in PARTITIONS}
    every = sorted(s for seqids in trails.values() for s in seqids)
    assert every == [f"{seq:010d}" for seq in range(1, total + 1)]  # each once, in one trail
    key_of = dict(messages)
    homes: dict[int, set[int]] = {}
    for n, seqids in trails.items():
        by_key: dict[int, list[int]] = {}
        for seq in map(int, seqids):
            by_key.setdefault(key_of[seq], []).append(seq)
            homes.setdefault(key_of[seq], set()).add(n)
        assert all(seqs == sorted(seqs) for seqs in by_key.values()), f"partition {n}"
    assert all(len(home) == 1 for home in homes.values()), homes  # a key in one trail only
    assert all(broker.queues()[q][0] == 0 for q in queues)


def test_artemis_message_groups_over_partitions_with_standbys_checked_from_the_trails(
        artemis, work, tmp_path):
    """The same on Artemis with message groups: a JMS producer (Qpid JMS) sends each key's changes as one
    message group (JMSXGroupID, JMSXGroupSeq 1, 2, ...) with the integer property
    ``partition`` to the recipe's address; four partitions' captures, each with a standby, are
    killed in turn; ``msgcap dump --check-order`` over the four trails then finds every group
    in one trail with no number skipped or gone backwards."""
    import zlib

    from tests import jms_clients

    broker = artemis
    done = _artemis_recipe(broker, tmp_path)
    assert done.returncode == 0 or "already exists" in done.stdout + done.stderr, (
        done.stdout + done.stderr)  # the other Artemis test may have made them
    work.prop.write_text(BASE_PROPS.replace("trail.path=dirdat/sa",
                                            "trail.path=dirdat/orders${PARTITION}/oc")
                         .replace("trail.extract=SALES", "trail.extract=ORDERS${PARTITION}")
                         + f"jms.url={broker.url}\n"
                         "jms.destination=orders.changes::orders.changes.${PARTITION}\n")
    captures = StandbyGroup(work, work.env(), max_idle=15.0)  # keys are sent one after another

    keys, each = 8, 40  # key k: messages k*each+1 .. (k+1)*each, its group numbered 1..each
    # (8 keys: 2 a partition by their CRC-32; a producer JVM a key)
    partition_of = {k: zlib.crc32(f"key{k}".encode()) % 4 for k in range(keys)}

    def produce() -> None:
        for k in range(keys):
            jms_clients.produce(broker.url, "/topic/orders.changes", "--first", str(k * each + 1),
                                "--count", str(each), "--body", BODY, "--group", f"key{k}",
                                "--prop", f"partition=int:{partition_of[k]}")

    producer = threading.Thread(target=produce)
    producer.start()
    captures.kill_in_turn(producer, random.Random(36))
    producer.join()
    captures.finish()

    trails = [f"dirdat/orders{n}/oc" for n in PARTITIONS]
    seqids = {n: [int(s) for s in trail_seqids(work.root / trail)]
              for n, trail in enumerate(trails)}
    assert sorted(s for found in seqids.values() for s in found) == list(
        range(1, keys * each + 1))
    checked = work.msgcap("dump", "--check-order", *trails)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1] == (
        f"order check: {keys * each} records, {keys} message groups, 4 trails: 0 findings")
