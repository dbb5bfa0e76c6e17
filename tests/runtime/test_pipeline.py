"""The shared pipeline: error policy, discard records, statistics, acknowledgement hand-off."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from gendef.model import Table, number_column
from msgcap.assembler import Assembler
from msgcap.msgid import IdWidthError, MessageIds
from msgcap.pipeline import DiscardFile, Pipeline, Stats
from msgcap.trail.records import Position
from parsers.model import Message, Op
from props.errors import MessageError

T = Table.build("S.T", [number_column("ID", 8, key=True)])


class FakeParser:
    """Body ``"<txind>:<id>[;…]"``; ``bad`` raises a MessageError."""

    def parse(self, message):
        if message.body == "bad":
            raise MessageError("cannot parse", position="field X")
        ops = []
        for n, part in enumerate(message.body.split(";")):
            ind, key = part.split(":")
            ops.append(Op(T, "I", 7, None, None, None if ind == "-" else int(ind),
                          after=[int(key)], ordinal=n))
        return ops


class FakeWriter:
    def __init__(self, fail_on=None):
        self.txs = []
        self.fail_on = fail_on

    def write_transaction(self, tx):
        if self.fail_on is not None and tx.records[0].values[0] == self.fail_on:
            raise MessageError("record too large")
        self.txs.append(tx)
        return Position(0, 100 * len(self.txs), "dirdat/aa000000000")


def pipeline(policy="abend", tmp_path=None, writer=None, ids="JMSMessageID"):
    discard = DiscardFile(str(tmp_path / "rpt" / "x.dsc")) if tmp_path else None
    return Pipeline(FakeParser(), Assembler(), writer or FakeWriter(), MessageIds(ids),
                    policy=policy, discard=discard)


def m(ident, body):
    return Message(ident, {}, body, None, f"d.jsonl:{ident}")


def test_written_transactions_release_their_messages():
    p = pipeline()
    a, b, c = m("1", "0:1"), m("2", "1:2;2:3;3:4"), m("3", "-:5")
    assert p.process(a).written == []
    r = p.process(b)
    (first, pos1), (second, _) = r.written
    assert first == [a] and second == [b]
    assert pos1 == Position(0, 100, "dirdat/aa000000000")
    r = p.process(c)
    assert r.written[0][0] == [c] and not r.ack_now
    s = p.stats
    assert (s.messages, s.transactions, s.operations) == (3, 3, {("S.T", "I"): 5})
    assert s.trail_files == ["dirdat/aa000000000"] and s.last_commit_us == 7


def test_abend_raises_located_error():
    p = pipeline()
    with pytest.raises(MessageError) as err:
        p.process(m("1", "bad"))
    assert str(err.value) == "message d.jsonl:1: field X: cannot parse"


def test_discard_writes_record_with_raw_id(tmp_path):
    p = pipeline("discard", tmp_path, ids="time")
    msg = Message("ID:raw", {"h": "v"}, "bad", None, "d.jsonl:9")
    r = p.process(msg)
    assert r.ack_now and r.discarded is not None and p.stats.discarded == 1
    p.discard.close()
    (line,) = (tmp_path / "rpt" / "x.dsc").read_text().splitlines()
    rec = json.loads(line)
    assert list(rec) == ["time", "error", "position", "source", "message"]
    assert rec["time"].endswith("Z")
    assert (rec["error"], rec["position"], rec["source"]) == (
        "cannot parse", "field X", "d.jsonl:9")
    assert rec["message"] == {"id": "ID:raw", "headers": {"h": "v"}, "body": "bad"}


def test_writer_message_error_follows_the_policy(tmp_path):
    p = pipeline("discard", tmp_path, writer=FakeWriter(fail_on=2))
    p.process(m("1", "-:1"))
    r = p.process(m("2", "-:2"))
    assert r.discarded is not None and "record too large" in str(r.discarded)
    p.process(m("3", "-:3"))
    assert p.stats.transactions == 2 and p.stats.discarded == 1


def test_id_width_change_is_never_discarded(tmp_path):
    p = pipeline("discard", tmp_path)
    p.process(m("1", "-:1"))
    with pytest.raises(IdWidthError):
        p.process(m("10", "-:2"))


def test_stats_interval_and_summary():
    s = Stats(messages=5, transactions=2, operations={("A.B", "I"): 3, ("A.B", "D"): 1},
              trail_files=["f1"])
    earlier = s.copy()
    s.messages += 2
    s.operations[("A.B", "I")] += 4
    s.trail_files.append("f2")
    d = s.since(earlier)
    assert (d.messages, d.operations, d.trail_files) == (2, {("A.B", "I"): 4}, ["f2"])
    text = s.summary()
    assert text.splitlines()[1] == "  A.B  insert 7  delete 1"
    assert "operations 8" in text and text.endswith("trail files: f1 f2")


def test_every_counter_is_copied_subtracted_and_added():
    """The counters come from one list (the fields marked counter): none is forgotten."""
    names = [f.name for f in fields(Stats) if f.metadata.get("counter")]
    assert {"messages", "duplicates", "discarded", "transactions", "skipped_transactions",
            "body_size"} <= set(names)
    s = Stats(**{n: 10 * (i + 1) for i, n in enumerate(names)}, operations={("T", "I"): 3},
              trail_files=["f1"], last_commit_us=7, durable_transactions=4)
    assert s.copy() == s and s.copy().operations is not s.operations
    assert s.since(Stats()) == s
    total = Stats()
    total.add(s)
    total.add(s)
    assert [getattr(total, n) for n in names] == [2 * getattr(s, n) for n in names]
    assert total.operations == {("T", "I"): 6} and total.last_commit_us == 7
    assert total.since(s) == Stats(**{n: getattr(s, n) for n in names},
                                   operations={("T", "I"): 3}, last_commit_us=7)
