"""Bytes stay bytes: a record with COMP / COMP-3 fields decodes to the values encoded, through
every source, also when its bytes happen to be valid UTF-8 (issue 24: ``00 00 C3 A9`` once
became one character and shifted every field after it).

Random layouts and values (``tests/binrec.py``) go through the sources in-process (spool file,
``.msg.json``, dump files, the archive's entries, STOMP frames as each broker kind sends them) and
through the commands (``msgcap run`` on a spool directory, ``msgcap send`` into one, ``msgcap
replay`` of files and of the archive). The brokers and Spark have their own tests
(tests/live/test_binary_bodies_live.py, tests/batch/test_binary_bodies_batch.py).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gendef.build import build_definitions
from msgcap import dumps
from msgcap.sources.spool import SpoolSource
from msgcap.sources.stomp import _message
from parsers.base import build_parser
from parsers.model import Message
from props.loader import settings_from_text
from tests.binrec import Layout, trail_rows

REPO = Path(__file__).resolve().parents[2]


def _parser(layout: Layout, home: Path):
    layout.write_home(home)
    old = os.getcwd()
    os.chdir(home)
    try:
        props = settings_from_text(layout.properties(), "bin.properties", env={})
        return build_parser(props, build_definitions(props))
    finally:
        os.chdir(old)


def _after(layout: Layout, values) -> list:
    """The after image the parser must give: unscaled integers, text padded to its length."""
    return [v.ljust(f.digits) if isinstance(v, str) else v
            for f, v in zip(layout.fields, values, strict=True)]


def _through_every_source(data: bytes, where: Path) -> dict[str, Message]:
    """The message each in-process source makes of one record's bytes."""
    out: dict[str, Message] = {}
    spool = where / "spool"
    spool.mkdir()
    (spool / "0001.dat").write_bytes(data)
    (spool / "0002.msg.json").write_text(dumps.entry_line(Message("m2", {}, data)))
    with SpoolSource(f"dir:{spool}", poll=0.01) as source:
        for name in ("spool .dat", "spool .msg.json"):
            message = source.receive(1.0)
            assert message is not None
            out[name] = message
    (where / "rec.bin").write_bytes(data)
    (out["one-message file"],) = dumps.read_dump(str(where / "rec.bin"))
    (where / "d.jsonl").write_text(dumps.entry_line(out["spool .dat"], received="now"))
    (out["JSON Lines (archive entry)"],) = dumps.read_dump(str(where / "d.jsonl"))
    frame = {"message-id": "ID:x-1-1-1:1:1:1:1", "content-length": str(len(data))}
    out["STOMP ActiveMQ BytesMessage"] = _message(dict(frame), data, 0, always_sized=False)
    out["STOMP RabbitMQ"] = _message(dict(frame), data, 0, always_sized=True)
    out["STOMP RabbitMQ octet-stream"] = _message(
        {**frame, "content-type": "application/octet-stream"}, data, 0, always_sized=True)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), encoding=st.sampled_from(["ascii", "cp037", "latin-1"]))
def test_binary_fields_decode_to_the_values_encoded_through_every_source(tmp_path_factory, seed,
                                                                         encoding):
    rng = random.Random(seed)
    layout = Layout.random(rng, encoding)
    home = tmp_path_factory.mktemp("bin")
    parser = _parser(layout, home)
    for n, (values, data) in enumerate(layout.records(rng, 4)):
        where = home / f"r{n}"
        where.mkdir()
        for source, message in _through_every_source(data, where).items():
            assert isinstance(message.body, bytes), source
            (op,) = parser.parse(message)
            assert op.after == _after(layout, values), (source, data)


def test_text_is_what_the_transport_says():
    """ActiveMQ: a frame without content-length is a TextMessage; RabbitMQ (always sized): a
    ``text/*`` content type, in its charset."""
    frame = {"message-id": "m", "content-length": "3"}
    assert _message({"message-id": "m"}, b"abc", 0, always_sized=False).body == "abc"
    assert _message(dict(frame), b"abc", 0, always_sized=True).body == b"abc"
    assert _message({**frame, "content-type": "text/plain"}, b"abc", 0,
                    always_sized=True).body == "abc"
    assert _message({**frame, "content-type": "text/plain; charset=ISO-8859-1"}, b"\xe9", 0,
                    always_sized=True).body == "é"
    # a text claim the bytes break: the bytes, for the parser to judge
    assert _message({**frame, "content-type": "text/plain"}, b"\xff", 0,
                    always_sized=True).body == b"\xff"


def test_activemq_frames_say_their_jms_class_and_a_sized_text_charset():
    """ActiveMQ: a frame with content-length is a BytesMessage, whose body a producer's
    ``text/*`` content type makes text in its charset; one without is a TextMessage, in UTF-8
    whatever its content type says (ActiveMQ re-encodes it); JMSXDeliveryCount 1 unless
    redelivered, as ActiveMQ's JMS client reads them."""
    sized = {"message-id": "m", "content-length": "1"}
    latin = {"content-type": "text/plain;charset=iso-8859-1"}
    got = _message({**sized, **latin}, b"\xe9", 0, always_sized=False)
    assert (got.body, got.headers["message-type"]) == ("\u00e9", "BytesMessage")
    assert got.headers["JMSXDeliveryCount"] == "1"
    got = _message({"message-id": "m", **latin}, "\u00e9".encode(), 0, always_sized=False)
    assert (got.body, got.headers["message-type"]) == ("\u00e9", "TextMessage")
    got = _message({**sized, "redelivered": "true"}, b"\xe9", 0, always_sized=False)
    assert got.body == b"\xe9" and "JMSXDeliveryCount" not in got.headers
    assert "message-type" not in _message(dict(sized), b"x", 0, always_sized=True).headers


# -- the commands ---------------------------------------------------------------------------------

def _msgcap(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "msgcap.cli", *args], cwd=home, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _trail(home: Path) -> list[dict[str, str]]:
    done = _msgcap(home, "dump", "--json", "--defs", "dirdat/bn.def", "dirdat/bn000000000")
    assert done.returncode == 0, done.stderr
    return trail_rows(done.stdout)


@pytest.fixture
def binary_home(tmp_path: Path):
    """A home with a random layout (seeded) and 12 records as .dat files in ``files/``."""
    rng = random.Random(2024)
    layout = Layout.random(rng)
    records = layout.records(rng, 12)
    files = tmp_path / "files"
    files.mkdir()
    for n, (_, data) in enumerate(records):
        (files / f"{n:04d}.dat").write_bytes(data)
    return tmp_path, layout, records


def _expected(layout: Layout, records) -> list[dict[str, str]]:
    return [layout.dumped(values) for values, _ in records]


def test_spool_run_and_archive_replay(binary_home):
    """``.dat`` files in the spool → trail; the archive they leave replays to the same values."""
    home, layout, records = binary_home
    layout.write_home(home, **{"jms.url": "dir:dirspool", "archive.dir": "dirarc"})
    os.rename(home / "files", home / "dirspool")
    done = _msgcap(home, "run", "--prop", "dirprm/bin.properties", "--max-idle", "1")
    assert done.returncode == 0, done.stderr
    assert _trail(home) == _expected(layout, records)
    (archive,) = (home / "dirarc").iterdir()
    entries = [json.loads(line) for line in archive.read_text().splitlines()]
    assert all("body_b64" in e and "body" not in e for e in entries)  # bytes, UTF-8 or not
    for name in ("dirdat", "dirchk"):
        os.rename(home / name, home / f"{name}.run")
    done = _msgcap(home, "replay", "--prop", "dirprm/bin.properties", str(archive))
    assert done.returncode == 0, done.stderr
    assert _trail(home) == _expected(layout, records)


def test_send_into_a_spool_then_run(binary_home):
    """``msgcap send`` of binary files writes bytes (``body_b64``), never a text ``body``."""
    home, layout, records = binary_home
    layout.write_home(home, **{"jms.url": "dir:dirspool"})
    (home / "dirspool").mkdir()
    files = sorted(str(p) for p in (home / "files").iterdir())
    done = _msgcap(home, "send", "--prop", "dirprm/bin.properties", *files)
    assert done.returncode == 0, done.stderr
    sent = [json.loads(p.read_text()) for p in sorted((home / "dirspool").glob("*.msg.json"))]
    assert len(sent) == len(records) and all("body_b64" in s for s in sent)
    done = _msgcap(home, "run", "--prop", "dirprm/bin.properties", "--max-idle", "1")
    assert done.returncode == 0, done.stderr
    assert _trail(home) == _expected(layout, records)


def test_replay_of_one_message_files(binary_home):
    home, layout, records = binary_home
    layout.write_home(home)
    files = sorted(str(p) for p in (home / "files").iterdir())
    done = _msgcap(home, "replay", "--prop", "dirprm/bin.properties", *files)
    assert done.returncode == 0, done.stderr
    assert _trail(home) == _expected(layout, records)
