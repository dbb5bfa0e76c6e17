"""Random copybook layouts with binary fields, their records as bytes and the values a trail
must hold for them: the data of the "bytes stay bytes" tests, through every source.

A record is ``HDR`` (optype ``I``, table ``BINR``) then the ``BINR`` fields: ``COMP`` (2, 4 or 8
bytes, big-endian, signed or not), ``COMP-3`` (packed, with decimals), ``PIC X`` text and ``PIC 9``
zoned digits in ``encoding``. ``utf8_looking`` values make binary fields whose bytes are valid
UTF-8 (``00 00 C3 A9`` is 50089): the records a transport that guesses text would decode wrongly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

TABLE = "BINR"
# Binary values whose big-endian bytes are (or end in) UTF-8 sequences: é, €, 😀, "AB", ¬.
UTF8_LOOKING = (0xC3A9, 0xE282AC, 0xF09F9880, 0x4142, 0xC2AC, 0x7F, 0x20C3A9)


@dataclass(frozen=True)
class Field:
    name: str
    usage: str  # "comp", "comp3", "text", "zoned"
    digits: int  # text: its length
    scale: int = 0
    signed: bool = False

    @property
    def pic(self) -> str:
        if self.usage == "text":
            return f"PIC X({self.digits})."
        sign = "S" if self.signed else ""
        whole = self.digits - self.scale
        number = f"PIC {sign}9({whole})" + (f"V9({self.scale})" if self.scale else "")
        return number + {"comp": " COMP.", "comp3": " COMP-3.", "zoned": "."}[self.usage]

    @property
    def width(self) -> int:
        if self.usage == "comp":
            return 2 if self.digits <= 4 else 4 if self.digits <= 9 else 8
        if self.usage == "comp3":
            return self.digits // 2 + 1
        return self.digits

    def random_value(self, rng: random.Random) -> int | str:
        """An unscaled integer (numbers) or the text of the field."""
        if self.usage == "text":
            return "".join(rng.choice("ABCXYZ019 -.") for _ in range(self.digits)).rstrip() or "A"
        top = 10 ** self.digits - 1
        if self.usage == "comp":  # the whole binary range the PIC allows
            fitting = [v for v in UTF8_LOOKING if v <= top]
            if fitting and rng.random() < 0.5:
                return rng.choice(fitting)
        value = rng.randint(0, top)
        return -value if self.signed and rng.random() < 0.5 else value

    def encode(self, value: int | str, encoding: str) -> bytes:
        if self.usage == "text":
            assert isinstance(value, str)
            return value.ljust(self.digits).encode(encoding)
        assert isinstance(value, int)
        if self.usage == "comp":
            return value.to_bytes(self.width, "big", signed=self.signed)
        if self.usage == "comp3":
            digits = f"{abs(value):0{self.width * 2 - 1}d}"
            sign = ("d" if value < 0 else "c") if self.signed else "f"
            return bytes.fromhex(digits + sign)
        return f"{value:0{self.digits}d}".encode(encoding)  # unsigned zoned

    def dumped(self, value: int | str) -> str:
        """The value as ``msgcap dump --json`` shows it."""
        if self.usage == "text":
            return str(value).ljust(self.digits)
        assert isinstance(value, int)
        return str(Decimal(value).scaleb(-self.scale))


@dataclass(frozen=True)
class Layout:
    fields: tuple[Field, ...]
    encoding: str = "ascii"

    @staticmethod
    def random(rng: random.Random, encoding: str = "ascii") -> Layout:
        """A BINR record of 2-7 fields, the first a key COMP, at least one COMP-3."""
        fields = [Field("B-KEY", "comp", 9)]
        for n in range(rng.randint(1, 6)):
            usage = rng.choice(("comp", "comp", "comp3", "text", "zoned"))
            digits = rng.choice((3, 4, 5, 9, 12, 18)) if usage != "text" else rng.randint(1, 12)
            scale = rng.randint(0, min(digits - 1, 4)) if usage in ("comp3", "comp") else 0
            fields.append(Field(f"B-F{n}", usage, digits, scale,
                                usage != "zoned" and rng.random() < 0.5))
        fields.append(Field("B-P", "comp3", 7, 2, True))
        return Layout(tuple(fields), encoding)

    def copybook(self) -> str:
        lines = ["       01  HDR.", "           05  HDR-OP PIC X.",
                 "           05  HDR-TABLE PIC X(4).", f"       01  {TABLE}."]
        for i, f in enumerate(self.fields):
            if i == 0:
                lines.append("      * KEY")
            lines.append(f"           05  {f.name} {f.pic}")
        return "\n".join(lines) + "\n"

    def properties(self, **extra: str) -> str:
        items = {"trail.path": "dirdat/bn", "trail.extract": "BIN", "trail.defs": "dirdat/bn.def",
                 "parser.type": "fixed", "fixed.schematype": "copybook",
                 "fixed.copybook": "dirdef/bin.cpy", "fixed.header": "HDR",
                 "fixed.optype": "HDR-OP", "fixed.optype.insertval": "I",
                 "fixed.table": "HDR-TABLE", "fixed.schema": '"S"',
                 "fixed.encoding": self.encoding, **extra}
        return "".join(f"{k}={v}\n" for k, v in items.items())

    def write_home(self, home: Path, **extra: str) -> Path:
        """The copybook and the properties in a home directory; the properties' path."""
        (home / "dirdef").mkdir(parents=True, exist_ok=True)
        (home / "dirprm").mkdir(exist_ok=True)
        (home / "dirdef" / "bin.cpy").write_text(self.copybook())
        prop = home / "dirprm" / "bin.properties"
        prop.write_text(self.properties(**extra))
        return prop

    def random_values(self, rng: random.Random, key: int) -> tuple[int | str, ...]:
        return (key, *(f.random_value(rng) for f in self.fields[1:]))

    def record(self, values: tuple[int | str, ...]) -> bytes:
        head = "I".encode(self.encoding) + TABLE.encode(self.encoding)
        return head + b"".join(f.encode(v, self.encoding) for f, v in zip(self.fields, values,
                                                                           strict=True))

    def dumped(self, values: tuple[int | str, ...]) -> dict[str, str]:
        """Column name → value, as ``msgcap dump --json`` shows the record's after image."""
        return {f.name.replace("-", "_"): f.dumped(v) for f, v in zip(self.fields, values,
                                                                      strict=True)}

    def records(self, rng: random.Random, count: int) -> list[tuple[tuple[int | str, ...], bytes]]:
        """``count`` records; in ASCII, the first half of them valid UTF-8 as a whole where the
        layout allows it within 200 tries (the records a transport guessing text would get
        wrong; an EBCDIC header is never UTF-8)."""
        out: list[tuple[tuple[int | str, ...], bytes]] = []
        key, tries = 0, 0
        while len(out) < count:
            key += 1
            values = self.random_values(rng, _utf8_key(key))
            data = self.record(values)
            tries += 1
            if (self.encoding == "ascii" and len(out) < count // 2 and tries < 200
                    and not _is_utf8(data)):
                continue
            out.append((values, data))
        return out


def _utf8_key(n: int) -> int:
    """Keys whose 4 COMP bytes are valid UTF-8 half the time (``00 00 C3 xx`` = U+00C0…)."""
    return 0xC380 + n % 64 if n % 2 else n


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def trail_rows(dump_json: str) -> list[dict[str, str]]:
    """The after images (column → value) of the records of ``msgcap dump --json`` output."""
    import json

    rows = []
    for line in dump_json.splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "record":
            rows.append({c["name"]: c["value"] for c in rec["columns"]})
    return rows
