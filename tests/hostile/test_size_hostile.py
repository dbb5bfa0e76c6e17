"""Issue 24, condition 4: one message larger than ``jms.maxbytes`` is refused under
``error.policy`` (discard: recorded with its size, the capture goes on; abend: one line, exit 2,
the message stays), from every source, without ever being held in memory whole."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from msgcap.sources.base import Unreadable
from msgcap.sources.spool import SpoolSource
from tests.live.conftest import Work

LIMIT = 4096


def discard_records(work: Work) -> list[dict]:
    path = work.root / "dirrpt" / "SALES.dsc"
    return [json.loads(line) for line in path.read_text().splitlines()]


def big_body(size: int) -> str:
    """Message 2 as records of SALES.CUSTOMER inserts, ``size`` bytes in all (a valid message
    but for its size): the NAME column (1 to 30 characters) makes up the length."""
    head = "I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,W,0000000002,2,"
    tail = ",City 2,2024-03-01 10:15:30\n"
    bare = len(head) + len(tail)
    count = -(-size // (bare + 30))
    names = size - count * bare
    assert count <= names <= 30 * count
    lengths = [names // count + (i < names % count) for i in range(count)]
    return "".join(f"{head}{'N' * n}{tail}" for n in lengths)


# -- the spool directory ------------------------------------------------------------------------

def test_spool_file_over_the_limit_is_discarded_and_moved_to_error_intact(work) -> None:
    d = work.spool(error_policy="discard", error_file="dirrpt/SALES.dsc", jms_maxbytes=LIMIT)
    (d / "0001.msg").write_text(work.body(1))
    (d / "0002.msg").write_text(big_body(LIMIT + 1))
    (d / "0003.msg").write_text(work.body(3))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert "discarded 1" in done.stdout
    assert work.seqids() == ["0000000001", "0000000003"]
    assert (d / ".error" / "0002.msg").read_text() == big_body(LIMIT + 1)
    (record,) = discard_records(work)
    assert record["error"] == f"message of {LIMIT + 1} bytes exceeds jms.maxbytes={LIMIT}"
    assert record["position"] == "jms.maxbytes"
    assert record["message"]["id"] == "0002.msg" and record["message"]["body_b64"] == ""
    assert record["message"]["headers"]["message-id"] == "0002.msg"


def test_spool_file_over_the_limit_stops_abend_with_one_line_and_stays(work) -> None:
    d = work.spool(error_policy="abend", jms_maxbytes=LIMIT)
    (d / "0001.msg").write_text(work.body(1))
    (d / "0002.msg").write_text(big_body(LIMIT + 1))
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "5")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, done.stderr
    assert "0002.msg" in errors[0]
    assert f"message of {LIMIT + 1} bytes exceeds jms.maxbytes={LIMIT}" in errors[0]
    assert work.seqids() == ["0000000001"]
    assert (d / "0002.msg").stat().st_size == LIMIT + 1


def test_spool_msg_json_whose_body_is_over_the_limit_is_unreadable(tmp_path) -> None:
    (tmp_path / "a.msg.json").write_text(json.dumps(
        {"id": "X-1", "headers": {"h": "v"}, "body": "é" * (LIMIT // 2 + 1)}))
    with SpoolSource(f"dir:{tmp_path}", max_bytes=LIMIT) as source, \
            pytest.raises(Unreadable) as info:
        source.receive(1.0)
    assert info.value.error.reason == (
        f"message of {LIMIT + 2} bytes exceeds jms.maxbytes={LIMIT}")
    assert info.value.message.body == b"" and info.value.message.ack == "a.msg.json"


def test_spool_file_at_the_limit_is_captured(work) -> None:
    d = work.spool(jms_maxbytes=LIMIT)
    (d / "0002.msg").write_text(big_body(LIMIT))
    work.msgcap("run", "--prop", str(work.prop), "--max-idle", "0.5", check=True)
    assert set(work.seqids()) == {"0000000002"}
    assert len(work.seqids()) == big_body(LIMIT).count("\n")


def test_a_64_mb_spool_file_is_never_read_into_memory(work) -> None:
    d = work.spool(error_policy="discard", error_file="dirrpt/SALES.dsc")
    size = 64 << 20
    with open(d / "0001.msg", "wb") as fh:  # sparse: no disk, but 64 MB to read
        fh.truncate(size)
    proc = work.start("run", "--prop", str(work.prop), "--max-idle", "0.5")
    peak = work.wait_peak_rss_mb(proc)
    assert proc.returncode == 0, (work.root / "run.out").read_text()
    (record,) = discard_records(work)
    assert record["error"] == f"message of {size} bytes exceeds jms.maxbytes=16777216"
    assert (d / ".error" / "0001.msg").stat().st_size == size
    assert peak < 48, f"peak RSS {peak:.0f} MB for a {size >> 20} MB message"


# -- STOMP frames -------------------------------------------------------------------------------

class FakeBroker:
    """A STOMP peer on 127.0.0.1 for one connection: answers CONNECT and every receipt, sends
    ``frames`` after the subscription, records the frames msgcap sends (ACK, SEND)."""

    def __init__(self, frames: list[bytes]) -> None:
        self.frames = frames
        self.received: list[tuple[str, dict[str, str], bytes]] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            buf = b""
            while chunk := conn.recv(65536):
                buf += chunk
                while (nul := buf.find(b"\0")) >= 0:
                    frame, buf = buf[:nul].lstrip(b"\r\n"), buf[nul + 1:]
                    head, _, body = frame.partition(b"\n\n")
                    command, *lines = head.decode().split("\n")
                    headers = dict(line.split(":", 1) for line in lines)
                    self.received.append((command, headers, body))
                    if command in ("CONNECT", "STOMP"):
                        conn.sendall(b"CONNECTED\nversion:1.2\nheart-beat:0,0\n\n\0")
                    elif "receipt" in headers:
                        conn.sendall(f"RECEIPT\nreceipt-id:{headers['receipt']}\n\n\0".encode())
                    if command == "SUBSCRIBE":
                        conn.sendall(b"".join(self.frames))

    def close(self) -> None:
        self.server.close()
        self.thread.join(10)

    def sent(self, command: str) -> list[tuple[dict[str, str], bytes]]:
        return [(h, b) for c, h, b in self.received if c == command]


def message_frame(ack: str, body: bytes, *, sized: bool) -> bytes:
    length = f"content-length:{len(body)}\n" if sized else ""
    return (f"MESSAGE\nsubscription:1\nmessage-id:{ack}\ndestination:/queue/sales\nack:{ack}\n"
            f"{length}\n").encode() + body + b"\0"


@pytest.mark.parametrize("dead_letters", [False, True], ids=["discard-file", "error-destination"])
def test_stomp_frames_over_the_limit_are_read_past_and_discarded(work, dead_letters) -> None:
    """Over the limit: one read whole, one stated by content-length (binary, NULs inside), one
    without content-length longer than the limit plus the headers' allowance; then a normal
    message, which must reach the trail."""
    big_sized = bytes(range(256)) * (3 * 4096)  # 3 MiB
    frames = [message_frame("m1", b"x" * (LIMIT + 1), sized=False),
              message_frame("m2", big_sized, sized=True),
              message_frame("m3", b"y" * (2 << 20), sized=False),
              message_frame("m4", work.body(4).encode(), sized=False)]
    broker = FakeBroker(frames)
    extra = {"error_destination": "sales.dead"} if dead_letters else {}
    work.properties(jms_url=f"stomp://127.0.0.1:{broker.port}", jms_destination="sales",
                    jms_heartbeat="0,0", jms_ack="client-individual", jms_maxbytes=LIMIT,
                    error_policy="discard", error_file="dirrpt/SALES.dsc", **extra)
    try:
        done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", timeout=60)
    finally:
        broker.close()
    assert done.returncode == 0, done.stderr
    assert "discarded 3" in done.stdout
    assert work.seqids() == ["0000000004"]
    assert sorted(h["id"] for h, _ in broker.sent("ACK")) == ["m1", "m2", "m3", "m4"]
    errors = {"m1": f"message of {LIMIT + 1} bytes exceeds jms.maxbytes={LIMIT}",
              "m2": f"message of {3 << 20} bytes exceeds jms.maxbytes={LIMIT}",
              "m3": f"message of {2 << 20} bytes exceeds jms.maxbytes={LIMIT}"}
    if dead_letters:
        dead = broker.sent("SEND")
        assert [h["msgcap-source-message-id"] for h, _ in dead] == ["m1", "m2", "m3"]
        assert {h["msgcap-source-message-id"]: h["msgcap-error"] for h, _ in dead} == errors
        assert all(b == b"" and h["destination"] == "/queue/sales.dead" for h, b in dead)
    else:
        records = discard_records(work)
        assert {r["message"]["id"]: r["error"] for r in records} == errors
        assert all(r["message"]["body_b64"] == "" for r in records)
        assert all(r["message"]["headers"]["destination"] == "/queue/sales" for r in records)


def test_the_frame_reader_reads_past_frames_over_the_limit_wherever_reads_end() -> None:
    """Frames over the limit in every form (read whole; content-length beyond the read; no
    content-length and longer than the limit plus the headers' allowance; CR LF lines; an
    ERROR frame) are delivered without their body, and the frames around them intact,
    wherever the reads end."""
    import random

    import stomp.transport

    from msgcap.sources.base import HEADER_BYTES
    from msgcap.sources.stomp import _FrameReader, _TooLarge
    from tests.live.test_units import _read_with, _Recording

    over = b"z" * (HEADER_BYTES + LIMIT + 10)
    frames = [b"MESSAGE\nmessage-id:a\n\nfirst",
              b"MESSAGE\nmessage-id:b\n\n" + b"x" * (LIMIT + 1),
              b"MESSAGE\nmessage-id:c\ncontent-length:%d\n\n" % (2 * LIMIT) + b"\0y" * LIMIT,
              b"MESSAGE\nmessage-id:d\n\n" + over,
              b"MESSAGE\r\nmessage-id:e\r\ncontent-length:%d\r\n\r\n" % len(over) + over,
              b"ERROR\nmessage:too long\n\n" + b"e" * (LIMIT + 1),
              b"MESSAGE\nmessage-id:f\ncontent-length:4\n\nl\0st"]
    stream = b"\n".join(frame + b"\0" for frame in frames)
    expected = [("MESSAGE", "a", b"first"), ("MESSAGE", "b", LIMIT + 1),
                ("MESSAGE", "c", 2 * LIMIT), ("MESSAGE", "d", len(over)),
                ("MESSAGE", "e", len(over)), ("ERROR", None, b""), ("MESSAGE", "f", b"l\0st")]
    rng = random.Random(24)
    for _ in range(40):
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randrange(0, 40)))
        cuts += range(0, len(stream), 65536)  # reads of a socket: at most 64 KiB each
        cuts = sorted(set(cuts) - {0})
        chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
        got = _Recording()
        mine = stomp.transport.BaseTransport(auto_decode=False)
        mine.set_listener("r", got)
        reader = _FrameReader(mine, got.deliver, LIMIT)
        held: list[int] = []

        def split(buf: bytes, split=reader._split, held=held) -> None:
            held.append(len(buf))
            split(buf)

        reader._split = split  # type: ignore[method-assign]
        _read_with(mine, chunks)
        assert [(cmd, h.get("message-id"), b.size if isinstance(b, _TooLarge) else b)
                for cmd, h, b in got.frames] == expected
        assert max(held) <= LIMIT + HEADER_BYTES + 2 * 65536  # never a whole large frame


# -- dumps: replay and send ---------------------------------------------------------------------

def test_replay_stops_at_a_dump_entry_over_the_limit_naming_file_and_line(work) -> None:
    """As at a malformed entry: one line naming file:line, exit 2, under either error policy
    (the entries before it in the same read-ahead batch are not written either)."""
    work.properties(jms_maxbytes=LIMIT, error_policy="discard", error_file="dirrpt/SALES.dsc")
    dump = work.dump("in.jsonl", [work.body(1), big_body(LIMIT + 1), work.body(3)])
    done = work.msgcap("replay", "--prop", str(work.prop), str(dump))
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    expected = (f"msgcap replay: error: {dump}:2: message of {LIMIT + 1} bytes exceeds "
                f"jms.maxbytes={LIMIT}")
    assert errors == [expected], done.stderr
    assert "0000000003" not in work.seqids()


def test_replay_of_a_huge_line_without_a_newline_holds_no_more_than_the_limit(work) -> None:
    work.properties(jms_maxbytes=LIMIT)
    dump = work.root / "in.txt"
    dump.write_text(work.body(1))
    with open(dump, "ab") as fh:  # then 256 MB of NULs, no line end (sparse: no disk)
        fh.truncate(dump.stat().st_size + (256 << 20))
    proc = work.start("replay", "--prop", str(work.prop), "--lines", str(dump))
    peak = work.wait_peak_rss_mb(proc)
    out = (work.root / "run.out").read_text()
    assert proc.returncode == 2, out
    assert f"{dump}:2: message of more than {LIMIT} bytes exceeds jms.maxbytes={LIMIT}" in out
    assert peak < 100, f"peak RSS {peak:.0f} MB"


def test_replay_of_a_file_over_the_limit_names_it(work) -> None:
    work.properties(jms_maxbytes=LIMIT)
    (work.root / "msgs").mkdir()
    (work.root / "msgs" / "0001.msg").write_text(work.body(1))
    (work.root / "msgs" / "0002.msg").write_text(big_body(LIMIT + 1))
    done = work.msgcap("replay", "--prop", str(work.prop), "msgs")
    assert done.returncode == 2
    assert (f"msgs/0002.msg: message of {LIMIT + 1} bytes exceeds jms.maxbytes={LIMIT}"
            in done.stderr), done.stderr


def test_send_refuses_an_entry_over_the_limit(work) -> None:
    d = work.spool(jms_maxbytes=LIMIT)
    dump = work.dump("in.jsonl", [work.body(1), "é" * (LIMIT // 2 + 1)])
    done = work.msgcap("send", "--prop", str(work.prop), str(dump))
    assert done.returncode == 2
    assert (f"{dump}:2: message of {LIMIT + 2} bytes exceeds jms.maxbytes={LIMIT}"
            in done.stderr), done.stderr
    assert len([p for p in d.iterdir() if p.is_file()]) == 1
