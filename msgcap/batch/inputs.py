"""The inputs of a batch and how Spark reads them: files in order, cut into scans.

Every input file keeps its place in the order ``msgcap replay`` reads (``index``) and its offset
in the concatenated input (``base``: ``time`` ids grow with it). Spark reads the files in
**scans**, in that order:

* a large file of lines (JSON Lines, or ``--lines``) is one ``lines`` scan, which Spark's text
  source cuts into blocks of ``block`` bytes; every line belongs to the block where it starts,
  so no message is ever cut;
* one-message files, and line files no larger than a block, are read whole, a run of
  consecutive files at a time (a ``whole`` scan of at most a block's bytes).

Local paths are the driver's (expanded like replay's inputs); anything with a scheme
(``file://``, ``hdfs://``, ``s3a://`` …) is listed through Hadoop by ``jobs.list_inputs``.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass

from msgcap import dumps
from msgcap.sources.base import too_large
from props.errors import SourceError
from props.inputs import open_input

KIND_JSONL, KIND_LINES, KIND_FILE = "jsonl", "lines", "file"
# Spark's text source decompresses files with these suffixes; replay reads them as they are,
# so such files are read whole, as bytes.
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst")
# Largest block of a lines scan when --partitions does not say: a task holds its block's parse
MAX_BLOCK = 32 << 20
# Fewest splits when --partitions does not say: the driver appends one while the next are framed
MIN_SPLITS = 4


@dataclass(frozen=True, slots=True)
class InputFile:
    """One input file: ``uri`` as Hadoop names it, ``name`` as messages and errors name it
    (the path as given for local files, as replay does)."""

    index: int
    uri: str
    name: str
    size: int
    kind: str
    base: int

    @property
    def basename(self) -> str:
        return posixpath.basename(self.name)

    @property
    def line_based(self) -> bool:
        return self.kind != KIND_FILE


@dataclass(frozen=True, slots=True)
class Scan:
    """One read of the inputs: the lines of one large file (``whole`` False) or a run of files
    read whole, in order."""

    files: tuple[int, ...]
    whole: bool
    block: int


def kind_of(name: str, *, lines: bool) -> str:
    """How a file is read, as replay decides it (``dumps.read_dump``)."""
    if lines:
        return KIND_LINES
    return KIND_JSONL if name.endswith(dumps.JSONL_SUFFIXES) else KIND_FILE


def input_files(found: list[tuple[str, str, int]], *, lines: bool) -> list[InputFile]:
    """``InputFile``s of (uri, name, size) in input order.

    Spark's file readers skip files named ``_…`` or ``.…`` even when given by name (Hadoop's
    hidden files): such an input is refused rather than silently left out.
    """
    out = []
    base = 0
    for index, (uri, name, size) in enumerate(found):
        if posixpath.basename(uri).startswith(("_", ".")):
            raise SourceError("Spark's file readers skip files whose names start with '_' or "
                              "'.': rename it (msgcap replay reads it)", url=name)
        out.append(InputFile(index, uri, name, size, kind_of(name, lines=lines), base))
        base += size + 1
    return out


def refuse_large_files(files: list[InputFile], max_bytes: int) -> None:
    """Refuse the first one-message file over ``max_bytes`` (``jms.maxbytes``) from its listed
    size, as replay does, before Spark reads it whole (``binaryFile``)."""
    for f in files:
        if f.kind == KIND_FILE and f.size > max_bytes:
            raise dumps.refused(too_large(f.size, max_bytes), f.name)


def local_inputs(patterns: list[str]) -> list[tuple[str, str, int]]:
    """(uri, name, size) of local paths, expanded as replay expands them; unreadable files are
    refused here, before Spark starts reading."""
    out = []
    for path in dumps.expand_inputs(patterns):
        try:
            size = os.path.getsize(path)
            open_input(path).close()
        except OSError as exc:
            raise SourceError(exc.strerror or str(exc), url=path) from None
        out.append(("file:" + os.path.abspath(path), path, size))
    return out


def has_scheme(pattern: str) -> bool:
    """True for a URI (``scheme:…``); a local path otherwise."""
    head, sep, _ = pattern.partition(":")
    return bool(sep) and len(head) > 1 and head.replace("+", "").replace("-", "").replace(
        ".", "").isalnum() and head[0].isalpha()


def block_size(files: list[InputFile], *, target: int, cap: int | None = MAX_BLOCK) -> int:
    """Bytes per block for about ``target`` splits of the whole input, at most ``cap``."""
    per = max(1, -(-sum(f.size for f in files) // max(1, target)))
    return min(per, cap) if cap else per


def plan_scans(files: list[InputFile], *, block: int) -> list[Scan]:
    """The scans reading ``files`` in order (see the module doc)."""
    scans: list[Scan] = []
    run: list[int] = []
    used = 0
    for f in files:
        split = f.line_based and f.size > block and not f.name.endswith(COMPRESSED_SUFFIXES)
        if split or (run and used + f.size > block):
            if run:
                scans.append(Scan(tuple(run), True, max(1, used)))
            run, used = [], 0
        if split:
            scans.append(Scan((f.index,), False, block))
        else:
            run.append(f.index)
            used += f.size
    if run:
        scans.append(Scan(tuple(run), True, max(1, used)))
    return scans
