# Shared set-up for scripts/*.sh: a project virtualenv and the system packages tests need.
# Sourced, not run.
VENV="${MSGCAP_VENV:-$PWD/.venv}"

# `bash scripts/NAME.sh --help` (or -h): the calling script's header comment on stdout, exit 0.
print_help_if_asked() {
    case "${1:-}" in
        -h|--help)
            awk 'NR == 1 && /^#!/ { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' \
                "$(dirname "${BASH_SOURCE[0]}")/$(basename "$0")"
            exit 0 ;;
    esac
}

_sudo() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

_apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    _sudo apt-get update -qq >/dev/null
    _sudo apt-get install -y -qq "$@" >/dev/null
}

# ensure_venv: msgcap and its runtime dependencies in $VENV (editable: it follows the checkout);
# ensure_venv test: the test extras too (pytest, pyspark, fuzzing and type tools: ~700 MB more,
# and python-qpid-proton, the AMQP 1.0 client, which ensure_venv amqp installs alone, and JPype,
# for a JMS provider's own client, which ensure_venv jms installs alone).
ensure_venv() {
    local extras="${1:-}" modules="msgcap, lxml, elementpath, stomp"
    case "$extras" in test|amqp) modules="$modules, proton" ;; esac
    case "$extras" in test|jms) modules="$modules, jpype" ;; esac
    [ "$extras" != test ] || modules="$modules, pyspark, hypothesis, atheris, xdist"
    local stamp="$VENV/.installed${extras:+-$extras}"
    if [ ! -x "$VENV/bin/python" ]; then
        python3 -m venv "$VENV" 2>/dev/null || { _apt_install python3-venv; python3 -m venv "$VENV"; }
    fi
    if ! "$VENV/bin/python" -c "import $modules" 2>/dev/null || [ pyproject.toml -nt "$stamp" ]; then
        echo "installing msgcap${extras:+ with its $extras extras} into $VENV ..." >&2
        "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
        case "$extras" in test|amqp) ensure_proton_build_tools ;; esac
        "$VENV/bin/python" -m pip install -q -e ".${extras:+[$extras]}"
        touch "$stamp"
    fi
    export PATH="$VENV/bin:$PATH"
}

# python-qpid-proton has no Linux wheel: pip builds it with gcc and the Python and OpenSSL headers
# (without OpenSSL's it builds, but amqps:// then fails at run time).
ensure_proton_build_tools() {
    if ! command -v gcc >/dev/null || [ ! -f /usr/include/openssl/ssl.h ] \
            || ! "$VENV/bin/python" -c 'import sysconfig, os, sys
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
        echo "installing gcc and the Python and OpenSSL headers (to build python-qpid-proton) ..." >&2
        _apt_install gcc python3-dev libssl-dev
    fi
}

ensure_activemq_package() {
    if [ ! -d /usr/share/activemq ]; then
        echo "installing the Debian activemq package ..." >&2
        _apt_install activemq
    fi
}

# The Debian package's own service is not used (scripts/rabbitmq.sh runs a private node); in a
# container without an init system its post-install start is refused, which is fine.
ensure_rabbitmq_package() {
    if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
        echo "installing the Debian rabbitmq-server package ..." >&2
        _apt_install rabbitmq-server
    fi
}

# ensure_artemis: the ActiveMQ Artemis binary distribution, fetched from Maven Central with
# Maven (installing Debian's maven and a JDK if missing) and unpacked once per machine under
# $MSGCAP_CACHE (default ~/.cache/msgcap); sets ARTEMIS_HOME. A lock keeps parallel test runs
# from unpacking it twice.
ensure_artemis() {
    local version="${MSGCAP_ARTEMIS_VERSION:-2.40.0}"
    local cache="${MSGCAP_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/msgcap}"
    ARTEMIS_HOME="$cache/apache-artemis-$version"
    [ -x "$ARTEMIS_HOME/bin/artemis" ] && return 0
    mkdir -p "$cache"
    (
        flock 9
        [ -x "$ARTEMIS_HOME/bin/artemis" ] && exit 0
        if ! command -v javac >/dev/null; then
            echo "installing a JDK (Artemis and the JMS test clients need Java 17) ..." >&2
            _apt_install default-jdk-headless
        fi
        if ! command -v mvn >/dev/null; then
            echo "installing Debian's maven (to fetch Artemis from Maven Central) ..." >&2
            _apt_install maven
        fi
        echo "fetching apache-artemis $version from Maven Central into $cache ..." >&2
        local tmp
        tmp="$(mktemp -d "$cache/.artemis-XXXXXX")"
        mvn -q -B -Dstyle.color=never dependency:copy \
            "-Dartifact=org.apache.activemq:apache-artemis:$version:tar.gz:bin" \
            "-DoutputDirectory=$tmp" >&2
        tar xzf "$tmp/apache-artemis-$version-bin.tar.gz" -C "$tmp"
        mv "$tmp/apache-artemis-$version" "$ARTEMIS_HOME"
        rm -rf "$tmp"
    ) 9>"$cache/.artemis.lock"
    export ARTEMIS_HOME
}

# ensure_node_clients: the third-party producers' npm packages (tests/node/package.json, pinned
# by its package-lock.json: rhea, rhea-promise, stompit, @stomp/stompjs) installed once per lock
# file under $MSGCAP_CACHE/node-clients/HASH (outside the repository, installing Debian's nodejs
# and npm if missing); sets NODE_CLIENTS to its node_modules/.
ensure_node_clients() {
    local cache="${MSGCAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/msgcap}"
    local hash dir
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "installing Debian's nodejs and npm (the third-party test producers) ..." >&2
        _apt_install nodejs npm
    fi
    hash="$(cat tests/node/package.json tests/node/package-lock.json | sha256sum | cut -c1-16)"
    dir="$cache/node-clients/$hash"
    NODE_CLIENTS="$dir/node_modules"
    export NODE_CLIENTS
    [ -f "$dir/.installed" ] && return 0
    mkdir -p "$dir"
    (
        flock 9
        [ -f "$dir/.installed" ] && exit 0
        echo "installing the npm test producers into $dir ..." >&2
        cp tests/node/package.json tests/node/package-lock.json "$dir/"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
        touch "$dir/.installed"
    ) 9>"$dir/.lock"
}

# Stops the process whose pid FILE holds (TERM, KILL after 30 s) and removes FILE.
stop_pid_file() {
    local pid
    pid="$(cat "$1")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + 30))
        while kill -0 "$pid" 2>/dev/null; do
            if [ "$SECONDS" -ge "$deadline" ]; then
                kill -KILL "$pid" 2>/dev/null || true
                break
            fi
            sleep 0.2
        done
    fi
    rm -f "$1"
}

# Runs the calling script's own `stop` once process $1 has exited (a test run killed midway);
# the watcher's pid goes to file $2, so that `stop` can end the watcher too.
stop_when_gone() {
    (
        trap '' INT
        while kill -0 "$1" 2>/dev/null; do sleep 1; done
        rm -f "$2"
        stop >/dev/null
    ) </dev/null >/dev/null 2>&1 &
    echo $! > "$2"
}

# For a broker script (activemq.sh, rabbitmq.sh), which sets PIDFILE, LOG, WAIT, DIR, OWNER and
# defines `stop`: whether the process of PIDFILE runs.
broker_alive() {
    [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

# For a broker script whose broker is one process (activemq.sh, artemis.sh): the script's
# `stop`. Ends the watcher, then the process of PIDFILE (TERM: the broker's shutdown hook stops
# it cleanly; KILL after 30 s), saying so as $1.
broker_stop() {
    [ ! -f "$DIR/watchdog.pid" ] || stop_pid_file "$DIR/watchdog.pid"
    if ! broker_alive; then
        rm -f "$PIDFILE"
        echo "$1 not running"
        return 0
    fi
    local pid
    pid="$(cat "$PIDFILE")"
    stop_pid_file "$PIDFILE"
    echo "$1 stopped (pid $pid)"
}

# Waits until command $2 (split at blanks) succeeds (the broker's ports are open), at most WAIT
# seconds; then, with OWNER set, the broker stops by itself once that process has exited. Fails
# (1) when the process ($1 names it) exits meanwhile, with the last lines of LOG, or when time
# runs out ($3 says what is not ready), stopping the broker.
broker_wait_started() {
    local deadline=$((SECONDS + WAIT))
    until $2; do
        if ! broker_alive; then
            echo "$1 exited during start; last lines of $LOG:" >&2
            tail -n 20 "$LOG" >&2 || true
            rm -f "$PIDFILE"
            return 1
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "$3 after ${WAIT}s; see $LOG" >&2
            stop >/dev/null || true
            return 1
        fi
        sleep 0.2
    done
    [ -z "$OWNER" ] || stop_when_gone "$OWNER" "$DIR/watchdog.pid"
}

# Run rather than sourced: say what this file is.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    print_help_if_asked --help
fi
