"""Fixtures of the trail tests: the spec's example tables and record builders."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gendef.model import Table, char_column, datetime_column, number_column, varchar_column
from msgcap.trail.julian import datetime_to_unix_us

TCUSTMER_DEFS = """\
Definition for table GG.JMSCAP_TCUSTMER
Record length: 78
Syskey: 0
Columns: 4
CUST_CODE   64      4        0  0  0 1 0      4      4      0 0 0 0 0 1    0 1   0    1       -1      0 0 0
NAME        64     30       10  0  0 1 0     30     30      0 0 0 0 0 1    0 0   0    1       -1      0 0 0
CITY        64     20       46  0  0 1 0     20     20      0 0 0 0 0 1    0 0   0    1       -1      0 0 0
STATE        0      2       72  0  0 1 0      2      2      0 0 0 0 0 1    0 0   0   96       -1      0 0 0
End of definition
"""


@pytest.fixture
def tcustmer() -> Table:
    """sourcedefs.md §5's GG.JMSCAP_TCUSTMER (CUST_CODE is the key)."""
    return Table.build("GG.JMSCAP_TCUSTMER", [
        varchar_column("CUST_CODE", 4, key=True), varchar_column("NAME", 30),
        varchar_column("CITY", 20), char_column("STATE", 2)])


@pytest.fixture
def wide_tcustmer() -> Table:
    """GG.JMSCAP_TCUSTMER with a NAME of 200 bytes: records of a size for roll-over tests."""
    return Table.build("GG.JMSCAP_TCUSTMER", [
        varchar_column("CUST_CODE", 4, key=True), varchar_column("NAME", 200),
        varchar_column("CITY", 20), char_column("STATE", 2)])


@pytest.fixture
def orders() -> Table:
    """An 8-column table with every kind msgcap writes."""
    return Table.build("SALES.ORDERS", [
        number_column("ID", 10, 0, key=True), varchar_column("NAME", 30),
        varchar_column("CITY", 20), char_column("STATE", 2), number_column("AMOUNT", 12, 2),
        datetime_column("CREATED", 26), datetime_column("DAY", 19),
        number_column("BIG", 30, 0)])


@pytest.fixture
def example_time() -> int:
    """2010-02-05 10:11:21 UTC, the §15 example's IO time (µs since the Unix epoch)."""
    return datetime_to_unix_us(datetime(2010, 2, 5, 10, 11, 21, tzinfo=UTC))
