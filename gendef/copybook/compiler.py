"""The passes put together: text or file → ``Copybook``."""

from __future__ import annotations

from pathlib import Path

from gendef.copybook.entries import EntryParser, Node
from gendef.copybook.flatten import flatten
from gendef.copybook.model import Copybook, RecordLayout, normalize_name
from gendef.copybook.sizing import Layout
from gendef.copybook.tokens import tokenize
from props.errors import CopybookError
from props.inputs import read_input


def compile_copybook(text: str, *, file: str | None = None, trunc: str = "std") -> Copybook:
    """Compile copybook text; ``file`` only names it in errors; ``trunc``: COBOL's TRUNC
    option the data was written under (``fixed.trunc``: std, opt or bin)."""
    parser = EntryParser(tokenize(text, file), file)
    roots = parser.parse()
    if not roots:
        raise CopybookError("no 01 record in copybook", file=file)
    builder = Layout(file)
    records = []
    for root in roots:
        names: dict[str, Node] = {}
        builder.check(root, None, names)
        if root.occurs is not None:
            raise builder.err("OCCURS on a 01 record", root)
        try:
            builder.check_limits(root)
            item = builder.freeze(root, 0)
        except CopybookError as e:
            if e.file is None and file is not None:
                raise CopybookError(e.reason, file=file, line=e.line, column=e.column,
                                    field=e.field) from None
            raise
        records.append(RecordLayout(root.name, item.actual_size, flatten(item, names, file, trunc),
                                    item))
    seen: set[str] = set()
    for r in records:
        key = normalize_name(r.name)
        if key in seen:
            raise CopybookError(f"duplicate 01 record {r.name}", file=file, line=r.item.line,
                                field=r.name)
        seen.add(key)
    return Copybook(tuple(records), file, trunc)


def compile_copybook_file(path: str | Path, trunc: str = "std") -> Copybook:
    """Compile a copybook file (UTF-8, or Latin-1 when it is not valid UTF-8)."""
    p = Path(path)
    try:
        data = read_input(p)
    except OSError as e:
        raise CopybookError(f"cannot read copybook: {e.strerror}", file=str(p)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return compile_copybook(text, file=str(p), trunc=trunc)
