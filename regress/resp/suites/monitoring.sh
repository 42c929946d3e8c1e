# regress/resp/suites/monitoring.sh: the RESP server is monitored with the tools DBAs run for
# Redis. SLOWLOG GET/LEN/RESET and LATENCY LATEST answer with the requests at or above
# local_cache.resp_slowlog_log_slower_than (the serving worker's: each keeps its own), other
# roles' requests (slow log entries, latency events and histograms) only for roles with
# pg_read_all_stats's privileges; INFO commandstats, errorstats and latencystats, LATENCY
# HISTOGRAM and the views local_cache.resp_commands and resp_errors count exactly the requests a
# role sent (calls, rejected and failed ones, by error code), summed over the workers and the
# write workers, each role its own; CONFIG RESETSTAT needs EXECUTE on
# local_cache.resp_reset_stats(); pg_stat_activity shows a worker's command and role while it
# waits for a locked table, and a write worker's while its trigger runs, no password ever;
# prometheus-redis-exporter (Debian's prometheus-redis-exporter) scrapes with no error in its
# log: redis_up 1, redis_db_keys{db="db0"} equal to DBSIZE, connected clients, commands
# processed and the command statistics.
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh monitoring).

section "monitoring: SLOWLOG and LATENCY"
# Every request is slow from now on, once the workers have reloaded.
set_setting local_cache.resp_slowlog_log_slower_than 0
wait_for "the workers log every request" 30 config_is slowlog-log-slower-than 0
# One worker, one connection: what it logged is on the same connection.
own=$(raw 'send:GET items:11\r\nSLOWLOG GET 1\r\nSLOWLOG LEN\r\nLATENCY LATEST\r\n' read:4)
check_re "SLOWLOG GET: id, time, microseconds, arguments, client address, client name" \
    '^\$[0-9]+\\r\\n.*\*1\\r\\n\*6\\r\\n:[0-9]+\\r\\n:[0-9]{10}\\r\\n:[0-9]+\\r\\n\*2\\r\\n\$3\\r\\nGET\\r\\n\$8\\r\\nitems:11\\r\\n\$[0-9]+\\r\\n127\.0\.0\.1:[0-9]+\\r\\n\$0\\r\\n\\r\\n:[1-9][0-9]*\\r\\n' "$own"
check_re "LATENCY LATEST: the event command" '\*1\\r\\n\*4\\r\\n\$7\\r\\ncommand\\r\\n:[0-9]{10}\\r\\n:[0-9]+\\r\\n:[0-9]+\\r\\n$' "$own"
check_re "LATENCY HISTOGRAM get: calls and histogram_usec" \
    '^\*2\\r\\n\$3\\r\\nget\\r\\n\*4\\r\\n\$5\\r\\ncalls\\r\\n:[1-9][0-9]*\\r\\n\$14\\r\\nhistogram_usec\\r\\n\*[0-9]+\\r\\n:1\\r\\n' \
    "$(raw 'send:GET items:1\r\nLATENCY HISTOGRAM get\r\n' skip:1 read:1)"
check "a password never reaches the slow log" "AUTH" \
    "$(raw "send:AUTH regress_resp_reader $PW_READER\\r\\nSLOWLOG GET 1\\r\\n" skip:1 read:1 | grep -o 'AUTH\|rdr-Pw[^\\]*' | tr '\n' ' ' | sed 's/ $//')"

# Another role's request shows only to roles with pg_read_all_stats's privileges (each round on
# one connection, with keys of its own: the connections of the rounds may share a worker).
other_then_mine() {
    raw "send:AUTH regress_resp_user $PW_USER\\r\\nGET items:$1\\r\\nAUTH regress_resp_reader $PW_READER\\r\\nGET items:$2\\r\\nSLOWLOG GET 10\\r\\nSLOWLOG RESET\\r\\n" skip:4 read:2
}
seen=$(other_then_mine 12 13)
check "SLOWLOG GET leaves out other roles' requests" "items:13" "$(grep -o 'items:1[23]' <<<"$seen" | tr '\n' ' ' | sed 's/ $//')"
check_re "SLOWLOG RESET needs pg_read_all_stats" '-NOPERM [^\\]*pg_read_all_stats' "$seen"
sql "GRANT pg_read_all_stats TO regress_resp_reader" >/dev/null
seen=$(other_then_mine 14 15)
check "with pg_read_all_stats they are shown" "items:15 items:14" "$(grep -o 'items:1[45]' <<<"$seen" | tr '\n' ' ' | sed 's/ $//')"
check_re "and SLOWLOG RESET clears the log" '\+OK\\r\\n$' "$seen"
sql "REVOKE pg_read_all_stats FROM regress_resp_reader" >/dev/null

# LATENCY LATEST and LATENCY HISTOGRAM are filtered as SLOWLOG GET is. One connection (so one
# worker) runs HSTRLEN as regress_resp_user while every request is slow; then, with nothing
# slow any more, it logs in as regress_resp_md5, which ran no HSTRLEN and no slow request.
# held_lines FD: what a held connection receives until it is quiet for a second, escaped as raw
held_lines() {
    local line out=""
    while IFS= read -r -t 1 -u "$1" line; do out+="${line%$'\r'}\\r\\n"; done
    printf '%s' "$out"
}
open_held
latency_fd=${HELD[-1]}
send_held "$latency_fd" "AUTH regress_resp_user $PW_USER"$'\r\nHSTRLEN items:1 value\r\n'
check "regress_resp_user runs HSTRLEN" '+OK\r\n:7\r\n' "$(held_lines "$latency_fd")"
set_setting local_cache.resp_slowlog_log_slower_than 10000000
wait_for "nothing is slow any more" 30 config_is slowlog-log-slower-than 10000000
send_held "$latency_fd" "AUTH regress_resp_md5 $PW_MD5"$'\r\nLATENCY LATEST\r\nLATENCY HISTOGRAM hstrlen\r\n'
seen=$(held_lines "$latency_fd")
check "LATENCY LATEST and LATENCY HISTOGRAM leave out other roles' requests" '+OK\r\n*0\r\n*0\r\n' "$seen"
send_held "$latency_fd" "AUTH regress_resp_user $PW_USER"$'\r\nLATENCY LATEST\r\nLATENCY HISTOGRAM hstrlen\r\n'
seen=$(held_lines "$latency_fd")
check_re "... and show the role its own" \
    '^\+OK\\r\\n\*1\\r\\n\*4\\r\\n\$7\\r\\ncommand\\r\\n.*\$7\\r\\nhstrlen\\r\\n\*4\\r\\n\$5\\r\\ncalls\\r\\n:[1-9]' "$seen"
sql "GRANT pg_read_all_stats TO regress_resp_md5" >/dev/null
send_held "$latency_fd" "AUTH regress_resp_md5 $PW_MD5"$'\r\nLATENCY HISTOGRAM hstrlen\r\n'
check_re "with pg_read_all_stats every role's are shown" \
    '^\+OK\\r\\n\*2\\r\\n\$7\\r\\nhstrlen\\r\\n\*4\\r\\n\$5\\r\\ncalls\\r\\n:[1-9]' "$(held_lines "$latency_fd")"
sql "REVOKE pg_read_all_stats FROM regress_resp_md5" >/dev/null
close_held
set_setting local_cache.resp_slowlog_log_slower_than DEFAULT
wait_for "the workers have the default threshold again" 30 config_is slowlog-log-slower-than 10000

section "monitoring: INFO commandstats, errorstats, latencystats and local_cache.resp_commands"
# Counted requests of one role, regress_resp_user, each on a connection of its own (spread over
# both workers; its writes go to the write workers). Its AUTH counts under the role it logs in
# from (regress_resp_reader), so what it sent after is all that counts as its own.
sql "CREATE TABLE stats_hidden (id integer PRIMARY KEY, v text); INSERT INTO stats_hidden VALUES (1, 'x');
     SELECT local_cache.enable('stats_hidden')" >/dev/null
sql "SELECT local_cache.resp_reset_stats()" >/dev/null
as_user() { raw "send:AUTH regress_resp_user $PW_USER\\r\\n$1" skip:1 read:"$2"; }
for i in 1 2 3 4 5 6 7; do as_user 'GET items:1\r\n' 1 >/dev/null; done
check_re "two GETs of a table the role may not read: failed calls" '^-NOPERM .*-NOPERM ' \
    "$(as_user 'GET stats_hidden:1\r\nGET stats_hidden:1\r\n' 2)"
check "two GETs without a key (rejected) and an unknown command (no command)" \
    "-ERR wrong number of arguments for 'get' command\\r\\n-ERR wrong number of arguments for 'get' command\\r\\n-ERR unknown command 'NOSUCHCMD', with args beginning with: \\r\\n" \
    "$(as_user 'GET\r\nGET\r\nNOSUCHCMD\r\n' 3)"
check_re "a SET the role may not write: failed, in a write worker" '^-NOPERM ' "$(as_user "$(cmd SET items:1 '{"value":"x"}')" 1)"
check_re "MULTI, two GETs, EXEC" '^\+OK\\r\\n\+QUEUED\\r\\n\+QUEUED\\r\\n\*2\\r\\n' \
    "$(as_user 'MULTI\r\nGET items:1\r\nGET items:2\r\nEXEC\r\n' 4)"
# What it sent: GET 7 + 2 + the 2 EXEC ran, 2 failed, 2 rejected; SET 1 failed; MULTI; EXEC.
ucli() { timeout 20 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --user regress_resp_user --pass "$PW_USER" --no-auth-warning --raw "$@" 2>&1 | tr -d '\r'; }
# Its INFO calls count too: left out here.
user_commandstats() { ucli INFO commandstats | grep '^cmdstat_' | grep -v '^cmdstat_info:' | sed 's/,usec=[0-9]*,usec_per_call=[0-9.]*,/,usec=U,/'; }
counted="cmdstat_get:calls=11,usec=U,rejected_calls=2,failed_calls=2
cmdstat_multi:calls=1,usec=U,rejected_calls=0,failed_calls=0
cmdstat_exec:calls=1,usec=U,rejected_calls=0,failed_calls=0
cmdstat_set:calls=1,usec=U,rejected_calls=0,failed_calls=1"
user_counted() { [[ "$(user_commandstats)" == "$counted" ]]; }
wait_case "INFO commandstats: the role's requests, counted exactly (calls, rejected, failed)" "$counted" 10 \
    user_counted user_commandstats
same_everywhere() {
    local i
    for i in 1 2 3 4 5 6; do [[ "$(user_commandstats)" == "$counted" ]] || return 1; done
}
check "... on every connection: summed over the workers" "yes" "$(same_everywhere && echo yes || echo no)"
get_line=$(ucli INFO commandstats | grep '^cmdstat_get:')
check "usec_per_call is usec / calls" "yes" \
    "$(awk -F'[=,]' '{ printf "%s", ($6 == sprintf("%.2f", $4 / $2)) ? "yes" : $0 }' <<<"${get_line#*:}")"
check "INFO errorstats: the role's error replies by code" $'errorstat_ERR:count=3\nerrorstat_NOPERM:count=3' \
    "$(ucli INFO errorstats | grep '^errorstat_')"
latency=$(ucli INFO latencystats | grep '^latency_percentiles_usec_' | grep -v '^latency_percentiles_usec_info:')
check_re "INFO latencystats: p50, p99 and p99.9 of each command that ran" \
    '^latency_percentiles_usec_get:p50=[0-9]+\.[0-9]{3},p99=[0-9]+\.[0-9]{3},p99\.9=[0-9]+\.[0-9]{3}
latency_percentiles_usec_multi:p50=.*
latency_percentiles_usec_exec:p50=.*
latency_percentiles_usec_set:p50=[0-9.]+,p99=[0-9.]+,p99\.9=[0-9.]+$' "$latency"
check "... in order: p50 <= p99 <= p99.9" "yes" \
    "$(awk -F'[=,]' '{ if (!($2 <= $4 && $4 <= $6)) bad = bad $0 } END { print bad == "" ? "yes" : bad }' <<<"$latency")"
check_re "LATENCY HISTOGRAM get: the same calls, every worker's" '^get
calls
11
histogram_usec
1
' "$(ucli LATENCY HISTOGRAM get)"
check "local_cache.resp_commands: the same counts" $'exec|1|0|0\nget|11|2|2\nmulti|1|0|0\nset|1|0|1' \
    "$(sql "SELECT command, calls, rejected_calls, failed_calls FROM local_cache.resp_commands
            WHERE usename = 'regress_resp_user' AND command NOT IN ('info', 'latency|histogram') ORDER BY command")"
check "... and the same microseconds as INFO" "$(sed -n 's/.*,usec=\([0-9]*\),.*/\1/p' <<<"$get_line")" \
    "$(sql "SELECT usec FROM local_cache.resp_commands WHERE usename = 'regress_resp_user' AND command = 'get'")"
check "local_cache.resp_errors: the same error codes" $'ERR|3\nNOPERM|3' \
    "$(sql "SELECT error, count FROM local_cache.resp_errors WHERE usename = 'regress_resp_user' ORDER BY error")"
check "the views show a role its own rows" "regress_resp_user" \
    "$(sql "SET ROLE regress_resp_user; SELECT string_agg(DISTINCT usename, ',') FROM local_cache.resp_commands")"
check "... and no other role's" "0 0" \
    "$(sql "SET ROLE regress_resp_md5; SELECT count(*) FROM local_cache.resp_commands WHERE usename = 'regress_resp_user'") $(
       sql "SET ROLE regress_resp_md5; SELECT count(*) FROM local_cache.resp_errors WHERE usename = 'regress_resp_user'")"
# INFO, as SLOWLOG: another role sees nothing of them, a member of pg_read_all_stats every role's.
mcli() { timeout 20 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --user regress_resp_md5 --pass "$PW_MD5" --no-auth-warning --raw "$@" 2>&1 | tr -d '\r'; }
check "INFO commandstats and errorstats leave out other roles' requests" "" \
    "$(mcli INFO commandstats errorstats | grep -E '^cmdstat_(get|set|exec)|^errorstat_')"
sql "GRANT pg_read_all_stats TO regress_resp_md5" >/dev/null
every=$(mcli INFO commandstats)
check "with pg_read_all_stats every role's: GET at least the 11, AUTH of every login" "yes yes" \
    "$(sed -n 's/^cmdstat_get:calls=\([0-9]*\),.*/\1/p' <<<"$every" | awk '{ print ($1 >= 11) ? "yes" : $1 }') $(
       grep -q '^cmdstat_auth:calls=[1-9]' <<<"$every" && echo yes || echo no)"
sql "REVOKE pg_read_all_stats FROM regress_resp_md5" >/dev/null
check_re "CONFIG RESETSTAT needs what local_cache.resp_reset_stats() needs" '^NOPERM .*resp_reset_stats' \
    "$(ucli CONFIG RESETSTAT)"
sql "GRANT EXECUTE ON FUNCTION local_cache.resp_reset_stats() TO regress_resp_user" >/dev/null
reset_reply=$(ucli CONFIG RESETSTAT)
# The RESETSTAT itself reaches the shared counts when its worker folds (within 10 ms).
# Polled by reading INFO once: each read is itself counted by the next one.
stats_after_reset=$(ucli INFO commandstats | grep '^cmdstat_' | sed 's/,usec=.*//')
for ((i = 0; i < 50; i++)); do
    [[ "$stats_after_reset" == *'cmdstat_config|resetstat:calls=1'* ]] && break
    sleep 0.1
    stats_after_reset=$(ucli INFO commandstats | grep '^cmdstat_' | grep -v '^cmdstat_info:' | sed 's/,usec=.*//')
done
check "... granted, it resets every role's statistics" $'OK\ncmdstat_config|resetstat:calls=1' \
    "$reset_reply
$stats_after_reset"
sql "REVOKE EXECUTE ON FUNCTION local_cache.resp_reset_stats() FROM regress_resp_user" >/dev/null
check_re "local_cache.resp_reset_stats() is for superusers (and whom it is granted to)" \
    'permission denied for function resp_reset_stats' "$(sql "SET ROLE regress_resp_user; SELECT local_cache.resp_reset_stats()")"

section "monitoring: pg_stat_activity"
check "each worker has its application_name" $'local_cache RESP worker 0\nlocal_cache RESP worker 1' \
    "$(sql "SELECT application_name FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker' ORDER BY 1")"
# A GET of a key not cached waits for the table's lock: the worker's row shows it, as the role.
sql "CREATE TABLE stats_lock (id integer PRIMARY KEY, v text); INSERT INTO stats_lock VALUES (1, 'a');
     SELECT local_cache.enable('stats_lock'); GRANT SELECT, INSERT, UPDATE ON stats_lock TO regress_resp_user;
     CREATE FUNCTION stats_slow() RETURNS trigger LANGUAGE plpgsql AS \$\$
     BEGIN IF NEW.v = 'slow' THEN PERFORM pg_sleep(3); END IF; RETURN NEW; END \$\$;
     CREATE TRIGGER stats_slow BEFORE UPDATE ON stats_lock FOR EACH ROW EXECUTE FUNCTION stats_slow()" >/dev/null
set_setting local_cache.resp_lock_timeout 20s
sleep 1 # the workers reload at once (SIGHUP wakes their loops)
timeout 30 "$CLUSTER_SH" psql "$DIR" -Atq -c "BEGIN" -c "LOCK TABLE stats_lock IN ACCESS EXCLUSIVE MODE" \
    -c "SELECT pg_sleep(4)" -c "COMMIT" >/dev/null 2>&1 &
locker=$!
stats_locked() { [[ "$(sql "SELECT count(*) FROM pg_locks WHERE relation = 'stats_lock'::regclass AND mode = 'AccessExclusiveLock' AND granted")" == 1 ]]; }
wait_for "the LOCK TABLE" 10 stats_locked
as_user 'GET stats_lock:1\r\n' 1 >"$WORK/waiting_get" &
getter=$!
activity() { sql "SELECT usename, state, query FROM pg_stat_activity WHERE backend_type = '$1' AND state = 'active'"; }
worker_shows() { [[ "$(activity 'local_cache RESP worker')" == 'regress_resp_user|active|GET stats_lock:1' ]]; }
wait_case "a GET waiting for a locked table: the worker's row shows it, active, as the role" \
    'regress_resp_user|active|GET stats_lock:1' 10 worker_shows "activity local_cache RESP worker"
check "... its query to the role, as a backend's" "GET stats_lock:1" \
    "$(sql "SET ROLE regress_resp_user; SELECT query FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker' AND state = 'active'")"
waiting_pid=$(sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker' AND state = 'active'")
check "... not to another role" "<insufficient privilege>" \
    "$(sql "SET ROLE regress_resp_md5; SELECT query FROM pg_stat_activity WHERE pid = '$waiting_pid'")"
wait "$locker" "$getter"
check "the GET answers once the lock is gone" "$(bulk '{"id":1,"v":"a"}')" "$(cat "$WORK/waiting_get")"
worker_idle() { [[ -z "$(activity 'local_cache RESP worker')" ]]; }
wait_case "... and the worker's row is idle again" "" 5 worker_idle "activity local_cache RESP worker"
# A write whose trigger sleeps: the write worker's row shows it.
as_user "$(cmd SET stats_lock:1 '{"v":"slow"}')" 1 >"$WORK/slow_set" &
setter=$!
write_worker_shows() { [[ "$(activity 'local_cache RESP write worker')" == "regress_resp_user|active|SET stats_lock:1 \"{\\\"v\\\":\\\"slow\\\"}\"" ]]; }
wait_case "a SET whose trigger sleeps: the write worker's row shows it, as the role" \
    "regress_resp_user|active|SET stats_lock:1 \"{\\\"v\\\":\\\"slow\\\"}\"" 10 write_worker_shows \
    "activity local_cache RESP write worker"
wait "$setter"
check "... which then answers" '+OK\r\n' "$(cat "$WORK/slow_set")"
check "no password ever shows in pg_stat_activity" "0" \
    "$(sql "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%$PW_USER%' AND backend_type LIKE 'local_cache%'")"
set_setting local_cache.resp_lock_timeout DEFAULT
sql "DROP TABLE stats_lock, stats_hidden; DROP FUNCTION stats_slow()" >/dev/null

section "monitoring: prometheus-redis-exporter"
if ! command -v prometheus-redis-exporter >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
    fail "prometheus-redis-exporter and curl are installed (tools/deps.sh installs them)" "installed" "missing"
else
    exporter_port=$("$CLUSTER_SH" freeport)
    exporter_log=$WORK/exporter.log
    prometheus-redis-exporter -redis.addr "redis://127.0.0.1:$RESP_PORT" \
        -web.listen-address "127.0.0.1:$exporter_port" >"$exporter_log" 2>&1 &
    exporter_pid=$!
    scrape() { timeout 20 curl -sf "http://127.0.0.1:$exporter_port/metrics"; }
    metric() { sed -n "s/^$1 \\([0-9.e+]*\\)\$/\\1/p" <<<"$metrics"; }
    scraped_up() { [[ "$(scrape)" == *$'\nredis_up 1\n'* ]]; }
    wait_for "the exporter scrapes" 30 scraped_up
    scrape >/dev/null # a second scrape: errors logged once per process show on the first
    metrics=$(scrape)
    check "redis_up" "1" "$(metric redis_up)"
    check "redis_db_keys{db=\"db0\"} is DBSIZE" "$(cli DBSIZE | sed 's/(integer) //')" "$(metric 'redis_db_keys{db="db0"}')"
    check_re "redis_connected_clients" '^[1-9][0-9]*$' "$(metric redis_connected_clients)"
    check_re "redis_commands_processed_total" '^[1-9][0-9.e+]*$' "$(metric redis_commands_processed_total)"
    check_re "redis_slowlog_length" '^[0-9]+$' "$(metric redis_slowlog_length)"
    # INFO ALL's command statistics, the exporter's role's own (its INFO of the first scrape).
    check_re "redis_commands_total{cmd=\"info\"} (INFO commandstats)" '^[1-9][0-9]*$' "$(metric 'redis_commands_total{cmd="info"}')"
    check_re "redis_latency_percentiles_usec{cmd=\"info\",quantile=\"99\"} (INFO latencystats)" '^[0-9.e+]+$' \
        "$(metric 'redis_latency_percentiles_usec{cmd="info",quantile="99"}')"
    kill "$exporter_pid" 2>/dev/null
    wait "$exporter_pid" 2>/dev/null
    check "the exporter logged no error or warning" "" "$(grep -E 'level=(error|warning|fatal)' "$exporter_log")"
fi
