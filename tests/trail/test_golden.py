"""Exact bytes: the seed's column encodings, Julian times, the record header examples and the
§15 worked example (trail-format.md §4, §5, §8, §9, §15, §16)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gendef.model import (
    Column,
    Table,
    char_column,
    datetime_column,
    number_column,
    number_text_column,
    varchar_column,
)
from msgcap.trail.columns import TableDecoder, TableEncoder
from msgcap.trail.encoder import encode_transaction
from msgcap.trail.fileheader import decode_file_header, encode_file_header
from msgcap.trail.julian import (
    JULIAN_UNIX_EPOCH_US,
    datetime_to_unix_us,
    from_julian,
    julian_to_iso,
    to_julian,
)
from msgcap.trail.layout import layout_for
from msgcap.trail.reader import H_AUDIT_POS, H_AUDIT_RBA, H_TRANSIND, parse_record
from msgcap.trail.records import IOTYPE_INSERT, IOTYPE_PKUPDATE, TrailRecord, TrailTransaction
from parsers.model import MISSING

BE, LE = layout_for("big"), layout_for("little")


def span(col: Column, value, layout=BE) -> bytes:
    """The column span (without the 4-byte entry head) of one value."""
    entry = TableEncoder(Table.build("S.T", [col]), layout).encode([value])
    return entry[4:]


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# -- column encodings (seed 000, spec §9.2, §9.3) ---------------------------------------------

@pytest.mark.parametrize(("col", "value", "expected"), [
    (char_column("C", 20), "GoldenGate", "0000 476F6C64656E47617465" + "20" * 10),
    (char_column("C", 20), "GoldenGate" + " " * 10, "0000 476F6C64656E47617465" + "20" * 10),
    (varchar_column("V", 20), "GoldenGate", "0000 000A 476F6C64656E47617465"),
    (number_text_column("N", 10), "2013", "0000 0004 32303133"),
    (number_column("N", 10, 2), 123456, "0000 00000000 0001E240"),
    (number_column("N", 10, 2), -5, "0000 FFFFFFFF FFFFFFFB"),
    (datetime_column("D", 19), "2013-03-14:22:39:56",
     "0000 323031332D30332D31343A32323A33393A3536"),
    (datetime_column("D", 29), "2013-03-14:22:39:56.236526000",
     "0000 323031332D30332D31343A32323A33393A35362E323336353236303030"),
    (varchar_column("V", 20), None, "FFFF 0000"),
    (number_text_column("N", 10), None, "FFFF 0000"),
    (char_column("C", 20), None, "FFFF" + "00" * 20),
    (datetime_column("D", 19), None, "FFFF 313930302D30312D30313A30303A30303A3030"),
    (datetime_column("D", 29), None,
     "FFFF 313930302D30312D30313A30303A30303A30302E303030303030303030"),
    (number_column("N", 10, 2), None, "FFFF" + "00" * 8),
])
def test_column_spans_big_endian(col: Column, value, expected: str) -> None:
    assert span(col, value) == h(expected)


def test_little_endian_changes_metadata_only() -> None:
    assert span(varchar_column("V", 20), "1varchar", LE) == h("0000 0800") + b"1varchar"
    # 134 values stay big-endian in little-endian trails
    assert span(number_column("N", 10), 1, LE) == h("0000 0000000000000001")
    entry = TableEncoder(Table.build("S.T", [number_column("N", 10)]), LE).encode([1])
    assert entry[:4] == h("0000 0a00")


def test_datetime_values_are_fitted_to_the_external_length() -> None:
    assert span(datetime_column("D", 26), "2024-03-01:10:15:30") == (
        b"\x00\x00" + b"2024-03-01:10:15:30.000000")
    assert span(datetime_column("D", 19), "2024-03-01:10:15:30.123") == (
        b"\x00\x00" + b"2024-03-01:10:15:30")
    assert span(datetime_column("D", 10), "2024-03-01") == b"\x00\x002024-03-01"


def test_missing_columns_have_no_entry() -> None:
    t = Table.build("S.T", [varchar_column("A", 4), varchar_column("B", 4)])
    assert TableEncoder(t, BE).encode([MISSING, "x"]) == h("0001 0005 0000 0001 78")
    assert TableEncoder(t, BE).encode([MISSING, MISSING]) == b""


def test_decoders_invert_the_seed_examples() -> None:
    t = Table.build("S.T", [char_column("C", 20), varchar_column("V", 20),
                            number_column("N", 10, 2), datetime_column("D", 19)])
    dec = TableDecoder(t, BE)
    entries = [(0, h("0000 476F6C64656E47617465" + "20" * 10)),
               (1, h("0000 000A 476F6C64656E47617465")), (2, h("0000 FFFFFFFF FFFFFFFB")),
               (3, h("FFFF 313930302D30312D30313A30303A30303A3030"))]
    assert dec.values(entries) == ["GoldenGate          ", "GoldenGate", -5, None]
    assert dec.values([(1, h("FFFF"))]) == [MISSING, None, MISSING, MISSING]


# -- Julian microseconds (§8) -------------------------------------------------------------------

@pytest.mark.parametrize(("when", "julian", "big"), [
    (datetime(1970, 1, 1, tzinfo=UTC), 210866760000000000, "02ED263374BCD000"),
    (datetime(2005, 3, 3, 4, 29, 45, 800569, tzinfo=UTC), 211976584185800569, "02F1179489186779"),
    (datetime(2010, 2, 5, 10, 11, 21, tzinfo=UTC), 212132124681000000, "02F1A50B210F5440"),
    (datetime(2013, 3, 7, 11, 28, 37, tzinfo=UTC), 212229415717000000, "02F1FD8776B35340"),
    (datetime(2016, 4, 28, 12, 10, 14, 246832, tzinfo=UTC), 212328605414246832,
     "02F257BDDD5EC9B0"),
    (datetime(2022, 12, 6, 3, 26, 59, 522657, tzinfo=UTC), 212537057219522657,
     ""),
])
def test_julian_vectors(when: datetime, julian: int, big: str) -> None:
    us = datetime_to_unix_us(when)
    assert to_julian(us) == julian
    assert from_julian(julian) == us
    assert julian_to_iso(julian) == when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if big:
        assert julian.to_bytes(8, "big") == h(big)


def test_julian_little_endian_vector() -> None:
    assert LE.u64.pack(212537057219522657) == h("61302DD55315F302")
    assert JULIAN_UNIX_EPOCH_US == 2440587.5 * 86_400_000_000


# -- record header (§5) -------------------------------------------------------------------------

ORACLE_GHDR = h("4504 0041 3c00 05ff 402f ae6c 572a f102 f818 8f02 0000 0000 1000 0000 0152 "
                "0000 0001 4852 2e4a 4f42 5300")


def test_oracle_documented_header_decodes_little_endian() -> None:
    fields = LE.header.unpack_from(ORACLE_GHDR)
    assert fields[0] == 0x45 and fields[1] == 4 and fields[3] == 0x41
    assert fields[4] == 60 and fields[5] == 5 and fields[6] == 0xFF
    assert julian_to_iso(fields[7]).startswith("2005-10-27T22:33:57")
    assert fields[H_AUDIT_POS] == 42932472 and fields[H_AUDIT_RBA] == 16
    assert fields[H_TRANSIND] == 1 and fields[-1] == 1
    assert ORACLE_GHDR[34:] == b"HR.JOBS\x00" and len(ORACLE_GHDR) == 42


def test_oracle_documented_header_encodes_byte_for_byte() -> None:
    """The same 42 bytes come out of the writer's encoding path (little-endian)."""
    t = Table.build("HR.JOBS", [varchar_column("JOB_ID", 52)])
    fields = LE.header.unpack_from(ORACLE_GHDR)
    rec = TrailRecord(t, IOTYPE_INSERT, "A", from_julian(fields[7]), "1", 42932472,
                      ["x" * 52])
    tx = TrailTransaction("t", [rec, rec])  # first of two: TransInd 0 -> patch expectation
    data = encode_transaction(tx, 16, "little")
    got = data[8:8 + 42]
    expected = bytearray(ORACLE_GHDR)
    expected[4:6] = LE.u16.pack(60)
    expected[28] = 0  # first record of a two-record transaction
    assert got == bytes(expected)
    data = encode_transaction(TrailTransaction("t", [rec, rec, rec]), 16, "little")
    second = data[len(data) // 3:]
    assert second[8 + 28] == 1 and second[8:8 + 42] == ORACLE_GHDR


# -- §15 worked example --------------------------------------------------------------------------

WORKED = h("""
4701 00a0 4800 0035 4504 0041 003a 05ff 02f1 a50b 210f 5440 0000 0000 0000 0000
0000 0001 0352 0000 0001 4747 2e4a 4d53 4341 505f 5443 5553 544d 4552 0044 0000
3a00 0000 0800 0000 0457 494c 4c00 0100 1300 0000 0f42 4720 534f 4654 5741 5245
2043 4f2e 0002 000b 0000 0007 5345 4154 544c 4500 0300 0400 0057 4154 0000 1d36
0000 0131 5600 0014 3030 3030 3030 3030 3030 3030 3030 3030 3030 3031 5a01 00a0
""".replace("\n", " "))


def test_worked_example_byte_for_byte(tcustmer: Table, example_time: int) -> None:
    rec = TrailRecord(tcustmer, IOTYPE_INSERT, "A", example_time, "00000000000000000001", 0,
                      ["WILL", "BG SOFTWARE CO.", "SEATTLE", "WA"])
    data = encode_transaction(TrailTransaction("1", [rec]), 1, "big")
    assert len(data) == 160
    assert data == WORKED


def test_worked_example_reads_back(tcustmer: Table, example_time: int) -> None:
    rec = parse_record(WORKED, 0, 160, BE, "f", 389, {})
    assert rec.table == "GG.JMSCAP_TCUSTMER" and rec.iotype == 5 and rec.transind == 3
    assert rec.io_time_us == example_time and rec.audit_rba == 1 and rec.audit_pos == 0
    assert rec.txid == "1" and rec.seqid == "00000000000000000001"
    assert rec.values(TableDecoder(tcustmer, BE)) == (
        None, ["WILL", "BG SOFTWARE CO.", "SEATTLE", "WA"])


def test_pk_update_data_area() -> None:
    t = Table.build("SALES.CUSTOMER", [number_column("CUST_ID", 10, key=True),
                                       varchar_column("NAME", 30), varchar_column("CITY", 20)])
    rec = TrailRecord(t, IOTYPE_PKUPDATE, "A", 0, "1", 0, [1002, MISSING, "Chicago"],
                      key_before=[1001, MISSING, MISSING])
    data = encode_transaction(TrailTransaction("1", [rec]), 1, "big")
    d_area = h("000e 0000 000a 0000 0000 0000 0000 03e9 0000 000a 0000 0000 0000 0000 03ea "
               "0002 000b 0000 0007 4368 6963 6167 6f")
    assert len(d_area) == 45
    assert d_area in data
    parsed = parse_record(data, 0, len(data), BE, "f", 0, {})
    assert parsed.rec_length == 45
    assert parsed.values(TableDecoder(t, BE)) == (
        [1001, MISSING, MISSING], [1002, MISSING, "Chicago"])


# -- §16 reference vectors from real trails -----------------------------------------------------

def test_ogg121_fieldcomp_columns() -> None:
    t = Table.build("TEST001.DEMO1", [number_column("ID", 10), varchar_column("NAME", 30)])
    entries = [(0, h("0000 0000 0000 0000 0003")), (1, h("0000 0006 6e61 6d65 3333"))]
    assert TableDecoder(t, BE).values(entries) == [3, "name33"]


def test_ogg21c_little_endian_insert_columns() -> None:
    t = Table.build("test.test_f", [number_column("A", 10), varchar_column("B", 20),
                                     datetime_column("C", 26), char_column("D", 50)])
    d = (h("0000 0a00 0000 0000 0000 0000 0001") + h("0100 0c00 0000 0800") + b"1varchar"
         + h("0200 1c00 0000") + b"1999-12-31:00:00:00.000000"
         + h("0300 3400 0000") + b"1char" + b" " * 45)
    rec_entries = []
    p = 0
    while p < len(d):
        idx, n = LE.entry.unpack_from(d, p)
        rec_entries.append((idx, d[p + 4:p + 4 + n]))
        p += 4 + n
    assert TableDecoder(t, LE).values(rec_entries) == [
        1, "1varchar", "1999-12-31:00:00:00.000000", "1char" + " " * 45]


def test_mysql_pk_update_with_int32() -> None:
    col = Column("ID", 132, 11, internal_length=4, binary_length=4, key=True)
    t = Table.build("mysql.test", [col])
    d = h("0a00 0000 0600 0000 0000 000a 0000 0600 0000 0000 0009")
    hdr = (0x45, 4, 0, 0x41, len(d), 115, 0xFF, 0, 0, 0, 0, 3, 0x52, 0, 0, 0, 1)
    name = b"mysql.test\x00"
    body = (LE.head.pack(0x48, 0, 34 + len(name)) + LE.header.pack(*hdr) + name
            + LE.head.pack(0x44, 0, len(d)) + d)
    total = len(body) + 8
    raw = LE.head.pack(0x47, 1, total) + body + LE.head.pack(0x5A, 1, total)
    rec = parse_record(raw, 0, total, LE, "f", 0, {})
    assert rec.values(TableDecoder(t, LE)) == ([10], [9])


# -- file header (§4) ----------------------------------------------------------------------------

TRAILINFO = h("""
3000 0067 3000 0008 4747 0d0a 544c 0a0d 3100 0002 0003 3200 0004 2000 0000 3300
0008 02f1 a50b 2100 1200 3400 0016 0014 7572 693a 686f 7374 313a 3a67 673a 4d53
4743 4150 3600 0016 0014 2e2f 6469 7264 6174 2f61 6130 3030 3030 3030 3030 3700
0001 0138 0000 0400 0000 00
""".replace("\n", " "))


def _header(byteorder: str = "big") -> bytes:
    created = datetime_to_unix_us(datetime(2010, 2, 5, 10, 11, 20, tzinfo=UTC))
    return encode_file_header(byteorder=byteorder, seqno=0, file_name="dirdat/aa000000000",
                              uri="uri:host1::gg:MSGCAP", extract="MSGCAP", created_us=created,
                              version="0.1.0",
                              machine=("Linux", "host1", "6.1.0", "#1 SMP", "x86_64"))


def test_trailinfo_group_byte_for_byte() -> None:
    data = _header()
    assert data[:2] == b"F\x00" and data[-4:-2] == b"Z\x00"
    assert data[4:4 + len(TRAILINFO)] == TRAILINFO
    assert BE.u16.unpack_from(data, 2)[0] == len(data) == BE.u16.unpack_from(data, len(data) - 2)[0]


@pytest.mark.parametrize("byteorder", ["big", "little"])
def test_file_header_decodes_to_the_spec_json(byteorder: str) -> None:
    data = _header(byteorder)
    assert data[10:12] == (b"\x00\x08" if byteorder == "big" else b"\x08\x00")
    hdr = decode_file_header(data, "f")
    assert hdr.byteorder == byteorder and hdr.length == len(data)
    assert hdr.trail == {"compatibility": 3, "charset": "20000000",
                         "creation_time": "2010-02-05T10:11:20.000000Z",
                         "uri": "uri:host1::gg:MSGCAP", "file_name": "./dirdat/aa000000000",
                         "multipart": 1, "seqno": 0}
    assert hdr.machine == {"os": "Linux", "node": "host1", "release": "6.1.0",
                           "version": "#1 SMP", "hardware": "x86_64"}
    assert hdr.database == {"vendor": 19, "name": "MSGCAP", "instance": "MSGCAP",
                            "version": "msgcap 0.1.0 JMS message capture"}
    assert hdr.producer == {"name": "MSGCAP", "data_source": 3, "version": [0, 1, 0, 0, 0],
                            "version_string": "msgcap 0.1.0"}
    assert hdr.continuity == {"recovery_mode": 1} and hdr.other == {}


def test_real_ogg121_header_prefix_decodes() -> None:
    """The TrailInfo tokens of the real 12.1 header: URIHistory nested, unknown ones kept."""
    uri = b"uri:h-7b6g4gqx::data:oggtest"
    trail = (h("30000008 47470d0a544c0a0d 31000002 0003 32000004 20000000 33000008 "
               "02f257bddd5ec9b0") + h("3400001e 001c") + uri
             + h("35000022 3500001e 001c") + uri + h("36000013 0011") + b"./dirdat/ra000000")
    group = BE.head.pack(0x30, 0, len(trail)) + trail
    total = len(group) + 8
    data = BE.head.pack(0x46, 0, total) + group + BE.head.pack(0x5A, 0, total)
    hdr = decode_file_header(data, "f")
    assert hdr.trail["creation_time"] == "2016-04-28T12:10:14.246832Z"
    assert hdr.trail["uri"] == uri.decode() and hdr.trail["file_name"] == "./dirdat/ra000000"
    assert list(hdr.other) == ["30.35"]
