"""The fixed-width plan: compiled once, picklable, file-free (the parser plan contract)."""

from __future__ import annotations

import os
import pickle

import pytest

from gendef.build import build_definitions
from gendef.copybook import compiler
from parsers.base import build_parser
from parsers.fixed import FixedParser, FixedPlan
from parsers.model import Message
from props.loader import settings_from_text

from .conftest import (
    RETAIL_CPY,
    RETAIL_MESSAGES,
    RETAIL_PROPS,
    TCUST_MESSAGES,
    TCUST_PROPS,
    TCUSTMER_DEF,
)


def test_one_compilation_per_run_shared_by_definitions_and_parser(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "retail.cpy").write_text(RETAIL_CPY)
    compiled = []
    real = compiler.compile_copybook

    def counting(text, *, file=None, trunc="std"):
        compiled.append(file)
        return real(text, file=file, trunc=trunc)
    monkeypatch.setattr(compiler, "compile_copybook", counting)
    settings = settings_from_text(RETAIL_PROPS, "t.properties", env={})
    definitions = build_definitions(settings)
    parser = build_parser(settings, definitions)
    assert compiled == ["retail.cpy"]
    assert parser.parse(Message("m", {}, RETAIL_MESSAGES[0]))[0].table.name == "RETAIL.CUSTOMER"
    build_parser(settings, build_definitions(settings))  # a new run compiles again
    assert compiled == ["retail.cpy", "retail.cpy"]


@pytest.mark.parametrize(("props", "files", "messages"), [
    (RETAIL_PROPS, {"retail.cpy": RETAIL_CPY}, RETAIL_MESSAGES),
    (TCUST_PROPS, {"tcustmer.def": TCUSTMER_DEF}, TCUST_MESSAGES)],
    ids=["copybook", "sourcedefs"])
def test_the_plan_pickles_without_its_files_or_directory(tmp_path, monkeypatch, props, files,
                                                          messages):
    work = tmp_path / "driver"
    work.mkdir()
    monkeypatch.chdir(work)
    for name, text in files.items():
        (work / name).write_text(text)
    settings = settings_from_text(props, "t.properties", env={})
    parser = build_parser(settings, build_definitions(settings))
    assert isinstance(parser.plan, FixedPlan)
    data = pickle.dumps(parser)
    expected = [parser.parse(Message(f"m{i}", {}, body))[0] for i, body in enumerate(messages)]
    for name in files:
        os.remove(work / name)
    elsewhere = tmp_path / "task"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    clone = pickle.loads(data)
    assert isinstance(clone, FixedParser) and clone.plan == parser.plan
    got = [clone.parse(Message(f"m{i}", {}, body))[0] for i, body in enumerate(messages)]
    assert [(o.table.name, o.optype, o.after, o.before) for o in got] == [
        (o.table.name, o.optype, o.after, o.before) for o in expected]
