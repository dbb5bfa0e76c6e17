"""Splitting, quotes, escapes and NULL of the delimited parser (properties.md §5.1, §14 #15)."""

import csv
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parsers.delim import Dialect
from props.errors import MessageError, PropertyError


def test_plain_records():
    assert Dialect().split("a,b,c\nd,e,f\n") == [["a", "b", "c"], ["d", "e", "f"]]


def test_final_line_delimiter_is_optional_and_blank_lines_are_empty_records():
    assert Dialect().split("a,b\nc,d") == [["a", "b"], ["c", "d"]]
    assert Dialect().split("a\n\nb\n") == [["a"], [], ["b"]]
    assert Dialect().split('"x,y"\n\nb\n') == [["x,y"], [], ["b"]]


def test_crlf_with_the_default_line_delimiter():
    assert Dialect().split("a,b\r\nc,d\r\n") == [["a", "b"], ["c", "d"]]
    assert Dialect().split('"a",b\r\n"c\r\nd",e\r\n') == [["a", "b"], ["c\r\nd", "e"]]
    # another line delimiter keeps carriage returns
    assert Dialect(linedelim="|").split("a\r|b") == [["a\r"], ["b"]]


# -- the documented cases of §5.1 ----------------------------------------------------------------

def test_documented_field_delimiter_escape():
    d = Dialect(fielddelim="-", fielddelim_escaped="$#$")
    assert d.split("one-two-three-four$#$fifths") == [["one", "two", "three", "four-fifths"]]


def test_documented_doubled_quote():
    assert Dialect().split('"They call him ""Big Al"""') == [['They call him "Big Al"']]


def test_documented_backslash_quote_escape():
    d = Dialect(quote="'", quote_escaped="\\'")
    assert d.split("'They used Mike\\'s truck'") == [["They used Mike's truck"]]


def test_documented_null_indicator_and_its_escape():
    d = Dialect(nullindicator="NULL", nullindicator_escaped="$NULL$")
    assert d.split("1,2,NULL,4,5") == [["1", "2", None, "4", "5"]]
    assert d.split("1,2,$NULL$,4,5") == [["1", "2", "NULL", "4", "5"]]


# -- NULL ------------------------------------------------------------------------------------

def test_without_indicator_an_empty_unquoted_value_is_null():
    assert Dialect().split('a,,"",\n') == [["a", None, "", None]]
    assert Dialect().split(',"x"') == [[None, "x"]]


def test_with_indicator_only_the_unquoted_indicator_is_null():
    d = Dialect(nullindicator="NULL")
    assert d.split('a,,"NULL",NULL,"",NULLS') == [["a", "", "NULL", None, "", "NULLS"]]


def test_null_test_precedes_unescaping():
    """An escape that unescapes to the indicator text is data, not NULL (§5.1 step 2, 3)."""
    d = Dialect(nullindicator="N", fielddelim_escaped="N")
    assert d.split("a,N,xNy") == [["a", None, "x,y"]]


# -- quotes --------------------------------------------------------------------------------------

def test_quoted_values_hold_delimiters_and_lose_their_quotes():
    assert Dialect().split('1,"ACME, Inc.","two\nlines",x') == [
        ["1", "ACME, Inc.", "two\nlines", "x"]]


def test_a_quote_inside_an_unquoted_value_is_data():
    assert Dialect().split('5" pipe,ab"c') == [['5" pipe', 'ab"c']]


def test_multi_character_delimiters_and_quote():
    d = Dialect(fielddelim="\u00c7", linedelim="||", quote="<<")
    assert d.split("a\u00c7<<b||c<<<<d<<\u00c7e||x\u00c7y") == [["a", "b||c<<d", "e"], ["x", "y"]]


def test_hex_delimiters_decoded_by_props_work_like_literals():
    d = Dialect(fielddelim="\x01", linedelim="\x1e")
    assert d.split("a\x01b\x1ec\x01d\x1e") == [["a", "b"], ["c", "d"]]


def test_unterminated_quote_is_a_message_error():
    with pytest.raises(MessageError, match="record 2, field 2: quoted value not closed"):
        Dialect().split('a,b\nc,"d,e\n')


def test_text_after_a_closing_quote_is_an_error():
    with pytest.raises(MessageError, match="record 1, field 1"):
        Dialect().split('"abc"def,x')


# -- escapes -------------------------------------------------------------------------------------

def test_escapes_that_contain_a_delimiter_are_not_split():
    d = Dialect(fielddelim_escaped="\\,", linedelim_escaped="\\n\\")
    assert d.split("a\\,b,c\nd\\n\\e") == [["a,b", "c"], ["d\ne"]]


def test_line_delimiter_escape():
    d = Dialect(linedelim_escaped="%/%")
    assert d.split("a%/%b,c\n") == [["a\nb", "c"]]


def test_escapes_are_replaced_in_quoted_and_unquoted_values():
    d = Dialect(fielddelim_escaped="$#$", nullindicator="NULL", nullindicator_escaped="~N~")
    assert d.split('"x$#$y",x$#$y,"~N~",~N~') == [["x,y", "x,y", "NULL", "NULL"]]


def test_several_escapes_in_one_value_are_replaced_in_one_pass():
    d = Dialect(fielddelim="|", fielddelim_escaped="\\p", linedelim_escaped="\\n")
    assert d.split("a\\pb\\nc\\\\pd") == [["a|b\nc\\|d"]]


def test_quote_escape_in_an_unquoted_value():
    assert Dialect(quote="'", quote_escaped="\\'").split("Mike\\'s,x") == [["Mike's", "x"]]


def test_dialect_validation():
    with pytest.raises(PropertyError, match="delim.fielddelim"):
        Dialect(fielddelim="")
    with pytest.raises(PropertyError, match="same"):
        Dialect(fielddelim="|", linedelim="|")
    with pytest.raises(PropertyError, match="delim.nullindicator.escaped"):
        Dialect(nullindicator_escaped="$N$")
    with pytest.raises(PropertyError, match="delim.linedelim.escaped"):
        Dialect(fielddelim_escaped="~", linedelim_escaped="~")


# -- agreement with csv and between the two paths ---------------------------------------------

TEXT = st.text(alphabet=st.sampled_from('ab ,"\n;é'), max_size=8)  # csv loses a bare \r


@given(st.lists(st.lists(TEXT, min_size=1, max_size=5), min_size=1, max_size=5))
def test_agrees_with_csv_reader(rows):
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    body = out.getvalue()
    expected = [row for row in csv.reader(io.StringIO(body, newline="")) if row]
    got = [[v if v is not None else "" for v in rec] for rec in Dialect().split(body) if rec]
    assert got == expected


@given(st.lists(st.lists(st.text(alphabet="ab;|~ ", max_size=6), min_size=1, max_size=4),
                min_size=1, max_size=4))
def test_fast_and_general_paths_agree(rows):
    d = Dialect(fielddelim=";", linedelim="|", nullindicator="~", fielddelim_escaped="ab")
    body = "|".join(";".join(row) for row in rows)
    fast = d.split(body)
    general = d._scan(body)
    assert fast == general


def outcome(split, body):
    try:
        return split(body)
    except MessageError as error:
        return str(error)


@given(st.text(alphabet='ab,"\n\rN ', max_size=30), st.sampled_from([None, "N", "NN"]))
def test_csv_path_and_tokenizer_agree(body, null):
    """Quoted bodies go through csv.reader when it reads them exactly like §5.1."""
    d = Dialect(nullindicator=null)
    assert outcome(d.split, body) == outcome(d._scan, body)


def test_csv_path_is_used_for_classic_quoted_bodies():
    d = Dialect(nullindicator="NULL")
    body = 'a,"b,c",NULL\n"x\ny",,z\n'
    assert d._csv_rows(body) == [["a", "b,c", "NULL"], ["x\ny", "", "z"]]
    assert d.split(body) == [["a", "b,c", None], ["x\ny", "", "z"]]
    assert d._csv_rows('"NULL",x') is None  # a quoted indicator is text: the tokenizer decides
    assert Dialect(quote="'", quote_escaped="\\'")._csv_rows("'a',b") is None


def test_csv_path_reads_doubled_quotes_inside_quoted_values():
    """csv unescapes a quoted value's doubled quotes as §5.1 does; a doubled quote in an
    unquoted value (§5.1 unescapes it, csv keeps both) and an empty quoted value without a
    NULL indicator (csv reads it as the unquoted NULL) go to the tokenizer."""
    d = Dialect(nullindicator="NULL")
    body = 'a,"said ""hi"", then",""\n'
    assert d._csv_rows(body) == [["a", 'said "hi", then', ""]]
    assert d.one_line(body) == ["a", 'said "hi", then', ""]
    assert d._csv_rows('a""b,"c"') is None
    assert d.split('a""b,"c"') == [['a"b', "c"]]
    assert d._csv_rows('"x""""y",z') is None  # csv: x""y, which a doubled quote also gives
    assert d.split('"x""""y",z') == [['x""y', "z"]]
    assert Dialect().one_line(',"",b') is None
    assert Dialect().split(',"",b') == [[None, "", "b"]]
