#!/usr/bin/env bash
# The third-party producers of the live tests (tests/node/*.js: rhea and rhea-promise over AMQP
# 1.0, stompit and @stomp/stompjs over STOMP), their npm packages pinned by
# tests/node/package-lock.json and installed once per machine outside the repository.
#
#   bash scripts/node-clients.sh path          # install if needed; print the node_modules/ path
#   bash scripts/node-clients.sh run SCRIPT ARGS   # node tests/node/SCRIPT with those packages
#
# Environment:
#   MSGCAP_CACHE   where the packages go, under node-clients/HASH (default ~/.cache/msgcap)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
print_help_if_asked "$@"

case "${1:-}" in
    path) ensure_node_clients; echo "$NODE_CLIENTS" ;;
    run)
        shift
        [ $# -ge 1 ] || { echo "usage: $0 run SCRIPT [ARGS]" >&2; exit 2; }
        ensure_node_clients
        script="$1"; shift
        NODE_PATH="$NODE_CLIENTS" exec node "tests/node/$script" "$@" ;;
    *) echo "usage: $0 path | run SCRIPT [ARGS]" >&2; exit 2 ;;
esac
