"""Value expressions, JMS header mapping, default item sources, optype/txind maps (§2–§3)."""

import pytest

from parsers.model import Message
from parsers.opmap import optype_mapper, txind_mapper
from parsers.values import (
    FieldIndex,
    compile_items,
    compile_table,
    compile_timestamp,
    compile_value,
)
from props.errors import MessageError, PropertyError
from props.expr import Const, Field, JmsId, JmsProp, SysSeqid, SysTs, SysTxid, normalize_field
from props.jmsnames import header_key, header_text
from props.settings import DelimSettings, OptypeValues, TxindValues

MSG = Message("ID:42", headers={"message-id": "ID:host-1:1:1:1:1", "timestamp": "1709288130123",
                                "JMSTxId": "tx-9", "TableName": "SALES.CUSTOMER",
                                "priority": "4"})


def test_jms_standard_names_map_to_stomp_headers():
    assert header_key("JMSMessageID") == "message-id"
    assert header_key("jmstimestamp") == "timestamp"
    assert header_key("JMSTimeStamp") == "timestamp"
    assert header_key("JMSDeliveryMode") == "persistent"
    assert header_key("JMSXGroupID") == "JMSXGroupID"
    assert header_key("JMSTxId") == "JMSTxId"


def test_header_lookup_is_exact_then_case_insensitive():
    headers = {"Table": "exact", "TABLE": "upper"}
    assert header_text(headers, "TABLE") == "upper"
    assert header_text(headers, "Table") == "exact"
    assert header_text({"TableName": "x"}, "tablename") == "x"
    assert header_text({}, "x") is None


def test_a_field_the_transport_leaves_out_reads_as_jms_returns_it():
    """getJMSRedelivered() is false and getJMSExpiration() 0 when ActiveMQ's STOMP frame or a
    spool file has no such header; a property of the producer's has no such default."""
    message = Message("m1", headers={"priority": "4"})
    assert compile_value(JmsProp("JMSRedelivered"), None, prop="p")(message, []) == "false"
    assert compile_value(JmsProp("JMSExpiration"), None, prop="p")(message, []) == "0"
    assert compile_value(JmsProp("JMSXGroupID"), None, prop="p")(message, []) is None
    redelivered = Message("m2", headers={"redelivered": "true"})
    assert compile_value(JmsProp("jmsredelivered"), None, prop="p")(redelivered, []) == "true"


def test_a_message_without_jms_timestamp_has_no_commit_time():
    """JMS reads a missing JMSTimestamp as 0; as the operation's timestamp that is no time at
    all, so a message error, never 1970-01-01 in the trail."""
    timestamp = compile_timestamp(JmsProp("JMSTimestamp"), None, None, prop="delim.timestamp")
    assert timestamp(Message("m1", headers={"timestamp": "1709288130123"}), [], 0) == (
        1709288130123000)
    for headers in ({}, {"timestamp": "0"}):
        with pytest.raises(MessageError, match="has no JMSTimestamp"):
            timestamp(Message("m1", headers=headers), [], 0)


def test_value_kinds():
    fields = FieldIndex(["optype", "Id"])
    values = ["I", "0001"]

    def value(expr, required=False):
        return compile_value(expr, fields, prop="delim.x", required=required)(MSG, values)

    assert value(Field("ID")) == "0001"
    assert value(JmsProp("jmstxid")) == "tx-9"
    assert value(JmsProp("JMSMessageID")) == "ID:host-1:1:1:1:1"
    assert value(JmsProp("JMSPriority")) == "4"
    assert value(JmsId()) == "ID:42"
    assert value(Const("OGG")) == "OGG"
    assert value(SysSeqid()) is None
    assert value(SysTxid()) is None
    assert value(JmsProp("Absent")) is None


def test_absent_required_values_are_message_errors():
    fields = FieldIndex(["id"])
    with pytest.raises(MessageError, match=r"no value for delim.seqid \(header Absent"):
        compile_value(JmsProp("Absent"), fields, prop="delim.seqid", required=True)(MSG, ["1"])
    with pytest.raises(MessageError, match="field id is NULL"):
        compile_value(Field("id"), fields, prop="delim.seqid", required=True)(MSG, [None])


def test_unknown_field_is_a_property_error():
    with pytest.raises(PropertyError, match="delim.optype: no header field named op"):
        compile_value(Field("op"), FieldIndex(["optype"]), prop="delim.optype")


def test_copybook_field_names_fold_dash_and_underscore():
    fields = FieldIndex(["HDR-REC-ID"], normalize_field)
    assert fields.get("hdr_rec_id") == 0
    assert FieldIndex(["HDR-REC-ID"]).get("hdr_rec_id") is None


def test_timestamp_sources():
    fields = FieldIndex(["ts"])
    now = 123
    assert compile_timestamp(SysTs(), None, fields, prop="p")(MSG, [], now) == now
    # the timestamp header is epoch milliseconds and ignores the format (§2.2)
    header = compile_timestamp(JmsProp("JMSTimestamp"), "YYMMDD", fields, prop="p")
    assert header(MSG, [], now) == 1709288130123000
    field = compile_timestamp(Field("ts"), "YYYYMMDDHHMISS", fields, prop="delim.timestamp")
    assert field(MSG, ["20240301101530"], now) == 1709288130000000
    with pytest.raises(MessageError, match=r"delim.timestamp \(field ts\): value 'x'"):
        field(MSG, ["x"], now)
    default = compile_timestamp(Field("ts"), None, fields, prop="p")
    assert default(MSG, ["2024-03-01 10:15:30.123456789"], now) == 1709288130123456


def test_bad_timestamp_format_names_its_property():
    with pytest.raises(PropertyError, match="delim.timestamp.format"):
        compile_timestamp(Field("ts"), "MM-DD", FieldIndex(["ts"]), prop="delim.timestamp")


def test_optype_mapping():
    to_optype = optype_mapper(OptypeValues(insert="A", update="C", delete="D", truncate="X"))
    assert [to_optype(v) for v in ("A", " C ", "D", "X")] == ["I", "U", "D", "T"]
    with pytest.raises(MessageError, match="optype value 'a' is not one of 'A', 'C', 'D', 'X'"):
        to_optype("a")  # case-sensitive
    with pytest.raises(MessageError):
        optype_mapper(OptypeValues(truncate=None))("T")


def test_txind_mapping_defaults_and_replaced_sets():
    """§14 #8: both default sets until one *val replaces a set."""
    to_txind = txind_mapper(TxindValues())
    assert [to_txind(v) for v in "BMEW0123"] == [0, 1, 2, 3, 0, 1, 2, 3]
    replaced = txind_mapper(TxindValues(begin=("S",)))
    assert replaced("S") == 0 and replaced("3") == 3
    with pytest.raises(MessageError, match="txind value 'B'"):
        replaced("B")


def items(header, **kw):
    return compile_items(DelimSettings(header=tuple(header), **kw), FieldIndex(header),
                         prefix="delim")


def test_default_sources_of_section_3_2():
    it = items(["optype", "schemaandtable", "timestamp", "txind", "id"])
    row = ["I", "S.T", "2024-03-01 10:15:30", "E", "0009"]
    assert it.table(MSG, row) == "S.T"
    assert it.optype(MSG, row) == "I"
    assert it.timestamp(MSG, row, 0) == 1709288130000000
    assert it.txind(MSG, row) == 2
    assert it.seqid(MSG, row) == "0009"
    assert it.txid(MSG, row) is None  # *txid
    assert it.txname(MSG, row) is None and it.txowner(MSG, row) is None
    assert it.used == frozenset(range(5))


def test_defaults_without_header_fields():
    it = items(["optype", "table"], schema=Const("OGG"))
    assert it.timestamp(MSG, ["I", "T"], 77) == 77  # *ts
    assert it.seqid(MSG, ["I", "T"]) == "ID:42"  # $jmsid
    assert it.txind is None  # one transaction per message
    assert it.table(MSG, ["I", "T"]) == "OGG.T"


def test_configured_items_win():
    it = items(["op", "tab", "when", "x"], optype=Field("op"), schemaandtable=JmsProp("TableName"),
               timestamp=Field("when"), timestamp_format="YYYYMMDD", seqid=SysSeqid(),
               txid=JmsProp("JMSTxId"), txind=Field("x"), txname=Const("n"), txowner=Field("x"))
    row = ["I", "ignored", "20240301", "W"]
    assert it.table(MSG, row) == "SALES.CUSTOMER"
    assert it.timestamp(MSG, row, 0) == 1709251200000000
    assert it.seqid(MSG, row) is None
    assert it.txid(MSG, row) == "tx-9"
    assert it.txind(MSG, row) == 3
    assert (it.txname(MSG, row), it.txowner(MSG, row)) == ("n", "W")
    assert it.used == frozenset({0, 2, 3})


def test_no_optype_or_table_source_is_a_property_error():
    with pytest.raises(PropertyError, match="delim.optype"):
        items(["schemaandtable"])
    with pytest.raises(PropertyError, match="delim.table: no table source"):
        items(["optype"])


def test_table_names():
    fields = FieldIndex(["schema", "table", "schemaandtable"])
    table, _ = compile_table(DelimSettings(table=(Field("table"),)), fields, prefix="delim")
    assert table(MSG, ["HR", "EMP", "X.Y"]) == "HR.EMP"  # delim.table + field schema
    assert table(MSG, ["HR", " CAT.HR.EMP ", None]) == "CAT.HR.EMP"  # dotted: taken as full
    with pytest.raises(MessageError, match="two-part name needed"):
        table(MSG, [None, "EMP", None])
    both, _ = compile_table(DelimSettings(), fields, prefix="delim")
    assert both(MSG, ["HR", "EMP", "X.Y"]) == "X.Y"  # field schemaandtable before field table


def test_several_table_sources_are_concatenated():
    fields = FieldIndex(["A", "B"])
    table, _ = compile_table(DelimSettings(table=(Field("A"), Field("B")), schema=Const("S")),
                             fields, prefix="fixed")
    assert table(MSG, ["CUST  ", "V1  "]) == "S.CUSTV1"


def test_fixed_schema_has_no_field_default_when_the_table_is_configured():
    fields = FieldIndex(["SCHEMA", "REC"])
    table, _ = compile_table(DelimSettings(table=(Field("REC"),)), fields, prefix="fixed")
    with pytest.raises(MessageError, match="two-part name needed"):
        table(MSG, ["HR", "EMP"])
    table, _ = compile_table(DelimSettings(), FieldIndex(["schema", "table"]), prefix="fixed")
    assert table(MSG, ["HR", "EMP"]) == "HR.EMP"
