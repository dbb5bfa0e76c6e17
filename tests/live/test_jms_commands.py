"""``msgcap check`` and ``msgcap send`` through a JMS provider's own client (msgcap.sources.jms),
and what each command says when the way there fails: one line naming the property, exit code 2,
never a Java stack trace on the terminal (``msgcap run`` keeps it in its log file)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import jms_clients
from tests.conftest import Broker, _free_port
from tests.jms_providers import Provider
from tests.live.conftest import Work
from tests.live.test_jms_messages import capture

pytestmark = pytest.mark.broker

JAVA_TRACE = re.compile(r"^\s+at [\w$.]+\(|Exception in thread|Traceback|^Caused by:", re.MULTILINE)


def one_line(done, command: str = "check") -> str:
    """The one error line of a failed command (exit code 2), no Java or Python trace beside."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert not JAVA_TRACE.search(done.stdout + done.stderr), done.stderr
    [line] = [line for line in done.stderr.splitlines() if "error" in line]
    assert line.startswith(f"msgcap {command}: error: "), line
    return line


def waiting(provider: Provider, queue: str) -> list[str]:
    """The JMSMessageIDs on ``queue``, browsed."""
    return [m["JMSMessageID"] for m in jms_clients.consume(
        provider.url, queue, "--timeout", "1000", browse=True, openwire=provider.openwire)]


# ---- check ------------------------------------------------------------------------------------

def test_check_connects_finds_the_destination_and_counts_without_consuming(
        work: Work, provider: Provider) -> None:
    queue = provider.new_queue()
    properties = {**provider.properties(queue), "java.naming.security.principal": "capture",
                  "java.naming.security.credentials": "Jndi-Secret-77",
                  "jms.user": "capture", "jms.password": "Jms-Secret-78"}
    work.properties(**properties)
    sent = jms_clients.produce(provider.url, queue, "--count", "3",
                               openwire=provider.openwire)
    done = work.msgcap("check", "--prop", str(work.prop), check=True)
    assert "Secret" not in done.stdout + done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith("source ")]
    name = properties["jms.destination"]
    assert re.fullmatch(rf"source jndi:\S+: connected to \S.* \S+, found {re.escape(name)} in "
                        r"JNDI \(3 messages waiting \(browsed\)\); disconnected, nothing "
                        r"consumed", line), line
    assert waiting(provider, queue) == sent
    selected = work.properties(**properties, jms_selector="JMSPriority > 7")
    done = work.msgcap("check", "--prop", str(selected), check=True)
    assert ("(0 messages waiting (browsed, selected); jms.selector accepted); disconnected, "
            "nothing consumed") in done.stdout
    again = jms_clients.consume(provider.url, queue, "--timeout", "1000",
                                openwire=provider.openwire)
    assert [(m["JMSMessageID"], m["JMSRedelivered"]) for m in again] == [
        (message_id, False) for message_id in sent]


def test_check_of_a_broker_that_is_down_is_one_line(work: Work, provider: Provider) -> None:
    properties = provider.properties(provider.new_queue())
    port = _free_port()
    for key, value in properties.items():
        properties[key] = value.replace(provider.url, f"tcp://127.0.0.1:{port}")
    work.properties(**properties)
    line = one_line(work.msgcap("check", "--prop", str(work.prop), timeout=120))
    assert line.startswith(f"msgcap check: error: jndi:tcp://127.0.0.1:{port}: "), line


# ---- JNDI names, classes, jars --------------------------------------------------------------------

@pytest.mark.parametrize("prop", ["jms.connectionFactory", "jms.destination"])
def test_a_jndi_name_that_does_not_exist_is_one_line_naming_it(work: Work, provider: Provider,
                                                                prop: str) -> None:
    queue = provider.new_queue()
    properties = provider.properties(queue)
    properties[prop] = "NoSuchName"
    if provider.openwire and prop == "jms.destination":  # ActiveMQ makes dynamicQueues/ANY
        properties[prop] = "queues/NoSuchName"
    work.properties(**properties)
    line = one_line(work.msgcap("check", "--prop", str(work.prop)))
    name = properties[prop]
    assert f": {prop}: JNDI has no '{name}'; names there: " in line
    listed = line.partition("; names there: ")[2].split(", ")
    assert ("ConnectionFactory" if provider.openwire else "CF") in listed
    assert "dynamicQueues" in listed


def test_a_factory_class_not_on_the_class_path_is_one_line(work: Work,
                                                            provider: Provider) -> None:
    properties = provider.properties(provider.new_queue())
    properties["java.naming.factory.initial"] = "com.example.NoSuchInitialContextFactory"
    work.properties(**properties)
    line = one_line(work.msgcap("check", "--prop", str(work.prop)))
    assert line.endswith(": java.naming.factory.initial / jvm.bootoptions: Cannot instantiate "
                         "class: com.example.NoSuchInitialContextFactory: com.example."
                         "NoSuchInitialContextFactory (is the provider's jar on "
                         "-Djava.class.path?)"), line


def test_a_jar_missing_from_the_class_path_is_one_line(work: Work, activemq: Broker) -> None:
    provider = Provider("activemq", activemq)
    properties = provider.properties(provider.new_queue())
    properties["jvm.bootoptions"] = re.sub(r"[^:= ]*geronimo-jms[^: ]*:?", "",
                                           properties["jvm.bootoptions"])
    assert "geronimo-jms" not in properties["jvm.bootoptions"]
    work.properties(**properties)
    line = one_line(work.msgcap("check", "--prop", str(work.prop)))
    assert re.search(r": java\.naming\.factory\.initial / jvm\.bootoptions: javax/jms/(\w+): "
                     r"javax\.jms\.\1 \(is the provider's jar on -Djava\.class\.path\?\)$",
                     line), line  # (the first class of the missing jar the JVM loads)


# ---- no JPype, no Java ---------------------------------------------------------------------------

NO_JPYPE = ("import runpy, sys; sys.modules['jpype'] = None; sys.argv[0] = 'msgcap'; "
            "runpy.run_module('msgcap.cli', run_name='__main__')")


def test_no_jpype_is_one_line(work: Work, activemq: Broker) -> None:
    provider = Provider("activemq", activemq)
    work.properties(**provider.properties(provider.new_queue()))
    done = subprocess.run([sys.executable, "-c", NO_JPYPE, "check", "--prop", str(work.prop)],
                          cwd=work.root, env=work.env(), capture_output=True, text=True,
                          timeout=120, check=False)
    line = one_line(done)
    assert line.endswith("a JMS provider's own client needs JPype: pip install "
                         "'msgcap[jms]'"), line


@pytest.mark.parametrize("java_home", [True, False])
def test_no_java_is_one_line(work: Work, activemq: Broker, tmp_path: Path,
                             java_home: bool) -> None:
    provider = Provider("activemq", activemq)
    work.properties(**provider.properties(provider.new_queue()))
    (tmp_path / "empty").mkdir()
    env = {k: v for k, v in work.env().items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path / "empty")
    if java_home:
        env["JAVA_HOME"] = str(tmp_path / "empty")
    done = subprocess.run([sys.executable, "-m", "msgcap.cli", "check", "--prop",
                           str(work.prop)], cwd=work.root, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    line = one_line(done)
    if java_home:
        assert f"no JVM library (lib/server/libjvm.so) under {tmp_path / 'empty'}" in line
    else:
        assert "no Java found: set JAVA_HOME" in line


# ---- a refused login ----------------------------------------------------------------------------

def test_a_refused_login_is_one_line_and_never_the_password(work: Work,
                                                            rabbitmq_amqp: Broker) -> None:
    """Qpid JMS's own client (jms.client=jvm) on RabbitMQ, which refuses a wrong password (the
    test brokers of ActiveMQ and Artemis let anyone in)."""
    work.properties(**{
        "jvm.bootoptions": f"-Djava.class.path={jms_clients.classpath()} -Xmx128m",
        "java.naming.factory.initial": "org.apache.qpid.jms.jndi.JmsInitialContextFactory",
        "jms.client": "jvm",
        "connectionfactory.CF": rabbitmq_amqp.url,
        "queue.orders": "orders", "jms.connectionFactory": "CF", "jms.destination": "orders",
        "jms.user": "nosuchuser", "jms.password": "Wrong-Secret-42"})
    done = work.msgcap("check", "--prop", str(work.prop), timeout=120)
    line = one_line(done)
    assert line.endswith(": jms.user: the provider refused the login: Client failed to "
                         "authenticate using SASL: PLAIN"), line
    assert "Wrong-Secret-42" not in done.stdout + done.stderr


@pytest.mark.parametrize("case", ["password", "amqps-to-plain-port"])
def test_run_stops_at_once_on_a_failure_no_retry_cures(work: Work, rabbitmq_amqp: Broker,
                                                       case: str) -> None:
    """The JVM path classifies the provider's failure: a JMSSecurityException, a TLS handshake
    to a port without TLS, stop a run that never connected with one line and exit 2, not a
    retry until --max-idle (issue 35)."""
    url = rabbitmq_amqp.url
    if case != "password":
        url = url.replace("amqp://", "amqps://")
    work.properties(**{
        "jvm.bootoptions": f"-Djava.class.path={jms_clients.classpath()} -Xmx128m",
        "java.naming.factory.initial": "org.apache.qpid.jms.jndi.JmsInitialContextFactory",
        "jms.client": "jvm",
        "connectionfactory.CF": url,
        "queue.orders": "orders", "jms.connectionFactory": "CF", "jms.destination": "orders",
        "jms.user": "guest", "jms.password": "Wrong-Secret-42" if case == "password" else "guest"})
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "60", timeout=120)
    assert done.returncode == 2, done.stderr
    line = one_line(done, "run")
    if case == "password":
        assert line.endswith(": jms.user: the provider refused the login: Client failed to "
                             "authenticate using SASL: PLAIN"), line
    else:
        assert ": TLS failed: the port does not speak TLS (" in line, line
    assert "Wrong-Secret-42" not in done.stdout + done.stderr
    assert "no message for 60.0 s" not in done.stderr  # it did not wait for --max-idle


# ---- run keeps the trace in its log file -------------------------------------------------------

def test_run_says_one_line_and_logs_the_java_trace(work: Work, provider: Provider) -> None:
    properties = provider.properties(provider.new_queue())
    properties["jms.connectionFactory"] = "NoSuchName"
    work.properties(**properties, java_naming_security_credentials="Jndi-Secret-77")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "1", timeout=120)
    line = one_line(done, "run")
    assert "jms.connectionFactory: JNDI has no 'NoSuchName'" in line
    logged = "".join(p.read_text() for p in (work.root / "dirrpt").glob("*.log"))
    assert "javax.naming.NameNotFoundException" in logged and JAVA_TRACE.search(logged)
    assert "Jndi-Secret-77" not in logged + done.stdout + done.stderr


# ---- send --------------------------------------------------------------------------------------

def test_send_puts_a_dump_on_the_queue_and_a_capture_gives_it_back(work: Work,
                                                                   provider: Provider) -> None:
    queue = provider.new_queue()
    work.properties(**provider.properties(queue))
    dump = work.root / "dump.jsonl"
    data = bytes(range(200, 256)) + b"\x00"
    entries = [
        {"id": "m1", "headers": {"TableName": "SALES.CUSTOMER", "Region": "EU",
                                 "correlation-id": "corr-1", "type": "Order",
                                 "priority": "8"}, "body": "caf\u00e9 \u20ac"},
        {"id": "m2", "headers": {"TableName": "SALES.ORDERS"},
         "body_b64": base64.b64encode(data).decode()},
    ]
    dump.write_text("".join(json.dumps(e) + "\n" for e in entries))
    done = work.msgcap("send", "--prop", str(work.prop), str(dump), check=True)
    assert "sent 2 messages" in done.stdout
    text, raw = capture(work, 2)
    assert text["text"] == "caf\u00e9 \u20ac" and text["headers"]["message-type"] == "TextMessage"
    assert (text["headers"]["TableName"], text["headers"]["Region"]) == ("SALES.CUSTOMER", "EU")
    assert (text["jms"]["JMSCorrelationID"], text["jms"]["JMSType"],
            text["jms"]["JMSPriority"]) == ("corr-1", "Order", "8")
    assert base64.b64decode(raw["bytes"]) == data
    assert raw["headers"]["message-type"] == "BytesMessage"
    assert raw["headers"]["TableName"] == "SALES.ORDERS"
    assert text["jms"]["JMSDeliveryMode"] == raw["jms"]["JMSDeliveryMode"] == "true"


def test_send_to_a_broker_that_is_down_is_one_line(work: Work, provider: Provider) -> None:
    properties = provider.properties(provider.new_queue())
    port = _free_port()
    for key, value in properties.items():
        properties[key] = value.replace(provider.url, f"tcp://127.0.0.1:{port}")
    work.properties(**properties)
    dump = work.dump("dump.jsonl", ["one"])
    line = one_line(work.msgcap("send", "--prop", str(work.prop), str(dump), timeout=120),
                    "send")
    assert line.startswith(f"msgcap send: error: jndi:tcp://127.0.0.1:{port}: "), line
    assert line.endswith("; 0 messages were sent before (--skip 0 resends from there)"), line

