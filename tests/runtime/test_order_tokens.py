"""Order a downstream can check (issue 36): the partition (``--partition``, ``${PARTITION}``), the message
group and its sequence (JMSXGroupID, JMSXGroupSeq) as user tokens on every record of a message,
by the compiled path and the general path alike, shown by ``msgcap dump --json``, and
``msgcap dump --check-order`` finding groups (and keys) that went backwards, skipped or were
captured into two trails."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gendef.model import Table, varchar_column
from msgcap.cli import main
from msgcap.commands.replay import Progress, replay_messages
from msgcap.pipeline import build_pipeline
from msgcap.trail.encoder import TrailEncoder, group_pairs
from msgcap.trail.reader import TrailReader, sequence_files
from msgcap.trail.records import IOTYPE_UPDATE, TrailRecord, TrailTransaction
from msgcap.trail.writer import TrailWriter
from parsers.model import Message
from props.errors import MessageError
from props.loader import settings_from_text

REPO = Path(__file__).resolve().parents[2]
PROPS = f"""\
trail.path=WORK/dirdat/TRAIL
parser.type=delim
delim.sourcedefs={REPO}/examples/delimited/dirdef/sales.def
delim.header=optype,schemaandtable,timestamp,txind,id
delim.txid=*txid
delim.nullindicator=NULL
"""
Spec = tuple[dict[str, str], str]  # headers, body


def line(seq: int, txind: str = "W", cust: int | None = None, optype: str = "I",
         second: int = 30) -> str:
    """A SALES.CUSTOMER change; ``seq`` is the id column (the seqid), ``cust`` the key."""
    cust = seq if cust is None else cust
    return (f"{optype},SALES.CUSTOMER,2024-03-01 10:15:{second:02d}.000000,{txind},{seq:010d},"
            f"{cust},Customer {cust},City {cust},2024-03-01 10:15:30\n")


def grouped(group: str, seq: int | None = None) -> dict[str, str]:
    return {"JMSXGroupID": group} | ({"JMSXGroupSeq": str(seq)} if seq is not None else {})


def replay(work: Path, messages: list[Spec], *, trail: str = "sa", partition: int | None = None,
           compiled: bool = True) -> str:
    """Replay ``messages`` into ``work/dirdat/<trail>`` (``partition``: a partitioned feed's,
    its trail and extract named by ``${PARTITION}``) as ``msgcap replay`` does (``compiled``)
    or message by message by the general path; the trail's prefix."""
    text = PROPS.replace("WORK", str(work)).replace("TRAIL", trail)
    if partition is not None:
        text = (text.replace("/dirdat/", "/dirdat${PARTITION}/")
                + "trail.extract=P${PARTITION}\njms.url=dir:dirspool${PARTITION}\n")
    config = settings_from_text(text, str(work / "test.properties"), env={}, partition=partition)
    writer = TrailWriter(config.trail.path, sync="none", partition=config.partition)
    pipeline = build_pipeline(config, writer, writer.open())
    pipeline.compiled = compiled
    inputs = [Message(f"m{n}", dict(h), b, None, f"d:{n + 1}")
              for n, (h, b) in enumerate(messages)]
    try:
        if compiled:
            replay_messages(pipeline, inputs, Progress(io.StringIO(), -1))
        else:
            for _ in pipeline.process_many(inputs):
                pass
            pipeline.finish()
    finally:
        writer.close()
    return config.trail.path


def read(prefix: str) -> TrailReader:
    return TrailReader([path for _, path in sequence_files(prefix, 9)])


def user_tokens(prefix: str) -> list[dict[str, str]]:
    return [{k: v.decode() for k, v in rec.user_tokens.items()} for rec in read(prefix)]


MIXED: list[Spec] = [
    (grouped("g-a", 1), line(1)),
    (grouped("g-a", 2), line(2, "B") + line(2, "E", cust=102)),  # one message, two records
    ({}, line(3)),
    (grouped("g-b", 0), line(4)),  # 0: JMS's "no sequence number"
    (grouped("g-c", 1), line(5, "B")),  # one transaction over two messages
    (grouped("g-c", 2), line(6, "E")),
    (grouped("", 3), line(7)),  # an empty group is none
]


@pytest.mark.parametrize("compiled", [True, False])
def test_every_record_carries_partition_group_and_sequence(tmp_path, compiled) -> None:
    prefix = replay(tmp_path, MIXED, partition=3, compiled=compiled)
    part = {"MSGCAP_PARTITION": "3"}
    assert user_tokens(prefix) == [
        part | {"JMSXGroupID": "g-a", "JMSXGroupSeq": "1"},
        part | {"JMSXGroupID": "g-a", "JMSXGroupSeq": "2"},
        part | {"JMSXGroupID": "g-a", "JMSXGroupSeq": "2"},
        part,
        part | {"JMSXGroupID": "g-b"},
        part | {"JMSXGroupID": "g-c", "JMSXGroupSeq": "1"},
        part | {"JMSXGroupID": "g-c", "JMSXGroupSeq": "2"},
        part]


def test_compiled_and_general_paths_write_the_same_bytes(tmp_path) -> None:
    def records(path: str) -> list[bytes]:
        out = []
        for rec in read(path):
            with open(rec.file, "rb") as fh:
                fh.seek(rec.rba)
                out.append(fh.read(rec.length))
        return out

    fast = replay(tmp_path / "a", MIXED, partition=0)
    slow = replay(tmp_path / "b", MIXED, partition=0, compiled=False)
    assert records(fast) == records(slow)
    plain = replay(tmp_path / "c", [({}, line(n)) for n in (1, 2)] + [
        ({}, line(3, "B") + line(3, "E", cust=4))])
    assert user_tokens(plain) == [{}] * 4  # no U token: the trail as before


def test_dump_json_shows_the_tokens(tmp_path, capsys) -> None:
    prefix = replay(tmp_path, MIXED[:1], partition=12)
    assert main(["dump", "--json", prefix]) == 0
    record = [json.loads(x) for x in capsys.readouterr().out.splitlines()][-1]
    assert record["tokens"] == {"TRANID": "1", "VAMSEQID": "0000000001",
                                "MSGCAP_PARTITION": "12", "JMSXGroupID": "g-a",
                                "JMSXGroupSeq": "1"}


def test_a_group_that_cannot_be_written_is_a_message_error() -> None:
    with pytest.raises(MessageError, match="NUL"):
        group_pairs("g\x00a", "1")
    enc = TrailEncoder()
    with pytest.raises(MessageError, match="too long"):
        enc.tail(b"1", "0001", b"", "g" * 70_000, "1")


# -- msgcap dump --check-order -------------------------------------------------------------------

def check(capsys, *args: str) -> tuple[int, list[str]]:
    code = main(["dump", "--check-order", *args])
    return code, capsys.readouterr().out.splitlines()


def test_groups_in_order_pass(tmp_path, capsys) -> None:
    prefix = replay(tmp_path, [
        *MIXED,
        (grouped("g-a", 3), line(8)),
        (grouped("g-a", -1), line(9)),  # closes the group; it starts again at 1
        (grouped("g-a", 1), line(10)),
        (grouped("g-d", 5), line(11)),  # a trail may start in the middle of a group
    ])
    code, out = check(capsys, prefix)
    assert out == ["order check: 12 records, 4 message groups, 1 trails: 0 findings"]
    assert code == 0


def test_a_group_that_went_backwards_or_skipped_is_reported(tmp_path, capsys) -> None:
    prefix = replay(tmp_path, [(grouped("g-a", s), line(n)) for n, s in
                               enumerate((1, 2, 4, 5, 5, 3, 4), 1)])
    code, out = check(capsys, prefix)
    file = f"{prefix}000000000"
    assert [x.split(" at ")[0] for x in out[:-1]] == [
        f"{prefix}: group 'g-a' skipped 3 (from 2 to 4)",
        f"{prefix}: group 'g-a' went backwards from 5 to 5",
        f"{prefix}: group 'g-a' went backwards from 5 to 3"]
    assert all(f"at {file} RBA " in x for x in out[:-1])
    assert out[-1] == "order check: 7 records, 1 message groups, 1 trails: 3 findings"
    assert code == 2


def test_a_group_in_two_trails_is_reported_once(tmp_path, capsys) -> None:
    one = replay(tmp_path, [(grouped("g-a", 1), line(1)), (grouped("g-b", 1), line(2))])
    two = replay(tmp_path, [(grouped("g-a", 2), line(3)), (grouped("g-a", 3), line(4))],
                 trail="sb")
    code, out = check(capsys, one, f"{two}000000000")
    assert len(out) == 2 and out[0].startswith(f"{two}: group 'g-a' is also in trail {one} ")
    assert out[1] == "order check: 4 records, 2 message groups, 2 trails: 1 findings"
    assert code == 2


def test_findings_are_bounded_and_counted(tmp_path, capsys) -> None:
    prefix = replay(tmp_path, [(grouped("g", 1 + 2 * n), line(n + 1)) for n in range(160)])
    code, out = check(capsys, prefix)
    assert len(out) == 101 and code == 2
    assert out[-1] == ("order check: 160 records, 1 message groups, 1 trails: 159 findings "
                       "(59 more not shown)")


def test_keys_in_two_trails_or_back_in_time_with_key(tmp_path, capsys) -> None:
    defs = str(REPO / "examples" / "delimited" / "dirdef" / "sales.def")
    one = replay(tmp_path, [({}, line(1, cust=7, second=40)),
                            ({}, line(2, cust=7, optype="U", second=35)),
                            ({}, line(3, cust=8))])
    two = replay(tmp_path, [({}, line(4, cust=8))], trail="sb")
    code, out = check(capsys, "--key", "--defs", defs, one, two)
    assert len(out) == 3 and code == 2
    assert out[0].startswith(f"{one}: SALES.CUSTOMER key CUST_ID=7 went backwards in time at "
                             f"{one}000000000 RBA ")
    assert out[1].startswith(f"{two}: SALES.CUSTOMER key CUST_ID=8 is also in trail {one} ")
    assert out[2] == "order check: 4 records, 0 message groups, 2 trails: 2 findings"
    assert main(["dump", "--check-order", "--key", one]) == 2  # without --defs
    assert "--key needs --check-order and --defs" in capsys.readouterr().err
    assert main(["dump", "--check-order", "--json", one]) == 2
    assert "--json and --count do not apply" in capsys.readouterr().err


def test_records_of_one_message_count_once(tmp_path, capsys) -> None:
    """A before image and its after image, and a message's further operations, carry their
    message's number again: not a finding; the same number on the next message is."""
    table = Table.build("S.T", [varchar_column("K", 4, key=True), varchar_column("V", 8)])
    writer = TrailWriter(str(tmp_path / "aa"), sync="none")
    writer.open()

    def rec(ba: str, pos: int, seqid: str, seq: str) -> TrailRecord:
        return TrailRecord(table, IOTYPE_UPDATE, ba, 0, seqid, pos, ["k", "v"], group="g",
                           group_seq=seq)

    writer.write_transaction(TrailTransaction("1", [rec("B", 0, "1", "1"), rec("A", 0, "1", "1"),
                                                    rec("A", 1, "1", "1")]))
    writer.write_transaction(TrailTransaction("2", [rec("A", 0, "2", "2")]))
    writer.write_transaction(TrailTransaction("3", [rec("A", 0, "3", "2")]))  # again 2
    writer.close()
    code, out = check(capsys, str(tmp_path / "aa"))
    assert code == 2 and len(out) == 2
    assert out[0].startswith(f"{tmp_path}/aa: group 'g' went backwards from 2 to 2 at ")
