"""Pass 4: an item tree → the flat tuple of elementary fields of a record, OCCURS expanded,
REDEFINES and ODO marked, columns named (``naming``)."""

from __future__ import annotations

from dataclasses import replace

from gendef.copybook.entries import Node
from gendef.copybook.model import COMP, COMP5, FieldLayout, Item, Odo, normalize_name
from gendef.copybook.naming import name_columns
from props.errors import CopybookError


def item_field(item: Item, trunc: str = "std") -> FieldLayout:
    """The field layout of one elementary item at its first occurrence (for its decoder);
    ``trunc``: COBOL's TRUNC option, which decides whether a COMP field is ``native`` (COMP-5
    always is: TRUNC does not apply to it)."""
    pic = item.picture
    return FieldLayout(
        name=item.name, column=normalize_name(item.name), offset=item.offset, length=item.size,
        usage=item.usage, kind=item.kind,
        digits=pic.digits if pic else 0, scale=pic.scale if pic else 0,
        scale_factor=pic.scale_factor if pic else 0,
        signed=bool(pic and (pic.signed or item.sign_separate)) or item.kind == "float",
        sign_leading=item.sign_leading, sign_separate=item.sign_separate,
        explicit_point=bool(pic and pic.explicit_point), date_format=item.date_format,
        key=item.key, redefined=item.redefined, redefining=item.redefines is not None,
        filler=item.filler, line=item.line,
        native=item.usage == COMP5 or (item.usage == COMP and trunc == "bin"))


def flatten(root: Item, names: dict[str, Node], file: str | None,
            trunc: str = "std") -> tuple[FieldLayout, ...]:
    out: list[FieldLayout] = []

    def walk(item: Item, shift: int, path: tuple[str, ...], idx: tuple[int, ...],
             odo: tuple[Odo, ...], redefined: bool, redefining: bool, filler: bool) -> None:
        count = item.occurs or 1
        stride = item.actual_size if item.occurs else 0
        for k in range(count):
            sub_idx = idx + ((k + 1,) if item.occurs else ())
            sub_odo = odo + ((Odo(item.depending_on, k + 1),) if item.depending_on else ())
            base = shift + k * stride
            r1, r2 = redefined or item.redefined, redefining or item.redefines is not None
            if item.children:
                for c in item.children:
                    walk(c, base, path + (item.name,), sub_idx, sub_odo, r1, r2,
                         filler or item.filler)
                continue
            out.append(replace(
                item_field(item, trunc), offset=item.offset + base, redefined=r1, redefining=r2,
                filler=filler or item.filler, depending_on=sub_odo, occurs_index=sub_idx,
                path=path))

    for c in root.children:
        walk(c, 0, (root.name,), (), (), False, False, False)
    if not root.children:
        walk(root, 0, (), (), (), False, False, False)
    for f in out:
        for o in f.depending_on:
            target = names.get(normalize_name(o.counter))
            if target is None or target.children:
                raise CopybookError(f"DEPENDING ON {o.counter}: no such elementary item",
                                    file=file, line=f.line, field=f.name)
    return name_columns(out)
