"""The ``msgcap`` command: one subcommand per module in ``msgcap.commands``.

Each command module exposes ``add_arguments(parser)`` and ``run(args) -> int``; its one line of
help is in ``HELPS``.
Modules are imported lazily so that ``msgcap dump`` never pays for pyspark or stomp.py.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from msgcap import __version__
from props.errors import MsgcapError

COMMANDS = {
    "check": "msgcap.commands.check",
    "run": "msgcap.commands.run",
    "replay": "msgcap.commands.replay",
    "dump": "msgcap.commands.dump",
    "send": "msgcap.commands.send",
    "batch": "msgcap.commands.batch",
    "status": "msgcap.commands.status",
}

HELPS = {
    "check": "find what run would refuse, writing nothing; show the tables' layouts",
    "run": "capture messages from a broker or spool directory into the trail",
    "replay": "run message dumps through parser and assembler into the trail",
    "dump": "show the records of trail files (Logdump-style, or --json)",
    "send": "publish message dumps to the configured destination",
    "batch": "replay archived message dumps with Spark",
    "status": "show whether a capture runs, its durable position, trail, lag and last report",
}


INTERRUPTED = 130  # Ctrl-C, as a shell reports a process killed by SIGINT

# What --help says besides the subcommands: the commands' user manual is the repository's docs/,
# but the exit statuses and the log location must be findable from the command line.
EPILOG = f"""\
other command:
  gendef -prop FILE [-out FILE]
            write the source definitions (DEFGEN 4.0) of the tables a properties
            file's parser uses, for the trail's consumers (SOURCEDEFS); a separate
            command installed with msgcap: see gendef --help

exit status:
  0         done; msgcap run also when stopped by --max-idle, SIGTERM or SIGINT
            (it finishes the open transaction first); msgcap status: a capture
            is running; msgcap check: no problem found
  {MsgcapError.exit_code:<9} an error, reported as one line on stderr: a bad command line,
            property, definition, copybook or trail, a broker that refuses the
            connection (run retries one it cannot reach; send gives up), or a bad
            message under error.policy=abend; msgcap check: problems found;
            msgcap dump --check-order: a group or key out of order
  3         msgcap status: no capture is running (stopped cleanly, or never started)
  4         msgcap status: the last run abended (stopped by an error, killed, crashed)
  {INTERRUPTED:<9} interrupted by Ctrl-C (commands other than run)
  1         anything else is a bug: Python prints a traceback; please report it

logging:
  msgcap run logs to gg.log.file (default dirrpt/<trail.extract>.log under the
  working directory) at gg.log.level (default INFO); its warnings and errors also
  go to stderr, its reports and summary to stdout (jms.report.output). msgcap
  batch logs to DIR/batch.log of its --output, with the output of the Spark JVM it
  starts (Spark's log, stack traces); its warnings and errors also go to stderr.
  The other commands log to stderr. With --json, run, replay and batch print their
  summary as one JSON object, alone on stdout (run's reports then go to stderr).

Every command takes the properties file with --prop (or -prop, as gendef and
GoldenGate spell it); msgcap COMMAND --help describes one command. The manual is docs/ in the msgcap repository (docs/README.md).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="msgcap", description="JMS/STOMP change-message capture into GoldenGate trails.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"msgcap {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=HELPS[name], description=HELPS[name],
                           epilog=getattr(mod, "EPILOG", None),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(_module=module)
        mod.add_arguments(p)
    return parser


def gendef_spelling(argv: list[str]) -> list[str]:
    """``-prop FILE`` / ``-prop=FILE`` (gendef's and GoldenGate's habit) read as ``--prop``."""
    return [f"-{arg}" if arg == "-prop" or arg.startswith("-prop=") else arg for arg in argv]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(gendef_spelling(sys.argv[1:] if argv is None else argv))
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    mod = importlib.import_module(args._module)
    from gendef.logsetup import configure_logging

    # until a command configures its logging from the properties: their loader's warnings
    # carry the command and WARNING: as every later warning does
    configure_logging(None, command=f"msgcap {args.command}", log_to_file=False)
    try:
        return mod.run(args) or 0
    except MsgcapError as exc:
        logging.getLogger("msgcap").debug("error", exc_info=True)
        print(f"msgcap {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"msgcap {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
