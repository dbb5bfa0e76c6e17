"""Column names of flattened fields (sourcedefs.md §7.1): upper case, '-' → '_', parent
groups prefixed until unique, occurrence indexes appended."""

from __future__ import annotations

from dataclasses import replace

from gendef.copybook.model import FieldLayout, normalize_name


def name_columns(fields: list[FieldLayout]) -> tuple[FieldLayout, ...]:
    """Unique column names for the items that can be columns; FILLERs stay ``FILLER``."""
    named = [f for f in fields if not f.filler]
    columns = dict(zip(map(id, named), unique_columns(named), strict=True))
    return tuple(replace(f, column=columns.get(id(f), "FILLER")) for f in fields)


def unique_columns(fields: list[FieldLayout] | tuple[FieldLayout, ...]) -> list[str]:
    """Column names per §7.1: upper case, '-' → '_', parents prefixed until unique, then _n."""
    depth = [0] * len(fields)

    def base(i: int) -> str:
        f = fields[i]
        parts = list(f.path[len(f.path) - depth[i]:] if depth[i] else ()) + [f.name]
        name = "_".join(normalize_name(p) for p in parts)
        return name + "".join(f"_{k}" for k in f.occurs_index)

    names = [base(i) for i in range(len(fields))]
    for _ in range(64):
        seen: dict[str, list[int]] = {}
        for i, nm in enumerate(names):
            seen.setdefault(nm, []).append(i)
        clashes = [ix for ix in seen.values() if len(ix) > 1]
        if not clashes:
            break
        grown = False
        for ix in clashes:
            for i in ix:
                if depth[i] < len(fields[i].path):
                    depth[i] += 1
                    grown = True
                names[i] = base(i)
        if not grown:
            break
    return names
