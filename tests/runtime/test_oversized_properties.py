"""Every property the loader accepts, given an oversized value, ends in one error line (exit 2)
or a working run — never a traceback (issue 11: a ``trail.uri`` of 70,000 characters used to
end in ``struct.error`` and an empty trail file).

Each value goes through the commands that use it: ``msgcap replay`` (loader, definitions,
parser, trail writer and its file header, ``trail.defs``) for every key of the example's parser,
and ``msgcap run`` for the keys only it uses (source, checkpoint, locks, log, archive, HTTP).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from msgcap.cli import main
from props.loader import GLOBAL_KEYS, RULE_ATTRS, SECTION_KEYS, load_settings

REPO = Path(__file__).resolve().parents[2]
N = 70_000
# (example directory, properties file, dump): one per parser
EXAMPLES = [("delimited", "dirprm/jmsvam.properties", "messages.jsonl"),
            ("fixed/copybook", "dirprm/jmsvam.properties", "messages.jsonl"),
            ("xml", "dirprm/orders.properties", "messages/orders.jsonl")]
RUN_ONLY = {"jms.url", "jms.destination", "jms.user", "jms.password", "jms.prefetch",
            "jms.heartbeat", "jms.ssl.ca", "jms.ssl.cert", "jms.ssl.key", "jms.report.output",
            "jms.report.time", "jms.report.records", "jms.spool.minage", "checkpoint.dir",
            "archive.dir", "gg.log.file", "report.http", "report.http.allowremote"}


PATHS = {"trail.path", "trail.defs", "checkpoint.dir", "archive.dir", "error.file",
         "gg.log.file", "jms.ssl.ca", "jms.ssl.cert", "jms.ssl.key", "fixed.copybook"}
NUMBERS = {"jms.prefetch", "jms.report.records", "jms.heartbeat", "jms.report.time",
           "jms.spool.minage", "jms.maxbytes", "trail.megabytes", "trail.seqlen", "xml.maxbytes",
           "xml.maxdepth"}


DELIMS = ("fielddelim", "linedelim", "quote", "nullindicator", "escaped", "insertval",
          "updateval", "deleteval", "truncateval", "beginval", "middleval", "endval", "wholeval")


def _values(key: str) -> list[str]:
    """Oversized values: plain text, a constant, the property's own syntax stretched, and the
    largest values the loader accepts (which must then work, or fail as one line)."""
    values = ["x" * N, '"' + "x" * N + '"']
    attr = key.rpartition(".")[2]
    if key == "trail.uri":
        values.append("u" * 4096)
    if key == "trail.path":
        values.append("/".join(["d" * 240] * 3) + "/ab")
    if attr in ("txname", "txowner"):
        values.append('"' + "n" * 4000 + '"')
    if attr in DELIMS:
        values.append("z" * 256)
    if "dateformat" in key or attr == "format":
        values.append("YYYY-MM-DD" + " " * 246)
    if key in NUMBERS or attr == "index":
        values.append("9" * N)
    if key in PATHS or attr == "sourcedefs":
        values.append("d" * N + "/ab")
    if key.startswith("xml.") or key.partition(".")[0] not in ("jms", "trail", "delim",
                                                               "fixed", "gg", "report",
                                                               "error", "checkpoint",
                                                               "archive", "parser"):
        values.append("/" + "a" * N)  # an XPath
    if key == "jms.url":
        values += ["dir:" + "d" * N, "stomp://" + "h" * N + ":61613",
                   "stomp://" + ".".join(["h" * 60] * 4) + ":61613"]
    if key == "report.http":
        values += ["h" * N + ":9464", "[" + "1:" * N + "1]:9464"]
    if ".userdefs." in key and not key.endswith((".tables", ".columns")):
        values += ["vchar " + "9" * N, "number " + "9" * 30 + ",2", "char 65001"]
    return values


def _keys(settings_text: str, parser: str, rules: dict[str, str]) -> list[str]:
    keys = set(GLOBAL_KEYS) | set(SECTION_KEYS[parser])
    keys |= {line.partition("=")[0].strip() for line in settings_text.splitlines()
             if "=" in line and not line.lstrip().startswith("#")}
    for name, kind in rules.items():
        keys |= {f"{name}.{attr}" for attr in RULE_ATTRS[kind]}
    return sorted(k for k in keys if k)


pytestmark = pytest.mark.usefixtures("restore_logging")


@pytest.mark.parametrize(("example", "prop", "dump"), EXAMPLES,
                         ids=[e[0] for e in EXAMPLES])
def test_oversized_values_never_end_in_a_traceback(tmp_path, monkeypatch, capsys, example,
                                                   prop, dump) -> None:
    home = tmp_path / "home"
    shutil.copytree(REPO / "examples" / example, home)
    monkeypatch.chdir(home)
    (home / "dirspool").mkdir(exist_ok=True)
    base = (home / prop).read_text()
    settings = load_settings(prop)
    rules = {}
    if settings.xml is not None:
        stack = list(settings.xml.rules)
        while stack:
            rule = stack.pop()
            rules[rule.name] = rule.type
            stack.extend(rule.subrules)
    tried = 0
    for key in _keys(base, settings.parser_type, rules):
        commands = [["replay", "--prop", prop, dump]]
        if key in RUN_ONLY:
            commands = [["run", "--prop", prop, "--max-idle", "0"]]
        for value in _values(key):
            lines = [ln for ln in base.splitlines() if ln.partition("=")[0].strip() != key]
            (home / prop).write_text("\n".join([*lines, f"{key}={value}"]) + "\n")
            for argv in commands:
                code = main(argv)  # an unexpected exception fails the test right here
                err = capsys.readouterr().err
                errors = [ln for ln in err.splitlines() if " error: " in ln]
                assert code in (0, 2), (key, value[:40], code, err[-500:])
                if code == 2:
                    assert len(errors) == 1 and len(errors[0]) < 2100, (key, err[-500:])
                tried += 1
            for sub in ("dirdat", "dirchk", "dirrpt"):
                shutil.rmtree(home / sub, ignore_errors=True)
    assert tried > 100


def test_the_largest_accepted_values_reach_the_trail(tmp_path, monkeypatch, capsys) -> None:
    from msgcap.trail.reader import TrailFile

    home = tmp_path / "home"
    shutil.copytree(REPO / "examples" / "delimited", home)
    monkeypatch.chdir(home)
    prop = home / "dirprm" / "jmsvam.properties"
    prop.write_text(prop.read_text() + f"trail.uri={'u' * 4096}\n"
                    f'delim.txname="{"n" * 4000}"\n')
    assert main(["replay", "--prop", str(prop), "messages.jsonl"]) == 0
    with TrailFile("dirdat/sa000000000") as tf:
        assert tf.header.trail["uri"] == "u" * 4096
        first = next(tf.records())
        assert first.user_tokens["TXNAME"] == b"n" * 4000
    prop.write_text(prop.read_text().replace("u" * 4096, "u" * 4097))
    assert main(["replay", "--prop", str(prop), "messages.jsonl"]) == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        "trail.uri: 4097 bytes; the trail file header holds at most 4096")
