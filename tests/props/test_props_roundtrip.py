"""Property tests: whatever a careful writer escapes, the loader reads back unchanged."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from props.expr import parse_delim_value
from props.javaprops import parse_properties

_CONTROL = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f", "\\": "\\\\"}


def escape(text: str, *, key: bool) -> str:
    """Java-style escaping: separators and comment marks in keys, blanks at the edges."""
    out = []
    for i, ch in enumerate(text):
        if ch in _CONTROL:
            out.append(_CONTROL[ch])
        elif ch in "=:" and (key or i == 0):
            out.append("\\" + ch)
        elif ch == " " and (key or i == 0 or i == len(text) - 1):
            out.append("\\ ")
        elif ch in "#!" and i == 0:
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or 0xd800 <= ord(ch) <= 0xdfff or ch in "\x85\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(texts.filter(bool), texts), min_size=1, max_size=5),
       st.sampled_from(["=", ":", " = ", "\t", " "]))
def test_escaped_entries_read_back(pairs, separator):
    lines = [f"{escape(k, key=True)}{separator}{escape(v, key=False)}" for k, v in pairs]
    text = "# generated\n" + "\n".join(lines) + "\n"
    entries = parse_properties(text, "gen")
    assert [(e.key, e.value) for e in entries] == pairs
    assert [e.line for e in entries] == list(range(2, 2 + len(pairs)))


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(max_codepoint=255), min_size=1, max_size=20))
def test_hex_escaped_delimiters_read_back(value):
    written = "".join(f"\\x{ord(c):02x}" for c in value)
    assert parse_delim_value(written, prop="delim.fielddelim") == value


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc"), blacklist_characters="\\"),
               min_size=1, max_size=20))
def test_literal_delimiters_read_back(value):
    assert parse_delim_value(value, prop="delim.fielddelim") == value
