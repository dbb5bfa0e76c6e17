"""Spark for the batch tests: ``local[2]``, and a real standalone cluster.

One SparkContext can run in a process at a time, so one session manager holds the current
session and switches master when a test asks for the other one; the ``spark`` fixture is
parametrised (``local``, ``cluster``) at session scope, so pytest runs all tests of one kind
together and switches once. The cluster (``scripts/spark-cluster.sh``: a master and two
1-core workers on 127.0.0.1, free port, private directory) is started once, on first use, and
its workers run a plain ``python3`` without msgcap: jobs ship msgcap in a packed virtual
environment (venv-pack), built once and cached by the content of the code it packs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from msgcap.batch.driver import LOG_NAME
from msgcap.trail.reader import TrailFile, sequence_files

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CLUSTER_SCRIPT = REPO / "scripts" / "spark-cluster.sh"
PACKAGES = ("props", "gendef", "parsers", "msgcap")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(slots=True)
class Cluster:
    """A cluster started by ``scripts/spark-cluster.sh`` in a private directory."""

    dir: Path
    port: int

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def script(self, action: str) -> str:
        env = dict(os.environ, MSGCAP_SPARK_DIR=str(self.dir), MSGCAP_SPARK_PORT=str(self.port),
                   MSGCAP_SPARK_WORKERS="2", MSGCAP_SPARK_CORES="1",
                   MSGCAP_SPARK_OWNER=str(os.getpid()))
        done = subprocess.run(["bash", str(CLUSTER_SCRIPT), action], check=False, env=env,
                              cwd=REPO, capture_output=True, text=True, timeout=400)
        if done.returncode != 0:
            raise RuntimeError(f"spark-cluster.sh {action} failed: {done.stdout}{done.stderr}")
        return done.stdout


def _code_digest() -> str:
    """What the packed environment depends on: the code, the project file, the interpreter."""
    h = hashlib.sha256(sys.version.encode())
    h.update((REPO / "pyproject.toml").read_bytes())
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            h.update(str(path.relative_to(REPO)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def packed_environment() -> Path:
    """A venv-pack archive of a fresh virtual environment with msgcap installed (not editable),
    as a user ships it with ``--python-env``; cached by content in ``MSGCAP_TEST_CACHE``."""
    cache = Path(os.environ.get("MSGCAP_TEST_CACHE")
                 or Path.home() / ".cache" / "msgcap" / "test-envs")
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / f"msgcap-env-{_code_digest()}.tar.gz"
    if archive.exists():
        return archive
    with tempfile.TemporaryDirectory(prefix="msgcap-env-") as work:
        env_dir = Path(work) / "env"
        subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
        source = Path(work) / "src"  # the working tree, without its venv and outputs
        shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
            ".venv", ".git", "*.egg-info", "build", "__pycache__", ".spark-cluster", ".broker",
            ".rabbitmq"))
        subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q",
                        str(source)], check=True, timeout=900)
        partial = archive.with_name(f"partial-{os.getpid()}-{archive.name}")
        venv_pack = Path(sys.executable).with_name("venv-pack")
        subprocess.run([str(venv_pack), "-q", "-p", str(env_dir), "-o", str(partial)],
                       check=True, timeout=600)
        os.replace(partial, archive)
    return archive


class Sessions:
    """The one SparkSession of this process, started for ``local[2]`` or the cluster."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory = factory
        self.kind: str | None = None
        self.session: Any = None
        self.cluster: Cluster | None = None
        self.python_env: Path | None = None
        self._python = os.environ.get("PYSPARK_PYTHON")

    def get(self, kind: str) -> Any:
        if kind == self.kind:
            return self.session
        self.stop()
        from msgcap.batch.session import spark_session

        if kind == "local":
            session = spark_session("local[2]", app="msgcap batch tests")
        else:
            cluster = self.start_cluster()
            if self.python_env is None:
                self.python_env = packed_environment()
            session = spark_session(cluster.url, app="msgcap batch cluster tests",
                                    python_env=str(self.python_env))
        session.sparkContext.setLogLevel("ERROR")
        self.kind, self.session = kind, session
        return session

    def start_cluster(self) -> Cluster:
        if self.cluster is None:
            cluster = Cluster(self.factory.mktemp("spark-cluster"), _free_port())
            cluster.script("start")
            self.cluster = cluster
        return self.cluster

    def stop(self) -> None:
        if self.session is not None:
            self.session.stop()
        self.kind = self.session = None
        if self._python is None:  # the cluster session pointed it at the packed environment
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = self._python

    def close(self) -> None:
        self.stop()
        if self.cluster is not None:
            self.cluster.script("stop")


def _kind(item: pytest.Item) -> int:
    """0: local[2] or no Spark, 1: the cluster, 2: sessions of their own (last)."""
    callspec = getattr(item, "callspec", None)
    names = getattr(item, "fixturenames", ())
    if callspec is not None and callspec.params.get("spark") == "cluster":
        return 1
    if "cluster_spark" in names:
        return 1
    return 2 if "sessions" in names and "spark" not in names else 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The batch tests on local[2] first, then those on the cluster: the session switches
    master once."""
    here = Path(__file__).parent
    slots = [i for i, item in enumerate(items) if here in Path(item.path).parents]
    ordered = sorted((items[i] for i in slots), key=_kind)
    for i, item in zip(slots, ordered, strict=True):
        items[i] = item


@pytest.fixture(scope="session")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sessions]:
    s = Sessions(tmp_path_factory)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="session", params=["local", "cluster"])
def spark(request: pytest.FixtureRequest, sessions: Sessions) -> Any:
    """The session of a test that runs on ``local[2]`` and on the standalone cluster."""
    return sessions.get(request.param)


@pytest.fixture
def local_spark(sessions: Sessions) -> Any:
    """The session of a test that runs on ``local[2]`` only."""
    return sessions.get("local")


@pytest.fixture
def cluster_spark(sessions: Sessions) -> Any:
    """The session of a test that runs on the standalone cluster only."""
    return sessions.get("cluster")


def copy_example(name: str, tmp_path: Path, monkeypatch) -> Path:
    shutil.copytree(EXAMPLES / name, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def trail_view(prefix: str, *, mask_io_time: bool = False) -> list[tuple[str, dict, bytes]]:
    """Per trail file: name, file header fields but the creation time, bytes after the header.

    ``mask_io_time``: zero every record's IO time (``*ts`` is the time of parsing).
    """
    out = []
    for _seqno, path in sequence_files(prefix, 9):
        tf = TrailFile(path)
        assert tf.header is not None
        header = {k: dict(getattr(tf.header, k)) for k in ("trail", "machine", "database",
                                                             "producer", "continuity")}
        header["trail"].pop("creation_time")
        with open(path, "rb") as fh:
            data = fh.read()
        body = bytearray(data[tf.data_start:])
        if mask_io_time:
            for rec in tf.records():
                at = rec.rba - tf.data_start + 16  # G head, H head, 8 bytes before IO time
                body[at:at + 8] = bytes(8)
        out.append((Path(path).name, header, bytes(body)))
    return out


def output_entries(directory: str = "out") -> list[str]:
    """What a batch left in its output directory besides its writer lock (msgcap/lock.py: the
    lock file stays, only the kernel's lock goes with the process) and its log."""
    return sorted(set(os.listdir(directory)) - {"msgcap.lock", LOG_NAME})
