# regress/resp/suites/commands.sh: the data commands answer what SQL says, byte for byte, and
# commands the server does not run are refused as Redis refuses them.
#   keys        MGET / GET / EXISTS: hits, misses, duplicates, keys that name no row
#   JSON        replies equal row_to_json (session-dependent types, escaping, TimeZone reloads)
#   hashes      HGET / HMGET / HGETALL in RESP2 and RESP3
#   keyspace    TYPE, TTL/PTTL, STRLEN, HEXISTS/HSTRLEN/HKEYS/HVALS/HLEN, MEMORY USAGE, TIME, a NUL
#               inside a key
#   hits        cache hits cost no transaction
#   freshness   read after commit: UPDATE, DELETE, INSERT, TRUNCATE, uncommitted writes,
#               disabled and dropped tables
#   MULTI       queued replies, EXEC's array, EXECABORT, a MULTI across tables as one snapshot
#               while SQL writes both tables, a locked table making EXEC wait
#   refusals    unknown commands and subcommands, wrong arity, writes with no meaning for rows,
#               writes without the privilege
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh commands). Leaves the
# items rows as they were at the start, except items:5 and items:6 (changed values); drops dropme.

section "MGET / GET / EXISTS: hits, misses, duplicates, bad keys"
check "items:1 JSON from SQL" '{"id":1,"value":"value 1"}' "$J1"
cli_case "redis-cli MGET (README example)" \
"1) \"{\\\"id\\\":1,\\\"value\\\":\\\"value 1\\\"}\"
2) \"{\\\"id\\\":2,\\\"value\\\":\\\"value 2\\\"}\"
3) (nil)" MGET items:1 items:2 items:999999
raw_case "MGET misses first (fills), then hits" \
    "*3\\r\\n$(bulk "$J1")\$-1\\r\\n$(bulk "$J3")*3\\r\\n$(bulk "$J1")\$-1\\r\\n$(bulk "$J3")" \
    'send:MGET items:1 items:999999 items:3\r\nMGET items:1 items:999999 items:3\r\n' read:2
raw_case "MGET duplicates answered each time, in order" \
    "*5\\r\\n$(bulk "$J2")$(bulk "$J1")$(bulk "$J2")$(bulk "$J2")$(bulk "$J1")" \
    'send:*6\r\n$4\r\nMGET\r\n$7\r\nitems:2\r\n$7\r\nitems:1\r\n$7\r\nitems:2\r\n$7\r\nitems:2\r\n$7\r\nitems:1\r\n' read:1
raw_case "MGET bad keys are nil" \
    '*12\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n' \
    'send:MGET items:01 items:-0 nope:1 items:abc items: :1 items:+1 items:1.0 ITEMS:1 items:9223372036854775808 items:-9223372036854775809 items::1\r\n' read:1
raw_case "keys with spaces, empty key, binary bytes are nil" \
    '*3\r\n$-1\r\n$-1\r\n$-1\r\n' \
    'send:*4\r\n$4\r\nMGET\r\n$8\r\nitems: 1\r\n$0\r\n\r\n$8\r\nitems:\x001\r\n' read:1
raw_case "extreme ids are plain misses" \
    '*3\r\n$-1\r\n$-1\r\n$-1\r\n' \
    'send:MGET items:9223372036854775807 items:-9223372036854775808 items:0\r\n' read:1
raw_case "smallint key: in range and out of range" \
    "*5\\r\\n$(bulk "$(json_of small -5)")$(bulk "$(json_of small 0)")$(bulk "$(json_of small 32767)")\$-1\\r\\n\$-1\\r\\n" \
    'send:MGET small:-5 small:0 small:32767 small:32768 small:-9223372036854775808\r\n' read:1
raw_case "integer key out of range is a miss" \
    '$-1\r\n$-1\r\n' 'send:GET ty:2147483648\r\nGET ty:-2147483649\r\n' read:2
raw_case "custom resp_prefix; the table name is not a prefix then" \
    "$(bulk "$(json_of colon_t 7)")\$-1\\r\\n\$-1\\r\\n" 'send:GET app_users:7\r\nGET colon_t:7\r\nGET app_users:x:7\r\n' read:3
raw_case "GET hit and miss" "$(bulk "$J2")\$-1\\r\\n" 'send:GET items:2\r\nGET items:0\r\n' read:2
raw_case "EXISTS counts duplicates, ignores bad keys" ':3\r\n:0\r\n' \
    'send:EXISTS items:1 items:1 items:2 items:999 items:01\r\nEXISTS nope:1\r\n' read:2
raw_case "lowercase and mixed-case command names" "$(bulk "$J1")*1\\r\\n$(bulk "$J1")" \
    'send:get items:1\r\nmGeT items:1\r\n' read:2

section "JSON byte for byte: session-dependent types, escaping"
for id in 1 2 3; do
    want=$(json_of typed "$id")
    raw_case "typed row $id equals row_to_json" "$(bulk "$want")" "send:GET ty:$id\\r\\n" read:1
    raw_case "typed row $id again (served from the cache)" "$(bulk "$want")" "send:GET ty:$id\\r\\n" read:1
done
want_t=$(sql "SELECT t FROM typed WHERE id = 1")
raw_case "HGET text column with control characters (raw text, no JSON escaping)" \
    "$(bulk "$want_t")" 'send:HGET ty:1 t\r\n' read:1
raw_case "HGET json column keeps its text" "$(bulk "$(sql "SELECT js FROM typed WHERE id = 1")")" \
    'send:HGET ty:1 js\r\n' read:1
raw_case "HMGET typed columns as text; NULL column and unknown column nil" \
    "*7\\r\\n$(bulk "$(sql "SELECT ts FROM typed WHERE id = 1")")$(bulk "$(sql "SELECT f8 FROM typed WHERE id = 1")")$(bulk happy)$(bulk "$(sql "SELECT arr FROM typed WHERE id = 1")")$(bulk "$(sql "SELECT b FROM typed WHERE id = 1")")\$-1\\r\\n\$-1\\r\\n" \
    'send:HMGET ty:1 ts f8 mood arr b nul nosuchcolumn\r\n' read:1
raw_case "HGET column name needing quotes" "$(bulk w)" \
    'send:*3\r\n$4\r\nHGET\r\n$4\r\nty:1\r\n$10\r\nwe"ird col\r\n' read:1
raw_case "HGET column names are case-sensitive" '$-1\r\n' 'send:HGET ty:1 TS\r\n' read:1

# timestamptz is rendered per read: a new TimeZone (reload) changes the next reply
before=$(json_of typed 1)
set_setting timezone 'Asia/Kolkata'
ts_changed() { [[ "$(json_of typed 1)" != "$before" && "$(raw 'send:GET ty:1\r\n' read:1)" == "$(bulk "$(json_of typed 1)")" ]]; }
get_ty1() { echo "GET ty:1: $(raw 'send:GET ty:1\r\n' read:1); SQL: $(json_of typed 1)"; }
wait_case "timestamptz follows a reloaded TimeZone (rendered per read)" \
    "GET ty:1 equal to row_to_json under the new TimeZone within 10 s" 10 ts_changed get_ty1
set_setting timezone DEFAULT
ts_synced() { [[ "$(raw 'send:GET ty:1\r\n' read:1)" == "$(bulk "$(json_of typed 1)")" ]]; }
for i in 1 2 3 4 5 6; do wait_for "TimeZone reset in every worker" 10 ts_synced || break; done

section "HGET / HMGET / HGETALL in RESP2 and RESP3"
raw_case "HGET / HMGET RESP2" \
    "$(bulk "value 1")$(bulk 1)\$-1\\r\\n\$-1\\r\\n*3\\r\\n$(bulk "value 2")\$-1\\r\\n$(bulk 2)*2\\r\\n\$-1\\r\\n\$-1\\r\\n" \
    'send:HGET items:1 value\r\nHGET items:1 id\r\nHGET items:1 nope\r\nHGET items:999 value\r\nHMGET items:2 value nope id\r\nHMGET items:01 value id\r\n' read:6
raw_case "HGETALL RESP2: flat array, NULL columns absent; missing row empty" \
    "*4\\r\\n$(bulk id)$(bulk 1)$(bulk value)$(bulk "value 1")*1\\r\\n$(bulk 3)*0\\r\\n*0\\r\\n" \
    'send:HGETALL items:1\r\nHMGET ty:3 id\r\nHGETALL items:999\r\nHGETALL bad\r\n' read:4
raw_case "HGETALL typed row 3 keeps only non-NULL columns" \
    "*8\\r\\n$(bulk id)$(bulk 3)$(bulk f8)$(bulk "$(sql "SELECT f8 FROM typed WHERE id = 3")")$(bulk f4)$(bulk "$(sql "SELECT f4 FROM typed WHERE id = 3")")$(bulk n)$(bulk "$(sql "SELECT n FROM typed WHERE id = 3")")" \
    'send:HGETALL ty:3\r\n' read:1
raw_case "after HELLO 3: HGETALL is a map, nil is _, MGET array" \
    "%2\\r\\n$(bulk id)$(bulk 1)$(bulk value)$(bulk "value 1")_\\r\\n*2\\r\\n$(bulk "$J1")_\\r\\n%0\\r\\n*2\\r\\n$(bulk "value 1")_\\r\\n" \
    'send:HELLO 3\r\n' skip:1 'send:HGETALL items:1\r\nHGET items:1 nope\r\nMGET items:1 items:999\r\nHGETALL items:999\r\nHMGET items:1 value nope\r\n' read:5
cli_case "redis-cli -3 HGETALL" '1# "id" => "1"
2# "value" => "value 1"' -3 HGETALL items:1
cli_case "redis-cli HGETALL (RESP2)" '1) "id"
2) "1"
3) "value"
4) "value 1"' HGETALL items:1

section "key introspection: TYPE, TTL, STRLEN, hash sizes, MEMORY USAGE, TIME"
raw_case "TYPE: string for a row, none otherwise" '+string\r\n+none\r\n+none\r\n' \
    'send:TYPE items:1\r\nTYPE items:999999\r\nTYPE nope:1\r\n' read:3
raw_case "TTL / PTTL: -1 for a row (never expires), -2 otherwise" ':-1\r\n:-1\r\n:-2\r\n:-2\r\n' \
    'send:TTL items:1\r\nPTTL items:1\r\nTTL items:999999\r\nPTTL nope:1\r\n' read:4
raw_case "STRLEN: the JSON's length" ":${#J1}\r\n:0\r\n" 'send:STRLEN items:1\r\nSTRLEN items:999999\r\n' read:2
raw_case "HEXISTS / HSTRLEN / HLEN / HKEYS / HVALS read the row's columns" \
    ":1\r\n:0\r\n:7\r\n:2\r\n*2\r\n\$2\r\nid\r\n\$5\r\nvalue\r\n*2\r\n\$1\r\n1\r\n\$7\r\nvalue 1\r\n:0\r\n" \
    'send:HEXISTS items:1 value\r\nHEXISTS items:1 nope\r\nHSTRLEN items:1 value\r\nHLEN items:1\r\nHKEYS items:1\r\nHVALS items:1\r\nHLEN items:999999\r\n' read:7
check_re "MEMORY USAGE: a size for a row" '^:[1-9][0-9]*\\r\\n\$-1\\r\\n$' \
    "$(raw 'send:MEMORY USAGE items:1\r\nMEMORY USAGE items:999999\r\n' read:2)"
check_re "TIME: seconds and microseconds" '^\*2\\r\\n\$10\\r\\n[0-9]{10}\\r\\n\$[1-6]\\r\\n[0-9]{1,6}\\r\\n$' \
    "$(raw 'send:TIME\r\n' read:1)"
raw_case "a NUL inside a key is part of the key (as in Redis): nil" '$-1\r\n$-1\r\n' \
    'send:*2\r\n$3\r\nGET\r\n$12\r\nitems:1\x00junk\r\n*2\r\n$3\r\nGET\r\n$12\r\nitems\x00junk:1\r\n' read:2

section "cache hits are served without a transaction"
xacts() { sql "SELECT pg_stat_force_next_flush(); SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()" | tail -n 1; }
# hits_without_transactions REQUEST N PATTERN: sends REQUEST N times on one connection (its
# keys cached before); prints how many replies match PATTERN and the transactions the
# database counted meanwhile (the workers report their statistics at most once a second)
hits_without_transactions() {
    local request=$1 n=$2 pattern=$3 before after answered
    raw "send:$request$request" read:2 >/dev/null
    sleep 1.2
    before=$(xacts)
    answered=$(raw "send:$(for i in $(seq 1 "$n"); do printf '%s' "$request"; done)" read:"$n" | grep -o "$pattern" | wc -l)
    sleep 1.2
    after=$(xacts)
    echo "$answered $((after - before))"
}
read -r answered xacts_spent <<<"$(hits_without_transactions 'MGET items:8 items:7\r\n' 300 'value 7')"
check "300 hit requests answered" "300" "$answered"
check_re "... with no transaction each (fewer than 60 in all, counting other sessions')" '^[0-5]?[0-9]$' "$xacts_spent"
# Keys without a row are cached too (negative entries): answered nil without a transaction.
read -r answered xacts_spent <<<"$(hits_without_transactions 'GET items:424242\r\n' 300 '\$-1')"
check "300 GETs of a key without a row: nil" "300" "$answered"
check_re "... answered from the cache, with no transaction each" '^[0-5]?[0-9]$' "$xacts_spent"

section "read after commit"
raw 'send:MGET items:1 items:2 items:3 items:21\r\n' read:1 >/dev/null  # cached now
sql "UPDATE items SET value = 'updated 1' WHERE id = 1" >/dev/null
raw_case "UPDATE then MGET shows the new row" "*1\\r\\n$(bulk '{"id":1,"value":"updated 1"}')" 'send:MGET items:1\r\n' read:1
sql "DELETE FROM items WHERE id = 2" >/dev/null
raw_case "DELETE then MGET shows nil" '*2\r\n$-1\r\n$-1\r\n' 'send:MGET items:2 items:2\r\n' read:1
sql "INSERT INTO items VALUES (21, 'inserted')" >/dev/null
raw_case "INSERT then GET shows the row (a cached miss does not stick)" "$(bulk '{"id":21,"value":"inserted"}')" 'send:GET items:21\r\n' read:1
sql "UPDATE items SET id = 22 WHERE id = 21" >/dev/null
raw_case "key UPDATE moves the row" "\$-1\\r\\n$(bulk '{"id":22,"value":"inserted"}')" 'send:GET items:21\r\nGET items:22\r\n' read:2
raw 'send:MGET items:1 items:3 items:22 ty:1\r\n' read:1 >/dev/null
sql "TRUNCATE items" >/dev/null
raw_case "TRUNCATE then MGET shows nils" '*3\r\n$-1\r\n$-1\r\n$-1\r\n' 'send:MGET items:1 items:3 items:22\r\n' read:1
sql "INSERT INTO items SELECT g, 'value ' || g FROM generate_series(1, 20) g" >/dev/null
raw_case "rows inserted after TRUNCATE are served" "$(bulk "$J1")" 'send:GET items:1\r\n' read:1
sql "UPDATE typed SET mood = 'ok', f8 = 2.5 WHERE id = 1" >/dev/null
raw_case "UPDATE of a row rendered per read" "$(bulk "$(json_of typed 1)")" 'send:GET ty:1\r\n' read:1
sql "UPDATE typed SET mood = 'happy', f8 = 0.1 WHERE id = 1" >/dev/null

# 30 updates, each read back at once on one persistent connection
exec {conn}<>"/dev/tcp/127.0.0.1/$RESP_PORT"
stale=""
for i in $(seq 1 30); do
    sql "UPDATE items SET value = 'round $i' WHERE id = 5" >/dev/null
    printf 'GET items:5\r\n' >&"$conn"
    IFS= read -r -t 10 -u "$conn" header || { stale="no reply in round $i"; break; }
    IFS= read -r -t 10 -u "$conn" body || { stale="no body in round $i"; break; }
    if [[ "$body" != "{\"id\":5,\"value\":\"round $i\"}"$'\r' ]]; then
        stale="round $i: $header $body"
        break
    fi
done
exec {conn}>&-
check "30 UPDATEs each visible to the next GET on one connection" "" "$stale"

# an uncommitted UPDATE is not visible; after its COMMIT it is
timeout 30 "$CLUSTER_SH" psql "$DIR" -Atq -c "BEGIN" -c "UPDATE items SET value = 'pending' WHERE id = 6" \
    -c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null 2>&1 &
writer=$!
in_sleep() { [[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(3)'")" == 1 ]]; }
if wait_for "the writer's UPDATE" 10 in_sleep; then
    raw_case "uncommitted UPDATE not visible" "$(bulk '{"id":6,"value":"value 6"}')" 'send:GET items:6\r\n' read:1
else
    fail "uncommitted UPDATE not visible" "the writer session to reach pg_sleep" "it did not within 10 s"
fi
wait "$writer"
raw_case "after COMMIT returned, visible" "$(bulk '{"id":6,"value":"pending"}')" 'send:GET items:6\r\n' read:1

# a disabled table's keys are missing; a dropped table's too
sql "SELECT local_cache.disable('items')" >/dev/null
raw_case "disabled table: keys missing" '$-1\r\n' 'send:GET items:1\r\n' read:1
sql "SELECT local_cache.enable('items')" >/dev/null
raw_case "enabled again: served" "$(bulk "$J1")" 'send:GET items:1\r\n' read:1
raw 'send:GET dropme:1\r\n' read:1 >/dev/null
sql "DROP TABLE dropme" >/dev/null
raw_case "dropped table: keys missing, server fine" '$-1\r\n+PONG\r\n' 'send:GET dropme:1\r\nPING\r\n' read:2

UNSUPPORTED='not supported by local_cache: write rows with SET, MSET, DEL, HSET, HDEL, HINCRBY or SQL'
section "MULTI / EXEC: one snapshot for the queued reads"
raw_case "MULTI, two GETs, EXEC" "+OK\\r\\n+QUEUED\\r\\n+QUEUED\\r\\n*2\\r\\n$(bulk "$J1")\$-1\\r\\n" \
    'send:MULTI\r\nGET items:1\r\nGET items:999999\r\nEXEC\r\n' read:4
raw_case "an error inside EXEC fails that command only; the later ones are answered" \
    "+OK\\r\\n+QUEUED\\r\\n+QUEUED\\r\\n+QUEUED\\r\\n*3\\r\\n-NOPERM table \"secret\" has row-level security enabled\\r\\n$(bulk "$J1"):1\\r\\n" \
    'send:MULTI\r\nGET secret:1\r\nGET items:1\r\nEXISTS items:2\r\nEXEC\r\n' read:5
raw_case "an unsupported write in MULTI: refused, EXEC aborts" \
    "+OK\\r\\n-ERR $UNSUPPORTED\\r\\n-EXECABORT Transaction discarded because of previous errors.\\r\\n" \
    'send:MULTI\r\nINCR items:1\r\nEXEC\r\n' read:3
raw_case "DISCARD" '+OK\r\n+QUEUED\r\n+OK\r\n-ERR EXEC without MULTI\r\n' \
    'send:MULTI\r\nGET items:1\r\nDISCARD\r\nEXEC\r\n' read:4
# One SQL transaction per step sets items:11 and small:0 to the same step number; every EXEC of
# the two GETs must show the same number for both (separate snapshots would show mixes).
sql "UPDATE small SET v = 'step 0' WHERE id = 0; UPDATE items SET value = 'step 0' WHERE id = 11" >/dev/null
timeout 60 "$CLUSTER_SH" psql "$DIR" -Atq -c "DO \$\$ BEGIN FOR i IN 1..3000 LOOP
    UPDATE small SET v = 'step ' || i WHERE id = 0; UPDATE items SET value = 'step ' || i WHERE id = 11;
    COMMIT; END LOOP; END \$\$" >/dev/null 2>&1 &
writer=$!
exec_pairs=$WORK/exec_pairs
: >"$exec_pairs"
for round in $(seq 1 50); do
    for i in $(seq 1 100); do printf 'MULTI\nGET small:0\nGET items:11\nEXEC\n'; done |
        timeout 60 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --raw >>"$exec_pairs" 2>&1
    kill -0 "$writer" 2>/dev/null || break
done
wait "$writer"
mixed=$(perl -ne 'push @v, $1 if /"step (\d+)"/; END { my ($n, $bad, %seen) = (0, 0); while (@v >= 2) { my ($a, $b) = splice(@v, 0, 2); $n++; $seen{$a} = 1; $bad++ if $a != $b; } my $steps = keys %seen; print $n < 100 ? "only $n pairs" : $bad ? "$bad of $n mixed" : $steps < 3 ? "only $steps steps seen: the writer did not overlap" : "" }' "$exec_pairs")
check "EXECs of GET small:0 + GET items:11 while SQL writes both: never mixed" "" "$mixed"
sql "UPDATE small SET v = 'zero' WHERE id = 0; UPDATE items SET value = 'value 11' WHERE id = 11" >/dev/null
# A queued read whose table is locked: EXEC waits (the worker serves others), then answers.
timeout 30 "$CLUSTER_SH" psql "$DIR" -Atq -c "BEGIN" -c "LOCK TABLE items IN ACCESS EXCLUSIVE MODE" \
    -c "SELECT pg_sleep(0.5)" -c "COMMIT" >/dev/null 2>&1 &
writer=$!
locked() { [[ "$(sql "SELECT count(*) FROM pg_locks WHERE relation = 'items'::regclass AND mode = 'AccessExclusiveLock' AND granted")" == 1 ]]; }
wait_for "the LOCK TABLE" 10 locked
raw_case "EXEC with a locked table waits for the lock and answers whole" "+OK\\r\\n+QUEUED\\r\\n+QUEUED\\r\\n*2\\r\\n+PONG\\r\\n$(bulk "$J1")" \
    'send:MULTI\r\nPING\r\nGET items:1\r\nEXEC\r\n' read:4
wait "$writer"

section "errors"
raw_case "unknown command" "-ERR unknown command 'FOO', with args beginning with: 'a' 'b c' \\r\\n" \
    'send:FOO a "b c"\r\n' read:1
raw_case "unknown command without args" "-ERR unknown command 'nosuch', with args beginning with: \\r\\n" \
    'send:nosuch\r\n' read:1
raw_case "unknown subcommand" "-ERR unknown subcommand 'bogus'. Try CLIENT HELP.\\r\\n" 'send:CLIENT bogus\r\n' read:1
raw_case "wrong arity" \
    "-ERR wrong number of arguments for 'get' command\\r\\n-ERR wrong number of arguments for 'mget' command\\r\\n-ERR wrong number of arguments for 'hget' command\\r\\n-ERR wrong number of arguments for 'client|setname' command\\r\\n-ERR wrong number of arguments for 'echo' command\\r\\n-ERR wrong number of arguments for 'get' command\\r\\n" \
    'send:GET\r\nMGET\r\nHGET items:1\r\nCLIENT SETNAME\r\nECHO\r\nGET a b\r\n' read:6
cli_case "redis-cli shows the error" "(error) ERR wrong number of arguments for 'get' command" GET
ro="-ERR $UNSUPPORTED\\r\\n"
raw_case "writes with no meaning for rows are refused" "$ro$ro$ro$ro$ro$ro" \
    'send:EXPIRE items:1 10\r\nINCR items:1\r\nFLUSHALL\r\nFLUSHDB\r\nGETDEL items:1\r\nLPUSH items:1 x\r\n' read:6
raw_case "writes without the privilege (the reader has SELECT only): NOPERM" \
    '-NOPERM permission denied for table items\r\n-NOPERM permission denied for table items\r\n-NOPERM permission denied for table items\r\n' \
    'send:SET items:1 {}\r\nDEL items:1\r\nHSET items:1 value x\r\n' read:3
raw_case "the row is untouched after refused writes" "$(bulk "$J1")" 'send:GET items:1\r\n' read:1
raw_case "wrong arity of a write command: arity first" "-ERR wrong number of arguments for 'set' command\\r\\n" 'send:SET x\r\n' read:1
