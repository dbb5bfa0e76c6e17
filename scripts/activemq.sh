#!/usr/bin/env bash
# A private ActiveMQ broker for development, tests and CI (not a system service).
#
#   bash scripts/activemq.sh start     # install the Debian package if missing, start, wait for STOMP
#   bash scripts/activemq.sh stop      # stop the broker this directory started (by its pid)
#   bash scripts/activemq.sh status    # "running pid N stomp://127.0.0.1:PORT" or exit 1
#   bash scripts/activemq.sh restart
#
# Environment:
#   MSGCAP_BROKER_DIR   private directory for conf/, data/, tmp/, the pid file and the log
#                       (default: .broker/ in the repository)
#   MSGCAP_STOMP_PORT   STOMP port on 127.0.0.1 (default 61613)
#   MSGCAP_BROKER_HEAP  JVM heap (default 512m)
#   MSGCAP_BROKER_WAIT  seconds to wait for the ports (default 90)
#   MSGCAP_BROKER_OWNER a pid: the broker stops by itself once that process has exited (a test
#                       run killed midway leaves no JVM behind)
#
# STOMP over TLS (stomp+ssl), off unless a port is given; scripts/test-certs.sh makes test stores:
#   MSGCAP_STOMP_SSL_PORT     STOMP over TLS on this 127.0.0.1 port (needs MSGCAP_BROKER_KEYSTORE)
#   MSGCAP_STOMP_MTLS_PORT    STOMP over TLS that requires a client certificate issued by a CA of
#                             MSGCAP_BROKER_TRUSTSTORE (needClientAuth)
#   MSGCAP_BROKER_KEYSTORE    PKCS#12 store: the broker's private key and certificate chain
#   MSGCAP_BROKER_TRUSTSTORE  PKCS#12 store: the CAs that sign client certificates
#   MSGCAP_BROKER_STOREPASS   password of those stores (default changeit)
#   MSGCAP_STOMP_SSL_ALT_PORT with MSGCAP_BROKER_ALT_KEYSTORE: a second broker in the same JVM (not
#                             persistent) with STOMP over TLS on this port only, presenting the
#                             certificate of that store: to see a client refuse an expired or
#                             foreign certificate without starting another JVM
#
# MSGCAP_OPENWIRE_PORT  OpenWire on this 127.0.0.1 port, for a JMS consumer on ActiveMQ's own
#                       client (the tests' oracle of what JMS sees); off unless given
#
# The broker listens on loopback only, STOMP only unless MSGCAP_OPENWIRE_PORT is set (msgcap needs
# no OpenWire), no web console, no JMX. Messages persist in KahaDB under data/, so a restart keeps queued messages.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
print_help_if_asked "$@"

AMQ_HOME=/usr/share/activemq
DIR="${MSGCAP_BROKER_DIR:-$PWD/.broker}"
PORT="${MSGCAP_STOMP_PORT:-61613}"
HEAP="${MSGCAP_BROKER_HEAP:-512m}"
WAIT="${MSGCAP_BROKER_WAIT:-90}"
OWNER="${MSGCAP_BROKER_OWNER:-}"
PIDFILE="$DIR/activemq.pid"
LOG="$DIR/activemq.out"
SSL_PORT="${MSGCAP_STOMP_SSL_PORT:-}"
OPENWIRE_PORT="${MSGCAP_OPENWIRE_PORT:-}"
MTLS_PORT="${MSGCAP_STOMP_MTLS_PORT:-}"
ALT_PORT="${MSGCAP_STOMP_SSL_ALT_PORT:-}"
KEYSTORE="${MSGCAP_BROKER_KEYSTORE:-}"
TRUSTSTORE="${MSGCAP_BROKER_TRUSTSTORE:-}"
ALT_KEYSTORE="${MSGCAP_BROKER_ALT_KEYSTORE:-}"
STOREPASS="${MSGCAP_BROKER_STOREPASS:-changeit}"

_port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/${1:-$PORT}") 2>/dev/null
}

_all_ports_open() {
    local p
    for p in "$PORT" $SSL_PORT $MTLS_PORT $ALT_PORT; do
        _port_open "$p" || return 1
    done
}

_check_tls() {
    if [ -n "$SSL_PORT$MTLS_PORT" ] && [ ! -f "$KEYSTORE" ]; then
        echo "activemq: a TLS port needs MSGCAP_BROKER_KEYSTORE (a PKCS#12 file)" >&2; return 1
    fi
    if [ -n "$MTLS_PORT" ] && [ ! -f "$TRUSTSTORE" ]; then
        echo "activemq: MSGCAP_STOMP_MTLS_PORT needs MSGCAP_BROKER_TRUSTSTORE" >&2; return 1
    fi
    if [ -n "$ALT_PORT" ] && [ ! -f "$ALT_KEYSTORE" ]; then
        echo "activemq: MSGCAP_STOMP_SSL_ALT_PORT needs MSGCAP_BROKER_ALT_KEYSTORE" >&2; return 1
    fi
    local value
    for value in "$KEYSTORE" "$TRUSTSTORE" "$ALT_KEYSTORE" "$STOREPASS"; do
        case "$value" in
            *[\"\&\<\>]*) echo "activemq: store paths and password must not hold \" & < >" >&2
                          return 1 ;;
        esac
    done
}

# The <sslContext> of a broker: its key store, and the trust store when clients must show one.
_ssl_context() {  # keystore [truststore]
    local trust=""
    if [ -n "${2:-}" ]; then
        trust=" trustStore=\"file:$2\" trustStorePassword=\"$STOREPASS\" trustStoreType=\"pkcs12\""
    fi
    echo "    <sslContext><sslContext keyStore=\"file:$1\" keyStorePassword=\"$STOREPASS\"" \
         "keyStoreType=\"pkcs12\"$trust/></sslContext>"
}

_tls_connectors() {
    local options="wireFormat.maxFrameSize=104857600"
    if [ -n "$SSL_PORT" ]; then
        echo "      <transportConnector name=\"stomp+ssl\"" \
             "uri=\"stomp+ssl://127.0.0.1:$SSL_PORT?$options\"/>"
    fi
    if [ -n "$MTLS_PORT" ]; then
        echo "      <transportConnector name=\"stomp+ssl+clientauth\"" \
             "uri=\"stomp+ssl://127.0.0.1:$MTLS_PORT?needClientAuth=true&amp;$options\"/>"
    fi
}

_alt_broker() {
    [ -n "$ALT_PORT" ] || return 0
    cat <<EOF
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="msgcap-alt" useJmx="false"
          schedulerSupport="false" advisorySupport="false" persistent="false"
          dataDirectory="$DIR/data/alt">
$(_ssl_context "$ALT_KEYSTORE")
    <transportConnectors>
      <transportConnector name="stomp+ssl+alt" uri="stomp+ssl://127.0.0.1:$ALT_PORT"/>
    </transportConnectors>
  </broker>
EOF
}

_tls_urls() {
    local p
    for p in $SSL_PORT $MTLS_PORT $ALT_PORT; do printf ' stomp+ssl://127.0.0.1:%s' "$p"; done
}

_write_conf() {
    mkdir -p "$DIR/conf" "$DIR/data" "$DIR/tmp"
    # The directory holds generated and runtime files only.
    [ -f "$DIR/.gitignore" ] || echo '*' > "$DIR/.gitignore"
    cat > "$DIR/conf/activemq.xml" <<EOF
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans-2.0.xsd
       http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="msgcap" useJmx="false"
          schedulerSupport="false" advisorySupport="false" dataDirectory="$DIR/data">
    <destinationPolicy>
      <policyMap><policyEntries>
        <!-- maxPageSize: a consumer holding as many unacknowledged messages as a page (200 by
             default) gets no more until it acknowledges; msgcap's commit groups (jms.ack.batch)
             must stay below it -->
        <policyEntry queue=">" producerFlowControl="true" memoryLimit="32mb" maxPageSize="1000"/>
      </policyEntries></policyMap>
    </destinationPolicy>
    <persistenceAdapter>
      <!-- concurrentStoreAndDispatchQueues=false: with it, a consumer draining a queue while a
           producer fills it can be handed messages out of order (or one skipped until later). -->
      <kahaDB directory="$DIR/data/kahadb" journalDiskSyncStrategy="periodic"
              journalDiskSyncInterval="200" concurrentStoreAndDispatchQueues="false"/>
    </persistenceAdapter>
$( [ -z "$SSL_PORT$MTLS_PORT" ] || _ssl_context "$KEYSTORE" "${MTLS_PORT:+$TRUSTSTORE}")
    <systemUsage><systemUsage>
      <memoryUsage><memoryUsage limit="128 mb"/></memoryUsage>
      <storeUsage><storeUsage limit="8 gb"/></storeUsage>
      <tempUsage><tempUsage limit="2 gb"/></tempUsage>
    </systemUsage></systemUsage>
    <transportConnectors>
      <transportConnector name="stomp"
          uri="stomp+nio://127.0.0.1:$PORT?transport.closeAsync=false&amp;wireFormat.maxFrameSize=104857600"/>
$(_tls_connectors)
$( [ -z "$OPENWIRE_PORT" ] || echo "      <transportConnector name=\"openwire\" uri=\"tcp://127.0.0.1:$OPENWIRE_PORT\"/>")
    </transportConnectors>
  </broker>
$(_alt_broker)
</beans>
EOF
    # Debian's broker logs through log4j 1.2 (slf4j-log4j12 in lib/optional).
    cat > "$DIR/conf/log4j.properties" <<EOF
log4j.rootLogger=WARN, logfile
log4j.logger.org.apache.activemq=INFO
log4j.appender.logfile=org.apache.log4j.FileAppender
log4j.appender.logfile.file=$DIR/data/activemq.log
log4j.appender.logfile.layout=org.apache.log4j.PatternLayout
log4j.appender.logfile.layout.ConversionPattern=%d | %-5p | %m | %c | %t%n
EOF
}

start() {
    _check_tls
    if broker_alive && _all_ports_open; then
        echo "activemq already running (pid $(cat "$PIDFILE"), stomp://127.0.0.1:$PORT$(_tls_urls))"
        return 0
    fi
    if _port_open; then
        echo "activemq: port 127.0.0.1:$PORT is in use by another process" >&2
        return 1
    fi
    ensure_activemq_package
    _write_conf
    # setsid: the broker does not get the caller's signals (Ctrl-C in a test run).
    setsid java -Xms64m -Xmx"$HEAP" -XX:+UseSerialGC \
        -Dorg.apache.activemq.UseDedicatedTaskRunner=false \
        -Djava.io.tmpdir="$DIR/tmp" \
        -Dlog4j.configuration="file:$DIR/conf/log4j.properties" \
        -Dactivemq.classpath="$DIR/conf" \
        -Dactivemq.home="$AMQ_HOME" -Dactivemq.base="$DIR" \
        -Dactivemq.conf="$DIR/conf" -Dactivemq.data="$DIR/data" \
        -jar "$AMQ_HOME/bin/activemq.jar" start "xbean:file:$DIR/conf/activemq.xml" \
        >"$LOG" 2>&1 </dev/null &
    echo $! > "$PIDFILE"
    broker_wait_started "activemq: the broker" _all_ports_open \
        "activemq: ports $PORT $SSL_PORT $MTLS_PORT $ALT_PORT not all open" || return 1
    echo "activemq started (pid $(cat "$PIDFILE"), stomp://127.0.0.1:$PORT$(_tls_urls), dir $DIR)"
}

stop() {
    broker_stop activemq
}

status() {
    if broker_alive && _all_ports_open; then
        echo "running pid $(cat "$PIDFILE") stomp://127.0.0.1:$PORT$(_tls_urls)"
    else
        echo "not running"
        return 1
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    restart) stop; start ;;
    status) status ;;
    *) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac
