#!/usr/bin/env bash
# The README's first command: replays the delimited example (examples/delimited) into a trail in
# a temporary working copy and shows the trail with `msgcap dump`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
ensure_venv

work="$(mktemp -d "${TMPDIR:-/tmp}/msgcap-demo.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp -R examples/delimited/. "$work/"
cd "$work"

echo "== msgcap replay --prop dirprm/jmsvam.properties messages.jsonl   (in $work)"
msgcap replay --prop dirprm/jmsvam.properties messages.jsonl
echo
echo "== msgcap dump --defs dirdat/sales.def dirdat/sa000000000"
msgcap dump --defs dirdat/sales.def dirdat/sa000000000
