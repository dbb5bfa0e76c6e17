"""``msgcap dump``: show trail records, Logdump-style or as JSON Lines (trail-format.md §17)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gendef.model import Definitions
    from msgcap.trail.ordercheck import OrderCheck
    from msgcap.trail.reader import Tail


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--defs", metavar="FILE",
                        help="DEFGEN source definitions: column names and typed values")
    parser.add_argument("--json", action="store_true", help="JSON Lines (the stable interface)")
    parser.add_argument("--count", type=int, metavar="N", help="stop after N data records")
    parser.add_argument("--rba", type=int, metavar="N",
                        help="start the first file at this RBA (a record start)")
    parser.add_argument("--check-order", action="store_true",
                        help="instead of the records: each message group (JMSXGroupID) whose "
                             "sequence (JMSXGroupSeq) went backwards or skipped inside a trail, "
                             "and each group found in two trails (the TRAILs are the "
                             "partitions of one feed), one line each; exit status 2 when any")
    parser.add_argument("--key", action="store_true",
                        help="with --check-order and --defs: each table key found in two "
                             "trails, or whose change is older than the one before it")
    parser.add_argument("trails", nargs="+", metavar="TRAIL",
                        help="trail files, in order; a trail prefix (dirdat/aa) reads its files "
                             "in sequence")


def _expand(args: list[str]) -> list[tuple[str, bool, str]]:
    """(file, follow roll-over, trail) per argument; a prefix expands to its first file. The
    trail of a file is its name without the sequence number."""
    from msgcap.trail.reader import log, sequence_files, split_trail_name, stray_warning
    from props.errors import TrailError

    out = []
    for a in args:
        if a.endswith(".lock") and os.path.isfile(a) and len(args) > 1:
            continue  # the writer's lock beside the trail files (msgcap/lock.py): dirdat/sa*
        if os.path.exists(a):
            named = split_trail_name(a)
            out.append((a, False, named[0] if named is not None else a))
            continue
        files, width = sequence_files(a, 9), 9
        if not files and (six := sequence_files(a, 6)):
            files, width = six, 6
        stray = stray_warning(a, width)
        if stray is not None:
            log.warning("trail %s: %s", a, stray)
        if not files:
            raise TrailError("no such file or trail", file=a)
        out.append((files[0][1], True, a))
    return out


def run(args: argparse.Namespace) -> int:
    from gendef.logsetup import configure_logging
    from props.errors import TrailError

    if args.count is not None and args.count < 0:
        raise TrailError("--count must not be negative")
    if args.key and not (args.check_order and args.defs):
        raise TrailError("--key needs --check-order and --defs (the key columns)")
    if args.check_order and (args.json or args.count is not None):
        raise TrailError("--check-order prints findings, not records: --json and --count do "
                         "not apply")
    configure_logging(None, command="msgcap dump", log_to_file=False)
    definitions = None
    if args.defs:
        from gendef.defgen import read_defs
        definitions = read_defs(args.defs)
    gaps: list[tuple[str, str]] = []
    cuts: list[Tail] = []
    check = None
    if args.check_order:
        from msgcap.trail.ordercheck import OrderCheck
        check = OrderCheck(keys=args.key)
    try:
        _dump(args, definitions, gaps, cuts, check)
        if check is not None:
            _report(check, len({trail for _, _, trail in _expand(args.trails)}))
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
    return 2 if check is not None and check.count else 0


def _report(check: OrderCheck, trails: int) -> None:
    """The findings of ``--check-order``, at most ``SHOWN`` lines, then the count."""
    from msgcap.trail.ordercheck import SHOWN

    for line in check.lines:
        print(line)
    more = f" ({check.count - SHOWN} more not shown)" if check.count > SHOWN else ""
    print(f"order check: {check.records} records, {check.groups} message groups, {trails} "
          f"trails: {check.count} findings{more}")


def _dump(args: argparse.Namespace, definitions: Definitions | None,
          gaps: list[tuple[str, str]], cuts: list[Tail], check: OrderCheck | None) -> None:
    """Write the records (or give them to ``check``); the gaps the readers found (missing
    files) are added to ``gaps``, the partial tails of files that are not the last of their
    trail to ``cuts``."""
    from msgcap.trail import dumpfmt
    from msgcap.trail.reader import TrailReader

    out = sys.stdout
    as_json = args.json
    count = 0
    first = True
    for path, follow, trail in _expand(args.trails):
        reader = TrailReader(path, definitions, follow=follow)
        try:
            for tf in reader.files():
                if check is not None:
                    for rec in tf.records(args.rba if first else None):
                        check.add(trail, rec, reader.decoder(rec) if args.key else None)
                    first = False
                    if tf.tail is not None and not tf.finished:
                        print(f"{tf.tail}", file=sys.stderr)
                    continue
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
