"""The fuzz stage of CI: every seed and every past crash of every target is refused cleanly (only
``MsgcapError``), then each target is fuzzed by atheris for a short budget
(``MSGCAP_FUZZ_SECONDS``, default 8 s each; ``tests/fuzz/run.py`` fuzzes one for longer)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz import targets

RUN = Path(__file__).resolve().parent / "run.py"
SECONDS = int(os.environ.get("MSGCAP_FUZZ_SECONDS") or 8)
# CI fuzzes from a fixed seed, so that a run explores the same inputs first every time; the long
# local sessions of run.py draw a random one.
CI_SEED = "-seed=1"


@pytest.mark.parametrize("target", sorted(targets.TARGETS))
def test_seeds_and_past_crashes_are_refused_cleanly(target: str, tmp_path: Path) -> None:
    targets.use_scratch(tmp_path)
    files = targets.corpus_files(target)
    assert files, f"no seed corpus in {targets.CORPUS / target}"
    for path in files:
        try:
            targets.run_one(target, path.read_bytes())
        except Exception as exc:  # noqa: BLE001 - any other exception is the failure reported
            pytest.fail(f"{path.name}: {type(exc).__name__}: {exc}")


def _fuzz(target: str, work: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """run.py in a subprocess (libFuzzer ends the process); its stdout and stderr together."""
    return subprocess.run([sys.executable, str(RUN), target, "--work", str(work), *extra],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=SECONDS + 300, check=False, stdin=subprocess.DEVNULL)


@pytest.mark.fuzz
@pytest.mark.parametrize("target", sorted(targets.TARGETS))
def test_a_short_fuzzing_session_finds_nothing(target: str, tmp_path: Path) -> None:
    done = _fuzz(target, tmp_path, "--seconds", str(SECONDS), CI_SEED)
    crashes = sorted((tmp_path / "crashes" / target).iterdir())
    assert done.returncode == 0 and not crashes, (
        f"fuzz target {target} failed (exit {done.returncode}); inputs: {crashes}; keep the "
        f"input in tests/fuzz/corpus/{target}/ once fixed\n{done.stdout[-4000:]}")
    assert "Done " in done.stdout  # libFuzzer ran and ended on its time budget


@pytest.mark.fuzz
def test_the_runner_reports_an_exception_and_keeps_the_input(tmp_path: Path) -> None:
    done = _fuzz("selftest", tmp_path, "--seconds", "30")
    assert done.returncode != 0
    assert "ValueError: fuzz harness self-test" in done.stdout
    assert [p.name[:6] for p in (tmp_path / "crashes" / "selftest").iterdir()] == ["crash-"]
