#!/usr/bin/env bash
# Installs everything msgcap needs (a virtualenv with the Python dependencies, the Debian
# activemq and rabbitmq-server packages for the broker tests) and runs the full test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
ensure_venv
ensure_activemq_package
ensure_rabbitmq_package
exec "$VENV/bin/python" -m pytest "$@"
