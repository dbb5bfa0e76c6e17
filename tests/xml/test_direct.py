"""Plain child paths run on lxml's element API: they must give exactly libxml2's XPath results."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from parsers.xpath import SafeXml, compile_xpath, to_text

NAMES = ["a", "b", "c"]


@st.composite
def element(draw, depth=0):
    tag = draw(st.sampled_from(NAMES))
    attrs = draw(st.dictionaries(st.sampled_from(["x", "y"]), st.sampled_from(["", "1", "v"]),
                                 max_size=2))
    attr_text = "".join(f' {k}="{v}"' for k, v in attrs.items())
    parts = [draw(st.sampled_from(["", "t", " "]))]
    if depth < 3:
        for _ in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(["el", "el", "comment", "cdata", "ns"]))
            if kind == "el":
                parts.append(draw(element(depth + 1)))
            elif kind == "comment":
                parts.append("<!--k-->")
            elif kind == "cdata":
                parts.append("<![CDATA[<d>]]>")
            else:
                parts.append('<a xmlns="urn:n">ns</a>')
            parts.append(draw(st.sampled_from(["", "tail", "\n"])))
    return f"<{tag}{attr_text}>{''.join(parts)}</{tag}>"


PATHS = ["@x", "./@y", "a", "./b", "a/b", "./a/c", "/a", "/b", "/a/b", "/a/@x", "/a/b/@y",
         "text()", "a/text()", "./b/text()", "/a/text()", "/a/b/text()", "a/@x", "b/c/@y"]


@settings(max_examples=150, deadline=None)
@given(element(), st.sampled_from(PATHS), st.integers(0, 3))
def test_direct_paths_agree_with_libxml2(body, path, pick):
    doc = SafeXml().parse(body)
    contexts = [doc.root, *doc.root.iter("a", "b", "c")]
    node = contexts[pick % len(contexts)]
    compiled = compile_xpath(path, "r.p")
    reference = etree.XPath(path, smart_strings=False)(node)
    assert compiled.select(node, doc) == reference
    assert compiled.boolean(node, doc) is bool(reference)
    assert compiled.text_value(node, doc) == (to_text(reference[0]) if reference else None)


def test_direct_paths_are_used_for_plain_forms():
    for path in PATHS:
        assert compile_xpath(path, "r.p").path_is_direct, path
    for path in ["a[1]", "..", "//a", "*", "p:a", "@x='1'", ".", "a/b[@x]"]:
        assert not compile_xpath(path, "r.p", {"p": "urn:p"}).path_is_direct, path
