#!/usr/bin/env bash
# The README's first command: live capture (msgcap run) of the delimited example from a spool
# directory, in a temporary working copy, then the trail shown with `msgcap dump`.
# Installs msgcap with its runtime dependencies only into .venv/ (MSGCAP_VENV), about 40 MB;
# scripts/test.sh adds the test tools to the same virtualenv.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
print_help_if_asked "$@"
ensure_venv

work="$(mktemp -d "${TMPDIR:-/tmp}/msgcap-demo.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp -R examples/delimited/. "$work/"
cd "$work"

echo "== msgcap send --prop dirprm/jmsvam.properties messages.jsonl   (in $work: spool files)"
msgcap send --prop dirprm/jmsvam.properties messages.jsonl
ls dirspool
echo
echo "== msgcap run --prop dirprm/jmsvam.properties --max-idle 1"
msgcap run --prop dirprm/jmsvam.properties --max-idle 1
echo
echo "== consumed messages moved to dirspool/.done; checkpoint dirchk/SALES.cpj"
ls dirspool/.done
echo
echo "== msgcap dump --defs dirdat/sales.def dirdat/sa000000000"
msgcap dump --defs dirdat/sales.def dirdat/sa000000000
