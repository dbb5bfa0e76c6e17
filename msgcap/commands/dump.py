"""``msgcap dump``: show trail records, Logdump-style or as JSON Lines (trail-format.md §17)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gendef.model import Definitions
    from msgcap.trail.reader import Tail


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--defs", metavar="FILE",
                        help="DEFGEN source definitions: column names and typed values")
    parser.add_argument("--json", action="store_true", help="JSON Lines (the stable interface)")
    parser.add_argument("--count", type=int, metavar="N", help="stop after N data records")
    parser.add_argument("--rba", type=int, metavar="N",
                        help="start the first file at this RBA (a record start)")
    parser.add_argument("trails", nargs="+", metavar="TRAIL",
                        help="trail files, in order; a trail prefix (dirdat/aa) reads its files "
                             "in sequence")


def _expand(args: list[str]) -> list[tuple[str, bool]]:
    """(file, follow roll-over) per argument; a prefix expands to its first file."""
    from msgcap.trail.reader import log, sequence_files, stray_warning
    from props.errors import TrailError

    out = []
    for a in args:
        if a.endswith(".lock") and os.path.isfile(a) and len(args) > 1:
            continue  # the writer's lock beside the trail files (msgcap/lock.py): dirdat/sa*
        if os.path.exists(a):
            out.append((a, False))
            continue
        files, width = sequence_files(a, 9), 9
        if not files and (six := sequence_files(a, 6)):
            files, width = six, 6
        stray = stray_warning(a, width)
        if stray is not None:
            log.warning("trail %s: %s", a, stray)
        if not files:
            raise TrailError("no such file or trail", file=a)
        out.append((files[0][1], True))
    return out


def run(args: argparse.Namespace) -> int:
    from gendef.logsetup import configure_logging
    from props.errors import TrailError

    if args.count is not None and args.count < 0:
        raise TrailError("--count must not be negative")
    configure_logging(None, command="msgcap dump", log_to_file=False)
    definitions = None
    if args.defs:
        from gendef.defgen import read_defs
        definitions = read_defs(args.defs)
    gaps: list[tuple[str, str]] = []
    cuts: list[Tail] = []
    try:
        _dump(args, definitions, gaps, cuts)
    finally:
        sys.stdout.flush()
    if gaps:  # everything around the gap was shown; the exit status tells a script
        missing = ", ".join(m for m, _ in gaps)
        raise TrailError(f"the trail has a gap: {missing} missing (the files after it were "
                         "shown)", file=gaps[0][0])
    if cuts:
        more = f" (and in {len(cuts) - 1} more files)" if len(cuts) > 1 else ""
        raise TrailError(f"incomplete record ({cuts[0].pending} bytes) in a file that is not "
                         f"the last of its trail{more}: a record is missing (the files after "
                         "it were shown)", file=cuts[0].file, rba=cuts[0].rba)
    return 0


def _dump(args: argparse.Namespace, definitions: Definitions | None,
          gaps: list[tuple[str, str]], cuts: list[Tail]) -> None:
    """Write the records; the gaps the readers found (missing files) are added to ``gaps``,
    the partial tails of files that are not the last of their trail to ``cuts``."""
    from msgcap.trail import dumpfmt
    from msgcap.trail.reader import TrailReader

    out = sys.stdout
    as_json = args.json
    count = 0
    first = True
    for path, follow in _expand(args.trails):
        reader = TrailReader(path, definitions, follow=follow)
        try:
            for tf in reader.files():
                if tf.header is not None:
                    out.write(json.dumps(dumpfmt.header_json(tf.name, tf.header),
                                         ensure_ascii=False)
                              if as_json else dumpfmt.header_text(tf.name, tf.header))
                    out.write("\n")
                for rec in tf.records(args.rba if first else None):
                    if args.count is not None and count >= args.count:
                        return
                    decoder = reader.decoder(rec) if definitions is not None else None
                    if as_json:
                        out.write(json.dumps(dumpfmt.record_json(rec, decoder),
                                             ensure_ascii=False))
                        out.write("\n")
                    else:
                        out.write(dumpfmt.record_text(rec, decoder))
                        out.write("\n\n")
                    count += 1
                first = False
                if tf.tail is not None and not tf.finished:  # (a cut is logged as a warning)
                    note = f"{tf.tail}"
                    if as_json:
                        out.flush()
                        print(note, file=sys.stderr)
                    else:
                        out.write(note + "\n")
        finally:
            gaps.extend(reader.gaps)
            cuts.extend(reader.cuts)
        if args.count is not None and count >= args.count:
            return
