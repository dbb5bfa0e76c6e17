"""PIC strings: repetitions expanded, classified and sized (Cobrix's size rules)."""

from __future__ import annotations

import re

from gendef.copybook.model import Picture
from props.errors import CopybookError

_PIC_RE = re.compile(r"([A-Za-z9+\-.,*/$0])(?:\((\d+)\))?")


def parse_picture(text: str, *, file: str | None = None, line: int | None = None,
                  column: int | None = None, fld: str | None = None) -> Picture:
    """Expand repetitions and classify a PIC string (Cobrix's size rules, STYLE.md §1.2)."""
    def bad(reason: str) -> CopybookError:
        return CopybookError(f"PIC {text}: {reason}", file=file, line=line, column=column,
                             field=fld)

    upper = text.upper()
    symbols: list[str] = []
    i = 0
    while i < len(upper):
        if upper.startswith(("CR", "DB"), i):
            symbols += ["-", "-"]
            i += 2
            continue
        m = _PIC_RE.match(upper, i)
        if not m:
            raise bad(f"invalid symbol {text[i]!r}")
        count = int(m.group(2)) if m.group(2) else 1
        if count < 1:
            raise bad("repetition count must be positive")
        symbols += [m.group(1)] * count
        i = m.end()
    if any(s not in "XA9SVP.+-Z*,B0/$" for s in symbols):
        raise bad(f"invalid symbol {next(s for s in symbols if s not in 'XA9SVP.+-Z*,B0/$')!r}")
    if "X" in symbols or "A" in symbols:
        if any(s in "9SVP.+-Z*" for s in symbols):
            raise bad("mixes alphanumeric and numeric symbols")
        return Picture(text, "alnum", display_length=len(symbols))
    if symbols.count("S") > 1 or ("S" in symbols and symbols[0] != "S"):
        raise bad("S must appear once, first")
    if symbols.count("V") + symbols.count(".") > 1:
        raise bad("more than one decimal point")
    digits = scale = left_p = right_p = 0
    after_point = seen_digit = False
    edit_sign: str | None = None
    explicit = False
    for pos, s in enumerate(symbols):
        if s in "9Z*":
            digits += 1
            seen_digit = True
            if after_point:
                scale += 1
        elif s == "P":
            if seen_digit and not after_point:
                right_p += 1
            else:
                left_p += 1
                after_point = True  # the implied point lies left of leading P positions
        elif s in "V.":
            after_point = True
            explicit = explicit or s == "."
        elif s in "+-":
            edit_sign = "leading" if pos == 0 or not seen_digit else "trailing"
    if digits == 0:
        raise bad("no digit positions")
    if left_p and right_p:
        raise bad("P on both sides of the digits")
    length = sum(1 for s in symbols if s not in "SVP")
    return Picture(text, "numeric", digits, scale, right_p if right_p else -left_p,
                   "S" in symbols or edit_sign is not None, explicit, edit_sign, length)
