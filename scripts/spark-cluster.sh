#!/usr/bin/env bash
# A private Spark standalone cluster for tests, benchmarks and trying `msgcap batch` on a cluster:
# one master and N workers on 127.0.0.1, run by the spark-class that the pip pyspark ships.
#
#   bash scripts/spark-cluster.sh start    # start; returns once every worker has registered
#   bash scripts/spark-cluster.sh stop     # stop the daemons this directory started (by pid)
#   bash scripts/spark-cluster.sh status   # "running spark://127.0.0.1:PORT workers N" or exit 1
#   bash scripts/spark-cluster.sh restart
#
# Environment:
#   MSGCAP_SPARK_DIR      private directory: conf/, logs/, work/, local/, pid files
#                         (default: .spark-cluster/ in the repository)
#   MSGCAP_SPARK_PORT     master port on 127.0.0.1 (default 7077)
#   MSGCAP_SPARK_WORKERS  number of workers (default 2)
#   MSGCAP_SPARK_CORES    cores per worker (default 1)
#   MSGCAP_SPARK_MEMORY   memory per worker (default 1g)
#   MSGCAP_SPARK_WAIT     seconds to wait for the workers to register (default 120)
#   MSGCAP_SPARK_PATH     PATH of the daemons (default /usr/bin:/bin): executors run `python3`
#                         from it unless the job ships its own (a plain Python, without msgcap)
#   MSGCAP_SPARK_OWNER    a pid: the cluster stops by itself once that process has exited
#                         (the test session that started it, should it be killed)
#
# Everything listens on loopback only (master, workers, their web UIs); the daemons use their own
# conf/ (no spark-defaults.conf of the machine) and write logs and executor work dirs under the
# private directory. Executors inherit the workers' environment, not the caller's.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
print_help_if_asked "$@"

DIR="${MSGCAP_SPARK_DIR:-$PWD/.spark-cluster}"
PORT="${MSGCAP_SPARK_PORT:-7077}"
WORKERS="${MSGCAP_SPARK_WORKERS:-2}"
CORES="${MSGCAP_SPARK_CORES:-1}"
MEMORY="${MSGCAP_SPARK_MEMORY:-1g}"
WAIT="${MSGCAP_SPARK_WAIT:-120}"
DAEMON_PATH="${MSGCAP_SPARK_PATH:-/usr/bin:/bin}"
OWNER="${MSGCAP_SPARK_OWNER:-}"
MASTER_URL="spark://127.0.0.1:$PORT"

_port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null
}

_alive() {  # pid file
    [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

_pidfiles() {
    ls "$DIR"/worker-*.pid 2>/dev/null || true
    [ ! -f "$DIR/master.pid" ] || echo "$DIR/master.pid"
}

_spark_home() {  # the pip pyspark's directory (its bin/spark-class, jars/, python/lib/)
    local python="$VENV/bin/python"
    [ -x "$python" ] || python="$(command -v python3)"
    "$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'
}

_launch() {  # name, class, args...: start a daemon in the background with a clean environment
    local name="$1"; shift
    # setsid: the daemons do not get the caller's signals (Ctrl-C in a test run)
    env -i HOME="$HOME" PATH="$DAEMON_PATH" LANG=C.UTF-8 \
        SPARK_HOME="$SPARK_HOME" SPARK_CONF_DIR="$DIR/conf" SPARK_LOG_DIR="$DIR/logs" \
        SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_DIRS="$DIR/local/$name" \
        SPARK_DAEMON_MEMORY=512m \
        setsid "$SPARK_CLASS" "$@" >"$DIR/logs/$name.out" 2>&1 </dev/null &
    echo $! > "$DIR/$name.pid"
}

_registered() {
    grep -c "Registering worker" "$DIR/logs/master.out" 2>/dev/null || true
}

_wait_for() {  # description, test command...
    local what="$1"; shift
    local deadline=$((SECONDS + WAIT))
    until "$@"; do
        for f in $(_pidfiles); do
            if ! _alive "$f"; then
                local name; name="$(basename "$f" .pid)"
                echo "spark-cluster: $name exited during start; last lines of its log:" >&2
                tail -n 20 "$DIR/logs/$name.out" >&2 || true
                stop >/dev/null || true
                return 1
            fi
        done
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "spark-cluster: $what not done after ${WAIT}s; see $DIR/logs" >&2
            stop >/dev/null || true
            return 1
        fi
        sleep 0.2
    done
}

_all_registered() {
    [ "$(_registered)" -ge "$WORKERS" ]
}

start() {
    if _alive "$DIR/master.pid" && _port_open; then
        echo "spark cluster already running ($MASTER_URL, dir $DIR)"
        return 0
    fi
    if _port_open; then
        echo "spark-cluster: port 127.0.0.1:$PORT is in use by another process" >&2
        return 1
    fi
    SPARK_HOME="$(_spark_home)" || {
        echo "spark-cluster: no pyspark (bash scripts/test.sh installs it into $VENV)" >&2
        return 1
    }
    SPARK_CLASS="$SPARK_HOME/bin/spark-class"
    rm -rf "$DIR/logs" "$DIR/work" "$DIR/local"
    mkdir -p "$DIR/conf" "$DIR/logs" "$DIR/work" "$DIR/local"
    [ -f "$DIR/.gitignore" ] || echo '*' > "$DIR/.gitignore"
    # no REST submission server (a fixed port, and not needed)
    echo "spark.master.rest.enabled false" > "$DIR/conf/spark-defaults.conf"
    _launch master org.apache.spark.deploy.master.Master \
        --host 127.0.0.1 --port "$PORT" --webui-port 0
    _wait_for "master start" _port_open
    local i
    for i in $(seq 1 "$WORKERS"); do
        _launch "worker-$i" org.apache.spark.deploy.worker.Worker \
            --host 127.0.0.1 --port 0 --webui-port 0 --cores "$CORES" --memory "$MEMORY" \
            --work-dir "$DIR/work/worker-$i" "$MASTER_URL"
    done
    _wait_for "registration of $WORKERS workers" _all_registered
    [ -z "$OWNER" ] || stop_when_gone "$OWNER" "$DIR/watchdog.pid"
    echo "spark cluster started ($MASTER_URL, $WORKERS workers × $CORES cores, dir $DIR)"
}


stop() {
    local f found=0
    [ ! -f "$DIR/watchdog.pid" ] || stop_pid_file "$DIR/watchdog.pid"
    for f in $(_pidfiles); do  # workers first: they stop their executors
        found=1
        stop_pid_file "$f"
    done
    if [ "$found" = 0 ]; then
        echo "spark cluster not running"
    else
        echo "spark cluster stopped (dir $DIR)"
    fi
}

status() {
    if _alive "$DIR/master.pid" && _port_open; then
        local n=0 f
        for f in "$DIR"/worker-*.pid; do
            if _alive "$f"; then n=$((n + 1)); fi
        done
        echo "running $MASTER_URL workers $n"
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
