# regress/resp/lib.sh: what the RESP suites share; regress/resp/redis_cli.sh sources it, calls
# require_tools and start_cluster, then sources the suites (regress/resp/suites/*.sh) in the same
# shell, so that PASSED and FAILED add up over all of them.
#
#   case helpers    check, check_re, raw_case, cli_case, wait_case (each one case: pass or fail)
#   talking to it   raw (resp_raw.pl steps), cli (redis-cli), sql (psql as the superuser), bulk,
#                   cmd
#   waits, settings wait_for, set_setting, config_is, resp_pong
#   server log      log_size, log_since, crash_lines, passwords_leaked
#   connections     open_held / close_held (kept open in HELD; closed on exit too)
#   workers         worker_pids, workers_hwm_kb, as_pg
#   the cluster     start_cluster: a throwaway cluster (tools/cluster.sh) with the RESP server on
#                   RESP_PORT, the roles (passwords PW_*), the cached tables the cases read, and
#                   J1..J3, the JSON of items:1..3 as SQL renders it; destroyed on exit
#                   (KEEP_TMP=1, or any failure, keeps its directory and log).

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CLUSTER_SH=$ROOT/tools/cluster.sh
RAW_PL=$HERE/resp_raw.pl
PGBIN=$("${PG_CONFIG:-pg_config}" --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)

PASSED=0
FAILED=0
HELD=()

# require_tools: exits with a failed run if redis-cli, perl, timeout or redis-py is missing
require_tools() {
    local tool
    for tool in redis-cli perl timeout; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "redis_cli.sh: $tool is not installed (redis-cli: apt-get install redis-tools)"
            echo "0 passed, 1 failed"
            exit 1
        fi
    done
    if ! /usr/bin/python3 -c 'import redis' >/dev/null 2>&1; then
        echo "redis_cli.sh: redis-py is not installed (apt-get install python3-redis)"
        echo "0 passed, 1 failed"
        exit 1
    fi
}

# ---------------------------------------------------------------------------- helpers

section() { printf '\n== %s\n' "$*"; }

pass() { PASSED=$((PASSED + 1)); printf 'ok    %s\n' "$1"; }

fail() {
    FAILED=$((FAILED + 1))
    printf 'FAIL  %s\n' "$1"
    printf '      expected: %s\n' "$2" | sed '2,$s/^/                /'
    printf '      actual:   %s\n' "$3" | sed '2,$s/^/                /'
}

# check NAME EXPECTED ACTUAL: exact comparison
check() { if [[ "$3" == "$2" ]]; then pass "$1"; else fail "$1" "$2" "$3"; fi; }

# check_re NAME REGEX ACTUAL: ACTUAL must match the extended regular expression
check_re() { if [[ "$3" =~ $2 ]]; then pass "$1"; else fail "$1" "text matching /$2/" "$3"; fi; }

# wait_case NAME EXPECTED SECONDS PREDICATE DESCRIBE: passes once PREDICATE succeeds (polled
# for up to SECONDS); on timeout the failure shows EXPECTED and what DESCRIBE prints then
wait_case() {
    local name=$1 want=$2 secs=$3 predicate=$4 describe=$5
    if wait_for "$name" "$secs" "$predicate"; then pass "$name"; else fail "$name" "$want" "$($describe)"; fi
}

# sql SQL...: runs SQL through psql as the cluster's superuser; prints unaligned tuples. psql
# itself, as `tools/cluster.sh psql` runs it (its port read each time: a restart may move it),
# without the script around it, which cost more than the query.
sql() {
    timeout 60 "$PGBIN/psql" -X -h "$DIR/sock" -p "$(<"$DIR/port")" -U "$SUPERUSER" -d postgres \
        -v ON_ERROR_STOP=1 -Atq -c "$1" 2>&1
}

# sql_in DATABASE SQL: as sql, in another database (to change the RESP database's own settings
# while it refuses connections or makes sessions read-only).
sql_in() {
    timeout 60 "$PGBIN/psql" -X -h "$DIR/sock" -p "$(<"$DIR/port")" -U "$SUPERUSER" -d "$1" \
        -v ON_ERROR_STOP=1 -Atq -c "$2" 2>&1
}

# Escapes bytes as resp_raw.pl prints them.
esc() { perl "$RAW_PL" --escape; }

# bulk TEXT: the escaped RESP bulk string of TEXT. Printable ASCII, the usual case, is escaped
# in the shell (only '\' changes; LC_ALL=C makes ${#1} its bytes): a perl per argument made
# the suites spend most of their time starting perl.
bulk() {
    if [[ "$1" =~ ^[\ -~]*$ ]]; then
        printf '$%d\\r\\n%s\\r\\n' "${#1}" "${1//\\/\\\\}"
    else
        printf '$%d\\r\\n%s\\r\\n' "$(printf %s "$1" | wc -c)" "$(printf %s "$1" | esc)"
    fi
}

# cmd ARG...: one request as a RESP array of bulk strings, escaped for raw (JSON has quotes
# that inline requests mangle)
cmd() { local out="*$#\\r\\n" arg; for arg; do out+=$(bulk "$arg"); done; printf '%s' "$out"; }

# raw STEPS...: runs resp_raw.pl against the RESP port
raw() { timeout 60 perl "$RAW_PL" "$RESP_PORT" "$@" 2>&1; }

# raw_case NAME EXPECTED STEPS...
raw_case() {
    local name=$1 want=$2
    shift 2
    check "$name" "$want" "$(raw "$@")"
}

# cli ARGS...: redis-cli in its human-readable format
cli() { timeout 20 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --no-raw "$@" 2>&1; }

# cli_case NAME EXPECTED ARGS...
cli_case() {
    local name=$1 want=$2
    shift 2
    check "$name" "$want" "$(cli "$@")"
}

# json_of TABLE ID: what SQL says the row's JSON is
json_of() { sql "SELECT row_to_json(lc_row_)::text FROM $1 lc_row_ WHERE lc_row_.id = $2"; }

# wait_for DESCRIPTION SECONDS command...: polls the command until it succeeds; false on timeout
wait_for() {
    local what=$1 secs=$2 i
    shift 2
    for ((i = 0; i < secs * 10; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "      (gave up waiting ${secs}s for: $what)"
    return 1
}

# set_setting NAME VALUE|DEFAULT: ALTER SYSTEM SET (or RESET) + pg_reload_conf(); callers then
# wait until the workers have it (config_is, or a predicate on replies)
set_setting() {
    local name=$1 value=$2
    if [[ "$value" == DEFAULT ]]; then
        sql "ALTER SYSTEM RESET $name" >/dev/null
    else
        sql "ALTER SYSTEM SET $name = '$value'" >/dev/null
    fi
    sql "SELECT pg_reload_conf()" >/dev/null
}

# config_is REDIS-NAME VALUE: six connections in a row (spread over the workers) report VALUE
config_is() {
    local i
    for i in 1 2 3 4 5 6; do
        [[ "$(timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --raw CONFIG GET "$1" 2>/dev/null | sed -n 2p)" == "$2" ]] || return 1
    done
}

resp_pong() { [[ "$(raw 'send:PING\r\n' read:1)" == '+PONG\r\n' ]]; }
ping_reply() { raw 'send:PING\r\n' read:1 eof:1; }

log_size() { stat -c %s "$LOG"; }
log_since() { tail -c +"$(($1 + 1))" "$LOG"; }

# Server log lines that mean a crash or an unclean exit.
crash_lines() {
    grep -E 'terminated by signal|exited with exit code [^01]|PANIC|TRAP:|server process .* was terminated|core dumped|double free|Segmentation' || true
}

# open_held: opens a connection kept in HELD; checks it answers PING; prints nothing
open_held() {
    local fd line
    exec {fd}<>"/dev/tcp/127.0.0.1/$RESP_PORT" || return 1
    HELD+=("$fd")
    printf 'PING\r\n' >&"$fd"
    IFS= read -r -t 10 -u "$fd" line || return 1
    [[ "$line" == $'+PONG\r' ]]
}

# send_held FD BYTES: writes to a held connection; a connection the server closed is not an
# error (and its SIGPIPE must not end the suite)
send_held() { ( trap '' PIPE; printf '%s' "$2" >&"$1" ) 2>/dev/null; }

close_held() {
    local fd
    for fd in "${HELD[@]:-}"; do [[ -n "$fd" ]] && exec {fd}>&- 2>/dev/null; done
    HELD=()
}

worker_pids() { sql "SELECT string_agg(pid::text, ' ' ORDER BY pid) FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker'"; }

# Sum of the RESP workers' peak resident memory (VmHWM) in kB.
workers_hwm_kb() {
    local pid kb total=0
    for pid in $(worker_pids); do
        kb=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$pid/status" 2>/dev/null)
        total=$((total + ${kb:-0}))
    done
    echo "$total"
}

as_pg() { if [[ $(id -u) -eq 0 ]]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }

# passwords_leaked: prints those of the PW_* passwords that appear in the server log
passwords_leaked() {
    local pw leaked=""
    for pw in "$PW_READER" "$PW_USER" "$PW_MD5" "$PW_NOLOGIN" "$PW_NOPERM" "$PW_WRONG"; do
        grep -qF -- "$pw" "$LOG" && leaked+="$pw "
    done
    printf '%s' "$leaked"
}

# ---------------------------------------------------------------------------- cluster

# Passwords: none of them may ever appear in the server log.
PW_READER='rdr-Pw-7Hq2-xyzzy'
PW_USER='usr-Pw-3Kd9-plugh'
PW_MD5='md5-Pw-8Zt4-frotz'
PW_NOLOGIN='nol-Pw-5Mx1-gnusto'
PW_NOPERM='npm-Pw-2Vb6-rezrov'
PW_WRONG='wrong-Pw-9Qa3-blorb'

cleanup() {
    close_held
    "$CLUSTER_SH" destroy "$DIR" >/dev/null 2>&1 || true
    if ((FAILED == 0)) && [[ "${KEEP_TMP:-0}" != 1 ]]; then
        rm -rf "$WORK"
    else
        echo "redis_cli.sh: work directory kept: $WORK"
    fi
}

# start_cluster: starts the throwaway cluster, creates the fixtures, waits for the RESP server;
# on any failure prints the summary line and exits
start_cluster() {
    local out
    WORK=$(mktemp -d /tmp/lc_resp_cli.XXXXXX)
    chmod 755 "$WORK"
    DIR=$WORK/c
    LOG=$DIR/server.log
    trap cleanup EXIT

    section "throwaway cluster"
    RESP_PORT=$("$CLUSTER_SH" freeport)
    if ! out=$(timeout 120 "$CLUSTER_SH" start "$DIR" auto \
            "local_cache.resp_port = $RESP_PORT" \
            "local_cache.resp_role = 'regress_resp_reader'" \
            "local_cache.resp_workers = 2" \
            "local_cache.resp_io_uring = ${RESP_IO_URING:-on}" \
            "track_commit_timestamp = on" \
            "timezone = 'America/New_York'" 2>&1); then
        echo "$out"
        echo "redis_cli.sh: the cluster did not start"
        echo "0 passed, 1 failed"
        FAILED=1
        exit 1
    fi
    echo "$out"
    echo "RESP port $RESP_PORT"
    SUPERUSER=$(stat -c %U "$DIR/data")
    # Passwords are checked over TCP, as a DBA would set it up (md5 takes SCRAM secrets too).
    "$CLUSTER_SH" hba "$DIR" "host all all 127.0.0.1/32 md5" "host all all ::1/128 md5"

    create_fixtures

    if ! wait_for "RESP server answering PING on port $RESP_PORT" 30 resp_pong; then
        tail -n 30 "$LOG"
        FAILED=$((FAILED + 1))
        echo "redis_cli.sh: the RESP server does not answer"
        echo "$PASSED passed, $FAILED failed"
        exit 1
    fi
    # Where the kernel allows io_uring (Linux 6.1 or later; tools/test.sh checks the ring itself
    # in its unit tests), connections go through it unless RESP_IO_URING=off.
    local through=io_uring
    [[ ${RESP_IO_URING:-on} == off ]] && through=epoll
    check "both workers serve their connections through $through" 2 \
        "$(grep -c "listening on .* connections through $through\$" "$LOG")"
    J1=$(json_of items 1)
    J2=$(json_of items 2)
    J3=$(json_of items 3)
}

# create_fixtures: the roles and the cached tables the suites read (and change: each suite puts
# back what the later ones rely on)
create_fixtures() {
    local setup
    setup=$(sql "
CREATE EXTENSION local_cache;
SET password_encryption = 'scram-sha-256';
CREATE ROLE regress_resp_reader LOGIN PASSWORD '$PW_READER';
CREATE ROLE regress_resp_user LOGIN PASSWORD '$PW_USER';
CREATE ROLE regress_resp_nologin NOLOGIN PASSWORD '$PW_NOLOGIN';
CREATE ROLE regress_resp_noperm LOGIN PASSWORD '$PW_NOPERM';
SET password_encryption = 'md5';
CREATE ROLE regress_resp_md5 LOGIN PASSWORD '$PW_MD5';
RESET password_encryption;

CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items SELECT g, 'value ' || g FROM generate_series(1, 20) g;
SELECT local_cache.enable('items');

CREATE TYPE regress_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE typed (
    id integer PRIMARY KEY,
    ts timestamptz, tsl timestamp, d date, iv interval,
    f8 float8, f4 real, n numeric,
    mood regress_mood, t text, js json, jb jsonb,
    arr integer[], tarr text[], b bytea, bo boolean, u uuid, nul text,
    \"we\"\"ird col\" text);
INSERT INTO typed VALUES
 (1, '2024-03-10 06:30:00.123456+00', '2024-03-10 01:30:00', '2024-02-29', '1 day 02:03:04.5',
  0.1, 3.4028235e38, 123456789.000000001, 'happy',
  E'quote \" backslash \\\\ newline \\n tab \\t cr \\r ctl \\x01\\x1f del \\x7f \\u00e9 \\u65e5\\u672c \\U0001F600 / <b>',
  E'{\"a\" :\\n [1, 2.50, \"x\"]}', '{\"b\": [true, null], \"a\": 1.0}',
  '{1,NULL,3}', '{\"a b\",\"c,d\",NULL}', '\\x00ff10', true, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
  NULL, 'w'),
 (2, '-infinity', 'infinity', '4713-01-01 BC', '-1 year', 'NaN', '-Infinity', -0.0, 'sad',
  '', 'null', '\"str\"', '{}', '{}', '', false, NULL, NULL, NULL),
 (3, NULL, NULL, NULL, NULL, 1e-310, -0.0, 1e100, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT local_cache.enable('typed', resp_prefix => 'ty');

CREATE TABLE small (id smallint PRIMARY KEY, v text);
INSERT INTO small VALUES (-5, 'minus five'), (0, 'zero'), (32767, 'max');
SELECT local_cache.enable('small');

CREATE TABLE colon_t (id integer PRIMARY KEY, v text);
INSERT INTO colon_t VALUES (7, 'seven');
SELECT local_cache.enable('colon_t', resp_prefix => 'app_users');

CREATE TABLE bigrow (id integer PRIMARY KEY, v text);
INSERT INTO bigrow VALUES (1, repeat('x', 4000));
SELECT local_cache.enable('bigrow', resp_prefix => 'big');

CREATE TABLE secret (id integer PRIMARY KEY, v text);
INSERT INTO secret VALUES (1, 'classified');
SELECT local_cache.enable('secret');
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY everything ON secret USING (true);

CREATE TABLE dropme (id integer PRIMARY KEY, v text);
INSERT INTO dropme VALUES (1, 'soon gone');
SELECT local_cache.enable('dropme');

GRANT SELECT ON items, typed, small, colon_t, bigrow, secret, dropme
    TO regress_resp_reader, regress_resp_user, regress_resp_md5, regress_resp_nologin;
" 2>&1)
    if [[ $? -ne 0 ]]; then
        echo "$setup"
        echo "redis_cli.sh: setup SQL failed"
        FAILED=$((FAILED + 1))
        echo "$PASSED passed, $FAILED failed"
        exit 1
    fi
}
