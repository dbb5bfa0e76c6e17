"""Helpers for the fixed-width parser tests: a working directory with copybooks / DEFGEN files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gendef.build import build_definitions
from parsers.base import build_parser
from parsers.fixed import FixedParser
from props.loader import settings_from_text

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "fixed"

RETAIL_CPY = (EXAMPLES / "copybook" / "dirdef" / "retail.cpy").read_text()
TCUSTMER_DEF = (EXAMPLES / "sourcedefs" / "dirdef" / "tcustmer.def").read_text()

RETAIL_PROPS = """\
parser.type=fixed
fixed.schematype=copybook
fixed.copybook=retail.cpy
fixed.header=HEADER
fixed.timestamp=HDR-TIMESTAMP
fixed.optype=HDR-FUNCTION
fixed.optype.insertval=A
fixed.optype.updateval=C
fixed.optype.deleteval=D
fixed.table=HDR-REC-ID
fixed.schema="RETAIL"
fixed.seqid=$jmsid
fixed.txid=*txid
"""

TCUST_PROPS = """\
parser.type=fixed
fixed.schematype=sourcedefs
fixed.sourcedefs=tcustmer.def
fixed.userdefs.tables=qasource.HEADER
fixed.userdefs.qasource.HEADER.columns=optype,schemaandtable
fixed.userdefs.qasource.HEADER.optype=vchar 3
fixed.userdefs.qasource.HEADER.schemaandtable=vchar 30
fixed.header=qasource.HEADER
"""

# properties.md §15.1 and §15.2 messages
RETAIL_MESSAGES = (
    "2024-03-01-10.15.30.123456ACUSTOMERPOS100001001ACME TRADING                  000125000240301",
    "2024-03-01-10.15.31.000000AORDERS  POS100000050010000100100000125000N",
    "2024-03-02-09.00.00.000000CCUSTOMERPOS100001001ACME TRADING LTD              000099950240301",
)
TCUST_MESSAGES = (
    ("I  GG.JMSCAP_TCUSTMER            WILL      BG SOFTWARE CO.                     SEATTLE"
     "                   WA    "),
    ("U  GG.JMSCAP_TCUSTMER            ANN       ANN'S BOATS                         NEW YORK"
     "                  NY"),
)

Make = Callable[..., FixedParser]


@pytest.fixture
def make(tmp_path, monkeypatch) -> Make:
    """``make(props, **files)``: write files into a fresh working directory, build the parser
    from the properties with the definitions ``gendef`` would build."""
    monkeypatch.chdir(tmp_path)

    def build(props: str, **files: str | bytes) -> FixedParser:
        for name, content in files.items():
            path = tmp_path / name.replace("__", ".")
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        settings = settings_from_text(props, "test.properties", env={})
        parser = build_parser(settings, build_definitions(settings))
        assert isinstance(parser, FixedParser)
        return parser
    return build


@pytest.fixture
def retail(make) -> FixedParser:
    return make(RETAIL_PROPS, retail__cpy=RETAIL_CPY)


@pytest.fixture
def tcust(make) -> FixedParser:
    return make(TCUST_PROPS, tcustmer__def=TCUSTMER_DEF)
