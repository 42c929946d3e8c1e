# regress/resp/suites/writes.sh: SET, MSET, DEL, HSET, HDEL, HINCRBY and MULTI/EXEC/WATCH write
# rows through SQL, as the connection's role, with PostgreSQL's guarantees.
#   SET         the row becomes exactly the object (absent columns DEFAULT); NX, XX, GET; the
#               key column must match; unknown columns, non-objects, invalid JSON and EX refused
#   errors      constraint violations and type errors with their SQLSTATE; NOPERM without the
#               privilege; a row locked by SQL waits (the worker serves others), then -BUSY
#   freshness   SQL and other RESP connections see a write once its reply arrived; the cache
#               is invalidated by the table's capture triggers, which fire like user triggers
#   hashes      HSET inserts or updates, HDEL sets NULL, HINCRBY / HINCRBYFLOAT add
#   MULTI       writes commit together or not at all; WATCH makes EXEC answer nil after a change
#   spellings   a write to another spelling of an integer key (w:01, w:+1, w: 1, w:-0) is refused
#               by every write command, in MULTI too, naming the key's canonical text; reads of
#               it answer as for a missing key
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh writes). Creates and
# drops its own table (wtab, prefix w) and role (regress_resp_writer).

PW_WRITER='wrt-Pw-4Jr8-xyzzy'
sql "CREATE ROLE regress_resp_writer LOGIN PASSWORD '$PW_WRITER';
CREATE TABLE wtab (id integer PRIMARY KEY, v text NOT NULL DEFAULT 'dflt', n integer, f float8,
                   at date DEFAULT '2024-01-01');
CREATE TABLE wtab_audit (id integer, op text);
CREATE FUNCTION wtab_audit() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO wtab_audit VALUES (COALESCE(NEW.id, OLD.id), TG_OP); RETURN NULL; END \$\$;
CREATE TRIGGER wtab_audit AFTER INSERT OR UPDATE OR DELETE ON wtab FOR EACH ROW EXECUTE FUNCTION wtab_audit();
INSERT INTO wtab VALUES (1, 'one', 10, 1.5);
SELECT local_cache.enable('wtab', resp_prefix => 'w');
GRANT SELECT, INSERT, UPDATE, DELETE ON wtab TO regress_resp_writer;
GRANT INSERT ON wtab_audit TO regress_resp_writer;
GRANT SELECT ON wtab TO regress_resp_reader" >/dev/null
wcli() { cli --no-auth-warning --user regress_resp_writer --pass "$PW_WRITER" --raw "$@"; }
row() { sql "SELECT row_to_json(t)::text FROM wtab t WHERE id = $1"; }
AUTH_WRITER="send:AUTH regress_resp_writer $PW_WRITER\\r\\n"

section "SET: the row becomes exactly the JSON object"
check "SET of a new row" "OK" "$(wcli SET w:2 '{"v":"two","n":2}')"
check "... SQL has it, the absent columns at their DEFAULT" '{"id":2,"v":"two","n":2,"f":null,"at":"2024-01-01"}' "$(row 2)"
wcli GET w:1 >/dev/null # cached now
check "SET of an existing row: absent columns back to DEFAULT" "OK" "$(wcli SET w:1 '{"id":1,"v":"uno"}')"
check "... SQL has the new row" '{"id":1,"v":"uno","n":null,"f":null,"at":"2024-01-01"}' "$(row 1)"
check "... and GET (cached before the write) shows it" '{"id":1,"v":"uno","n":null,"f":null,"at":"2024-01-01"}' "$(wcli GET w:1)"
check "... as another RESP connection does" '{"id":1,"v":"uno","n":null,"f":null,"at":"2024-01-01"}' "$(cli --raw GET w:1)"
check "the table's own triggers fired, once per write" "1:INSERT 1:UPDATE 2:INSERT" \
    "$(sql "SELECT string_agg(id || ':' || op, ' ' ORDER BY id, op) FROM wtab_audit")"
raw_case "SET NX on an existing row: nil, nothing written; on a new one: OK" '+OK\r\n$-1\r\n+OK\r\n' \
    "$AUTH_WRITER" "send:$(cmd SET w:1 '{"v":"nx"}' NX)$(cmd SET w:3 '{"v":"three"}' NX)" read:3
raw_case "SET XX on a missing row: nil; on an existing one: OK" '+OK\r\n$-1\r\n+OK\r\n' \
    "$AUTH_WRITER" "send:$(cmd SET w:4 '{"v":"x"}' XX)$(cmd SET w:3 '{"v":"drei"}' XX)" read:3
check "... XX wrote the existing row" '{"id":3,"v":"drei","n":null,"f":null,"at":"2024-01-01"}' "$(row 3)"
check "SET ... GET answers the old row" '{"id":3,"v":"drei","n":null,"f":null,"at":"2024-01-01"}' "$(wcli SET w:3 '{"v":"trois"}' GET)"
check "SET of a key column that differs from the key" "ERR the object's key column id differs from the key (SQLSTATE 22023)" \
    "$(wcli SET w:5 '{"id":6,"v":"x"}')"
check "SET with a member that is no column" 'ERR column "nope" of table "wtab" does not exist (SQLSTATE 42703)' \
    "$(wcli SET w:5 '{"nope":1}')"
check "SET of something else than an object" "ERR the value must be a JSON object (SQLSTATE 22023)" "$(wcli SET w:5 '[1]')"
check "SET ... EX: rows do not expire" "ERR rows do not expire: EX is not supported" "$(wcli SET w:5 '{}' EX 10)"
check "SET of a prefix no table has" 'ERR no enabled table has the RESP prefix "nosuch" (SQLSTATE 42P01)' "$(wcli SET nosuch:1 '{}')"
check "nothing was written by the refused SETs" "" "$(row 5)$(row 6)"
# The value's members are read by PostgreSQL's JSON parser in the worker: the errors of
# $1::json; a key member that spells the key, as a number or a string, is the key; another
# spelling is read as the key column reads it.
check "SET of text that is not JSON" "ERR invalid input syntax for type json (SQLSTATE 22P02)" "$(wcli SET w:70 '{"v":')"
check "SET with an escape JSON refuses" "ERR unsupported Unicode escape sequence (SQLSTATE 22P05)" "$(wcli SET w:70 '{"v":"a\u0000"}')"
check "SET whose key member is the key's text in a JSON string" "OK" "$(wcli SET w:70 '{"id":"70","v":"seventy"}')"
check "... another spelling of the key is read as the column reads it" \
    'ERR invalid input syntax for type integer: "70.0" (SQLSTATE 22P02)' "$(wcli SET w:70 '{"id":70.0}')"
check "... a null key member differs from the key" "ERR the object's key column id differs from the key (SQLSTATE 22023)" \
    "$(wcli SET w:70 '{"id":null}')"
check "SET with a member name spelled with an escape" "OK" "$(wcli SET w:70 '{"\u0076":"esc","id":70}')"
check "... names the column" '{"id":70,"v":"esc","n":null,"f":null,"at":"2024-01-01"}' "$(row 70)"
# The writes keep their statements' plans: a table dropped and created again under the same
# name, or a key column of another type, must not meet the old table's plans.
sql "CREATE TABLE wagain (id bigint PRIMARY KEY, v text);
SELECT local_cache.enable('wagain');
GRANT SELECT, INSERT, UPDATE, DELETE ON wagain TO regress_resp_writer" >/dev/null
check "SET with the key column, on a table" "OK" "$(wcli SET wagain:1 '{"id":1,"v":"a"}')"
sql "DROP TABLE wagain; CREATE TABLE wagain (id bigint PRIMARY KEY, v text);
SELECT local_cache.enable('wagain');
GRANT SELECT, INSERT, UPDATE, DELETE ON wagain TO regress_resp_writer" >/dev/null
check "... the same SET on a new table of the same name" "OK" "$(wcli SET wagain:1 '{"id":1,"v":"b"}')"
check "... SQL has it" '{"id":1,"v":"b"}' "$(sql "SELECT row_to_json(t)::text FROM wagain t")"
sql "ALTER TABLE wagain ALTER COLUMN id TYPE text" >/dev/null
check "... after ALTER TYPE of the key column (bigint to text): SET of a text key" "OK" \
    "$(wcli SET wagain:x '{"id":"x","v":"c"}')"
check "... HSET of a text key" "1" "$(wcli HSET wagain:y v d)"
check "... SQL has them" '{"id":"1","v":"b"} {"id":"x","v":"c"} {"id":"y","v":"d"}' \
    "$(sql "SELECT string_agg(row_to_json(t)::text, ' ' ORDER BY id) FROM wagain t")"
# The writes keep each table's names (quoted table, key and columns) until the table or a schema
# changes: a rename of a column, of the table, of its schema, or a move to another schema is seen
# by the next write. On one connection, so that the write before a change and the one after it
# run in the same worker.
exec {wconn}<>"/dev/tcp/127.0.0.1/$RESP_PORT"
wsend() {
    local a
    printf '*%d\r\n' $# >&"$wconn"
    for a in "$@"; do printf '$%d\r\n%s\r\n' ${#a} "$a" >&"$wconn"; done
    IFS= read -r -t 10 -u "$wconn" reply_line
    reply_line=${reply_line%$'\r'}
}
wsend AUTH regress_resp_writer "$PW_WRITER"
wsend SET wagain:x '{"v":"d"}'
sql "ALTER TABLE wagain RENAME COLUMN v TO w" >/dev/null
wsend SET wagain:x '{"w":"e"}'
check "... after RENAME COLUMN: SET names the new column" "+OK" "$reply_line"
wsend SET wagain:x '{"v":"f"}'
check "... and the old name is no column" '-ERR column "v" of table "wagain" does not exist (SQLSTATE 42703)' \
    "$reply_line"
sql "CREATE SCHEMA wsch; ALTER TABLE wagain SET SCHEMA wsch; GRANT USAGE ON SCHEMA wsch TO regress_resp_writer" >/dev/null
wsend SET wagain:z '{"w":"g"}'
check "... after SET SCHEMA: SET writes it in its new schema" "+OK" "$reply_line"
sql "ALTER SCHEMA wsch RENAME TO wsch2" >/dev/null
wsend SET wagain:z '{"w":"h"}'
check "... after its schema's RENAME" "+OK" "$reply_line"
sql "ALTER TABLE wsch2.wagain RENAME TO wagain2" >/dev/null
replies=()
for command in "SET wagain:y {\"w\":\"i\"}" "MSET wagain:y {\"w\":\"j\"} wagain:q {\"w\":\"k\"}" "HSET wagain:x w l" "DEL wagain:q"; do
    read -ra words <<<"$command"
    wsend "${words[@]}"
    replies+=("$reply_line")
done
check "... after RENAME of the table: SET, MSET, HSET, DEL" "+OK +OK :0 :1" "${replies[*]}"
exec {wconn}>&-
check "... SQL has them" '{"id":"1","w":"b"} {"id":"x","w":"l"} {"id":"y","w":"j"} {"id":"z","w":"h"}' \
    "$(sql "SELECT string_agg(row_to_json(t)::text, ' ' ORDER BY id) FROM wsch2.wagain2 t")"
sql "DROP SCHEMA wsch2 CASCADE" >/dev/null

section "errors: constraints, types, privileges, locks"
check "NOT NULL violation, with its SQLSTATE" \
    'ERR null value in column "v" of relation "wtab" violates not-null constraint (SQLSTATE 23502)' \
    "$(wcli SET w:1 '{"v":null}')"
check "a value of the wrong type" 'ERR invalid input syntax for type integer: "many" (SQLSTATE 22P02)' \
    "$(wcli SET w:1 '{"v":"x","n":"many"}')"
check "the row is unchanged after the failed writes" '{"id":1,"v":"uno","n":null,"f":null,"at":"2024-01-01"}' "$(row 1)"
check "a role without INSERT/UPDATE: NOPERM" "NOPERM permission denied for table wtab" "$(cli --raw SET w:1 '{"v":"reader"}')"
check "... and without DELETE" "NOPERM permission denied for table wtab" "$(cli --raw DEL w:1)"
# A row locked by a SQL transaction: the write waits without blocking the worker, and goes
# through once the lock is gone; held past resp_lock_timeout (1 s), it answers -BUSY.
timeout 30 "$CLUSTER_SH" psql "$DIR" -Atq -c "BEGIN" -c "SELECT 1 FROM wtab WHERE id = 3 FOR UPDATE" \
    -c "SELECT pg_sleep(0.6)" -c "COMMIT" >/dev/null 2>&1 &
locker=$!
row_locked() { [[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(0.6)'")" == 1 ]]; }
wait_for "the row lock" 10 row_locked
started=$(date +%s%N)
check "a write to a row locked for 0.6 s goes through once it is free" "OK" "$(wcli SET w:3 '{"v":"after the lock"}')"
waited=$(( ($(date +%s%N) - started) / 1000000 ))
check "... after waiting for it" "yes" "$( ((waited >= 200)) && echo yes || echo "no: $waited ms")"
wait "$locker"
timeout 30 "$CLUSTER_SH" psql "$DIR" -Atq -c "BEGIN" -c "SELECT 1 FROM wtab WHERE id = 3 FOR UPDATE" \
    -c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null 2>&1 &
locker=$!
row_locked3() { [[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(3)'")" == 1 ]]; }
wait_for "the row lock" 10 row_locked3
check_re "a write to a row locked for 3 s: -BUSY after resp_lock_timeout" '^BUSY ' "$(wcli SET w:3 '{"v":"never"}')"
check "... while the worker served others" "PONG" "$(cli PING)"
wait "$locker"
check "... and nothing was written" '{"id":3,"v":"after the lock","n":null,"f":null,"at":"2024-01-01"}' "$(row 3)"

section "MSET, DEL"
check "MSET of two rows" "OK" "$(wcli MSET w:10 '{"v":"ten"}' w:11 '{"v":"eleven"}')"
check "MSET whose second row violates a constraint writes neither" \
    'ERR null value in column "v" of relation "wtab" violates not-null constraint (SQLSTATE 23502)' \
    "$(wcli MSET w:12 '{"v":"twelve"}' w:10 '{"v":null}')"
check "... w:12 was not written, w:10 unchanged" '{"id":10,"v":"ten","n":null,"f":null,"at":"2024-01-01"}' "$(row 12)$(row 10)"
check "MSETNX with one existing key: 0, nothing written" "0" "$(wcli MSETNX w:13 '{"v":"x"}' w:10 '{"v":"y"}')"
check "MSETNX of new keys: 1" "1" "$(wcli MSETNX w:13 '{"v":"x"}' w:14 '{"v":"y"}')"
check "DEL counts the rows deleted (duplicates and missing keys count nothing)" "2" "$(wcli DEL w:13 w:13 w:14 w:999 nosuch:1)"
check "... they are gone for SQL and RESP" "0" "$(sql "SELECT count(*) FROM wtab WHERE id IN (13, 14)")$(wcli EXISTS w:13 w:14 | tr -d '\n' | sed 's/^0$//')"

sql "CREATE TABLE wtab_statements (op text);
CREATE FUNCTION wtab_statements() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO wtab_statements VALUES (TG_OP); RETURN NULL; END \$\$;
CREATE TRIGGER wtab_statements AFTER INSERT ON wtab FOR EACH STATEMENT EXECUTE FUNCTION wtab_statements();
GRANT INSERT ON wtab_statements TO regress_resp_writer" >/dev/null
check "MSET of rows naming the same columns: one statement writes them all" "OK 1" \
    "$(wcli MSET w:20 '{"v":"a"}' w:21 '{"v":"b","id":21}' w:10 '{"v":"c"}') $(sql "SELECT count(*) FROM wtab_statements")"
check "... each row as SET writes it (absent columns take their DEFAULT; w:10 existed)" \
    '{"id":20,"v":"a","n":null,"f":null,"at":"2024-01-01"}{"id":21,"v":"b","n":null,"f":null,"at":"2024-01-01"}{"id":10,"v":"c","n":null,"f":null,"at":"2024-01-01"}' \
    "$(row 20)$(row 21)$(row 10)"
sql "TRUNCATE wtab_statements" >/dev/null
check "MSET naming a key twice: a statement per row, the later value wins" "OK 3 y" \
    "$(wcli MSET w:22 '{"v":"x"}' w:23 '{"v":"z","n":1}' w:22 '{"v":"y"}') $(sql "SELECT count(*) FROM wtab_statements") $(sql "SELECT v FROM wtab WHERE id = 22")"
check "MSET whose key member is another key's: the per-row error, nothing written" \
    "ERR the object's key column id differs from the key" \
    "$(wcli MSET w:24 '{"v":"p"}' w:25 '{"v":"q","id":26}' 2>&1 | sed 's/ (SQLSTATE.*//')$(sql "SELECT count(*) FROM wtab WHERE id IN (24, 25, 26)" | sed 's/^0$//')"
sql "DROP TRIGGER wtab_statements ON wtab; DROP FUNCTION wtab_statements(); DROP TABLE wtab_statements;
DELETE FROM wtab WHERE id BETWEEN 20 AND 26" >/dev/null

section "a plain table (only PostgreSQL's own code runs): SET of existing rows is their UPDATE"
# Where no trigger or rule of the user's can tell, a SET of a row that exists runs as the UPDATE it
# amounts to, and only a missing row goes on to the upsert: the same rows, the same errors, and
# the same privileges (INSERT as well as UPDATE).
PW_UPDATER='upd-Pw-7Hq3-xyzzy'
sql "CREATE TABLE wplain (id integer PRIMARY KEY, v text NOT NULL DEFAULT 'dflt', n integer, s bigserial);
INSERT INTO wplain (id, v, n) VALUES (1, 'one', 1), (2, 'two', 2);
SELECT local_cache.enable('wplain', resp_prefix => 'wp');
CREATE ROLE regress_resp_updater LOGIN PASSWORD '$PW_UPDATER';
GRANT SELECT, INSERT, UPDATE ON wplain TO regress_resp_writer;
GRANT USAGE ON SEQUENCE wplain_s_seq TO regress_resp_writer, regress_resp_updater;
GRANT SELECT, UPDATE ON wplain TO regress_resp_updater" >/dev/null
updcli() { cli --no-auth-warning --user regress_resp_updater --pass "$PW_UPDATER" --raw "$@"; }
prow() { sql "SELECT row_to_json(t)::text FROM wplain t WHERE id = $1"; }
check "SET of an existing row: absent columns back to their DEFAULT (the serial's next value)" \
    'OK {"id":1,"v":"uno","n":null,"s":3}' "$(wcli SET wp:1 '{"v":"uno"}') $(prow 1)"
check "SET of a missing row: inserted" 'OK {"id":3,"v":"dflt","n":3,"s":4}' "$(wcli SET wp:3 '{"n":3}') $(prow 3)"
check "SET XX of a missing row: nil, nothing written" "<null>" "$(wcli SET wp:9 '{"n":9}' XX | sed 's/^$/<null>/')$(prow 9)"
check "a NOT NULL violation of an existing row, as the upsert answers it (the serial drew 5)" \
    'ERR null value in column "v" of relation "wplain" violates not-null constraint (SQLSTATE 23502)' \
    "$(wcli SET wp:1 '{"v":null}')"
check "a role with UPDATE but not INSERT: SET of an existing row refused, as the upsert refuses it" \
    "NOPERM permission denied for table wplain" "$(updcli SET wp:2 '{"v":"x"}')"
check "... MSET of existing rows likewise" "NOPERM permission denied for table wplain" \
    "$(updcli MSET wp:1 '{"v":"x"}' wp:2 '{"v":"y"}')"
check "... and the rows are unchanged" '{"id":1,"v":"uno","n":null,"s":3} {"id":2,"v":"two","n":2,"s":2}' "$(prow 1) $(prow 2)"
# (in the order the plan visits the rows, as a many-row SQL UPDATE draws them)
check "MSET of existing rows naming the same columns: each as SET writes it, a DEFAULT drawn for each" \
    'OK {"id":1,"v":"a","n":null} {"id":2,"v":"a2","n":null} 6 7' \
    "$(wcli MSET wp:1 '{"v":"a"}' wp:2 '{"v":"a2"}') $(sql "SELECT string_agg(row_to_json(x)::text, ' ' ORDER BY id) FROM (SELECT id, v, n FROM wplain WHERE id IN (1, 2)) x") $(sql "SELECT string_agg(s::text, ' ' ORDER BY s) FROM wplain WHERE id IN (1, 2)")"
check "MSET of an existing and a missing row: both written" \
    '{"id":2,"v":"b","n":null} {"id":4,"v":"c","n":null}' \
    "$(wcli MSET wp:2 '{"v":"b"}' wp:4 '{"v":"c"}' >/dev/null; sql "SELECT string_agg(row_to_json(x)::text, ' ' ORDER BY id) FROM (SELECT id, v, n FROM wplain WHERE id IN (2, 4)) x")"
check "... and GET reads the written rows" '{"id":4,"v":"c","n":null' "$(wcli GET wp:4 | cut -d, -f1-3)"
sql "DROP TABLE wplain; DROP ROLE regress_resp_updater" >/dev/null
# The members of such a SET are bound as parameters of their columns' types, made as
# json_populate_record makes them; what only it reads (null, true, an object, an array, a json
# column) goes through it.
sql "CREATE TABLE wtyped (id integer PRIMARY KEY, t text, n integer, vc varchar(3), num numeric(5,2), b boolean,
                     j jsonb, arr integer[], d date DEFAULT '2024-01-01');
INSERT INTO wtyped (id) VALUES (1), (2);
SELECT local_cache.enable('wtyped', resp_prefix => 'wt');
GRANT SELECT, INSERT, UPDATE ON wtyped TO regress_resp_writer" >/dev/null
trow() { sql "SELECT row_to_json(w)::text FROM wtyped w WHERE id = 1"; }
check "strings de-escaped, numbers as written, each read by its column's type (and typmod)" \
    'OK {"id":1,"t":"a\"bé","n":7,"vc":"abc","num":1.01,"b":null,"j":null,"arr":null,"d":"2024-02-03"}' \
    "$(wcli SET wt:1 '{"t":"a\"b\u00e9","n":"7","vc":"abc","num":1.005,"d":"2024-02-03"}') $(trow)"
check "a number into a text column, absent columns back to their DEFAULT" \
    'OK {"id":1,"t":"12.50","n":-3,"vc":null,"num":null,"b":null,"j":null,"arr":null,"d":"2024-01-01"}' \
    "$(wcli SET wt:1 '{"t":12.50,"n":-3}') $(trow)"
check "a value its column's type refuses" 'ERR invalid input syntax for type integer: "many" (SQLSTATE 22P02)' \
    "$(wcli SET wt:1 '{"t":"x","n":"many"}')"
check "a value longer than its column's typmod" 'ERR value too long for type character varying(3) (SQLSTATE 22001)' \
    "$(wcli SET wt:1 '{"vc":"abcd"}')"
check "... the row unchanged" '{"id":1,"t":"12.50","n":-3,"vc":null,"num":null,"b":null,"j":null,"arr":null,"d":"2024-01-01"}' "$(trow)"
check "null, true, an object into jsonb, an array into integer[]" \
    'OK {"id":1,"t":"x","n":null,"vc":null,"num":null,"b":true,"j":{"k": [1, 2]},"arr":[1,2],"d":"2024-01-01"}' \
    "$(wcli SET wt:1 '{"t":"x","b":true,"j":{"k":[1,2]},"arr":[1,2],"n":null}') $(trow)"
check "a member named twice: as json_populate_record reads it" \
    "OK $(sql "SELECT (json_populate_record(NULL::wtyped, '{\"t\":\"first\",\"t\":\"second\"}')).t")" \
    "$(wcli SET wt:1 '{"t":"first","t":"second"}') $(sql "SELECT t FROM wtyped WHERE id = 1")"
check "a null member" 'OK {"id":1,"t":null,"n":1,"vc":null,"num":null,"b":null,"j":null,"arr":null,"d":"2024-01-01"}' \
    "$(wcli SET wt:1 '{"t":null,"n":1}') $(trow)"
trows() { sql "SELECT string_agg(row_to_json(w)::text, ' ' ORDER BY id) FROM wtyped w WHERE id IN (1, 2)"; }
check "MSET of existing rows: the members bound as arrays of their columns' types" \
    'OK {"id":1,"t":"m1","n":5,"vc":null,"num":2.35,"b":null,"j":null,"arr":null,"d":"2024-01-01"} {"id":2,"t":null,"n":6,"vc":null,"num":0.50,"b":null,"j":null,"arr":null,"d":"2024-01-01"}' \
    "$(wcli MSET wt:1 '{"t":"m1","n":"5","num":2.345}' wt:2 '{"t":null,"n":6,"num":"0.5"}') $(trows)"
check "MSET whose second row has a value its column refuses: the error, nothing written" \
    'ERR invalid input syntax for type integer: "x" (SQLSTATE 22P02) {"id":1,"t":"m1","n":5,"vc":null,"num":2.35,"b":null,"j":null,"arr":null,"d":"2024-01-01"} {"id":2,"t":null,"n":6,"vc":null,"num":0.50,"b":null,"j":null,"arr":null,"d":"2024-01-01"}' \
    "$(wcli MSET wt:1 '{"t":"a","n":1,"num":1}' wt:2 '{"t":"b","n":"x","num":1}') $(trows)"
# Each write statement keeps one generic plan: the plan cache's own choice planned an MSET of
# fewer rows than its estimate of an array's length (10) again at every run.
sql "ALTER ROLE regress_resp_writer SET log_planner_stats = on" >/dev/null
plans_log_start=$(log_size)
# (on one connection, so in one worker: each worker keeps its own plans)
msets=""
for n in 1 2 3 4 5 6 7 8; do msets+=$(cmd MSET wt:1 "{\"n\":$n}" wt:2 "{\"n\":$n}"); done
raw "$AUTH_WRITER" "send:$msets" read:9 >/dev/null
sql "ALTER ROLE regress_resp_writer RESET log_planner_stats" >/dev/null
# (once more if an invalidation of the table, autovacuum's ANALYZE, came in between)
plannings=$(log_since "$plans_log_start" | grep -c 'PLANNER STATISTICS')
check "eight MSETs of two rows: their statement planned once, not at every run" "at most twice, 8 8" \
    "$( ((plannings <= 2)) && echo "at most twice" || echo "$plannings times"), $(sql "SELECT string_agg(n::text, ' ' ORDER BY id) FROM wtyped WHERE id IN (1, 2)")"
sql "DROP TABLE wtyped" >/dev/null

section "Writes the worker runs itself share commits (the write group)"
# The rows a commit wrote share its timestamp (track_commit_timestamp, set by lib.sh).
sql "CREATE TABLE wgroup (id integer PRIMARY KEY, n integer);
INSERT INTO wgroup SELECT g, 0 FROM generate_series(1, 40) g;
SELECT local_cache.enable('wgroup', resp_prefix => 'wgr');
GRANT SELECT, INSERT, UPDATE ON wgroup TO regress_resp_writer" >/dev/null
group_commits() { sql "SELECT count(DISTINCT pg_xact_commit_timestamp(xmin)) FROM wgroup WHERE id BETWEEN $1 AND $2"; }
sets=""
for n in $(seq 1 40); do sets+=$(cmd SET "wgr:$n" "{\"n\":$n}"); done
raw "$AUTH_WRITER" "send:$sets" skip:41 >/dev/null
check "40 SETs pipelined on one connection: in at most 4 commits (32 writes each), not 40" "40 written, at most 4 commits" \
    "$(sql "SELECT count(*) FROM wgroup WHERE n = id") written, $(c=$(group_commits 1 40); ((c <= 4)) && echo "at most 4 commits" || echo "$c commits")"
raw_case "an error fails its own write only; a read after writes sees them" \
    '+OK\r\n+OK\r\n-ERR invalid input syntax for type integer: "x" (SQLSTATE 22P02)\r\n+OK\r\n$15\r\n{"id":1,"n":-1}\r\n' \
    "$AUTH_WRITER" "send:$(cmd SET wgr:1 '{"n":-1}')$(cmd SET wgr:2 '{"n":"x"}')$(cmd SET wgr:3 '{"n":-3}')$(cmd GET wgr:1)" read:5
check "... the writes beside it committed, together; the failed one left its row" "-1 2 -3, 1 commit" \
    "$(sql "SELECT string_agg(n::text, ' ' ORDER BY id) FROM wgroup WHERE id <= 3"), $(sql "SELECT count(DISTINCT pg_xact_commit_timestamp(xmin)) FROM wgroup WHERE id IN (1, 3)") commit"
# CLIENT TRACKING's NOLOOP knows one writer per commit: a tracking connection's writes commit alone.
raw "$AUTH_WRITER" "send:$(cmd CLIENT TRACKING ON)$(cmd SET wgr:4 '{"n":-4}')$(cmd SET wgr:5 '{"n":-5}')" skip:4 >/dev/null
check "two SETs pipelined by a connection with CLIENT TRACKING on: two commits" "-4 -5, 2 commits" \
    "$(sql "SELECT string_agg(n::text, ' ' ORDER BY id) FROM wgroup WHERE id IN (4, 5)"), $(group_commits 4 5) commits"
# A shared commit that fails closes the connections whose replies waited for it: their clients
# must not take the writes for committed. local_cache.debug_throw_at = 'capture_commit' makes
# the pre-commit of every transaction that wrote a cached table fail.
set_setting local_cache.debug_throw_at capture_commit
set_fails() { raw "$AUTH_WRITER" skip:1 "send:$(cmd SET wgr:9 '{"n":-9}')" read:1 | grep -q '<EOF>'; }
wait_for "the workers to fail commits" 10 set_fails
sleep 0.2 # (the other worker reloads at the same signal)
failed_log_start=$(log_size)
# (GET makes the commit, mid-pipeline)
raw_case "a pipeline whose shared commit fails: the connection is closed, no reply sent" '+OK\r\n<EOF>' \
    "$AUTH_WRITER" read:1 "send:$(cmd SET wgr:7 '{"n":-7}')$(cmd SET wgr:8 '{"n":-8}')$(cmd GET wgr:7)" read:3
check "... nothing written, and the log tells why" "7 8, logged" \
    "$(sql "SELECT string_agg(n::text, ' ' ORDER BY id) FROM wgroup WHERE id IN (7, 8)"), $(log_since "$failed_log_start" | grep -q 'the commit of 2 writes of role .* failed' && echo logged)"
# (EXEC's transaction, in a write worker, fails at its commit the same way)
raw_case "EXEC whose commit fails: EXECABORT, nothing written" \
    '+OK\r\n+QUEUED\r\n-EXECABORT Transaction rolled back: local_cache: exception thrown at capture_commit (local_cache.debug_throw_at)\r\n' \
    "$AUTH_WRITER" "send:$(cmd MULTI)$(cmd SET wgr:7 '{"n":-7}')$(cmd EXEC)" skip:1 read:3
set_setting local_cache.debug_throw_at DEFAULT
set_succeeds() { [[ "$(raw "$AUTH_WRITER" skip:1 "send:$(cmd SET wgr:9 '{"n":9}')" read:1)" == '+OK\r\n' ]]; }
wait_for "the workers to commit again" 10 set_succeeds
sql "DROP TABLE wgroup" >/dev/null
# A table with a trigger of the user's keeps the upsert, in the write worker that runs its writes:
# SET of an existing row fires its BEFORE INSERT trigger for the proposed row, as the SQL upsert does.
sql "CREATE TABLE wtrig (id integer PRIMARY KEY, v text);
CREATE TABLE wtrig_log (op text);
CREATE FUNCTION wtrig_log() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO wtrig_log VALUES (TG_WHEN || ' ' || TG_OP); RETURN NEW; END \$\$;
CREATE TRIGGER wtrig_log BEFORE INSERT OR UPDATE ON wtrig FOR EACH ROW EXECUTE FUNCTION wtrig_log();
INSERT INTO wtrig VALUES (1, 'one');
TRUNCATE wtrig_log;
SELECT local_cache.enable('wtrig', resp_prefix => 'wg');
GRANT SELECT, INSERT, UPDATE ON wtrig TO regress_resp_writer;
GRANT INSERT ON wtrig_log TO regress_resp_writer" >/dev/null
check "a table with a user's trigger: SET of an existing row is the upsert (BEFORE INSERT, then BEFORE UPDATE)" \
    "OK BEFORE INSERT,BEFORE UPDATE uno" \
    "$(wcli SET wg:1 '{"v":"uno"}') $(sql "SELECT string_agg(op, ',' ORDER BY ctid) FROM wtrig_log") $(sql "SELECT v FROM wtrig WHERE id = 1")"
sql "DROP TABLE wtrig, wtrig_log; DROP FUNCTION wtrig_log()" >/dev/null
sql "CREATE TABLE widentity (id integer PRIMARY KEY, g integer GENERATED ALWAYS AS IDENTITY, v text);
INSERT INTO widentity (id, v) VALUES (1, 'one');
SELECT local_cache.enable('widentity', resp_prefix => 'wi');
GRANT SELECT, INSERT, UPDATE ON widentity TO regress_resp_writer" >/dev/null
check "a column GENERATED ALWAYS AS IDENTITY: SET of an existing row answers as the upsert does" \
    'ERR column "g" can only be updated to DEFAULT (SQLSTATE 428C9) one' "$(wcli SET wi:1 '{"v":"uno"}') $(sql "SELECT v FROM widentity WHERE id = 1")"
sql "DROP TABLE widentity" >/dev/null

section "HSET, HDEL, HINCRBY"
check "HSET of an existing row: 0 new fields" "0" "$(wcli HSET w:10 v diez n 7)"
check "... the columns from their text" '{"id":10,"v":"diez","n":7,"f":null,"at":"2024-01-01"}' "$(row 10)"
sql "CREATE TABLE wacct (id integer PRIMARY KEY, ver bigint NOT NULL, note text);
INSERT INTO wacct VALUES (1, 5, 'a');
SELECT local_cache.enable('wacct');
GRANT SELECT, INSERT, UPDATE ON wacct TO regress_resp_writer" >/dev/null
check "HSET of an existing row whose other NOT NULL column has no default: updated as UPDATE would" \
    '0 {"id":1,"ver":5,"note":"b"}' "$(wcli HSET wacct:1 note b) $(sql "SELECT row_to_json(a)::text FROM wacct a")"
check "HSET of a missing row without that column: refused as its INSERT is" \
    'ERR null value in column "ver" of relation "wacct" violates not-null constraint (SQLSTATE 23502)' "$(wcli HSET wacct:2 note c)"
sql "DROP TABLE wacct" >/dev/null
check "HSET of a missing row inserts it: 2 new fields" "2" "$(wcli HSET w:20 v twenty at 2025-02-03)"
check "... the other columns at their DEFAULT" '{"id":20,"v":"twenty","n":null,"f":null,"at":"2025-02-03"}' "$(row 20)"
check "HSET of the key column" 'ERR column "id" is the key: it is set by the key itself (SQLSTATE 42P10)' "$(wcli HSET w:20 id 21)"
check "HSET of a date that does not parse" 'ERR invalid input syntax for type date: "soon" (SQLSTATE 22007)' "$(wcli HSET w:20 at soon)"
check "HDEL sets NULL: counts the non-NULL ones" "1" "$(wcli HDEL w:10 n f nosuch)"
check "HDEL of a NOT NULL column" 'ERR null value in column "v" of relation "wtab" violates not-null constraint (SQLSTATE 23502)' "$(wcli HDEL w:10 v)"
check "HINCRBY of a NULL column starts from 0" "5" "$(wcli HINCRBY w:10 n 5)"
check "HINCRBY adds" "3" "$(wcli HINCRBY w:10 n -2)"
check "HINCRBY of a missing row inserts it" "4" "$(wcli HINCRBY w:21 n 4)"
check "HINCRBYFLOAT" "2.75" "$(wcli HINCRBYFLOAT w:1 f 2.75)"
check "HINCRBY of a text column" 'ERR column "v" is not a number column (SQLSTATE 42804)' "$(wcli HINCRBY w:1 v 1)"

section "MULTI / EXEC / WATCH with writes"
raw_case "MULTI of a SET and a GET: the GET sees the SET, both commit" \
    '+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n$58\r\n{"id":30,"v":"thirty","n":null,"f":null,"at":"2024-01-01"}\r\n' \
    "$AUTH_WRITER" "send:MULTI\\r\\n$(cmd SET w:30 '{"v":"thirty"}')GET w:30\\r\\nEXEC\\r\\n" read:5
raw_case "MULTI whose second write fails: rolled back whole, EXECABORT with the error" \
    '+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n-EXECABORT Transaction rolled back: ERR null value in column "v" of relation "wtab" violates not-null constraint (SQLSTATE 23502)\r\n' \
    "$AUTH_WRITER" "send:MULTI\\r\\n$(cmd SET w:31 '{"v":"x"}')$(cmd HDEL w:30 v)EXEC\\r\\n" read:5
check "... w:31 was not written" "" "$(row 31)"
wopen() { exec {wconn}<>"/dev/tcp/127.0.0.1/$RESP_PORT"; }
wsend() { printf '%s' "$1" >&"$wconn"; }
wread() { local line; IFS= read -r -t 10 -u "$wconn" line; printf '%s' "${line%$'\r'}"; }
wopen
wsend "AUTH regress_resp_writer $PW_WRITER"$'\r\n'"WATCH w:30"$'\r\n'; wread >/dev/null; wread >/dev/null
sql "UPDATE wtab SET n = 99 WHERE id = 30" >/dev/null
wsend $'MULTI\r\n*3\r\n$3\r\nSET\r\n$4\r\nw:30\r\n$15\r\n{"v":"watched"}\r\nEXEC\r\n'; wread >/dev/null; wread >/dev/null
check "WATCH, the row changed by SQL, MULTI ... EXEC: nil, nothing written" "*-1" "$(wread)"
check "... the row keeps SQL's write" "99" "$(sql "SELECT n FROM wtab WHERE id = 30")"
wsend $'WATCH w:30\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$4\r\nw:30\r\n$15\r\n{"v":"watched"}\r\nEXEC\r\n'; wread >/dev/null; wread >/dev/null; wread >/dev/null
check "WATCH, no change, MULTI ... EXEC: written" "*1" "$(wread)"
exec {wconn}>&-
check "... the row is the new one" "watched" "$(sql "SELECT v FROM wtab WHERE id = 30")"

raw_case "WATCH by a role with SELECT only guards a MULTI of reads (no lock needed)" \
    "+OK\\r\\n+OK\\r\\n+QUEUED\\r\\n*1\\r\\n:1\\r\\n" 'send:WATCH w:30\r\nMULTI\r\nEXISTS w:30\r\nEXEC\r\n' read:4

section "another spelling of an integer key: reads miss it, writes are refused naming the key"
# A row has one name, the one SCAN, KEYS and the CLIENT TRACKING pushes give it (w:1); a write
# under another would change the row behind what a client caches under the name it used.
# noncanonical KEY CANONICAL: the error every write to KEY answers
noncanonical() { printf 'ERR key "%s" is not in canonical form; the row'"'"'s key is "%s" (SQLSTATE 22023)' "$1" "$2"; }
sql "DELETE FROM wtab_audit" >/dev/null
w1=$(row 1)
raw_case "GET, MGET, EXISTS, HGET, STRLEN, TYPE of w:01, w:+1, w: 1, w:-0: as missing keys" \
    '$-1\r\n*4\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n:0\r\n$-1\r\n:0\r\n+none\r\n' \
    "send:$(cmd GET w:01)$(cmd MGET w:+1 'w: 1' w:-0 w:01)$(cmd EXISTS w:01 w:+1 'w: 1')$(cmd HGET w:+1 v)$(cmd STRLEN w:01)$(cmd TYPE 'w:1 ')" read:6
check "SET w:01" "$(noncanonical w:01 w:1)" "$(wcli SET w:01 '{"v":"leading zero"}')"
check "SET w:+1 NX" "$(noncanonical w:+1 w:1)" "$(wcli SET w:+1 '{"v":"plus"}' NX)"
check "SET 'w: 1' GET" "$(noncanonical 'w: 1' w:1)" "$(wcli SET 'w: 1' '{"v":"blank"}' GET)"
check "SETNX w:-0 (the row w:0)" "$(noncanonical w:-0 w:0)" "$(wcli SETNX w:-0 '{"v":"minus zero"}')"
check "GETSET w:0001" "$(noncanonical w:0001 w:1)" "$(wcli GETSET w:0001 '{"v":"getset"}')"
check "MSET with one such key: nothing written" "$(noncanonical 'w:+40' w:40)" "$(wcli MSET w:41 '{"v":"41"}' 'w:+40' '{"v":"40"}')"
check "MSETNX with one such key" "$(noncanonical 'w:042' w:42)" "$(wcli MSETNX w:43 '{"v":"43"}' 'w:042' '{"v":"42"}')"
check "HSET w:01" "$(noncanonical w:01 w:1)" "$(wcli HSET w:01 v hset)"
check "HDEL w:01" "$(noncanonical w:01 w:1)" "$(wcli HDEL w:01 n)"
check "HINCRBY w:01" "$(noncanonical w:01 w:1)" "$(wcli HINCRBY w:01 n 1)"
check "HINCRBYFLOAT w:01" "$(noncanonical w:01 w:1)" "$(wcli HINCRBYFLOAT w:01 f 1.5)"
check "DEL of w:1 and w:01: refused as a whole, w:1 not deleted" "$(noncanonical w:01 w:1)" "$(wcli DEL w:1 w:01)"
check "DEL of a text that spells no key of the table: counts nothing, as a missing key" "0" "$(wcli DEL w:x w:1.0 w:2147483648)"
raw_case "MULTI with a write to w:01: EXECABORT with the error, the other write rolled back" \
    "+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n-EXECABORT Transaction rolled back: $(noncanonical w:01 w:1)\r\n" \
    "$AUTH_WRITER" "send:MULTI\r\n$(cmd SET w:44 '{"v":"44"}')$(cmd HSET w:01 v multi)EXEC\r\n" read:5
check "... nothing was written: w:1 as it was, no new row, no trigger fired" "$w1||0" \
    "$(row 1)|$(sql "SELECT string_agg(id::text, ',') FROM wtab WHERE id IN (0, 40, 41, 42, 43, 44)")|$(sql "SELECT count(*) FROM wtab_audit")"
check "the canonical spelling writes" "OK" "$(wcli SET w:1 '{"v":"canonical"}')"
wopen
wsend "AUTH regress_resp_writer $PW_WRITER"$'\r\n'"WATCH w:01"$'\r\n'; wread >/dev/null; wread >/dev/null
sql "UPDATE wtab SET n = 7 WHERE id = 1" >/dev/null
wsend $'MULTI\r\n*4\r\n$4\r\nHSET\r\n$3\r\nw:1\r\n$1\r\nv\r\n$7\r\nwatched\r\nEXEC\r\n'; wread >/dev/null; wread >/dev/null
check "WATCH w:01 watches a missing key (reads take it so): w:1 changed by SQL, EXEC still runs" "*1" "$(wread)"
wread >/dev/null
exec {wconn}>&-
check "... the row is the new one" "watched|7" "$(sql "SELECT v || '|' || n FROM wtab WHERE id = 1")"
unset -f noncanonical

sql "DROP TABLE wtab_audit; DROP TABLE wtab; DROP FUNCTION wtab_audit(); DROP ROLE regress_resp_writer" >/dev/null
