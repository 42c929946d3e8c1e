#!/usr/bin/env bash
# tools/patroni.sh: owns a throwaway Patroni cluster on this host: one etcd member and three
# Patroni nodes (Debian's patroni and etcd-server) managing PostgreSQL 15 with local_cache
# preloaded and its RESP server in cluster mode. The failover test
# (regress/resp/node/checks/failover.check.mjs) and bench/failover run through it.
#
#   tools/patroni.sh start DIR [name=value...]   etcd and three nodes; returns once a leader and
#                                      two streaming replicas run (extra PostgreSQL parameters
#                                      go into every node's postgresql.parameters)
#   tools/patroni.sh stop DIR          stops the Patroni nodes (and their servers), then etcd
#   tools/patroni.sh destroy DIR       stop, then remove DIR (only a DIR made by `start`)
#   tools/patroni.sh nodes DIR         one line per node: name pg_port resp_port api_port role
#   tools/patroni.sh leader DIR        the leader's name
#   tools/patroni.sh wait DIR [SECS]   until a leader and two streaming replicas run (default 60 s)
#   tools/patroni.sh switchover DIR [CANDIDATE]   patronictl switchover --force
#   tools/patroni.sh kill-primary DIR [SQL]   kill -9 of the leader's postmaster; prints its name.
#                                      With SQL: first its walsenders stop (SIGSTOP), SQL runs on
#                                      it, then they are killed with it: a crash that loses SQL's
#                                      writes, which the old primary has and must rewind
#   tools/patroni.sh status DIR        patronictl list
#   tools/patroni.sh psql DIR NAME|leader [psql args...]
#   tools/patroni.sh patronictl DIR [args...]
#
# Layout: DIR/etcd/ (its data, etcd.log), DIR/patronictl.yml, DIR/nodes (the table `nodes`
# prints without roles), DIR/nodeN/ (patroni.yml, patroni.log, data/, sock/, log/postgresql.log).
# A node's name is `nodeN@127.0.0.1:RESP_PORT`: Patroni makes the member name the standby's
# application_name, which is where the primary's RESP server finds the standby's endpoint. Each
# node's RESP port is its PostgreSQL port + 1, so that a standby finds its primary's RESP port
# from its WAL receiver's port without a setting (docs/PATRONI.md). Patroni loops every second
# with a 10 s leader TTL, and primary_start_timeout = 0: a crashed primary fails over at once
# instead of being restarted in place. Everything runs as `postgres` when run as root (DIR must
# then be reachable by that user, e.g. under /tmp); `start` stops what it started if it fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
PGBIN=$("$PG_CONFIG" --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
CLUSTER_SH=$ROOT/tools/cluster.sh
MARKER=.local_cache_patroni
NODES=3

die() { echo "patroni.sh: $*" >&2; exit 1; }

usage() {
    sed -n '7,22p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

as_server() { "$CLUSTER_SH" as-server "$@"; }

abspath() { realpath -m -- "$1"; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# run_daemon PIDFILE LOG cmd...: starts cmd in the background as the server user; its pid (the
# daemon's own, not runuser's) goes to PIDFILE.
run_daemon() {
    local pidfile=$1 log=$2
    shift 2
    as_server bash -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" </dev/null >>"$log" 2>&1 &
}

# stop_daemon PIDFILE SECS: SIGTERM, then SIGKILL after SECS; no error if it is not running.
stop_daemon() {
    local pidfile=$1 secs=$2 pid i
    [[ -f "$pidfile" ]] || return 0
    pid=$(cat "$pidfile")
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < secs * 10; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
}

# free_pairs N: N distinct free ports, each with its successor free too (a node's RESP port).
free_pairs() {
    local want=$1 got=() p
    while ((${#got[@]} < want)); do
        p=$("$CLUSTER_SH" freeport)
        port_in_use $((p + 1)) && continue
        [[ " ${got[*]} " == *" $p "* || " ${got[*]} " == *" $((p + 1)) "* || " ${got[*]} " == *" $((p - 1)) "* ]] && continue
        got+=("$p")
    done
    echo "${got[@]}"
}

node_yml() { # DIR N PG_PORT API_PORT ETCD_PORT PARAMS...
    local dir=$1 n=$2 pg=$3 api=$4 etcd=$5 nd param
    shift 5
    nd=$dir/node$n
    cat <<EOF
scope: local_cache
name: node$n@127.0.0.1:$((pg + 1))
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$api
  connect_address: 127.0.0.1:$api
etcd3:
  host: 127.0.0.1:$etcd
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 1048576
    primary_start_timeout: 0
    postgresql:
      use_pg_rewind: true
      use_slots: true
  initdb:
    - encoding: UTF8
    - locale: C
    - auth-local: trust
    - auth-host: trust
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$pg
  connect_address: 127.0.0.1:$pg
  data_dir: $nd/data
  bin_dir: $PGBIN
  pgpass: $nd/pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: '$nd/sock'
    shared_preload_libraries: 'local_cache'
    wal_log_hints: 'on'
    wal_receiver_status_interval: 1
    wal_retrieve_retry_interval: '1s'
    fsync: 'off'
    full_page_writes: 'on'
    logging_collector: 'on'
    log_directory: '$nd/log'
    log_filename: 'postgresql.log'
    log_line_prefix: '%m [%p] '
    local_cache.resp_port: $((pg + 1))
    local_cache.resp_cluster: 'on'
    local_cache.resp_workers: 1
EOF
    for param in "$@"; do
        printf '    %s: '"'"'%s'"'"'\n' "${param%%=*}" "${param#*=}"
    done
}

node_lines() { # DIR: name pg resp api n
    grep -v '^#' "$1/nodes"
}

patronictl_() {
    local dir=$1
    shift
    as_server patronictl -c "$dir/patronictl.yml" "$@"
}

# The members as JSON (patronictl list -f json).
members_json() { patronictl_ "$1" list -f json 2>/dev/null; }

cmd_leader() {
    [[ $# -eq 1 ]] || usage
    members_json "$(abspath "$1")" | python3 -c '
import json, sys
for m in json.load(sys.stdin):
    if m["Role"] == "Leader" and m["State"] == "running":
        print(m["Member"])' | head -n 1
}

# True once a leader runs and every other node streams from it (Patroni 3.0.2 says `running`
# of a replica whether it streams or not: the leader's pg_stat_replication does).
healthy() {
    local leader
    leader=$(cmd_leader "$1")
    [[ -n "$leader" ]] || return 1
    [[ $(cmd_psql "$1" "$leader" -Atq -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" \
        2>/dev/null) == $((NODES - 1)) ]]
}

cmd_wait() {
    [[ $# -ge 1 && $# -le 2 ]] || usage
    local dir secs=${2:-60} i
    dir=$(abspath "$1")
    for ((i = 0; i < secs * 5; i++)); do
        healthy "$dir" && return 0
        sleep 0.2
    done
    patronictl_ "$dir" list >&2 || true
    die "no leader with $((NODES - 1)) streaming replicas after ${secs}s"
}

cmd_start() {
    [[ $# -ge 1 ]] || usage
    local dir n ports etcd_ports etcd peer apis pg api
    dir=$(abspath "$1"); shift
    command -v patroni >/dev/null && command -v etcd >/dev/null ||
        die "patroni or etcd is not installed (tools/deps.sh installs patroni, etcd-server, python3-etcd)"
    [[ ! -e "$dir" || -z "$(ls -A "$dir" 2>/dev/null)" ]] || die "$dir exists and is not empty (use: $0 destroy $dir)"
    (( ${#dir} + 30 <= 107 )) || die "$dir is too long for a unix socket path; choose a shorter DIR"
    mkdir -p "$dir/etcd"
    touch "$dir/$MARKER"
    STARTED=0
    trap '((STARTED)) || { echo "patroni.sh: start failed; stopping what it started" >&2; cmd_stop "$dir" >&2 || true; }' EXIT

    read -r -a ports <<<"$(free_pairs "$NODES")"
    etcd_ports=()
    while ((${#etcd_ports[@]} < NODES + 2)); do
        n=$("$CLUSTER_SH" freeport)
        [[ " ${ports[*]} ${etcd_ports[*]} " == *" $n "* || " ${ports[*]} " == *" $((n - 1)) "* ]] && continue
        etcd_ports+=("$n")
    done
    etcd=${etcd_ports[0]} peer=${etcd_ports[1]} apis=("${etcd_ports[@]:2}")

    {
        echo "# name pg_port resp_port api_port n"
        for ((n = 1; n <= NODES; n++)); do
            pg=${ports[n - 1]} api=${apis[n - 1]}
            echo "node$n@127.0.0.1:$((pg + 1)) $pg $((pg + 1)) $api $n"
            mkdir -p "$dir/node$n/sock" "$dir/node$n/log"
            node_yml "$dir" "$n" "$pg" "$api" "$etcd" "$@" >"$dir/node$n/patroni.yml"
        done
    } >"$dir/nodes"
    sed -n '1,/^restapi:/p' "$dir/node1/patroni.yml" | sed '$d' >"$dir/patronictl.yml"
    printf 'etcd3:\n  host: 127.0.0.1:%s\n' "$etcd" >>"$dir/patronictl.yml"
    if [[ $(id -u) -eq 0 ]]; then
        chown -R postgres: "$dir"
        runuser -u postgres -- test -w "$dir" || die "the postgres user cannot write $dir; use a DIR under /tmp"
    fi
    chmod 700 "$dir"/node*

    run_daemon "$dir/etcd/pid" "$dir/etcd/etcd.log" etcd --name lc --data-dir "$dir/etcd/data" \
        --listen-client-urls "http://127.0.0.1:$etcd" --advertise-client-urls "http://127.0.0.1:$etcd" \
        --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "lc=http://127.0.0.1:$peer" --initial-cluster-state new
    for ((n = 0; n < 100; n++)); do
        curl -sf "http://127.0.0.1:$etcd/health" >/dev/null 2>&1 && break
        ((n < 99)) || { tail -n 20 "$dir/etcd/etcd.log" >&2; die "etcd does not answer on 127.0.0.1:$etcd"; }
        sleep 0.1
    done
    # The first node bootstraps (initdb), the others wait for it and clone it (pg_basebackup).
    run_daemon "$dir/node1/pid" "$dir/node1/patroni.log" patroni "$dir/node1/patroni.yml"
    for ((n = 0; n < 600; n++)); do
        [[ -n "$(cmd_leader "$dir")" ]] && break
        ((n < 599)) || { tail -n 30 "$dir/node1/patroni.log" >&2; die "node1 did not bootstrap"; }
        sleep 0.1
    done
    for ((n = 2; n <= NODES; n++)); do
        run_daemon "$dir/node$n/pid" "$dir/node$n/patroni.log" patroni "$dir/node$n/patroni.yml"
    done
    if ! (cmd_wait "$dir" 120); then
        for ((n = 1; n <= NODES; n++)); do tail -n 15 "$dir/node$n/patroni.log" >&2; done
        die "the cluster did not come up"
    fi
    STARTED=1
    echo "patroni.sh: started etcd on 127.0.0.1:$etcd and $NODES Patroni nodes in $dir:"
    cmd_nodes "$dir"
}

cmd_nodes() {
    [[ $# -eq 1 ]] || usage
    local dir name pg resp api n roles
    dir=$(abspath "$1")
    roles=$(members_json "$dir" | python3 -c '
import json, sys
for m in json.load(sys.stdin):
    print(m["Member"], m["Role"].lower().replace(" ", "_"))' || true)
    while read -r name pg resp api n; do
        echo "$name $pg $resp $api $(awk -v m="$name" '$1 == m { print $2 }' <<<"$roles" | grep . || echo down)"
    done < <(node_lines "$dir")
}

cmd_stop() {
    [[ $# -eq 1 ]] || usage
    local dir n data
    dir=$(abspath "$1")
    [[ -f "$dir/$MARKER" ]] || { echo "patroni.sh: no Patroni cluster in $dir"; return 0; }
    # Patroni stops its server on SIGTERM; all nodes at once, so that none takes over meanwhile.
    for ((n = 1; n <= NODES; n++)); do stop_daemon "$dir/node$n/pid" 60 & done
    wait
    for ((n = 1; n <= NODES; n++)); do
        data=$dir/node$n/data
        if [[ -f "$data/postmaster.pid" ]] && as_server "$PGBIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
            as_server "$PGBIN/pg_ctl" -D "$data" -m immediate -w -t 30 stop >/dev/null || true
        fi
    done
    stop_daemon "$dir/etcd/pid" 20
    echo "patroni.sh: stopped $dir"
}

cmd_destroy() {
    [[ $# -eq 1 ]] || usage
    local dir
    dir=$(abspath "$1")
    [[ -e "$dir" ]] || return 0
    [[ -f "$dir/$MARKER" ]] || die "$dir was not created by $0 start; not removing it"
    cmd_stop "$dir"
    rm -rf -- "$dir"
    echo "patroni.sh: removed $dir"
}

cmd_switchover() {
    [[ $# -ge 1 && $# -le 2 ]] || usage
    local dir leader args
    dir=$(abspath "$1")
    leader=$(cmd_leader "$dir")
    [[ -n "$leader" ]] || die "no leader"
    args=(switchover --leader "$leader" --force)
    [[ $# -eq 2 ]] && args+=(--candidate "$2")
    patronictl_ "$dir" "${args[@]}"
}

cmd_kill_primary() {
    [[ $# -ge 1 && $# -le 2 ]] || usage
    local dir leader n pid senders=()
    dir=$(abspath "$1")
    leader=$(cmd_leader "$dir")
    [[ -n "$leader" ]] || die "no leader"
    n=$(awk -v m="$leader" '$1 == m { print $5 }' < <(node_lines "$dir"))
    pid=$(head -n 1 "$dir/node$n/data/postmaster.pid")
    if [[ $# -eq 2 ]]; then
        read -r -a senders < <(cmd_psql "$dir" "$leader" -Atq -c "SELECT string_agg(pid::text, ' ') FROM pg_stat_replication")
        ((${#senders[@]} > 0)) || die "the leader has no walsender to stop"
        kill -STOP "${senders[@]}"
        cmd_psql "$dir" "$leader" -v ON_ERROR_STOP=1 -Atq -c "$2" >/dev/null || { kill -CONT "${senders[@]}"; die "SQL failed"; }
    fi
    kill -KILL "$pid" "${senders[@]}"
    echo "$leader"
}

cmd_psql() {
    [[ $# -ge 2 ]] || usage
    local dir name n pg
    dir=$(abspath "$1"); name=$2; shift 2
    [[ "$name" != leader ]] || name=$(cmd_leader "$dir")
    read -r n pg < <(awk -v m="$name" '$1 == m || "node" $5 == m { print $5, $2 }' < <(node_lines "$dir"))
    [[ -n "${n:-}" ]] || die "no node $name"
    "$PGBIN/psql" -X -h "$dir/node$n/sock" -p "$pg" -U postgres -d postgres "$@"
}

[[ $# -ge 1 ]] || usage
cmd=$1; shift
case "$cmd" in
    start)        cmd_start "$@" ;;
    stop)         cmd_stop "$@" ;;
    destroy)      cmd_destroy "$@" ;;
    nodes)        cmd_nodes "$@" ;;
    leader)       cmd_leader "$@" ;;
    wait)         cmd_wait "$@" ;;
    switchover)   cmd_switchover "$@" ;;
    kill-primary) cmd_kill_primary "$@" ;;
    status)       [[ $# -eq 1 ]] || usage; patronictl_ "$(abspath "$1")" list ;;
    psql)         cmd_psql "$@" ;;
    patronictl)   [[ $# -ge 1 ]] || usage; d=$(abspath "$1"); shift; patronictl_ "$d" "$@" ;;
    *)            usage ;;
esac
