"""XPath compilation: engine choice, Oracle accessors, results as text and as booleans."""

from __future__ import annotations

import pytest

from parsers.xpath import SafeXml, compile_xpath, scan
from props.errors import MessageError, PropertyError

DOC = """<t xmlns:p="urn:p" ts="2010-02-05:10:11:21">
  <op table="my.table" optype="I">
    <c name="k" isnull="false"><v>key</v></c>
    <c name="x"><v><![CDATA[a<b]]></v><b>bold <i>it</i></b> tail &amp; more</c>
    <!-- comment -->
    <p:n>ns</p:n>
  </op>
</t>"""


@pytest.fixture(scope="module")
def doc():
    return SafeXml().parse(DOC)


def op_node(doc):
    return doc.root.find("op")


@pytest.mark.parametrize("expr, engine, expected", [
    ("@table", "lxml", "my.table"),
    ("./c[1]/v/text()", "lxml", "key"),
    ("c[@name='x']/v/text()", "lxml", "a<b"),
    ("../@ts", "lxml", "2010-02-05:10:11:21"),
    ("/t/@ts", "lxml", "2010-02-05:10:11:21"),
    ("//c[2]/@name", "lxml", "x"),
    ("*[1]/@name", "lxml", "k"),
    ("c[text()='never']/@name", "lxml", None),
    ("/t/*[name()='op']/@optype", "lxml", "I"),
    ("c[position()=2]/@name", "lxml", "x"),
    ("count(c)", "lxml", "2"),
    ("1 div 4", "lxml", "0.25"),
    ("string(@nothing)", "lxml", ""),
    ("@nothing", "lxml", None),
    ("c[1]/name()", "lxml", "c"),
    ("c[2]/position()", "lxml", "2"),
    ("name()", "lxml", "op"),
    ("position()", "lxml", "1"),
    ("upper-case(@table)", "elementpath", "MY.TABLE"),
    ("replace(c[1]/v/text(), '^k', 'K')", "elementpath", "Key"),
    ("format-dateTime(xs:dateTime('2010-02-05T10:11:21'), '[Y0001]/[M01]')", "elementpath",
     "2010/02"),
    ("for $c in c return string($c/@name)", "elementpath", "k"),
    ("if (@optype = 'I') then 'insert' else 'other'", "elementpath", "insert"),
    ("c[upper-case(@name)='X']/@name", "elementpath", "x"),
    ("p:n/text()", "lxml", "ns"),
])
def test_values_and_engine(doc, expr, engine, expected):
    compiled = compile_xpath(expr, "r.value", {"p": "urn:p"})
    assert compiled.engine == engine
    assert compiled.text_value(op_node(doc), doc) == expected


def test_content_accessor_keeps_child_markup(doc):
    compiled = compile_xpath("c[2]/content()", "r.value")
    assert compiled.text_value(op_node(doc), doc) == (
        "<v>a&lt;b</v><b>bold <i>it</i></b> tail &amp; more")


def test_content_of_text_only_element(doc):
    assert compile_xpath("c[1]/v/content()", "r.v").text_value(op_node(doc), doc) == "key"


def test_element_string_value_joins_descendant_text(doc):
    assert compile_xpath("c[2]/b", "r.v").text_value(op_node(doc), doc) == "bold it"


@pytest.mark.parametrize("expr, expected", [
    ("c[1]/@isnull", True),            # a node-set: true whatever the attribute says
    ("c[1]/@isnull='true'", False),
    ("c[1]/@missing", False),
    ("c", True),
    ("count(c) > 5", False),
    ("string(@table)", True),
    ("string(@nothing)", False),
    ("0", False),
    ("exists(c[@name='x'])", True),    # XPath 2.0 function
    ("empty(c)", False),
    ("name()", True),
])
def test_boolean(doc, expr, expected):
    assert compile_xpath(expr, "r.isnull").boolean(op_node(doc), doc) is expected


def test_match_nodes(doc):
    nodes = compile_xpath("./c", "r.match").nodes(op_node(doc), doc)
    assert [n.get("name") for n in nodes] == ["k", "x"]
    nodes = compile_xpath("c[upper-case(@name) = 'K']", "r.match").nodes(op_node(doc), doc)
    assert [n.get("name") for n in nodes] == ["k"]


def test_match_selecting_text_is_a_message_error(doc):
    with pytest.raises(MessageError, match=r"r.match.*not an element"):
        compile_xpath("@table", "r.match").nodes(op_node(doc), doc)


@pytest.mark.parametrize("expr", ["c[", "foo(@a)", "@a eq", "]", "c[1", "//"])
def test_invalid_expression_names_the_property(expr):
    with pytest.raises(PropertyError, match=r"^dyncolrule\.value: invalid XPath"):
        compile_xpath(expr, "dyncolrule.value")


def test_unbound_prefix_is_an_error():
    with pytest.raises(PropertyError, match=r"prefix 'q' is not bound.*xml.namespace.q"):
        compile_xpath("q:order/@id", "r.match")


def test_runtime_error_is_a_message_error(doc):
    compiled = compile_xpath("xs:integer(@table)", "r.index")
    with pytest.raises(MessageError, match=r"r.index.*failed"):
        compiled.text_value(op_node(doc), doc)


def test_scan_finds_functions_outside_strings():
    assert not scan("c[@name='upper-case(x)']").needs_xpath2
    assert scan("lower-case(@a)").needs_xpath2
    assert scan("fn:string(@a)").needs_xpath2
    assert not scan("text() and node()").needs_xpath2
    assert not scan("a and (b or c)").needs_xpath2
    assert not scan("c[1]").needs_xpath2 and scan("c[1]").balanced
    assert not scan("c[1").balanced
    assert scan("p:a/q:b").prefixes == {"p", "q"}
    assert scan("child::a").prefixes == frozenset()
