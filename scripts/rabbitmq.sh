#!/usr/bin/env bash
# A private RabbitMQ node with STOMP for development, tests and CI (not the system service).
#
#   bash scripts/rabbitmq.sh start     # install rabbitmq-server if missing, start, wait for STOMP
#   bash scripts/rabbitmq.sh stop      # stop the node this directory started (by its pid)
#   bash scripts/rabbitmq.sh status    # "running pid N stomp://127.0.0.1:PORT" or exit 1
#   bash scripts/rabbitmq.sh restart   # same node, same data: durable queues keep their messages
#   bash scripts/rabbitmq.sh queues    # the node's queues, one a line: name, messages, durable
#
# Environment:
#   MSGCAP_BROKER_DIR   private directory for the node's data, logs, config, cookie and pid files
#                       (default: .rabbitmq/ in the repository)
#   MSGCAP_STOMP_PORT   STOMP port on 127.0.0.1 (default 61613)
#   MSGCAP_BROKER_WAIT  seconds to wait for the STOMP port (default 90)
#   MSGCAP_BROKER_OWNER a pid: the node stops by itself once that process has exited
#   MSGCAP_AMQP_PORT    also AMQP 1.0 (the rabbitmq_amqp1_0 plugin) on this port of 127.0.0.1
#                       (default: none; the same value is needed by restart, status and stop)
#   MSGCAP_AMQPS_PORT   also AMQP 1.0 over TLS on this port of 127.0.0.1 (default: none; needed
#                       by restart, status and stop too), with these PEM files (all three needed):
#   MSGCAP_BROKER_CERT    the broker's certificate (scripts/test-certs.sh: broker.pem)
#   MSGCAP_BROKER_KEY     its unencrypted key (broker.key)
#   MSGCAP_BROKER_CA      the CA that issues client certificates (ca.pem); a client certificate
#                         is verified if shown (verify_peer)
#   MSGCAP_AMQPS_MTLS   1: a client without a certificate is refused (fail_if_no_peer_cert)
#                       (default 0: accepted, and logs in with PLAIN or ANONYMOUS)
#   MSGCAP_HTTP_PORT    also the management plugin's HTTP API (rabbitmq_management) on this
#                       port of 127.0.0.1, for queue and binding recipes (docs/brokers.md);
#                       default: none
#   MSGCAP_AMQPS_CERT_USER  a user created without a password, with all permissions on vhost /,
#                       for SASL EXTERNAL: the common name (CN) of the client certificate that
#                       logs in as it (test-certs.sh: "msgcap test client"); default: none
#
# The node listens on loopback only: STOMP (rabbitmq_stomp; with the exchange type x-consistent-hash
# of rabbitmq_consistent_hash_exchange for partitioned feeds), AMQP 1.0 only if asked, no AMQP
# 0-9-1 clients beyond that listener's, no management UI unless MSGCAP_HTTP_PORT is set. With MSGCAP_AMQPS_PORT it also offers
# SASL EXTERNAL (the rabbitmq_auth_mechanism_ssl plugin: the user is the client certificate's
# CN) beside PLAIN and AMQPLAIN. Its Erlang distribution port and its own epmd take free
# loopback ports chosen at the first start and kept in the directory, so several nodes run side
# by side and a restart finds its data again. Its cookie lives in the directory ($HOME is set
# there).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
print_help_if_asked "$@"

DIR="${MSGCAP_BROKER_DIR:-$PWD/.rabbitmq}"
PORT="${MSGCAP_STOMP_PORT:-61613}"
WAIT="${MSGCAP_BROKER_WAIT:-90}"
OWNER="${MSGCAP_BROKER_OWNER:-}"
AMQP_PORT="${MSGCAP_AMQP_PORT:-}"
AMQPS_PORT="${MSGCAP_AMQPS_PORT:-}"
CERT_USER="${MSGCAP_AMQPS_CERT_USER:-}"
HTTP_PORT="${MSGCAP_HTTP_PORT:-}"
PIDFILE="$DIR/rabbitmq.pid"
LOG="$DIR/rabbitmq.out"

_port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The node's environment: name, directories, ports and config all private to $DIR.
_node_env() {
    [ -f "$DIR/ports" ] || printf '%s %s\n' "$(_free_port)" "$(_free_port)" > "$DIR/ports"
    local dist epmd
    read -r dist epmd < "$DIR/ports"
    export HOME="$DIR"
    export RABBITMQ_NODENAME="msgcap$PORT@localhost" RABBITMQ_USE_LONGNAME=false
    export RABBITMQ_MNESIA_BASE="$DIR/mnesia" RABBITMQ_LOG_BASE="$DIR/log"
    export RABBITMQ_CONFIG_FILE="$DIR/rabbitmq.conf" RABBITMQ_ADVANCED_CONFIG_FILE="$DIR/advanced.config"
    export RABBITMQ_ENABLED_PLUGINS_FILE="$DIR/enabled_plugins"
    export RABBITMQ_PID_FILE="$DIR/node.pid" RABBITMQ_CONF_ENV_FILE="$DIR/rabbitmq-env.conf"
    export RABBITMQ_DIST_PORT="$dist" ERL_EPMD_PORT="$epmd" ERL_EPMD_ADDRESS=127.0.0.1
    export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
    export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
}

_write_conf() {
    mkdir -p "$DIR/mnesia" "$DIR/log"
    [ -f "$DIR/.gitignore" ] || echo '*' > "$DIR/.gitignore"
    [ -f "$DIR/.erlang.cookie" ] || { python3 -c 'import secrets; print(secrets.token_hex(16), end="")' \
        > "$DIR/.erlang.cookie"; chmod 400 "$DIR/.erlang.cookie"; }
    : > "$DIR/rabbitmq-env.conf"
    echo '[].' > "$DIR/advanced.config"
    # the consistent-hash exchange of partitioned feeds (docs/brokers.md) is only an exchange type
    local amqp="listeners.tcp = none" plugins="rabbitmq_stomp,rabbitmq_consistent_hash_exchange"
    if [ -n "$AMQP_PORT" ]; then
        # RabbitMQ 3.x speaks AMQP 1.0 on its AMQP listener, told apart by the protocol header
        plugins="$plugins,rabbitmq_amqp1_0"
        amqp="listeners.tcp.1 = 127.0.0.1:$AMQP_PORT"
    fi
    if [ -n "$AMQPS_PORT" ]; then
        [ -n "$AMQP_PORT" ] || plugins="$plugins,rabbitmq_amqp1_0"
        plugins="$plugins,rabbitmq_auth_mechanism_ssl"
        amqp="$amqp
$(_tls_conf)" || return 1
    fi
    if [ -n "$HTTP_PORT" ]; then
        plugins="$plugins,rabbitmq_management"
        amqp="$amqp
management.tcp.ip = 127.0.0.1
management.tcp.port = $HTTP_PORT"
    fi
    echo "[$plugins]." > "$DIR/enabled_plugins"
    cat > "$DIR/rabbitmq.conf" <<EOF
$amqp
stomp.listeners.tcp.1 = 127.0.0.1:$PORT
loopback_users.guest = true
vm_memory_high_watermark.absolute = 512MiB
disk_free_limit.absolute = 50MB
log.console = false
log.file.level = warning
EOF
}


_ports_open() {
    _port_open "$PORT" && { [ -z "$AMQP_PORT" ] || _port_open "$AMQP_PORT"; } \
        && { [ -z "$AMQPS_PORT" ] || _port_open "$AMQPS_PORT"; } \
        && { [ -z "$HTTP_PORT" ] || _port_open "$HTTP_PORT"; }
}

_urls() {
    echo "stomp://127.0.0.1:$PORT${AMQP_PORT:+ amqp://127.0.0.1:$AMQP_PORT}${AMQPS_PORT:+ amqps://127.0.0.1:$AMQPS_PORT}"
}

# The AMQP 1.0 TLS listener, its certificate and the clients' CA, and SASL EXTERNAL.
_tls_conf() {
    local file
    for file in MSGCAP_BROKER_CERT MSGCAP_BROKER_KEY MSGCAP_BROKER_CA; do
        if [ ! -f "${!file:-}" ]; then
            echo "rabbitmq: MSGCAP_AMQPS_PORT needs $file, a PEM file (${!file:-not set})" >&2
            return 1
        fi
    done
    local mtls=false
    [ "${MSGCAP_AMQPS_MTLS:-0}" != 1 ] || mtls=true
    cat <<EOF
listeners.ssl.1 = 127.0.0.1:$AMQPS_PORT
ssl_options.certfile = $MSGCAP_BROKER_CERT
ssl_options.keyfile = $MSGCAP_BROKER_KEY
ssl_options.cacertfile = $MSGCAP_BROKER_CA
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = $mtls
auth_mechanisms.1 = PLAIN
auth_mechanisms.2 = AMQPLAIN
auth_mechanisms.3 = EXTERNAL
ssl_cert_login_from = common_name
EOF
}

# The user SASL EXTERNAL logs in as (MSGCAP_AMQPS_CERT_USER): no password, all of vhost /.
_cert_user() {
    local ctl=/usr/lib/rabbitmq/bin/rabbitmqctl
    # add_user fails when a restart finds the user in the node's data: the next two still hold
    "$ctl" -q add_user "$CERT_USER" "$(python3 -c 'import secrets; print(secrets.token_hex(16))')" \
        >/dev/null 2>&1 || true
    "$ctl" -q clear_password "$CERT_USER" >/dev/null
    "$ctl" -q set_permissions -p / "$CERT_USER" '.*' '.*' '.*' >/dev/null
}

start() {
    if broker_alive && _ports_open; then
        echo "rabbitmq already running (pid $(cat "$PIDFILE"), $(_urls))"
        return 0
    fi
    if _port_open "$PORT"; then
        echo "rabbitmq: port 127.0.0.1:$PORT is in use by another process" >&2
        return 1
    fi
    ensure_rabbitmq_package
    mkdir -p "$DIR"
    _write_conf || return 1
    _node_env
    # setsid: the node does not get the caller's signals (Ctrl-C in a test run).
    setsid /usr/lib/rabbitmq/bin/rabbitmq-server >"$LOG" 2>&1 </dev/null &
    echo $! > "$PIDFILE"
    broker_wait_started "rabbitmq: the node" "_ports_open" \
        "rabbitmq: port $PORT${AMQP_PORT:+ or $AMQP_PORT}${AMQPS_PORT:+ or $AMQPS_PORT} not open" \
        || return 1
    [ -z "$CERT_USER" ] || _cert_user
    echo "rabbitmq started (pid $(cat "$PIDFILE"), $(_urls), dir $DIR)"
}

stop() {
    [ ! -f "$DIR/watchdog.pid" ] || stop_pid_file "$DIR/watchdog.pid"
    if ! broker_alive; then
        rm -f "$PIDFILE"
        echo "rabbitmq not running"
        return 0
    fi
    local pid
    pid="$(cat "$PIDFILE")"
    _node_env
    stop_pid_file "$PIDFILE"   # the script's shell: its TERM handler stops the Erlang VM
    [ ! -f "$RABBITMQ_PID_FILE" ] || stop_pid_file "$RABBITMQ_PID_FILE"
    # the node's own epmd outlives it; it has no node left to serve
    epmd -port "$ERL_EPMD_PORT" -kill >/dev/null 2>&1 || true
    echo "rabbitmq stopped (pid $pid)"
}

status() {
    if broker_alive && _ports_open; then
        echo "running pid $(cat "$PIDFILE") $(_urls)"
    else
        echo "not running"
        return 1
    fi
}

# What the node holds, as rabbitmqctl sees it (not through STOMP or AMQP, which may declare).
queues() {
    broker_alive || { echo "not running" >&2; return 1; }
    _node_env
    /usr/lib/rabbitmq/bin/rabbitmqctl -q list_queues --no-table-headers name messages durable
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    restart) stop; start ;;
    status) status ;;
    queues) queues ;;
    *) echo "usage: $0 start|stop|restart|status|queues" >&2; exit 2 ;;
esac
