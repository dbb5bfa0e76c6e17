#!/usr/bin/env bash
# Installs everything msgcap needs (a virtualenv with the Python dependencies, the Debian
# activemq and rabbitmq-server packages and ActiveMQ Artemis from Maven Central for the broker
# tests, a JDK and Maven if missing, and the third-party producers' npm packages of tests/node/)
# and runs the full test suite, on two pytest-xdist workers: the broker tests one after another
# on one, the other tests on whichever is free (tests/conftest.py).
#
#   bash scripts/test.sh                      # everything
#   bash scripts/test.sh tests/docs -q        # arguments go to pytest (.venv/bin/pytest --help)
#   bash scripts/test.sh -n 0 -x tests/live   # one process, as for a debugger or print()
#
# MSGCAP_VENV: the virtualenv to use (default .venv/ in the repository).
# MSGCAP_TEST_WORKERS: the number of workers (default 2; -n on the command line wins).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
print_help_if_asked "$@"
ensure_venv test
ensure_activemq_package
ensure_rabbitmq_package
ensure_artemis
ensure_node_clients
exec "$VENV/bin/python" -m pytest -n "${MSGCAP_TEST_WORKERS:-2}" --dist loadgroup "$@"
