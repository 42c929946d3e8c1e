# regress/resp/suites/lifecycle.sh: the RESP workers under the postmaster: a C++ exception in a
# libuv callback or a worker's main is logged, never a crash; a worker killed with SIGTERM is
# restarted, one killed with SIGKILL makes the postmaster restart everything, and fast and smart
# shutdowns complete with clients connected, without a crash; a write worker that ends while it
# runs a write answers that write with an error and is started again.
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh lifecycle). Runs last:
# it stops the cluster and leaves it stopped.

section "worker restarts and shutdown"
worker_count() { sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker'"; }
info_pid() { timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --raw INFO server | sed -n 's/^process_id:\([0-9]*\).*/\1/p'; }

# stop_case MODE: pg_ctl stop -m MODE with RESP clients connected must stop within 30 s
stop_case() {
    local mode=$1 start=$SECONDS
    if as_pg timeout 60 "$PGBIN/pg_ctl" -D "$DIR/data" -m "$mode" -w -t 30 stop >/dev/null 2>&1; then
        pass "pg_ctl stop -m $mode with RESP clients connected (stopped after $((SECONDS - start)) s)"
    else
        fail "pg_ctl stop -m $mode with RESP clients connected" "stopped within 30 s" "pg_ctl failed after $((SECONDS - start)) s"
    fi
}

check "two RESP workers running" 2 "$(worker_count)"

# A write worker that ends while it runs a write: that write answers an error saying its commit is
# not known; the launcher starts the write worker again and writes go on.
write_worker_count() { sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'local_cache RESP write worker'"; }
check "two write workers running" 2 "$(write_worker_count)"
sql "CREATE TABLE life_slow (id integer PRIMARY KEY, v text);
CREATE FUNCTION life_slow_sleep() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN IF NEW.v = 'slow' THEN PERFORM pg_sleep(30); END IF; RETURN NEW; END \$\$;
CREATE TRIGGER life_slow_sleep BEFORE INSERT ON life_slow FOR EACH ROW EXECUTE FUNCTION life_slow_sleep();
SELECT local_cache.enable('life_slow');
GRANT SELECT, INSERT, UPDATE ON life_slow TO regress_resp_user" >/dev/null
ended_out=$WORK/write_worker_ended.out
raw timeout:40 "send:AUTH regress_resp_user $PW_USER\r\n$(cmd SET life_slow:1 '{"v":"slow"}')" read:2 >"$ended_out" &
ended=$!
sleeping_write() { [[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'local_cache RESP write worker' AND wait_event = 'PgSleep'")" == 1 ]]; }
wait_for "a write worker sleeping in the trigger" 10 sleeping_write
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'local_cache RESP write worker' AND wait_event = 'PgSleep'" >/dev/null
wait "$ended"
check "the write whose write worker ended answers so, its commit not known" \
    '+OK\r\n-ERR the write worker running this command ended; whether it committed is not known\r\n' "$(cat "$ended_out")"
writes_again() { [[ "$(raw "send:AUTH regress_resp_user $PW_USER\r\n$(cmd SET life_slow:2 '{"v":"fast"}')" read:2)" == '+OK\r\n+OK\r\n' ]]; }
wait_case "writes go on" "+OK" 10 writes_again "raw send:PING\r\n read:1"
two_write_workers() { [[ "$(write_worker_count)" == 2 ]]; }
wait_case "the launcher starts the write worker again" 2 15 two_write_workers write_worker_count
sql "DROP TABLE life_slow; DROP FUNCTION life_slow_sleep()" >/dev/null
# A C++ exception in a libuv callback is logged and the worker goes on serving; one that escapes a
# worker's main is a logged ERROR and a clean exit (code 1), after which the launcher starts the
# worker again. local_cache.debug_throw_at names the entry point that throws (extension/boundary.h).
pids_before=$(worker_pids)
log_before=$(log_size)
set_setting local_cache.debug_throw_at resp_timer
timer_threw() { log_since "$log_before" | grep -q 'local_cache RESP: exception thrown at resp_timer'; }
last_log_lines() { log_since "$log_before" | tail -n 5; }
wait_case "an exception in the worker's timer callback is logged" "a LOG line naming resp_timer" 20 \
    timer_threw last_log_lines
wait_case "an exception in the timer callback: RESP serves on" '+PONG\r\n' 10 resp_pong ping_reply
check "an exception in the timer callback: the same workers run" "$pids_before" "$(worker_pids)"
set_setting local_cache.debug_throw_at resp_worker_main
victim=$(info_pid)
kill -TERM "$victim"
main_threw() { log_since "$log_before" | grep -q 'ERROR:  local_cache: exception thrown at resp_worker_main'; }
wait_case "an exception escaping a worker's main is a logged ERROR" "an ERROR line naming resp_worker_main" 30 \
    main_threw last_log_lines
set_setting local_cache.debug_throw_at DEFAULT
back_again() { [[ "$(worker_count)" == 2 ]] && ! [[ " $(worker_pids) " == *" $victim "* ]] && resp_pong; }
describe_workers() { echo "RESP worker pids: $(worker_pids)"; }
wait_case "after the exception in main: the launcher starts the worker again" "two RESP workers serving" 30 \
    back_again describe_workers
check "exceptions at the boundary: no crash in the log" "" "$(log_since "$log_before" | crash_lines)"

victim=$(info_pid)
check_re "INFO process_id names a RESP worker" "(^| )$victim( |$)" "$(worker_pids)"
log_before=$(log_size)
kill -TERM "$victim"
back_after_term() { [[ "$(worker_count)" == 2 ]] && ! [[ " $(worker_pids) " == *" $victim "* ]]; }
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
stop_case fast
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
stop_case smart
close_held
check "smart shutdown: no crash in the log" "" "$(log_since "$log_before" | crash_lines)"
