"""A Qpid JMS JNDI configuration read as written; other providers named (properties.md §8.2)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from props.errors import PropertyError
from props.loader import load_settings
from props.settings import Settings
from tests.props.test_props_amqp import DELIM, FILE, fail, load

REPO = Path(__file__).resolve().parents[2]
QPID = "java.naming.factory.initial=org.apache.qpid.jms.jndi.JmsInitialContextFactory\n"
SECRET = "Hunter22"


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


# ---- Qpid JMS entries in the properties file ----------------------------------------------------

def test_entries_in_the_properties_file_are_resolved(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jms = load(QPID + "connectionfactory.myCF = amqp://mq1:5672\nqueue.orders = sales.orders\n"
                   "topic.events = sales.events\njms.connectionFactory=myCF\n"
                   "jms.destination=orders\n").jms
    assert jms.url == ("amqp://mq1:5672",) and jms.destination == "/queue/sales.orders"
    assert jms.url_missing is None and warnings(caplog) == []


def test_a_topic_entry_is_a_topic():
    jms = load("connectionfactory.cf=amqps://mq1\ntopic.events=sales.events\n"
               "jms.connectionFactory=cf\njms.destination=events\n").jms
    assert jms.url == ("amqps://mq1:5671",) and jms.destination == "/topic/sales.events"


def test_a_destination_without_an_entry_is_the_broker_s_name():
    jms = load(QPID + "connectionfactory.cf=amqp://mq1\njms.connectionFactory=cf\n"
               "jms.destination=plain\n").jms
    assert jms.destination == "/queue/plain"


def test_a_name_both_queue_and_topic_is_refused():
    assert fail("queue.x=a\ntopic.x=b\njms.destination=x\n") == (
        f"{FILE}:6: jms.destination: both queue.x and topic.x are defined")


def test_failover_list_and_its_options():
    jms = load(QPID + "connectionfactory.cf=failover:(amqp://a:5672?amqp.vhost=sales,"
               "amqps://b)?failover.maxReconnectAttempts=20&failover.nested.amqp.idleTimeout="
               "30000\njms.connectionFactory=cf\njms.destination=q\n").jms
    assert jms.url == ("amqp://a:5672", "amqps://b:5671")
    assert jms.vhost == "sales" and jms.heartbeat == (10000, 30000)


def test_options_differing_between_brokers_are_refused():
    message = fail("connectionfactory.cf=failover:(amqp://a?amqp.vhost=x,amqp://b?amqp.vhost=y)\n"
                   "jms.connectionFactory=cf\njms.destination=q\n")
    assert message == (f"{FILE}:4: connectionfactory.cf: option amqp.vhost differs between the "
                       "brokers of the list: msgcap uses one value for all")


def test_url_options_become_settings():
    jms = load(QPID + "connectionfactory.cf=amqp://a?jms.username=capture&jms.password=S%40cret"
               "&amqp.vhost=sales&amqp.saslMechanisms=SCRAM-SHA-256,PLAIN&amqp.idleTimeout=0"
               "&jms.prefetchPolicy.all=300\njms.connectionFactory=cf\njms.destination=q\n").jms
    assert (jms.user, jms.password, jms.vhost) == ("capture", "S@cret", "sales")
    assert jms.sasl_mechanisms == ("SCRAM-SHA-256", "PLAIN")
    assert jms.heartbeat == (10000, 0) and jms.prefetch == 300
    assert "S@cret" not in repr(jms)


@pytest.mark.parametrize("destination, prefetch", [("q", 20), ("/topic/t", 30)])
def test_the_destination_s_own_prefetch_comes_before_all(destination, prefetch):
    jms = load("connectionfactory.cf=amqp://a?jms.prefetchPolicy.all=10&jms.prefetchPolicy."
               "queuePrefetch=20&jms.prefetchPolicy.durableTopicPrefetch=30\n"
               f"jms.connectionFactory=cf\njms.destination={destination}\n").jms
    assert jms.prefetch == prefetch


def test_properties_of_the_file_win_over_url_options():
    jms = load("connectionfactory.cf=amqp://a?jms.username=fromurl&amqp.vhost=fromurl"
               "&jms.prefetchPolicy.all=7\njms.connectionFactory=cf\njms.destination=q\n"
               "jms.user=fromfile\njms.vhost=fromfile\njms.prefetch=9\n").jms
    assert (jms.user, jms.vhost, jms.prefetch) == ("fromfile", "fromfile", 9)


def test_an_option_s_bad_value_names_the_entry_and_the_option():
    assert fail("connectionfactory.cf=amqp://a?jms.prefetchPolicy.all=0\n"
                "jms.connectionFactory=cf\njms.destination=q\n") == (
        f"{FILE}:4: jms.prefetch (connectionfactory.cf jms.prefetchPolicy.all): 0 is out of "
        "range (≥ 1)")


def test_unused_options_are_named_without_their_values(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        load(f"connectionfactory.cf=amqp://a?jms.clientID={SECRET}&transport.trustAll=true\n"
             "jms.connectionFactory=cf\njms.destination=q\n")
    assert warnings(caplog) == [(f"{FILE}:4: connectionfactory.cf: URL options msgcap does not "
                                "use: jms.clientID, transport.trustAll")]
    assert SECRET not in caplog.text


def test_a_java_key_store_is_refused_with_its_line():
    message = fail(f"connectionfactory.cf=amqps://a?transport.trustStoreLocation=/x.jks"
                   f"&transport.trustStorePassword={SECRET}\njms.connectionFactory=cf\n"
                   "jms.destination=q\n")
    assert message == (f"{FILE}:4: connectionfactory.cf: transport.trustStoreLocation: msgcap "
                       "cannot read Java key stores: set jms.ssl.ca to a PEM CA file")


def test_a_java_key_store_beside_jms_ssl_ca_is_ignored(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jms = load("connectionfactory.cf=amqps://a?transport.trustStoreLocation=/x.jks\n"
                   "jms.connectionFactory=cf\njms.destination=q\njms.ssl.ca=ca.pem\n").jms
    assert jms.ssl_ca == "ca.pem"
    assert warnings(caplog) == [(f"{FILE}:4: connectionfactory.cf: transport.trustStoreLocation "
                                "ignored: jms.ssl.ca is used")]


@pytest.mark.parametrize("value, reason", [
    ("amqpws://a:80", "amqpws:// (AMQP over WebSocket) is not supported: use amqp:// or amqps://"),
    ("tcp://a:61616", "a Qpid JMS connection factory names amqp:// or amqps:// brokers"),
    ("failover:amqp://a", "is not failover:(amqp://host:port,…)?options"),
])
def test_a_bad_connection_factory_names_its_line(value, reason):
    assert fail(f"connectionfactory.cf={value}\njms.connectionFactory=cf\njms.destination=q\n") \
        == f"{FILE}:4: connectionfactory.cf: {reason}"


def test_a_bad_broker_address_names_the_entry():
    assert fail("connectionfactory.cf=amqp://a b:1\njms.connectionFactory=cf\n"
                "jms.destination=q\n").startswith(f"{FILE}:4: jms.url (connectionfactory.cf): ")


def test_jms_url_wins_over_the_connection_factory(caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jms = load("connectionfactory.cf=amqp://a?jms.username=u\njms.connectionFactory=cf\n"
                   "jms.url=stomp://b:61613\njms.destination=q\n").jms
    assert jms.url == ("stomp://b:61613",) and jms.user is None
    assert warnings(caplog) == [(f"{FILE}:5: jms.connectionFactory: jms.url is set too and wins: "
                                "the connection factory is not used")]


def test_a_missing_connection_factory_entry_is_said_when_a_broker_is_needed():
    jms = load(QPID + "connectionfactory.other=amqp://a\njms.connectionFactory=cf\n"
               "jms.destination=q\n").jms
    assert jms.url == ()
    assert str(jms.url_required()) == (
        f"{FILE}:6: jms.connectionFactory: no connectionfactory.cf entry (there are "
        "connectionfactory.other): add it, or set jms.url (stomp://host:port, "
        "stomp+ssl://host:port, amqp://host:port, amqps://host:port or dir:PATH)")


def test_entries_without_jms_connection_factory():
    jms = load("connectionfactory.a=amqp://a\nconnectionfactory.b=amqp://b\n").jms
    assert str(jms.url_required()) == (
        f"{FILE}: jms.connectionFactory: not set: name one of a, b (or set jms.url)")


# ---- the file java.naming.provider.url names ----------------------------------------------------

JNDI_FILE = ("java.naming.factory.initial = org.apache.qpid.jms.jndi.JmsInitialContextFactory\n"
             f"connectionfactory.myCF = amqp://mq1:5672?jms.password={SECRET}\n"
             "queue.orders = sales.orders\n")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """dirprm/ with the JNDI file; the working directory elsewhere, as relative paths are the
    properties file's."""
    (tmp_path / "dirprm").mkdir()
    (tmp_path / "dirprm" / "jndi.properties").write_text(JNDI_FILE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def load_home(home: Path, provider: str, more: str = "") -> Settings:
    path = home / "dirprm" / "jmsvam.properties"
    path.write_text(DELIM + f"java.naming.provider.url={provider}\njms.connectionFactory=myCF\n"
                    "jms.destination=orders\n" + more)
    return load_settings(str(path), {})


@pytest.mark.parametrize("provider", ["jndi.properties", "file:{home}/dirprm/jndi.properties",
                                      "file://{home}/dirprm/jndi.properties"])
def test_the_provider_file_is_read(home, provider):
    jms = load_home(home, provider.format(home=home)).jms
    assert jms.url == ("amqp://mq1:5672",) and jms.destination == "/queue/sales.orders"
    assert jms.password == SECRET


def test_errors_name_the_provider_file_s_line(home):
    (home / "dirprm" / "jndi.properties").write_text(JNDI_FILE + "queue.orders =\n")
    with pytest.raises(PropertyError) as info:
        load_home(home, "jndi.properties")
    assert str(info.value) == (f"{home}/dirprm/jndi.properties:4: jms.destination (queue.orders)"
                               ": '/queue/' names no queue")


def test_an_unreadable_provider_file_is_said_when_a_broker_is_needed(home):
    jms = load_home(home, "missing.properties").jms
    assert str(jms.url_required()) == (
        f"{home}/dirprm/jmsvam.properties:4: java.naming.provider.url: cannot read the JNDI "
        f"file {home}/dirprm/missing.properties: No such file or directory")


def test_an_unreadable_provider_file_beside_jms_url_is_a_warning(home, caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jms = load_home(home, "missing.properties", "jms.url=amqp://b\n").jms
    assert jms.url == ("amqp://b:5672",) and jms.destination == "/queue/orders"
    assert "cannot read the JNDI file" in caplog.text and "jms.url is used" in caplog.text


# ---- other providers: their own client in a JVM, or one line saying what to set ---------------

FACTORIES = [
    ("java.naming.factory.initial=org.apache.activemq.jndi.ActiveMQInitialContextFactory\n"
     f"java.naming.provider.url=tcp://admin:{SECRET}@mq1:61616\n"),
    ("java.naming.factory.initial=weblogic.jndi.WLInitialContextFactory\n"
     "java.naming.provider.url=t3://wls:7001\n"),
    ("java.naming.factory.initial=com.sun.jndi.fscontext.RefFSContextFactory\n"
     "java.naming.provider.url=file:/var/mqm/jndi\n"),
    ("java.naming.factory.initial=com.ibm.mq.jms.context.WMQInitialContextFactory\n"
     "java.naming.provider.url=mq1(1414)/QM1.SVRCONN\n"),
    "java.naming.factory.initial=com.example.OtherFactory\n",
]
SERVER_ONLY = [f"java.naming.provider.url=failover:(tcp://admin:{SECRET}@mq1:61616)\n",
               "java.naming.provider.url=t3s://wls:7002\n"]


@pytest.mark.parametrize("jndi", FACTORIES)
def test_another_provider_without_jms_url_is_its_own_client(jndi, caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jms = load(jndi + "jms.connectionFactory=ConnectionFactory\njms.destination=q\n").jms
    assert warnings(caplog) == [] and jms.url == () and jms.provider is not None
    assert (jms.provider.connection_factory, jms.provider.destination) == ("ConnectionFactory",
                                                                             "q")
    assert SECRET not in jms.provider.where


@pytest.mark.parametrize("jndi", SERVER_ONLY)
def test_a_provider_s_server_without_a_factory_is_the_error(jndi, caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jms = load(jndi + "jms.connectionFactory=ConnectionFactory\njms.destination=q\n").jms
    assert warnings(caplog) == []  # said once, by the command that needs a broker
    assert jms.provider is None
    assert str(jms.url_required()) == (
        f"{FILE}:4: java.naming.provider.url: names a provider's server, not a Qpid JMS JNDI "
        "file: set java.naming.factory.initial to the provider's JNDI factory (its jars in "
        "jvm.bootoptions), or jms.url")


@pytest.mark.parametrize("jndi", FACTORIES + SERVER_ONLY)
def test_another_provider_beside_jms_url_is_a_warning(jndi, caplog):
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jms = load(jndi + "jms.url=stomp://mq1:61613\njms.destination=q\n").jms
    [warning] = warnings(caplog)
    assert warning.startswith(f"{FILE}:4: java.naming.")
    assert warning.endswith("; jms.url is set and is used") and SECRET not in caplog.text
    assert jms.url == ("stomp://mq1:61613",) and jms.provider is None


def test_an_ibm_mq_bindings_directory_without_a_factory(tmp_path):
    (tmp_path / ".bindings").write_text("")
    jms = load(f"java.naming.provider.url=file:{tmp_path}\njms.destination=q\n").jms
    assert str(jms.url_required()) == (
        f"{FILE}:4: java.naming.provider.url: a file-system context (.bindings) is read by its "
        "provider's own client: set java.naming.factory.initial=com.sun.jndi.fscontext."
        "RefFSContextFactory and its jars in jvm.bootoptions, or jms.url")


# ---- the commands -------------------------------------------------------------------------------

def msgcap(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_check_and_gendef_read_a_qpid_jndi_configuration(tmp_path):
    root = tmp_path / "home"
    shutil.copytree(REPO / "examples" / "fixed" / "copybook", root)
    prop = root / "dirprm" / "jmsvam.properties"
    (root / "dirprm" / "jndi.properties").write_text(JNDI_FILE)
    jndi = ("java.naming.provider.url=jndi.properties\njms.connectionFactory=myCF\n"
            "jms.destination=orders\n")
    prop.write_text(prop.read_text().replace("jms.url=dir:dirspool\n", jndi))
    done = msgcap(root, "msgcap.cli", "check", "--prop", "dirprm/jmsvam.properties",
                  "--no-connect")
    assert done.returncode == 0, done.stderr
    assert "source amqp://mq1:5672: not contacted (--no-connect)" in done.stdout
    gendef = msgcap(root, "gendef.cli", "-prop", "dirprm/jmsvam.properties", "-out",
                    "dirdef/out.def")
    assert gendef.returncode == 0, gendef.stderr
    assert SECRET not in done.stdout + done.stderr + gendef.stdout + gendef.stderr

    prop.write_text(prop.read_text().replace(
        jndi, "java.naming.factory.initial=org.apache.activemq.jndi.ActiveMQInitialContextFactory\n"
              f"java.naming.provider.url=tcp://admin:{SECRET}@mq1:61616\n"
              "jms.connectionFactory=ConnectionFactory\njms.destination=dynamicQueues/orders\n"))
    done = msgcap(root, "msgcap.cli", "check", "--prop", "dirprm/jmsvam.properties",
                  "--no-connect")
    assert done.returncode == 0, done.stderr
    assert "source jndi:tcp://***@mq1:61616: not contacted (--no-connect)" in done.stdout
    assert SECRET not in done.stdout + done.stderr


# ---- issue 35: unset variables of the login, large JNDI files, other hosts' files --------------

def test_an_unset_password_in_the_factory_s_options_waits_for_a_connection():
    jms = load(QPID + "connectionfactory.cf=amqp://a?jms.username=${MQ_USER}&jms.password="
               "${MQ_PASSWORD}\njms.connectionFactory=cf\njms.destination=q\n").jms
    assert jms.url == ("amqp://a:5672",) and (jms.user, jms.password) == (None, None)
    assert jms.unset_env == (f"{FILE}:5: connectionfactory.cf: environment variable MQ_USER "
                             "is not set")


def test_an_unset_variable_in_the_factory_s_address_is_refused_at_once():
    assert fail("connectionfactory.cf=amqp://${MQ_HOST}:5672?jms.password=${MQ_PASSWORD}\n"
                "jms.connectionFactory=cf\njms.destination=q\n") == (
        f"{FILE}:4: connectionfactory.cf: environment variable MQ_HOST is not set")


def test_an_unset_password_in_the_provider_file_waits_for_a_connection(home):
    (home / "dirprm" / "jndi.properties").write_text(
        JNDI_FILE.replace(f"jms.password={SECRET}", "jms.password=${MQ_PASSWORD}"))
    jms = load_home(home, "jndi.properties").jms
    assert jms.url == ("amqp://mq1:5672",) and jms.password is None
    assert jms.unset_env == (f"{home}/dirprm/jndi.properties:2: connectionfactory.myCF: "
                             "environment variable MQ_PASSWORD is not set")


def test_a_large_provider_file_is_named_by_a_few_of_its_keys(home, caplog):
    keys = "".join(f"other.key{n} = value{n}\n" for n in range(25))
    factories = "".join(f"connectionfactory.cf{n:02} = amqp://mq{n}\n" for n in range(25))
    (home / "dirprm" / "jndi.properties").write_text(JNDI_FILE + keys + factories)
    with caplog.at_level(logging.WARNING, logger="msgcap.props"):
        jms = load_home(home, "jndi.properties").jms
    assert jms.url == ("amqp://mq1:5672",) and jms.password == SECRET
    [warning] = warnings(caplog)
    assert warning == (f"{home}/dirprm/jndi.properties: ignored (not a Qpid JMS JNDI entry "
                       "msgcap reads): " + ", ".join(f"other.key{n} (line {n + 4})"
                                                     for n in range(10)) + " … and 15 more")
    jms = load_home(home, "jndi.properties", "jms.connectionFactory=none\n").jms
    assert str(jms.url_required()).endswith(
        "(there are connectionfactory.cf00, connectionfactory.cf01, connectionfactory.cf02, "
        "connectionfactory.cf03, connectionfactory.cf04, connectionfactory.cf05, "
        "connectionfactory.cf06, connectionfactory.cf07, connectionfactory.cf08, "
        "connectionfactory.cf09 … and 16 more): add it, or set jms.url (stomp://host:port, "
        "stomp+ssl://host:port, amqp://host:port, amqps://host:port or dir:PATH)")


@pytest.mark.parametrize("host", ["otherhost", "10.1.2.3"])
def test_a_file_url_of_another_host_is_refused(home, host):
    jms = load_home(home, f"file://{host}{home}/dirprm/jndi.properties").jms
    assert jms.url == ()
    assert str(jms.url_required()) == (
        f"{home}/dirprm/jmsvam.properties:4: java.naming.provider.url: file://{host}/… names "
        f"a file on host {host}: msgcap reads a local JNDI file only (file:/PATH, file:///PATH "
        "or file://localhost/PATH)")


def test_a_file_url_of_localhost_is_read(home):
    jms = load_home(home, f"file://localhost{home}/dirprm/jndi.properties").jms
    assert jms.url == ("amqp://mq1:5672",)


def test_an_unset_variable_of_an_entry_set_again_is_forgotten(home):
    (home / "dirprm" / "jndi.properties").write_text(
        "connectionfactory.myCF = amqp://mq1?jms.password=${MQ_PASSWORD}\n" + JNDI_FILE)
    jms = load_home(home, "jndi.properties").jms
    assert jms.password == SECRET and jms.unset_env is None
