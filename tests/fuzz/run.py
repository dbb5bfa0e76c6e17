"""Run one fuzz target under atheris (coverage-guided, libFuzzer).

    python tests/fuzz/run.py TARGET [--seconds N] [--work DIR] [LIBFUZZER_ARG|FILE ...]

Fuzzes TARGET (see ``targets.TARGETS``) for N seconds (default 600). New inputs the fuzzer finds
go to ``DIR/corpus/TARGET`` (default DIR: ``.fuzz/`` in the repository, ignored by git); the seed
corpus ``tests/fuzz/corpus/TARGET`` is read, never written. A crash (an exception that is not a
``MsgcapError``, a hang longer than ``-timeout``, too much memory) stops the run with exit 1 and
is saved under ``DIR/crashes/TARGET/``. Given FILEs instead, it runs just those inputs (to
reproduce a crash). Other ``-name=value`` arguments go to libFuzzer as they are.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

# Per-input limits: generous, the machine is shared; a slower input is a finding.
LIBFUZZER_DEFAULTS = ("-timeout=20", "-rss_limit_mb=2048", "-print_final_stats=1")


def main(argv: list[str]) -> int:
    import atheris

    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("target")
    args.add_argument("--seconds", type=int, default=600)
    args.add_argument("--work", default=str(REPO / ".fuzz"))
    opts, rest = args.parse_known_args(argv)

    with atheris.instrument_imports(include=["props", "gendef", "parsers", "msgcap"]):
        from tests.fuzz import targets

        targets.quiet_logging()
        targets.use_scratch(Path(opts.work) / "scratch" / str(os.getpid()))

        if opts.target not in targets.ALL_TARGETS:
            print(f"unknown target {opts.target!r}; one of {', '.join(targets.TARGETS)}",
                  file=sys.stderr)
            return 2
        # Every seed once, inside the instrumentation: modules the targets import lazily are
        # instrumented too, and a seed that fails stops here with its name.
        seeds = targets.corpus_files(opts.target) if opts.target in targets.TARGETS else []
        for seed in seeds:
            try:
                targets.run_one(opts.target, seed.read_bytes())
            except Exception:
                print(f"seed {seed} fails:", file=sys.stderr)
                raise

    work = Path(opts.work)
    crashes = work / "crashes" / opts.target
    crashes.mkdir(parents=True, exist_ok=True)
    files = [a for a in rest if not a.startswith("-")]
    flags = [a for a in rest if a.startswith("-")]
    fuzz_args = [sys.argv[0], *LIBFUZZER_DEFAULTS, f"-artifact_prefix={crashes}{os.sep}", *flags]
    if files:
        fuzz_args += files
    else:
        corpus = work / "corpus" / opts.target
        corpus.mkdir(parents=True, exist_ok=True)
        fuzz_args += [f"-max_total_time={opts.seconds}", str(corpus)]
        if seeds:
            fuzz_args.append(str(targets.CORPUS / opts.target))

    def one_input(data: bytes) -> None:
        targets.run_one(opts.target, data)

    atheris.Setup(fuzz_args, one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
