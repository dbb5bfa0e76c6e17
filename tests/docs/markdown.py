"""Reading the project's markdown as the documentation tests need it.

Tables, code spans, fenced blocks, GitHub heading anchors and links; and *runbooks*: fenced
blocks that an HTML comment right above marks for the tests (invisible when rendered):

* ``<!-- file: PATH -->`` — the block is the content of PATH in the working directory;
* ``<!-- run -->`` / ``<!-- run: exit 2 -->`` / ``<!-- run: broker -->`` — a shell block the
  tests execute (expected exit status 0 unless given; ``broker`` ones need a broker);
* ``<!-- output -->`` / ``<!-- output: broker -->`` — what the run block before it prints:
  each line must appear, in this order, among the lines of its stdout then stderr; ``…`` stands
  for any text, and a line that is only ``…`` for any lines.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

_MARKER = re.compile(r"<!--\s*(file|run|output)(?::\s*(.*?))?\s*-->\s*$")
_FENCE = re.compile(r"```(\w*)\s*$")


@dataclass
class Row:
    """One row of a markdown table: its cells by header name, and its line."""

    cells: dict[str, str]
    line: int


@dataclass
class Step:
    """One marked block of a runbook: ``kind`` file, run or output; ``arg`` the marker's text."""

    kind: str
    arg: str
    text: str
    line: int


def outside_fences(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def _split_row(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip())
    return [c.strip() for c in cells[1:-1]]


def tables(text: str) -> list[tuple[list[str], list[Row]]]:
    """Every table outside code blocks: (header cells, rows)."""
    found: list[tuple[list[str], list[Row]]] = []
    lines = outside_fences(text)
    i = 0
    while i < len(lines):
        line = lines[i][1]
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"\|\s*:?-{3,}",
                                                                     lines[i + 1][1]):
            header = _split_row(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i][1].startswith("|"):
                cells = _split_row(lines[i][1])
                rows.append(Row(dict(zip(header, cells, strict=False)), lines[i][0]))
                i += 1
            found.append((header, rows))
        else:
            i += 1
    return found


def code_spans(cell: str) -> list[str]:
    """The backtick spans of a table cell, with the table's ``\\|`` unescaped."""
    return [span.replace("\\|", "|") for span in re.findall(r"`([^`]+)`", cell)]


def fenced_blocks(text: str, language: str) -> list[tuple[int, str]]:
    """(line of the content, content) of every ```language block."""
    return [(text.count("\n", 0, m.start()) + 2, m.group(1))
            for m in re.finditer(rf"^```{language}\n(.*?)^```", text,
                                 re.MULTILINE | re.DOTALL)]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a markdown file's headings (repeated ones get -1, -2, … as on GitHub)."""
    seen: dict[str, int] = {}
    names = set()
    for _, line in outside_fences(path.read_text(encoding="utf-8")):
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            names.add(base if count == 0 else f"{base}-{count}")
            seen[base] = count + 1
    return names


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every markdown link outside code."""
    found = []
    for number, line in outside_fences(path.read_text(encoding="utf-8")):
        line = re.sub(r"`[^`]*`", "", line)
        found.extend((number, m.group(1)) for m in re.finditer(r"\]\(([^)\s]+)\)", line))
    return found


def steps(path: Path) -> list[Step]:
    """The marked blocks of a runbook, in document order."""
    found: list[Step] = []
    marker: tuple[str, str, int] | None = None
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = _MARKER.match(lines[i].strip())
        if match:
            marker = (match.group(1), match.group(2) or "", i + 1)
            i += 1
            continue
        if marker and _FENCE.match(lines[i].strip()):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            found.append(Step(marker[0], marker[1], "\n".join(lines[i + 1:end]) + "\n",
                              marker[2]))
            marker = None
            i = end + 1
            continue
        if lines[i].strip():
            marker = None  # a marker applies to the block right below it only
        i += 1
    return found


def run_shell(script: str, cwd: Path, env: dict[str, str],
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run a documented shell block as a user would, with bash (errexit and pipefail on)."""
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a user whose PATH has this checkout's msgcap and gendef first."""
    import sys

    env = dict(os.environ, HOME=str(home), TMPDIR=str(home), **extra)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("SOURCE_DATE_EPOCH", None)
    return env


def output_problem(expected: str, done: subprocess.CompletedProcess[str]) -> str | None:
    """Why ``done`` did not print ``expected`` (see the module docstring), or None."""
    actual = (done.stdout + done.stderr).splitlines()
    position = 0
    for want in expected.splitlines():
        if not want.strip() or want.strip() == "…":
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in want.rstrip().split("…")))
        for index in range(position, len(actual)):
            if pattern.fullmatch(actual[index].rstrip()):
                position = index + 1
                break
        else:
            return f"not printed (after line {position}): {want!r}"
    return None
