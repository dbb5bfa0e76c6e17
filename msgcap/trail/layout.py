"""Byte layout constants and the Structs compiled once per metadata byte order
(trail-format.md §3–§5, §11).

Metadata (token lengths, header integers, column index/length, VARCHAR length, PK before_len)
follows ``trail.byteorder``; column values (134 and the other integers) are always big-endian,
so data Structs live apart from the per-order ``Layout``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

# Top-level and inner token ids.
REC_G, REC_Z, REC_F = 0x47, 0x5A, 0x46
TOK_H, TOK_D, TOK_T, TOK_U = 0x48, 0x44, 0x54, 0x55
GZ_INFO = 1  # msgcap writes 01 in the G/Z info byte (§3); readers ignore it

# GGS token ids (§10).
TOKEN_NAMES = {0x36: "TRANID", 0x56: "VAMSEQID", 0x52: "ORAROWID", 0x4C: "LOGCSN", 0x44: "DDL",
               0x74: "ORATAG"}
TOKEN_TRANID, TOKEN_VAMSEQID = 0x36, 0x56

# User token names (§10): the transaction's name and owner, and the order tokens a downstream
# checks (``msgcap dump --check-order``): the capture's partition, the message group and the
# message's number in it.
UTOKEN_TXNAME, UTOKEN_TXOWNER = "TXNAME", "TXOWNER"
UTOKEN_PARTITION, UTOKEN_GROUP, UTOKEN_GROUP_SEQ = "MSGCAP_PARTITION", "JMSXGroupID", "JMSXGroupSeq"

# Record header constants msgcap writes (§5).
HDR_IND = 0x45  # 'E'
PARTITION = 0x04
ORIG_NODE = 0xFF
FORMAT_TYPE = 0x52  # 'R'
HEADER_FIXED = 34  # bytes before the table name

MAX_RECORD = 0xFFFF
# G head + H token head + 34 fixed + NUL + Z trailer: the smallest possible record.
MIN_RECORD = 4 + 4 + HEADER_FIXED + 1 + 4

NULL_IND = b"\xff\xff"
VALUE_IND = b"\x00\x00"

# Column values: big-endian whatever the metadata order.
BE_I64 = struct.Struct(">q")
BE_INTS = {130: struct.Struct(">h"), 131: struct.Struct(">H"), 132: struct.Struct(">i"),
           133: struct.Struct(">I"), 134: BE_I64, 135: struct.Struct(">Q")}

BYTE_ORDERS = ("big", "little")


@dataclass(frozen=True, slots=True)
class Layout:
    """The Structs of one metadata byte order, compiled once."""

    byteorder: str
    head: struct.Struct  # id:u8 info:u8 len:u16 — every token and record head
    u16: struct.Struct
    u32: struct.Struct
    u64: struct.Struct
    header: struct.Struct  # the 34 fixed bytes of the H token
    prefix_format: str  # G head + H head + 34 fixed bytes, zero fields as pad bytes (writer)
    entry: struct.Struct  # column_index:u16 column_length:u16
    entry_var: struct.Struct  # index, length, null indicator (0), VARCHAR length

    @classmethod
    def of(cls, byteorder: str) -> Layout:
        o = {"big": ">", "little": "<"}[byteorder]
        hdr = "BBBBHBBQIIIBBBBBB"
        return cls(byteorder, struct.Struct(o + "BBH"), struct.Struct(o + "H"),
                   struct.Struct(o + "I"), struct.Struct(o + "Q"), struct.Struct(o + hdr),
                   o + "BBHBxHBBxBHBBQI4xIBB3xB", struct.Struct(o + "HH"),
                   struct.Struct(o + "HHHH"))


LAYOUTS = {name: Layout.of(name) for name in BYTE_ORDERS}


def layout_for(byteorder: str) -> Layout:
    try:
        return LAYOUTS[byteorder]
    except KeyError:
        raise ValueError(f"byte order {byteorder!r} (expected big or little)") from None
