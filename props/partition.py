"""``${PARTITION}``: one properties file for every partition of a partitioned feed (properties.md
§16).

A feed the broker partitions (RabbitMQ's consistent-hash exchange into N queues, a queue per
partition on ActiveMQ or Artemis, Solace partitioned queues) is captured by one ``msgcap run``
per partition, each with its own queue, trail and checkpoint. They share one file: its values
write ``${PARTITION}`` where they differ, and the partition number comes from ``--partition N``
or the environment variable ``MSGCAP_PARTITION``. ``PARTITION`` is never an ordinary
environment variable: a file that writes it without a partition given is one error, and a
partitioned file must give each partition a trail and a checkpoint of its own, so that two
partitions can never write one trail.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping

from props.errors import PropertyError
from props.keys import JNDI_HEADS, JNDI_PREFIX

VARIABLE = "PARTITION"
ENV = "MSGCAP_PARTITION"
MAX = 9999  # partition numbers 0..MAX

_REFERENCE = re.compile(r"\$\$\{|\$\{(" + VARIABLE + r")\}")
_NUMBER = re.compile(r"(0|[1-9][0-9]{0,3})\Z")
_RANGE = re.compile(r"(\d+)-(\d+)\Z")

# ``trail.path`` and ``trail.extract`` (which names the checkpoint, lock, status file, spill
# journal, archive files and default log) must differ; these, where set, must differ too
NEEDED = ("trail.path", "trail.extract")
WHERE_SET = ("gg.log.file", "trail.purge.readers")


def uses_partition(value: str) -> bool:
    """Whether a raw value writes ``${PARTITION}`` (``$${PARTITION}`` is a literal)."""
    return "${" in value and any(m.group(1) for m in _REFERENCE.finditer(value))


def parse_partition(text: str) -> int:
    """A partition number 0..9999, written in decimal; ValueError saying why not."""
    text = text.strip()
    if not _NUMBER.match(text.lstrip("0") or "0"):
        raise ValueError(f"{text!r} is not a partition number (0 to {MAX})")
    return int(text)


def partition_argument(text: str) -> int:
    """``--partition N`` (argparse ``type``)."""
    try:
        return parse_partition(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def partitions_argument(text: str) -> list[int]:
    """``--partition N``, ``A-B`` or ``N,M,…`` (argparse ``type`` of ``msgcap status``): the
    partitions in the order written, each once."""
    found: list[int] = []
    try:
        for part in text.split(","):
            span = _RANGE.match(part.strip())
            if span is None:
                found.append(parse_partition(part))
                continue
            first, last = parse_partition(span[1]), parse_partition(span[2])
            if first > last:
                raise ValueError(f"{part.strip()!r}: the range ends before it starts")
            found.extend(range(first, last + 1))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; write N, A-B or N,M,…") from None
    return list(dict.fromkeys(found))


def given_partition(partition: int | None, env: Mapping[str, str], file: str) -> int | None:
    """The partition of this process: ``partition`` (``--partition``), else ``MSGCAP_PARTITION``
    from ``env``, else None."""
    if partition is not None:
        return partition
    text = env.get(ENV)
    if text is None or not text.strip():
        return None
    try:
        return parse_partition(text)
    except ValueError as exc:
        raise PropertyError(f"environment variable {ENV}: {exc}", file=file) from None


def variables(env: Mapping[str, str], partition: int | None) -> dict[str, str]:
    """What ``${NAME}`` reads: the environment, but ``PARTITION`` only from ``partition``."""
    found = {name: value for name, value in env.items() if name != VARIABLE}
    if partition is not None:
        found[VARIABLE] = str(partition)
    return found


def unset_error(prop: str, file: str, line: int) -> PropertyError:
    """``${PARTITION}`` written, no partition given."""
    return PropertyError(f"${{{VARIABLE}}} needs a partition number: give --partition N "
                         f"(or set {ENV}=N)", prop=prop, file=file, line=line)


def check_partitioned(raw: Mapping[str, tuple[str, int]], file: str, partition: int,
                      *, http_port: int | None, discards_to_file: bool) -> None:
    """Refuse a file run as partition ``partition`` whose per-process files or port do not
    depend on the partition. ``raw``: property → (value as written, line)."""
    partitioned = [key for key, (value, _) in raw.items() if uses_partition(value)]
    if not partitioned:
        raise PropertyError(f"partition {partition} given (--partition or {ENV}), but the file writes no "
                            f"${{{VARIABLE}}}: every partition would write one trail; write "
                            f"${{{VARIABLE}}} in trail.path, trail.extract and jms.destination",
                            file=file)
    needed = [*NEEDED, *(key for key in WHERE_SET if key in raw)]
    if http_port:  # port 0: each process gets a port of its own
        needed.append("report.http")
    if discards_to_file:
        needed.append("error.file")
    if not any(_reads_source(key) for key in partitioned):
        needed.append("jms.destination")
    for key in needed:
        if key not in partitioned:
            line = raw[key][1] if key in raw else None
            raise PropertyError(f"must write ${{{VARIABLE}}} in a partitioned file: "
                                f"{_why(key)}", prop=key, file=file, line=line)


def _reads_source(key: str) -> bool:
    """Whether a property names what a capture reads: its queue, its broker or spool
    directory, or a JNDI entry or environment that may name them."""
    return (key in ("jms.url", "jms.destination") or key.startswith(JNDI_PREFIX)
            or key.partition(".")[0] in JNDI_HEADS)


def _why(key: str) -> str:
    return {
        "trail.path": "two partitions must never write one trail (dirdat/p${PARTITION}/fd)",
        "trail.extract": "it names each partition's checkpoint, lock, status file and log "
                         "(FEED${PARTITION})",
        "gg.log.file": "each partition logs to a file of its own",
        "trail.purge.readers": "each partition's trail has readers of its own",
        "jms.destination": "partitions that read one queue (or spool directory) compete for "
                           "its messages, and those one capture had not acknowledged when it "
                           "stopped go to another one's trail too: give each partition its "
                           "queue (/queue/orders.changes.${PARTITION}), or write ${PARTITION} "
                           "in jms.url",
        "report.http": "each partition serves on a port of its own (or port 0)",
        "error.file": "each partition discards to a file of its own "
                      "(dirrpt/FEED${PARTITION}.dsc)",
    }[key]


def first_use(raw: Iterable[tuple[str, str, int]]) -> tuple[str, int] | None:
    """(property, line) of the first value of ``raw`` (property, value, line) writing
    ``${PARTITION}``, None when none does."""
    for key, value, line in raw:
        if uses_partition(value):
            return key, line
    return None
