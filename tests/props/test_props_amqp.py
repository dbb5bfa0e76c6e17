"""``jms.url`` with AMQP 1.0 brokers and ``jms.sasl.mechanisms`` (properties.md §8)."""

from __future__ import annotations

import pytest

from props.errors import PropertyError
from props.loader import settings_from_text
from props.settings import Settings

FILE = "t.properties"
DELIM = "parser.type=delim\ndelim.sourcedefs=dirdef/x.def\ndelim.header=optype,schemaandtable\n"


def load(text: str) -> Settings:
    return settings_from_text(DELIM + text, FILE, {})


def fail(text: str) -> str:
    with pytest.raises(PropertyError) as info:
        load(text)
    return str(info.value)


@pytest.mark.parametrize("url, expected", [
    ("amqp://mq1:5672", ("amqp://mq1:5672",)),
    ("amqps://mq1:5671/", ("amqps://mq1:5671",)),
    ("AMQP://mq1", ("amqp://mq1:5672",)),
    ("amqps://mq1", ("amqps://mq1:5671",)),
    ("amqp://[::1]", ("amqp://[::1]:5672",)),
    ("amqp://mq1:5673, amqps://mq2", ("amqp://mq1:5673", "amqps://mq2:5671")),
])
def test_amqp_urls_and_their_default_ports(url, expected):
    assert load(f"jms.url={url}\njms.destination=q\n").jms.url == expected


def test_a_stomp_url_still_needs_its_port():
    assert "'stomp://mq1' is not stomp://host:port, stomp+ssl://host:port, amqp://host:port, " \
           "amqps://host:port or dir:PATH" in fail("jms.url=stomp://mq1\njms.destination=q\n")


def test_a_list_mixing_stomp_and_amqp_is_refused():
    assert fail("jms.url=stomp://a:61613,amqp://b:5672\njms.destination=q\n") == (
        f"{FILE}:4: jms.url: a failover list cannot mix STOMP and AMQP brokers")


def test_an_unknown_scheme_names_the_amqp_forms():
    assert fail("jms.url=amqpws://a:5672\njms.destination=q\n") == (
        f"{FILE}:4: jms.url: 'amqpws://a:5672' is not stomp://host:port, stomp+ssl://host:port, "
        "amqp://host:port, amqps://host:port or dir:PATH")


def test_amqp_url_options_are_refused_without_their_values():
    message = fail("jms.url=amqp://a:5672?jms.password=Hunter22\njms.destination=q\n")
    assert "URL options" in message and "connectionfactory" in message
    assert "Hunter22" not in message


def test_a_broker_needs_a_destination():
    assert fail("jms.url=amqp://a\n") == f"{FILE}:4: jms.url: a broker source needs jms.destination"


def test_url_required_names_the_amqp_forms():
    assert str(load("").jms.url_required()) == (
        "jms.url: required: stomp://host:port, stomp+ssl://host:port, amqp://host:port, "
        "amqps://host:port or dir:PATH")


@pytest.mark.parametrize("value, expected", [
    ("PLAIN", ("PLAIN",)),
    ("EXTERNAL PLAIN", ("EXTERNAL", "PLAIN")),
    ("SCRAM-SHA-256, PLAIN,ANONYMOUS", ("SCRAM-SHA-256", "PLAIN", "ANONYMOUS")),
    ("X_OAUTH2", ("X_OAUTH2",)),
])
def test_sasl_mechanisms(value, expected):
    settings = load(f"jms.url=amqps://a\njms.destination=q\njms.sasl.mechanisms={value}\n")
    assert settings.jms.sasl_mechanisms == expected


def test_sasl_mechanisms_default_to_none_configured():
    assert load("jms.url=amqp://a\njms.destination=q\n").jms.sasl_mechanisms == ()


@pytest.mark.parametrize("value", ["plain", "PLAIN;EXTERNAL", "SCRAM-SHA-256-PLUS-SOMETHING-LONG"])
def test_a_bad_sasl_mechanism_name_is_refused(value):
    message = fail(f"jms.url=amqp://a\njms.destination=q\njms.sasl.mechanisms={value}\n")
    assert message.startswith(f"{FILE}:6: jms.sasl.mechanisms: '") and "is not a SASL " \
        "mechanism name" in message


@pytest.mark.parametrize("url", ["stomp://a:61613", "dir:spool"])
def test_sasl_mechanisms_apply_to_amqp_only(url):
    assert fail(f"jms.url={url}\njms.destination=q\njms.sasl.mechanisms=PLAIN\n") == (
        f"{FILE}:6: jms.sasl.mechanisms: applies to amqp:// and amqps:// only")


def test_sasl_mechanisms_without_a_url_load():
    """gendef and replay read files without jms.url: nothing to refuse there."""
    assert load("jms.sasl.mechanisms=EXTERNAL\n").jms.sasl_mechanisms == ("EXTERNAL",)


def test_dead_letters_need_a_broker_of_either_protocol():
    text = "error.policy=discard\nerror.destination=dead\njms.destination=q\n"
    assert load(text + "jms.url=amqp://a\n").error.destination == "/queue/dead"
    assert "error.destination: needs a broker in jms.url" in fail(text + "jms.url=dir:x\n")
