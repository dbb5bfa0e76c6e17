"""The user documentation cannot drift from the code.

* docs/properties.md documents exactly the properties the loader accepts (props.catalog), each
  with a values, default and example column, and every example loads with the real loader;
* every properties file shown in docs/ loads;
* every relative markdown link of the README, docs/ and the examples resolves, anchors included;
* nothing points outside the repository (the team's ``../shared`` folder is not shipped).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from props.catalog import accepted_properties
from props.loader import settings_from_text

from .markdown import Row, anchors, code_spans, fenced_blocks, links, tables

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REFERENCE = DOCS / "properties.md"

# Documents that other work in progress adds, linked from the index before they land. Each entry
# fails test_pending_docs_are_missing once its file exists: then delete the entry, and the links
# to it are checked like every other.
PENDING: dict[str, str] = {}

ENV = {"MQ_USER": "user", "MQ_PASSWORD": "secret"}

# Minimal valid files the examples of the reference are added to, by the section they belong to.
BASES = {
    "delim": "parser.type=delim\ndelim.sourcedefs=dirdef/sales.def\n"
             "delim.header=optype,schemaandtable,timestamp,txind,id\n",
    "fixed": "parser.type=fixed\nfixed.schematype=copybook\nfixed.copybook=dirdef/retail.cpy\n"
             "fixed.header=HEADER\nfixed.schema=\"RETAIL\"\n",
    "xml": "parser.type=xml\nxml.sourcedefs=dirdef/mytable.def\nxml.rules=dyntxrule, dynoprule\n"
           "dyntxrule.type=tx\ndyntxrule.match=/transaction\n"
           "dynoprule.type=op\ndynoprule.match=/operation\ndynoprule.schemaandtable=@table\n"
           "dynoprule.optype=@optype\ndynoprule.subrules=dyncolrule\n"
           "dyncolrule.type=col\ndyncolrule.match=./column\ndyncolrule.name=@name\n",
}
# What the placeholders of the reference stand for in the examples.
PLACEHOLDERS = {
    "<T>": r"[^.=\s]+\.[^.=\s]+", "<C>": r"[^.=\s]+", "<prefix>": r"[^.=\s]+",
    "<name>": r"[^=\s]+", "<txrule>": "dyntxrule", "<oprule>": "dynoprule",
    "<colrule>": "dyncolrule", "<rule>": "(?:dyntxrule|dynoprule|dyncolrule)",
}


def documents() -> list[Path]:
    """The markdown a user reads: the README, docs/ and the examples' READMEs."""
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md")),
            *sorted((ROOT / "examples").rglob("README.md"))]


# ---- the property reference -------------------------------------------------------------------

def property_rows() -> list[tuple[list[str], Row]]:
    """(documented names, row) of every table of the reference whose first column is Property."""
    rows = []
    for header, body in tables(REFERENCE.read_text(encoding="utf-8")):
        if header and header[0] == "Property":
            rows.extend((code_spans(row.cells["Property"]), row) for row in body)
    return rows


def _pattern(name: str) -> re.Pattern[str]:
    text = re.escape(name)
    for holder, regex in PLACEHOLDERS.items():
        text = text.replace(re.escape(holder), regex)
    return re.compile(text + r"\Z")


def test_every_accepted_property_is_documented_and_every_documented_one_accepted():
    documented: dict[str, int] = {}
    twice = []
    for names, row in property_rows():
        for name in names:
            if name in documented:
                twice.append(f"{name} (lines {documented[name]} and {row.line})")
            documented[name] = row.line
    accepted = {p.name for p in accepted_properties()}
    missing = sorted(accepted - set(documented))
    unknown = sorted(f"{name} (line {documented[name]})" for name in set(documented) - accepted)
    assert not missing, f"accepted by the loader but not in docs/properties.md: {missing}"
    assert not unknown, f"in docs/properties.md but not accepted by the loader: {unknown}"
    assert not twice, f"documented twice: {twice}"


def test_property_tables_have_values_default_and_example_columns():
    for header, body in tables(REFERENCE.read_text(encoding="utf-8")):
        if not header or header[0] != "Property":
            continue
        kinds = {"Alias of": "alias", "Behaviour": "ignored"}
        kind = next((k for column, k in kinds.items() if column in header), "property")
        if kind == "property":
            assert header == ["Property", "Values", "Default", "Meaning", "Example"], header
        for row in body:
            assert all(row.cells.get(column) for column in header), \
                f"docs/properties.md:{row.line}: empty cell"


def test_aliases_and_ignored_properties_are_documented_as_such():
    catalog = {p.name: p for p in accepted_properties()}
    for names, row in property_rows():
        for name in names:
            entry = catalog.get(name)
            assert entry is not None, f"line {row.line}: {name} is not accepted by the loader"
            if "Alias of" in row.cells:
                assert entry.kind == "alias", f"line {row.line}: {name} is not an alias"
                assert code_spans(row.cells["Alias of"]) == [entry.canonical], row.line
            elif "Behaviour" in row.cells:
                assert entry.kind == "ignored", f"line {row.line}: {name} is not ignored"
            else:
                assert entry.kind == "property", f"line {row.line}: {name} is a {entry.kind}"


def _section(key: str) -> str:
    head = key.partition(".")[0]
    if head in BASES:
        return head
    return "xml" if head.startswith("dyn") else "delim"


@pytest.mark.parametrize("names, row", [pytest.param(names, row, id=f"line{row.line}")
                                         for names, row in property_rows()])
def test_property_example_loads(names, row, caplog):
    """Each row's example names one of the row's properties and loads with the real loader."""
    assignments = [span for span in code_spans(row.cells["Example"]) if "=" in span]
    assert assignments, f"docs/properties.md:{row.line}: no example"
    patterns = [_pattern(name) for name in names]
    keys = [a.partition("=")[0] for a in assignments]
    assert any(p.match(key) for p in patterns for key in keys), \
        f"docs/properties.md:{row.line}: the example {keys} sets none of {names}"
    text = BASES[_section(keys[0])] + "\n".join(assignments) + "\n"
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        settings_from_text(text, f"example of docs/properties.md:{row.line}", ENV)
    if "Alias of" in row.cells:
        canonical = _pattern(code_spans(row.cells["Alias of"])[0])
        said = [m.split(" is an alias of ")[1].split(";")[0] for m in caplog.messages
                if " is an alias of " in m]
        assert any(canonical.match(name) for name in said), caplog.messages


def test_properties_files_shown_in_the_docs_load():
    shown = 0
    for path in sorted(DOCS.glob("*.md")):
        for line, block in fenced_blocks(path.read_text(encoding="utf-8"), "properties"):
            if "parser.type=" in block:
                partition = 0 if "${PARTITION}" in block else None  # properties.md §16
                settings_from_text(block, f"{path.relative_to(ROOT)}:{line}", ENV, partition)
                shown += 1
    assert shown >= 4


# ---- links ------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(path):
    broken = []
    for number, target in links(path):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        relative = resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else ""
        if not relative:
            broken.append(f"{number}: {target} leaves the repository")
        elif not resolved.exists():
            if relative not in PENDING:
                broken.append(f"{number}: {target} does not exist")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{number}: {target}: no heading with anchor #{anchor}")
    assert not broken, f"{path.relative_to(ROOT)}: " + "; ".join(broken)


def test_pending_docs_are_missing():
    landed = [f"{name} ({why})" for name, why in PENDING.items() if (ROOT / name).exists()]
    assert not landed, f"remove from PENDING in tests/docs/test_reference.py: {landed}"


def test_index_links_every_document():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = {target.partition("#")[0] for _, target in links(DOCS / "README.md")}
    expected = {p.name for p in DOCS.glob("*.md") if p.name != "README.md"}
    expected |= {Path(name).name for name in PENDING}
    assert expected <= linked, f"docs/README.md does not link {sorted(expected - linked)}"
    assert "../README.md" in index


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_nothing_points_outside_the_repository(path):
    text = path.read_text(encoding="utf-8")
    assert "../shared" not in text and "/work/" not in text


def test_the_table_of_jms_names_is_the_one_documented():
    """docs/properties.md §2.2 has one row per row of props.jmsnames.TABLE, with its names,
    its header, and the value JMS gives a field the transport leaves out."""
    from props.jmsnames import TABLE

    documented = {}
    for header, rows in tables(REFERENCE.read_text()):
        if header[:2] == ["JMS name in expressions", "Header"]:
            for row in rows:
                heads = code_spans(row.cells["Header"])
                if heads:
                    documented[heads[0]] = row.cells
    for entry in TABLE:
        cells = documented.pop(entry.header, None)
        assert cells is not None, f"{entry.header} is not in docs/properties.md §2.2"
        names = code_spans(cells["JMS name in expressions"])
        assert all(name in names for name in entry.names), (entry.names, names)
        if entry.absent is not None:
            value = cells["Value"]
            assert f"`{entry.absent}` when absent" in value or (
                f"`{entry.absent}`" in value and "also when absent" in value), value
    assert not documented, f"rows of §2.2 that props.jmsnames lacks: {sorted(documented)}"
