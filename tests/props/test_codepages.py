"""``fixed.encoding`` code pages: every EBCDIC page Cobrix offers, msgcap's own tables, checked
against Python's codecs and the ``ebcdic`` package, with no codec registered anywhere."""

from __future__ import annotations

import codecs
import importlib
import pickle
import subprocess
import sys

import pytest

from props.codepages import (
    CORRECTIONS,
    EBCDIC_PAGES,
    FROM_PACKAGE,
    STDLIB_EBCDIC,
    UNDEFINED,
    canonical_name,
    code_page,
)
from props.errors import PropertyError
from props.loader import settings_from_text

COBRIX_PAGES = ("cp037", "cp273", "cp277", "cp278", "cp280", "cp284", "cp285", "cp297", "cp500",
                "cp838", "cp870", "cp875", "cp1025", "cp1047", *(f"cp{n}" for n in range(1140, 1150)),
                "common")
# Characters a page holds twice decode from both bytes and encode to the first: IBM-838 has five
# Thai characters twice, Python's cp875 maps its unassigned bytes to SUB (as 0x3F is).
DUPLICATES = {"cp838": {0xED: 0x51, 0xEE: 0xCA, 0xEF: 0xE1, 0xFD: 0xFA, 0xFE: 0xFB},
              "cp875": {b: 0x3F for b in (0xDC, 0xE1, 0xEC, 0xED, 0xFC, 0xFD)}}


def test_every_cobrix_page_is_offered():
    assert set(COBRIX_PAGES) == set(EBCDIC_PAGES)


@pytest.mark.parametrize("name", COBRIX_PAGES)
def test_table_round_trips(name):
    page = code_page(name)
    assert page.name == name and page.ebcdic
    defined = bytes(b for b in range(256) if page.table[b] != UNDEFINED)
    text = page.decode(defined)[0]
    assert len(text) == len(defined)
    duplicates = DUPLICATES.get(name, {})
    expected = bytes(duplicates.get(b, b) for b in defined)
    assert page.encode(text)[0] == expected
    assert page.decode(b"\xf0\xf1\xf9\x40\xc1")[0] == "019 A"  # digits, space, A everywhere
    if name == "common":
        assert len(defined) == len(set(defined)) == 97
    else:
        assert defined == bytes(range(256))


@pytest.mark.parametrize("name", STDLIB_EBCDIC)
def test_pages_python_has_are_python_tables(name):
    every = bytes(range(256))
    assert code_page(name).decode(every)[0] == every.decode(name)


@pytest.mark.parametrize("name", FROM_PACKAGE)
def test_generated_tables_match_the_ebcdic_package_with_nel_at_0x15(name):
    package = importlib.import_module(f"ebcdic.{name}").decoding_table
    ours = code_page(name).table
    differences = {b: ours[b] for b in range(256) if ours[b] != package[b]}
    assert differences == CORRECTIONS[name] == {0x15: "\x85"}
    assert package[0x15] == package[0x25] == "\n"  # why the package's table cannot round-trip


def test_cp1047_keeps_nel_at_0x15_and_lf_at_0x25():
    """The NL/LF choice (docs/fixed-width.md): IBM's CDRA table, as cp037 and Java have it; the
    ``ebcdic`` package swaps the two for cp1047."""
    ours = code_page("cp1047").table
    package = importlib.import_module("ebcdic.cp1047").decoding_table
    assert (ours[0x15], ours[0x25]) == ("\x85", "\n")
    assert {b for b in range(256) if ours[b] != package[b]} == {0x15, 0x25}
    assert ours[0x15] == package[0x25] and ours[0x25] == package[0x15]


def test_common_is_cp037_restricted_to_cobrix_invariant_bytes():
    common, cp037 = code_page("common").table, code_page("cp037").table
    assert all(common[b] in (UNDEFINED, cp037[b]) for b in range(256))
    with pytest.raises(UnicodeDecodeError):
        code_page("common").decode(b"\xc1\x4a")  # cp037's ¢ is not invariant


@pytest.mark.parametrize(("given", "canonical"), [
    ("IBM-1047", "cp1047"), ("ibm1047", "cp1047"), ("CP037", "cp037"), ("cp01140", "cp1140"),
    ("IBM037", "cp037"), ("CCSID 273", "cp273"), ("Common", "common"), ("latin-1", "latin-1")])
def test_names(given, canonical):
    assert canonical_name(given) == canonical


@pytest.mark.parametrize("name", ["latin-1", "ascii", "cp1252", "ebcdic-cp-us"])
def test_other_single_byte_codecs_come_from_the_standard_library(name):
    page = code_page(name)
    data = b"\xc1\xc2" if name == "ebcdic-cp-us" else b"AB"
    assert page.decode(data)[0] == "AB"
    assert page.ebcdic == (name == "ebcdic-cp-us")


def test_pages_pickle_as_their_name():
    page = code_page("cp277")
    assert pickle.loads(pickle.dumps(page)) is page


@pytest.mark.parametrize(("value", "reason"), [
    ("utf-8", "'utf-8' is not a single-byte character set"),
    ("utf-16", "'utf-16' is not a single-byte character set"),
    ("cp999", "unknown encoding 'cp999'"),
    ("cp290", "unknown encoding 'cp290'")])  # in the ebcdic package, not offered by msgcap
def test_refused_encodings_are_property_errors(value, reason):
    with pytest.raises(PropertyError, match=f"fixed.encoding: {reason}"):
        settings_from_text("parser.type=fixed\nfixed.schematype=copybook\nfixed.copybook=c\n"
                           f"fixed.header=H\nfixed.encoding={value}\n", "p.properties", env={})


VALIDATE = """
import sys
{first}
from props.loader import settings_from_text
from parsers.decoders import lookup_codec
s = settings_from_text("parser.type=fixed\\nfixed.schematype=copybook\\nfixed.copybook=c\\n"
                       "fixed.header=H\\nfixed.encoding=ibm1047\\n", "p", env={{}})
print(s.fixed.encoding, repr(lookup_codec(s.fixed.encoding).decode(b"\\x15\\x25")[0]))
import codecs
try:
    codecs.lookup("cp1047")
    print("registered")
except LookupError:
    print("not registered")
"""


@pytest.mark.parametrize("first", ["", "import ebcdic", "import parsers.decoders"])
def test_validation_does_not_depend_on_import_order(first):
    out = subprocess.run([sys.executable, "-c", VALIDATE.format(first=first)], check=True,
                         capture_output=True, text=True).stdout.split("\n")
    assert out[0] == "cp1047 '\\x85\\n'"
    assert out[1] == ("registered" if first == "import ebcdic" else "not registered")


def test_no_codec_is_registered_by_msgcap():
    import parsers.decoders
    import parsers.fixed  # noqa: F401

    for name in ("cp1047", "ibm1047", "cp277", "common"):
        try:
            info = codecs.lookup(name)
        except LookupError:
            continue
        assert info.encode.__module__.startswith("ebcdic")  # only another test's import
