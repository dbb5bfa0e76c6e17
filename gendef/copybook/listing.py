"""The record layout listing in Cobrix's ``generateRecordLayoutPositions`` form."""

from __future__ import annotations

from collections.abc import Callable

from gendef.copybook.model import Copybook, Item

LAYOUT_HEADER = "-------- FIELD LEVEL/NAME --------- --ATTRIBS--    FLD  START     END  LENGTH\n\n"


def layout_listing(copybook: Copybook, *, names: Callable[[Item], str] | None = None,
                   legacy_root: bool = False) -> str:
    """The record layout table in Cobrix's ``_layout.txt`` form (1-based START/END/LENGTH).

    ``names`` optionally maps an ``Item`` to the name shown (filler naming policies);
    ``legacy_root`` prints the 01 record as older Cobrix did (no level, not numbered).
    """
    show = names or (lambda it: it.clean_name)
    counter = 0
    parts = []

    def row(it: Item, indent: str) -> str:
        attribs = ("r" if it.redefined else "") + ("R" if it.redefines else "") + (
            "[]" if it.occurs else "")
        start = it.offset + 1
        length = it.actual_size * (it.occurs or 1) if it.children else it.actual_size
        return (f"{indent}{it.level} {show(it)}".ljust(39) + attribs.ljust(11)
                + f"{counter:>5}{start:>7}{start + length - 1:>7}{length:>7}")

    def group(it: Item, indent: str) -> None:
        nonlocal counter
        for c in it.children:
            counter += 1
            parts.append(row(c, indent))
            if c.children:
                group(c, indent + "  ")

    for rec in copybook.records:
        if legacy_root:
            counter = 0
            it = rec.item
            parts.append(f"{show(it):<55}{1:>7}{it.actual_size:>7}{it.actual_size:>7}")
        else:
            counter = 1
            parts.append(row(rec.item, ""))
        group(rec.item, "  ")
    return LAYOUT_HEADER + "\n".join(parts)
