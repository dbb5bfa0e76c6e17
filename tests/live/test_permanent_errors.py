"""Connection errors no retry cures, against the real brokers (issue 35): TLS to a port that does
not speak it, a virtual host that does not exist, a SASL mechanism the broker lacks, a wrong
password. ``msgcap run`` retried them for ever, and under ``--max-idle`` ended with exit 0 as if
the queue were only quiet; now a run that meets one before it ever connected stops with exit 2
and one line naming the URL and the cause, writes nothing and takes nothing from the queue. A
run that never connected for any reason (a broker that is down) does not end as idle either.
"""

from __future__ import annotations

import time

import pytest

from tests.conftest import Broker, _free_port
from tests.live.conftest import Work, peek, send, text

GUEST = {"jms_user": "guest", "jms_password": "guest"}


def _run(work: Work, **props: object) -> tuple[int, list[str], float]:
    """``msgcap run --max-idle 30``: exit status, the lines of stderr, seconds it took."""
    work.properties(**props)
    started = time.monotonic()
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "30", timeout=120)
    return done.returncode, done.stderr.splitlines(), time.monotonic() - started


def _untouched(work: Work, broker: Broker, queue: str, sent: str) -> None:
    """Nothing written to the trail, the message still on the queue."""
    assert work.trail() == []
    assert [text(b) for _, b in peek(broker, queue)] == [sent]


def _error_line(lines: list[str], url: str) -> str:
    errors = [line for line in lines if line.startswith("msgcap run: error: ")]
    assert len(errors) == 1, lines
    assert errors[0].startswith(f"msgcap run: error: {url}: "), errors
    return errors[0]


@pytest.mark.broker
@pytest.mark.parametrize("broker", ["rabbitmq-amqp", "artemis-amqp"], indirect=True)
def test_amqps_to_the_plain_amqp_port_stops_at_once(work: Work, broker: Broker,
                                                     queue: str) -> None:
    """TLS WRONG_VERSION_NUMBER (RabbitMQ) or a handshake never answered (Artemis)."""
    sent = work.body(1)
    send(work, broker, queue, [sent])
    url = f"amqps://127.0.0.1:{broker.amqp_port}"
    status, lines, took = _run(work, jms_url=url, jms_destination=queue)
    assert status == 2, lines
    line = _error_line(lines, url)
    assert f"TLS failed: port {broker.amqp_port} does not speak TLS" in line, line
    assert line.endswith("use the broker's TLS port, or a URL without TLS"), line
    assert took < 30  # stopped before --max-idle
    _untouched(work, broker, queue, sent)


@pytest.mark.broker
@pytest.mark.parametrize("broker", ["rabbitmq", "activemq"], indirect=True)
def test_stomp_ssl_to_the_plain_stomp_port_stops_at_once(work: Work, broker: Broker,
                                                         queue: str) -> None:
    url = broker.url.replace("stomp://", "stomp+ssl://")
    status, lines, took = _run(work, jms_url=url, jms_destination=queue, **GUEST)
    assert status == 2, lines
    line = _error_line(lines, url)
    assert f"TLS failed: port {broker.port} does not speak TLS" in line, line
    assert took < 30
    assert work.trail() == []


@pytest.mark.broker
@pytest.mark.parametrize("broker", ["rabbitmq-amqp", "rabbitmq"], indirect=True)
def test_a_virtual_host_that_does_not_exist_stops_at_once(work: Work, broker: Broker,
                                                          queue: str) -> None:
    """RabbitMQ 3's AMQP 1.0 plugin opens the connection and closes it at the attach with
    amqp:unauthorized-access; over STOMP an ERROR frame answers CONNECT."""
    sent = work.body(1)
    send(work, broker, queue, [sent], work.properties(jms_url=broker.url,
                                                      jms_destination=queue, **GUEST))
    status, lines, took = _run(work, jms_url=broker.url, jms_destination=queue,
                               jms_vhost="no-such-vhost", **GUEST)
    assert status == 2, lines
    line = _error_line(lines, broker.url)
    assert "no-such-vhost" in line or "access refused" in line.lower(), line
    assert took < 30
    _untouched(work, broker, queue, sent)


@pytest.mark.broker
@pytest.mark.parametrize("broker", ["rabbitmq-amqp", "artemis-amqp"], indirect=True)
def test_a_sasl_mechanism_the_broker_lacks_stops_at_once(work: Work, broker: Broker,
                                                         queue: str) -> None:
    status, lines, _ = _run(work, jms_url=broker.url, jms_destination=queue,
                            jms_sasl_mechanisms="GSSAPI", **GUEST)
    assert status == 2, lines
    line = _error_line(lines, broker.url)
    assert "the broker refused the login (SASL GSSAPI)" in line, line
    assert work.trail() == []


@pytest.mark.broker
@pytest.mark.parametrize("broker", ["rabbitmq-amqp", "rabbitmq"], indirect=True)
def test_a_wrong_password_stops_at_once_and_is_never_printed(work: Work, broker: Broker,
                                                             queue: str) -> None:
    status, lines, _ = _run(work, jms_url=broker.url, jms_destination=queue, jms_user="guest",
                            jms_password="wrong-s3cret")
    assert status == 2, lines
    line = _error_line(lines, broker.url)
    assert "refused" in line, line
    assert "wrong-s3cret" not in "\n".join(lines)
    log = (work.root / "dirrpt" / "SALES.log").read_text()
    assert "wrong-s3cret" not in log


@pytest.mark.broker
@pytest.mark.parametrize("scheme", ["amqp", "stomp"])
def test_a_run_that_never_connected_does_not_end_as_idle(work: Work, scheme: str) -> None:
    """A broker that is down: retried until --max-idle, then exit 2 saying it never connected
    (it ended with exit 0, as if the queue had been quiet)."""
    url = f"{scheme}://127.0.0.1:{_free_port()}"
    work.properties(jms_url=url, jms_destination="/queue/q")
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "2", timeout=60)
    assert done.returncode == 2, done.stderr
    line = _error_line(done.stderr.splitlines(), url)
    assert line.endswith(f"{url}: no message for 2.0 s (--max-idle), but never connected to the "
                         "source (last error: connection refused)"), line
    assert "messages 0" in done.stdout


@pytest.mark.broker
@pytest.mark.parametrize("broker", ["rabbitmq-amqp"], indirect=True)
def test_a_failover_list_goes_past_an_entry_no_retry_cures(work: Work, broker: Broker,
                                                           queue: str) -> None:
    """TLS to the plain port first, the plain URL second: the run captures from the second
    (the first entry's failure stopped the run before the list was tried)."""
    sent = work.body(1)
    send(work, broker, queue, [sent])
    tls = f"amqps://127.0.0.1:{broker.amqp_port}"
    work.properties(jms_url=f"{tls},{broker.url}", jms_destination=queue)
    done = work.msgcap("run", "--prop", str(work.prop), "--max-idle", "3", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "does not speak TLS" in done.stderr, done.stderr
    assert len(work.trail()) == 1
    assert peek(broker, queue) == []
