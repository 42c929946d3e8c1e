# tools/test_clients.sh: tools/test.sh's steps that run clients against the RESP server, each on
# throwaway clusters of its own: the redis-cli suites (cli_step), the Node.js client tests
# (step_resp), the Patroni failover check (step_failover) and the randomized CLIENT TRACKING
# checker (step_tracking_check). Sourced by tools/test.sh, whose helpers (banner, record,
# run_logged, step_timeout) and variables (ROOT, LOGS, STATUS, PG_CONFIG) they use.

# regress/resp/redis_cli.sh prints `N passed, N failed` last; regress/resp/node/run.sh prints
# node's TAP summary (`# pass N`, `# fail N`, `# cancelled N`). Both start and destroy their own
# throwaway cluster (tools/cluster.sh: as postgres when we are root).
# cli_step NAME [SUITE...]: regress/resp/redis_cli.sh (those suites; all without) as step NAME.
cli_step() {
    local name=$1 rc=0 line p f
    shift
    banner "$name: regress/resp/redis_cli.sh $*"
    run_logged "$LOGS/$name.log" "$(step_timeout 720)" "$ROOT/regress/resp/redis_cli.sh" "$@" || rc=$?
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$LOGS/$name.log" | tail -n 1 || true)
    if [[ "$line" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        p=${BASH_REMATCH[1]}; f=${BASH_REMATCH[2]}
        if ((f > 0 || rc != 0)); then
            ((f == 0)) && f=1
            record "$name" FAILED "$p" "$f" "$p passed, $f failed (the FAIL lines above show expected and actual; exit $rc$(timed_out "$rc"))"
        else
            record "$name" PASSED "$p" 0 "$p passed"
        fi
    else
        record "$name" "NOT RUN" 0 1 "no summary line from regress/resp/redis_cli.sh (exit $rc$(timed_out "$rc")); see above"
    fi
}

step_resp() {
    local rc=0
    if [[ ${STATUS[install]:-} != ok ]]; then
        record resp-cli "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        record resp-cli-epoll "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        record resp-node "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        return
    fi
    cli_step resp-cli
    # The same server without io_uring: libuv's epoll, as where the kernel refuses a ring.
    RESP_IO_URING=off cli_step resp-cli-epoll commands connection protocol writes limits

    rc=0
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        record resp-node "NOT RUN" 0 1 "node and npm are not installed: regress/resp/node needs Node.js >= 20 with npm"
        return
    fi
    banner "resp-node: regress/resp/node/run.sh (node --test)"
    run_logged "$LOGS/resp_node.log" "$(step_timeout 420)" "$ROOT/regress/resp/node/run.sh" || rc=$?
    record_node_tests resp-node "$LOGS/resp_node.log" "$rc"
}

# record_node_tests NAME LOG RC: records a run.sh step by node --test's TAP summary (`# pass N`,
# `# fail N`, `# cancelled N`); each test counts as one.
record_node_tests() {
    local name=$1 log=$2 rc=$3 p f c
    p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$log" | tail -n 1)
    f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$log" | tail -n 1)
    c=$(sed -n 's/^# cancelled \([0-9]*\)$/\1/p' "$log" | tail -n 1)
    if [[ -z "$p" || -z "$f" ]]; then
        record "$name" "NOT RUN" 0 1 "no node --test summary (exit $rc$(timed_out "$rc")); see above"
        return
    fi
    f=$((f + ${c:-0}))
    if ((f > 0 || rc != 0)); then
        ((f == 0)) && f=1
        record "$name" FAILED "$p" "$f" "$p passed, $f failed (see the 'not ok' entries above; exit $rc$(timed_out "$rc"))"
    else
        record "$name" PASSED "$p" 0 "$p passed"
    fi
}

# Failover run by Patroni (etcd and three nodes, tools/patroni.sh): a switchover and a kill -9
# of the primary under cluster clients' writes and reads; each test of the check counts as one.
step_failover() {
    local rc=0 summary
    if [[ ${STATUS[install]:-} != ok ]]; then
        record failover "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        return
    fi
    if ! command -v patroni >/dev/null 2>&1 || ! command -v etcd >/dev/null 2>&1; then
        record failover SKIPPED 0 0 "patroni or etcd is not installed (Debian's patroni, etcd-server, python3-etcd: tools/deps.sh)"
        return
    fi
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        record failover "NOT RUN" 0 1 "node and npm are not installed: regress/resp/node needs Node.js >= 20 with npm"
        return
    fi
    banner "failover: regress/resp/node/run.sh checks/failover.check.mjs (Patroni switchover and kill -9)"
    run_logged "$LOGS/failover.log" "$(step_timeout 360)" "$ROOT/regress/resp/node/run.sh" checks/failover.check.mjs || rc=$?
    record_node_tests failover "$LOGS/failover.log" "$rc"
    summary=$(sed -n 's/^# failover-check: //p' "$LOGS/failover.log" | tail -n 1)
    [[ -z "$summary" ]] || SUMMARY[-1]+=" ($summary)"
}

# The randomized CLIENT TRACKING checker: node writers and tracking clients on run.sh's
# throwaway cluster; its summary line (`tracking-check: ... N stale`) is the step's note.
step_tracking_check() {
    local rc=0 secs=$TRACKING_CHECK_SECONDS left summary
    if [[ ${STATUS[install]:-} != ok ]]; then
        record tracking-check "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        return
    fi
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        record tracking-check "NOT RUN" 0 1 "node and npm are not installed: regress/resp/node needs Node.js >= 20 with npm"
        return
    fi
    left=$(remaining)
    if ((left - 120 < secs)); then secs=$((left - 120)); fi
    if ((secs < 5)); then
        record tracking-check "NOT RUN" 0 1 "time budget of ${TEST_BUDGET}s exhausted"
        return
    fi
    banner "tracking-check: regress/resp/node/run.sh checks/tracking.check.mjs for ${secs}s"
    run_logged "$LOGS/tracking_check.log" "$(step_timeout $((secs + 240)))" \
        env LC_TRACKING_CHECK_SECONDS="$secs" "$ROOT/regress/resp/node/run.sh" checks/tracking.check.mjs || rc=$?
    summary=$(sed -n 's/^# tracking-check: \([0-9]* SQL statements.*\)$/\1/p' "$LOGS/tracking_check.log" | tail -n 1)
    if ((rc == 0)) && [[ "$summary" == *", 0 stale" ]]; then
        record tracking-check PASSED 1 0 "$summary"
    else
        record tracking-check FAILED 0 1 "${summary:-no summary line} (exit $rc$(timed_out "$rc"); STALE lines and 'not ok' above)"
    fi
}

