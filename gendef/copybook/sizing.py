"""Pass 3: usages resolved, REDEFINES checked, limits checked, sizes bottom-up and offsets
top-down; the nodes are frozen into ``Item`` trees."""

from __future__ import annotations

from gendef.copybook.entries import Node, Token
from gendef.copybook.model import (
    COMP,
    COMP1,
    COMP2,
    COMP3,
    COMP5,
    DISPLAY,
    MAX_BINARY_DIGITS,
    MAX_FIELDS,
    MAX_RECORD_SIZE,
    Item,
    normalize_name,
)
from props.errors import CopybookError


def binary_size(usage: str, precision: int) -> int:
    """Bytes of a COMP/COMP-5 (2/4/8 up to 18 digits, then enough bits), COMP-3, COMP-1/2."""
    if usage == COMP1:
        return 4
    if usage == COMP2:
        return 8
    if usage == COMP3:
        return precision // 2 + 1
    if precision <= 4:
        return 2
    if precision <= 9:
        return 4
    if precision <= 18:
        return 8
    return wide_binary(precision)


def wide_binary(precision: int) -> int:
    """Cobrix: ceil((log2(10) × digits + 1) / 8) bytes for more than 18 digits."""
    bits_x = precision * 3321928094887362 + 10**15  # log2(10) scaled by 10^15, plus one bit
    return -(-bits_x // (8 * 10**15))


def elementary_size(n: Node) -> int:
    usage = n.usage or DISPLAY
    if usage in (COMP1, COMP2):
        return binary_size(usage, 0)
    pic = n.picture
    assert pic is not None
    if pic.kind == "alnum":
        if usage != DISPLAY:
            raise CopybookError(f"USAGE {usage} needs a numeric PIC", line=n.line,
                                column=n.column, field=n.name)
        return pic.display_length
    if usage == DISPLAY:
        extra = 1 if n.sign_separate and pic.edit_sign is None else 0
        return pic.display_length + extra
    return binary_size(usage, pic.digits)


class Layout:
    """Resolves usages, REDEFINES and DEPENDING ON names, sizes and offsets; freezes items."""

    def __init__(self, file: str | None) -> None:
        self.file = file
        self._sizes: dict[int, int] = {}

    def err(self, reason: str, n: Node, tok: Token | None = None) -> CopybookError:
        return CopybookError(reason, file=self.file, line=tok.line if tok else n.line,
                             column=tok.column if tok else n.column, field=n.name)

    def check(self, n: Node, inherited_usage: str | None, names: dict[str, Node]) -> None:
        """Validate one subtree; usage of a group applies to its items."""
        usage = n.usage or inherited_usage
        if not n.children:  # a PIC or COMP-1/2 with subordinate items failed in the parser
            n.usage = usage or DISPLAY
            if n.picture is None and n.usage not in (COMP1, COMP2):
                raise self.err("elementary item without PIC", n)
            if n.usage in (COMP1, COMP2) and n.picture is not None and (
                    n.picture.kind != "numeric"):
                raise self.err(f"{n.usage} needs a numeric PIC or none", n, n.pic_token)
            if n.picture is not None and n.picture.kind == "numeric":
                if n.usage != DISPLAY and n.picture.explicit_point:
                    raise self.err(f"explicit decimal point with USAGE {n.usage}", n,
                                   n.pic_token)
                if n.usage in (COMP, COMP5) and n.picture.digits > MAX_BINARY_DIGITS:
                    raise self.err(f"more than {MAX_BINARY_DIGITS} digits", n, n.pic_token)
        if n.sign_leading is not None and (n.picture is None or n.picture.kind != "numeric"):
            raise self.err("SIGN clause on a non-numeric item", n)
        if not n.filler:
            names.setdefault(normalize_name(n.name), n)
        prev: Node | None = None
        block_head: Node | None = None
        for c in n.children:
            if c.redefines is not None:
                target = normalize_name(c.redefines)
                if block_head is None or prev is None or target not in (
                        normalize_name(block_head.name), normalize_name(prev.name)):
                    raise self.err(f"REDEFINES {c.redefines}: not the preceding item of level "
                                   f"{c.level:02d}", c, c.redefines_token)
                if c.occurs is not None and c.depending_on is not None:
                    raise self.err("REDEFINES with OCCURS DEPENDING ON", c)
                prev.redefined = True
            else:
                block_head = c
            prev = c
            self.check(c, usage, names)

    def check_limits(self, n: Node) -> int:
        """Elementary fields of ``n``'s subtree, all occurrences counted; raises at the first
        item (innermost first) whose fields or bytes exceed ``MAX_FIELDS`` / ``MAX_RECORD_SIZE``,
        before anything is laid out."""
        fields = sum(self.check_limits(c) * (c.occurs or 1) for c in n.children) or 1
        if fields * (n.occurs or 1) > MAX_FIELDS:
            raise self.err(f"{fields * (n.occurs or 1):,} fields, more than the {MAX_FIELDS:,} "
                           "a record may have", n)
        size = self.size(n) * (n.occurs or 1)
        if size > MAX_RECORD_SIZE:
            raise self.err(f"{size:,} bytes, more than the {MAX_RECORD_SIZE:,} a record may have",
                           n)
        return fields

    def size(self, n: Node) -> int:
        """Bytes of one occurrence; a REDEFINES block counts as its largest member."""
        known = self._sizes.get(id(n))
        if known is not None:
            return known
        if not n.children:
            n_size = elementary_size(n)
        else:
            n_size = sum(max(self.size(c) * (c.occurs or 1) for c in block)
                         for block in blocks(n.children))
        self._sizes[id(n)] = n_size
        return n_size

    def freeze(self, n: Node, offset: int, actual: int | None = None) -> Item:
        own = self.size(n)
        children: list[Item] = []
        if n.children:
            pos = offset
            for block in blocks(n.children):
                sizes = [self.size(c) for c in block]
                widest = max(sizes)
                for c in block:
                    children.append(self.freeze(c, pos, widest if len(block) > 1 else None))
                pos += max(s * (c.occurs or 1) for s, c in zip(sizes, block, strict=True))
        return Item(
            level=n.level, name=n.name, line=n.line, column=n.column, offset=offset, size=own,
            actual_size=actual if actual is not None else own, picture=n.picture,
            usage=n.usage or DISPLAY, sign_leading=bool(n.sign_leading) if n.sign_leading
            is not None else bool(n.picture and n.picture.edit_sign == "leading"),
            sign_separate=n.sign_separate or bool(n.picture and n.picture.edit_sign),
            occurs=n.occurs, occurs_min=n.occurs_min, depending_on=n.depending_on,
            redefines=n.redefines, redefined=n.redefined, filler=n.filler, key=n.key,
            date_format=n.date_format, children=tuple(children))


def blocks(children: list[Node]) -> list[list[Node]]:
    """Children grouped into REDEFINES blocks (an item followed by those redefining it)."""
    out: list[list[Node]] = []
    for c in children:
        if c.redefines is not None and out:
            out[-1].append(c)
        else:
            out.append([c])
    return out
