"""Operation-type and transaction-indicator mapping (properties.md §3.3, §3.4).

The configured value sets become one dict each at build time; a value outside them is a
message error that lists what was expected.
"""

from __future__ import annotations

from collections.abc import Callable

from parsers.model import DELETE, INSERT, TRUNCATE, TX_BEGIN, TX_END, TX_MIDDLE, TX_WHOLE, UPDATE
from props.errors import MessageError
from props.settings import OptypeValues, TxindValues


def optype_mapper(values: OptypeValues) -> Callable[[str], str]:
    """Text (trimmed, case-sensitive) → 'I', 'U', 'D' or 'T'; anything else is an error."""
    table = {values.insert: INSERT, values.update: UPDATE, values.delete: DELETE}
    if values.truncate is not None:
        table[values.truncate] = TRUNCATE
    expected = ", ".join(repr(v) for v in table)

    def optype(text: str) -> str:
        found = table.get(text) or table.get(text.strip())
        if found is None:
            raise MessageError(f"optype value {text!r} is not one of {expected}")
        return found
    return optype


def txind_mapper(values: TxindValues) -> Callable[[str], int]:
    """Text (trimmed) → TX_BEGIN, TX_MIDDLE, TX_END or TX_WHOLE; anything else is an error."""
    table: dict[str, int] = {}
    for code, texts in ((TX_BEGIN, values.begin), (TX_MIDDLE, values.middle),
                        (TX_END, values.end), (TX_WHOLE, values.whole)):
        for text in texts:
            table.setdefault(text, code)
    expected = ", ".join(repr(v) for v in table)

    def txind(text: str) -> int:
        found = table.get(text)
        if found is None:
            found = table.get(text.strip())
            if found is None:
                raise MessageError(f"txind value {text!r} is not one of {expected}")
        return found
    return txind
