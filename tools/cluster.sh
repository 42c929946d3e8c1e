#!/usr/bin/env bash
# tools/cluster.sh: owns throwaway PostgreSQL 15 clusters: the one way the shell tools, the RESP
# suites (regress/resp), the benchmark (bench/run), the demo and the stress test start a server.
# (TAP tests, regress/t/*.pl, use PostgreSQL::Test::Cluster; pg_regress its own instance.)
#
#   tools/cluster.sh start DIR PORT|auto [extra postgresql.conf lines...]
#   tools/cluster.sh standby PRIMARY_DIR DIR PORT|auto [extra postgresql.conf lines...]
#                                      a streaming hot standby of the running cluster in PRIMARY_DIR
#   tools/cluster.sh stop DIR          fast shutdown (no error if not running)
#   tools/cluster.sh restart DIR       fast shutdown and start again (for PGC_POSTMASTER settings)
#   tools/cluster.sh destroy DIR       stop, then remove DIR (only a DIR made by `start` or `standby`)
#   tools/cluster.sh psql DIR [psql args...]
#   tools/cluster.sh status DIR        exit 0 if running
#   tools/cluster.sh port DIR          print the port
#   tools/cluster.sh conninfo DIR      print a libpq conninfo (TCP on 127.0.0.1)
#   tools/cluster.sh freeport          print a free TCP port on 127.0.0.1
#   tools/cluster.sh hba DIR LINE...   pg_hba.conf becomes "local all all trust" plus LINEs; reload
#   tools/cluster.sh as-server CMD...  runs CMD as the servers' OS user (postgres when run as root), from /
#
# Layout: DIR/data (PGDATA), DIR/sock (unix socket dir), DIR/server.log, DIR/port.
# The cluster listens on 127.0.0.1 and DIR/sock only, with trust authentication (it is
# throwaway), fsync off, and shared_preload_libraries = 'local_cache'. Extra lines are
# appended to postgresql.conf, so a later `shared_preload_libraries = ''` overrides it.
# A standby is laid out the same way: pg_basebackup -R of the primary (so its postgresql.conf,
# the library preloaded, is the primary's, then its own port, socket directory, hot_standby = on
# and the extra lines); `standby` returns once it streams from the primary.
# When run as root, the cluster belongs to the `postgres` OS user (servers refuse root):
# DIR and its parents must then be reachable by that user (e.g. under /tmp).
set -euo pipefail

PG_CONFIG=${PG_CONFIG:-pg_config}
PGBIN=$("$PG_CONFIG" --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
MARKER=.local_cache_cluster

die() { echo "cluster.sh: $*" >&2; exit 1; }

usage() {
    sed -n '6,19p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# The OS user that owns (or will own) the server processes.
server_user() {
    if [[ $(id -u) -eq 0 ]]; then echo postgres; else id -un; fi
}

# Run a command as the server user (from /, so an unreadable cwd does not matter).
as_server() {
    if [[ $(id -u) -eq 0 ]]; then
        (cd / && runuser -u postgres -- "$@")
    else
        "$@"
    fi
}

abspath() { realpath -m -- "$1"; }

port_in_use() {
    # A successful TCP connect means somebody listens; a refused one means free.
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Below the kernel's ephemeral range: a port that some client connection holds as its local end
# looks free to port_in_use but cannot be bound, so a server started on it would never listen.
freeport() {
    local i p low=32768 high
    read -r low high </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    ((low > 16000)) || low=32768
    for i in $(seq 1 200); do
        p=$(( 15000 + (RANDOM * 32768 + RANDOM) % (low - 15000) ))
        if ! port_in_use "$p" && [[ ! -e "/tmp/.s.PGSQL.$p" ]]; then
            echo "$p"
            return 0
        fi
    done
    die "no free port found"
}

show_log() {
    local dir=$1
    if [[ -f "$dir/server.log" ]]; then
        echo "---- last lines of $dir/server.log ----" >&2
        tail -n 40 "$dir/server.log" >&2 || true
        echo "----" >&2
    fi
}

is_running() {
    local dir=$1
    [[ -f "$dir/data/PG_VERSION" ]] || return 1
    as_server "$PGBIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

# new_dir DIR: checks DIR can hold a new cluster and creates DIR/sock, DIR/server.log, the marker
new_dir() {
    local dir=$1 user
    if [[ -e "$dir" ]] && [[ -n "$(ls -A "$dir" 2>/dev/null)" ]]; then
        die "$dir exists and is not empty (use: $0 destroy $dir)"
    fi
    # unix socket paths are limited to 107 bytes
    if (( ${#dir} + 20 > 107 )); then
        die "$dir is too long for a unix socket path; choose a shorter DIR"
    fi
    user=$(server_user)
    id "$user" >/dev/null 2>&1 || die "OS user '$user' does not exist (is postgresql-15 installed? run tools/deps.sh)"
    [[ -x "$PGBIN/initdb" ]] || die "$PGBIN/initdb not found (run tools/deps.sh)"

    local created=0
    [[ -e "$dir" ]] || created=1
    mkdir -p "$dir/sock"
    touch "$dir/$MARKER" "$dir/server.log"
    if [[ $(id -u) -eq 0 ]]; then
        chown -R postgres: "$dir"
        if ! runuser -u postgres -- test -w "$dir"; then
            if (( created )); then rm -rf -- "$dir"; fi
            die "the postgres user cannot write $dir (a parent directory is not accessible); use a DIR under /tmp"
        fi
    fi
}

# run_server DIR PORT AUTO: starts the server of DIR on PORT; with AUTO, another free port when
# somebody took PORT meanwhile. Prints the port it listens on.
run_server() {
    local dir=$1 port=$2 auto=$3 attempt
    for attempt in 1 2 3 4 5; do
        echo "$port" >"$dir/port"
        if as_server "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
                >"$dir/pg_ctl.log" 2>&1; then
            echo "$port"
            return 0
        fi
        if (( auto && attempt < 5 )) && grep -q "could not bind\|could not create any TCP/IP sockets" "$dir/server.log"; then
            # somebody took the port meanwhile: pick another one (the last `port` line wins)
            port=$(freeport)
            echo "port = $port" >>"$dir/data/postgresql.conf"
            continue
        fi
        cat "$dir/pg_ctl.log" >&2
        show_log "$dir"
        die "server in $dir did not start"
    done
}

# port_arg PORT|auto: the port to start on (a free one for auto)
port_arg() {
    local port=$1
    [[ "$port" != auto ]] || port=$(freeport)
    [[ "$port" =~ ^[0-9]+$ ]] || die "bad port '$port'"
    echo "$port"
}

cmd_start() {
    [[ $# -ge 2 ]] || usage
    local dir port auto=0 line
    dir=$(abspath "$1"); port=$2; shift 2
    [[ "$port" != auto ]] || auto=1
    port=$(port_arg "$port")
    new_dir "$dir"

    if ! as_server "$PGBIN/initdb" -D "$dir/data" --no-sync --locale=C --encoding=UTF8 \
            --auth-local=trust --auth-host=trust >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        die "initdb failed for $dir"
    fi

    {
        echo
        echo "# ---- tools/cluster.sh ----"
        echo "listen_addresses = '127.0.0.1'"
        echo "port = $port"
        echo "unix_socket_directories = '$dir/sock'"
        echo "shared_preload_libraries = 'local_cache'"
        echo "fsync = off"
        echo "synchronous_commit = off"
        echo "full_page_writes = off"
        echo "logging_collector = off"
        echo "log_min_messages = warning"
        echo "log_line_prefix = '%m [%p] '"
        for line in "$@"; do echo "$line"; done
    } >>"$dir/data/postgresql.conf"
    port=$(run_server "$dir" "$port" "$auto")
    echo "cluster.sh: started $dir on 127.0.0.1:$port (socket dir $dir/sock, owner $(server_user))"
    if (( auto )); then echo "port=$port"; fi
}

# A streaming replica: pg_basebackup over the primary's trusted loopback replication connection
# (initdb's pg_hba.conf has it; `hba` replaces it), -R for primary_conninfo and standby.signal.
cmd_standby() {
    [[ $# -ge 3 ]] || usage
    local primary dir port auto=0 line i
    primary=$(abspath "$1"); dir=$(abspath "$2"); port=$3; shift 3
    [[ -f "$primary/$MARKER" ]] && is_running "$primary" || die "no running cluster in $primary"
    [[ "$port" != auto ]] || auto=1
    port=$(port_arg "$port")
    new_dir "$dir"

    if ! as_server "$PGBIN/pg_basebackup" -h 127.0.0.1 -p "$(cmd_port "$primary")" -U "$(stat -c %U "$primary/data")" \
            -D "$dir/data" -R -X stream -c fast --no-sync >"$dir/basebackup.log" 2>&1; then
        cat "$dir/basebackup.log" >&2
        die "pg_basebackup of $primary failed"
    fi
    {
        echo
        echo "# ---- tools/cluster.sh standby ----"
        echo "port = $port"
        echo "unix_socket_directories = '$dir/sock'"
        echo "hot_standby = on"
        for line in "$@"; do echo "$line"; done
    } | as_server tee -a "$dir/data/postgresql.conf" >/dev/null
    port=$(run_server "$dir" "$port" "$auto")
    for i in $(seq 1 300); do
        [[ $(cmd_psql "$dir" -qAt -c "SELECT status FROM pg_stat_wal_receiver" 2>/dev/null) == streaming ]] && break
        ((i < 300)) || { show_log "$dir"; die "the standby in $dir does not stream from $primary"; }
        sleep 0.1
    done
    echo "cluster.sh: started standby $dir of $primary on 127.0.0.1:$port (socket dir $dir/sock, owner $(server_user))"
    if (( auto )); then echo "port=$port"; fi
}

cmd_stop() {
    [[ $# -eq 1 ]] || usage
    local dir; dir=$(abspath "$1")
    [[ -f "$dir/data/PG_VERSION" ]] || { echo "cluster.sh: no cluster in $dir"; return 0; }
    if is_running "$dir"; then
        if ! as_server "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null; then
            show_log "$dir"
            echo "cluster.sh: fast stop failed, trying immediate" >&2
            as_server "$PGBIN/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null || {
                show_log "$dir"; die "could not stop the server in $dir"; }
        fi
        echo "cluster.sh: stopped $dir"
    fi
}

cmd_restart() {
    [[ $# -eq 1 ]] || usage
    local dir; dir=$(abspath "$1")
    [[ -f "$dir/$MARKER" ]] || die "no cluster made by $0 in $dir"
    if ! as_server "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 60 restart >"$dir/pg_ctl.log" 2>&1; then
        cat "$dir/pg_ctl.log" >&2
        show_log "$dir"
        die "server in $dir did not restart"
    fi
    echo "cluster.sh: restarted $dir"
}

cmd_destroy() {
    [[ $# -eq 1 ]] || usage
    local dir; dir=$(abspath "$1")
    [[ -e "$dir" ]] || return 0
    if [[ -d "$dir" && -z "$(ls -A "$dir")" ]]; then rmdir -- "$dir"; return 0; fi
    [[ -f "$dir/$MARKER" ]] || die "$dir was not created by $0 start or standby; not removing it"
    cmd_stop "$dir"
    rm -rf -- "$dir"
    echo "cluster.sh: removed $dir"
}

cmd_port() {
    [[ $# -eq 1 ]] || usage
    local dir; dir=$(abspath "$1")
    [[ -f "$dir/port" ]] || die "no cluster in $dir"
    cat "$dir/port"
}

cmd_psql() {
    [[ $# -ge 1 ]] || usage
    local dir port; dir=$(abspath "$1"); shift
    port=$(cmd_port "$dir")
    # trust auth: connect as the server user, whoever we are.
    "$PGBIN/psql" -X -h "$dir/sock" -p "$port" -U "$(stat -c %U "$dir/data")" -d postgres "$@"
}

cmd_hba() {
    [[ $# -ge 1 ]] || usage
    local dir line; dir=$(abspath "$1"); shift
    [[ -f "$dir/data/PG_VERSION" ]] || die "no cluster in $dir"
    {
        echo "# ---- tools/cluster.sh hba ----"
        echo "local all all trust"
        for line in "$@"; do echo "$line"; done
    } >"$dir/data/pg_hba.conf"
    as_server "$PGBIN/pg_ctl" -D "$dir/data" reload >/dev/null
}

cmd_conninfo() {
    [[ $# -eq 1 ]] || usage
    local dir port; dir=$(abspath "$1")
    port=$(cmd_port "$dir")
    echo "host=127.0.0.1 port=$port user=$(stat -c %U "$dir/data") dbname=postgres"
}

[[ $# -ge 1 ]] || usage
cmd=$1; shift
case "$cmd" in
    start)    cmd_start "$@" ;;
    standby)  cmd_standby "$@" ;;
    stop)     cmd_stop "$@" ;;
    restart)  cmd_restart "$@" ;;
    destroy)  cmd_destroy "$@" ;;
    psql)     cmd_psql "$@" ;;
    status)   [[ $# -eq 1 ]] || usage; is_running "$(abspath "$1")" ;;
    port)     cmd_port "$@" ;;
    conninfo) cmd_conninfo "$@" ;;
    freeport) freeport ;;
    hba)      cmd_hba "$@" ;;
    as-server) [[ $# -ge 1 ]] || usage; as_server "$@" ;;
    *)        usage ;;
esac
