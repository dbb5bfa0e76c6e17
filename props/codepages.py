"""The single-byte code pages ``fixed.encoding`` may name, resolved without the codec registry.

Python's codec registry is process-wide: a package that registers a search function (the
``ebcdic`` package does when imported) changes what a name means, and a codec msgcap registered
itself would make a name valid or not depending on import order. So msgcap resolves a name to a
256-character decoding table of its own and never registers anything:

* the EBCDIC code pages Cobrix offers (``EBCDIC_PAGES``): Python's table where the standard
  library has one (cp037, cp273, cp500, cp875, cp1140); a checked table generated from the
  ``ebcdic`` package for the others (``codepage_tables``); cp1047 as cp037 with six code points
  moved (0x15 NEL, 0x25 LF, as IBM's CDRA table, Python's cp037 and Java have them); and
  ``common``, Cobrix's invariant subset, where every other byte is invalid;
* any other single-byte codec of the standard library's ``encodings`` package (``ascii``,
  ``latin-1``, ``cp1252`` …), looked up there directly.

A ``CodePage`` is immutable, cached per name, and pickles as its name.
"""

from __future__ import annotations

import codecs
import encodings
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12

UNDEFINED = "\ufffe"  # a byte without a character (charmap_decode's convention)

CP037: str = import_module("encodings.cp037").decoding_table

STDLIB_EBCDIC = ("cp037", "cp273", "cp500", "cp875", "cp1140")
FROM_PACKAGE = ("cp277", "cp278", "cp280", "cp284", "cp285", "cp297", "cp838", "cp870", "cp1025",
                *(f"cp{n}" for n in range(1141, 1150)))
# What msgcap changes in the ``ebcdic`` package's tables (scripts/gen_codepages.py).
CORRECTIONS: dict[str, dict[int, str]] = {name: {0x15: "\x85"} for name in FROM_PACKAGE}
EBCDIC_PAGES = (*STDLIB_EBCDIC, *FROM_PACKAGE, "cp1047", "common")

# cp1047 (Latin-1 open systems) differs from cp037 in six code points.
_CP1047_MOVES = {0x5F: "^", 0xAD: "[", 0xB0: "¬", 0xBA: "Ý", 0xBB: "¨", 0xBD: "]"}

# Cobrix's "common" code page (CodePageCommon): the bytes it maps to a character; msgcap takes
# cp037's character for each and leaves every other byte undefined instead of a blank.
COMMON_BYTES = (0x0D, 0x25, 0x40, *range(0x4B, 0x51), *range(0x5A, 0x5F), 0x60, 0x61,
                *range(0x6B, 0x70), *range(0x79, 0x80), *range(0x81, 0x8A), *range(0x91, 0x9A),
                *range(0xA1, 0xAA), 0xB0, 0xBA, 0xBB, *range(0xC0, 0xCA), *range(0xD0, 0xDA),
                0xE0, *range(0xE2, 0xEA), *range(0xF0, 0xFA))

_EBCDIC_NAME = re.compile(r"(?:cp|ibm|ccsid)0*(\d{2,4})")
# One text mixing the lead bytes of multi-byte encodings: a single-byte codec keeps its length.
_MULTIBYTE_PROBE = b"\xc3\xa9\xe3\x81\x82\x81\x40\x8e\xa1"


@dataclass(frozen=True, slots=True)
class CodePage:
    """A single-byte code page: ``table[b]`` is the character of byte b (UNDEFINED if none)."""

    name: str
    table: str
    ebcdic: bool
    _encoding_map: dict[int, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.table) != 256:
            raise ValueError(f"code page {self.name}: {len(self.table)} entries, not 256")
        # character → its first byte (a few pages hold a character twice)
        encoding: dict[int, int] = {}
        for byte in range(255, -1, -1):
            if self.table[byte] != UNDEFINED:
                encoding[ord(self.table[byte])] = byte
        object.__setattr__(self, "_encoding_map", encoding)

    def __reduce__(self) -> tuple[object, ...]:
        return (code_page, (self.name,))

    def decode(self, data: Buffer, errors: str = "strict") -> tuple[str, int]:
        """bytes → text; an undefined byte raises UnicodeDecodeError (or as ``errors`` says)."""
        return codecs.charmap_decode(data, errors, self.table)

    def encode(self, text: str, errors: str = "strict") -> tuple[bytes, int]:
        return codecs.charmap_encode(text, errors, self._encoding_map)

    def utf8_width(self) -> int:
        """The most UTF-8 bytes one character of this page takes: what a text column of n
        characters needs in the trail, whose text is UTF-8 (source-definitions.md §6.3)."""
        return max((len(c.encode()) for c in self.table if c != UNDEFINED), default=1)

    def codec_info(self) -> codecs.CodecInfo:
        """A codec over this table, for code written against ``codecs`` (never registered)."""
        return codecs.CodecInfo(self.encode, self.decode, name=self.name)


def canonical_name(name: str) -> str:
    """``IBM-1047``, ``cp01140``, ``CCSID 37`` → ``cp1047``, ``cp1140``, ``cp037``; other
    names lower-cased, unchanged otherwise."""
    key = re.sub(r"[\s_-]", "", name.strip().lower())
    m = _EBCDIC_NAME.fullmatch(key)
    if m:
        canonical = f"cp{int(m.group(1)):03d}"
        if canonical in EBCDIC_PAGES:
            return canonical
    return key if key == "common" else name.strip().lower()


@lru_cache(maxsize=64)
def code_page(name: str) -> CodePage:
    """The code page of ``name``; LookupError if unknown, ValueError if not single-byte."""
    canonical = canonical_name(name)
    if canonical in EBCDIC_PAGES:
        return CodePage(canonical, _ebcdic_table(canonical), True)
    info = encodings.search_function(canonical)
    if info is None:
        raise LookupError(f"unknown encoding {name!r}")
    if info.name in EBCDIC_PAGES:
        return code_page(info.name)
    try:
        single = len(info.decode(_MULTIBYTE_PROBE, "replace")[0]) == len(_MULTIBYTE_PROBE)
    except (TypeError, ValueError):
        single = False
    if not single:
        raise ValueError(f"{name!r} is not a single-byte character set")
    chars = []
    for b in range(256):
        try:
            text = info.decode(bytes((b,)))[0]
        except UnicodeDecodeError:
            text = UNDEFINED
        chars.append(text if len(text) == 1 else UNDEFINED)
    table = "".join(chars)
    return CodePage(canonical, table, table[0xF0:0xFA] == "0123456789")


def _ebcdic_table(name: str) -> str:
    if name in STDLIB_EBCDIC:
        return import_module(f"encodings.{name}").decoding_table
    table = list(CP037)
    if name == "cp1047":
        for byte, char in _CP1047_MOVES.items():
            table[byte] = char
    elif name == "common":
        table = [CP037[b] if b in COMMON_BYTES else UNDEFINED for b in range(256)]
    else:
        from props.codepage_tables import DIFFERENCES

        for byte, char in DIFFERENCES[name].items():
            table[byte] = char
    return "".join(table)
