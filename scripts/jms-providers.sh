#!/usr/bin/env bash
# The client jars of the JMS providers msgcap's JMS source is tested with (a JMS provider's own
# client in a JVM, docs/brokers.md "JMS providers through their own jars"), as the class path a
# jmsvam.properties names in jvm.bootoptions (-Djava.class.path=...):
#
#   bash scripts/jms-providers.sh classpath activemq         # Debian's ActiveMQ OpenWire client
#   bash scripts/jms-providers.sh classpath artemis          # Artemis core, javax.jms
#   bash scripts/jms-providers.sh classpath artemis-jakarta  # Artemis core, jakarta.jms (3.x)
#
# activemq: the jars of Debian's activemq package (installed if missing) that its JNDI factory
# org.apache.activemq.jndi.ActiveMQInitialContextFactory needs. artemis, artemis-jakarta:
# Maven Central's artemis-jms-client-all / artemis-jakarta-client-all (one shaded jar each, the
# version of MSGCAP_ARTEMIS_VERSION, default 2.40.0), fetched once into $MSGCAP_CACHE/jms-providers.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
print_help_if_asked "$@"

ACTIVEMQ_LIB=/usr/share/activemq/lib
ACTIVEMQ_JARS=(activemq-client.jar geronimo-jms_1.1_spec.jar geronimo-j2ee-management-1.1-spec.jar
               hawtbuf.jar slf4j-api.jar)

maven_jar() {  # maven_jar ARTIFACT: the path of org.apache.activemq:ARTIFACT:VERSION's jar
    local artifact=$1 version="${MSGCAP_ARTEMIS_VERSION:-2.40.0}"
    local cache="${MSGCAP_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/msgcap}/jms-providers"
    local jar="$cache/$artifact-$version.jar"
    if [ ! -f "$jar" ]; then
        mkdir -p "$cache"
        (
            flock 9
            [ -f "$jar" ] && exit 0
            command -v mvn >/dev/null || _apt_install maven
            echo "fetching $artifact $version from Maven Central into $cache ..." >&2
            mvn -q -B -Dstyle.color=never dependency:copy \
                "-Dartifact=org.apache.activemq:$artifact:$version" "-DoutputDirectory=$cache" >&2
        ) 9>"$cache/.lock"
    fi
    echo "$jar"
}

classpath() {
    case "${1:-}" in
        activemq)
            [ -f "$ACTIVEMQ_LIB/activemq-client.jar" ] || _apt_install activemq
            local jars=() jar
            for jar in "${ACTIVEMQ_JARS[@]}"; do jars+=("$ACTIVEMQ_LIB/$jar"); done
            (IFS=:; echo "${jars[*]}") ;;
        artemis) maven_jar artemis-jms-client-all ;;
        artemis-jakarta) maven_jar artemis-jakarta-client-all ;;
        *) echo "usage: $0 classpath activemq|artemis|artemis-jakarta" >&2; exit 2 ;;
    esac
}

case "${1:-}" in
    classpath) classpath "${2:-}" ;;
    *) echo "usage: $0 classpath activemq|artemis|artemis-jakarta" >&2; exit 2 ;;
esac
