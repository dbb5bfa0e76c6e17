"""The plan contract: every parser pickles as its plan, and unpickling needs none of the files the
properties name (nor the properties file, nor the working directory the driver had).

Each example is copied to a directory whose properties name their copybook / DEFGEN files by
relative path; the parser is built there, pickled, then the copy is deleted and the test moves to
another directory before unpickling, as a Spark executor on another machine would.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest

from gendef.build import build_definitions
from msgcap import dumps
from parsers.base import build_parser
from props.settings import load_settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CASES = [
    # example dir, properties, messages (dump files, relative to the example dir)
    ("delimited", "dirprm/jmsvam.properties", ["messages.jsonl"]),
    ("xml", "dirprm/orders.properties", ["messages/orders.jsonl"]),
    ("xml", "dirprm/mytable.properties", ["messages/mytable.jsonl"]),
    ("fixed/copybook", "dirprm/jmsvam.properties", ["messages.jsonl"]),
    ("fixed/sourcedefs", "dirprm/jmsvam.properties", ["messages"]),
]


def _ops(parser, messages) -> list:
    out = []
    for message in messages:
        out.append([(op.table.name, op.optype, op.seqid, op.txid, op.txind, op.before, op.after)
                    for op in parser.parse(message)])
    return out


@pytest.mark.parametrize("example, prop, inputs", CASES,
                         ids=[f"{c[0]}:{Path(c[1]).stem}" for c in CASES])
def test_unpickled_parser_needs_no_file(tmp_path, monkeypatch, example, prop, inputs):
    work = tmp_path / "driver"
    shutil.copytree(EXAMPLES / example, work)
    monkeypatch.chdir(work)
    settings = load_settings(prop)
    parser = build_parser(settings, build_definitions(settings))
    messages = list(dumps.read_messages(dumps.expand_inputs(inputs)))
    assert messages
    expected = _ops(parser, messages)
    data = pickle.dumps(parser)
    assert pickle.loads(data).plan == parser.plan  # the plan is a value

    elsewhere = tmp_path / "executor"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    shutil.rmtree(work)  # properties, copybook, DEFGEN files: all gone
    clone = pickle.loads(data)
    assert type(clone) is type(parser) and clone is not parser
    # *ts timestamps are the time of parsing: compare all else
    assert _ops(clone, messages) == expected
    assert os.listdir(elsewhere) == []


def test_plan_holds_rule_sources_not_compiled_xpath(tmp_path, monkeypatch):
    """lxml XPath objects do not pickle: the XML plan keeps the expressions' text."""
    shutil.copytree(EXAMPLES / "xml", tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    settings = load_settings("dirprm/orders.properties")
    parser = build_parser(settings, build_definitions(settings))
    rules = json.dumps([str(r.match) for r in parser.plan.xml.rules])
    assert "/o:batch/o:tx" in rules
    pickle.dumps(parser.plan)
