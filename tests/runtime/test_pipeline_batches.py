"""``Pipeline.process_many`` (replay: ids and parsing a batch ahead) gives what ``process`` gives
message by message: the same trail records, discard records, statistics and errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gendef.build import build_definitions
from msgcap.msgid import IdWidthError
from msgcap.pipeline import build_pipeline
from msgcap.trail.reader import TrailReader
from msgcap.trail.writer import TrailWriter
from parsers.base import build_parser
from parsers.model import Message
from props.errors import MessageError
from props.loader import settings_from_text

REPO = Path(__file__).resolve().parents[2]
CPY = (REPO / "examples" / "fixed" / "copybook" / "dirdef" / "retail.cpy").read_text()
PROPS = """\
jms.id=JMSMessageID
trail.path=dirdat/rt
trail.sync=none
error.policy={policy}
error.file=dirrpt/x.dsc
parser.type=fixed
fixed.schematype=copybook
fixed.copybook=retail.cpy
fixed.header=HEADER
fixed.timestamp=HDR-TIMESTAMP
fixed.optype=HDR-FUNCTION
fixed.optype.insertval=A
fixed.optype.updateval=C
fixed.optype.deleteval=D
fixed.table=HDR-REC-ID
fixed.schema="RETAIL"
fixed.seqid=*seqid
"""
GOOD = ("2024-03-01-10.15.30.123456ACUSTOMERPOS100001001ACME TRADING                  "
        "000125000240301")
BAD = GOOD.replace("000125000", "0001X5000")


def messages(ids: list[str] | None = None) -> list[Message]:
    bodies = [GOOD.replace("001001", f"{i:06d}") if i % 5 else BAD for i in range(1, 24)]
    ids = ids or [f"m{i:02d}" for i in range(len(bodies))]
    return [Message(ident, {}, body, None, f"d.jsonl:{i}")
            for i, (ident, body) in enumerate(zip(ids, bodies, strict=True))]


def run(work: Path, policy: str, batch: int | None, ids: list[str] | None = None):
    work.mkdir()
    (work / "retail.cpy").write_text(CPY)
    settings = settings_from_text(PROPS.format(policy=policy), str(work / "p.properties"),
                                  env={})
    here = os.getcwd()
    os.chdir(work)
    try:
        definitions = build_definitions(settings)
        writer = TrailWriter("dirdat/rt", sync="none")
        pipeline = build_pipeline(settings, writer, writer.open(), definitions=definitions,
                                  parser=build_parser(settings, definitions))
        results, error = [], None
        try:
            if batch is None:
                for message in messages(ids):
                    results.append(pipeline.process(message))
            else:
                for _, result in pipeline.process_many(messages(ids), batch):
                    results.append(result)
        except (MessageError, IdWidthError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        writer.close()
        if pipeline.discard is not None:
            pipeline.discard.close()
        records = [(r.table, r.seqid, r.txid, r.data) for r in TrailReader("dirdat/rt000000000")]
        discards = []
        if (work / "dirrpt" / "x.dsc").exists():
            discards = [{k: v for k, v in json.loads(line).items() if k != "time"}
                        for line in (work / "dirrpt" / "x.dsc").read_text().splitlines()]
        outcome = [(len(r.written), [p for _, p in r.written], r.ack_now, r.duplicate,
                    str(r.discarded)) for r in results]
        return records, discards, outcome, pipeline.stats.summary(), error
    finally:
        os.chdir(here)


@pytest.mark.parametrize("batch", [1, 3, 256])
@pytest.mark.parametrize("policy", ["discard", "abend"])
def test_batches_give_what_single_messages_give(tmp_path, policy, batch):
    one = run(tmp_path / "one", policy, None)
    many = run(tmp_path / "two", policy, batch)  # same path lengths, same header
    assert many == one
    records, discards, outcome, _, error = one
    if policy == "discard":
        assert len(records) == 19 and len(discards) == 4 and error is None
        assert discards[0]["source"] == "d.jsonl:4" and "0001X5000" in discards[0]["error"]
    else:
        assert len(records) == 4 and len(outcome) == 4
        assert error.startswith("MessageError: message d.jsonl:4: field BALANCE")


@pytest.mark.parametrize("batch", [3, 256])
def test_a_fatal_error_met_ahead_stops_at_its_message(tmp_path, batch):
    """A change of message-id width (never discardable) found while parsing ahead: the messages
    before it are written, as one by one."""
    ids = [f"ID:{i}" for i in range(1, 24)]  # ID:9 → ID:10 changes the width
    one = run(tmp_path / "one", "discard", None, ids)
    many = run(tmp_path / "two", "discard", batch, ids)
    assert many == one
    records, _, outcome, _, error = one
    assert error.startswith("IdWidthError") and len(outcome) == 9 and len(records) == 8
