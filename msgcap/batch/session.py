"""The SparkSession of a batch (Spark-facing: imports pyspark).

Nothing of the driver's machine goes to the executors but what Spark itself ships: no
``PYTHONPATH``, no working directory. The executors' Python must import msgcap, either because
it is installed on every node, or from a packed environment shipped with the job
(``python_env``: a ``venv-pack`` archive → ``spark.archives``, the executors' interpreter set
to the unpacked one). In local mode the executors are this machine's: they use this interpreter.

The driver binds to 127.0.0.1 in local mode and when the master is on the loopback interface;
otherwise where Spark's own settings say (executors on other machines must reach it).

The JVM that PySpark starts inherits this process's stdout and stderr, where it would print
Spark's log and every failed task's Java stack trace; ``jvm_output`` gives it a file instead, so
that the user's terminal shows msgcap's one line per error and the log holds the detail.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any
from urllib.parse import urlsplit

from props.errors import SourceError

ENVIRONMENT = "environment"  # the directory the packed environment is unpacked as
# The JVMs of a batch only move bytes (lines to the Python tasks, pass 1's results kept, the
# framed bytes back): the C2 compiler cost more CPU than it saved them (in local[1], 2.6 of
# 4.5 JVM CPU-seconds per 200k messages; their tasks' threads 0.65 s either way), so they
# compile with C1 alone. They collect with the parallel collector: G1's humongous allocations
# (each block's kept results and framed bytes are one array of tens of MB) started concurrent
# marking cycles, ~1 JVM CPU-s per 1M messages in local[1] that the parallel one does not spend.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
# A local master's JVM is the executor too. When it kept pass 1's whole results (about 260 bytes
# a one-record message), Spark's 1g heap cost ~1 CPU-s of G1 marking per 1M messages in
# local[1], 2g ~0.1 s; the payloads are in spool files now (``Job.spool``), the skeletons
# (~13 bytes a message) are still kept in the JVM.
LOCAL_DRIVER_MEMORY = "2g"
# A block's pass-2 result (its transactions' ends, 8 bytes each; the framed bytes are in a spool
# file) comes back to a local driver as a direct task result, up to Spark's RPC message limit
# (128 MB), instead of being stored in the block manager and fetched back over the loopback.
LOCAL_DIRECT_RESULTS = "128m"


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def on_loopback(master: str) -> bool:
    """True for a local master or a ``spark://`` master on a loopback address."""
    if is_local(master):
        return True
    if not master.startswith("spark://"):
        return False
    hosts = [urlsplit("spark://" + h).hostname or "" for h in master[8:].split(",")]
    return all(h == "localhost" or _loopback_ip(h) for h in hosts)


def _loopback_ip(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def spark_config(master: str, *, conf: Iterable[tuple[str, str]] = (),
                 python_env: str | None = None) -> dict[str, str]:
    """The Spark settings of a batch (``conf``, the user's ``--conf``, last and winning)."""
    out = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.python.worker.reuse": "true",
        "spark.driver.extraJavaOptions": JVM_OPTIONS,  # local masters: the executor too
        "spark.executor.extraJavaOptions": JVM_OPTIONS,
    }
    if is_local(master):
        out["spark.driver.memory"] = LOCAL_DRIVER_MEMORY
        out["spark.task.maxDirectResultSize"] = LOCAL_DIRECT_RESULTS
    if on_loopback(master):
        out["spark.driver.bindAddress"] = "127.0.0.1"
        out["spark.driver.host"] = "127.0.0.1"
    if python_env is not None:
        if is_local(master):
            raise SourceError("a packed environment is for cluster masters; local executors "
                              "use this interpreter", url="--python-env")
        if not os.path.isfile(python_env):
            raise SourceError("no such file", url=python_env)
        out["spark.archives"] = f"{os.path.abspath(python_env)}#{ENVIRONMENT}"
    out.update(conf)
    return out


def executor_python(master: str, python_env: str | None) -> str | None:
    """The interpreter the executors run (PySpark reads it from ``PYSPARK_PYTHON`` when the
    context starts); None leaves Spark's default (``python3`` on the nodes)."""
    if python_env is not None:
        return f"./{ENVIRONMENT}/bin/python"
    if is_local(master):
        return os.environ.get("PYSPARK_PYTHON") or sys.executable
    return os.environ.get("PYSPARK_PYTHON")


def spark_session(master: str = "local[*]", app: str = "msgcap batch", *,
                  conf: Iterable[tuple[str, str]] = (), python_env: str | None = None,
                  jvm_output: str | None = None) -> Any:
    """A SparkSession for the batch (the existing one when this process already has one).

    ``jvm_output``: the file (appended to) that gets the output of the JVM this call starts; a
    JVM already running in this process keeps its own. A JVM that does not start is one line
    (a SourceError naming the master).
    """
    settings = spark_config(master, conf=conf, python_env=python_env)
    python = executor_python(master, python_env)
    if python is not None:
        os.environ["PYSPARK_PYTHON"] = python
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        with output_inherited_from(jvm_output) if jvm_output else nullcontext():
            return builder.getOrCreate()
    except PySparkException as exc:
        reason = (str(exc).strip() or type(exc).__name__).splitlines()[0]
        where = f" (its output: {jvm_output})" if jvm_output else ""
        raise SourceError(f"Spark did not start: {reason}{where}", url=master) from None


@contextmanager
def output_inherited_from(path: str) -> Iterator[None]:
    """Child processes started inside the block write their stdout and stderr to ``path``
    (appended): this process's descriptors 1 and 2 point at it meanwhile, and are put back."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for descriptor in (fd, *saved):
            os.close(descriptor)
