"""Helpers for the live-capture tests: a working directory with the SALES definitions, delimited
change messages whose id column is the seqid, the msgcap command as a subprocess, and a reader
that lists what the trail holds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "delimited"

BASE_PROPS = """\
gg.log.level=INFO
trail.path=dirdat/sa
trail.extract=SALES
parser.type=delim
delim.sourcedefs=dirdef/sales.def
delim.header=optype,schemaandtable,timestamp,txind,id
delim.txid=*txid
delim.nullindicator=NULL
"""


def body(seq: int, txind: str = "W") -> str:
    """One SALES.CUSTOMER insert; ``seq`` is both the 10-digit id (seqid) and the customer id."""
    return (f"I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,{txind},{seq:010d},{seq},"
            f"Customer {seq},City {seq % 97},2024-03-01 10:15:30\n")


def wait_peak_rss_mb(proc: subprocess.Popen) -> float:
    """Wait for ``proc`` to end; its own peak RSS in MB (VmHWM, sampled every 50 ms).

    Not ``ru_maxrss`` from wait4: Linux keeps the pre-exec high-water mark, so a child forked by
    a large pytest process would report pytest's own RSS.
    """
    peak_kb, status = 0, Path(f"/proc/{proc.pid}/status")
    while proc.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak_kb = max(peak_kb, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.05)
    return peak_kb / 1024


class Work:
    """A GoldenGate-style home directory (dirprm/, dirdef/, dirdat/, ...) for one test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "dirdef").mkdir(parents=True, exist_ok=True)
        (root / "dirprm").mkdir(exist_ok=True)
        shutil.copy(EXAMPLE / "dirdef" / "sales.def", root / "dirdef" / "sales.def")
        self.prop = root / "dirprm" / "jmsvam.properties"

    body = staticmethod(body)
    wait_peak_rss_mb = staticmethod(wait_peak_rss_mb)

    def properties(self, **items: object) -> Path:
        """Write the properties file: BASE_PROPS plus ``items`` (``jms_url`` → ``jms.url``)."""
        lines = [BASE_PROPS] + [f"{k.replace('_', '.')}={v}" for k, v in items.items()]
        self.prop.write_text("\n".join(lines) + "\n")
        return self.prop

    def spool(self, **items: object) -> Path:
        """The properties of a capture from ``dirspool`` (plus ``items``); the directory."""
        (self.root / "dirspool").mkdir(exist_ok=True)
        self.properties(jms_url="dir:dirspool", **items)
        return self.root / "dirspool"

    def dump(self, name: str, bodies: Iterable[str]) -> Path:
        import json

        path = self.root / name
        with open(path, "w") as fh:
            fh.writelines(json.dumps({"id": f"m{i}", "headers": {}, "body": b}) + "\n"
                          for i, b in enumerate(bodies))
        return path

    def env(self) -> dict[str, str]:
        return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get(
            "PYTHONPATH", ""))

    def msgcap(self, *args: str, timeout: float = 300, check: bool = False
               ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "msgcap.cli", *args], cwd=self.root,
                              env=self.env(), capture_output=True, text=True, timeout=timeout,
                              check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"msgcap {' '.join(args)} failed ({done.returncode}):\n"
                                 f"{done.stdout}\n{done.stderr}")
        return done

    def start(self, *args: str) -> subprocess.Popen[str]:
        """``msgcap`` in the background (stdout/stderr to files in the work dir)."""
        out = open(self.root / "run.out", "a")  # noqa: SIM115 - owned by the process
        return subprocess.Popen([sys.executable, "-m", "msgcap.cli", *args], cwd=self.root,
                                env=self.env(), stdout=out, stderr=subprocess.STDOUT, text=True)

    def seqids(self) -> list[str]:
        """The VAMSEQID of every record, in trail order."""
        return [seqid for seqid, _, _ in self.trail()]

    def trail(self) -> list[tuple[str, int, str]]:
        """(VAMSEQID, TransInd, TRANID) of every record, in trail order."""
        sys.path.insert(0, str(REPO))
        from msgcap.trail.reader import TrailFile, sequence_files

        out = []
        for _, path in sequence_files(str(self.root / "dirdat" / "sa"), 9):
            with TrailFile(path) as tf:
                out.extend((r.seqid, r.transind, r.txid) for r in tf.records())
        return out


@pytest.fixture
def work(tmp_path: Path) -> Work:
    return Work(tmp_path / "home")
