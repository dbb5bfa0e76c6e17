"""The batch's SparkSession: what the executors get, and where the driver listens."""

from __future__ import annotations

import io
import os

import pytest

from msgcap.batch.jobs import RawElements
from msgcap.batch.session import executor_python, on_loopback, spark_config
from props.errors import SourceError


def _listening(pid: int) -> list[str]:
    """Local addresses (hex, as /proc/net shows them) of the process's listening TCP sockets."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/net/{table}") as fh:
            next(fh)
            for line in fh:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                    out.append(fields[1].split(":")[0])
    return out


LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


def test_local_driver_listens_on_loopback_only(local_spark):
    pid = local_spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    addresses = _listening(pid)
    assert len(addresses) >= 2  # at least the driver's RPC endpoint and its block manager
    assert set(addresses) <= LOOPBACK, addresses


def test_loopback_masters_bind_the_driver_to_loopback():
    for master in ("local[2]", "local", "spark://127.0.0.1:7077", "spark://localhost:7077"):
        assert on_loopback(master)
        assert spark_config(master)["spark.driver.bindAddress"] == "127.0.0.1"
    for master in ("spark://10.1.2.3:7077", "yarn", "k8s://https://10.0.0.1:6443",
                   "spark://127.0.0.1:7077,10.1.2.3:7077"):
        assert "spark.driver.bindAddress" not in spark_config(master)
    # the user's --conf wins
    conf = spark_config("local[2]", conf=[("spark.driver.bindAddress", "0.0.0.0")])
    assert conf["spark.driver.bindAddress"] == "0.0.0.0"


def test_packed_environment_is_for_cluster_masters(tmp_path, monkeypatch):
    archive = tmp_path / "env.tar.gz"
    archive.write_bytes(b"")
    with pytest.raises(SourceError, match="--python-env: a packed environment is for cluster"):
        spark_config("local[2]", python_env=str(archive))
    with pytest.raises(SourceError, match="no such file"):
        spark_config("yarn", python_env=str(tmp_path / "missing.tar.gz"))
    conf = spark_config("yarn", python_env=str(archive))
    assert conf["spark.archives"] == f"{archive}#environment"
    assert executor_python("yarn", str(archive)) == "./environment/bin/python"
    # nothing of the driver's machine otherwise: no PYTHONPATH, the nodes' own python3
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert executor_python("yarn", None) is None
    assert not any("PYTHONPATH" in k or "PYTHONPATH" in v for k, v in
                   spark_config("spark://10.1.2.3:7077").items())


def test_local_master_settings_reach_its_jvm(local_spark):
    """A local master's JVM collects with the parallel collector (session.JVM_OPTIONS) and
    takes a block's framed bytes as a direct task result."""
    sc = local_spark.sparkContext
    beans = sc._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    assert {bean.getName() for bean in beans} == {"PS Scavenge", "PS MarkSweep"}
    assert sc.getConf().get("spark.task.maxDirectResultSize") == "128m"


def test_raw_elements_read_pysparks_frames():
    """The tasks read the JVM's byte strings as NoOpSerializer frames them: lengths, a NULL
    element, the end of the data (anything after it is not read)."""
    from pyspark.serializers import NoOpSerializer, SpecialLengths, write_int

    elements = [b"L\0\0\0\0" + bytes(8) + b"first", b"", b"x" * 70000, "é".encode()]
    out = io.BytesIO()
    NoOpSerializer().dump_stream(iter(elements), out)
    write_int(SpecialLengths.NULL, out)
    write_int(SpecialLengths.END_OF_DATA_SECTION, out)
    write_int(3, out)
    out.write(b"abc")
    got = list(RawElements().load_stream(io.BufferedReader(io.BytesIO(out.getvalue()))))
    assert got == [*elements, None]
    assert list(RawElements().load_stream(io.BytesIO(out.getvalue()[:30]))) == elements[:2]
    assert RawElements() == RawElements() and hash(RawElements()) == hash(RawElements())

