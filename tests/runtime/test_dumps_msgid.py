"""Message dumps (properties.md §13) and message ids (§9.1)."""

from __future__ import annotations

import json

import pytest

from msgcap import dumps
from msgcap.msgid import IdWidthError, MessageIds, activemq_digits
from parsers.model import Message
from props.errors import MessageError, PropertyError, SourceError


def test_jsonl_entries_body_b64_blank_lines_and_discard_records(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text(
        '{"id": "ID:x-1-2-3:1:1:1:7", "headers": {"timestamp": "17"}, "body": "I,é"}\n'
        "\n"
        '{"id": "cust-0002.dat", "body_b64": "8fLz9PX2", "other": 1}\n'
        '{"time": "t", "error": "bad", "message": {"id": "d1", "body": "x"}}\n',
        encoding="utf-8")
    m1, m2, m3 = dumps.read_dump(str(p))
    assert (m1.id, m1.headers, m1.body, m1.origin) == (
        "ID:x-1-2-3:1:1:1:7", {"timestamp": "17"}, "I,é", f"{p}:1")
    assert (m2.id, m2.body, m2.origin) == ("cust-0002.dat", bytes.fromhex("f1f2f3f4f5f6"), f"{p}:3")
    assert (m3.id, m3.body) == ("d1", "x")


@pytest.mark.parametrize("line,reason", [
    ("{not json", "not a JSON object"),
    ('{"id": 1, "body": ""}', '"id" must be a string'),
    ('{"id": "a"}', "exactly one of"),
    ('{"id": "a", "body": "x", "body_b64": "eA=="}', "exactly one of"),
    ('{"id": "a", "body_b64": "!!"}', "not valid Base64"),
    ('{"id": "a", "headers": {"x": 1}, "body": ""}', "headers"),
])
def test_malformed_jsonl_names_file_and_line(tmp_path, line, reason):
    p = tmp_path / "b.jsonl"
    p.write_text('{"id": "ok", "body": ""}\n' + line + "\n")
    with pytest.raises(SourceError, match=reason) as err:
        list(dumps.read_dump(str(p)))
    assert str(err.value).startswith(f"{p}:2: ")


def test_text_lines(tmp_path):
    p = tmp_path / "m.txt"
    p.write_bytes(b"one\r\ntwo\n\nth\xffree")
    msgs = list(dumps.read_dump(str(p), lines=True))
    assert [(m.id, m.body, m.origin) for m in msgs] == [
        ("m.txt:1", "one", f"{p}:1"), ("m.txt:2", "two", f"{p}:2"),
        ("m.txt:4", b"th\xffree", f"{p}:4")]
    assert all(m.headers == {} for m in msgs)


def test_one_message_per_file_is_its_bytes(tmp_path):
    """The whole file, as bytes, even when they are valid UTF-8 (a file says nothing of text)."""
    p = tmp_path / "0001.msg"
    p.write_text("a\nb\n")
    (m,) = dumps.read_dump(str(p))
    assert (m.id, m.body, m.origin) == ("0001.msg", b"a\nb\n", str(p))


def test_expand_inputs_order_globs_and_errors(tmp_path):
    for name in ("b.msg", "a.msg", ".hidden"):
        (tmp_path / name).write_text("x")
    z = tmp_path / "z.jsonl"
    z.write_text("")
    assert dumps.expand_inputs([str(z), str(tmp_path / "*.msg")]) == [
        str(z), str(tmp_path / "a.msg"), str(tmp_path / "b.msg")]
    assert dumps.expand_inputs([str(tmp_path)]) == [
        str(tmp_path / n) for n in ("a.msg", "b.msg", "z.jsonl")]
    with pytest.raises(SourceError, match="no such file"):
        dumps.expand_inputs([str(tmp_path / "nope")])
    with pytest.raises(SourceError, match="no file matches"):
        dumps.expand_inputs([str(tmp_path / "*.none")])


def test_entry_round_trip(tmp_path):
    """Text stays text and bytes stay bytes, valid UTF-8 or not (§13: what the transport said)."""
    msgs = [Message("a", {"h": "v"}, "text ü"), Message("b", {}, b"\xf1\xf2"),
            Message("c", {}, b"utf8 bytes")]
    p = tmp_path / "out.jsonl"
    assert dumps.write_jsonl(str(p), msgs) == 3
    lines = p.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[1]) == {"id": "b", "headers": {}, "body_b64": "8fI="}
    assert json.loads(lines[2]) == {"id": "c", "headers": {}, "body_b64": "dXRmOCBieXRlcw=="}
    assert "ü" in lines[0]
    back = list(dumps.read_dump(str(p)))
    assert [(m.id, m.headers, m.body) for m in back] == [
        ("a", {"h": "v"}, "text ü"), ("b", {}, b"\xf1\xf2"), ("c", {}, b"utf8 bytes")]
    assert json.loads(dumps.entry_line(msgs[0], id="raw", received="now")) == {
        "id": "raw", "headers": {"h": "v"}, "body": "text ü", "received": "now"}


# -- message ids -----------------------------------------------------------------------------------

def test_activemq_reformat():
    assert activemq_digits("ID:mq1-40507-1795325144930-1:1:1:1:17") == (
        "1795325144930" + "00001" + "0000000001" * 3 + "0000000000000017")
    assert activemq_digits("ID:my-host-1-2-3:4:5:6:7")[:18] == "0000000000002" + "00003"
    with pytest.raises(ValueError, match="does not fit"):
        activemq_digits("ID:h-1-2-3:4:5:6:12345678901234567")
    with pytest.raises(ValueError, match="not an ActiveMQ"):
        activemq_digits("42")


def test_time_ids_strictly_increasing_from_recovered():
    ticks = iter([5_000, 5_000, 1_000, 9_000_000])
    ids = MessageIds("time", last_id=f"{7:020d}", clock=lambda: next(ticks))
    got = [ids.next_id(Message("x")) for _ in range(4)]
    assert got == [f"{n:020d}" for n in (8, 9, 10, 9000)]


def test_header_ids_and_width_check():
    ids = MessageIds("JMSMessageID")
    assert ids.next_id(Message("file1", {})) == "file1"  # no message-id header: the source id
    assert ids.next_id(Message("x", {"message-id": "file2"})) == "file2"
    with pytest.raises(IdWidthError, match="'file2'.*'file10'"):
        ids.next_id(Message("file10"))
    seq = MessageIds("seqno")
    assert seq.next_id(Message("x", {"SEQNO": "001"})) == "001"
    with pytest.raises(MessageError, match="no header seqno"):
        seq.next_id(Message("x", {}))


def test_an_id_from_a_field_jms_defaults_must_be_sent():
    """``$JMSTimestamp`` of a message without one is JMS's 0, but 0 for every such message
    identifies none: as ``jms.id`` it is a message error."""
    ids = MessageIds("JMSTimestamp")
    assert ids.next_id(Message("x", {"timestamp": "1700000000123"})) == "1700000000123"
    with pytest.raises(MessageError, match="no header JMSTimestamp"):
        ids.next_id(Message("y", {}))


def test_width_error_with_only_a_recovered_width():
    """A trail of another jms.id mode gives a width but no previous id (once a TypeError)."""
    error = IdWidthError.between("m1", None, "123", 20)
    assert str(error) == ("message m1: id width changed from 20 to 3 (new id '123'); jms.id ids "
                          "must be fixed-width")


def test_ogg_and_callable_and_rejected_modes():
    assert MessageIds("ogg").next_id(Message("x", {"GG_ID": "g1"})) == "g1"
    assert MessageIds("builtins:repr").next_id(Message("x")).startswith("Message(id='x'")
    with pytest.raises(MessageError, match="builtins:id returned"):
        MessageIds("builtins:id").next_id(Message("x"))
    with pytest.raises(MessageError, match="builtins:len failed"):
        MessageIds("builtins:len").next_id(Message("x"))
    with pytest.raises(PropertyError, match="WebSphere"):
        MessageIds("wmq")
    with pytest.raises(PropertyError, match="cannot load"):
        MessageIds("no_such_module_xyz:f")
