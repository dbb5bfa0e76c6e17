"""What a newcomer tripped on (issue 26 item 5): each mistake, made as a user makes it, through
the command the user ran, gets one line saying what is wrong and where, or is read as meant.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gendef.cli import main as gendef_main
from msgcap.cli import main as msgcap_main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "fixed" / "copybook"
PROPS = "dirprm/jmsvam.properties"
COPYBOOK = "dirdef/retail.cpy"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the copybook example as the working directory."""
    shutil.copytree(EXAMPLE, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def gendef(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = gendef_main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(status: int, err: str) -> str:
    assert status == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


# -- copybooks ----------------------------------------------------------------------------------

def test_a_missing_copybook_names_the_property_and_where_relative_paths_start(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    props = work / PROPS
    props.write_text(props.read_text().replace(COPYBOOK, "dirdef/nope.cpy"))
    line = one_line_error(*gendef(capsys, "-prop", PROPS)[::2])
    assert line == (f"gendef: error: {PROPS}:23: fixed.copybook: dirdef/nope.cpy: no such file "
                    f"(relative to the working directory {Path.cwd()}, not to the properties "
                    "file)")


def _as_written(work: Path, capsys: pytest.CaptureFixture[str], edit) -> tuple[int, str, str]:
    """gendef over the example's copybook rewritten by ``edit`` (a function of its lines)."""
    cpy = work / COPYBOOK
    cpy.write_text("".join(edit(cpy.read_text().splitlines(keepends=True))))
    return gendef(capsys, "-prop", PROPS)


@pytest.mark.parametrize("edit", [
    # indented with tabs: one tab for 01, two for the items and the comments
    lambda lines: [ln.replace("       ", "\t", 1).replace("    ", "\t", 1) for ln in lines],
    # every comment's '*' in column 1 instead of 7 (KEY, YYMMDD and DATEFORMAT in them)
    lambda lines: [ln.lstrip() if ln.lstrip().startswith("*") else ln for ln in lines],
    # the comments alone indented with a tab, the code with spaces
    lambda lines: ["\t" + ln.lstrip() if ln.lstrip().startswith("*") else ln for ln in lines],
    # no terminating periods, as manuals print copybook entries
    lambda lines: [ln.replace(".\n", "\n") for ln in lines],
    # the manual's style: no sequence area, no periods, one space after the level
    lambda lines: [" ".join(ln.split()).removesuffix(".") + "\n" for ln in lines],
], ids=["tabs", "comment-column-1", "tab-indented-comments", "no-periods", "manual"])
def test_copybook_written_otherwise_is_read_as_meant(
        work: Path, capsys: pytest.CaptureFixture[str], edit) -> None:
    expected = gendef(capsys, "-prop", PROPS)
    assert expected[0] == 0 and "Columns: 5" in expected[1]
    assert _as_written(work, capsys, edit) == expected


def test_a_tab_inside_the_sequence_area_of_code_is_refused_saying_so(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def clause_on_a_tab_line(lines: list[str]) -> list[str]:
        at = next(i for i, ln in enumerate(lines) if "CUST-NAME" in ln)
        lines[at] = lines[at].replace("PIC X(30).", "")
        return [*lines[:at + 1], "\t\tPIC X(30).\n", *lines[at + 1:]]

    line = one_line_error(*_as_written(work, capsys, clause_on_a_tab_line)[::2])
    assert line == (f"gendef: error: {COPYBOOK}:11:1: a tab in columns 1-6 (the sequence area): "
                    "fixed format counts columns, code starts in column 8; indent with spaces, "
                    "or every level line with tabs (free format)")


def test_a_missing_period_that_cannot_be_told_from_the_line_is_named(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def two_entries_one_line(lines: list[str]) -> list[str]:
        return [ln.replace("PIC X(26).", "PIC X(26) 05 HDR-X PIC X.") for ln in lines]

    line = one_line_error(*_as_written(work, capsys, two_entries_one_line)[::2])
    assert line.startswith(f"gendef: error: {COPYBOOK}:3:")
    assert line.endswith("field HDR-TIMESTAMP: unexpected token '05': a '.' missing before it? "
                         "(a level number without one starts a line)")


# -- a file given where another kind is expected ------------------------------------------------

def test_gendef_prop_given_a_copybook_says_where_it_goes(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(*gendef(capsys, "-prop", COPYBOOK)[::2])
    assert line == (f"gendef: error: {COPYBOOK}: looks like a COBOL copybook, not a msgcap "
                    f"properties file: use it as fixed.copybook={COPYBOOK} in the properties file")


def test_dump_defs_given_a_properties_file_names_its_definitions(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert msgcap_main(["replay", "--prop", PROPS, "messages.jsonl"]) == 0
    capsys.readouterr()
    status = msgcap_main(["dump", "--defs", PROPS, "dirdat/rt000000000"])
    line = one_line_error(status, capsys.readouterr().err)
    assert line == (f"msgcap dump: error: {PROPS}: looks like a msgcap properties file, not "
                    "source definitions (DEFGEN): the definitions of its tables are in "
                    "dirdat/retail.def (its trail.defs)")
    status = msgcap_main(["replay", "--prop", "dirdat/retail.def", "messages.jsonl"])
    assert one_line_error(status, capsys.readouterr().err) == (
        "msgcap replay: error: dirdat/retail.def: looks like source definitions (DEFGEN), not a "
        "msgcap properties file: use it as fixed.sourcedefs=dirdat/retail.def "
        "(delim.sourcedefs, xml.sourcedefs) in the properties file, or as msgcap dump --defs "
        "dirdat/retail.def")


# -- replay, dump and batch ---------------------------------------------------------------------

def test_dump_of_a_glob_skips_the_writers_lock_file(work: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert msgcap_main(["replay", "--prop", PROPS, "messages.jsonl"]) == 0
    capsys.readouterr()
    assert (work / "dirdat" / "rt.lock").is_file()
    glob = sorted(str(p.relative_to(work)) for p in (work / "dirdat").glob("rt*"))
    assert glob == ["dirdat/rt.lock", "dirdat/rt000000000"]
    for form in ([], ["--json"]):
        assert msgcap_main(["dump", *form, "dirdat/rt000000000"]) == 0
        alone = capsys.readouterr().out
        assert msgcap_main(["dump", *form, *glob]) == 0
        assert capsys.readouterr() == (alone, "")
        assert "RETAIL.ORDERS" in alone


def test_an_unknown_table_in_other_letters_suggests_fixed_encoding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.cpy").write_text("       01  H.\n           05  OP   PIC X.\n"
                             "           05  TBL  PIC X(5).\n       01  NUMS.\n"
                             "           05  K    PIC 9(2).\n")
    Path("p.properties").write_text(
        "trail.path=dirdat/nn\nparser.type=fixed\nfixed.schematype=copybook\n"
        "fixed.copybook=t.cpy\nfixed.header=H\nfixed.optype=OP\nfixed.table=TBL\n"
        "fixed.schema=N\nfixed.encoding=latin-1\n")
    ebcdic = base64.b64encode("INUMS 12".encode("cp037")).decode()
    Path("m.jsonl").write_text(json.dumps({"id": "m1", "body_b64": ebcdic}) + "\n")
    status = msgcap_main(["replay", "--prop", "p.properties", "m.jsonl"])
    out, err = capsys.readouterr()
    assert one_line_error(status, err) == (
        "msgcap replay: error: message m.jsonl:1: field TBL: unknown table N.ÕäÔâ@ (no such 01 "
        "record): a name that is not printable ASCII; are the messages in "
        "fixed.encoding=latin-1 (EBCDIC feeds: cp037, cp1047, ...)?")
    # the summary agrees with the file it created: a file header, no transaction
    assert "trail files: no transaction written\n" in out
    assert "trail durable: dirdat/nn000000000 RBA " in out
    assert "none written" not in out


def test_batch_checks_its_output_before_starting_spark(work: Path) -> None:
    """pyspark shadowed by a package that fails to import: the output's error comes first."""
    fake = work / "nospark" / "pyspark"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('Spark was started')\n")
    (work / "o" / "trail").mkdir(parents=True)
    (work / "o" / "trail" / "rt000000000").write_bytes(b"x")
    (work / "afile").write_text("")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(work / "nospark"), str(REPO)])}
    for output, words in (("o", "o/trail: output exists and is not empty"),
                          ("afile", "afile: not a directory")):
        done = subprocess.run([sys.executable, "-m", "msgcap.cli", "batch", "--prop", PROPS,
                               "--input", "messages.jsonl", "--output", output], env=env,
                              capture_output=True, text=True, check=False, timeout=60)
        assert one_line_error(done.returncode, done.stderr).startswith(
            f"msgcap batch: error: {words}")


def test_the_rows_op_values_are_documented_with_the_summarys_words() -> None:
    from msgcap.pipeline import OP_LABELS
    from msgcap.trail.records import OP_NAMES

    section = (REPO / "docs" / "properties.md").read_text()
    documented = dict(re.findall(r"^  \| `([A-Z]+)` \| ([a-z]+) \|", section, re.MULTILINE))
    assert set(documented) == set(OP_NAMES.values())
    assert set(documented.values()) == set(OP_LABELS.values())
    for op, word in documented.items():
        assert word in op.lower() or op in ("FIELDCOMP", "PKUPDATE") and word == "update"


def test_a_replay_into_a_stopped_captures_trail_keeps_its_checkpoint_honest(
        tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples" / "delimited", tmp_path, dirs_exist_ok=True)
    lines = (tmp_path / "messages.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "first.jsonl").write_text("".join(lines[:2]))
    (tmp_path / "rest.jsonl").write_text("".join(lines[2:]))
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def msgcap(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "msgcap.cli", *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, check=False, timeout=120)

    prop = ("--prop", PROPS)
    assert msgcap("send", *prop, "first.jsonl").returncode == 0
    assert msgcap("run", *prop, "--max-idle", "0.5").returncode == 0
    assert msgcap("replay", *prop, "rest.jsonl").returncode == 0
    trail = tmp_path / "dirdat" / "sa000000000"
    checkpoint = json.loads((tmp_path / "dirchk" / "SALES.cpj").read_text())
    assert (checkpoint["rba"], checkpoint["last_seqid"]) == (trail.stat().st_size, "0000000008")
    status = msgcap("status", *prop).stdout
    assert f"checkpoint: dirdat/sa000000000 RBA {trail.stat().st_size} (6 transactions" in status
    # the next run continues after what replay added: every message again is a duplicate
    assert msgcap("send", *prop, "messages.jsonl").returncode == 0
    done = msgcap("run", *prop, "--max-idle", "0.5")
    assert done.returncode == 0, done.stderr
    assert "messages 5  duplicates 5" in done.stdout
    assert trail.stat().st_size == checkpoint["rba"]
