"""Definitions from settings: DEFGEN files, user-defined tables, fixed-width headers, copybooks.

Settings are built directly from the props dataclasses so these tests pin gendef's own rules;
test_cli.py runs the same cases from property files through the console script.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from gendef.build import (
    build_definitions,
    check_names_known,
    load_source_definitions,
    used_header_fields,
)
from gendef.defgen import format_defs, read_defs
from gendef.model import CHAR, DATETIME, NUMBER, VARCHAR, DefsHeader
from gendef.userdefs import message_layout, user_column, user_table
from props.errors import PropertyError
from props.expr import Const, Field, JmsId, SysTs
from props.settings import (
    DelimSettings,
    FixedSettings,
    Settings,
    UserColumn,
    UserTable,
    XmlSettings,
)

DATA = Path(__file__).parent / "data"

HEADER_33 = UserTable("qasource.HEADER", (UserColumn("optype", "vchar", 3),
                                          UserColumn("schemaandtable", "vchar", 30)),
                      "jmsvam.properties", 4)


def _blocks(defs) -> str:
    """The table blocks of gendef's output (everything after the header)."""
    return format_defs(defs, created="2024-03-01 10:15").split("TimeZone: GMT\n*\n", 1)[1]


def _fixed(**kw) -> Settings:
    return Settings(file="jmsvam.properties", parser_type="fixed",
                    fixed=FixedSettings(**kw), lines={"fixed.header": 9, "fixed.schema": 7})


# -- delimited and XML --------------------------------------------------------------------------

def test_delim_sourcedefs_come_back_with_text_columns_of_any_character() -> None:
    """§8.6: dirdef/sales.def comes back as written, with gendef's 4.0 header, but for its
    text columns: n characters of up to 4 UTF-8 bytes (source-definitions.md §6.3)."""
    s = Settings(parser_type="delim",
                 delim=DelimSettings(sourcedefs=str(DATA / "sales.def"), header=("optype",)))
    defs = build_definitions(s)
    assert _blocks(defs) == (DATA / "sales_gendef.txt").read_text()
    read = read_defs(str(DATA / "sales.def"))
    for table in defs:
        was_table = read.get(table.name)
        assert was_table is not None
        for col, was in zip(table.columns, was_table.columns, strict=True):
            if col.is_text:
                n = was.external_length
                assert (col.external_length, col.internal_length, col.binary_length,
                        col.character_length) == (4 * n, 4 * n, 4 * n, n)
            else:
                assert col == replace(was, fetch_offset=col.fetch_offset)
    assert defs.header == DefsHeader()
    text = format_defs(defs, created="2024-03-01 10:15")
    assert text.startswith("*+- Defgen version 4.0, Encoding UTF-8\n")
    assert "Database type: GENERIC\n" in text


def test_xml_sourcedefs() -> None:
    s = Settings(parser_type="xml", xml=XmlSettings(sourcedefs=str(DATA / "mytable.def")))
    assert _blocks(build_definitions(s)) == (DATA / "mytable_gendef.txt").read_text()


def test_version_2_input_is_normalised_and_offsets_recomputed(tmp_path: Path) -> None:
    odd = tmp_path / "odd.def"
    odd.write_text((DATA / "tcustmer_oracle.def").read_text().replace("       46  ", "       40  "))
    s = Settings(parser_type="delim", delim=DelimSettings(sourcedefs=str(odd)))
    assert [c.fetch_offset for c in load_source_definitions(s).tables[0].columns] == [0, 10, 40, 72]
    assert _blocks(build_definitions(s)) == (DATA / "tcustmer_delim_gendef.txt").read_text()


def test_userdefs_follow_sourcedefs_in_order() -> None:
    users = (UserTable("APP.B", (UserColumn("K", "number", 10, 0, True),
                                 UserColumn("AMT", "number", 9, 2),
                                 UserColumn("BIG", "number", 30, 4),
                                 UserColumn("C", "char", 2),
                                 UserColumn("D", "datetime", 10),
                                 UserColumn("TS", "datetime", 26))),
             UserTable("APP.A", (UserColumn("V", "vchar", 5),)))
    s = Settings(parser_type="delim", delim=DelimSettings(
        sourcedefs=str(DATA / "mytable.def"), userdefs=users))
    defs = build_definitions(s)
    assert [t.name for t in defs] == ["MY.TABLE", "APP.B", "APP.A"]
    b = defs.get("APP.B")
    assert b is not None and b.offsets_follow_rule()
    assert [(c.type_code, c.external_length, c.scale, c.key) for c in b.columns] == [
        (NUMBER, 11, 0, True), (NUMBER, 11, 2, False), (VARCHAR, 32, 0, False),
        (CHAR, 8, 0, False), (DATETIME, 10, 0, False), (DATETIME, 26, 0, False)]
    assert [c.characters for c in b.columns[3:4]] == [2]
    assert b.columns[2].is_number_text
    assert [c.least_significant_dt for c in b.columns[4:]] == [2, 6]
    assert [c.native_type for c in b.columns] == [2, 2, 2, 96, 12, 187]


def test_userdefs_only() -> None:
    s = Settings(parser_type="xml", xml=XmlSettings(userdefs=(HEADER_33,)))
    assert [t.name for t in build_definitions(s)] == ["qasource.HEADER"]


def test_userdef_named_like_a_sourcedefs_table_is_an_error() -> None:
    clash = UserTable("my.table", (UserColumn("X", "vchar", 1),), "p.properties", 12)
    s = Settings(parser_type="delim", delim=DelimSettings(
        sourcedefs=str(DATA / "mytable.def"), userdefs=(clash,)))
    with pytest.raises(PropertyError, match=r"^p.properties:12: delim.userdefs.tables: .*my.table"):
        build_definitions(s)


def test_bad_userdef_column_names_its_property() -> None:
    bad = UserTable("A.B", (UserColumn("D", "datetime", 15),), "p.properties", 3)
    with pytest.raises(PropertyError, match=r"^p.properties:3: fixed.userdefs.A.B: .*D.*15"):
        user_table(bad, "fixed")


def test_user_column_kinds() -> None:
    assert user_column(UserColumn("A", "vchar", 3)).slot == 8
    assert user_column(UserColumn("A", "char", 3, key=True)).key
    assert user_column(UserColumn("A", "number", 18)).type_code == NUMBER
    assert user_column(UserColumn("A", "number", 19)).type_code == VARCHAR


# -- fixed width, sourcedefs mode ---------------------------------------------------------------

def test_fixed_sourcedefs_with_the_documented_user_header() -> None:
    """properties.md §15.2: the 33-character header; optype and schemaandtable are used."""
    s = _fixed(schematype="sourcedefs", sourcedefs=str(DATA / "tcustmer_oracle.def"),
               header="qasource.HEADER", userdefs=(HEADER_33,))
    source = load_source_definitions(s)
    header = source.get("QASOURCE.HEADER")
    assert header is not None and header.record_length == 33
    assert [(c.fetch_offset, c.external_length) for c in header.columns] == [(0, 3), (3, 30)]
    tcust = source.get("GG.JMSCAP_TCUSTMER")
    assert tcust is not None and [c.fetch_offset for c in tcust.columns] == [0, 10, 46, 72]
    defs = build_definitions(s)
    assert [t.name for t in defs] == ["GG.JMSCAP_TCUSTMER"]
    assert _blocks(defs) == (DATA / "tcustmer_gendef.txt").read_text()


def test_unused_header_columns_lead_every_table() -> None:
    header = UserTable("Q.HDR", HEADER_33.columns + (UserColumn("SOURCE", "char", 4),
                                                     UserColumn("TS", "vchar", 26)))
    other = UserTable("Q.OTHER", (UserColumn("X", "vchar", 1, key=True),))
    s = _fixed(schematype="sourcedefs", sourcedefs=str(DATA / "tcustmer_oracle.def"),
               header="q.hdr", userdefs=(header, other), timestamp=Field("ts"))
    defs = build_definitions(s)
    assert [t.name for t in defs] == ["GG.JMSCAP_TCUSTMER", "Q.OTHER"]
    for table in defs:
        assert table.columns[0].name == "SOURCE" and table.columns[0].type_code == CHAR
        assert table.offsets_follow_rule()
    tcust = defs.get("GG.JMSCAP_TCUSTMER")
    assert tcust is not None
    assert [c.fetch_offset for c in tcust.columns] == [0, 8, 18, 54, 80]
    assert tcust.record_length == 86
    assert tcust.key_indexes == (1,)


def test_header_from_the_defgen_file(tmp_path: Path) -> None:
    defs_file = tmp_path / "both.def"
    hdr = ("Definition for table Q.HDR\nRecord length: 42\nSyskey: 0\nColumns: 2\n"
           "OP       64      3        0  0  0 1 0      3      3      0 0 0 0 0 1    0 0   0    1"
           "       -1      0 0 0\n"
           "TAB      64     30        8  0  0 1 0     30     30      0 0 0 0 0 1    0 0   0    1"
           "       -1      0 0 0\nEnd of definition\n*\n")
    defs_file.write_text(hdr + (DATA / "mytable.def").read_text())
    s = _fixed(schematype="sourcedefs", sourcedefs=str(defs_file), header="Q.HDR",
               optype=Field("OP"), table=(Field("tab"),))
    assert load_source_definitions(s).get("Q.HDR").record_length == 42
    assert _blocks(build_definitions(s)) == (DATA / "mytable.def").read_text()


def test_fixed_header_not_defined() -> None:
    s = _fixed(schematype="sourcedefs", sourcedefs=str(DATA / "mytable.def"), header="Q.NONE")
    with pytest.raises(PropertyError, match=r"^jmsvam.properties:9: fixed.header: .*Q.NONE"):
        build_definitions(s)


def test_header_column_clashing_with_a_table_column() -> None:
    header = UserTable("Q.HDR", (UserColumn("CITY", "vchar", 3),))
    s = _fixed(schematype="sourcedefs", sourcedefs=str(DATA / "tcustmer_oracle.def"),
               header="Q.HDR", userdefs=(header,))
    with pytest.raises(PropertyError, match="fixed.header: .*duplicate column CITY"):
        build_definitions(s)


def test_message_layout_concatenates_external_lengths() -> None:
    t = message_layout(user_table(HEADER_33, "fixed"))
    assert [c.fetch_offset for c in t.columns] == [0, 3] and t.record_length == 33


# -- header fields used by fixed.* items --------------------------------------------------------

def test_used_header_fields_defaults_and_configured() -> None:
    names = ["optype", "schemaandtable", "timestamp", "id", "txind", "Other", "schema", "table"]
    used = used_header_fields(FixedSettings(), names)
    assert used == {"optype", "schemaandtable", "timestamp", "id", "txind"}
    configured = FixedSettings(optype=Field("HDR-FUNCTION"), timestamp=SysTs(), seqid=JmsId(),
                               txind=Field("other"), table=(Field("hdr_rec_id"), Field("VER")),
                               schema=Const("X"))
    names = ["HDR_FUNCTION", "HDR-REC-ID", "ver", "timestamp", "OTHER", "ID", "optype"]
    assert used_header_fields(configured, names) == {"HDR_FUNCTION", "HDR-REC-ID", "ver", "OTHER"}
    split = FixedSettings()
    assert used_header_fields(split, ["schema", "table"]) == {"schema", "table"}


# -- copybook -----------------------------------------------------------------------------------

def _copybook_settings(tmp_path: Path, **kw) -> Settings:
    cpy = tmp_path / "retail.cpy"
    shutil.copy(DATA / "retail.cpy", cpy)
    base = {"schematype": "copybook", "copybook": str(cpy), "header": "HEADER",
            "timestamp": Field("HDR-TIMESTAMP"), "optype": Field("HDR-FUNCTION"),
            "table": (Field("HDR-REC-ID"),), "schema": Const("RETAIL"), "seqid": JmsId()}
    base.update(kw)
    return _fixed(**base)


def test_copybook_definitions_of_the_spec(tmp_path: Path) -> None:
    """sourcedefs.md §8.6: HDR_SOURCE is the only unused header field and leads each table."""
    defs = build_definitions(_copybook_settings(tmp_path))
    assert _blocks(defs) == (DATA / "retail_expected.txt").read_text()
    assert [t.name for t in load_source_definitions(_copybook_settings(tmp_path))] == [
        "RETAIL.CUSTOMER", "RETAIL.ORDERS"]


def test_copybook_mode_without_schema_names_tables_by_record_and_writes_no_definitions(
        tmp_path: Path) -> None:
    """properties.md §4: fixed.schema is optional; then messages bring the schema, so the
    tables' names are not known to gendef or trail.defs (one line naming the property)."""
    settings = _copybook_settings(tmp_path, schema=None)
    assert [t.name for t in build_definitions(settings)] == ["CUSTOMER", "ORDERS"]
    with pytest.raises(PropertyError, match=r"^jmsvam.properties:7: fixed.schema: needed to "
                                            r"write source definitions: .*SCHEMA.RECORD"):
        check_names_known(settings)
    check_names_known(_copybook_settings(tmp_path))


def test_copybook_mode_needs_its_header(tmp_path: Path) -> None:
    with pytest.raises(PropertyError, match="fixed.header: .*NOPE"):
        build_definitions(_copybook_settings(tmp_path, header="NOPE"))


def test_read_defs_view_keeps_file_header(tmp_path: Path) -> None:
    s = Settings(parser_type="delim", delim=DelimSettings(sourcedefs=str(DATA / "scott.def")))
    assert load_source_definitions(s).header == read_defs(DATA / "scott.def").header
