"""docs/guide.md really works: its files and commands, run in order as a newcomer would.

The spool-directory walk-through runs everywhere; its ActiveMQ part runs against the session's
private broker, with the guide's broker address and queue replaced by the test's. The blocks are
the guide's own (tests/docs/markdown.py explains the markers), in one working directory ~/shop
with HOME a temporary directory, so a guide that stops working fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .markdown import output_problem, run_shell, steps, user_env

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"
BROKER_URL = "127.0.0.1:61613"
BROKER_QUEUE = "shop.changes"


def _walk(home: Path, variant: str, replace: dict[str, str]) -> int:
    """Write the guide's files and run the blocks of ``variant`` ('' or 'broker'); checks each
    block's exit status and shown output; returns how many blocks ran."""
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
            if ("broker" in words) != (variant == "broker"):
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


def test_broker_part_uses_the_documented_defaults():
    """The replacements above must hit the guide's text, or the broker test would test nothing."""
    broker_steps = [s for s in steps(GUIDE) if s.kind == "run" and "broker" in s.arg]
    assert broker_steps and all(BROKER_URL in s.text and BROKER_QUEUE in s.text
                                for s in broker_steps)
