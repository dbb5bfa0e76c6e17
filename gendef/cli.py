"""The ``gendef`` command: write the source definitions a properties file's parser uses.

``gendef -prop FILE [-out FILE]`` (also ``--prop``/``--out``; properties.md §14 #20). The output
is DEFGEN 4.0 (sourcedefs.md §6) on stdout, or written atomically to ``-out``. A user error is
one line on stderr and exit code 2, and leaves ``-out`` untouched.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from gendef.build import build_definitions, check_names_known
from gendef.defgen import encode_defs, write_defs
from gendef.logsetup import configure_logging
from props.errors import MsgcapError
from props.partition import partition_argument

log = logging.getLogger("gendef")

DESCRIPTION = """\
Write GoldenGate source definitions (DEFGEN 4.0) for the tables the parser of a msgcap
properties file uses: its COBOL copybook (fixed.schematype=copybook), DEFGEN file
(fixed.sourcedefs, delim.sourcedefs, xml.sourcedefs) and user-defined tables (<p>.userdefs.*),
normalised as the trail carries them. Trail consumers read msgcap trails with these SOURCEDEFS.
"""

EPILOG = """\
examples:
  gendef -prop dirprm/jmsvam.properties                       definitions on stdout
  gendef -prop dirprm/jmsvam.properties -out dirdef/msgdefs.def

The date line is the current UTC time, or SOURCE_DATE_EPOCH when set (reproducible output).
Logging follows gg.log.level; messages go to stderr. Exit status: 0 done, 2 error.
"""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse with its usage errors on one line, like every other gendef error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="gendef", description=DESCRIPTION, epilog=EPILOG,
                             formatter_class=argparse.RawDescriptionHelpFormatter,
                             allow_abbrev=False)
    parser.add_argument("-prop", "--prop", required=True, metavar="FILE",
                        help="the msgcap properties file (e.g. dirprm/jmsvam.properties)")
    parser.add_argument("-out", "--out", metavar="FILE",
                        help="write the definitions to FILE (temporary file + rename) instead "
                             "of standard output")
    parser.add_argument("-partition", "--partition", type=partition_argument, metavar="N",
                        help="the partition number ${PARTITION} stands for in the properties "
                             "(default: $MSGCAP_PARTITION); every partition of a feed has the "
                             "same definitions")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    dashes = [a for a in argv if a[:1] in "\u2013\u2014" and a[1:] in ("prop", "out", "partition")]
    if dashes:
        parser.error(f"{dashes[0]} starts with a typographic dash; write -{dashes[0][1:]}")
    args = parser.parse_args(argv)
    try:
        configure_logging(None, command="gendef", log_to_file=False)
        from props.loader import load_settings

        settings = load_settings(args.prop, partition=args.partition)
        configure_logging(settings, command="gendef", log_to_file=False)
        check_names_known(settings)
        defs = build_definitions(settings)
        if args.out:
            write_defs(defs, args.out)
            log.info("wrote %d table definitions to %s", len(defs), args.out)
        else:
            sys.stdout.buffer.write(encode_defs(defs))
            sys.stdout.flush()
    except MsgcapError as exc:
        log.debug("error", exc_info=True)
        print(f"gendef: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (gendef ... | head): not an error; keep the exit-time flush quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"gendef: error: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gendef: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
