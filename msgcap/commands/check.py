"""``msgcap check --prop P [--no-connect] [--sample DUMP...]``: what ``run`` would refuse, before
it runs, writing nothing (``msgcap.check``).

The report goes to stdout; each problem is one line on stderr, and any problem makes the exit
status 2. Python writes no bytecode of a ``jms.id=module:function`` module it imports, so the
working directory is left as it was.
"""

from __future__ import annotations

import argparse
import logging
import sys

from props.errors import MsgcapError
from props.partition import partition_argument

EPILOG = f"""\
It checks the properties, the definitions (copybook, DEFGEN files, header items),
the directories msgcap run writes (trail, checkpoint, log, archive, discard file;
writable or creatable, the trail's free space), the writer locks (a running
capture named by its pid), the checkpoint against the trail, and the source: a
spool directory readable and writable, or the broker connected (TLS verified),
logged in and the destination subscribed (jms.selector accepted), without taking
or acknowledging a message or creating a queue (a missing queue is a problem; the
messages waiting are counted where the broker tells). It prints each table's
layout (offsets, lengths, types, keys) and, with --sample, the operations the
messages would become.

exit status:
  0  no problem found
  {MsgcapError.exit_code}  problems found, one line each on stderr (or a bad command line or
     properties file)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prop", required=True, metavar="FILE",
                        help="properties file (e.g. dirprm/jmsvam.properties)")
    parser.add_argument("--partition", type=partition_argument, metavar="N",
                        help="the partition number ${PARTITION} stands for in the properties "
                             "(default: $MSGCAP_PARTITION)")
    parser.add_argument("--no-connect", action="store_true",
                        help="do not contact the broker (everything else is checked)")
    parser.add_argument("--sample", nargs="+", metavar="DUMP", default=None,
                        help="parse these message dumps (the forms msgcap replay reads) and "
                             "show the operations each message becomes; nothing is written")
    parser.add_argument("--lines", action="store_true",
                        help="with --sample: each line of a DUMP is one message body")


def run(args: argparse.Namespace) -> int:
    from gendef.logsetup import configure_logging
    from msgcap.check import run_check
    from msgcap.dumps import expand_inputs, read_messages
    from props.loader import load_settings

    sys.dont_write_bytecode = True  # a jms.id module imported here leaves no __pycache__
    settings = load_settings(args.prop, partition=args.partition)
    configure_logging(settings, command="msgcap check", log_to_file=False)
    # the connection lines the source logs for run are part of the report here
    logging.getLogger("msgcap.source").setLevel(logging.WARNING)
    logging.getLogger("stomp.py").setLevel(logging.CRITICAL)
    samples = None
    if args.sample is not None:
        samples = read_messages(expand_inputs(args.sample), lines=args.lines,
                                max_bytes=settings.jms.maxbytes)
    problems = run_check(settings, sys.stdout, connect=not args.no_connect, samples=samples)
    print(f"{len(problems) or 'no'} problem{'' if len(problems) == 1 else 's'} found")
    sys.stdout.flush()
    for problem in problems:
        print(f"msgcap check: error: {problem}", file=sys.stderr)
    return MsgcapError.exit_code if problems else 0
