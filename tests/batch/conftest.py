"""Spark for the batch tests: one local[2] session for the whole run (the JVM starts once)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from msgcap.trail.reader import TrailFile, sequence_files

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from msgcap.batch.session import spark_session

    session = spark_session("local[2]", app="msgcap batch tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


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
