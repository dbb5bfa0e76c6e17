"""Java .properties syntax with msgcap's rules (properties.md §1)."""

from __future__ import annotations

import logging

import pytest

from props.errors import PropertyError
from props.javaprops import Entry, parse_properties, substitute_env


def kv(text: str) -> dict[str, str]:
    return {e.key: e.value for e in parse_properties(text, "p.properties")}


@pytest.mark.parametrize("line", ["a=b", "a:b", "a b", "a = b", "a : b", "a\tb", "  a=b",
                                  "a\f=\fb", "a  =  b"])
def test_separators(line):
    assert kv(line) == {"a": "b"}


def test_only_first_separator_counts():
    assert kv("a=b=c:d") == {"a": "b=c:d"}
    assert kv("a b c") == {"a": "b c"}
    assert kv("a:=b") == {"a": "=b"}


def test_key_without_value():
    assert kv("a\nb=\nc:") == {"a": "", "b": "", "c": ""}


def test_comments_and_blank_lines():
    text = "# comment\n! also\n   # indented\n\n  \na=1\n"
    assert kv(text) == {"a": "1"}


def test_hash_inside_value_is_not_a_comment():
    assert kv("a=x # y") == {"a": "x # y"}


def test_comment_line_does_not_continue():
    assert kv("# comment \\\na=1") == {"a": "1"}


def test_line_numbers_are_those_of_the_first_line():
    entries = parse_properties("# c\n\na=1\nb=2\\\n  3\nc=4\n", "f")
    assert [(e.key, e.line) for e in entries] == [("a", 3), ("b", 4), ("c", 6)]
    assert entries[0].where == "f:3"


def test_continuation_drops_leading_whitespace():
    assert kv("a=one, \\\n     two,\\\n\tthree") == {"a": "one, two,three"}


def test_even_backslashes_do_not_continue():
    assert kv("a=x\\\\\nb=y") == {"a": "x\\", "b": "y"}


def test_odd_backslashes_continue():
    assert kv("a=x\\\\\\\ny") == {"a": "x\\y"}


def test_continuation_line_looking_like_comment_is_content():
    assert kv("a=1\\\n#2") == {"a": "1#2"}


def test_backslash_at_end_of_file_is_dropped():
    assert kv("a=1\\") == {"a": "1"}


@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"])
def test_line_terminators(line_end):
    assert kv(line_end.join(["a=1", "b=2\\", "  3"])) == {"a": "1", "b": "23"}


def test_bom_is_skipped():
    assert kv("\ufeffa=1") == {"a": "1"}


@pytest.mark.parametrize("raw, value", [
    (r"\t", "\t"), (r"\n", "\n"), (r"\r", "\r"), (r"\f", "\f"), (r"\\", "\\"), (r"\=", "="),
    (r"\:", ":"), (r"\#", "#"), (r"\!", "!"), ("x\\ y", "x y"), (r"\u0041", "A"),
    (r"\u00e9t\u00E9", "été"), (r"\ud83d\ude00", "\U0001F600"),
])
def test_escapes(raw, value):
    assert kv(f"k={raw}") == {"k": value}


@pytest.mark.parametrize("raw", [r"\x0a", r"\'", r"\q", r"\x0d\x0a", r"a\b"])
def test_other_backslashes_are_kept(raw):
    assert kv(f"k={raw}") == {"k": raw}


def test_escaped_separators_in_key():
    assert kv(r"a\=b\:c\ d=v") == {"a=b:c d": "v"}


def test_escaped_leading_space_in_value():
    assert kv("k=\\  x") == {"k": "  x"}


@pytest.mark.parametrize("raw", [r"\u00", r"\u12G4", r"\uZZZZ"])
def test_malformed_unicode_escape(raw):
    with pytest.raises(PropertyError) as err:
        parse_properties(f"# c\nk={raw}", "p.properties")
    assert str(err.value).startswith("p.properties:2: k: malformed \\uXXXX escape")


def test_unpaired_surrogate_is_an_error():
    with pytest.raises(PropertyError, match="surrogate"):
        parse_properties(r"k=\ud83d", "p")


def test_trailing_whitespace_removed_with_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        assert kv("a=x  \t\n# c\nb=y\\\n  z \n") == {"a": "x", "b": "yz"}
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert messages[0].startswith("p.properties:1: a: trailing whitespace removed")
    assert messages[1].startswith("p.properties:4: b: trailing whitespace removed")


def test_no_warning_without_trailing_whitespace(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        kv("a=x\nb= \nc")
    assert not caplog.records


def test_escaped_trailing_space_is_kept():
    assert kv("k=x\\ ") == {"k": "x "}


def test_quoted_constant_keeps_inner_whitespace():
    assert kv('k=" a b "  ') == {"k": '" a b "'}


def test_duplicates_are_all_returned_in_order():
    entries = parse_properties("a=1\na=2")
    assert [(e.key, e.value) for e in entries] == [("a", "1"), ("a", "2")]


def test_secret_hidden_in_entry_repr():
    entry = Entry("jms.password", "s3cret", "f", 1)
    assert "s3cret" not in repr(entry)
    assert "s3cret" in repr(Entry("jms.user", "s3cret", "f", 1))


class TestEnv:
    def sub(self, value: str, env: dict[str, str] | None = None) -> str:
        return substitute_env(value, env or {}, prop="k", file="f", line=3)

    def test_replaced(self):
        assert self.sub("${A}-${B_2}", {"A": "x", "B_2": "y"}) == "x-y"

    def test_dollar_dollar_brace_is_literal(self):
        assert self.sub("$${A}", {"A": "x"}) == "${A}"

    def test_plain_dollar_names_are_not_substituted(self):
        assert self.sub("$JMSTxId $ $$x", {"JMSTxId": "no"}) == "$JMSTxId $ $$x"

    def test_value_is_inserted_verbatim(self):
        assert self.sub("${A}", {"A": "${B}"}) == "${B}"

    def test_unset_is_an_error_naming_it(self):
        with pytest.raises(PropertyError) as err:
            self.sub("${NOPE}")
        assert str(err.value) == "f:3: k: environment variable NOPE is not set"

    @pytest.mark.parametrize("value", ["${A", "${}", "${1A}", "${A B}"])
    def test_malformed(self, value):
        with pytest.raises(PropertyError, match="f:3: k: "):
            self.sub(value, {"A": "x"})
