#!/usr/bin/env bash
# A private ActiveMQ Artemis broker for development, tests and CI (not a system service).
#
#   bash scripts/artemis.sh start     # fetch Artemis if missing, create the instance, start, wait
#   bash scripts/artemis.sh stop      # stop the broker this directory started (by its pid)
#   bash scripts/artemis.sh kill      # kill -9 it (a crash: the journal is recovered at start)
#   bash scripts/artemis.sh status    # "running pid N amqp://127.0.0.1:PORT tcp://..." or exit 1
#   bash scripts/artemis.sh restart   # same instance, same data: durable queues keep messages
#   bash scripts/artemis.sh home      # the Artemis distribution's directory (its lib/ has the
#                                     # JMS clients: Qpid JMS, the Artemis core JMS client)
#
# Environment:
#   MSGCAP_BROKER_DIR   the private instance (bin/, etc/, data/, log/, the pid file)
#                       (default: .artemis/ in the repository)
#   MSGCAP_AMQP_PORT    AMQP 1.0 on 127.0.0.1 (default 5672)
#   MSGCAP_CORE_PORT    the core protocol (Artemis JMS client, tcp://) on 127.0.0.1, which also
#                       takes OpenWire and STOMP (default 61616)
#   MSGCAP_BROKER_HEAP  JVM heap (default 512m)
#   MSGCAP_BROKER_WAIT  seconds to wait for the ports (default 90)
#   MSGCAP_BROKER_OWNER a pid: the broker stops by itself once that process has exited
#   MSGCAP_ARTEMIS_VERSION  the distribution, from Maven Central (default 2.40.0), unpacked once
#                       per machine under MSGCAP_CACHE (default ~/.cache/msgcap)
#
# The broker listens on loopback only, no web console, no login (security off: tests connect
# anonymously), journal without fsync (a test broker: a crash of the machine may lose the last
# writes, a kill -9 of the broker does not). Queues and addresses are created on first use; a
# message is moved to the DLQ after 10 deliveries, as Artemis does by default.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
print_help_if_asked "$@"

DIR="${MSGCAP_BROKER_DIR:-$PWD/.artemis}"
AMQP_PORT="${MSGCAP_AMQP_PORT:-5672}"
CORE_PORT="${MSGCAP_CORE_PORT:-61616}"
HEAP="${MSGCAP_BROKER_HEAP:-512m}"
WAIT="${MSGCAP_BROKER_WAIT:-90}"
OWNER="${MSGCAP_BROKER_OWNER:-}"
PIDFILE="$DIR/artemis.pid"
LOG="$DIR/artemis.out"

_port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Active (its log says so) and both acceptors listening.
_ready() {
    grep -q 'AMQ221007' "$LOG" 2>/dev/null && _port_open "$AMQP_PORT" && _port_open "$CORE_PORT"
}

_urls() {
    echo "amqp://127.0.0.1:$AMQP_PORT tcp://127.0.0.1:$CORE_PORT"
}

# The instance's skeleton (bin/artemis, etc/ profiles and logging) once; broker.xml is ours.
_create_instance() {
    [ -x "$DIR/bin/artemis" ] && return 0
    "$ARTEMIS_HOME/bin/artemis" create "$DIR" --silent --force --host 127.0.0.1 --no-web \
        --user admin --password admin --allow-anonymous --nio --no-autotune --no-fsync \
        --java-memory 512M >"$DIR/create.out" 2>&1 </dev/null \
        || { echo "artemis: creating the instance failed; see $DIR/create.out" >&2; return 1; }
}

_write_conf() {
    mkdir -p "$DIR"
    [ -f "$DIR/.gitignore" ] || echo '*' > "$DIR/.gitignore"
    _create_instance
    local amqp="protocols=AMQP;useEpoll=true;amqpCredits=1000;amqpLowCredits=300"
    amqp="$amqp;amqpMinLargeMessageSize=102400;amqpDuplicateDetection=true"
    cat > "$DIR/etc/broker.xml" <<EOF
<?xml version='1.0'?>
<configuration xmlns="urn:activemq" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
               xsi:schemaLocation="urn:activemq /schema/artemis-configuration.xsd">
  <core xmlns="urn:activemq:core">
    <name>msgcap</name>
    <persistence-enabled>true</persistence-enabled>
    <security-enabled>false</security-enabled>
    <journal-type>NIO</journal-type>
    <journal-datasync>false</journal-datasync>
    <journal-sync-transactional>false</journal-sync-transactional>
    <journal-sync-non-transactional>false</journal-sync-non-transactional>
    <journal-file-size>10M</journal-file-size>
    <journal-min-files>2</journal-min-files>
    <journal-pool-files>10</journal-pool-files>
    <paging-directory>$DIR/data/paging</paging-directory>
    <bindings-directory>$DIR/data/bindings</bindings-directory>
    <journal-directory>$DIR/data/journal</journal-directory>
    <large-messages-directory>$DIR/data/large-messages</large-messages-directory>
    <!-- a loaded 2-core test machine is no reason to halt the broker, nor a full disk to block -->
    <critical-analyzer>false</critical-analyzer>
    <max-disk-usage>100</max-disk-usage>
    <global-max-size>128Mb</global-max-size>
    <acceptors>
      <acceptor name="core">tcp://127.0.0.1:$CORE_PORT?protocols=CORE,OPENWIRE,STOMP;useEpoll=true</acceptor>
      <acceptor name="amqp">tcp://127.0.0.1:$AMQP_PORT?$amqp</acceptor>
    </acceptors>
    <address-settings>
      <address-setting match="#">
        <dead-letter-address>DLQ</dead-letter-address>
        <expiry-address>ExpiryQueue</expiry-address>
        <redelivery-delay>0</redelivery-delay>
        <max-delivery-attempts>10</max-delivery-attempts>
        <address-full-policy>PAGE</address-full-policy>
        <page-size-bytes>10M</page-size-bytes>
        <auto-create-queues>true</auto-create-queues>
        <auto-create-addresses>true</auto-create-addresses>
        <auto-delete-queues>false</auto-delete-queues>
        <auto-delete-addresses>false</auto-delete-addresses>
      </address-setting>
    </address-settings>
    <addresses>
      <address name="DLQ"><anycast><queue name="DLQ"/></anycast></address>
      <address name="ExpiryQueue"><anycast><queue name="ExpiryQueue"/></anycast></address>
    </addresses>
  </core>
</configuration>
EOF
}

start() {
    if broker_alive && _ready; then
        echo "artemis already running (pid $(cat "$PIDFILE"), $(_urls))"
        return 0
    fi
    local port
    for port in "$AMQP_PORT" "$CORE_PORT"; do
        if _port_open "$port"; then
            echo "artemis: port 127.0.0.1:$port is in use by another process" >&2
            return 1
        fi
    done
    ensure_artemis
    _write_conf
    # bin/artemis execs the JVM (the pid is the broker's); JAVA_ARGS replaces the profile's
    # (-Xms512M, G1): a modest heap and the serial collector on a small shared machine.
    # setsid: the broker does not get the caller's signals (Ctrl-C in a test run).
    JAVA_ARGS="-Xms64m -Xmx$HEAP -XX:+UseSerialGC -XX:AutoBoxCacheMax=20000 \
-Dlog4j2.disableJmx=true --add-opens java.base/jdk.internal.misc=ALL-UNNAMED" \
        setsid "$DIR/bin/artemis" run >"$LOG" 2>&1 </dev/null &
    echo $! > "$PIDFILE"
    broker_wait_started "artemis: the broker" _ready \
        "artemis: not active with ports $AMQP_PORT and $CORE_PORT open" || return 1
    echo "artemis started (pid $(cat "$PIDFILE"), $(_urls), dir $DIR)"
}

stop() {
    [ ! -f "$DIR/watchdog.pid" ] || stop_pid_file "$DIR/watchdog.pid"
    if ! broker_alive; then
        rm -f "$PIDFILE"
        echo "artemis not running"
        return 0
    fi
    local pid
    pid="$(cat "$PIDFILE")"
    stop_pid_file "$PIDFILE"   # TERM: the broker's shutdown hook stops it cleanly
    echo "artemis stopped (pid $pid)"
}

kill9() {
    [ ! -f "$DIR/watchdog.pid" ] || stop_pid_file "$DIR/watchdog.pid"
    if broker_alive; then
        local pid
        pid="$(cat "$PIDFILE")"
        kill -KILL "$pid"
        while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
        echo "artemis killed (pid $pid)"
    fi
    rm -f "$PIDFILE"
}

status() {
    if broker_alive && _ready; then
        echo "running pid $(cat "$PIDFILE") $(_urls)"
    else
        echo "not running"
        return 1
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    kill) kill9 ;;
    restart) stop; start ;;
    status) status ;;
    home) ensure_artemis >&2; echo "$ARTEMIS_HOME" ;;
    *) echo "usage: $0 start|stop|kill|restart|status|home" >&2; exit 2 ;;
esac
