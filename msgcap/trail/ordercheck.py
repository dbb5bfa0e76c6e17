"""``msgcap dump --check-order``: whether each message group (and, optionally, each key) kept its
order in the trails given (trail-format.md §10, docs/operations.md).

A capture writes a message's group and its number in the group as user tokens (JMSXGroupID,
JMSXGroupSeq) on each of the message's records. Inside one trail a group's numbers must rise by
one from message to message: a number not greater than the one before went backwards (the group's
messages were captured out of order, or one twice), a number more than one greater skipped
(messages were lost or went to another consumer). A negative number closes the group (ActiveMQ and
Artemis); the group's next message may start anew. The first number a trail holds of a group is
not checked: a trail may start in the middle of a group. With several trails (the partitions of a
feed), a group found in two of them is a finding too: one consumer per group is what keeps its
order. With the table definitions, the same holds for each table key: a key in two trails, or a
key whose change is older (IO time) than the change before it in its trail.

Records of one message carry the same tokens: a record is of the message before it when it
follows it directly in the trail with the same group and number and is the next operation of
the message (a higher AuditPos, the operation's place in its message) or the after image of a
before image.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from msgcap.trail.columns import TableDecoder
from msgcap.trail.layout import UTOKEN_GROUP, UTOKEN_GROUP_SEQ
from msgcap.trail.reader import Record
from parsers.model import MISSING

SHOWN = 100  # findings printed; the count says how many more there were


@dataclass(slots=True)
class _Last:
    """What a trail held last of one group or key: its number or IO time, and where."""

    value: int
    file: str
    rba: int


@dataclass(slots=True)
class OrderCheck:
    """Findings of the records fed to ``add`` (trail by trail, each in order); ``lines`` holds
    the first ``SHOWN`` of them, ``count`` all of them."""

    keys: bool = False
    lines: list[str] = field(default_factory=list)
    count: int = 0
    records: int = 0
    _groups: dict[tuple[str, str], _Last | None] = field(default_factory=dict)
    _group_trail: dict[str, str] = field(default_factory=dict)
    _key_last: dict[tuple[str, str, tuple[Any, ...]], _Last] = field(default_factory=dict)
    _key_trail: dict[tuple[str, tuple[Any, ...]], str] = field(default_factory=dict)
    _reported: set[tuple[str, Any, str]] = field(default_factory=set)
    _previous: dict[str, tuple[bytes, bytes | None, int, str]] = field(default_factory=dict)

    @property
    def groups(self) -> int:
        return len(self._group_trail)

    def add(self, trail: str, rec: Record, decoder: TableDecoder | None = None) -> None:
        """Check one record of ``trail``; ``decoder`` (with ``keys``) gives its key values."""
        self.records += 1
        user = rec.user_tokens
        group = user.get(UTOKEN_GROUP)
        if group is not None:
            self._group(trail, rec, group, user.get(UTOKEN_GROUP_SEQ))
        else:
            self._previous.pop(trail, None)
        if self.keys and decoder is not None:
            self._key(trail, rec, decoder)

    def _finding(self, line: str) -> None:
        self.count += 1
        if len(self.lines) < SHOWN:
            self.lines.append(line)

    def _group(self, trail: str, rec: Record, group_bytes: bytes, seq_bytes: bytes | None
               ) -> None:
        group = group_bytes.decode(errors="replace")
        where = f"{rec.file} RBA {rec.rba}"
        other = self._group_trail.setdefault(group, trail)
        if other != trail and ("group", group, trail) not in self._reported:
            self._reported.add(("group", group, trail))
            self._finding(f"{trail}: group {group!r} is also in trail {other} (at {where}): "
                          "two consumers took its messages")
        this = (group_bytes, seq_bytes, rec.audit_pos, rec.before_after)
        before = self._previous.get(trail)
        self._previous[trail] = this
        if before is not None and before[:2] == this[:2] and (
                this[2] > before[2] or this[2] == before[2] and before[3] == "B"):
            return  # the next record of the same message
        seq = _integer(seq_bytes)
        if seq is None:
            return
        last = self._groups.get((trail, group))
        self._groups[trail, group] = _Last(seq, rec.file, rec.rba)
        if last is None or last.value < 0 or seq < 0:
            return  # the first of the group here, a group closed before, or closing now
        if seq <= last.value:
            self._finding(f"{trail}: group {group!r} went backwards from {last.value} to {seq} "
                          f"at {where} (after {last.file} RBA {last.rba})")
        elif seq > last.value + 1:
            gap = (f"{last.value + 1}" if seq == last.value + 2
                   else f"{last.value + 1}–{seq - 1}")
            self._finding(f"{trail}: group {group!r} skipped {gap} (from {last.value} to {seq}) "
                          f"at {where}")

    def _key(self, trail: str, rec: Record, decoder: TableDecoder) -> None:
        table = decoder.table
        _, values = rec.values(decoder)
        key = tuple(values[i] for i in table.key_indexes)
        if MISSING in key:  # a truncate: no key
            return
        shown = ", ".join(f"{table.columns[i].name}={values[i]!r}" for i in table.key_indexes)
        where = f"{rec.file} RBA {rec.rba}"
        other = self._key_trail.setdefault((table.name, key), trail)
        if other != trail and ("key", (table.name, key), trail) not in self._reported:
            self._reported.add(("key", (table.name, key), trail))
            self._finding(f"{trail}: {table.name} key {shown} is also in trail {other} (at "
                          f"{where}): two consumers took its changes")
        time_us = rec.io_time_us
        last = self._key_last.get((trail, table.name, key))
        self._key_last[trail, table.name, key] = _Last(time_us, rec.file, rec.rba)
        if last is not None and time_us < last.value:
            self._finding(f"{trail}: {table.name} key {shown} went backwards in time at {where} "
                          f"(older than its change at {last.file} RBA {last.rba})")


def _integer(text: bytes | None) -> int | None:
    """A group number's value; None without one (or one that is no integer: not checked)."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None
