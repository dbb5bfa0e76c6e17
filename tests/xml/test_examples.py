"""examples/xml: the documented rule sets really parse their documents (properties.md §15.4)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from gendef.build import build_definitions
from parsers.base import build_parser
from parsers.model import MISSING, TX_BEGIN, TX_END, TX_WHOLE, Message
from parsers.xml import XmlParser
from props.loader import load_settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "xml"
TS_2010 = 1265364681000000  # 2010-02-05 10:11:21 UTC


def load(monkeypatch, prop: str):
    monkeypatch.chdir(EXAMPLES)  # example paths are relative to the working directory
    settings = load_settings(f"dirprm/{prop}")
    parser = build_parser(settings, build_definitions(settings))
    assert isinstance(parser, XmlParser)
    return parser


def dump(name: str) -> list[Message]:
    lines = (EXAMPLES / "messages" / name).read_text().splitlines()
    return [Message(e["id"], e.get("headers", {}), e["body"]) for e in map(json.loads, lines)]


def test_static_and_dynamic_documents_give_the_same_insert(monkeypatch):
    parser = load(monkeypatch, "mytable.properties")
    results = []
    for message in dump("mytable.jsonl"):
        [op] = parser.parse(message)
        results.append((op.table.name, op.optype, op.timestamp, op.after, op.before))
    expected = ("MY.TABLE", "I", TS_2010, ["keyval", "col1val"], None)
    assert results == [expected, expected]
    # the same documents as plain files, and through a pickled parser (Spark tasks)
    clone = pickle.loads(pickle.dumps(parser))
    for name in ("dynamic.xml", "static.xml"):
        body = (EXAMPLES / "messages" / name).read_text()
        [op] = clone.parse(Message(name, {}, body))
        assert (op.table.name, op.optype, op.timestamp, op.after) == expected[:4]


def test_orders_feed(monkeypatch):
    parser = load(monkeypatch, "orders.properties")
    first, second = (parser.parse(m) for m in dump("orders.jsonl"))
    rows = [(op.table.name, op.optype, op.txid, op.txind, op.txowner, op.txname) for op in first]
    assert rows == [
        ("SALES.CUSTOMER", "I", "T1001", TX_BEGIN, "shop", "orders-feed"),
        ("SALES.ORDERS", "I", "T1001", TX_END, "shop", "orders-feed"),
        ("SALES.ORDERS", "U", "T1002", TX_WHOLE, "billing", "orders-feed"),
    ]
    cust, order, update = first
    assert cust.timestamp == 1709288130123456
    assert cust.after == [1002, "ACME Corp & Sons", None, "2024-03-01:10:15:30"]
    assert order.after == [5001, 1002, 12050, "N", "2024-03-01:10:15:30.123456"]
    assert update.before == [5001, MISSING, MISSING, "N", MISSING]
    assert update.after == [5001, MISSING, 9995, "S", MISSING]
    cust_update, delete = second
    assert [op.txind for op in second] == [None, None] and cust_update.txid == "T1003"
    assert cust_update.before == [1002, MISSING, None, MISSING]
    assert cust_update.after == [1002, MISSING, "Boston", MISSING]
    assert delete.optype == "D" and delete.after is None
    assert delete.before == [5001, MISSING, MISSING, "S", MISSING]


@pytest.mark.parametrize("name", ["mytable", "orders"])
def test_example_properties_use_their_spool_directory(monkeypatch, name):
    monkeypatch.chdir(EXAMPLES)
    settings = load_settings(f"dirprm/{name}.properties")
    assert settings.jms.spool_dir == f"dirspool/{name}"
