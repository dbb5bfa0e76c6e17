"""``msgcap status --prop P [--partition N|A-B] [--json]``: GGSCI's INFO EXTRACT for a capture, or
for the partitions of a partitioned feed, without a broker.

Reads the writer lock, the checkpoint, the trail files, the status file ``msgcap run``
publishes, its last purge record and the positions of ``trail.purge.readers``
(``msgcap.status``); locks nothing and changes nothing, so it is safe beside a running capture. The exit status tells a script the state without parsing.
With ``--partition 0-3`` it reads each partition's files (``props.partition``) and shows one line
each (``msgcap.status.group_status``); the exit status is then the worst of theirs.
"""

from __future__ import annotations

import argparse
import json
import sys

from props.errors import MsgcapError
from props.partition import partitions_argument

HELP = ("show whether a capture runs, its connection to the source, durable position, trail "
        "and its retention, lag and last report")

RUNNING, NOT_RUNNING, ABENDED = 0, 3, 4

EPILOG = f"""\
exit status:
  {RUNNING}  a capture is running (it holds the checkpoint's writer lock)
  {NOT_RUNNING}  no capture is running: it stopped cleanly, or never started
  {ABENDED}  the last run abended: stopped by an error, killed or crashed
  {MsgcapError.exit_code}  a bad command line or property, or a checkpoint or status file
     that cannot be read (one line each on stderr; what could be read is shown)

With several partitions (--partition 0-3) the exit status is the worst of theirs:
{ABENDED} if any abended, else {NOT_RUNNING} if any is not running, {RUNNING} when all run.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prop", required=True, metavar="FILE",
                        help="properties file of the capture (e.g. dirprm/jmsvam.properties)")
    parser.add_argument("--partition", type=partitions_argument, metavar="N|A-B|N,M",
                        help="the partition, or the partitions of a partitioned feed (0-3): "
                             "one line each (default: $MSGCAP_PARTITION)")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object (the stable interface for scripts)")


def run(args: argparse.Namespace) -> int:
    from gendef.logsetup import configure_logging
    from msgcap.status import capture_status, group_status, group_text, status_text
    from props.loader import load_settings

    partitions = args.partition or [None]
    every = [load_settings(args.prop, partition=n) for n in partitions]
    configure_logging(every[0], command="msgcap status", log_to_file=False)
    statuses = [capture_status(settings) for settings in every]
    if len(statuses) == 1:
        shown = statuses[0]
        text = status_text(shown)
    else:
        shown = group_status(statuses, args.prop)
        text = group_text(shown)
    print(json.dumps(shown, indent=1) if args.json else text)
    sys.stdout.flush()
    for problem in shown["problems"]:
        print(f"msgcap status: error: {problem}", file=sys.stderr)
    if shown["problems"]:
        return MsgcapError.exit_code
    codes = [{"running": RUNNING, "abended": ABENDED}.get(s["state"], NOT_RUNNING)
             for s in statuses]
    return max(codes)  # the worst: ABENDED > NOT_RUNNING > RUNNING
