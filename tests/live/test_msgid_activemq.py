"""``jms.id=activemq`` on the ids ActiveMQ gives STOMP producers (session ``-1``)."""

from __future__ import annotations

import pytest

from msgcap.msgid import MessageIds, activemq_digits
from parsers.model import Message
from props.errors import MessageError


def test_a_session_of_minus_one_reads_as_zero() -> None:
    stomp = activemq_digits("ID:host-40507-1795325144930-1:3:-1:1:7")
    assert stomp == activemq_digits("ID:host-40507-1795325144930-1:3:0:1:7")
    assert stomp == ("1795325144930" + "00001" + "0000000003" + "0000000000" + "0000000001"
                     + "0000000000000007")
    assert len(stomp) == 64


def test_minus_one_in_any_part_reads_as_zero() -> None:
    assert activemq_digits("ID:h-1-2-3:-1:-1:-1:5") == activemq_digits("ID:h-1-2-3:0:0:0:5")


@pytest.mark.parametrize("raw", ["ID:h-1-2-3:3:-2:1:7", "ID:h-1-2-3:3:-10:1:7",
                                 "ID:h-1-2-3:3:--1:1:7", "ID:h-1-2-3:3:-1:1:-7x"])
def test_other_negative_parts_stay_errors(raw: str) -> None:
    with pytest.raises(ValueError, match="expected :conn:session:producer:seq"):
        activemq_digits(raw)


def test_stomp_ids_of_one_producer_rise_and_keep_their_width() -> None:
    ids = MessageIds("activemq")
    got = [ids.next_id(Message(f"ID:mq-40507-1795325144930-1:3:-1:1:{n}")) for n in (1, 2, 10)]
    assert got == sorted(got) and {len(g) for g in got} == {64}
    with pytest.raises(MessageError, match="jms.id=activemq"):
        MessageIds("activemq").next_id(Message("ID:mq-40507-1795325144930-1:3:-2:1:1"))
