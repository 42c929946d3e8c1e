#!/usr/bin/env bash
# tools/test.sh: owns the complete test run of local_cache (what CI runs through .ci/run).
#
#   tools/test.sh                      as root, or as a normal user (sudo for apt/install)
#   STRESS_SECONDS=60 tools/test.sh    longer stress run (default 30)
#   TRACKING_CHECK_SECONDS=120 tools/test.sh   longer CLIENT TRACKING check (default 15)
#
# Steps: deps (tools/deps.sh), build (make -j2), package, install (make install), then the suites:
#   package    tools/package_test.sh: the Debian package built from a clean copy, lintian, its
#              files, loaded, created and served by a throwaway cluster; as root from a real
#              install (dpkg -i, then dpkg -P) before `make install`, so that make install's
#              files are the ones tested after it; each check counts as one
#   tree-check, tree-self-test  tools/check_tree.py: the tree's rules (its opening comment);
#              its self-test breaks each rule in a copy and must see it fail; each counts as one
#   bench-cluster  bench/tests/cluster_test.py: the cluster section (each node's share of the reads,
#              its CPU per GET, WAIT's table) on a made-up result, and bench/report --cluster;
#              each check counts as one
#   bench-failover  bench/tests/failover_test.py: bench/failover's result document and the
#              failover section (medians and maxima per event, the 10 s bound, the counts) on a
#              made-up check output, and bench/report --failover; each check counts as one
#   bench-profile  bench/tests/profile_test.py: the profile mode's folding, budget categories and
#              flame graphs on canned perf output, and bench/report --profile on the committed
#              result; each check counts as one
#   bench-tail bench/tests/tail_test.py: the tail mode's matrix and batching switch, and
#              bench/report --tail on made-up results; each check counts as one
#   bench-tracking  bench/tests/tracking_test.py: the tracking section's push-delay cells and their
#              targets on made-up results, and bench/report --tracking on the committed result;
#              each check counts as one
#   bench-write_cost  bench/tests/write_cost_test.py: bench/report's --write and --bulk sections
#              (issue 46) on made-up results; each check counts as one
#   unittest   `make -j2 unittest`; each Boost.Test case counts as one test
#   regress    pg_regress part of `make check` (temporary instances); each test counts as one
#   isolation  pg_isolation_regress part of `make check`; each spec counts as one
#   ic-regress, ic-isolation  the same suites through `make installcheck` against a running
#              throwaway cluster with other settings than `make check`'s (PostgreSQL's default
#              max_prepared_transactions = 0, another local_cache.memory), run as the invoking
#              user (root too); each test counts as one
#   fuzz       `make fuzz`: the libFuzzer targets of the RESP parser, the command layer and the
#              key text, FUZZ_SECONDS (default 30) shared as the Makefile says; each target counts
#              as one
#   tap        TAP tests (`make installcheck TAP_TESTS=1`); each assertion counts as one
#   resp-cli   regress/resp/redis_cli.sh: redis-cli and raw-socket cases against the RESP server
#              on a throwaway cluster, every suite of regress/resp/suites/; each case counts as one
#   resp-cli-epoll  the same, suites commands, connection, protocol, writes and limits, with
#              local_cache.resp_io_uring = off (connections through libuv's epoll)
#   resp-node  regress/resp/node/run.sh: node --test with node-redis v4/v5/v6 and ioredis on a
#              throwaway cluster (needs node >= 20 and npm); each test counts as one
#   tracking-check  regress/resp/node/run.sh checks/tracking.check.mjs: the randomized CLIENT
#              TRACKING checker (SQL and RESP writers, tracking clients' local copies compared
#              with the table after quiescence) for TRACKING_CHECK_SECONDS (default 15); counts
#              as one
#   alerts     tools/alerts_test.py: docs/alerts/local_cache.rules.yml checked by promtool and fed
#              prometheus-redis-exporter's real scrapes of a throwaway primary and standby while
#              each alert's condition is produced; each check counts as one
#   failover   regress/resp/node/run.sh checks/failover.check.mjs: a Patroni cluster (etcd and three
#              nodes, tools/patroni.sh) through a switchover and a kill -9 of the primary while
#              cluster clients write (WAIT 1) and read; 0 acknowledged writes lost, 0 reads back in
#              time, every node's cache exact; each test counts as one (about 75 s); skipped only
#              when patroni or etcd is not installed
#   stress     tools/stress on a throwaway cluster (tools/cluster.sh) with the RESP server on;
#              counts as one
# The regress and isolation suites run as the `postgres` OS user when we are root (servers
# refuse root), from a copy of the tree in a temporary directory that user can read. A
# failed step counts as one failure, and so does every suite it kept from running.
# The last line is always `N passed, N failed`; the exit status is 0 only if nothing failed.
# The whole run is capped at TEST_BUDGET seconds (default 1800 = 30 minutes; a run takes about
# 18 on 2 cores, the package and installcheck steps about 3 of them, the failover step 1.5).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

STRESS_SECONDS=${STRESS_SECONDS:-30}
TRACKING_CHECK_SECONDS=${TRACKING_CHECK_SECONDS:-15}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
TEST_BUDGET=${TEST_BUDGET:-1800}
PG_CONFIG=${PG_CONFIG:-pg_config}
export BOOST_TEST_COLOR_OUTPUT=no
START_TIME=$SECONDS

PASSED=0
FAILED=0
SUMMARY=()
declare -A STATUS=()      # step -> ok | failed | not run

IS_ROOT=0
[[ $(id -u) -eq 0 ]] && IS_ROOT=1

# ---------------------------------------------------------------------------- helpers

# Each banner says how far into the run it is: which steps take the time.
banner() { printf '\n======== %s (%ss) ========\n' "$*" "$((SECONDS - START_TIME))"; }

# record NAME STATUS PASSED FAILED NOTE
record() {
    PASSED=$((PASSED + $3))
    FAILED=$((FAILED + $4))
    SUMMARY+=("$(printf '%-10s %-8s %s' "$1" "$2" "$5")")
    banner "$1: $2${5:+ - $5}"
}

remaining() { echo $((TEST_BUDGET - (SECONDS - START_TIME))); }

# Timeout for a step: its own limit, but never beyond the overall budget.
step_timeout() {
    local want=$1 left
    left=$(remaining)
    ((left < want)) && want=$left
    echo "$want"
}

# run_logged LOG SECONDS cmd...: runs cmd with a timeout, output to the terminal and LOG.
run_logged() {
    local log=$1 secs=$2 rc=0
    shift 2
    if ((secs < 10)); then
        echo "test.sh: time budget of ${TEST_BUDGET}s exhausted, not running: $*" | tee "$log"
        return 124
    fi
    # On a terminal keep the command in our process group, so that Ctrl-C and sudo's
    # password prompt work; otherwise (CI) a timeout kills the whole process group.
    local fg=()
    [[ -t 0 ]] && fg=(--foreground)
    timeout "${fg[@]}" --kill-after=20 "$secs" "$@" 2>&1 | tee "$log" || rc=$?
    if ((rc == 124 || rc == 137)); then
        echo "test.sh: TIMED OUT after ${secs}s: $*" | tee -a "$log"
    fi
    return "$rc"
}

# ", timed out" for the exit status of a command that `timeout` stopped.
timed_out() { if (($1 == 124 || $1 == 137)); then echo ", timed out"; fi; }

# Prints at most N lines of FILE.
show_file() {
    local file=$1 n=${2:-400} total
    [[ -f "$file" ]] || return 0
    total=$(wc -l <"$file")
    echo "---- $file ----"
    head -n "$n" "$file"
    if ((total > n)); then echo "... ($((total - n)) more lines in $file)"; fi
    echo "----"
}

# Privileged command (apt, make install).
SUDO=()
NO_PRIV=0
if ((!IS_ROOT)); then
    if command -v sudo >/dev/null 2>&1; then SUDO=(sudo); else NO_PRIV=1; fi
fi

# Commands that start servers run as postgres when we are root.
AS_PG=()
RUN_AS=$(id -un)
if ((IS_ROOT)); then
    AS_PG=(runuser -u postgres --)
    RUN_AS=postgres
fi

WORK=$(mktemp -d "$( ((IS_ROOT)) && echo /tmp || echo "${TMPDIR:-/tmp}")/local_cache_test.XXXXXX")
LOGS=$WORK/logs
mkdir -p "$LOGS"
STRESS_DIR=$WORK/stress_cluster
IC_DIR=$WORK/ic_cluster

cleanup() {
    local dir
    for dir in "$STRESS_DIR" "$IC_DIR"; do
        if [[ -d "$dir" ]]; then
            PG_CONFIG=$PG_CONFIG "$ROOT/tools/cluster.sh" destroy "$dir" >/dev/null 2>&1 || true
        fi
    done
    if ((FAILED == 0)) && [[ "${KEEP_TMP:-0}" != 1 ]]; then
        rm -rf "$WORK"
    elif ((!SUMMARY_DONE)); then
        echo "test.sh: logs and outputs kept in $WORK" >&2
    fi
}
SUMMARY_DONE=0
trap cleanup EXIT
trap 'echo "test.sh: interrupted" >&2; FAILED=$((FAILED + 1)); exit 130' INT TERM

# ---------------------------------------------------------------------------- steps

# prerequisite NAME TIMEOUT FAILURE_NOTE cmd...: a step the suites depend on; STATUS[NAME] says
# whether it worked, and a failure counts as one failed test.
prerequisite() {
    local name=$1 secs=$2 note=$3
    shift 3
    if run_logged "$LOGS/$name.log" "$(step_timeout "$secs")" "$@"; then
        STATUS[$name]=ok
        SUMMARY+=("$(printf '%-10s %-8s' "$name" ok)")
    else
        STATUS[$name]=failed
        record "$name" FAILED 0 1 "$note"
    fi
}

step_deps() {
    banner "deps: tools/deps.sh"
    if ((NO_PRIV)) && ! "$ROOT/tools/deps.sh" --check; then
        echo "test.sh: packages are missing and neither root nor sudo is available; as root run: $ROOT/tools/deps.sh"
        STATUS[deps]=failed
        record deps FAILED 0 1 "missing Debian packages (run tools/deps.sh as root)"
        return
    fi
    prerequisite deps 900 "tools/deps.sh failed (see above)" "$ROOT/tools/deps.sh"
}

step_build() {
    banner "build: make -j2"
    prerequisite build 900 "make -j2 failed (compiler errors above)" make -j2 PG_CONFIG="$PG_CONFIG"
}

step_install() {
    if [[ ${STATUS[build]:-} != ok ]]; then
        STATUS[install]="not run"
        record install "NOT RUN" 0 1 "build failed"
        return
    fi
    banner "install: make install"
    if ((NO_PRIV)); then
        if installed_matches_build; then
            echo "test.sh: not root and no sudo, but the installed files equal the built ones"
            STATUS[install]=ok
            SUMMARY+=("$(printf '%-10s %-8s %s' install ok "(already installed, identical)")")
            return
        fi
        echo "test.sh: not root and no sudo: run \`make install\` as root, then rerun"
        STATUS[install]=failed
        record install FAILED 0 1 "needs root: run make install as root"
        return
    fi
    prerequisite install 300 "make install failed" "${SUDO[@]}" make install PG_CONFIG="$PG_CONFIG"
}

# True if local_cache.so, the control file and the SQL scripts are installed unchanged.
installed_matches_build() {
    local libdir sharedir f
    libdir=$("$PG_CONFIG" --pkglibdir) && sharedir=$("$PG_CONFIG" --sharedir) || return 1
    cmp -s local_cache.so "$libdir/local_cache.so" || return 1
    for f in local_cache.control sql/*.sql; do
        cmp -s "$f" "$sharedir/extension/$(basename "$f")" || return 1
    done
}

step_unittest() {
    banner "unittest: make unittest"
    local rc=0 counts seen p f
    run_logged "$LOGS/unittest.log" "$(step_timeout 300)" make -j2 unittest PG_CONFIG="$PG_CONFIG" || rc=$?
    # Boost.Test short report: "N test cases out of M passed" / "... failed" lines, or
    # "Test module "x" has passed with N test cases out of M."
    counts=$(awk '
        /test cases? out of [0-9]+ passed/ { p += $1 }
        /test cases? out of [0-9]+ failed/ { f += $1; seen = 1 }
        /has passed with [0-9]+ test cases? out of/ {
            for (i = 1; i <= NF; i++) if ($i == "with") { p += $(i + 1); break }
        }
        /test cases? out of/ || /has (passed|failed) with/ { seen = 1 }
        END { print (seen ? 1 : 0), p + 0, f + 0 }' "$LOGS/unittest.log")
    read -r seen p f <<<"$counts"
    if ((seen == 0)); then
        record unittest "NOT RUN" 0 1 "no Boost.Test report (build of the unit tests failed or they crashed; exit $rc$(timed_out "$rc"))"
    elif ((rc != 0 && f == 0)); then
        record unittest FAILED "$p" 1 "$p passed, but exit status $rc"
    elif ((f > 0)); then
        record unittest FAILED "$p" "$f" "$p passed, $f failed"
    else
        record unittest PASSED "$p" 0 "$p passed"
    fi
}

step_fuzz() {
    local rc=0 target line failed=0
    banner "fuzz: make -k fuzz FUZZ_SECONDS=$FUZZ_SECONDS"
    # -k: a crash of the first target does not keep the second from running.
    run_logged "$LOGS/fuzz.log" "$(step_timeout $((FUZZ_SECONDS + 300)))" \
        make -k fuzz FUZZ_SECONDS="$FUZZ_SECONDS" FUZZ_ARTIFACTS="$WORK/fuzz_artifacts" || rc=$?
    # Each target's output follows its "fuzz target: NAME" line; it passed when that output has
    # libFuzzer's "Done N runs" line and no sanitizer or crash report.
    for target in parser commands keys; do
        line=$(awk -v name="fuzz target: fuzz_$target" '
            /^fuzz target: / { mine = ($0 == name) }
            mine && (/^==[0-9]+==/ || /deadly signal/ || /^SUMMARY: /) { bad = 1 }
            mine && /^Done [0-9]+ runs/ && !done { done = $0 }
            END { if (done != "" && !bad) print done }' "$LOGS/fuzz.log")
        if [[ -n "$line" ]]; then
            record "fuzz-$target" PASSED 1 0 "$line"
        else
            failed=1
            record "fuzz-$target" FAILED 0 1 "exit $rc$(timed_out "$rc"); crash inputs in $WORK/fuzz_artifacts"
        fi
    done
    if ((rc != 0 && !failed)); then
        record fuzz FAILED 0 1 "every target finished, but make fuzz exited $rc"
    fi
}

# The tree's rules (tools/check_tree.py): each rule counts as one, and so does each case of its
# self-test, which breaks the rule in a copy of the tree and must see the check fail.
step_tree() {
    local mode rc log
    for mode in check self-test; do
        banner "tree-$mode: tools/check_tree.py$([[ $mode == self-test ]] && echo " --self-test")"
        log="$LOGS/tree_$mode.log"
        rc=0
        if [[ $mode == check ]]; then
            run_logged "$log" "$(step_timeout 120)" python3 "$ROOT/tools/check_tree.py" || rc=$?
        else
            run_logged "$log" "$(step_timeout 300)" python3 "$ROOT/tools/check_tree.py" --self-test || rc=$?
        fi
        record_summary "tree-$mode" "$log" "$rc"
    done
}

# Records a step whose log ends with its own "N passed, M failed" line.
record_summary() {
    local name=$1 log=$2 rc=$3 p f
    read -r p f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$log" | tail -n 1)
    if [[ -z "${p:-}" ]]; then
        record "$name" "NOT RUN" 0 1 "no summary (exit $rc$(timed_out "$rc"))"
    elif ((f > 0 || rc != 0)); then
        record "$name" FAILED "$p" "$((f > 0 ? f : 1))" "$p passed, $f failed (see above)"
    else
        record "$name" PASSED "$p" 0 "$p passed"
    fi
}

# step_bench_tests: every bench/tests/NAME_test.py, each the step bench-NAME
step_bench_tests() {
    local test name rc
    for test in "$ROOT"/bench/tests/*_test.py; do
        name=$(basename "$test" _test.py) rc=0
        banner "bench-$name: bench/tests/${name}_test.py"
        run_logged "$LOGS/bench_$name.log" "$(step_timeout 120)" python3 "$test" "$WORK/${name}_test" || rc=$?
        record_summary "bench-$name" "$LOGS/bench_$name.log" "$rc"
    done
}

TREE_READY=""
prepare_tree() {
    [[ -n "$TREE_READY" ]] && return "$TREE_READY"
    TREE_READY=1
    mkdir -p "$WORK/tree" || return 1
    tar -C "$ROOT" --exclude=./.git --exclude=./regress/output --exclude=./regress/output_isolation \
        --exclude=./regress/results --exclude=./.demo -cf - . | tar -C "$WORK/tree" -xf - || return 1
    if ((IS_ROOT)); then
        id postgres >/dev/null 2>&1 || { echo "test.sh: OS user postgres does not exist"; return 1; }
        chown -R postgres: "$WORK" || return 1
    fi
    TREE_READY=0
}

# pg_suite NAME OUTPUT_VAR OTHER_LIST_VAR [TARGET [MAKE_ARGS...]]: runs one half of `make check`
# (as postgres when we are root), or of `make TARGET MAKE_ARGS...` (installcheck: as ourselves).
pg_suite() {
    local name=$1 outvar=$2 othervar=$3 target=${4:-check} out rc=0 line p=0 f=0 ign=0 summary=""
    local as=("${AS_PG[@]}") as_name=$RUN_AS
    shift $(($# < 4 ? $# : 4))
    if [[ $target != check ]]; then as=(); as_name=$(id -un); fi
    if [[ ${STATUS[install]:-} != ok ]]; then
        record "$name" "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        return
    fi
    banner "$name: make $target ($outvar=..., $othervar=${*:+ $*}) as $as_name"
    if ! prepare_tree; then
        record "$name" "NOT RUN" 0 1 "could not copy the tree to $WORK/tree"
        return
    fi
    out=$WORK/$name
    mkdir -p "$out"
    if ((IS_ROOT)); then chown postgres: "$out"; fi
    # cd / first: the postgres user may not be able to read the current directory
    run_logged "$LOGS/$name.log" "$(step_timeout 420)" ${as[@]+"${as[@]}"} env -C / \
        make -C "$WORK/tree" "$target" PG_CONFIG="$PG_CONFIG" \
        "$othervar=" "$outvar=$out" "$@" || rc=$?
    # pg_regress summary lines (PostgreSQL 15):
    #  " All N tests passed. "            " F of T tests failed. "
    #  " P of T tests passed, I failed test(s) ignored. "
    #  " F of T tests failed, I of these failures ignored. "
    line=$(grep -E '^ (All [0-9]+ tests passed|[0-9]+ of [0-9]+ tests (passed|failed))' "$LOGS/$name.log" | tail -n 1 || true)
    if [[ "$line" =~ All\ ([0-9]+)\ tests\ passed ]]; then
        p=${BASH_REMATCH[1]}
    elif [[ "$line" =~ ([0-9]+)\ of\ ([0-9]+)\ tests\ failed,\ ([0-9]+)\ of\ these ]]; then
        ign=${BASH_REMATCH[3]}
        f=$((BASH_REMATCH[1] - ign)); p=$((BASH_REMATCH[2] - BASH_REMATCH[1]))
    elif [[ "$line" =~ ([0-9]+)\ of\ ([0-9]+)\ tests\ failed ]]; then
        f=${BASH_REMATCH[1]}; p=$((BASH_REMATCH[2] - f))
    elif [[ "$line" =~ ([0-9]+)\ of\ ([0-9]+)\ tests\ passed,\ ([0-9]+)\ failed ]]; then
        p=${BASH_REMATCH[1]}; ign=${BASH_REMATCH[3]}
    fi
    ((ign > 0)) && summary=", $ign failure(s) ignored"
    if [[ -z "$line" ]]; then
        if grep -q "Nothing to be done\|is up to date" "$LOGS/$name.log" && ((rc == 0)); then
            record "$name" "NOT RUN" 0 1 "no tests listed in the Makefile"
        else
            show_logs_of "$out"
            record "$name" "NOT RUN" 0 1 "could not run (no pg_regress summary, exit $rc$(timed_out "$rc"); see above)"
        fi
        return
    fi
    if ((f > 0 || rc != 0)); then
        show_file "$out/regression.diffs" 600
        ((f == 0)) && f=1
        grep -qi "server closed the connection\|terminated by signal" "$out/log/postmaster.log" 2>/dev/null &&
            show_logs_of "$out"
        record "$name" FAILED "$p" "$f" "$p passed, $f failed$summary (diffs above; outputs in $out)"
    else
        record "$name" PASSED "$p" 0 "$p passed$summary"
    fi
}

# `make installcheck` against a running throwaway cluster whose legitimate settings differ from
# make check's regress/regress.conf: PostgreSQL's default max_prepared_transactions (0), another
# local_cache.memory, and the RESP server on (its launcher and worker are sessions of their own,
# so the suites' sessions get other backend numbers, and temporary schema names, than on an idle
# server). The suites' expected output must not depend on them.
step_installcheck() {
    local port resp_port
    if [[ ${STATUS[install]:-} != ok ]]; then
        record ic-regress "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        record ic-isolation "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        return
    fi
    resp_port=$("$ROOT/tools/cluster.sh" freeport)
    if ! prepare_tree || ! run_logged "$LOGS/ic_cluster.log" "$(step_timeout 120)" env PG_CONFIG="$PG_CONFIG" \
        "$ROOT/tools/cluster.sh" start "$IC_DIR" auto "local_cache.memory = 48MB" \
            "local_cache.resp_port = $resp_port"; then
        record ic-regress "NOT RUN" 0 1 "the throwaway cluster did not start (log above)"
        record ic-isolation "NOT RUN" 0 1 "the throwaway cluster did not start (log above)"
        return
    fi
    port=$(PG_CONFIG=$PG_CONFIG "$ROOT/tools/cluster.sh" port "$IC_DIR")
    local conn=(PGHOST="$IC_DIR/sock" PGPORT="$port" PGUSER="$(stat -c %U "$IC_DIR/data")") dbs
    pg_suite ic-regress REGRESS_OUTPUT ISOLATION installcheck "${conn[@]}"
    pg_suite ic-isolation ISOLATION_OUTPUT REGRESS installcheck "${conn[@]}"
    # The suites ran on this server (their databases are left there), not on an instance of
    # their own; and a server that does not preload the library is refused in one line.
    dbs=$(PG_CONFIG=$PG_CONFIG "$ROOT/tools/cluster.sh" psql "$IC_DIR" -At -c \
        "SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database WHERE datname LIKE '%_regression'")
    if [[ "$dbs" != contrib_regression,isolation_regression ]]; then
        record ic-server FAILED 0 1 "make installcheck did not run on the server named by PGHOST/PGPORT (databases there: ${dbs:-none})"
    elif ! PG_CONFIG=$PG_CONFIG "$ROOT/tools/cluster.sh" psql "$IC_DIR" -qAt \
            -c "ALTER SYSTEM SET shared_preload_libraries = 'plpgsql'" >/dev/null ||
        ! "${AS_PG[@]}" env -C / "$("$PG_CONFIG" --bindir)/pg_ctl" -D "$IC_DIR/data" -w -l "$IC_DIR/server.log" \
            restart >"$LOGS/ic_restart.log" 2>&1; then
        record ic-server FAILED 0 1 "could not restart the cluster without the library ($LOGS/ic_restart.log)"
    elif env -C "$WORK/tree" make -s installcheck-preloaded PG_CONFIG="$PG_CONFIG" "${conn[@]}" \
            >"$LOGS/ic_preload.log" 2>&1 ||
        ! grep -q "does not preload local_cache" "$LOGS/ic_preload.log"; then
        cat "$LOGS/ic_preload.log"
        record ic-server FAILED 1 1 "make installcheck did not refuse a server without the library in one line"
    else
        cat "$LOGS/ic_preload.log"
        record ic-server PASSED 2 0 "the suites ran on the named server; one that does not preload the library is refused"
    fi
    PG_CONFIG=$PG_CONFIG "$ROOT/tools/cluster.sh" destroy "$IC_DIR" || true
}

# tools/package_test.sh prints `N passed, N failed` last. A real install (dpkg -i, then dpkg -P)
# only as root: CI's machine is throwaway; `make install` runs after it.
step_package() {
    local rc=0 line install=0
    ((IS_ROOT)) && install=1
    # nocheck: the build-time installcheck (pg_buildext on a pg_virtualenv server) is what the
    # ic-regress step runs too, on a server with PostgreSQL's defaults; skipping it here keeps
    # this step to the build (about 2 minutes on 2 cores).
    banner "package: PACKAGE_TEST_INSTALL=$install DEB_BUILD_OPTIONS='parallel=2 nocheck' tools/package_test.sh"
    run_logged "$LOGS/package.log" "$(step_timeout 420)" env PACKAGE_TEST_INSTALL=$install \
        DEB_BUILD_OPTIONS="parallel=2 nocheck" "$ROOT/tools/package_test.sh" || rc=$?
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$LOGS/package.log" | tail -n 1 || true)
    if [[ ! "$line" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        record package "NOT RUN" 0 1 "no summary line from tools/package_test.sh (exit $rc$(timed_out "$rc"))"
    elif ((BASH_REMATCH[2] > 0 || rc != 0)); then
        record package FAILED "${BASH_REMATCH[1]}" "$((BASH_REMATCH[2] > 0 ? BASH_REMATCH[2] : 1))" \
            "${BASH_REMATCH[1]} passed, ${BASH_REMATCH[2]} failed (FAIL lines above)"
    else
        record package PASSED "${BASH_REMATCH[1]}" 0 "${BASH_REMATCH[1]} passed$( ((install)) || echo ' (no real install: not root)')"
    fi
}

step_tap() {
    local rc=0 tests failed result
    if [[ ${STATUS[install]:-} != ok ]]; then
        record tap "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        return
    fi
    banner "tap: make installcheck TAP_TESTS=1 as $RUN_AS"
    if ! prepare_tree; then
        record tap "NOT RUN" 0 1 "could not copy the tree to $WORK/tree"
        return
    fi
    run_logged "$LOGS/tap.log" "$(step_timeout 420)" "${AS_PG[@]}" env -C / \
        make -C "$WORK/tree" installcheck PG_CONFIG="$PG_CONFIG" TAP_TESTS=1 REGRESS= ISOLATION= || rc=$?
    # prove: "Files=F, Tests=T, ..." then "Result: PASS|FAIL"; failures as "Failed N/T subtests"
    tests=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$LOGS/tap.log" | tail -n 1)
    failed=$(awk '/Failed [0-9]+\/[0-9]+ subtests/ { split($2, a, "/"); f += a[1] } END { print f + 0 }' "$LOGS/tap.log")
    result=$(sed -n 's/^Result: //p' "$LOGS/tap.log" | tail -n 1)
    if [[ -z "$tests" || -z "$result" ]]; then
        record tap "NOT RUN" 0 1 "no prove summary (exit $rc$(timed_out "$rc")); see above"
    elif [[ "$result" != PASS || $rc -ne 0 ]]; then
        ((failed == 0)) && failed=1
        for f in "$WORK"/tree/tmp_check/log/regress_log_*; do show_file "$f" 200; done
        record tap FAILED "$((tests - failed))" "$failed" "$((tests - failed)) passed, $failed failed (logs in $WORK/tree/tmp_check/log)"
    else
        record tap PASSED "$tests" 0 "$tests passed"
    fi
}

# The steps that run clients against the RESP server: cli_step, step_resp, step_failover,
# step_tracking_check.
# shellcheck source=tools/test_clients.sh
source "$ROOT/tools/test_clients.sh"

show_logs_of() {
    local f n
    for f in "$1"/log/initdb.log "$1"/log/postmaster.log; do
        [[ -f "$f" ]] || continue
        n=60
        [[ $f == */initdb.log ]] && n=15
        echo "---- last lines of $f ----"
        tail -n "$n" "$f"
        echo "----"
    done
}

# The alerting rules against the exporter's real output (about 40 s).
step_alerts() {
    local rc=0
    if [[ ${STATUS[install]:-} != ok ]]; then
        record alerts "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        return
    fi
    banner "alerts: tools/alerts_test.py"
    run_logged "$LOGS/alerts.log" "$(step_timeout 300)" env PG_CONFIG="$PG_CONFIG" python3 "$ROOT/tools/alerts_test.py" || rc=$?
    record_summary alerts "$LOGS/alerts.log" "$rc"
}

step_stress() {
    local rc=0 conninfo
    if [[ ${STATUS[install]:-} != ok ]]; then
        record stress "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        return
    fi
    # Shorten the run if the overall budget demands it.
    local secs=$STRESS_SECONDS left shortened=0
    left=$(remaining)
    if ((left - 60 < secs)); then secs=$((left - 60)); shortened=1; fi
    if ((secs < 1 || (shortened && secs < 5))); then
        record stress "NOT RUN" 0 1 "time budget of ${TEST_BUDGET}s exhausted"
        return
    fi
    banner "stress: tools/stress for ${secs}s on a throwaway cluster"
    if ! run_logged "$LOGS/stress_build.log" "$(step_timeout 300)" \
        g++ -std=c++17 -O2 -pthread -I. -I"$("$PG_CONFIG" --includedir)" tools/stress_check/*.cpp tools/lib/*.cpp \
            extension/key_bytes.cpp -o tools/stress -lpq; then
        record stress "NOT RUN" 0 1 "tools/stress_check/ did not compile"
        return
    fi
    if ((IS_ROOT)); then chown postgres: "$WORK"; fi
    # The RESP server too: tools/stress reads and writes through it as stress_resp (a role it
    # creates and grants SELECT, INSERT, UPDATE and DELETE on its table) in the database it
    # uses (postgres).
    local resp_port
    resp_port=$("$ROOT/tools/cluster.sh" freeport)
    if ! run_logged "$LOGS/stress_cluster.log" "$(step_timeout 120)" \
        "$ROOT/tools/cluster.sh" start "$STRESS_DIR" auto "local_cache.resp_port = $resp_port" \
            "local_cache.resp_role = 'stress_resp'" "local_cache.resp_database = 'postgres'"; then
        record stress "NOT RUN" 0 1 "the throwaway cluster did not start (log above)"
        return
    fi
    conninfo=$("$ROOT/tools/cluster.sh" conninfo "$STRESS_DIR")
    echo "conninfo: $conninfo, RESP port $resp_port"
    run_logged "$LOGS/stress.log" "$(step_timeout $((secs + 150)))" \
        "$ROOT/tools/stress" "$conninfo" --seconds "$secs" --resp-port "$resp_port" || rc=$?
    if ((rc == 0)); then
        record stress PASSED 1 0 "$(grep -m1 '^stress: cache hits' "$LOGS/stress.log" | sed 's/^stress: //')"
    else
        echo "---- last lines of $STRESS_DIR/server.log ----"
        tail -n 60 "$STRESS_DIR/server.log" 2>/dev/null || true
        echo "----"
        record stress FAILED 0 1 "exit $rc$(timed_out "$rc") (mismatch or error above)"
    fi
    "$ROOT/tools/cluster.sh" destroy "$STRESS_DIR" || true
}

# The benchmark harness's smoke run: tiny matrix with the native and the Go client (one batch
# size: the clients' checks send every path's single-key requests too; the node
# client runs its correctness check), every path compared with prepared SQL first; then a short
# soak (every path at once, stale probes on the primary and on a hot standby, a point every
# second); no timing assertions. Fails on any check mismatch and on any stale, wrong or never
# visible probe observation. Both take their ports from the BENCH_*_PORT variables, and the step
# checks that they did.
step_bench() {
    local rc=0 out=$WORK/bench_smoke.json soak=$WORK/bench_soak.json summary
    if [[ ${STATUS[install]:-} != ok ]]; then
        record bench-smoke "NOT RUN" 0 1 "install ${STATUS[install]:-not run}"
        return
    fi
    # The runs take their ports from BENCH_*_PORT (five distinct free ones), as bench/README.md says.
    local ports=() p
    while ((${#ports[@]} < 5)); do
        p=$("$ROOT/tools/cluster.sh" freeport)
        [[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
    done
    banner "bench-smoke: bench/run all (tiny matrix, native and go clients; ports ${ports[*]:0:3}) and bench/report"
    run_logged "$LOGS/bench.log" "$(step_timeout 300)" env CLIENTS=native,go BENCH_CHECK_CLIENTS=native,node,go \
        CONNECTIONS=4 BATCHES=64 REPEATS=1 DURATION_SECONDS=0.5 PG_CONFIG="$PG_CONFIG" \
        BENCH_PG_PORT="${ports[0]}" BENCH_RESP_PORT="${ports[1]}" BENCH_REDIS_PORT="${ports[2]}" \
        bash -c '"$0" all >"$1"' "$ROOT/bench/run" "$out" || rc=$?
    if ((rc != 0)); then
        record bench-smoke FAILED 0 1 "bench/run exit $rc$(timed_out "$rc") (mismatch or error above)"
        return
    fi
    if ! grep -q "started .* on 127.0.0.1:${ports[0]} " "$LOGS/bench.log" ||
        ! grep -q "(RESP port ${ports[1]})" "$LOGS/bench.log" ||
        ! grep -q "starting redis-server on 127.0.0.1:${ports[2]}$" "$LOGS/bench.log"; then
        record bench-smoke FAILED 0 1 "bench/run did not use BENCH_PG_PORT=${ports[0]}, BENCH_RESP_PORT=${ports[1]}, BENCH_REDIS_PORT=${ports[2]}"
        return
    fi
    if ! python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if {"native", "go"} <= {s["client"] for s in d["samples"]} else 1)' "$out"; then
        record bench-smoke FAILED 0 1 "the smoke run has no samples of the go client (skipped? see $LOGS/bench.log)"
        return
    fi
    # Without --charts the charts go beside the output file, never into docs/.
    mkdir -p "$WORK/bench_report"
    local docs_before
    docs_before=$(cd "$ROOT" && find docs -type f -newer "$out" 2>/dev/null)
    if ! run_logged "$LOGS/bench_report.log" "$(step_timeout 120)" \
        bash -c '"$0" "$1" >"$2"' "$ROOT/bench/report" "$out" "$WORK/bench_report/BENCHMARKS.md"; then
        record bench-smoke FAILED 0 1 "bench/report failed on the smoke result"
        return
    fi
    if ! ls "$WORK/bench_report/benchmarks/"*.svg >/dev/null 2>&1 ||
        [[ "$(cd "$ROOT" && find docs -type f -newer "$out" 2>/dev/null)" != "$docs_before" ]]; then
        record bench-smoke FAILED 0 1 "bench/report did not put its charts beside its output (or wrote into docs/)"
        return
    fi
    banner "bench-smoke: bench/run soak (15 s, stale probes on the primary and a hot standby) and bench/report"
    run_logged "$LOGS/bench_soak.log" "$(step_timeout 150)" env DURATION_SECONDS=15 SOAK_INTERVAL_SECONDS=1 \
        PG_CONFIG="$PG_CONFIG" BENCH_NO_INSTALL=1 BENCH_STANDBY_PORT="${ports[3]}" BENCH_STANDBY_RESP_PORT="${ports[4]}" \
        bash -c '"$0" soak >"$1"' "$ROOT/bench/run" "$soak" || rc=$?
    if ((rc != 0)); then
        record bench-smoke FAILED 0 1 "bench/run soak exit $rc$(timed_out "$rc") (stale probe, mismatch or error above)"
        return
    fi
    if ! grep -q "(port ${ports[3]}, RESP port ${ports[4]})" "$LOGS/bench_soak.log"; then
        record bench-smoke FAILED 0 1 "bench/run soak did not use BENCH_STANDBY_PORT=${ports[3]}, BENCH_STANDBY_RESP_PORT=${ports[4]}"
        return
    fi
    # bench/run soak already fails on them; this says what the document holds
    if ! summary=$(python3 - "$soak" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["soak"]
sp = s["stale_probes"]
pr, sb = sp["primary"], sp["standby"]
bad = pr["stale"] + pr["wrong"] + sb["stale"] + sb["wrong"] + sb["not_visible_within_bound"]
ok = not d["partial"] and len(s["series"]) >= 5 and sp["probes"] > 0 and pr["observations"] > 0 and sb["observations"] > 0 and bad == 0
dl = sb["delay_all_paths_us"]
print(f"{len(s['series'])} soak points, {sp['probes']} stale probes: primary {pr['stale']} stale/{pr['wrong']} wrong, "
      f"standby {sb['stale']} stale/{sb['wrong']} wrong/{sb['not_visible_within_bound']} not visible, "
      f"standby delay p50 {dl['p50']} us, max {dl['max']} us")
sys.exit(0 if ok else 1)
PY
    ); then
        record bench-smoke FAILED 0 1 "the soak's stale probes: ${summary:-no result} (see $LOGS/bench_soak.log)"
        return
    fi
    mkdir -p "$WORK/bench_report_soak"
    if ! run_logged "$LOGS/bench_report_soak.log" "$(step_timeout 60)" \
        bash -c '"$0" "$1" >"$2"' "$ROOT/bench/report" "$soak" "$WORK/bench_report_soak/SOAK.md" ||
        ! ls "$WORK/bench_report_soak/benchmarks/"soak_*.svg >/dev/null 2>&1; then
        record bench-smoke FAILED 0 1 "bench/report failed on the soak result (or drew no charts)"
        return
    fi
    record bench-smoke PASSED 1 0 "$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["samples"]))' "$out") samples (native, go), checks of the native, node and go clients passed; $summary"
}

# ---------------------------------------------------------------------------- main

echo "test.sh: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), running as $(id -un), work dir $WORK"
step_deps || true
step_tree || true
step_bench_tests || true
step_build || true
step_package || true
step_install || true
step_unittest || true
step_fuzz || true
pg_suite regress REGRESS_OUTPUT ISOLATION || true
pg_suite isolation ISOLATION_OUTPUT REGRESS || true
step_installcheck || true
step_tap || true
step_resp || true
step_tracking_check || true
step_alerts || true
step_failover || true
step_stress || true
step_bench || true

banner "summary"
for line in "${SUMMARY[@]}"; do echo "$line"; done
echo
if ((FAILED > 0)) || [[ "${KEEP_TMP:-0}" == 1 ]]; then
    echo "logs and outputs kept in $WORK"
fi
SUMMARY_DONE=1
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
