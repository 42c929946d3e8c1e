# regress/resp/suites/connection.sh: the connection and server commands answer as Redis 7.2
# does: PING, ECHO, HELLO (RESP2/RESP3), SELECT, DBSIZE, INFO, CONFIG GET, COMMAND (COUNT, INFO,
# DOCS), CLIENT (SETNAME, GETNAME, SETINFO, ID, INFO, LIST, KILL), RESET, QUIT.
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh connection).

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
# INFO reports the server: counters summed over the workers, the same on every connection and
# never going backwards.
for i in 1 2 3 4 5 6; do open_held || true; done
info_field() { timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --raw INFO | sed -n "s/^$1:\([0-9a-z.-]*\).*/\1/p"; }
clients=$(for i in 1 2 3 4 5 6; do info_field connected_clients; done | sort -u | tr '\n' ' ')
check "INFO connected_clients: all workers' connections, the same on every connection" "7 " "$clients"
commands=$(for i in 1 2 3 4 5 6; do info_field total_commands_processed; done | tr '\n' ' ')
sorted=$(tr ' ' '\n' <<<"$commands" | sed '/^$/d' | sort -n | tr '\n' ' ')
check "INFO total_commands_processed never goes backwards" "$sorted" "$commands"
close_held
check "INFO maxmemory_policy names the cache's eviction (CLOCK)" "allkeys-clock" "$(info_field maxmemory_policy)"
check_re "INFO local_cache_version and postgresql_version" '^1\.[0-9]+ 1[0-9]\.' "$(info_field local_cache_version) $(info_field postgresql_version)"
check "INFO role on a primary" "master" "$(timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --raw INFO replication | sed -n 's/^role:\([a-z]*\).*/\1/p')"
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
check_re "CLIENT INFO (RESP2 bulk)" '^\+OK\\r\\n\+OK\\r\\n\+OK\\r\\n\$[0-9]+\\r\\nid=[0-9]+ addr=127\.0\.0\.1:[0-9]+ laddr=127\.0\.0\.1:'"$RESP_PORT"' fd=[0-9]+ name=nm1 .* user=regress_resp_reader .*resp=2 lib-name=lib1 lib-ver=9\.9 tls=no\\n\\r\\n$' "$client_info"
check_re "CLIENT INFO (RESP3 verbatim)" '^=[0-9]+\\r\\ntxt:id=[0-9]+ .*resp=3 ' \
    "$(raw 'send:HELLO 3\r\n' skip:1 'send:CLIENT INFO\r\n' read:1)"
# CLIENT LIST and KILL see the connections of the worker serving the request: find a
# connection on the same worker as a held one named "victim", then kill the victim by id.
open_held
victim_fd=${HELD[-1]}
send_held "$victim_fd" $'CLIENT SETNAME victim\r\nCLIENT ID\r\n'
IFS= read -r -t 10 -u "$victim_fd" line
IFS= read -r -t 10 -u "$victim_fd" victim_id
victim_id=${victim_id#:}
victim_id=${victim_id%$'\r'}
listing=""
for i in $(seq 1 30); do
    listing=$(cli --raw CLIENT LIST)
    [[ "$listing" == *"name=victim "* ]] && break
done
check_re "CLIENT LIST (on the victim's worker): the victim's line, in Redis's format" \
    "id=$victim_id addr=127\.0\.0\.1:[0-9]+ laddr=127\.0\.0\.1:$RESP_PORT fd=[0-9]+ name=victim age=[0-9]+ idle=[0-9]+ flags=N .* user=regress_resp_reader " "$listing"
killed=0
for i in $(seq 1 30); do
    killed=$(cli --raw CLIENT KILL ID "$victim_id")
    [[ "$killed" == 1 ]] && break
done
check "CLIENT KILL ID (on the victim's worker): one client closed" "1" "$killed"
send_held "$victim_fd" $'PING\r\n'
line=""
IFS= read -r -t 5 -u "$victim_fd" line
check "the victim's connection is closed (no PONG)" "" "$line"
close_held
raw_case "CLIENT KILL of an unknown address" '-ERR No such client\r\n' 'send:CLIENT KILL 127.0.0.1:1\r\n' read:1
check_re "CLIENT KILL SKIPME no: the caller is closed after the reply" '^:[1-9][0-9]*\\r\\n<EOF>$' \
    "$(raw 'send:CLIENT KILL USER regress_resp_reader SKIPME no\r\n' read:1 eof:5)"
raw_case "RESET: back to RESP2, name cleared" '+RESET\r\n$-1\r\n$-1\r\n' \
    'send:HELLO 3\r\nCLIENT SETNAME before\r\n' skip:2 'send:RESET\r\nCLIENT GETNAME\r\nGET items:999\r\n' read:3
raw_case "QUIT: +OK, then closed; later pipelined requests not run" '+OK\r\n<EOF>' \
    'send:QUIT\r\nPING\r\nPING\r\n' read:1 eof:5
