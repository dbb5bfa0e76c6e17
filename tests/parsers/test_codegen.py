"""Generated code (parsers.codegen): labelled, readable, and never hiding a bug.

A fallback of generated code catches only the exceptions it names; a bug inside it (here a
NameError or an AttributeError) must surface instead of silently taking the slow path.
"""

from __future__ import annotations

import traceback

import pytest

from gendef.model import Table, char_column, number_column, varchar_column
from msgcap.trail import columns
from msgcap.trail.encoder import TrailEncoder
from msgcap.trail.records import IOTYPE_INSERT, TrailRecord, TrailTransaction
from parsers.codegen import compile_function, generated_source
from parsers.fixed.records import CALL, Slot, record_image
from props.codepages import code_page

T = Table.build("S.GEN", [number_column("ID", 8, key=True), varchar_column("NAME", 20),
                          char_column("ST", 2)])


def test_a_traceback_shows_the_generated_line_and_its_label():
    source = "def f(x):\n    y = x + 1\n    return y / 0\n"
    f = compile_function(source, {}, "f", "test function for S.T")
    with pytest.raises(ZeroDivisionError) as info:
        f(1)
    text = "".join(traceback.format_exception(info.value))
    assert "<msgcap-generated test function for S.T #" in text
    assert "return y / 0" in text
    assert generated_source(f) == source


def test_generated_source_refuses_a_function_that_was_not_generated():
    with pytest.raises(ValueError, match="not a generated function"):
        generated_source(test_generated_source_refuses_a_function_that_was_not_generated)


def test_the_same_label_with_another_source_keeps_both_readable():
    a = compile_function("def f():\n    return 1\n", {}, "f", "same label")
    b = compile_function("def f():\n    return 2\n", {}, "f", "same label")
    assert generated_source(a) != generated_source(b)


@pytest.fixture
def buggy_inline(monkeypatch):
    """Generated trail encoders whose common-case code has a bug (an undefined name)."""
    real = columns.inline_columns

    def inline_with_a_bug(table, layout):
        inline = real(table, layout)
        inline.body += "\nnot_defined_anywhere"
        return inline
    monkeypatch.setattr(columns, "inline_columns", inline_with_a_bug)


def test_a_bug_in_the_generated_column_encoder_propagates(buggy_inline):
    with pytest.raises(NameError, match="not_defined_anywhere"):
        TrailEncoder().table(T).encode([1, "a", "WA"])


def test_a_bug_in_the_generated_record_encoder_propagates(buggy_inline):
    tx = TrailTransaction("1", [TrailRecord(T, IOTYPE_INSERT, "A", 0, "7", 0, [1, "a", "WA"])])
    enc = TrailEncoder()
    enc.table(T)  # built: the whole-record function runs first
    with pytest.raises(NameError, match="not_defined_anywhere") as info:
        enc.encode_transaction(tx, 1)
    assert "trail record encoder for S.GEN" in "".join(traceback.format_tb(info.tb))


def test_a_value_not_in_its_common_form_still_takes_the_general_path():
    enc = TrailEncoder().table(T)
    assert enc._fast([1, 5, "WA"]) is None  # a number for a VARCHAR: no encode()
    assert enc._fast([1, "a", "WAX"]) is None  # over the CHAR's length
    assert enc._fast([2**70, "a", "WA"]) is None  # out of the integer's range


def test_a_bug_in_a_converter_called_by_a_record_image_propagates():
    def broken(data):
        return data.no_such_method()
    slot = Slot("F", 0, 2, False, broken, broken, CALL, char_column("F", 2))
    image = record_image("S.GEN", (slot,), code_page("cp037"))
    with pytest.raises(AttributeError, match="no_such_method"):
        image(b"\xc1\xc2")
