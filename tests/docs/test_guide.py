"""docs/guide.md really works: its files and commands, run in order as a newcomer would.

The spool-directory walk-through runs everywhere; its broker parts (ActiveMQ over STOMP,
RabbitMQ over AMQP 1.0, ActiveMQ through its own OpenWire client jars) run against the session's
private brokers, with the guide's broker addresses and queue replaced by the test's. The blocks are
the guide's own (tests/docs/markdown.py explains the markers), in one working directory ~/shop
with HOME a temporary directory, so a guide that stops working fails here.
"""

from __future__ import annotations

import tomllib
import uuid
from pathlib import Path

import pytest

from .markdown import output_problem, run_shell, steps, tables, user_env

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"
BROKER_URL = "127.0.0.1:61613"
BROKER_QUEUE = "shop.changes"
AMQP_URL = "127.0.0.1:5672"
OPENWIRE_URL = "127.0.0.1:61616"
# a run block's variant: the first of these words in its marker ('' for the spool directory)
VARIANTS = ("broker", "rabbitmq-amqp", "jms")
# the text each variant's blocks must hold, for the test's replacements to hit
DOCUMENTED = {"broker": (BROKER_URL, BROKER_QUEUE), "rabbitmq-amqp": (AMQP_URL, BROKER_QUEUE),
              "jms": (OPENWIRE_URL, BROKER_QUEUE)}


def _variant(arg: str) -> str:
    return next((word for word in arg.split() if word in VARIANTS), "")


def _walk(home: Path, variant: str, replace: dict[str, str]) -> int:
    """Write the guide's files and run the blocks of ``variant`` ('' or one of ``VARIANTS``);
    checks each block's exit status and shown output; returns how many blocks ran."""
    work = home / "shop"
    work.mkdir(parents=True)
    env = user_env(home)
    ran = 0
    done = None
    for step in steps(GUIDE):
        text = step.text
        for old, new in replace.items():
            text = text.replace(old, new)
        where = f"docs/guide.md:{step.line}"
        if step.kind == "file":
            path = work / step.arg
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        elif step.kind == "run":
            words = step.arg.split()
            if _variant(step.arg) != variant:
                done = None
                continue
            status = int(words[words.index("exit") + 1]) if "exit" in words else 0
            done = run_shell(text, work, env)
            assert done.returncode == status, (
                f"{where}: exit status {done.returncode}, expected {status}\n"
                f"{done.stdout}{done.stderr}")
            ran += 1
        elif step.kind == "output" and done is not None:
            problem = output_problem(text, done)
            assert problem is None, f"{where}: {problem}\n{done.stdout}{done.stderr}"
    return ran


def test_guide_has_a_runbook():
    kinds = [step.kind for step in steps(GUIDE)]
    assert kinds.count("file") >= 4 and kinds.count("run") >= 8 and kinds.count("output") >= 8


def test_spool_directory_walk_through(tmp_path: Path):
    assert _walk(tmp_path, "", {}) >= 8
    trail = tmp_path / "shop" / "dirdat" / "sh000000000"
    assert trail.exists() and not (tmp_path / "shop" / "dirdat" / "sh000000001").exists()


@pytest.mark.broker
def test_activemq_walk_through(tmp_path: Path, broker, queue: str):
    host_port = broker.url.removeprefix("stomp://")
    name = queue.removeprefix("/queue/")
    assert _walk(tmp_path, "broker", {BROKER_URL: host_port, BROKER_QUEUE: name}) == 1


@pytest.mark.broker
def test_rabbitmq_amqp_walk_through(tmp_path: Path, rabbitmq_amqp):
    if not rabbitmq_amqp.running():  # a test that stopped the node and failed before
        rabbitmq_amqp.start()
    host_port = rabbitmq_amqp.url.removeprefix("amqp://")
    name = f"shop-{uuid.uuid4().hex}"
    assert _walk(tmp_path, "rabbitmq-amqp", {AMQP_URL: host_port, BROKER_QUEUE: name}) == 2
    assert rabbitmq_amqp.queues()[name] == (0, True)  # declared durable, all consumed


@pytest.mark.broker
def test_jms_provider_walk_through(tmp_path: Path, activemq, queue: str):
    host_port = f"127.0.0.1:{activemq.env['MSGCAP_OPENWIRE_PORT']}"
    name = queue.removeprefix("/queue/")
    assert _walk(tmp_path, "jms", {OPENWIRE_URL: host_port, BROKER_QUEUE: name}) == 1


def test_broker_parts_use_the_documented_defaults():
    """The replacements above must hit the guide's text, or the broker tests would test
    nothing."""
    for variant, texts in DOCUMENTED.items():
        text = "".join(s.text for s in steps(GUIDE) if s.kind == "run"
                       and _variant(s.arg) == variant)
        assert all(t in text for t in texts), variant


def test_jms_part_names_the_jars_scripts_find():
    """The class path the guide writes is the one scripts/jms-providers.sh gives (the jars of
    Debian's activemq package the tests run), so a jar added or renamed there shows here."""
    from tests.jms_providers import classpath

    jms = "".join(s.text for s in steps(GUIDE) if s.kind == "run" and _variant(s.arg) == "jms")
    assert f"-Djava.class.path={classpath('activemq')} " in jms


def test_install_step_names_every_extra():
    """Step 1's table names each of pyproject.toml's extras, and no other."""
    extras = tomllib.loads((GUIDE.parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    text = GUIDE.read_text(encoding="utf-8")
    install = text[text.index("## 1. "):text.index("## 2. ")]
    named = {row.cells["Extra"].strip("`") for _, rows in tables(install) for row in rows}
    assert named == set(extras)
