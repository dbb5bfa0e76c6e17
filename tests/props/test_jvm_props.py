"""A JMS provider reached through its own client in a JVM (properties.md §8.2): which path a
JNDI configuration takes, jvm.bootoptions, the JNDI environment (secrets never shown), the JNDI
names kept as written, and the jms.* settings that do not apply there."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from props.errors import PropertyError
from props.loader import settings_from_text
from props.settings import Settings
from tests.props.test_props_amqp import DELIM, FILE, fail, load

SECRET = "Hunter22"
ACTIVEMQ = "org.apache.activemq.jndi.ActiveMQInitialContextFactory"
QPID = "org.apache.qpid.jms.jndi.JmsInitialContextFactory"
NAMES = "jms.connectionFactory=ConnectionFactory\njms.destination=dynamicQueues/orders\n"
AMQ = f"java.naming.factory.initial={ACTIVEMQ}\njava.naming.provider.url=tcp://mq1:61616\n"


def records(caplog: pytest.LogCaptureFixture, level: int = logging.WARNING) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


def jvm(text: str) -> Settings:
    settings = load(text)
    assert settings.jms.provider is not None, settings.jms
    return settings


# ---- which path -------------------------------------------------------------------------------

def test_another_factory_without_jms_url_is_the_jvm_path(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jms = jvm(AMQ + NAMES).jms
    provider = jms.provider
    assert provider is not None and provider.factory == ACTIVEMQ
    assert jms.url == () and jms.url_missing is None and records(caplog) == []
    assert provider.where == "jndi:tcp://mq1:61616"
    assert jms.ack == "client" and jms.ack_batch == 100  # ActiveMQ pages 200 at a time


def test_qpid_jms_stays_native_unless_jms_client_is_jvm():
    qpid = (f"java.naming.factory.initial={QPID}\nconnectionfactory.cf=amqp://mq1\n"
            "queue.orders=sales.orders\njms.connectionFactory=cf\njms.destination=orders\n")
    native = load(qpid).jms
    assert native.provider is None and native.url == ("amqp://mq1:5672",)
    assert native.destination == "/queue/sales.orders"
    assert load(qpid + "jms.client=native\n").jms.provider is None
    jms = jvm(qpid + "jms.client=JVM\n").jms
    assert jms.url == () and jms.provider is not None
    assert (jms.provider.connection_factory, jms.provider.destination) == ("cf", "orders")
    assert dict(jms.provider.environment)["connectionfactory.cf"] == "amqp://mq1"
    assert dict(jms.provider.environment)["queue.orders"] == "sales.orders"


def test_jms_client_native_with_another_factory_says_what_to_set(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jms = load(AMQ + NAMES + "jms.client=native\n").jms
    assert jms.provider is None and records(caplog) == []
    assert str(jms.url_required()) == (
        f"{FILE}:4: java.naming.factory.initial: {ACTIVEMQ} is reached through its own client "
        "only (jms.client=jvm), not jms.client=native: set jms.client=jvm or jms.url")


def test_jms_client_jvm_needs_a_factory():
    assert fail("jms.client=jvm\n" + NAMES) == (
        f"{FILE}:4: jms.client: jvm needs java.naming.factory.initial (the JMS provider's JNDI "
        "factory class)")


def test_jms_client_is_jvm_or_native():
    assert fail(AMQ + NAMES + "jms.client=java\n") == (
        f"{FILE}:8: jms.client: 'java' is not jvm or native")


def test_jms_url_beside_a_provider_is_used_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jms = load(AMQ + NAMES + "jms.url=stomp://mq1:61613\n").jms
    assert jms.provider is None and jms.url == ("stomp://mq1:61613",)
    assert jms.destination == "/queue/dynamicQueues/orders"  # (jms.url's meaning)
    assert records(caplog) == [(
        f"{FILE}:4: java.naming.factory.initial names a JMS provider reached through its own "
        "client when jms.url is unset; jms.url is set and is used")]


# ---- jvm.bootoptions --------------------------------------------------------------------------

def test_bootoptions_class_path_and_options(tmp_path: Path, caplog):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "client.jar").write_bytes(b"")
    options = (f"-Xmx512m -Djava.class.path={lib}/client.jar:{lib}/*::{tmp_path} "
               "-Dlog4j.configuration=file:dirprm/log4j.properties -Xss1m")
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        provider = jvm(AMQ + NAMES + f"jvm.bootoptions={options}\n").jms.provider
    assert provider is not None
    assert provider.classpath == (f"{lib}/client.jar", f"{lib}/*", str(tmp_path))
    assert provider.options == ("-Xmx512m", "-Dlog4j.configuration=file:dirprm/log4j.properties",
                                "-Xss1m")
    assert records(caplog) == []


def test_bootoptions_without_a_class_path():
    provider = jvm(AMQ + NAMES + "jvm.bootoptions=-Xmx64m\n").jms.provider
    assert provider is not None and (provider.classpath, provider.options) == ((), ("-Xmx64m",))


def test_a_missing_class_path_entry_is_a_warning(tmp_path: Path, caplog):
    # Oracle's files name GoldenGate's own jars (ggjava/…), which msgcap does not need
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        provider = jvm(AMQ + NAMES + f"jvm.bootoptions=-Djava.class.path={tmp_path}:"
                       "ggjava/ggjava.jar:missing/*\n").jms.provider
    assert provider is not None
    assert provider.classpath == (str(tmp_path), "ggjava/ggjava.jar", "missing/*")
    assert records(caplog) == [(f"{FILE}: jvm.bootoptions: class path entries that do not "
                                "exist: ggjava/ggjava.jar, missing/*")]


@pytest.mark.parametrize("options, word", [
    ("-Xmx512m ggjava.jar", "ggjava.jar"),
    ("-cp lib/client.jar", "-cp"),
    ("-Djava.class.path=a.jar b.jar", "b.jar"),
])
def test_a_word_that_is_no_jvm_option_is_refused(options, word):
    assert fail(AMQ + NAMES + f"jvm.bootoptions={options}\n") == (
        f"{FILE}:8: jvm.bootoptions: '{word}' is not a JVM option (-Dname=value, -X…); the "
        "class path is -Djava.class.path=A:B")


def test_bootoptions_that_cannot_be_split():
    message = fail(AMQ + NAMES + "jvm.bootoptions=-Dx='open\n")
    assert message.startswith(f"{FILE}:8: jvm.bootoptions: cannot be split into options: ")


# ---- the JNDI environment and names -----------------------------------------------------------

ENVIRONMENT = (f"java.naming.factory.initial={ACTIVEMQ}\n"
               "java.naming.provider.url=tcp://mq1:61616?jms.prefetchPolicy.all=50\n"
               "java.naming.security.principal=capture\n"
               f"java.naming.security.credentials={SECRET}\n"
               "java.naming.security.authentication=simple\n"
               "java.naming.referral=follow\n"
               "connectionFactoryNames=captureCF\n"
               "queue.orders=sales.orders\ntopic.events=sales.events\n"
               "connectionFactory.CF=tcp://mq2:61616\nconnectionfactory.other=tcp://mq3:61616\n"
               "jms.connectionFactory=captureCF\njms.destination=orders\n"
               f"jms.user=capture\njms.password={SECRET}\n")


def test_every_java_naming_property_and_jndi_entry_is_the_environment(caplog):
    with caplog.at_level(logging.DEBUG, logger="msgcap.props"):
        settings = jvm(ENVIRONMENT)
    provider = settings.jms.provider
    assert provider is not None
    assert dict(provider.environment) == {
        "java.naming.factory.initial": ACTIVEMQ,
        "java.naming.provider.url": "tcp://mq1:61616?jms.prefetchPolicy.all=50",
        "java.naming.security.principal": "capture",
        "java.naming.security.credentials": SECRET,
        "java.naming.security.authentication": "simple",
        "java.naming.referral": "follow",
        "connectionFactoryNames": "captureCF",
        "queue.orders": "sales.orders", "topic.events": "sales.events",
        "connectionFactory.CF": "tcp://mq2:61616", "connectionfactory.other": "tcp://mq3:61616"}
    assert (settings.jms.user, settings.jms.password) == ("capture", SECRET)
    assert provider.where == "jndi:tcp://mq1:61616"  # (a URL's query may hold a password)
    assert SECRET not in repr(settings) and SECRET not in repr(provider)
    assert SECRET not in caplog.text


def test_the_environment_takes_env_substitution():
    text = DELIM + AMQ + NAMES + "java.naming.security.credentials=${MQ_SECRET}\n"
    provider = settings_from_text(text, FILE, {"MQ_SECRET": SECRET}).jms.provider
    assert provider is not None
    assert dict(provider.environment)["java.naming.security.credentials"] == SECRET
    jms = settings_from_text(text, FILE, {}).jms  # unset: an error of the commands that connect
    assert jms.provider is not None
    assert "java.naming.security.credentials" not in dict(jms.provider.environment)
    with pytest.raises(PropertyError) as info:
        jms.require_env()
    assert str(info.value) == (f"{FILE}:8: java.naming.security.credentials: environment "
                               "variable MQ_SECRET is not set")


def test_user_information_of_the_provider_url_is_never_shown(caplog):
    with caplog.at_level(logging.DEBUG, logger="msgcap.props"):
        provider = jvm(f"java.naming.factory.initial={ACTIVEMQ}\n"
                       f"java.naming.provider.url=failover:(tcp://admin:{SECRET}@mq1:61616)\n"
                       + NAMES).jms.provider
    assert provider is not None and provider.where == "jndi:failover:(tcp://***@mq1:61616)"
    assert SECRET not in caplog.text and SECRET not in repr(provider)


def test_no_provider_url_names_the_factory():
    provider = jvm(f"java.naming.factory.initial={ACTIVEMQ}\n" + NAMES).jms.provider
    assert provider is not None and provider.where == f"jndi:{ACTIVEMQ}"


@pytest.mark.parametrize("connection_factory, destination", [
    ("ConnectionFactory", "dynamicQueues/sales.orders"),
    ("jms/MsgcapCF", "/jms/queue/x"),
    ("cn=captureCF,ou=jms", "dynamicTopics/sales.events"),
])
def test_jndi_names_are_kept_as_written(connection_factory, destination):
    jms = jvm(AMQ + f"jms.connectionFactory={connection_factory}\n"
              f"jms.destination={destination}\n").jms
    assert jms.provider is not None
    assert jms.provider.connection_factory == connection_factory
    assert jms.provider.destination == jms.destination == destination


@pytest.mark.parametrize("missing, said", [
    ("jms.connectionFactory", "connectionFactory"), ("jms.destination", "destination")])
def test_both_jndi_names_are_required(missing, said):
    text = "".join(line + "\n" for line in NAMES.splitlines() if not line.startswith(missing))
    assert fail(AMQ + text) == (f"{FILE}: {missing}: required: the JNDI name of the {said} "
                                f"({ACTIVEMQ} is reached through JNDI)")


def test_error_destination_is_a_jndi_name_without_jms_url():
    settings = jvm(AMQ + NAMES + "error.policy=discard\nerror.destination=/jms/queue/dead\n")
    assert settings.error.destination == "/jms/queue/dead"
    assert jvm(AMQ + NAMES + "error.policy=discard\nerror.destination=dynamicQueues/dead\n"
               ).error.destination == "dynamicQueues/dead"


def test_error_destination_needs_discard_on_the_jvm_path_too():
    assert fail(AMQ + NAMES + "error.destination=dynamicQueues/dead\n") == (
        f"{FILE}:8: error.destination: needs error.policy=discard")


# ---- the jms.* settings -----------------------------------------------------------------------

def test_client_individual_acknowledgement_is_refused():
    assert fail(AMQ + NAMES + "jms.ack=client-individual\n") == (
        f"{FILE}:8: jms.ack: client-individual is not on a JMS provider's own client: JMS "
        "acknowledges every message the session received at once")


def test_settings_that_keep_their_meaning():
    jms = jvm(AMQ + NAMES + "jms.ack.batch=40\njms.prefetch=60\njms.selector=region = 'EU'\n"
              "jms.maxbytes=1000\njms.id=activemq\n").jms
    assert (jms.ack_batch, jms.prefetch, jms.selector, jms.maxbytes) == (40, 60, "region = 'EU'",
                                                                         1000)
    assert jms.id_kind == "activemq"


def test_settings_of_msgcap_s_own_clients_are_warned_unused(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jvm(AMQ + NAMES + "jms.heartbeat=5000,5000\njms.ssl.ca=ca.pem\njms.vhost=sales\n"
            "jms.sasl.mechanisms=PLAIN\n")
    assert records(caplog) == [(
        f"{FILE}: ignored: jms.heartbeat (line 8), jms.ssl.ca (line 9), jms.vhost (line 10), "
        "jms.sasl.mechanisms (line 11): a JMS provider's own client sets these its own way "
        "(its JNDI entries, URL options and jvm.bootoptions)")]


def test_an_artemis_connection_factory_entry_names_the_broker():
    provider = jvm("java.naming.factory.initial=org.apache.activemq.artemis.jndi."
                   f"ActiveMQInitialContextFactory\nconnectionFactory.CF=tcp://admin:{SECRET}@"
                   "mq1:61616?consumerWindowSize=0\njms.connectionFactory=CF\n"
                   "jms.destination=dynamicQueues/orders\n").jms.provider
    assert provider is not None and provider.where == "jndi:tcp://***@mq1:61616"
