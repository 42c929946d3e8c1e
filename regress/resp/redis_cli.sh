#!/usr/bin/env bash
# regress/resp/redis_cli.sh: scripted tests of the RESP server with redis-cli (Debian's
# redis-tools) and byte-exact raw-socket checks (regress/resp/resp_raw.pl), on a throwaway
# cluster of its own (tools/cluster.sh). Needs the extension installed (make install).
#
#   regress/resp/redis_cli.sh          as root (servers run as postgres) or as a normal user
#   KEEP_TMP=1 regress/resp/redis_cli.sh   keep the cluster directory and its log
#
# Every case compares what came back with what was expected and prints both when they differ.
# The last line is `N passed, N failed`; the exit status is 0 only if nothing failed.
# Everything listens on 127.0.0.1 only; every wait is bounded.
set -uo pipefail
export LC_ALL=C PGCLIENTENCODING=UTF8
unset PGTZ PGOPTIONS PGDATESTYLE PGHOST PGPORT PGUSER PGDATABASE PGSERVICE PGPASSWORD

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/resp/lib.sh
source "$HERE/lib.sh"
require_tools
start_cluster

# ---------------------------------------------------------------------------- values

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

section "connection commands"
raw_case "PING / PING msg / ECHO" '+PONG\r\n$5\r\nhello\r\n$8\r\na b\r\nc d\r\n' \
    'send:PING\r\n*2\r\n$4\r\nPING\r\n$5\r\nhello\r\n*2\r\n$4\r\nECHO\r\n$8\r\na b\r\nc d\r\n' read:3
raw_case "PING with two arguments" "-ERR wrong number of arguments for 'ping' command\\r\\n" 'send:PING a b\r\n' read:1
hello_re='^\*14\\r\\n\$6\\r\\nserver\\r\\n\$5\\r\\nredis\\r\\n\$7\\r\\nversion\\r\\n\$5\\r\\n7\.2\.0\\r\\n\$5\\r\\nproto\\r\\n:2\\r\\n\$2\\r\\nid\\r\\n:[0-9]+\\r\\n\$4\\r\\nmode\\r\\n\$10\\r\\nstandalone\\r\\n\$4\\r\\nrole\\r\\n\$6\\r\\nmaster\\r\\n\$7\\r\\nmodules\\r\\n\*0\\r\\n$'
check_re "HELLO 2" "$hello_re" "$(raw 'send:HELLO 2\r\n' read:1)"
check_re "HELLO (no version) answers in the current protocol" "$hello_re" "$(raw 'send:HELLO\r\n' read:1)"
hello3_re='^%7\\r\\n\$6\\r\\nserver\\r\\n\$5\\r\\nredis\\r\\n\$7\\r\\nversion\\r\\n\$5\\r\\n7\.2\.0\\r\\n\$5\\r\\nproto\\r\\n:3\\r\\n\$2\\r\\nid\\r\\n:[0-9]+\\r\\n\$4\\r\\nmode\\r\\n\$10\\r\\nstandalone\\r\\n\$4\\r\\nrole\\r\\n\$6\\r\\nmaster\\r\\n\$7\\r\\nmodules\\r\\n\*0\\r\\n$'
check_re "HELLO 3" "$hello3_re" "$(raw 'send:HELLO 3\r\n' read:1)"
raw_case "HELLO 4 / HELLO 1 / HELLO abc" \
    '-NOPROTO unsupported protocol version\r\n-NOPROTO unsupported protocol version\r\n-ERR Protocol version is not an integer or out of range\r\n+PONG\r\n' \
    'send:HELLO 4\r\nHELLO 1\r\nHELLO abc\r\nPING\r\n' read:4
raw_case "HELLO 3 SETNAME, then CLIENT GETNAME" "\$5\\r\\nhname\\r\\n" \
    'send:HELLO 3 SETNAME hname\r\n' skip:1 'send:CLIENT GETNAME\r\n' read:1
raw_case "HELLO bad option" "-ERR Syntax error in HELLO option 'bogus'\\r\\n" 'send:HELLO 3 bogus\r\n' read:1
raw_case "SELECT 0 / SELECT 1 / SELECT x" \
    '+OK\r\n-ERR DB index is out of range\r\n-ERR value is not an integer or out of range\r\n' \
    'send:SELECT 0\r\nSELECT 1\r\nSELECT x\r\n' read:3
check_re "DBSIZE is an integer" '^:[0-9]+\\r\\n$' "$(raw 'send:DBSIZE\r\n' read:1)"
info=$(timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --raw INFO 2>&1)
for field in 'loading:0' 'keyspace_hits:[0-9]+' 'keyspace_misses:[0-9]+' 'evicted_keys:[0-9]+' \
        'redis_version:7\.2\.0' 'connected_clients:[0-9]+' '# Keyspace' '# Memory' 'used_memory:[0-9]+'; do
    check_re "INFO contains $field" "(^|"$'\r\n'")$field" "$info"
done
hits() { timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --raw INFO stats | sed -n 's/^keyspace_hits:\([0-9]*\).*/\1/p'; }
h1=$(hits)
raw 'send:GET items:7\r\nGET items:7\r\nGET items:7\r\n' read:3 >/dev/null
h2=$(hits)
check "INFO keyspace_hits counts hits (3 GETs: at least 2 hits)" "yes" "$( ((h2 - h1 >= 2)) && echo yes || echo "before $h1, after $h2")"
check_re "INFO server section only" '^\$[0-9]+\\r\\n# Server\\r\\n.*redis_version' "$(raw 'send:INFO server\r\n' read:1)"
check_re "INFO keyspace" '^\$[0-9]+\\r\\n# Keyspace\\r\\ndb0:keys=[0-9]+,expires=0,avg_ttl=0\\r\\n' "$(raw 'send:INFO keyspace\r\n' read:1)"
raw_case "CONFIG GET save / appendonly" \
    '*2\r\n$4\r\nsave\r\n$0\r\n\r\n*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n' \
    'send:CONFIG GET save\r\nCONFIG GET appendonly\r\n' read:2
cli_case "redis-cli CONFIG GET databases" '1) "databases"
2) "1"' CONFIG GET databases
raw_case "CONFIG GET unknown parameter: empty" '*0\r\n' 'send:CONFIG GET nosuchparameter\r\n' read:1
check_re "CONFIG SET refused" '^-ERR CONFIG SET is not supported' "$(raw 'send:CONFIG SET timeout 5\r\n' read:1)"
check_re "COMMAND COUNT" '^:[1-9][0-9]*\\r\\n$' "$(raw 'send:COMMAND COUNT\r\n' read:1)"
raw_case "COMMAND INFO get" \
    '*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@read\r\n+@fast\r\n+@string\r\n*0\r\n*0\r\n*0\r\n' \
    'send:COMMAND INFO get\r\n' read:1
check_re "COMMAND INFO mget and an unknown command (nil)" '^\*2\\r\\n\*10\\r\\n\$4\\r\\nmget\\r\\n:-2\\r\\n.*\$-1\\r\\n$' \
    "$(raw 'send:COMMAND INFO mget nosuchcommand\r\n' read:1)"
check_re "COMMAND DOCS get" '^\*2\\r\\n\$3\\r\\nget\\r\\n\*[0-9]+\\r\\n\$7\\r\\nsummary\\r\\n' "$(raw 'send:COMMAND DOCS get\r\n' read:1)"
check_re "COMMAND DOCS (all) in RESP3 is a map" '^%[1-9][0-9]*\\r\\n' "$(raw 'send:HELLO 3\r\n' skip:1 'send:COMMAND DOCS\r\n' read:1)"
check_re "COMMAND (all)" '^\*[1-9][0-9]*\\r\\n\*10\\r\\n' "$(raw 'send:COMMAND\r\n' read:1)"
raw_case "CLIENT SETNAME / GETNAME / SETINFO" \
    '$-1\r\n+OK\r\n$6\r\nmyname\r\n+OK\r\n+OK\r\n' \
    'send:CLIENT GETNAME\r\nCLIENT SETNAME myname\r\nCLIENT GETNAME\r\nCLIENT SETINFO lib-name mylib\r\nCLIENT SETINFO LIB-VER 1.2.3\r\n' read:5
raw_case "CLIENT SETNAME with a space, SETINFO unknown attribute" \
    "-ERR Client names cannot contain spaces, newlines or special characters.\\r\\n-ERR Unrecognized option 'color'\\r\\n" \
    'send:CLIENT SETNAME "a b"\r\nCLIENT SETINFO color blue\r\n' read:2
id_reply=$(raw 'send:CLIENT ID\r\nHELLO 2\r\n' read:2)
check_re "CLIENT ID is an integer equal to HELLO's id" '^:([0-9]+)\\r\\n\*14\\r\\n.*\\r\\nid\\r\\n:([0-9]+)\\r\\n' "$id_reply"
[[ "$id_reply" =~ ^:([0-9]+).*id\\r\\n:([0-9]+) ]] && check "CLIENT ID equals HELLO id" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
client_info=$(raw 'send:CLIENT SETNAME nm1\r\nCLIENT SETINFO lib-name lib1\r\nCLIENT SETINFO lib-ver 9.9\r\nCLIENT INFO\r\n' read:4)
check_re "CLIENT INFO (RESP2 bulk)" '^\+OK\\r\\n\+OK\\r\\n\+OK\\r\\n\$[0-9]+\\r\\nid=[0-9]+ addr=127\.0\.0\.1:[0-9]+ laddr=127\.0\.0\.1:'"$RESP_PORT"' fd=[0-9]+ name=nm1 .* user=regress_resp_reader .*resp=2 lib-name=lib1 lib-ver=9\.9\\n\\r\\n$' "$client_info"
check_re "CLIENT INFO (RESP3 verbatim)" '^=[0-9]+\\r\\ntxt:id=[0-9]+ .*resp=3 ' \
    "$(raw 'send:HELLO 3\r\n' skip:1 'send:CLIENT INFO\r\n' read:1)"
raw_case "RESET: back to RESP2, name cleared" '+RESET\r\n$-1\r\n$-1\r\n' \
    'send:HELLO 3\r\nCLIENT SETNAME before\r\n' skip:2 'send:RESET\r\nCLIENT GETNAME\r\nGET items:999\r\n' read:3
raw_case "QUIT: +OK, then closed; later pipelined requests not run" '+OK\r\n<EOF>' \
    'send:QUIT\r\nPING\r\nPING\r\n' read:1 eof:5

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
ro='-ERR local_cache is read-only: write to the table through SQL\r\n'
raw_case "write commands refused" "$ro$ro$ro$ro$ro$ro$ro$ro$ro" \
    'send:SET items:1 x\r\nDEL items:1\r\nHSET items:1 value x\r\nEXPIRE items:1 10\r\nINCR items:1\r\nMSET a 1 b 2\r\nFLUSHALL\r\nFLUSHDB\r\nGETDEL items:1\r\n' read:9
raw_case "the row is untouched after refused writes" "$(bulk "$J1")" 'send:GET items:1\r\n' read:1
raw_case "wrong arity of a write command: arity first" "-ERR wrong number of arguments for 'set' command\\r\\n" 'send:SET x\r\n' read:1

section "protocol errors close the connection"
raw_case "invalid multibulk length" '-ERR Protocol error: invalid multibulk length\r\n<EOF>' 'send:*abc\r\n' read:1 eof:5
raw_case "multibulk length too large" '-ERR Protocol error: invalid multibulk length\r\n<EOF>' 'send:*99999999999\r\n' read:1 eof:5
raw_case "invalid bulk length" '-ERR Protocol error: invalid bulk length\r\n<EOF>' 'send:*1\r\n$abc\r\n' read:1 eof:5
raw_case "negative bulk length" '-ERR Protocol error: invalid bulk length\r\n<EOF>' 'send:*1\r\n$-1\r\n' read:1 eof:5
raw_case "bulk length beyond the maximum" '-ERR Protocol error: invalid bulk length\r\n<EOF>' 'send:*1\r\n$9999999999999\r\n' read:1 eof:5
raw_case "bulk not followed by CRLF" '-ERR Protocol error: bulk not followed by CRLF\r\n<EOF>' 'send:*1\r\n$4\r\nPINGxy' read:1 eof:5
raw_case "expected \$" "-ERR Protocol error: expected '\$', got 'x'\\r\\n<EOF>" 'send:*1\r\nxyz\r\n' read:1 eof:5
raw_case "unbalanced quotes (inline)" '-ERR Protocol error: unbalanced quotes in request\r\n<EOF>' 'send:GET "items:1\r\n' read:1 eof:5
raw_case "unbalanced single quotes (inline)" '-ERR Protocol error: unbalanced quotes in request\r\n<EOF>' "send:ECHO 'abc\\r\\n" read:1 eof:5
raw_case "replies before the error are sent, requests after it are not run" \
    '+PONG\r\n-ERR Protocol error: invalid bulk length\r\n<EOF>' 'send:PING\r\n*1\r\n$x\r\nPING\r\n' read:2 eof:5
raw_case "negative multibulk counts are ignored (as Redis)" '+PONG\r\n+PONG\r\n' 'send:*-5\r\n*0\r\nPING\r\n*-1\r\n*1\r\n$4\r\nPING\r\n' read:2 quiet:200
big_inline=$(head -c 70000 /dev/zero | tr '\0' 'a')
raw_case "too big inline request" '-ERR Protocol error: too big inline request\r\n<EOF>' "send:$big_inline" read:1 eof:5

section "inline commands and pipelining"
raw_case "inline with LF only, quotes and escapes, empty lines" \
    "*2\\r\\n$(bulk "$J1")$(bulk "$J3")\$4\\r\\na b\\t\\r\\n\$3\\r\\nx'y\\r\\n+PONG\\r\\n" \
    "send:MGET items:1 items:3\\n\\r\\n\\nECHO \"a b\\\\x09\"\\r\\nECHO 'x\\\\'y'\\n  PING  \\r\\n" read:4
expected=""
steps=""
for i in $(seq 1 100); do
    expected+="$(bulk "reply-$i")"
    steps+="*2\\r\\n\$4\\r\\nECHO\\r\\n\$$((6 + ${#i}))\\r\\nreply-$i\\r\\n"
done
raw_case "100 pipelined ECHO in one write, replies in order" "$expected" "send:$steps" read:100 quiet:100
expected=""
for i in $(seq 1 50); do expected+="*2\\r\\n$(bulk "$J1")\$-1\\r\\n:1\\r\\n"; done
raw_case "50 pipelined MGET + EXISTS in one write" "$expected" 'repeat:50:MGET items:1 items:0\r\nEXISTS items:3\r\n' read:100
raw_case "requests split at every byte (multibulk)" "*2\\r\\n$(bulk "$J1")$(bulk "$J3")" \
    'slow:*3\r\n$4\r\nMGET\r\n$7\r\nitems:1\r\n$7\r\nitems:3\r\n' read:1
raw_case "requests split at every byte (inline)" "$(bulk "$J3")+PONG\\r\\n" 'slow:GET items:3\r\nPING\r\n' read:2
check "redis-cli reading commands from stdin" '"{\"id\":1,\"value\":\"value 1\"}"
PONG' "$(printf 'GET items:1\nPING\n' | timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --no-raw 2>&1)"

# ---------------------------------------------------------------------------- security

section "NOPERM: privileges checked on every request"
raw_case "role without SELECT: NOPERM on MGET, GET, HGET, HGETALL, EXISTS" \
    '+OK\r\n-NOPERM permission denied for table items\r\n-NOPERM permission denied for table items\r\n-NOPERM permission denied for table items\r\n-NOPERM permission denied for table items\r\n-NOPERM permission denied for table items\r\n' \
    "send:AUTH regress_resp_noperm $PW_NOPERM\\r\\nMGET items:1 items:2\\r\\nGET items:1\\r\\nHGET items:1 value\\r\\nHGETALL items:1\\r\\nEXISTS items:1\\r\\n" read:6
raw_case "a role without SELECT: unknown keys are still nil, connection usable" \
    '+OK\r\n*2\r\n$-1\r\n$-1\r\n+PONG\r\n' \
    "send:AUTH regress_resp_noperm $PW_NOPERM\\r\\nMGET nope:1 items:01\\r\\nPING\\r\\n" read:3
sql "GRANT SELECT (id) ON items TO regress_resp_noperm" >/dev/null
raw_case "SELECT on some columns only: NOPERM" '+OK\r\n-NOPERM permission denied for table items\r\n' \
    "send:AUTH regress_resp_noperm $PW_NOPERM\\r\\nGET items:1\\r\\n" read:2
sql "GRANT SELECT ON typed TO regress_resp_noperm" >/dev/null
raw_case "MGET across a readable and an unreadable table: NOPERM for the whole command" \
    '-NOPERM permission denied for table items\r\n' \
    "send:AUTH regress_resp_noperm $PW_NOPERM\\r\\n" skip:1 'send:MGET ty:1 items:1\r\n' read:1
# REVOKE / GRANT take effect for the next request, also on a connection that stays open
exec {conn}<>"/dev/tcp/127.0.0.1/$RESP_PORT"
resp_line() { printf '%s\r\n' "$1" >&"$conn"; IFS= read -r -t 10 -u "$conn" reply_line; reply_line=${reply_line%$'\r'}; }
resp_line "GET items:4"; IFS= read -r -t 10 -u "$conn" body
check "open connection reads items:4 as regress_resp_reader" "\$26 {\"id\":4,\"value\":\"value 4\"}"$'\r' "$reply_line $body"
sql "REVOKE SELECT ON items FROM regress_resp_reader" >/dev/null
resp_line "GET items:4"
check "after REVOKE (committed): NOPERM on the same connection" "-NOPERM permission denied for table items" "$reply_line"
raw_case "after REVOKE: NOPERM on a new connection" '-NOPERM permission denied for table items\r\n' 'send:MGET items:4\r\n' read:1
sql "GRANT SELECT ON items TO regress_resp_reader" >/dev/null
resp_line "EXISTS items:4"
check "after GRANT: served again on the same connection" ":1" "$reply_line"
# privileges through a role membership
sql "REVOKE SELECT ON items FROM regress_resp_reader; CREATE ROLE regress_resp_group; GRANT SELECT ON items TO regress_resp_group; GRANT regress_resp_group TO regress_resp_reader" >/dev/null
resp_line "EXISTS items:4"
check "SELECT through role membership" ":1" "$reply_line"
sql "REVOKE regress_resp_group FROM regress_resp_reader" >/dev/null
resp_line "EXISTS items:4"
check "membership revoked: NOPERM" "-NOPERM permission denied for table items" "$reply_line"
sql "GRANT SELECT ON items TO regress_resp_reader" >/dev/null
exec {conn}>&-
# USAGE on the schema is checked as SELECT checks it
sql "CREATE SCHEMA regress_priv; CREATE TABLE regress_priv.secret2 (id bigint PRIMARY KEY, v text);
     INSERT INTO regress_priv.secret2 VALUES (1, 'hidden');
     SELECT local_cache.enable('regress_priv.secret2', resp_prefix => 'hidden');
     GRANT SELECT ON regress_priv.secret2 TO regress_resp_reader" >/dev/null
raw_case "SELECT on the table but no USAGE on its schema: NOPERM" \
    '-NOPERM permission denied for schema regress_priv\r\n' 'send:GET hidden:1\r\n' read:1
sql "GRANT USAGE ON SCHEMA regress_priv TO regress_resp_reader" >/dev/null
raw_case "with USAGE on the schema: served" '$21\r\n{"id":1,"v":"hidden"}\r\n' 'send:GET hidden:1\r\n' read:1
sql "DROP SCHEMA regress_priv CASCADE" >/dev/null

raw_case "row-level security: never served (GET, MGET, HGET, HGETALL, EXISTS)" \
    '-NOPERM table "secret" has row-level security enabled\r\n-NOPERM table "secret" has row-level security enabled\r\n-NOPERM table "secret" has row-level security enabled\r\n-NOPERM table "secret" has row-level security enabled\r\n-NOPERM table "secret" has row-level security enabled\r\n' \
    'send:GET secret:1\r\nMGET items:1 secret:1\r\nHGET secret:1 v\r\nHGETALL secret:1\r\nEXISTS secret:1\r\n' read:5
raw_case "row-level security: not served after AUTH as another role either" \
    '+OK\r\n-NOPERM table "secret" has row-level security enabled\r\n' \
    "send:AUTH regress_resp_user $PW_USER\\r\\nGET secret:1\\r\\n" read:2
sql "ALTER TABLE items ENABLE ROW LEVEL SECURITY; CREATE POLICY all_rows ON items USING (true)" >/dev/null
raw_case "row-level security enabled on a cached table: not served from then on" \
    '-NOPERM table "items" has row-level security enabled\r\n' 'send:GET items:1\r\n' read:1
sql "DROP POLICY all_rows ON items; ALTER TABLE items DISABLE ROW LEVEL SECURITY" >/dev/null
raw_case "row-level security disabled again: served" "$(bulk "$J1")" 'send:GET items:1\r\n' read:1

section "AUTH"
raw_case "AUTH <password> authenticates as resp_role" '+OK\r\n+OK\r\n' \
    "send:AUTH $PW_READER\\r\\nAUTH default $PW_READER\\r\\n" read:2
raw_case "AUTH <wrong password> for resp_role" '-WRONGPASS invalid username-password pair or user is disabled.\r\n' \
    "send:AUTH $PW_WRONG\\r\\n" read:1
# From here on: no resp_role, AUTH required
set_setting local_cache.resp_role ''
noauth() { [[ "$(raw 'send:GET items:1\r\n' read:1)" == '-NOAUTH Authentication required.\r\n' ]]; }
for i in 1 2 3 4 5 6; do wait_for "resp_role = '' reloaded" 10 noauth || break; done
raw_case "no resp_role: data commands answer NOAUTH" \
    '-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n' \
    'send:GET items:1\r\nMGET items:1\r\nHGETALL items:1\r\nEXISTS items:1\r\nDBSIZE\r\nPING\r\n' read:6
raw_case "no resp_role: unknown command and arity errors come before NOAUTH (as Redis)" \
    "-ERR unknown command 'FOO', with args beginning with: \\r\\n-ERR wrong number of arguments for 'get' command\\r\\n" \
    'send:FOO\r\nGET\r\n' read:2
check_re "no resp_role: HELLO 3 without AUTH" '^-NOAUTH HELLO must be called with the client already authenticated' \
    "$(raw 'send:HELLO 3\r\n' read:1)"
raw_case "AUTH user password (SCRAM), then data served" "+OK\\r\\n$(bulk "$J1")" \
    "send:AUTH regress_resp_user $PW_USER\\r\\nGET items:1\\r\\n" read:2
raw_case "AUTH user password (md5)" "+OK\\r\\n$(bulk "$J1")" \
    "send:AUTH regress_resp_md5 $PW_MD5\\r\\nGET items:1\\r\\n" read:2
wp='-WRONGPASS invalid username-password pair or user is disabled.\r\n'
na='-NOAUTH Authentication required.\r\n'
raw_case "wrong password" "$wp$na" "send:AUTH regress_resp_user $PW_WRONG\\r\\nGET items:1\\r\\n" read:2
raw_case "password of another role" "$wp" "send:AUTH regress_resp_user $PW_MD5\\r\\n" read:1
raw_case "role without LOGIN refused" "$wp$na" "send:AUTH regress_resp_nologin $PW_NOLOGIN\\r\\nGET items:1\\r\\n" read:2
raw_case "unknown role" "$wp" "send:AUTH regress_resp_nobody $PW_USER\\r\\n" read:1
raw_case "superuser without a password" "$wp$wp" "send:AUTH postgres postgres\\r\\nAUTH postgres ''\\r\\n" read:2
raw_case "AUTH <password> without resp_role" "$wp" "send:AUTH $PW_READER\\r\\n" read:1
raw_case "AUTH with too many arguments" '-ERR syntax error\r\n' 'send:AUTH a b c\r\n' read:1
raw_case "empty password, overlong user name" "$wp$wp" \
    "send:AUTH regress_resp_user \"\"\\r\\nAUTH $(head -c 300 /dev/zero | tr '\0' u) x\\r\\n" read:2
raw_case "a failed AUTH keeps the earlier login" "+OK\\r\\n$wp$(bulk "$J1")" \
    "send:AUTH regress_resp_user $PW_USER\\r\\nAUTH regress_resp_user $PW_WRONG\\r\\nGET items:1\\r\\n" read:3
check_re "HELLO 3 AUTH user password" '^%7\\r\\n.*\\r\\nproto\\r\\n:3\\r\\n.*%2\\r\\n\$2\\r\\nid\\r\\n\$1\\r\\n1\\r\\n' \
    "$(raw "send:HELLO 3 AUTH regress_resp_user $PW_USER\\r\\nHGETALL items:1\\r\\n" read:2)"
raw_case "HELLO 3 AUTH with a wrong password" "$wp" "send:HELLO 3 AUTH regress_resp_user $PW_WRONG\\r\\n" read:1
raw_case "RESET drops the login" "+OK\\r\\n+RESET\\r\\n$na" \
    "send:AUTH regress_resp_user $PW_USER\\r\\nRESET\\r\\nGET items:1\\r\\n" read:3
raw_case "unauthenticated: more than 10 arguments is a protocol error" \
    '-ERR Protocol error: unauthenticated multibulk length\r\n<EOF>' 'send:*11\r\n' read:1 eof:5
raw_case "unauthenticated: a bulk over 16 kB is a protocol error" \
    '-ERR Protocol error: unauthenticated bulk length\r\n<EOF>' 'send:*2\r\n$4\r\nAUTH\r\n$16385\r\n' read:1 eof:5
check "redis-cli --user --pass (REDISCLI_AUTH)" '"{\"id\":1,\"value\":\"value 1\"}"' \
    "$(REDISCLI_AUTH=$PW_USER timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --user regress_resp_user --no-raw GET items:1 2>&1)"
raw_case "NOPERM for an authenticated role without SELECT" '+OK\r\n-NOPERM permission denied for table items\r\n' \
    "send:AUTH regress_resp_noperm $PW_NOPERM\\r\\nGET items:1\\r\\n" read:2
sql "ALTER ROLE regress_resp_user NOLOGIN" >/dev/null
raw_case "a role that lost LOGIN can no longer AUTH" "$wp" "send:AUTH regress_resp_user $PW_USER\\r\\n" read:1
sql "ALTER ROLE regress_resp_user LOGIN" >/dev/null
sql "ALTER ROLE regress_resp_user PASSWORD '${PW_USER}-new'" >/dev/null
raw_case "a changed password: the old one fails, the new one works" "$wp+OK\\r\\n" \
    "send:AUTH regress_resp_user $PW_USER\\r\\nAUTH regress_resp_user ${PW_USER}-new\\r\\n" read:2
# back to resp_role
set_setting local_cache.resp_role DEFAULT
authed() { [[ "$(raw 'send:EXISTS items:1\r\n' read:1)" == ':1\r\n' ]]; }
for i in 1 2 3 4 5 6; do wait_for "resp_role reset" 10 authed || break; done
raw_case "resp_role back: unauthenticated clients act as it" ':1\r\n' 'send:EXISTS items:1\r\n' read:1

check "no password appears in the server log" "" "$(passwords_leaked)"

# ---------------------------------------------------------------------------- limits

section "limits"
set_setting local_cache.resp_max_clients 3
wait_for "maxclients = 3" 10 config_is maxclients 3 || true
ok=1
for i in 1 2 3; do open_held || ok=0; done
check "three connections accepted under resp_max_clients = 3" 1 "$ok"
raw_case "the fourth gets the Redis error and is closed" '-ERR max number of clients reached\r\n<EOF>' read:1 eof:5
raw_case "and again" '-ERR max number of clients reached\r\n<EOF>' 'send:PING\r\n' read:1 eof:5
close_held
wait_case "after the others closed, a new connection is served" '+PONG\r\n' 10 resp_pong ping_reply
rejected=$(timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --raw INFO stats | sed -n 's/^rejected_connections:\([0-9]*\).*/\1/p')
check_re "INFO rejected_connections is a number" '^[0-9]+$' "$rejected"
set_setting local_cache.resp_max_clients DEFAULT
wait_for "maxclients default" 10 config_is maxclients 10000 || true

set_setting local_cache.resp_timeout 1
wait_for "timeout = 1" 10 config_is timeout 1 || true
raw_case "idle connection closed after resp_timeout (within 10 s)" '+PONG\r\n<EOF>' 'send:PING\r\n' read:1 eof:10
raw_case "a connection that keeps talking stays open" '+PONG\r\n+PONG\r\n+PONG\r\n+PONG\r\n' \
    'send:PING\r\n' read:1 quiet:600 'send:PING\r\n' read:1 quiet:600 'send:PING\r\n' read:1 quiet:600 'send:PING\r\n' read:1
raw_case "a half-sent request does not keep a connection alive" '<EOF>' 'send:*2\r\n$4\r\nECHO\r\n$10\r\nabc' eof:10
set_setting local_cache.resp_timeout DEFAULT
wait_for "timeout = 0" 10 config_is timeout 0 || true

set_setting local_cache.resp_max_request_size 4kB
wait_for "proto-max-bulk-len = 4096" 10 config_is proto-max-bulk-len 4096 || true
raw_case "bulk above resp_max_request_size: protocol error" '-ERR Protocol error: invalid bulk length\r\n<EOF>' \
    'send:*2\r\n$4\r\nECHO\r\n$5000\r\n' read:1 eof:5
big=$(head -c 3000 /dev/zero | tr '\0' 'k')
raw_case "bulk below resp_max_request_size: served" "\$3000\\r\\n$big\\r\\n" "send:*2\\r\\n\$4\\r\\nECHO\\r\\n\$3000\\r\\n$big\\r\\n" read:1
raw_case "unprocessed input above resp_max_request_size: closed" '<EOF>' \
    "send:*3\\r\\n\$4\\r\\nECHO\\r\\n\$3000\\r\\n$big\\r\\n\$3000\\r\\n$big" eof:5
set_setting local_cache.resp_max_request_size DEFAULT
wait_for "proto-max-bulk-len default" 10 config_is proto-max-bulk-len 67108864 || true

set_setting local_cache.resp_output_buffer_limit 64kB
sleep 0.5   # no CONFIG GET for this one: give both workers the reload
# each of these replies (10 rows of 4 kB) is below the limit; together they are far above it
big_mget="MGET$(for i in $(seq 1 10); do printf ' big:1'; done)\\r\\n"
raw 'send:GET big:1\r\n' read:1 >/dev/null
log_before=$(log_size)
raw_case "a client that sends a huge pipeline and never reads is disconnected" '<GONE>' \
    "flood:4000:$big_mget" gone:20
raw_case "a client reading its replies is not" "*2\\r\\n$(bulk "$J1")$(bulk "$J1")" 'send:MGET items:1 items:1\r\n' read:1
check_re "the server log says why" 'output buffer limit exceeded' "$(log_since "$log_before")"
raw_case "the workers keep serving others" "+PONG\\r\\n$(bulk "$J3")" 'send:PING\r\nGET items:3\r\n' read:2

# The limit also bounds the workers' memory (peak RSS, VmHWM): neither one request asking for far
# more than the limit nor a pipeline read in one go may make a worker allocate much beyond it.
hwm_before=$(workers_hwm_kb)
check_re "one MGET of 50,000 x 4 kB rows: refused with an error naming the limit" \
    '^-ERR .*local_cache\.resp_output_buffer_limit.*\\r\\n\+PONG\\r\\n$' \
    "$(raw 'send:*50001\r\n$4\r\nMGET\r\n' 'repeat:50000:$5\r\nbig:1\r\n' read:1 'send:PING\r\n' read:1)"
hwm_after=$(workers_hwm_kb)
check "one huge MGET: the workers' peak memory grew by less than 64 MB" "less than 65536 kB" \
    "$( ((hwm_after - hwm_before < 65536)) && echo "less than 65536 kB" || echo "$((hwm_after - hwm_before)) kB (peak RSS before $hwm_before kB, after $hwm_after kB)")"
check_re "HMGET of one 4 kB column 50 times: refused the same way" \
    '^-ERR reply exceeds local_cache\.resp_output_buffer_limit \(65536 bytes\)\\r\\n$' \
    "$(raw "send:HMGET big:1$(for i in $(seq 1 50); do printf ' v'; done)\\r\\n" read:1)"
check_re "HMGET of it 10 times (40 kB): served" '^\*10\\r\\n(\$4000\\r\\nx{4000}\\r\\n){10}$' \
    "$(raw "send:HMGET big:1$(for i in $(seq 1 10); do printf ' v'; done)\\r\\n" read:1)"
hwm_before=$(workers_hwm_kb)
log_before=$(log_size)
# a 4 MB argument first makes the worker's input buffer big enough to read MBs at once
raw_case "a pipeline read in one go (after a 4 MB argument) is cut at the limit" '<GONE>' \
    'send:*2\r\n$6\r\nEXISTS\r\n$4000000\r\n' 'repeat:4000000:k' 'send:\r\n' "flood:40000:$big_mget" gone:20
hwm_after=$(workers_hwm_kb)
check "pipeline read in one go: the workers' peak memory grew by less than 64 MB" "less than 65536 kB" \
    "$( ((hwm_after - hwm_before < 65536)) && echo "less than 65536 kB" || echo "$((hwm_after - hwm_before)) kB (peak RSS before $hwm_before kB, after $hwm_after kB)")"
check_re "pipeline read in one go: the log says why" 'output buffer limit exceeded' "$(log_since "$log_before")"
raw_case "the workers keep serving others" "+PONG\\r\\n$(bulk "$J3")" 'send:PING\r\nGET items:3\r\n' read:2
set_setting local_cache.resp_output_buffer_limit DEFAULT

# ---------------------------------------------------------------------------- workers

section "worker restarts and shutdown"
worker_count() { sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker'"; }
info_pid() { timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --raw INFO server | sed -n 's/^process_id:\([0-9]*\).*/\1/p'; }

check "two RESP workers running" 2 "$(worker_count)"
victim=$(info_pid)
check_re "INFO process_id names a RESP worker" "(^| )$victim( |$)" "$(worker_pids)"
log_before=$(log_size)
kill -TERM "$victim"
back_after_term() { [[ "$(worker_count)" == 2 ]] && ! [[ " $(worker_pids) " == *" $victim "* ]]; }
describe_workers() { echo "RESP worker pids: $(worker_pids)"; }
wait_case "kill -TERM of a worker: it is restarted (2 workers again within 20 s)" \
    "two RESP worker pids, neither $victim" 20 back_after_term describe_workers
wait_case "kill -TERM: RESP serves again" '+PONG\r\n' 10 resp_pong ping_reply
check "kill -TERM: no crash in the log" "" "$(log_since "$log_before" | crash_lines)"

victim=$(info_pid)
log_before=$(log_size)
kill -KILL "$victim"
served_again() { [[ "$(raw 'send:GET items:1\r\n' read:1)" == "$(bulk "$J1")" ]]; }
get_items1() { raw 'send:GET items:1\r\n' read:1; }
wait_case "kill -9 of a worker: the postmaster restarts everything; RESP serves again within 60 s" \
    "$(bulk "$J1")" 60 served_again get_items1
check_re "kill -9: the postmaster noticed the crash" "terminated by signal 9" "$(log_since "$log_before")"
two_workers() { [[ "$(worker_count)" == 2 ]]; }
wait_case "kill -9: two workers again" "two RESP worker pids" 20 two_workers describe_workers

# fast shutdown with clients connected, one of them in the middle of a request
for i in 1 2 3; do open_held || true; done
printf '*2\r\n$4\r\nECHO\r\n$100\r\nabc' >&"${HELD[0]}"
log_before=$(log_size)
start=$SECONDS
if as_pg timeout 60 "$PGBIN/pg_ctl" -D "$DIR/data" -m fast -w -t 30 stop >/dev/null 2>&1; then
    pass "pg_ctl stop -m fast with RESP clients connected (stopped after $((SECONDS - start)) s)"
else
    fail "pg_ctl stop -m fast with RESP clients connected" "stopped within 30 s" "pg_ctl failed after $((SECONDS - start)) s"
fi
closed=0
for fd in "${HELD[@]}"; do
    if ! IFS= read -r -t 5 -u "$fd" line; then closed=$((closed + 1)); fi
done
check "the connected clients were disconnected" 3 "$closed"
close_held
check "fast shutdown: no crash in the log" "" "$(log_since "$log_before" | crash_lines)"
check_re "fast shutdown completed" "database system is shut down" "$(log_since "$log_before")"

log_before=$(log_size)
as_pg "$PGBIN/pg_ctl" -D "$DIR/data" -l "$LOG" -w -t 60 start >/dev/null 2>&1
wait_case "restarted after the fast shutdown: RESP serves" "$(bulk "$J1")" 30 served_again get_items1
for i in 1 2; do open_held || true; done
log_before=$(log_size)
start=$SECONDS
if as_pg timeout 60 "$PGBIN/pg_ctl" -D "$DIR/data" -m smart -w -t 30 stop >/dev/null 2>&1; then
    pass "pg_ctl stop -m smart with RESP clients connected (stopped after $((SECONDS - start)) s)"
else
    fail "pg_ctl stop -m smart with RESP clients connected" "stopped within 30 s" "pg_ctl failed after $((SECONDS - start)) s"
fi
close_held
check "smart shutdown: no crash in the log" "" "$(log_since "$log_before" | crash_lines)"

check "no password appears in the server log (end of run)" "" "$(passwords_leaked)"

echo
if ((FAILED > 0)); then
    echo "---- last lines of $LOG ----"
    tail -n 40 "$LOG"
    echo "----"
fi
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
