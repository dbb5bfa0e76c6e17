"""Hardened parsing of untrusted messages: DTDs, entities, network, size, depth, encodings."""

from __future__ import annotations

import pytest

from parsers.xpath import SafeXml
from props.errors import MessageError


def test_plain_document():
    doc = SafeXml().parse("<a><b>x</b></a>")
    assert doc.root.tag == "a" and doc.root[0].text == "x"


def test_malformed_names_line_and_column():
    with pytest.raises(MessageError, match=r"line 2, column \d+: malformed XML") as info:
        SafeXml().parse("<a>\n<b></a>")
    assert info.value.position.startswith("line 2")


def test_empty_body():
    with pytest.raises(MessageError, match="malformed XML"):
        SafeXml().parse("")


def test_internal_dtd_refused_and_entities_not_expanded():
    body = '<!DOCTYPE a [<!ENTITY x "expanded">]><a>&x;</a>'
    with pytest.raises(MessageError, match="DTD not allowed"):
        SafeXml().parse(body)


def test_billion_laughs_refused():
    levels = "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    lol = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "lol">' + levels
           + ']><lolz>&lol9;</lolz>')
    with pytest.raises(MessageError):
        SafeXml().parse(lol)


def test_external_entity_not_loaded(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    body = f'<!DOCTYPE a [<!ENTITY s SYSTEM "file://{secret}">]><a>&s;</a>'
    with pytest.raises(MessageError, match="DTD not allowed"):
        SafeXml().parse(body)


def test_external_dtd_not_fetched():
    body = '<!DOCTYPE a SYSTEM "http://127.0.0.1:9/never.dtd"><a/>'
    with pytest.raises(MessageError, match="DTD not allowed"):
        SafeXml().parse(body)


def test_undefined_entity_is_malformed():
    with pytest.raises(MessageError, match="Entity 'x' not defined"):
        SafeXml().parse("<a>&x;</a>")


def test_maxbytes():
    SafeXml(maxbytes=20).parse("<a>" + "x" * 13 + "</a>")
    with pytest.raises(MessageError, match=r"21 bytes exceeds xml.maxbytes=20") as info:
        SafeXml(maxbytes=20).parse(("<a>" + "x" * 14 + "</a>").encode())
    assert info.value.position == "xml.maxbytes"
    with pytest.raises(MessageError, match=r"more than 20 bytes exceeds xml.maxbytes=20"):
        SafeXml(maxbytes=20).parse("<a>" + "x" * 14 + "</a>")


def test_maxbytes_counts_utf8_bytes_of_text():
    with pytest.raises(MessageError, match="exceeds xml.maxbytes"):
        SafeXml(maxbytes=10).parse("<a>éééé</a>")


def nested(depth: int) -> str:
    return "<e>" * depth + "</e>" * depth


def test_maxdepth():
    SafeXml(maxdepth=3).parse(nested(3))
    with pytest.raises(MessageError, match="deeper than xml.maxdepth=3") as info:
        SafeXml(maxdepth=3).parse(nested(4))
    assert info.value.position == "xml.maxdepth"


def test_default_maxdepth_256():
    SafeXml().parse(nested(256))
    with pytest.raises(MessageError, match="deeper than xml.maxdepth=256"):
        SafeXml().parse(nested(257))


def test_maxdepth_above_libxml2_default():
    SafeXml(maxdepth=400).parse(nested(400))
    with pytest.raises(MessageError, match="deeper than xml.maxdepth=400"):
        SafeXml(maxdepth=400).parse(nested(401))


def test_text_body_is_unicode_whatever_the_declaration_says():
    doc = SafeXml().parse('<?xml version="1.0" encoding="ISO-8859-1"?><a>€ ü</a>')
    assert doc.root.text == "€ ü"


def test_byte_body_uses_its_declaration():
    body = '<?xml version="1.0" encoding="ISO-8859-1"?><a>ü</a>'.encode("latin-1")
    assert SafeXml().parse(body).root.text == "ü"
    assert SafeXml().parse("<a>ü</a>".encode()).root.text == "ü"


def test_cdata_is_text():
    assert SafeXml().parse("<a><![CDATA[<x>&]]></a>").root.text == "<x>&"
