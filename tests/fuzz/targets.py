"""Fuzz targets: every reader of outside input, fed arbitrary bytes.

A target takes one input (``bytes``) and runs it through the product the way a user's file or
message reaches it: properties, copybooks and source definitions are written to a file and read
by the functions the commands use (so decoding is covered too); parser targets hand the bytes to
a parser built once from an example's properties; the trail target reads a file with the reader
that ``msgcap dump`` and recovery use. A ``MsgcapError`` (props/errors.py) is the documented way
to refuse an input; any other exception escapes and is the fuzzer's finding.

Parser inputs start with a selector byte: its low bits pick one of the target's configurations,
bit 7 hands the body over as ``bytes`` instead of text (a BytesMessage).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from props.errors import MsgcapError

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CORPUS = Path(__file__).resolve().parent / "corpus"

# ${ENV} references resolve against this, never against the real environment.
FUZZ_ENV = {"HOME": "/home/fuzz", "MQ_USER": "fuzz", "MQ_PASSWORD": "secret"}

_scratch: Path | None = None


def use_scratch(directory: Path) -> None:
    """Where targets write the input files they read back (run.py: under its work dir)."""
    global _scratch
    directory.mkdir(parents=True, exist_ok=True)
    _scratch = directory


def _scratch_file(name: str, data: bytes) -> str:
    """``data`` in a scratch file (one per name, rewritten for each input)."""
    if _scratch is None:
        use_scratch(Path(tempfile.gettempdir()) / f"msgcap-fuzz-{os.getpid()}")
    path = _scratch / name  # type: ignore[operator]
    path.write_bytes(data)
    return str(path)


def properties(data: bytes) -> None:
    from props.loader import load_settings

    load_settings(_scratch_file("fuzz.properties", data), env=FUZZ_ENV)


def copybook(data: bytes) -> None:
    from gendef.copybook import compile_copybook_file, copybook_definitions, layout_listing

    book = compile_copybook_file(_scratch_file("fuzz.cpy", data))
    copybook_definitions(book, schema="FUZZ")
    layout_listing(book)


def defgen(data: bytes) -> None:
    from gendef.defgen import format_defs, read_defs

    format_defs(read_defs(_scratch_file("fuzz.def", data)), created="2024-01-01 00:00:00")


def trail(data: bytes) -> None:
    """What ``msgcap dump`` (text and JSON) does with a trail file; recovery's scan reads records
    the same way (``TrailFile.records``)."""
    import json

    from gendef.defgen import read_defs
    from msgcap.trail import dumpfmt
    from msgcap.trail.reader import TrailReader

    definitions = _trail_definitions(read_defs)
    path = _scratch_file("fz000000000", data)
    reader = TrailReader(path, definitions, follow=False)
    for tf in reader.files():
        if tf.header is not None:
            dumpfmt.header_text(tf.name, tf.header)
            json.dumps(dumpfmt.header_json(tf.name, tf.header), ensure_ascii=False)
        for rec in tf.records():
            try:
                decoder = reader.decoder(rec)
            except MsgcapError:
                decoder = None
            dumpfmt.record_text(rec, decoder)
            json.dumps(dumpfmt.record_json(rec, decoder), ensure_ascii=False)


_trail_defs: Any = None


def _trail_definitions(read_defs: Callable[[str], Any]) -> Any:
    """The delimited example's SALES tables: the seed trails are written with them."""
    global _trail_defs
    if _trail_defs is None:
        _trail_defs = read_defs(str(EXAMPLES / "delimited" / "dirdef" / "sales.def"))
    return _trail_defs


# -- parsers ---------------------------------------------------------------------------------------

# (example directory, properties file, extra properties appended): each one configuration.
DELIM_CONFIGS = (
    ("delimited", "dirprm/jmsvam.properties", ""),
    # '|' fields, ';' records, names before values, escaped delimiters and quotes
    ("delimited", "dirprm/jmsvam.properties",
     ("delim.hasbefores=false\ndelim.hasnames=true\ndelim.fielddelim=|\ndelim.linedelim=;\n"
      "delim.fielddelim.escaped=$#$\ndelim.linedelim.escaped=$;$\ndelim.quote.escaped=\\\"\n")),
    ("delimited", "dirprm/jmsvam.properties",
     "delim.isgrouped=true\ndelim.afterfirst=true\ndelim.optype.truncateval=T\n"),
)
FIXED_CONFIGS = (
    ("fixed/copybook", "dirprm/jmsvam.properties", ""),
    ("fixed/sourcedefs", "dirprm/jmsvam.properties", ""),
)
XML_CONFIGS = (
    ("xml", "dirprm/orders.properties", ""),
    ("xml", "dirprm/mytable.properties", ""),
)

_parsers: dict[str, list[Any]] = {}


def _build_parsers(kind: str, configs: tuple[tuple[str, str, str], ...]) -> list[Any]:
    """Each configuration's parser, built as ``msgcap run`` builds it (paths from the example)."""
    from gendef.build import build_definitions
    from parsers.base import build_parser
    from props.loader import settings_from_text

    built = _parsers.get(kind)
    if built is None:
        built = []
        for directory, prop, extra in configs:
            home = EXAMPLES / directory
            text = (home / prop).read_text(encoding="utf-8") + extra
            with contextlib.chdir(home):
                settings = settings_from_text(text, str(home / prop), env=FUZZ_ENV)
                built.append(build_parser(settings, build_definitions(settings)))
        _parsers[kind] = built
    return built


def _parse(kind: str, configs: tuple[tuple[str, str, str], ...], data: bytes) -> None:
    from parsers.model import Message

    if not data:
        return
    parsers = _build_parsers(kind, configs)
    selector, raw = data[0], data[1:]
    parser = parsers[(selector & 0x7F) % len(parsers)]
    body: str | bytes = raw
    if not selector & 0x80:
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            return  # a source hands over undecodable text as bytes: the bytes case covers it
    headers = {"SEQNO": "0000000001", "timestamp": "1709288131000", "JMSTxId": "TX-1"}
    parser.parse(Message("ID:fuzz-1:1:1:1:1", headers, body, None, "fuzz"))


def delim(data: bytes) -> None:
    _parse("delim", DELIM_CONFIGS, data)


def fixed(data: bytes) -> None:
    _parse("fixed", FIXED_CONFIGS, data)


def xml(data: bytes) -> None:
    _parse("xml", XML_CONFIGS, data)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "properties": properties,
    "copybook": copybook,
    "defgen": defgen,
    "delim": delim,
    "fixed": fixed,
    "xml": xml,
    "trail": trail,
}


def selftest(data: bytes) -> None:
    """Fails on every input: proves that the runner reports what a target raises."""
    raise ValueError(f"fuzz harness self-test ({len(data)} bytes)")


ALL_TARGETS = {**TARGETS, "selftest": selftest}


def run_one(name: str, data: bytes) -> None:
    """Run target ``name`` on ``data``; only the documented errors are swallowed."""
    with contextlib.suppress(MsgcapError):
        ALL_TARGETS[name](data)


def corpus_files(name: str) -> list[Path]:
    directory = CORPUS / name
    return sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))


class FormatOnly(logging.Handler):
    """Formats every log record and drops it: a fuzz run stays quiet, yet a log message that
    cannot be formatted is still a finding (no ``handleError`` swallowing it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.format(record)


def quiet_logging() -> None:
    root = logging.getLogger()
    root.handlers[:] = [FormatOnly()]
    root.setLevel(logging.DEBUG)
