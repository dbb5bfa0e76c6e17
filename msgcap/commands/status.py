"""``msgcap status --prop P [--json]``: GGSCI's INFO EXTRACT for a capture, without a broker.

Reads the writer lock, the checkpoint, the trail files, the status file ``msgcap run``
publishes, its last purge record and the positions of ``trail.purge.readers``
(``msgcap.status``); locks nothing and changes nothing, so it is safe beside a running capture. The exit status tells a script the state without parsing.
"""

from __future__ import annotations

import argparse
import json
import sys

from props.errors import MsgcapError

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
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prop", required=True, metavar="FILE",
                        help="properties file of the capture (e.g. dirprm/jmsvam.properties)")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object (the stable interface for scripts)")


def run(args: argparse.Namespace) -> int:
    from gendef.logsetup import configure_logging
    from msgcap.status import capture_status, status_text
    from props.loader import load_settings

    settings = load_settings(args.prop)
    configure_logging(settings, command="msgcap status", log_to_file=False)
    status = capture_status(settings)
    if args.json:
        print(json.dumps(status, indent=1))
    else:
        print(status_text(status))
    sys.stdout.flush()
    for problem in status["problems"]:
        print(f"msgcap status: error: {problem}", file=sys.stderr)
    if status["problems"]:
        return MsgcapError.exit_code
    return {"running": RUNNING, "abended": ABENDED}.get(status["state"], NOT_RUNNING)
