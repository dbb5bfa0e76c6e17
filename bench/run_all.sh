#!/usr/bin/env bash
# Runs every benchmark at the size its issue names, one after another, and prints their figures
# (each prints its own same-run baseline and ratio). Usage: bash bench/run_all.sh [NAME...]
# NAME is one of: trail replay_delim fixed xml copybook capture amqp partitions artemis jms batch restart takeover e2e
# (default: all).
# Run it on a quiet machine: figures are per core and the machine has two.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
ensure_venv test

declare -A CMD=(
  [trail]="bench/bench_trail.py 300000 1 3"
  [replay_delim]="bench/bench_replay_delim.py --records 1000000"
  [fixed]="bench/bench_fixed.py --records 200000"
  [xml]="bench/bench_xml.py --messages 200000"
  [copybook]="bench/bench_copybook.py"
  [capture]="bench/bench_capture.py --messages 200000"
  [amqp]="bench/bench_amqp.py --messages 200000"
  [partitions]="bench/bench_partitions.py --messages 200000"
  [artemis]="bench/bench_artemis.py --messages 200000"
  [jms]="bench/bench_jms.py --messages 200000"
  [batch]="bench/bench_batch.py --records 1000000"
  [restart]="bench/bench_restart.py --gigabytes 2"
  [takeover]="bench/bench_takeover.py --rounds 20"
  [e2e]="bench/bench_e2e.py"
)
ORDER=(trail replay_delim fixed xml copybook capture amqp partitions artemis jms batch restart takeover e2e)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${ORDER[@]}")
for name in "${names[@]}"; do
  [ -n "${CMD[$name]:-}" ] || { echo "unknown benchmark $name (one of: ${ORDER[*]})" >&2; exit 2; }
  echo "=================== $name: python ${CMD[$name]}"
  [ "$name" != capture ] && [ "$name" != e2e ] && [ "$name" != jms ] || ensure_activemq_package
  [ "$name" != artemis ] || ensure_artemis
  # shellcheck disable=SC2086
  "$VENV/bin/python" ${CMD[$name]}
done
