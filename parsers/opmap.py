"""Operation-type and transaction-indicator mapping (properties.md §3.3, §3.4).

The configured value sets become one dict each at build time; a value outside them is a
message error that lists what was expected.
"""

from __future__ import annotations

from collections.abc import Callable

from parsers.model import DELETE, INSERT, TRUNCATE, TX_BEGIN, TX_END, TX_MIDDLE, TX_WHOLE, UPDATE
from props.errors import MessageError
from props.settings import OptypeValues, TxindValues
from props.text import quoted


def optype_codes(values: OptypeValues) -> dict[str, str]:
    """Configured text → 'I', 'U', 'D' or 'T' (exact text; the mapper also trims)."""
    codes = {values.insert: INSERT, values.update: UPDATE, values.delete: DELETE}
    if values.truncate is not None:
        codes[values.truncate] = TRUNCATE
    return codes


def txind_codes(values: TxindValues) -> dict[str, int]:
    """Configured text → TX_BEGIN, TX_MIDDLE, TX_END or TX_WHOLE (exact text)."""
    codes: dict[str, int] = {}
    for code, texts in ((TX_BEGIN, values.begin), (TX_MIDDLE, values.middle),
                        (TX_END, values.end), (TX_WHOLE, values.whole)):
        for text in texts:
            codes.setdefault(text, code)
    return codes


def optype_mapper(values: OptypeValues) -> Callable[[str], str]:
    """Text (trimmed, case-sensitive) → 'I', 'U', 'D' or 'T'; anything else is an error."""
    codes = optype_codes(values)
    expected = ", ".join(quoted(v) for v in codes)

    def optype(text: str) -> str:
        found = codes.get(text) or codes.get(text.strip())
        if found is None:
            raise MessageError(f"optype value {quoted(text)} is not one of {expected}")
        return found
    return optype


def txind_mapper(values: TxindValues) -> Callable[[str], int]:
    """Text (trimmed) → TX_BEGIN, TX_MIDDLE, TX_END or TX_WHOLE; anything else is an error."""
    codes = txind_codes(values)
    expected = ", ".join(quoted(v) for v in codes)

    def txind(text: str) -> int:
        found = codes.get(text)
        if found is None:
            found = codes.get(text.strip())
            if found is None:
                raise MessageError(f"txind value {quoted(text)} is not one of {expected}")
        return found
    return txind
