"""Cobrix conformance: every case of testdata/cobrix through msgcap's copybook compiler and
decoders, compared field by field with the rows Cobrix produced (testdata/cobrix/README.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import cobrix_harness as h

from gendef.copybook import compile_copybook_file, layout_listing

VARIANTS = h.all_variants() if (h.CORPUS / "index.json").is_file() else []


@pytest.fixture(autouse=True)
def _corpus() -> None:
    h.require_corpus()


@pytest.mark.parametrize(("case", "variant"), VARIANTS, ids=[f"{c}/{v}" for c, v in VARIANTS])
def test_variant_matches_expected_rows(case: str, variant: str) -> None:
    problems = h.check_variant(*h.variant_of(case, variant))
    assert not problems, f"{case}/{variant}:\n" + "\n".join(problems)


def test_every_indexed_variant_is_run() -> None:
    index = json.loads((h.CORPUS / "index.json").read_text())
    listed = {(c["id"], v[0]) for c in index["cases"] for v in c["variants"]}
    assert listed == set(VARIANTS)
    assert len(VARIANTS) == 85


LAYOUTS = [
    ("ebcdic-test6-type-variety", "default", "test6_layout.txt"),
    ("ebcdic-test16-fixed-multisegment", "default", "test16_layout.txt"),
    ("ebcdic-test7-fillers", "test7", "test7_layout.txt"),
    ("ebcdic-test7-fillers", "test7a", "test7a_layout.txt"),
    ("ebcdic-test7-fillers", "test7b", "test7b_layout.txt"),
    ("ebcdic-test7-fillers", "test7c", "test7c_layout.txt"),
    ("ebcdic-test7-fillers", "test7d", "test7d_layout.txt"),
]


@pytest.mark.parametrize(("case", "variant", "layout"), LAYOUTS,
                         ids=[f"{c}/{f}" for c, _, f in LAYOUTS])
def test_layout_listing_matches_cobrix(case: str, variant: str, layout: str) -> None:
    case_dir, v = h.variant_of(case, variant)
    cb = h.load_copybook(case_dir, v)
    reader = h.Reader(cb, h.parse_options(v["options"], v))
    assert layout_listing(cb, names=reader.layout_name) == (case_dir / layout).read_text()


def test_layout_listing_default_names() -> None:
    case_dir = h.CORPUS / "ebcdic-test6-type-variety"
    cb = compile_copybook_file(case_dir / "test6_copybook.cob")
    assert layout_listing(cb) == (case_dir / "test6_layout.txt").read_text()
    assert cb.length == 1493


def test_layout_listing_legacy_root_form() -> None:
    case_dir = h.CORPUS / "ebcdic-test19-display-numbers"
    cb = compile_copybook_file(case_dir / "test19_display_num.cob")
    assert layout_listing(cb, legacy_root=True) == (case_dir / "test19_layout.txt").read_text()
