#!/usr/bin/env bash
# regress/resp/redis_cli.sh: scripted tests of the RESP server with redis-cli (Debian's
# redis-tools) and byte-exact raw-socket checks (regress/resp/resp_raw.pl), on a throwaway
# cluster of its own (tools/cluster.sh). Needs the extension installed (make install).
#
#   regress/resp/redis_cli.sh              every suite, as root (servers run as postgres) or not
#   regress/resp/redis_cli.sh auth limits  only these suites (always in the order below)
#   KEEP_TMP=1 regress/resp/redis_cli.sh   keep the cluster directory and its log
#   RESP_IO_URING=off regress/resp/redis_cli.sh  connections through epoll, not io_uring
#
# It starts the one cluster (regress/resp/lib.sh: helpers, cluster, fixtures), then sources the
# suites of regress/resp/suites/ in this order, in this shell:
#   commands     GET/MGET/EXISTS, JSON byte for byte, HGET/HMGET/HGETALL, read after commit,
#                unknown commands, arity, writes refused
#   connection   PING, ECHO, HELLO, SELECT, DBSIZE, INFO, CONFIG, COMMAND, CLIENT, RESET, QUIT
#   protocol     protocol errors, inline commands, pipelining
#   clients      SCAN and KEYS against SQL; redis-cli --scan/--bigkeys/--memkeys/--stat/--latency,
#                redis-benchmark
#   writes       SET/MSET/DEL/HSET/HDEL/HINCRBY through SQL, errors, locks, shared commits, MULTI
#                and WATCH
#   tenants      one role's triggers leave nothing behind for another's commands; RESP writes
#                against SQL writes, type by type; text outside the server encoding refused
#   keys         text, varchar, char(n), uuid and composite keys: canonical ids, byte-exact reads,
#                nil for other spellings, SCAN/KEYS escaping and long keys, freshness, writes
#   auth         privileges (NOPERM), row-level security, AUTH, no password in the log
#   sharing      what one role sees of another (CLIENT LIST, DBSIZE), WATCH with SELECT only
#   limits       max clients, idle timeout, request size, output buffer limit
#   monitoring   SLOWLOG and LATENCY; prometheus-redis-exporter scrapes without errors
#   lifecycle    worker restarts, fast and smart shutdown (last: it stops the cluster)
# After each suite but lifecycle, one more case: the server log shows no crash during it.
# A new case goes into the suite whose promise it checks; a new suite into SUITES below.
#
# Every case compares what came back with what was expected and prints both when they differ.
# The last line is `N passed, N failed`; the exit status is 0 only if nothing failed.
# Everything listens on 127.0.0.1 only; every wait is bounded.
set -uo pipefail
export LC_ALL=C PGCLIENTENCODING=UTF8
unset PGTZ PGOPTIONS PGDATESTYLE PGHOST PGPORT PGUSER PGDATABASE PGSERVICE PGPASSWORD

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SUITES=(commands connection protocol clients writes tenants keys auth sharing limits monitoring lifecycle)

# The suites named on the command line (suites/auth.sh and auth.sh name auth too), in SUITES'
# order; all of them without arguments.
wanted=()
for arg in "$@"; do
    arg=${arg##*/}
    arg=${arg%.sh}
    if [[ " ${SUITES[*]} " != *" $arg "* ]]; then
        echo "redis_cli.sh: no suite '$arg'; the suites: ${SUITES[*]}"
        echo "0 passed, 1 failed"
        exit 2
    fi
    wanted+=("$arg")
done
run=()
for suite in "${SUITES[@]}"; do
    if ((${#wanted[@]} == 0)) || [[ " ${wanted[*]} " == *" $suite "* ]]; then run+=("$suite"); fi
done

# shellcheck source=regress/resp/lib.sh
source "$HERE/lib.sh"
require_tools
start_cluster

for suite in "${run[@]}"; do
    suite_log_start=$(log_size)
    # shellcheck source=/dev/null
    source "$HERE/suites/$suite.sh"
    # A crashed worker is restarted with the whole cluster, and a suite's later cases may pass
    # anyway; lifecycle kills workers on purpose and checks its own crashes.
    if [[ "$suite" != lifecycle ]]; then
        check "$suite: no server process crashed or exited uncleanly" "" "$(log_since "$suite_log_start" | crash_lines)"
    fi
done

check "no password appears in the server log (end of run)" "" "$(passwords_leaked)"

echo
if ((FAILED > 0)); then
    # A worker that ended or a process that crashed: its lines may be long gone from the tail.
    echo "---- worker exits, crashes and errors in $LOG ----"
    grep -E 'exited with exit code|terminated by signal|PANIC|FATAL|ERROR|local_cache RESP: ' "$LOG" | tail -n 60
    echo "---- last lines of $LOG ----"
    tail -n 40 "$LOG"
    echo "----"
fi
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
