"""``msgcap check`` on broken homes: each problem ``run`` would refuse is one line on stderr, exit
status 2, and the home's file tree is left exactly as it was (issue 26)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "fixed" / "copybook"
PROP = "dirprm/jmsvam.properties"


class Home:
    """A copy of the copybook example with its spool directory, run from inside."""

    def __init__(self, root: Path) -> None:
        shutil.copytree(EXAMPLE, root)
        (root / "dirspool").mkdir()
        self.root = root

    def edit(self, old: str, new: str, path: str = PROP) -> None:
        file = self.root / path
        text = file.read_text()
        assert old in text
        file.write_text(text.replace(old, new))

    def msgcap(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        return subprocess.run([sys.executable, "-m", "msgcap.cli", *args], cwd=self.root,
                              env=env, capture_output=True, text=True, timeout=120, check=False)

    def check(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.msgcap("check", "--prop", PROP, *args)

    def spool_example(self) -> None:
        """The example's messages as spool files (``.msg.json``: the dump entry form)."""
        lines = (self.root / "messages.jsonl").read_text().splitlines()
        for number, line in enumerate(lines, 1):
            (self.root / "dirspool" / f"{number:04d}.msg.json").write_text(line)

    def captured(self) -> None:
        """A capture has run: trail, checkpoint, log, status file, spool files done."""
        self.edit("jms.id=activemq", "jms.id=time")  # spool messages are named by their files
        self.spool_example()
        done = self.msgcap("run", "--prop", PROP, "--max-idle", "0.5")
        assert done.returncode == 0, done.stderr
        assert "messages 4" in done.stdout

    def tree(self) -> dict[str, tuple[int, int, str]]:
        """Every path under the home: (mode, mtime ns, content hash) — all a write changes."""
        out = {}
        for path in sorted(self.root.rglob("*")):
            st = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
            out[str(path.relative_to(self.root))] = (st.st_mode, st.st_mtime_ns, digest)
        return out


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "home")


def errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The problems: every stderr line, each one ``msgcap check: error: ...``."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("msgcap check: error: ") for line in lines), lines
    return lines


def test_a_good_home_passes_and_shows_every_table_layout(home: Home) -> None:
    done = home.check()
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = done.stdout
    assert "header HEADER: 39 bytes" in out
    assert "table RETAIL.CUSTOMER: message of 92 bytes, 5 columns" in out
    rows = [line.split() for line in out.splitlines()]
    # name, 1-based start and end, length, usage and picture, trail type, key
    assert ["CUST_ID", "40", "47", "8", "DISPLAY", "9(8)", "NUMBER(scale", "0)", "key"] in rows
    assert ["BALANCE", "78", "86", "9", "DISPLAY", "9(7)V9(2)", "NUMBER(scale", "2)"] in rows
    assert ["HDR-FUNCTION", "27", "27", "1", "DISPLAY", "X(1)"] in rows
    assert "directory dirdat (trail, trail.defs): will be created" in out
    assert " MB free" in out
    assert "source dir:dirspool: readable and writable, 0 files waiting" in out
    assert out.rstrip().endswith("no problems found")


def test_check_writes_nothing_beside_a_capture_with_samples(home: Home) -> None:
    """The read-only guarantee, where there is most to touch: a trail, a checkpoint, lock
    files, a log, a status file and a spool directory; samples parsed."""
    home.captured()
    home.spool_example()  # waiting again, not consumed by check
    before = home.tree()
    done = home.check("--sample", "messages.jsonl")
    assert done.returncode == 0, done.stderr
    assert home.tree() == before
    out = done.stdout
    assert "trail dirdat/rt: 1 file, the last dirdat/rt000000000" in out
    assert "consistent with the trail" in out
    assert "4 files waiting" in out
    assert ("  RETAIL.CUSTOMER insert HDR_SOURCE='POS1' CUST_ID=1001 "
            "CUST_NAME='ACME TRADING                  ' BALANCE=1250.00 OPENED='2024-03-01'"
            ) in out.splitlines()
    assert "  RETAIL.ORDERS delete HDR_SOURCE='POS1' ORDER_ID=5001" in out.splitlines()
    assert "samples: 4 messages parsed, nothing written" in out


def test_a_bad_property_is_one_line_naming_file_and_line(home: Home) -> None:
    home.edit("error.policy=abend", "error.policy=abort")
    done = home.check()
    [line] = errors(done)
    assert f"{PROP}:19: error.policy" in line


def test_independent_problems_are_all_reported(home: Home) -> None:
    """A missing copybook and a missing spool directory: both, one line each."""
    (home.root / "dirdef" / "retail.cpy").unlink()
    (home.root / "dirspool").rmdir()
    lines = errors(home.check())
    assert len(lines) == 2, lines
    assert "dirdef/retail.cpy" in lines[0]
    assert "dir:dirspool: spool directory does not exist" in lines[1]


def test_an_item_naming_no_header_field_is_refused(home: Home) -> None:
    home.edit("fixed.optype=HDR-FUNCTION", "fixed.optype=H-OPP")
    [line] = errors(home.check())
    assert "fixed.optype: no header field named H-OPP" in line


def test_a_trail_directory_that_cannot_be_made_is_a_problem(home: Home) -> None:
    (home.root / "dirdat").write_text("a file where the trail directory should be\n")
    [line] = errors(home.check())
    assert line == "msgcap check: error: dirdat: not a directory"


def test_a_trail_inconsistent_with_its_checkpoint_is_a_problem_and_left_alone(home: Home
                                                                              ) -> None:
    home.captured()
    trail = home.root / "dirdat" / "rt000000000"
    with open(trail, "r+b") as fh:  # the last transaction's end is gone
        fh.truncate(trail.stat().st_size - 10)
    before = home.tree()
    [line] = errors(home.check("--no-connect"))
    assert "dirdat/rt000000000" in line and "durable position" in line, line
    assert home.tree() == before  # run would not truncate it either: it refuses


def test_a_checkpoint_that_is_not_json_is_a_problem(home: Home) -> None:
    home.captured()
    (home.root / "dirchk" / "RETAIL.cpj").write_text("{")
    [line] = errors(home.check())
    assert "dirchk/RETAIL.cpj" in line and "unreadable checkpoint" in line


def test_a_lock_held_by_a_live_process_names_its_pid(home: Home) -> None:
    sys.path.insert(0, str(REPO))
    from msgcap.lock import Lock

    (home.root / "dirchk").mkdir()
    with Lock(str(home.root / "dirchk" / "RETAIL.lock"), "test"):
        lines = errors(home.check())
    [line] = lines
    assert f"dirchk/RETAIL.lock: locked by process {os.getpid()}" in line


def test_a_sample_the_parser_refuses_is_named_and_the_others_still_parsed(home: Home) -> None:
    messages = (home.root / "messages.jsonl").read_text().splitlines()
    bad = json.loads(messages[1])
    bad["body"] = bad["body"].replace("ORDERS  ", "INVOICES")
    (home.root / "sample.jsonl").write_text("\n".join([messages[0], json.dumps(bad),
                                                       messages[3]]) + "\n")
    done = home.check("--sample", "sample.jsonl")
    [line] = errors(done)
    assert "message sample.jsonl:2" in line and "INVOICES" in line, line
    assert "message sample.jsonl:2: refused (see the errors)" in done.stdout
    assert "  RETAIL.ORDERS delete HDR_SOURCE='POS1' ORDER_ID=5001" in done.stdout
    assert "samples: 3 messages parsed, nothing written" in done.stdout


def test_a_broker_is_not_contacted_with_no_connect(home: Home) -> None:
    home.edit("jms.url=dir:dirspool", "jms.url=stomp://127.0.0.1:9\njms.destination=/queue/q")
    done = home.check("--no-connect")
    assert done.returncode == 0, done.stderr
    assert "source stomp://127.0.0.1:9: not contacted (--no-connect)" in done.stdout


def test_a_broker_that_cannot_be_reached_is_a_problem(home: Home) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    home.edit("jms.url=dir:dirspool",
              f"jms.url=stomp://127.0.0.1:{port}\njms.destination=/queue/q")
    [line] = errors(home.check())
    assert f"stomp://127.0.0.1:{port}" in line and "cannot connect" in line, line


# ---- issue 35: a failover list of stalled brokers answers in a bounded time ---------------------

class Stalled:
    """Loopback ports that accept connections and never answer (a broker that hangs): how
    many connections are open at once, at most, tells whether they were tried together."""

    def __init__(self, count: int) -> None:
        self.listeners = [socket.create_server(("127.0.0.1", 0)) for _ in range(count)]
        self.ports = [s.getsockname()[1] for s in self.listeners]
        self.lock = threading.Lock()
        self.open = self.most = 0
        for listener in self.listeners:
            threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        with self.lock:
            self.open += 1
            self.most = max(self.most, self.open)
        with conn:
            while conn.recv(4096):
                pass
        with self.lock:
            self.open -= 1

    def close(self) -> None:
        for listener in self.listeners:
            listener.close()


def test_a_failover_list_is_probed_at_once(home: Home) -> None:
    peers = Stalled(4)
    urls = [f"amqp://127.0.0.1:{port}" for port in peers.ports]
    try:
        home.edit("jms.url=dir:dirspool", f"jms.url={','.join(urls)}\njms.destination=q")
        [line] = errors(home.check())
    finally:
        peers.close()
    assert peers.most >= 4  # one after the other, never more than one (and a moment's second)
    assert line == (f"msgcap check: error: {','.join(urls)}: "
                    + "; ".join(f"cannot connect to {url}: no open frame in 10 s" for url in urls))


def test_entries_not_reached_within_the_deadline_are_named(tmp_path: Path) -> None:
    from msgcap.check import probe_entries
    from props.errors import SourceError
    from props.loader import settings_from_text

    peers = Stalled(4)
    urls = [f"amqp://127.0.0.1:{port}" for port in peers.ports]
    settings = settings_from_text("parser.type=delim\ndelim.sourcedefs=x.def\ndelim.header=optype\n"
                                  f"jms.url={','.join(urls)}\njms.destination=q\n", "t.properties",
                                  {})
    try:  # two at a time, each given up after 10 s: the last two are not reached in 15 s
        with pytest.raises(SourceError) as info:
            probe_entries(settings, at_once=2, deadline=15)
    finally:
        peers.close()
    assert str(info.value) == (
        f"{','.join(urls)}: cannot connect to {urls[0]}: no open frame in 10 s; cannot connect "
        f"to {urls[1]}: no open frame in 10 s; not reached within 15 s: {urls[2]}, {urls[3]}")
