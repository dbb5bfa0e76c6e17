"""The copybook compiler: source formats, clauses, sizes and offsets, layouts, definitions, errors."""

from __future__ import annotations

import pytest

from gendef.copybook import (
    COMP,
    COMP1,
    COMP2,
    COMP3,
    COMP5,
    DISPLAY,
    Odo,
    compile_copybook,
    compile_copybook_file,
    copybook_definitions,
    date_format_length,
    parse_picture,
)
from gendef.model import CHAR, DATETIME, NUMBER, VARCHAR
from props.errors import CopybookError

RETAIL = """\
       01  HEADER.
      * DATEFORMAT YYYY-MM-DD-HH.MI.SS.FFFFFF
           05  HDR-TIMESTAMP          PIC X(26).
           05  HDR-FUNCTION           PIC X.
           05  HDR-REC-ID             PIC X(8).
           05  HDR-SOURCE             PIC X(4).
       01  CUSTOMER.
      * KEY
           05  CUST-ID                PIC 9(8).
           05  CUST-NAME              PIC X(30).
           05  BALANCE                PIC 9(7)V99.
      * YYMMDD
           05  OPENED                 PIC 9(6).
       01  ORDERS.
      * KEY
           05  ORDER-ID               PIC 9(10).
           05  CUST-ID                PIC 9(8).
           05  AMOUNT                 PIC 9(9)V99.
           05  STATUS                 PIC X.
"""

# sourcedefs.md §8.6, fields 2–24 of every column line.
RETAIL_DEFS = {
    "RETAIL.CUSTOMER": (80, [
        ("HDR_SOURCE", "0 4 0 0 0 1 0 4 4 0 0 0 0 0 1 0 0 0 96 -1 0 0 0"),
        ("CUST_ID", "134 9 8 0 0 1 0 8 8 8 0 0 0 0 1 0 1 3 2 -1 0 0 0"),
        ("CUST_NAME", "0 30 20 0 0 1 0 30 30 0 0 0 0 0 1 0 0 0 96 -1 0 0 0"),
        ("BALANCE", "134 11 54 2 0 1 0 8 8 8 0 0 0 0 1 0 0 3 2 -1 0 0 0"),
        ("OPENED", "192 10 66 0 0 1 0 10 10 10 0 2 0 0 1 0 0 0 12 -1 0 0 0"),
    ]),
    "RETAIL.ORDERS": (48, [
        ("HDR_SOURCE", "0 4 0 0 0 1 0 4 4 0 0 0 0 0 1 0 0 0 96 -1 0 0 0"),
        ("ORDER_ID", "134 11 8 0 0 1 0 8 8 8 0 0 0 0 1 0 1 3 2 -1 0 0 0"),
        ("CUST_ID", "134 9 20 0 0 1 0 8 8 8 0 0 0 0 1 0 0 3 2 -1 0 0 0"),
        ("AMOUNT", "134 13 32 2 0 1 0 8 8 8 0 0 0 0 1 0 0 3 2 -1 0 0 0"),
        ("STATUS", "0 1 44 0 0 1 0 1 1 0 0 0 0 0 1 0 0 0 96 -1 0 0 0"),
    ]),
}


def fields(src: str, record: str | None = None):
    cb = compile_copybook(src)
    rec = cb.record(record) if record else cb.records[0]
    return {f.column: f for f in rec.fields}


def test_retail_example_definitions_match_spec() -> None:
    cb = compile_copybook(RETAIL, file="retail.cpy")
    defs = copybook_definitions(cb, schema="RETAIL", header="HEADER",
                                used_header_fields={"HDR-TIMESTAMP", "Hdr-Function", "HDR_REC_ID"})
    assert [t.name for t in defs] == list(RETAIL_DEFS)
    for table in defs:
        length, cols = RETAIL_DEFS[table.name]
        assert table.record_length == length
        assert [(c.name, " ".join(map(str, c.fields()))) for c in table.columns] == cols


def test_retail_layouts() -> None:
    cb = compile_copybook(RETAIL)
    assert [(r.name, r.length) for r in cb.records] == [
        ("HEADER", 39), ("CUSTOMER", 53), ("ORDERS", 30)]
    head = cb.record("header")
    assert head is not None
    ts = head.field("hdr_timestamp")
    assert ts is not None and ts.date_format == "YYYY-MM-DD-HH.MI.SS.FFFFFF"
    cust = cb.record("Customer")
    assert cust is not None
    assert [(f.column, f.offset, f.length, f.key) for f in cust.fields] == [
        ("CUST_ID", 0, 8, True), ("CUST_NAME", 8, 30, False), ("BALANCE", 38, 9, False),
        ("OPENED", 47, 6, False)]
    bal = cust.field("BALANCE")
    assert bal is not None and (bal.digits, bal.scale, bal.kind, bal.usage) == (
        9, 2, "numeric", DISPLAY)
    assert cust.field("OPENED").date_format == "YYMMDD"


def test_record_lookup_ignores_case_and_dash() -> None:
    cb = compile_copybook("       01  MY-REC.\n           05  A  PIC X.\n")
    assert cb.record("my_rec") is cb.record("MY-REC") is cb.records[0]
    assert cb.record("other") is None


def test_fixed_format_areas_are_ignored() -> None:
    src = (
        "000100 01  REC.                                                         IGNORED1\n"
        "000200* a comment line with PIC garbage (((\n"
        "000300/ page eject comment\n"
        "000400     05  A  PIC X(3).                                             IGNORED2\n"
        "000500     05  B  PIC 9(2).\n")
    f = fields(src)
    assert [(c, x.offset, x.length) for c, x in f.items()] == [("A", 0, 3), ("B", 3, 2)]


def test_free_format() -> None:
    src = "01 REC.\n  05 A PIC X(3). *> trailing comment\n  05 B PIC S9(3) COMP-3.\n*> end\n"
    f = fields(src)
    assert (f["A"].length, f["B"].length, f["B"].usage) == (3, 2, COMP3)


def test_usages_and_sizes() -> None:
    src = """\
       01  R.
           05  B1   PIC S9(4)   COMP.
           05  B2   PIC 9(9)    BINARY.
           05  B3   PIC S9(18)  COMP-4.
           05  B4   PIC 9(5)    COMP-5.
           05  B5   PIC 9(19)   COMPUTATIONAL.
           05  P1   PIC S9(7)V99 PACKED-DECIMAL.
           05  P2   PIC 9(4)    COMP-3.
           05  F1   COMP-1.
           05  F2   USAGE IS COMP-2.
           05  D1   PIC S9(5)   SIGN IS LEADING SEPARATE CHARACTER.
           05  D2   PIC 9(3)V9  SIGN TRAILING SEPARATE.
           05  D3   PIC S9(3)   SIGN TRAILING.
           05  D4   PIC 99.99.
           05  D5   PIC +9(4).
           05  D6   PIC Z(3)9-.
           05  A1   PIC A(4).
"""
    f = fields(src)
    sizes = {c: (x.length, x.usage) for c, x in f.items()}
    assert sizes == {
        "B1": (2, COMP), "B2": (4, COMP), "B3": (8, COMP), "B4": (4, COMP5), "B5": (9, COMP),
        "P1": (5, COMP3), "P2": (3, COMP3), "F1": (4, COMP1), "F2": (8, COMP2),
        "D1": (6, DISPLAY), "D2": (5, DISPLAY), "D3": (3, DISPLAY), "D4": (5, DISPLAY),
        "D5": (5, DISPLAY), "D6": (5, DISPLAY), "A1": (4, DISPLAY)}
    assert (f["D1"].sign_leading, f["D1"].sign_separate, f["D1"].signed) == (True, True, True)
    assert (f["D2"].sign_leading, f["D2"].sign_separate, f["D2"].signed) == (False, True, True)
    assert (f["D3"].sign_leading, f["D3"].sign_separate) == (False, False)
    assert f["D4"].explicit_point and f["D4"].scale == 2
    assert f["D5"].sign_leading and f["D5"].sign_separate
    assert f["F1"].kind == "float" and f["A1"].kind == "alnum"
    assert [x.offset for x in f.values()] == [0, 2, 6, 14, 18, 27, 32, 35, 39, 47, 53, 58,
                                               61, 66, 71, 76]


def test_group_usage_applies_to_items() -> None:
    f = fields("       01  R.\n           05  G COMP-3.\n"
               "               10  A PIC 9(3).\n               10  B PIC S9(5).\n")
    assert (f["A"].usage, f["A"].length, f["B"].length) == (COMP3, 2, 3)


@pytest.mark.parametrize(("pic", "kind", "digits", "scale", "factor", "length", "signed"), [
    ("X(10)", "alnum", 0, 0, 0, 10, False),
    ("XX", "alnum", 0, 0, 0, 2, False),
    ("A(3)X", "alnum", 0, 0, 0, 4, False),
    ("9(5)V99", "numeric", 7, 2, 0, 7, False),
    ("S9(3)V9(2)", "numeric", 5, 2, 0, 5, True),
    ("SV9(7)", "numeric", 7, 7, 0, 7, True),
    ("PPP9(5)", "numeric", 5, 5, -3, 5, False),
    ("S9(5)PPP", "numeric", 5, 0, 3, 5, True),
    ("9(6).99-", "numeric", 8, 2, 0, 10, True),
    ("Z(6)VZZ-", "numeric", 8, 2, 0, 9, True),
    ("+9(8)", "numeric", 8, 0, 0, 9, True),
])
def test_pictures(pic, kind, digits, scale, factor, length, signed) -> None:
    p = parse_picture(pic)
    assert (p.kind, p.digits, p.scale, p.scale_factor, p.display_length, p.signed) == (
        kind, digits, scale, factor, length, signed)


def test_p_scaling_scale_and_precision() -> None:
    left = parse_picture("SPPP9(5)")
    assert (left.precision, left.effective_scale) == (8, 8)
    right = parse_picture("9(5)PPP")
    assert (right.precision, right.effective_scale) == (8, 0)


def test_occurs_columns_and_odo() -> None:
    src = """\
       01  R.
           05  N          PIC 9.
           05  ITEM OCCURS 1 TO 3 TIMES DEPENDING ON N.
               10  CODE   PIC X(2).
               10  QTY    PIC 9(3).
           05  TAG        PIC X OCCURS 2.
           05  TAIL       PIC X.
"""
    rec = compile_copybook(src).records[0]
    assert rec.length == 1 + 3 * 5 + 2 + 1
    cols = [(f.column, f.offset) for f in rec.fields]
    assert cols == [("N", 0), ("CODE_1", 1), ("QTY_1", 3), ("CODE_2", 6), ("QTY_2", 8),
                    ("CODE_3", 11), ("QTY_3", 13), ("TAG_1", 16), ("TAG_2", 17), ("TAIL", 18)]
    qty3 = rec.field("QTY")  # first occurrence
    assert qty3 is not None and qty3.depending_on == (Odo("N", 1),)
    assert [f.depending_on for f in rec.fields if f.column == "QTY_3"] == [(Odo("N", 3),)]
    assert rec.item.children[1].occurs_min == 1 and rec.item.children[1].occurs == 3


def test_nested_occurs_names() -> None:
    src = ("       01  R.\n           05  G OCCURS 2.\n"
           "               10  H OCCURS 2.\n                   15  V PIC X.\n")
    assert [f.column for f in compile_copybook(src).records[0].fields] == [
        "V_1_1", "V_1_2", "V_2_1", "V_2_2"]


def test_redefines_layout_and_definitions() -> None:
    src = """\
       01  R.
           05  KIND       PIC X.
           05  BODY.
               10  NAME   PIC X(20).
           05  ALT REDEFINES BODY.
               10  NUM    PIC 9(4).
               10  REST   PIC X(30).
           05  LAST       PIC X.
"""
    cb = compile_copybook(src)
    rec = cb.records[0]
    assert rec.length == 1 + 34 + 1
    f = {x.column: x for x in rec.fields}
    assert f["NUM"].offset == f["NAME"].offset == 1
    assert f["LAST"].offset == 35
    assert f["NAME"].redefined and not f["NAME"].redefining
    assert f["NUM"].redefining
    table = copybook_definitions(cb, schema="S").get("S.R")
    assert [c.name for c in table.columns] == ["KIND", "NAME", "LAST"]


def test_misplaced_redefines_is_an_error() -> None:
    src = ("       01  R.\n           05  A PIC X.\n           05  B PIC X.\n"
           "           05  C REDEFINES A PIC X.\n")
    with pytest.raises(CopybookError) as e:
        compile_copybook(src, file="bad.cpy")
    assert (e.value.file, e.value.line, e.value.column, e.value.field) == ("bad.cpy", 4, 28, "C")
    assert str(e.value).startswith("bad.cpy:4:28: field C: REDEFINES A")


def test_fillers_levels_and_values() -> None:
    src = """\
       01  R.
           05  FILLER     PIC X(2).
           05  A          PIC X VALUE 'Y'.
               88  A-YES  VALUE 'Y'.
               88  A-NO   VALUES ARE 'N' 'n'.
           05  PIC X(3).
           05  B          PIC 9(3) VALUE ZERO.
           66  B-ALIAS RENAMES B.
       77  STANDALONE     PIC X(5).
"""
    cb = compile_copybook(src)
    rec = cb.records[0]
    assert [(f.column, f.offset, f.filler) for f in rec.fields] == [
        ("FILLER", 0, True), ("A", 2, False), ("FILLER", 3, True), ("B", 6, False)]
    assert len(cb.records) == 1
    table = copybook_definitions(cb, schema="S").get("S.R")
    assert [c.name for c in table.columns] == ["A", "B"]


def test_key_before_group_marks_all_items() -> None:
    src = ("       01  R.\n      * KEY\n           05  K.\n               10  K1 PIC X.\n"
           "               10  K2 PIC 9.\n           05  V PIC X.\n")
    f = fields(src)
    assert (f["K1"].key, f["K2"].key, f["V"].key) == (True, True, False)


def test_date_comments() -> None:
    src = """\
       01  R.
      * YYYYMMDD
           05  D1   PIC 9(8).
      * DATEFORMAT YYYY-MM-DD HH:MI:SS
           05  D2   PIC X(19).
      * DATEFORMAT YYYY-MM-DD-HH.MM.SS.FF
           05  D3   PIC X(22).
      * not a date comment
           05  D4   PIC X(8).
"""
    cb = compile_copybook(src)
    f = {x.column: x for x in cb.records[0].fields}
    assert (f["D1"].date_format, f["D2"].date_format, f["D4"].date_format) == (
        "YYYYMMDD", "YYYY-MM-DD HH:MI:SS", None)
    cols = {c.name: c for c in copybook_definitions(cb, schema="S").get("S.R").columns}
    assert [(cols[n].type_code, cols[n].external_length) for n in ("D1", "D2", "D3", "D4")] == [
        (DATETIME, 10), (DATETIME, 19), (DATETIME, 22), (CHAR, 8)]


@pytest.mark.parametrize(("fmt", "length"), [
    ("YYMMDD", 10), ("YYYY-MM-DD", 10), ("YYYY-MM-DD:HH:MI:SS", 19), ("HH:MM:SS", 19),
    ("YYYY-MM-DD-HH.MI.SS.FFFFFF", 26), ("YYYY-MM-DD HH:MI:SS.F3", 23)])
def test_date_format_length(fmt: str, length: int) -> None:
    assert date_format_length(fmt) == length


def test_number_mapping() -> None:
    src = """\
       01  R.
           05  N1   PIC S9(18).
           05  N2   PIC 9(20).
           05  N3   PIC S9(15)V9(5) COMP-3.
           05  N4   PIC 99.99.
           05  N5   PIC S9(4) COMP.
           05  F1   COMP-1.
           05  F2   COMP-2.
           05  N6   PIC PP99.
"""
    cols = {c.name: c for c in copybook_definitions(compile_copybook(src), schema="S")
            .get("S.R").columns}
    assert (cols["N1"].type_code, cols["N1"].scale) == (NUMBER, 0)
    assert (cols["N2"].type_code, cols["N2"].sub_type, cols["N2"].external_length) == (
        VARCHAR, 2, 21)
    assert (cols["N3"].type_code, cols["N3"].external_length) == (VARCHAR, 22)
    assert (cols["N4"].type_code, cols["N4"].scale, cols["N4"].external_length) == (
        NUMBER, 2, 8)
    assert cols["N5"].type_code == NUMBER
    assert (cols["F1"].type_code, cols["F1"].external_length) == (VARCHAR, 16)
    assert (cols["F2"].type_code, cols["F2"].external_length) == (VARCHAR, 24)
    assert cols["N6"].scale == 4


def test_repeated_names_get_parent_prefixes() -> None:
    src = """\
       01  R.
           05  BILL.
               10  CITY   PIC X(5).
               10  ZIP    PIC X(5).
           05  SHIP.
               10  CITY   PIC X(5).
           05  ZIP2       PIC X.
"""
    assert [f.column for f in compile_copybook(src).records[0].fields] == [
        "BILL_CITY", "ZIP", "SHIP_CITY", "ZIP2"]


def test_header_columns_lead_and_clash_with_record() -> None:
    src = ("       01  HDR.\n           05  OP  PIC X.\n           05  ID  PIC X(2).\n"
           "       01  T.\n           05  ID  PIC X(4).\n")
    table = copybook_definitions(compile_copybook(src), schema="S", header="HDR",
                                 used_header_fields={"op"}).get("S.T")
    assert [c.name for c in table.columns] == ["HDR_ID", "T_ID"]


def test_copybook_without_01_level() -> None:
    cb = compile_copybook("       05  A  PIC 9(3).\n       05  B  PIC X.\n")
    assert [(r.name, r.length) for r in cb.records] == [("RECORD", 4)]


def test_compile_file_and_missing_file(tmp_path) -> None:
    p = tmp_path / "x.cpy"
    p.write_text("       01  R.\n           05  A PIC X(2).\n")
    assert compile_copybook_file(p).records[0].length == 2
    with pytest.raises(CopybookError, match="cannot read copybook"):
        compile_copybook_file(tmp_path / "missing.cpy")


def test_odd_binary_sizes() -> None:
    f = fields("       01  R.\n           05  W  PIC S9(28) COMP.\n"
               "           05  X  PIC 9(37) BINARY.\n")
    assert (f["W"].length, f["X"].length) == (12, 16)


# -- errors: file:line:column, field and token --------------------------------------------------

@pytest.mark.parametrize(("src", "line", "token", "needle"), [
    ("       01  R.\n           05  A  PIC X(3) FOO.\n", 2, "FOO", "unexpected token 'FOO'"),
    ("       01  R.\n           05  A  PIC Q(3).\n", 2, "Q(3)", "invalid symbol 'Q'"),
    ("       01  R.\n           05  A  PIC X(3) 05 B PIC X.\n", 2, "05 B", "a '.' missing before it"),
    ("       01  R.\n           AB  A  PIC X.\n", 2, "AB", "expected a level number, found 'AB'"),
    ("       01  R.\n           05  A.\n", 2, "05", "elementary item without PIC"),
    ("       01  R.\n           05  A  PIC X.\n               10  B PIC X.\n", 3, "10",
     "cannot have subordinate items"),
    ("       01  R.\n           05  A  OCCURS 2 TO 1.\n", 2, "OCCURS", "maximum below minimum"),
    ("       01  R.\n           05  A  PIC X OCCURS 2 DEPENDING ON NOPE.\n", 2, None,
     "DEPENDING ON NOPE"),
    ("       01  R.\n           05  A  PIC X(2) COMP-3.\n", 2, "05", "needs a numeric PIC"),
    ("       01  R.\n           05  A  PIC 99.99 COMP.\n", 2, "99.99", "explicit decimal point"),
    ("       01  R.\n           05  A  PIC 9(3) SIGN MIDDLE.\n", 2, "MIDDLE",
     "LEADING or TRAILING"),
    ("       01  R.\n           05  A  PIC 'X.\n", 2, "'X", "unterminated literal"),
    ("       01  R.\n           55  A  PIC X.\n", 2, "55", "invalid level number 55"),
])
def test_syntax_errors_name_location(src: str, line: int, token: str | None,
                                     needle: str) -> None:
    with pytest.raises(CopybookError) as e:
        compile_copybook(src, file="t.cpy")
    err = e.value
    assert needle in str(err)
    assert (err.file, err.line) == ("t.cpy", line)
    if token is not None:
        column = src.splitlines()[line - 1].index(token) + 1
        assert err.column == column
        assert str(err).startswith(f"t.cpy:{line}:{column}: ")


# -- limits, checked as soon as read (a line must not make an unbounded layout) ------------------

@pytest.mark.parametrize(("src", "line", "token", "needle"), [
    ("       01  R.\n           05  E1 PIC X.\n           05  E2 PIC X OCCURS 99999999 TIMES.\n",
     3, "99999999", "field E2: OCCURS 99999999: more than 65,535 occurrences"),
    ("       01  R.\n           05  E2 PIC X OCCURS 1 TO 65536 DEPENDING ON N.\n", 2, "65536",
     "field E2: OCCURS TO 65536: more than 65,535 occurrences"),
    (("       01  R.\n           05  G OCCURS 300.\n               10  H OCCURS 300.\n"
      "                   15  V PIC X.\n"), 2, "05", "field G: 90,000 fields, more than the 65,536"),
    ("       01  R.\n           05  G OCCURS 65535.\n               10  V PIC X(300).\n", 2,
     "05", "field G: 19,660,500 bytes, more than the 16,777,216 a record may have"),
    ("       01  R.\n           05  A PIC X(20000000).\n", 2, "X(20000000)",
     "field A: PIC X(20000000): more than 16,777,216 positions"),
    ("       01  R.\n           05  N PIC S9(999999999)V99 COMP-3.\n", 2, "S9(999999999)V99",
     "field N: PIC S9(999999999)V99: more than 16,777,216 positions"),
    ("       01  R.\n           05  A PIC X(9000000).\n           05  B PIC X(9000000).\n", 1,
     "01", "field R: 18,000,000 bytes, more than the 16,777,216 a record may have"),
])
def test_limits_are_refused_at_once_with_location(src: str, line: int, token: str,
                                                  needle: str) -> None:
    with pytest.raises(CopybookError) as e:
        compile_copybook(src, file="t.cpy")
    column = src.splitlines()[line - 1].index(token) + 1
    assert str(e.value).startswith(f"t.cpy:{line}:{column}: {needle}")


def test_largest_allowed_layouts_compile() -> None:
    cb = compile_copybook("       01  R.\n           05  F PIC X OCCURS 65535.\n"
                          "           05  L PIC X(16711681).\n")
    assert (len(cb.records[0].fields), cb.length) == (65536, 16 * 1024 * 1024)


def test_empty_copybook_is_an_error() -> None:
    with pytest.raises(CopybookError, match="no 01 record"):
        compile_copybook("      * only a comment\n")


def test_directives_inside_an_entry_wait_for_the_next_one() -> None:
    src = """\
       01  R.
           05  A      PIC X(2)
      * KEY
                      VALUE SPACES.
           05  B      PIC X.
      * YYMMDD
           05  G.
               10  FILLER  PIC X.
               10  D       PIC 9(6).
"""
    f = fields(src)
    assert (f["A"].key, f["B"].key) == (False, True)
    assert (f["D"].date_format, f["FILLER"].date_format) == ("YYMMDD", None)


def test_sibling_level_mismatch_is_an_error() -> None:
    src = ("       01  R.\n           05  G.\n               10  A PIC X.\n"
           "           03  B PIC X.\n")
    with pytest.raises(CopybookError, match="level 03 does not match its siblings' level 05"):
        compile_copybook(src)


def test_literal_continuation_lines() -> None:
    src = (
        "       01  R.\n"
        "           05  A  PIC X(40) VALUE 'A LONG LITERAL THAT GOES ON AND ON AND\n"
        "      -    'ON UNTIL HERE'.\n"
        "           05  B  PIC X.\n")
    assert [(f.column, f.offset) for f in compile_copybook(src).records[0].fields] == [
        ("A", 0), ("B", 40)]
    with pytest.raises(CopybookError, match="t.cpy:2:35: unterminated literal"):
        compile_copybook(src.replace("      -    'ON", "           'ON"), file="t.cpy")


def test_duplicate_columns_are_a_copybook_error() -> None:
    src = "       01  R.\n           05  A  PIC X.\n           05  A  PIC X.\n"
    with pytest.raises(CopybookError,
                       match=r"t.cpy:3: field A: column R_A is defined twice \(line 2\)"):
        copybook_definitions(compile_copybook(src, file="t.cpy"), schema="S")


@pytest.mark.parametrize(("entry", "needle"), [
    ("05  F PIC X OCCURS ¹02.", "OCCURS needs an integer"),  # a digit to str.isdigit(), not int()
    ("05  F PIC Xß.", "field F: PIC Xß: PIC symbols are ASCII characters"),  # 'ß'.upper() is 'SS'
    ("05  F PIC X(²).", r"PIC X\(²\): PIC symbols are ASCII"),
])
def test_non_ascii_digits_and_letters_are_refused_with_location(entry: str, needle: str) -> None:
    with pytest.raises(CopybookError, match=needle) as e:
        compile_copybook(f"       01  R.\n           {entry}\n", file="t.cpy")
    assert str(e.value).startswith("t.cpy:2:")
