# regress/resp/suites/monitoring.sh: the RESP server is monitored with the tools DBAs run for
# Redis. SLOWLOG GET/LEN/RESET and LATENCY LATEST/HISTOGRAM answer with the requests at or above
# local_cache.resp_slowlog_log_slower_than (the serving worker's: each keeps its own), other
# roles' requests (slow log entries, latency events and histograms) only for roles with
# pg_read_all_stats's privileges; prometheus-redis-exporter
# (Debian's prometheus-redis-exporter) scrapes with no error in its log: redis_up 1,
# redis_db_keys{db="db0"} equal to DBSIZE, connected clients and commands processed.
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
    kill "$exporter_pid" 2>/dev/null
    wait "$exporter_pid" 2>/dev/null
    check "the exporter logged no error or warning" "" "$(grep -E 'level=(error|warning|fatal)' "$exporter_log")"
fi
