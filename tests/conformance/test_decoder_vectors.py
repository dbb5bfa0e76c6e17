"""Cobrix's DISPLAY-number decoder vectors (testdata/cobrix/decoders) against msgcap's zoned
number parser: sign, point, overpunch (strict, relaxed), scale and P scaling, null detection."""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import cobrix_harness as h

from parsers.decoders import display_value, lookup_codec, parse_display, zoned_text_table

DIR = h.CORPUS / "decoders"


def _vectors() -> list[tuple[str, dict]]:
    out = []
    for name in ("ascii_numbers.json", "ebcdic_numbers.json"):
        if (DIR / name).exists():
            for v in json.loads((DIR / name).read_text()):
                out.append((name, v))
    return out


VECTORS = _vectors()
TABLES = {"ascii_numbers.json": zoned_text_table(lookup_codec("ascii")),
          "ebcdic_numbers.json": zoned_text_table(lookup_codec("cp037"))}


def _decode(fn: str, text: str, p: dict):
    """The Cobrix decoder functions, expressed with msgcap's parser (None = Cobrix null)."""
    if p["improvedNullDetection"] and not text.strip(" \x00"):
        return None
    try:
        sign, digits, point = parse_display(
            text, unsigned=p["isUnsigned"], allow_overpunch=p["allowSignOverpunch"],
            relaxed=p["relaxedOverpunch"])
        if fn.endswith(("Int", "Long")):
            if point is not None:
                return None
            value = int(digits) * (-1 if sign < 0 else 1)
            limit = 2**31 if fn.endswith("Int") else 2**63
            return value if -limit <= value < limit else None
        if fn.endswith("BigNumber"):
            return display_value(sign, digits, point, p["scale"], p["scaleFactor"])
        if fn.endswith("BigDecimal"):
            return display_value(sign, digits, point, 0, 0)
        body = digits if point is None else f"{digits[:point]}.{digits[point:]}"
        return ("-" if sign < 0 else "+" if sign > 0 else "") + body
    except ValueError:
        return None


def test_vector_count() -> None:
    h.require_corpus()
    assert len(VECTORS) == 158


@pytest.mark.parametrize(("file", "vector"), VECTORS,
                         ids=[f"{f[:5]}-{v['spec_line']}-{v['function']}" for f, v in VECTORS])
def test_decoder_vector(file: str, vector: dict) -> None:
    table = TABLES[file]
    text = "".join(table[b] for b in bytes.fromhex(vector["input_hex"]))
    got = _decode(vector["function"], text, vector["params"])
    expected = vector["expected"]
    if expected is None or vector["expected_type"] in ("string", "int", "long"):
        assert got == expected
    else:
        assert got is not None and got == Decimal(expected)
