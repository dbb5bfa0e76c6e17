"""Pure parts of the live capture: back-off, URL lists, the spool source, checkpoints, reports."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import urllib.error
import urllib.request
from types import SimpleNamespace

import pytest

from msgcap.checkpoint import Checkpoint, CheckpointFile
from msgcap.pipeline import Stats
from msgcap.report import HttpReport, Reporter, metrics_text
from msgcap.sources import source_for
from msgcap.sources.broker import Backoff
from msgcap.sources.spool import SpoolSource, is_message_name
from msgcap.sources.stomp import StompSource, _FrameReader, parse_headers, parse_urls
from msgcap.trail.records import Position
from props.errors import PropertyError, SourceError
from props.settings import JmsSettings, TrailSettings


def test_backoff_doubles_to_the_cap_with_bounded_jitter_and_resets() -> None:
    b = Backoff(rand=lambda: 0.0)
    assert [round(b.delay(), 3) for _ in range(11)] == [
        0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    b.reset()
    assert b.delay() == pytest.approx(0.1)
    jittery = Backoff(rand=lambda: 1.0)
    assert jittery.delay() == pytest.approx(0.11)


def test_parse_urls_keeps_the_failover_order_and_rejects_other_schemes() -> None:
    eps = parse_urls(["stomp://mq1:61613", "stomp+ssl://mq2:61614", "stomp://mq3"])
    assert [(e.host, e.port, e.tls) for e in eps] == [
        ("mq1", 61613, False), ("mq2", 61614, True), ("mq3", 61613, False)]
    with pytest.raises(SourceError, match="stomp://host:port"):
        parse_urls(["tcp://mq1:61616"])


def test_tls_without_a_ca_file_fails_at_start(tmp_path) -> None:
    with pytest.raises(SourceError, match="jms.ssl.ca: no such file"):
        StompSource(["stomp+ssl://mq:61614"], "/queue/q", ssl_ca=str(tmp_path / "none.pem"))
    with pytest.raises(SourceError, match="go together"):
        ca = tmp_path / "ca.pem"
        ca.write_text("x")
        StompSource(["stomp+ssl://mq:61614"], "/queue/q", ssl_ca=str(ca), ssl_cert=str(ca))


def _settings(*urls: str, destination: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(jms=JmsSettings(url=urls, destination=destination),
                           trail=TrailSettings())


def test_header_parsing_gives_stomp_py_s_own_headers() -> None:
    import random

    import stomp.utils

    lines = ["MESSAGE", "destination:/queue/a", "message-id:ID\\cx\\c1", "ack:5", "ack:6",
             "a\\cb:c\\nd\\re\\\\f", "x\\qy:\\t", "novalue", ":emptykey", "k:", "k2:a:b",
             "cr:a\r", "\\:x", "trailing\\:v", "é:ü", ""]
    assert parse_headers(lines, 1) == stomp.utils.parse_headers(lines, 1)
    assert parse_headers(lines) == stomp.utils.parse_headers(lines)
    rng = random.Random(14)
    for _ in range(5000):
        sample = ["".join(rng.choice("ab:\\cnr\r\x00é ") for _ in range(rng.randrange(9)))
                  for _ in range(rng.randrange(6))]
        assert parse_headers(sample) == stomp.utils.parse_headers(sample), sample


class _Recording:
    """A stomp.py listener that lists the frames it is told about."""

    def __init__(self) -> None:
        self.frames: list[tuple[str, dict[str, str], bytes]] = []
        self.heartbeats = 0

    def _record(self, frame) -> None:
        self.frames.append((frame.cmd, frame.headers, frame.body))

    on_message = on_receipt = on_error = on_connected = _record

    def deliver(self, messages: list[tuple[dict[str, str], bytes]]) -> None:
        """What ``_FrameReader`` hands over: it keeps its place among the other frames."""
        self.frames.extend(("MESSAGE", headers, body) for headers, body in messages)

    def on_heartbeat(self) -> None:
        self.heartbeats += 1


def _read_with(transport, chunks: list[bytes]) -> None:
    """Run stomp.py's receiver-loop step over ``chunks`` (as they come from the socket)."""
    from stomp.exception import ConnectionClosedException

    data = iter(chunks)
    transport.receive = lambda: next(data, b"")
    transport.running = True
    with contextlib.suppress(ConnectionClosedException):
        while True:
            transport._BaseTransport__read_frames()


def test_the_frame_reader_gives_stomp_py_s_own_frames_wherever_reads_end() -> None:
    import random

    import stomp.transport

    frames = [b"CONNECTED\nversion:1.2\nserver:RabbitMQ/3.10.8\n\n",
              (b"MESSAGE\nsubscription:1\ndestination:/queue/a\nmessage-id:T_1@@1\nack:7\n"
               b"content-length:5\n\nhello"),
              b"MESSAGE\nmessage-id:ID\\cx\\c1\nk\\n:v\\\\w\nk\\n:second\n\ntext \xc3\xa9",
              b"MESSAGE\nmessage-id:bin\ncontent-length:7\n\n\x00a\x00b\n\n\x00",
              b"MESSAGE\nmessage-id:short\ncontent-length:2\n\nlonger",
              b"RECEIPT\nreceipt-id:msgcap-1\n\n",
              b"MESSAGE\r\nmessage-id:crlf\r\ncontent-length:3\r\n\r\n\x00\r\n",
              b"MESSAGE\nmessage-id:empty\n\n",
              b"MESSAGE\nbad:\xff\xfe\n\n\xff",
              b"ERROR\nmessage:refused\n\nno such queue"]
    stream = b"".join(frame + b"\x00" + eols for frame, eols in
                      zip(frames, [b"", b"\n", b"", b"\r\n", b"", b"\n\n", b"", b"", b"", b""],
                          strict=True))
    reference = _Recording()
    theirs = stomp.transport.BaseTransport(auto_decode=False)
    theirs.set_listener("r", reference)
    _read_with(theirs, [stream])
    expected = reference.frames
    assert len(expected) == len(frames)
    rng = random.Random(14)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randrange(0, 12)))
        chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
        others = _Recording()
        mine = stomp.transport.BaseTransport(auto_decode=False)
        mine.set_listener("r", others)
        _FrameReader(mine, others.deliver, 1 << 30)
        _read_with(mine, chunks)
        assert others.frames == expected, chunks
        assert others.heartbeats >= 1  # messages are a sign of life for the heart-beat monitor


def test_a_large_frame_read_in_small_pieces_is_joined_once() -> None:
    """A frame of megabytes comes in many reads: the reader keeps the pieces and looks for
    frames again only when the frame can be complete (a NUL came, or its content-length is
    reached), so it handles each byte a bounded number of times, not once per read."""
    import stomp.transport

    big = bytes(range(1, 256)) * 8000  # 2 MB, no NUL
    frames = [b"MESSAGE\nmessage-id:plain\n\n" + big,
              b"MESSAGE\nmessage-id:sized\ncontent-length:%d\n\n" % (len(big) + 2)
              + b"\x00" + big + b"\x00",
              b"MESSAGE\r\nmessage-id:crlf\r\ncontent-length:%d\r\n\r\n" % (len(big) + 1)
              + big + b"\x00",
              b"RECEIPT\nreceipt-id:msgcap-2\n\n"]
    stream = b"\n".join(frame + b"\x00" for frame in frames)
    chunks = [stream[i:i + 1024] for i in range(0, len(stream), 1024)]
    reference = _Recording()
    theirs = stomp.transport.BaseTransport(auto_decode=False)
    theirs.set_listener("r", reference)
    _read_with(theirs, [stream])
    others = _Recording()
    mine = stomp.transport.BaseTransport(auto_decode=False)
    mine.set_listener("r", others)
    reader = _FrameReader(mine, others.deliver, 1 << 30)
    split, handled = reader._split, []

    def counting(buf: bytes) -> None:
        handled.append(len(buf))
        split(buf)

    reader._split = counting  # type: ignore[method-assign]
    _read_with(mine, chunks)
    assert others.frames == reference.frames
    assert [cmd for cmd, _, _ in others.frames] == ["MESSAGE"] * 3 + ["RECEIPT"]
    assert sum(handled) < 2 * len(stream)  # once per read would be ~3,000 times its length
    assert others.heartbeats >= 1  # pieces of a frame are a sign of life too


def test_source_for_picks_the_source_from_jms_url() -> None:
    spool = source_for(_settings("dir:spool"))
    assert isinstance(spool, SpoolSource) and spool.path == "spool"
    broker = source_for(_settings("stomp://a:1", "stomp://b:2", destination="/queue/q"))
    assert isinstance(broker, StompSource) and broker.destination == "/queue/q"
    assert broker.window == 500 and [e.port for e in broker.endpoints] == [1, 2]
    with pytest.raises(PropertyError, match="jms.url"):
        source_for(_settings())


def test_spool_names_that_are_not_ready_are_ignored() -> None:
    assert is_message_name("0001.msg")
    assert not any(is_message_name(n) for n in (".x", "a.tmp", "a.part", ".done"))


def test_spool_source_order_headers_ack_and_discard(tmp_path) -> None:
    d = tmp_path / "spool"
    d.mkdir()
    (d / "b.msg").write_bytes(b"\xff\xfe")
    (d / "a.msg").write_text("text body")
    (d / "c.msg.json").write_text(json.dumps({"id": "X", "headers": {"k": "v"}, "body": "j"}))
    src = SpoolSource(f"dir:{d}", poll=0.01)
    src.open()
    got = [src.receive(1.0) for _ in range(3)]
    assert [m.id for m in got] == ["a.msg", "b.msg", "X"]
    assert got[0].body == b"text body" and got[1].body == b"\xff\xfe"  # bytes, never sniffed
    assert got[0].headers["message-id"] == "a.msg" and got[0].headers["destination"] == f"dir:{d}"
    assert got[0].headers["timestamp"].isdigit()
    assert got[2].headers["k"] == "v" and got[2].headers["message-id"] == "c.msg.json"
    assert src.receive(0.05) is None  # in flight files are not delivered twice
    src.ack([got[0], got[2]], [got[1]])
    assert sorted(os.listdir(d / ".done")) == ["a.msg", "c.msg.json"]
    assert os.listdir(d / ".error") == ["b.msg"]
    src.ack([got[0]])  # a second ack of the same message is a no-op
    (d / "d.msg").write_text("later")
    assert src.receive(1.0).id == "d.msg"


def test_spool_receive_can_be_interrupted(tmp_path) -> None:
    src = SpoolSource(f"dir:{tmp_path}", poll=30)
    src.open()
    threading.Timer(0.1, src.interrupt).start()
    assert src.receive(30) is None


def test_spool_directory_must_exist(tmp_path) -> None:
    with pytest.raises(SourceError, match="does not exist"):
        SpoolSource(f"dir:{tmp_path / 'nope'}").open()


def test_checkpoint_round_trip_and_atomic_replace(tmp_path) -> None:
    cpf = CheckpointFile(str(tmp_path / "dirchk"), "SALES")
    assert cpf.load() is None
    cpf.save(Checkpoint("dirdat/sa000000001", 1, 400, "0000000009", 0, "9", "m9", 9, 12))
    cp = cpf.load()
    assert cp.position == Position(1, 400, "dirdat/sa000000001")
    assert cp.last_seqid == "0000000009" and cp.txnum == 9 and cp.time.endswith("Z")
    assert os.listdir(tmp_path / "dirchk") == ["SALES.cpj"]


def _stats() -> Stats:
    s = Stats(messages=10, duplicates=1, discarded=2, transactions=7)
    s.operations = {("SALES.CUSTOMER", "I"): 5, ('A"B', "U"): 2}
    s.last_position = Position(3, 1234, "dirdat/sa000000003")
    s.last_commit_us = 1_700_000_000_000_000
    return s


def test_metrics_are_prometheus_text_with_every_metric_of_the_spec() -> None:
    text = metrics_text(_stats(), connected=True, trail_bytes=999,
                        now_us=1_700_000_002_500_000)
    for name in ("msgcap_messages_total 10", "msgcap_duplicates_total 1",
                 "msgcap_discarded_total 2", "msgcap_transactions_total 7",
                 'msgcap_operations_total{table="SALES.CUSTOMER",op="insert"} 5',
                 'msgcap_operations_total{table="A\\"B",op="update"} 2',
                 "msgcap_trail_bytes_total 999", "msgcap_trail_seqno 3", "msgcap_trail_rba 1234",
                 "msgcap_last_commit_timestamp_seconds 1700000000.000000",
                 "msgcap_last_source_commit_timestamp_seconds 1700000000.000000",
                 "msgcap_last_durable_commit_timestamp_seconds NaN",
                 "msgcap_lag_seconds 2.500000", "msgcap_source_connected 1"):
        assert name in text.splitlines(), name
    assert "# TYPE msgcap_messages_total counter" in text


def test_metrics_give_the_durable_position_beside_the_written_one() -> None:
    stats = _stats()
    assert {"msgcap_durable_transactions_total 0", "msgcap_trail_durable_seqno 0",
            "msgcap_trail_durable_rba 0"} <= set(metrics_text(stats, connected=True, trail_bytes=0,
                                                              now_us=0).splitlines())
    stats.durable_transactions, stats.durable_position = 5, Position(2, 777, "dirdat/sa000000002")
    lines = metrics_text(stats, connected=True, trail_bytes=0, now_us=0).splitlines()
    assert {"msgcap_durable_transactions_total 5", "msgcap_trail_durable_seqno 2",
            "msgcap_trail_durable_rba 777", "msgcap_transactions_total 7",
            "msgcap_trail_seqno 3", "msgcap_trail_rba 1234"} <= set(lines)
    assert "# TYPE msgcap_trail_durable_rba gauge" in lines


def test_reports_by_records_and_by_time_with_since_last(tmp_path) -> None:
    import io

    stats, out, now = _stats(), io.StringIO(), [0.0]
    r = Reporter(stats, every_records=5, every_seconds=60, out=out, clock=lambda: now[0])
    r.tick()
    assert out.getvalue() == ""  # the first 10 were there when it started
    stats.messages += 5
    r.tick()
    assert "since start (0 s): messages 15" in out.getvalue()
    now[0] = 61.0
    r.tick()
    assert r.reports == 2 and "SALES.CUSTOMER  insert 5" in out.getvalue()
    assert "dirdat/sa000000003 RBA 1234" in out.getvalue()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_http_health_follows_the_connection_and_metrics_are_served() -> None:
    state = {"connected": True}
    http = HttpReport(("127.0.0.1", _free_port()), _stats(),
                      lambda: (True, state["connected"], 5))
    http.start()
    base = f"http://127.0.0.1:{http.address[1]}"
    try:
        code, body = _get(base + "/health")
        assert code == 200 and json.loads(body)["status"] == "ok"
        state["connected"] = False
        code, body = _get(base + "/health")
        assert code == 503 and json.loads(body)["connected"] is False
        code, body = _get(base + "/metrics")
        assert code == 200 and b"msgcap_source_connected 0" in body
        assert _get(base + "/nope")[0] == 404
    finally:
        http.close()


def test_later_reports_also_give_the_interval() -> None:
    import io

    stats, out = _stats(), io.StringIO()
    r = Reporter(stats, every_records=1, out=out, clock=lambda: 0.0)
    stats.messages += 1
    r.tick()
    stats.messages += 3
    r.tick()
    assert "since last (0 s): messages 3" in out.getvalue()


def test_archive_rolls_over_per_utc_day_and_size_and_never_appends_to_an_old_file(tmp_path) -> None:
    from datetime import UTC, datetime

    from msgcap.archive import Archive
    from parsers.model import Message

    day = [datetime(2026, 3, 1, 23, 59, tzinfo=UTC)]
    arc = Archive(str(tmp_path), "SALES", megabytes=1, clock=lambda: day[0])
    arc.append(Message("m1", {"h": "v"}, "one"))
    day[0] = datetime(2026, 3, 2, 0, 0, 1, tzinfo=UTC)
    arc.append(Message("m2", {}, b"\xff"))
    for i in range(1100):  # > 1 MiB: the next file of the same day
        arc.append(Message(f"big{i}", {}, "x" * 1000))
    arc.close()
    names = sorted(os.listdir(tmp_path))
    assert names == ["SALES-20260301-000000.jsonl", "SALES-20260302-000000.jsonl",
                     "SALES-20260302-000001.jsonl"]
    first = json.loads((tmp_path / names[0]).read_text())
    assert first == {"id": "m1", "headers": {"h": "v"}, "body": "one",
                     "received": "2026-03-01T23:59:00.000000Z"}
    second = json.loads((tmp_path / names[1]).read_text().splitlines()[0])
    assert second["body_b64"] == "/w=="
    again = Archive(str(tmp_path), "SALES", clock=lambda: day[0])
    again.append(Message("m3", {}, "three"))
    again.close()
    assert "SALES-20260302-000002.jsonl" in os.listdir(tmp_path)
    # issue 35: a name with digits int() reads but that are not ASCII is no archive file's
    (tmp_path / ("SALES-20260302-" + "\u0660" * 4 + "\u0669\u0669.jsonl")).write_bytes(b"")
    third = Archive(str(tmp_path), "SALES", clock=lambda: day[0])
    third.append(Message("m4", {}, "four"))
    third.close()
    assert third.files == [str(tmp_path / "SALES-20260302-000003.jsonl")]


def test_stomp_py_logs_of_send_failures_it_raises_again_are_dropped(caplog) -> None:
    """msgcap reports a failed send in one line; stomp.py's own ERROR and traceback for it would
    be a second report on stderr (the filter is installed by importing msgcap.sources.stomp)."""
    stomp_log = logging.getLogger("stomp.py")
    with caplog.at_level(logging.DEBUG, logger="stomp.py"):
        try:
            raise OSError("TLS/SSL connection has been closed (EOF)")
        except OSError:
            stomp_log.error("error sending frame", exc_info=True)
        stomp_log.error("keepalive: bad specification %r", "x")
    assert [r.getMessage() for r in caplog.records] == ["keepalive: bad specification 'x'"]
