"""XML parser throughput beside hand-written lxml XPath on the same messages (no timed asserts).

    python bench/bench_xml.py [--messages N] [--seed S]

Replays N dynamic-style messages (``<transaction><operation><column>``; one transaction of one
to three operations on tables of 4, 7 and 10 columns, inserts and updates with before values)
and prints messages/s and ops/s on one core (CPU time of this process, so that other load on
the machine does not distort the figures) for:

* baseline: lxml parsing each message and extracting the same values (table, optype, timestamp,
  column name/index/before/after text) with hand-written compiled XPath — no conversion;
* XmlParser.parse alone (hardened parsing, rule walk, name/index checks, typed conversion);
* msgcap end to end: the replay pipeline (ids, parser, assembler, trail encoding and writing).

Target: end to end ≥ 40 % of the baseline's messages/s.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROPS = """\
parser.type=xml
xml.sourcedefs=dirdef/bench.def
xml.rules=dyntxrule
trail.path=dirdat/xb
jms.id=SEQNO
dyntxrule.type=tx
dyntxrule.match=/transaction
dyntxrule.timestamp=@ts
dyntxrule.subrules=dynoprule
dynoprule.type=op
dynoprule.match=./operation
dynoprule.schemaandtable=@table
dynoprule.optype=@optype
dynoprule.subrules=dyncolrule
dyncolrule.type=col
dyncolrule.match=./column
dyncolrule.name=@name
dyncolrule.index=@index
dyncolrule.before.value=./beforevalue/text()
dyncolrule.before.isnull=./beforevalue/@isnull
dyncolrule.after.value=./aftervalue/text()
dyncolrule.after.isnull=./aftervalue/@isnull
"""

# (table, [(column, kind)]) with kinds v = VARCHAR(30), n = NUMBER(12,2), k = key NUMBER(10),
# d = DATETIME(19)
TABLES = [
    ("BENCH.SMALL", [("ID", "k"), ("NAME", "v"), ("AMOUNT", "n"), ("CREATED", "d")]),
    ("BENCH.MEDIUM", [("ID", "k"), ("NAME", "v"), ("CITY", "v"), ("AMOUNT", "n"),
                      ("QTY", "n"), ("NOTE", "v"), ("CREATED", "d")]),
    ("BENCH.WIDE", [("ID", "k"), ("C1", "v"), ("C2", "v"), ("C3", "v"), ("N1", "n"),
                    ("N2", "n"), ("N3", "n"), ("D1", "d"), ("D2", "d"), ("NOTE", "v")]),
]


def definitions():
    from gendef.model import (
        Definitions,
        Table,
        datetime_column,
        number_column,
        varchar_column,
    )

    def col(name: str, kind: str):
        if kind == "k":
            return number_column(name, 10, key=True)
        if kind == "n":
            return number_column(name, 12, 2)
        if kind == "d":
            return datetime_column(name, 19)
        return varchar_column(name, 30)
    return Definitions(tuple(Table.build(t, [col(n, k) for n, k in cols]) for t, cols in TABLES))


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")


def value(kind: str, rng: random.Random, i: int) -> str:
    if kind == "k":
        return str(i)
    if kind == "n":
        return f"{rng.randrange(1_000_000)}.{rng.randrange(100):02d}"
    if kind == "d":
        return f"2024-03-{rng.randrange(1, 29):02d} {rng.randrange(24):02d}:15:30"
    return f"text {rng.randrange(100_000)} & more"


def message_body(n: int, rng: random.Random) -> tuple[str, int]:
    """One dynamic-style document and its number of operations."""
    ops = []
    for k in range(rng.randint(1, 3)):
        table, cols = TABLES[rng.randrange(len(TABLES))]
        update = rng.random() < 0.3
        parts = []
        for index, (name, kind) in enumerate(cols):
            after = value(kind, rng, n * 3 + k)
            if update:
                before = after if kind == "k" else value(kind, rng, n * 3 + k)
                parts.append(f'<column name="{name.lower()}" index="{index}">'
                             f"<beforevalue>{escape(before)}</beforevalue>"
                             f"<aftervalue>{escape(after)}</aftervalue></column>")
            elif kind == "v" and rng.random() < 0.1:
                parts.append(f'<column name="{name.lower()}" index="{index}">'
                             '<aftervalue isnull="true"/></column>')
            elif kind == "v":
                parts.append(f'<column name="{name.lower()}" index="{index}">'
                             f"<aftervalue><![CDATA[{after}]]></aftervalue></column>")
            else:
                parts.append(f'<column name="{name.lower()}" index="{index}">'
                             f"<aftervalue>{after}</aftervalue></column>")
        optype = "U" if update else "I"
        ops.append(f'<operation table="{table}" optype="{optype}">{"".join(parts)}</operation>')
    body = (f'<transaction id="{n}" ts="2024-03-01:10:{n // 60 % 60:02d}:{n % 60:02d}">'
            + "".join(ops) + "</transaction>")
    return body, len(ops)


def baseline(bodies: list[str]) -> int:
    """lxml + hand-written compiled XPath extracting the same values, no conversion."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    x_ts = etree.XPath("/transaction/@ts")
    x_ops = etree.XPath("./operation")
    x_table, x_optype = etree.XPath("@table"), etree.XPath("@optype")
    x_cols = etree.XPath("./column")
    x_name, x_index = etree.XPath("@name"), etree.XPath("@index")
    x_before = etree.XPath("./beforevalue/text()")
    x_bnull = etree.XPath("./beforevalue/@isnull")
    x_after = etree.XPath("./aftervalue/text()")
    x_anull = etree.XPath("./aftervalue/@isnull")
    ops = 0
    for body in bodies:
        root = etree.fromstring(body.encode(), parser)
        ts = x_ts(root)[0]
        for op in x_ops(root):
            row = [ts, x_table(op)[0], x_optype(op)[0]]
            for col in x_cols(op):
                row.append((x_name(col)[0], x_index(col)[0], x_before(col), bool(x_bnull(col)),
                            x_after(col), bool(x_anull(col))))
            ops += 1
    return ops


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    n = args.messages

    from gendef.defgen import write_defs
    from msgcap.pipeline import build_pipeline
    from msgcap.trail.writer import TrailWriter
    from parsers.base import build_parser
    from parsers.model import Message
    from props.loader import load_settings

    rng = random.Random(args.seed)
    bodies, total_ops = [], 0
    for i in range(n):
        body, k = message_body(i, rng)
        bodies.append(body)
        total_ops += k
    size_mb = sum(len(b) for b in bodies) / 1e6
    print(f"{n} messages, {total_ops} operations, {size_mb:.1f} MB of XML "
          f"(python {sys.version.split()[0]}, one core)")

    t0 = time.process_time()
    assert baseline(bodies) == total_ops
    base_s = time.process_time() - t0

    with tempfile.TemporaryDirectory(prefix="bench-xml-") as work:
        cwd = os.getcwd()
        os.chdir(work)
        try:
            os.makedirs("dirprm")
            os.makedirs("dirdef")
            Path("dirprm/bench.properties").write_text(PROPS)
            defs = definitions()
            write_defs(defs, "dirdef/bench.def")
            settings = load_settings("dirprm/bench.properties")
            parser = build_parser(settings, defs)

            def messages():
                for i, body in enumerate(bodies):
                    yield Message(f"m{i}", {"SEQNO": f"{i + 1:012d}"}, body)

            t0 = time.process_time()
            ops = 0
            for message in messages():
                ops += len(parser.parse(message))
            parse_s = time.process_time() - t0
            assert ops == total_ops

            t0 = time.process_time()
            trail = settings.trail
            writer = TrailWriter(trail.path, seqlen=trail.seqlen, megabytes=trail.megabytes,
                                 byteorder=trail.byteorder, sync=trail.sync,
                                 extract=trail.extract)
            pipeline = build_pipeline(settings, writer, writer.open(), definitions=defs,
                                      parser=parser)
            for message in messages():
                pipeline.process(message)
            pipeline.finish()
            writer.flush_durable()
            writer.close()
            e2e_s = time.process_time() - t0
            assert pipeline.stats.total_operations == total_ops, pipeline.stats.summary()
            trail_mb = sum(os.path.getsize(os.path.join("dirdat", f))
                           for f in os.listdir("dirdat")) / 1e6
        finally:
            os.chdir(cwd)

    def line(label: str, seconds: float) -> None:
        print(f"  {label:<44} {seconds:7.2f} s CPU  {n / seconds:>9,.0f} msg/s  "
              f"{total_ops / seconds:>9,.0f} ops/s  {100 * base_s / seconds:5.1f} % of baseline")

    line("baseline: lxml + hand-written XPath (extract)", base_s)
    line("XmlParser.parse (parse only)", parse_s)
    line("msgcap end to end (parse + assemble + trail)", e2e_s)
    ratio = base_s / e2e_s
    print(f"  trail written: {trail_mb:.1f} MB; end to end = {100 * ratio:.1f} % of the baseline; "
          f"target 40 %: {'met' if ratio >= 0.4 else 'not met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
