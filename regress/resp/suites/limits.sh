# regress/resp/suites/limits.sh: the settings that bound what one client can take, each set, then
# reset to its default:
#   local_cache.resp_max_clients           the next client gets "max number of clients reached";
#                                          it counts logged-in connections only: connections
#                                          that have not logged in have a pool of their own
#                                          (the oldest goes for a new one) and are closed after
#                                          authentication_timeout
#   local_cache.resp_timeout               idle connections (and half-sent requests) are closed
#   local_cache.resp_max_request_size      larger bulks and unprocessed input close the connection
#   local_cache.resp_output_buffer_limit   clients that do not read are disconnected; too large
#                                          replies are refused; the workers' memory stays bounded
#   local_cache.resp_client_memory         past it the biggest clients are closed first, never
#                                          another role's ordinary request; one MULTI is bounded
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh limits).

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

# Connections that never log in (no resp_role, no AUTH) take no logged-in client's slot: they
# do not count against resp_max_clients, each worker holds at most resp_max_clients of them
# (past it the one that has waited longest is closed), and authentication_timeout closes them.
set_setting local_cache.resp_max_clients 5
wait_for "maxclients = 5" 10 config_is maxclients 5 || true
set_setting authentication_timeout 2s
set_setting local_cache.resp_role ''
noauth() { [[ "$(raw 'send:GET items:1\r\n' read:1)" == '-NOAUTH Authentication required.\r\n' ]]; }
for i in 1 2 3 4 5 6; do wait_for "resp_role = '' reloaded" 10 noauth || break; done
# open_idle: a connection kept in HELD that sends nothing (accepted by the server once it has
# answered a later connection: the workers accept in order)
open_idle() { local fd; exec {fd}<>"/dev/tcp/127.0.0.1/$RESP_PORT" || return 1; HELD+=("$fd"); }
# closed_count: how many HELD connections the server closed (end of file within 8 s each)
closed_count() {
    local fd n=0 line status
    for fd in "${HELD[@]}"; do
        IFS= read -r -t 8 -u "$fd" line
        status=$?
        ((status == 1)) && n=$((n + 1))
    done
    echo "$n"
}
user_get="send:AUTH regress_resp_user $PW_USER\\r\\nGET items:1\\r\\n"
log_before=$(log_size)
for i in 1 2 3 4 5; do open_idle; done
sleep 0.5 # the workers accept them
raw_case "5 idle connections that never log in, resp_max_clients = 5: a client that AUTHs is served" \
    "+OK\\r\\n$(bulk "$J1")" "$user_get" read:2
check "the 5 idle connections are closed after authentication_timeout (2 s)" 5 "$(closed_count)"
close_held
log_says_login_timeout() { [[ "$(log_since "$log_before")" =~ not\ logged\ in\ within\ authentication_timeout ]]; }
wait_case "the log says why" "a log line" 5 log_says_login_timeout "log_since $log_before"
open_idle
send_held "${HELD[0]}" "AUTH regress_resp_user $PW_USER"$'\r\n'
IFS= read -r -t 10 -u "${HELD[0]}" line
sleep 3.5
send_held "${HELD[0]}" $'PING\r\n'
IFS= read -r -t 10 -u "${HELD[0]}" pong
check "a connection that logged in stays open past authentication_timeout" $'+OK\r +PONG\r' "$line $pong"
close_held

log_before=$(log_size)
for i in $(seq 1 20); do open_idle; done
sleep 0.5
raw_case "20 idle connections into 2 workers (more than 5 each): a client that AUTHs is served" \
    "+OK\\r\\n$(bulk "$J1")" "$user_get" read:2
# 20 idle connections and the served one: past 5 waiting per worker, the oldest were closed
# to make room, at once (closed_count waits up to 8 s for each of those still open: the rest
# go at authentication_timeout, so count the early ones first).
early_closed=0
for fd in "${HELD[@]}"; do
    IFS= read -r -t 0.2 -u "$fd" line
    (($? == 1)) && early_closed=$((early_closed + 1))
done
check "... the oldest idle ones were closed to make room, at least 10 of 20" "yes" \
    "$( ((early_closed >= 10)) && echo yes || echo "$early_closed closed")"
log_says_room() { [[ "$(log_since "$log_before")" =~ waited\ longest\ for\ login ]]; }
wait_case "the log says why" "a log line" 5 log_says_room "log_since $log_before"
close_held

# Logged-in connections count against resp_max_clients: the sixth AUTH is refused.
ok=1
for i in 1 2 3 4 5; do
    open_idle
    send_held "${HELD[-1]}" "AUTH regress_resp_user $PW_USER"$'\r\n'
    IFS= read -r -t 10 -u "${HELD[-1]}" line
    [[ "$line" == $'+OK\r' ]] || ok=0
done
check "5 connections log in under resp_max_clients = 5" 1 "$ok"
raw_case "the sixth connection's AUTH: max number of clients reached, closed" \
    '-ERR max number of clients reached\r\n<EOF>' "send:AUTH regress_resp_user $PW_USER\\r\\n" read:1 eof:5
close_held
user_get_reply() { raw "$user_get" read:2; }
user_served() { [[ "$(user_get_reply)" == "+OK\\r\\n$(bulk "$J1")" ]]; }
wait_case "after they closed, a client logs in again" "+OK\\r\\n$(bulk "$J1")" 10 user_served user_get_reply
set_setting local_cache.resp_role DEFAULT
set_setting authentication_timeout DEFAULT
set_setting local_cache.resp_max_clients DEFAULT
authed() { [[ "$(raw 'send:EXISTS items:1\r\n' read:1)" == ':1\r\n' ]]; }
for i in 1 2 3 4 5 6; do wait_for "resp_role reset" 10 authed || break; done
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

# hwm_case WHAT: the workers' peak memory grew by less than 64 MB from hwm_before to hwm_after
hwm_case() {
    check "$1: the workers' peak memory grew by less than 64 MB" "less than 65536 kB" \
        "$( ((hwm_after - hwm_before < 65536)) && echo "less than 65536 kB" || echo "$((hwm_after - hwm_before)) kB (peak RSS before $hwm_before kB, after $hwm_after kB)")"
}

# The limit also bounds the workers' memory (peak RSS, VmHWM): neither one request asking for far
# more than the limit nor a pipeline read in one go may make a worker allocate much beyond it.
hwm_before=$(workers_hwm_kb)
check_re "one MGET of 50,000 x 4 kB rows: refused with an error naming the limit" \
    '^-ERR .*local_cache\.resp_output_buffer_limit.*\\r\\n\+PONG\\r\\n$' \
    "$(raw 'send:*50001\r\n$4\r\nMGET\r\n' 'repeat:50000:$5\r\nbig:1\r\n' read:1 'send:PING\r\n' read:1)"
hwm_after=$(workers_hwm_kb)
hwm_case "one huge MGET"
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
hwm_case "pipeline read in one go"
# Disconnect log lines are rate-limited (one a second per reason, then a count): allow for it.
log_says_why() { [[ "$(log_since "$log_before")" =~ output\ buffer\ limit\ exceeded ]]; }
wait_for "the log to say why" 5 log_says_why || true
check_re "pipeline read in one go: the log says why" 'output buffer limit exceeded' "$(log_since "$log_before")"
raw_case "the workers keep serving others" "+PONG\\r\\n$(bulk "$J3")" 'send:PING\r\nGET items:3\r\n' read:2
set_setting local_cache.resp_output_buffer_limit DEFAULT

# A reply far larger than the socket takes at once (8,000 x 4 kB: 32 MB, under the default limit)
# is written in parts as the client reads; it arrives whole, and the replies of the requests
# pipelined behind it follow, in order, on the same connection.
big_bulk=$(bulk "$(json_of bigrow 1)")
want_sum=$( { printf '*8000\\r\\n'; for i in $(seq 1 8000); do printf '%s' "$big_bulk"; done
              printf '+PONG\\r\\n%s' "$(bulk "$J1")"; } | md5sum)
got_sum=$(raw 'send:*8001\r\n$4\r\nMGET\r\n' 'repeat:8000:$5\r\nbig:1\r\n' 'send:PING\r\nGET items:1\r\n' read:3 | tr -d '\n' | md5sum)
check "a 32 MB MGET reply and the two replies pipelined behind it arrive whole and in order" "$want_sum" "$got_sum"

# Buffers grow with the bytes that arrive, never with what a request declares: 20 connections
# announcing a 64 MB argument and sending one byte of it cost the workers almost nothing.
hwm_before=$(workers_hwm_kb)
for i in $(seq 1 20); do open_held || true; done
for fd in "${HELD[@]}"; do send_held "$fd" $'*2\r\n$3\r\nGET\r\n$67000000\r\nx'; done
sleep 1
hwm_after=$(workers_hwm_kb)
check "20 clients declaring 64 MB arguments: the workers' peak memory grew by less than 16 MB" "less than 16384 kB" \
    "$( ((hwm_after - hwm_before < 16384)) && echo "less than 16384 kB" || echo "$((hwm_after - hwm_before)) kB (peak RSS before $hwm_before kB, after $hwm_after kB)")"
raw_case "and the workers serve others meanwhile" "+PONG\\r\\n$(bulk "$J1")" 'send:PING\r\nGET items:1\r\n' read:2
close_held

# All connections of a worker together stay within local_cache.resp_client_memory: clients that
# really send large arguments are closed one by one past it; the others are served.
set_setting local_cache.resp_client_memory 4MB
sleep 0.5
log_before=$(log_size)
for i in $(seq 1 12); do open_held || true; done
chunk=$(head -c 1000000 /dev/zero | tr '\0' k)
for fd in "${HELD[@]}"; do send_held "$fd" $'*2\r\n$6\r\nEXISTS\r\n$2000000\r\n'"$chunk"; done
sleep 1
# open: the read times out (status above 128); closed: end of file or a reset, at once. (A write
# to a connection the server closed may still succeed: the client learns of it when reading.)
open_now=0
for fd in "${HELD[@]}"; do
    send_held "$fd" x
    IFS= read -r -t 0.2 -u "$fd" line
    (($? > 128)) && open_now=$((open_now + 1))
done
check "12 clients sending 1 MB each into 2 workers at 4 MB: some closed" "yes" \
    "$( ((open_now < 12)) && echo yes || echo "all $open_now still open")"
log_says_memory() { [[ "$(log_since "$log_before")" =~ local_cache\.resp_client_memory ]]; }
wait_case "the log names local_cache.resp_client_memory" "a log line" 5 log_says_memory "log_since $log_before"
close_held
raw_case "the workers serve others afterwards" "+PONG\\r\\n$(bulk "$J1")" 'send:PING\r\nGET items:1\r\n' read:2
set_setting local_cache.resp_client_memory DEFAULT

# One client's memory never costs another client its connection: as Redis's client eviction
# (maxmemory-clients), past local_cache.resp_client_memory the biggest clients are closed first.
# One role queues 20 MB of MULTI and stays idle; another role's ordinary GET of a 3 MB row on the
# same worker is answered, and the MULTI client is the one closed, with a log line saying why.
sql "CREATE TABLE huge (id integer PRIMARY KEY, v text);
INSERT INTO huge VALUES (1, repeat('h', 3000000));
SELECT local_cache.enable('huge');
GRANT SELECT ON huge TO regress_resp_reader;" >/dev/null
huge_length=$(sql "SELECT octet_length(row_to_json(h)::text) FROM huge h")
set_setting local_cache.resp_client_memory 32MB
sleep 0.5
# held_reply FD: one line of a reply on a held connection, without its CR; fails at EOF/timeout
held_reply() { local line; IFS= read -r -t 20 -u "$1" line || return 1; printf '%s' "${line%$'\r'}"; }
# worker_of FD: the worker serving a held connection (CLIENT ID's high bits: connection.cpp)
worker_of() { local id; send_held "$1" $'CLIENT ID\r\n'; id=$(held_reply "$1") || return 1; echo $((${id#:} >> 40)); }
log_before=$(log_size)
open_held || true
multi_fd=${HELD[-1]}
multi_worker=$(worker_of "$multi_fd")
send_held "$multi_fd" "AUTH regress_resp_user $PW_USER"$'\r\nMULTI\r\n'
queued="$(held_reply "$multi_fd") $(held_reply "$multi_fd")"
chunk=$(head -c 4000000 /dev/zero | tr '\0' e)
for i in 1 2 3 4 5; do
    send_held "$multi_fd" $'*2\r\n$4\r\nECHO\r\n$4000000\r\n'"$chunk"$'\r\n'
    queued+=" $(held_reply "$multi_fd")"
done
check "regress_resp_user queues 5 x ECHO of 4 MB in MULTI" "+OK +OK +QUEUED +QUEUED +QUEUED +QUEUED +QUEUED" "$queued"
get_fd=""
for i in $(seq 1 20); do
    open_held || continue
    if [[ "$(worker_of "${HELD[-1]}")" == "$multi_worker" ]]; then get_fd=${HELD[-1]}; break; fi
done
check "a regress_resp_reader connection on the same worker" "yes" "$([[ -n "$get_fd" ]] && echo yes || echo no)"
send_held "$get_fd" $'GET huge:1\r\n'
header=$(held_reply "$get_fd")
body_bytes=0
# (head reads blocks, bash's read a byte at a time; head -c takes no more than it is asked for)
[[ "$header" == '$'* ]] && body_bytes=$(timeout 20 head -c "$((huge_length + 2))" <&"$get_fd" | wc -c)
check "its GET of the 3 MB row is answered whole" "\$$huge_length $((huge_length + 2))" "$header $body_bytes"
check "... and it stays open" "+PONG" "$(send_held "$get_fd" $'PING\r\n'; held_reply "$get_fd")"
IFS= read -r -t 10 -u "$multi_fd" line
status=$?
check "the biggest client, the idle MULTI, is the one closed" "closed" \
    "$( ((status == 1)) && echo closed || echo "read status $status: '$line'")"
log_says_evicted() { [[ "$(log_since "$log_before")" =~ evicted,\ the\ biggest\ client ]]; }
wait_case "the log says it was evicted as the biggest client" "a log line" 5 log_says_evicted "log_since $log_before"
close_held
set_setting local_cache.resp_client_memory DEFAULT
sql "DROP TABLE huge" >/dev/null

# A client flood does not flood the log: at most one line a second per reason, then a count.
set_setting local_cache.resp_max_request_size 4kB
wait_for "proto-max-bulk-len = 4096" 10 config_is proto-max-bulk-len 4096 || true
log_before=$(log_size)
for i in $(seq 1 30); do
    raw "send:*3\\r\\n\$4\\r\\nECHO\\r\\n\$3000\\r\\n$big\\r\\n\$3000\\r\\n$big" eof:5 >/dev/null &
done
wait
log_counts() { [[ "$(log_since "$log_before")" =~ closed\ [0-9]+\ more\ clients ]]; }
wait_for "the count of left-out disconnects" 5 log_counts || true
log_lines=$(log_since "$log_before" | grep -c 'query buffer limit exceeded' || true)
check "30 clients over the query buffer limit in a burst: a few log lines, not 30" "yes" \
    "$( ((log_lines >= 1 && log_lines < 10)) && echo yes || echo "$log_lines lines")"
check_re "... and one line counts the others" 'closed [0-9]+ more clients in the last second: query buffer limit exceeded' \
    "$(log_since "$log_before")"
# The requests one MULTI queues are input not run yet: bounded by resp_max_request_size as the
# unprocessed input is; the request that goes past it closes the connection (logged), as Redis
# closes a client past client-query-buffer-limit. Each request alone is below the limit.
log_before=$(log_size)
echo_3000="send:*2\\r\\n\$4\\r\\nECHO\\r\\n\$3000\\r\\n$big\\r\\n"
raw_case "a MULTI whose queue passes resp_max_request_size is closed at the request that does" \
    '+OK\r\n+QUEUED\r\n<EOF>' 'send:MULTI\r\n' read:1 "$echo_3000" read:1 "$echo_3000" eof:5
log_says_multi() { [[ "$(log_since "$log_before")" =~ queued\ MULTI\ requests\ exceed ]]; }
wait_case "the log says why" "a log line" 5 log_says_multi "log_since $log_before"
raw_case "a MULTI below it is served" '+OK\r\n+QUEUED\r\n*1\r\n$3\r\nabc\r\n' \
    'send:MULTI\r\nECHO abc\r\nEXEC\r\n' read:3
set_setting local_cache.resp_max_request_size DEFAULT
wait_for "proto-max-bulk-len default" 10 config_is proto-max-bulk-len 67108864 || true

# The open files limit: each worker raises its soft limit to the hard one at start and takes
# only as many clients as that leaves room for (after PostgreSQL's own max_files_per_process):
# beyond, a client gets Redis's error and is counted, never dropped without a reply. A cluster
# of its own, started under a low hard limit.
FD_DIR=$WORK/fd
FD_PORT=$("$CLUSTER_SH" freeport)
allowed=$((1000 + 64 + 4))
if (ulimit -n "$allowed" && timeout 120 "$CLUSTER_SH" start "$FD_DIR" auto "local_cache.resp_port = $FD_PORT" \
        "local_cache.resp_workers = 1" "local_cache.resp_role = 'postgres'" "max_files_per_process = 1000" >/dev/null 2>&1); then
    fd_pong() { [[ "$(RESP_PORT=$FD_PORT raw 'send:PING\r\n' read:1)" == '+PONG\r\n' ]]; }
    wait_for "the RESP server of the low-limit cluster" 30 fd_pong || tail -n 20 "$FD_DIR/server.log" | sed 's/^/      /'
    check_re "a worker logs its open files limit and how many clients it takes" \
        "open files limit $allowed, room for 4 clients" "$(cat "$FD_DIR/server.log")"
    answered=0 refused=0
    for i in $(seq 1 10); do
        exec {fd}<>"/dev/tcp/127.0.0.1/$FD_PORT" || continue
        HELD+=("$fd")
        send_held "$fd" $'PING\r\n'
        if IFS= read -r -t 5 -u "$fd" line; then
            answered=$((answered + 1))
            [[ "$line" == $'-ERR max number of clients reached\r' ]] && refused=$((refused + 1))
        fi
    done
    check "10 connections to a worker with room for 4: every one answered" 10 "$answered"
    check "... 6 of them refused with -ERR max number of clients reached" 6 "$refused"
    close_held
    check "INFO rejected_connections counts them" 6 \
        "$(timeout 10 redis-cli -h 127.0.0.1 -p "$FD_PORT" --raw INFO stats | sed -n 's/^rejected_connections:\([0-9]*\).*/\1/p')"
else
    fail "a cluster under an open files limit of $allowed starts" "started" "$(tail -n 20 "$FD_DIR/server.log" 2>/dev/null)"
fi
"$CLUSTER_SH" destroy "$FD_DIR" >/dev/null 2>&1 || true
