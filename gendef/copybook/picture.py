"""PIC strings: classified and sized (Cobrix's size rules), repetitions counted, not expanded.

A repetition such as ``X(20000000)`` is one run, so a huge count costs nothing to read and is
refused at once when over ``MAX_RECORD_SIZE`` (no field is larger than its record).
"""

from __future__ import annotations

import re

from gendef.copybook.model import MAX_RECORD_SIZE, Picture
from props.errors import CopybookError

_PIC_RE = re.compile(r"([A-Za-z9+\-.,*/$0])(?:\(([0-9]+)\))?")
_SYMBOLS = "XA9SVP.+-Z*,B0/$"


# C901 accepted: one branch per PIC symbol and rule, in the order the standard gives them
def parse_picture(text: str, *, file: str | None = None, line: int | None = None,  # noqa: C901
                  column: int | None = None, fld: str | None = None) -> Picture:
    """Classify a PIC string (Cobrix's size rules, STYLE.md §1.2)."""
    def bad(reason: str) -> CopybookError:
        return CopybookError(f"PIC {text}: {reason}", file=file, line=line, column=column,
                             field=fld)

    if not text.isascii():  # every PIC symbol is ASCII; upper() could also change the length
        raise bad("PIC symbols are ASCII characters")
    upper = text.upper()
    runs: list[tuple[str, int]] = []  # (symbol, repetitions), in order
    i = total = 0
    while i < len(upper):
        if upper.startswith(("CR", "DB"), i):
            runs.append(("-", 2))
            i += 2
            total += 2
            continue
        m = _PIC_RE.match(upper, i)
        if not m:
            raise bad(f"invalid symbol {text[i]!r}")
        repeat = int(m.group(2)) if m.group(2) else 1
        if repeat < 1:
            raise bad("repetition count must be positive")
        total += repeat
        if total > MAX_RECORD_SIZE:
            raise bad(f"more than {MAX_RECORD_SIZE:,} positions, the most a record may have")
        runs.append((m.group(1), repeat))
        i = m.end()
    symbols = {s for s, _ in runs}
    wrong = next((s for s, _ in runs if s not in _SYMBOLS), None)
    if wrong is not None:
        raise bad(f"invalid symbol {wrong!r}")

    def count(*which: str) -> int:
        return sum(n for s, n in runs if s in which)

    if symbols & {"X", "A"}:
        if symbols & set("9SVP.+-Z*"):
            raise bad("mixes alphanumeric and numeric symbols")
        return Picture(text, "alnum", display_length=total)
    if count("S") > 1 or ("S" in symbols and runs[0][0] != "S"):
        raise bad("S must appear once, first")
    if count("V", ".") > 1:
        raise bad("more than one decimal point")
    digits = scale = left_p = right_p = 0
    after_point = seen_digit = False
    edit_sign: str | None = None
    explicit = False
    pos = 0
    for s, n in runs:
        if s in "9Z*":
            digits += n
            seen_digit = True
            if after_point:
                scale += n
        elif s == "P":
            if seen_digit and not after_point:
                right_p += n
            else:
                left_p += n
                after_point = True  # the implied point lies left of leading P positions
        elif s in "V.":
            after_point = True
            explicit = explicit or s == "."
        elif s in "+-":  # the run's last sign decides, as each sign position would
            edit_sign = "leading" if pos + n - 1 == 0 or not seen_digit else "trailing"
        pos += n
    if digits == 0:
        raise bad("no digit positions")
    if left_p and right_p:
        raise bad("P on both sides of the digits")
    return Picture(text, "numeric", digits, scale, right_p if right_p else -left_p,
                   "S" in symbols or edit_sign is not None, explicit, edit_sign,
                   total - count("S", "V", "P"))
