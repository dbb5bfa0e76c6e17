"""``${PARTITION}`` (issue 36, properties.md §16): one properties file for every partition of a
partitioned feed, the partition number from ``--partition`` or ``MSGCAP_PARTITION``, one clear
error without it, and no partitioned file whose partitions could share a trail, a checkpoint, a
log, a discard file or a port."""

from __future__ import annotations

import argparse

import pytest

from props.errors import PropertyError
from props.loader import settings_from_text
from props.partition import partition_argument, partitions_argument

FILE = """\
parser.type=delim
delim.sourcedefs=dirdef/sales.def
delim.header=optype,schemaandtable,timestamp,txind,id
jms.url=amqp://127.0.0.1:5672
jms.destination=/queue/orders.changes.${PARTITION}
trail.path=dirdat/orders${PARTITION}/oc
trail.extract=ORDERS${PARTITION}
"""


def load(text: str = FILE, partition: int | None = None, **env: str):
    return settings_from_text(text, "dirprm/orders.properties", env, partition)


def refused(text: str = FILE, partition: int | None = None, **env: str) -> str:
    with pytest.raises(PropertyError) as caught:
        load(text, partition, **env)
    return str(caught.value)


def test_each_partition_gets_its_own_queue_trail_and_checkpoint():
    two, three = load(partition=2), load(partition=3)
    assert (two.jms.destination, two.trail.path, two.trail.extract, two.partition) == (
        "/queue/orders.changes.2", "dirdat/orders2/oc", "ORDERS2", 2)
    assert (three.trail.path, three.trail.extract, three.partition) == (
        "dirdat/orders3/oc", "ORDERS3", 3)
    assert load(partition=12).trail.extract == "ORDERS12"  # decimal, no leading zeros


def test_the_partition_comes_from_the_environment_unless_given():
    assert load(MSGCAP_PARTITION="1").partition == 1
    assert load(partition=0, MSGCAP_PARTITION="1").partition == 0  # --partition wins
    assert "MSGCAP_PARTITION: 'one' is not a partition number (0 to 9999)" in refused(
        MSGCAP_PARTITION="one")


def test_a_partitioned_file_without_a_partition_is_one_error_naming_the_first_use():
    assert refused() == ("dirprm/orders.properties:5: jms.destination: ${PARTITION} needs a "
                         "partition number: give --partition N (or set MSGCAP_PARTITION=N)")
    # PARTITION is no environment variable: one set by chance is not a partition
    assert "needs a partition number" in refused(PARTITION="1")
    # nor does a connection setting (resolved by the commands that connect) wait for one
    text = FILE.replace("${PARTITION}", "") + "jms.user=capture${PARTITION}\n"
    assert "properties:8: jms.user: ${PARTITION} needs a partition number" in refused(text)


def test_an_unpartitioned_file_loads_as_before_and_partition_is_none():
    text = FILE.replace("${PARTITION}", "")
    assert load(text).partition is None
    literal = text.replace("orders.changes.", "orders.changes.$${PARTITION}")  # $${: a ${
    assert load(literal).jms.destination == "/queue/orders.changes.${PARTITION}"


def test_a_partition_given_to_a_file_that_writes_none_is_refused():
    assert refused(FILE.replace("${PARTITION}", ""), partition=1) == (
        "dirprm/orders.properties: partition 1 given (--partition or MSGCAP_PARTITION), but the "
        "file writes no ${PARTITION}: every partition would write one trail; write "
        "${PARTITION} in trail.path, trail.extract and jms.destination")


@pytest.mark.parametrize("change, where", [
    (("trail.path=dirdat/orders${PARTITION}/oc", "trail.path=dirdat/oc"), ":6: trail.path:"),
    (("trail.extract=ORDERS${PARTITION}", "trail.extract=ORDERS"), ":7: trail.extract:"),
    (("trail.extract=ORDERS${PARTITION}\n", ""), "properties: trail.extract:"),  # the default
])
def test_partitions_never_share_a_trail_or_a_checkpoint(change, where):
    message = refused(FILE.replace(*change), partition=0)
    assert where in message and "must write ${PARTITION} in a partitioned file" in message


def test_partitions_never_compete_for_one_queue():
    one_queue = FILE.replace("orders.changes.${PARTITION}", "orders.changes")
    message = refused(one_queue, partition=0)
    assert message.startswith("dirprm/orders.properties:5: jms.destination: must write "
                              "${PARTITION} in a partitioned file: partitions that read one "
                              "queue (or spool directory) compete for its messages"), message
    # a broker or a spool directory per partition is a source per partition too
    assert load(one_queue.replace("127.0.0.1:5672", "broker${PARTITION}:5672"), 1).jms.url == (
        "amqp://broker1:5672",)
    spool = one_queue.replace("amqp://127.0.0.1:5672", "dir:dirspool${PARTITION}").replace(
        "jms.destination=/queue/orders.changes\n", "")
    assert load(spool, 1).jms.url == ("dir:dirspool1",)
    assert "jms.destination: must write" in refused(spool.replace("${PARTITION}\n", "\n", 1),
                                                    partition=1)


@pytest.mark.parametrize("extra, prop", [
    ("gg.log.file=dirrpt/orders.log", "gg.log.file"),
    ("trail.purge.readers=dirchk/rep.pos", "trail.purge.readers"),
    ("report.http=127.0.0.1:9464", "report.http"),
    ("error.policy=discard", "error.file"),  # its default is one file for all
    ("error.policy=discard\nerror.file=dirrpt/orders.dsc", "error.file"),
])
def test_per_process_files_and_ports_must_depend_on_the_partition(extra, prop):
    assert f"{prop}: must write ${{PARTITION}}" in refused(FILE + extra + "\n", partition=1)


@pytest.mark.parametrize("extra", [
    "gg.log.file=dirrpt/ORDERS${PARTITION}.log",
    "report.http=127.0.0.1:946${PARTITION}",
    "report.http=127.0.0.1:0",  # each process takes a free port
    "error.policy=discard\nerror.file=dirrpt/ORDERS${PARTITION}.dsc",
    "error.policy=discard\nerror.destination=orders.dead",  # no discard file
    "trail.defs=dirdef/orders.def\narchive.dir=dirarc",  # shared: same definitions, named files
])
def test_what_may_be_shared_or_depends_on_the_partition_loads(extra):
    assert load(FILE + extra + "\n", partition=1).partition == 1


def test_partition_options():
    assert partition_argument("7") == 7
    assert partitions_argument("0-3") == [0, 1, 2, 3]
    assert partitions_argument("2, 0,2") == [2, 0]
    assert partitions_argument("1-2,5") == [1, 2, 5]
    for bad in ("-1", "x", "10000", "1.5", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            partition_argument(bad)
    for bad in ("3-1", "0-x", "0,,1"):
        with pytest.raises(argparse.ArgumentTypeError, match="write N, A-B or N,M"):
            partitions_argument(bad)
