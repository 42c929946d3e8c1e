# regress/resp/suites/clients.sh: the Redis tools work against the RESP server with their
# default options, and SCAN/KEYS walk exactly the keys SQL says exist.
#   SCAN        redis-cli --scan (with --pattern), SCAN COUNT/MATCH with cursors continued on
#               new connections, tables the role may not read skipped, committed writes seen;
#               cursors no other role's SCANs invalidate, that cannot be changed or used by
#               another role
#   KEYS        the same keys from one snapshot
#   tools       redis-cli --bigkeys, --memkeys, --stat, --latency; redis-benchmark GET and MGET
#   batching    busy workers pause (INFO batch_pauses), never for a lone client nor when turned off
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh clients). Leaves the
# fixtures as it found them.

# Every key regress_resp_reader may read, from SQL: the rows of each enabled table it has
# SELECT on, without row-level security (every fixture's key column is "id").
sql "CREATE OR REPLACE FUNCTION regress_resp_keys(pattern text DEFAULT '%') RETURNS SETOF text
LANGUAGE plpgsql AS \$\$
DECLARE t record;
BEGIN
    FOR t IN SELECT relid, resp_prefix FROM local_cache.tables JOIN pg_class c ON c.oid = relid
             WHERE NOT c.relrowsecurity AND has_table_privilege('regress_resp_reader', relid, 'SELECT') LOOP
        RETURN QUERY EXECUTE format('SELECT k FROM (SELECT %L || '':'' || id AS k FROM %s) s WHERE k LIKE %L',
                                    t.resp_prefix, t.relid, pattern);
    END LOOP;
END \$\$" >/dev/null
sql_keys() { sql "SELECT regress_resp_keys('${1:-%}')" | sort; }
sorted_cli() { cli --raw "$@" | sort; }

section "SCAN: redis-cli --scan walks the keys SQL has"
all_keys=$(sql_keys)
check_re "the fixtures have keys in several tables" 'items:20.*ty:3' "$(echo $all_keys)"
check "redis-cli --scan: every key once" "$all_keys" "$(sorted_cli --scan)"
# scan_walk_from CURSOR ARGS...: SCAN from CURSOR to the end, a new connection for every call
scan_walk_from() {
    local cursor=$1 reply calls=0
    shift
    while :; do
        reply=$(cli --raw SCAN "$cursor" "$@")
        cursor=$(printf '%s\n' "$reply" | head -n 1)
        printf '%s\n' "$reply" | tail -n +2 | grep -v '^$'
        calls=$((calls + 1))
        [[ "$cursor" == 0 || ! "$cursor" =~ ^[0-9]+$ || $calls -gt 200 ]] && break
    done
}
scan_walk() { scan_walk_from 0 "$@"; }
check "SCAN COUNT 3, each call on a new connection: every key once" "$all_keys" "$(scan_walk COUNT 3 | sort)"
check "SCAN MATCH items:1* COUNT 4" "$(sql_keys 'items:1%')" "$(scan_walk MATCH 'items:1*' COUNT 4 | sort)"
check_re "SCAN 0 COUNT 5: a cursor and five keys" '^[1-9][0-9]*( [^ ]+){5}$' "$(echo $(cli --raw SCAN 0 COUNT 5))"
check "redis-cli --scan --pattern 'items:1*'" "$(sql_keys 'items:1%')" "$(sorted_cli --scan --pattern 'items:1*')"
check "redis-cli --scan --pattern 'nothing:*': none" "" "$(cli --raw --scan --pattern 'nothing:*')"
check "row-level security: secret's keys are not listed" "" "$(cli --raw --scan --pattern 'secret:*')"
raw_case "SCAN: a cursor never handed out" '-ERR invalid cursor\r\n' 'send:SCAN 123456789\r\n' read:1
raw_case "SCAN TYPE hash: no keys (every key is a string)" '*2\r\n$1\r\n0\r\n*0\r\n' 'send:SCAN 0 TYPE hash\r\n' read:1
sql "INSERT INTO items VALUES (777, 'scanned')" >/dev/null
check "a committed INSERT is walked" "items:777" "$(cli --raw --scan --pattern 'items:777')"
sql "DELETE FROM items WHERE id = 777" >/dev/null
check "a committed DELETE is not" "" "$(cli --raw --scan --pattern 'items:777')"
raw_case "NOPERM roles: tables without SELECT are skipped, not refused" '*2\r\n$1\r\n0\r\n*0\r\n' \
    "send:AUTH regress_resp_noperm $PW_NOPERM\\r\\n" skip:1 'send:SCAN 0 MATCH items:* COUNT 1000\r\n' read:1

# Cursors carry their position, signed (resp_server/commands/scan_cursor.h), as Redis's do: nothing another
# role does makes one invalid, a changed cursor is refused, and no role goes on with another's walk.
first=$(cli --raw SCAN 0 COUNT 3)
cursor=$(printf '%s\n' "$first" | head -n 1)
check_re "SCAN 0 COUNT 3: a cursor of digits" '^[1-9][0-9]{65,665}$' "$cursor"
raw_case "another role cannot go on with the walk" '-ERR invalid cursor\r\n' \
    "send:AUTH regress_resp_user $PW_USER\\r\\n" skip:1 "send:SCAN $cursor\\r\\n" read:1
# (numbered cursors made this a cursor just handed out, or an earlier one)
last=${cursor: -1}
raw_case "a cursor with one digit changed: -ERR invalid cursor" '-ERR invalid cursor\r\n' \
    "send:SCAN ${cursor%?}$(((last + 1) % 10))\\r\\n" read:1
check "another role's 8,200 SCAN 0 COUNT 1 meanwhile" '+PONG\r\n' \
    "$(raw "send:AUTH regress_resp_user $PW_USER\\r\\n" skip:1 timeout:120 'repeat:8200:SCAN 0 COUNT 1\r\n' skip:8200 \
        'send:PING\r\n' read:1)"
check "... the first walk goes on after them and returns every key once" "$all_keys" \
    "$( { printf '%s\n' "$first" | tail -n +2 | grep -v '^$'; scan_walk_from "$cursor" COUNT 3; } | sort)"
# redis-py turns each cursor into a Python int and back (exact at any size): its iterator walks
py_keys=$(timeout 60 /usr/bin/python3 -c 'import redis, sys
for key in redis.Redis(host="127.0.0.1", port=int(sys.argv[1])).scan_iter(count=3):
    print(key.decode())' "$RESP_PORT" 2>&1 | sort)
check "redis-py scan_iter(count=3): every key once" "$all_keys" "$py_keys"
raw_case "redis-cli's form of a long cursor (2^64 - 1) without a walk on the connection: refused" \
    '-ERR invalid cursor\r\n' 'send:SCAN 18446744073709551615\r\n' read:1

section "KEYS"
check "KEYS *: every key" "$all_keys" "$(sorted_cli --raw KEYS '*')"
check "KEYS ty:*" "$(sql_keys 'ty:%')" "$(sorted_cli --raw KEYS 'ty:*')"

section "redis-cli tools and redis-benchmark"
out=$(timeout 60 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --bigkeys 2>&1)
check_re "redis-cli --bigkeys: finds the largest row" "Biggest string found '\"big:1\"' has [0-9]+ bytes" "$out"
check_re "redis-cli --bigkeys: sampled every key" "Sampled $(echo "$all_keys" | wc -l) keys in the keyspace" "$out"
out=$(timeout 60 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --memkeys 2>&1)
check_re "redis-cli --memkeys: finds the largest row" "Biggest string found '\"big:1\"' has [0-9]+ bytes" "$out"
# --stat and --latency print for a terminal only: give them one (script, util-linux)
out=$(timeout 3 script -qc "redis-cli -h 127.0.0.1 -p $RESP_PORT --stat -i 0.3" /dev/null 2>&1 | tr -d '\r')
never_backwards=$(printf '%s\n' "$out" | awk '$1 ~ /^[0-9]+$/ { n++; if ($5 < last) bad = 1; last = $5 } END { print (n >= 3 && !bad) ? "yes" : "no: " NR " lines" }')
check "redis-cli --stat: a line a tick, requests never going backwards" "yes" "$never_backwards"
check_re "redis-cli --latency --raw: min, max, avg, samples" '^[0-9]+ [0-9]+ [0-9.]+ [1-9][0-9]*$' \
    "$(timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --latency --raw -i 1 2>&1)"
out=$(timeout 60 redis-benchmark -h 127.0.0.1 -p "$RESP_PORT" -n 2000 -c 8 -t get --csv 2>&1)
check_re "redis-benchmark -t get" '"GET","[0-9.]+"' "$out"
out=$(timeout 60 redis-benchmark -h 127.0.0.1 -p "$RESP_PORT" -n 2000 -c 8 --csv MGET items:1 items:2 items:3 2>&1)
check_re "redis-benchmark MGET of three rows" '"MGET items:1 items:2 items:3","[0-9.]+"' "$out"
check "redis-benchmark: no error replies" "" "$(printf '%s' "$out" | grep -i 'error' || true)"

section "batch pauses (local_cache.resp_batch_delay)"
batch_pauses() { timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --raw INFO stats | sed -n 's/^batch_pauses:\([0-9]*\).*/\1/p'; }
# busy_clients: 256 connections reading one row as fast as they can; prints the requests/s
busy_clients() {
    timeout 120 redis-benchmark -h 127.0.0.1 -p "$RESP_PORT" -n 100000 -c 256 --csv MGET items:1 2>&1 \
        | sed -n 's/^"MGET items:1","\([0-9]*\).*/\1/p'
}
before=$(batch_pauses)
check_re "INFO batch_pauses is a number" '^[0-9]+$' "$before"
timeout 60 redis-cli -h 127.0.0.1 -p "$RESP_PORT" -r 3000 GET items:1 >/dev/null
check "a lone client's 3,000 requests in a row are never held up" "$before" "$(batch_pauses)"
rate=$(busy_clients)
after=$(batch_pauses)
# the workers pause once their last millisecond had a read per pause (20 reads/ms at the
# default 50 us, each of 2 workers): judged only when the client got well beyond that
if ((${rate:-0} >= 80000)); then
    check "256 busy clients ($rate requests/s): the workers pause between loop turns" "yes" \
        "$( ((after > before)) && echo yes || echo "no: batch_pauses $before -> $after")"
else
    check "256 busy clients: too few requests/s (${rate:-none}) to judge the pauses" "" ""
fi
set_setting local_cache.resp_batch_delay 0
sleep 1   # no CONFIG GET for this one: give both workers the reload
before=$(batch_pauses)
busy_clients >/dev/null
check "local_cache.resp_batch_delay = 0: no pause under the same load" "$before" "$(batch_pauses)"
set_setting local_cache.resp_batch_delay DEFAULT

sql "DROP FUNCTION regress_resp_keys(text)" >/dev/null
