#!/usr/bin/env bash
# The JMS test clients of tests/java/ (JmsProduce, JmsConsume, JmsBench): compiled once per
# machine (cached by the sources' content) against the JMS 2.0 API of the Artemis distribution,
# run with its lib/ (Qpid JMS for amqp://, the Artemis core JMS client for tcp://).
#
#   bash scripts/jms-clients.sh classpath        # compile if needed; print the classpath
#   bash scripts/jms-clients.sh run CLASS ARGS   # e.g. run JmsProduce --url amqp://... --help
#
# Each program's options are in its class comment (tests/java/*.java). The providers are reached
# by reflection: another provider's jars go first with MSGCAP_JMS_CLASSPATH (and --factory).
#
# Environment:
#   MSGCAP_CACHE         where the classes go, under jms-clients/HASH (default ~/.cache/msgcap)
#   MSGCAP_JMS_CLASSPATH jars put before Artemis's lib/ (another provider's)
#   MSGCAP_JMS_HEAP      the client JVM's heap (default 256m)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
print_help_if_asked "$@"

# The compiled classes' directory, made once for these sources and this javac.
classes() {
    local cache="${MSGCAP_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/msgcap}"
    local api hash out
    api="$(ls "$ARTEMIS_HOME"/lib/jakarta.jms-api-*.jar)"
    hash="$( { cat tests/java/*.java; javac -version 2>&1; echo "$api"; } | sha256sum | cut -c1-16)"
    out="$cache/jms-clients/$hash"
    if [ ! -f "$out/.compiled" ]; then
        mkdir -p "$out"
        javac -nowarn -encoding UTF-8 -cp "$api" -d "$out" tests/java/*.java >&2
        touch "$out/.compiled"
    fi
    echo "$out"
}

classpath() {
    local dir
    ensure_artemis
    dir="$(classes)"
    echo "$dir${MSGCAP_JMS_CLASSPATH:+:$MSGCAP_JMS_CLASSPATH}:$ARTEMIS_HOME/lib/*"
}

case "${1:-}" in
    classpath) classpath ;;
    run)
        shift
        [ $# -ge 1 ] || { echo "usage: $0 run CLASS [ARGS]" >&2; exit 2; }
        cp="$(classpath)"
        exec java -Xmx"${MSGCAP_JMS_HEAP:-256m}" -XX:+UseSerialGC -cp "$cp" "$@" ;;
    *) echo "usage: $0 classpath | run CLASS [ARGS]" >&2; exit 2 ;;
esac
