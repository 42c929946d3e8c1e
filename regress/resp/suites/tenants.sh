# regress/resp/suites/tenants.sh: roles sharing the RESP server. One role's table owner writes
# hostile triggers; other roles' commands must neither run her code nor see anything she left
# in the worker, and every RESP write must end exactly as the same SQL write would.
#   leftovers    a trigger's set_config(..., false) of search_path (with look-alike functions
#                in her schema), default_transaction_read_only, TimeZone, DateStyle, every
#                user-settable setting it can change, a session advisory lock, a temporary
#                table: none outlives the command that fired it
#   equivalence  HSET, SET and HINCRBYFLOAT against SQL's INSERT/UPDATE of the same literal,
#                type family by type family (typmods, numeric scale, bit strings, dates and
#                times, arrays, enums, domains with CHECK, json/jsonb, bytea): the same stored
#                bytes, or the same SQLSTATE
#   encoding     text that is not valid in the server encoding (values, JSON, keys, field
#                names, increments, NUL) is refused with SQLSTATE 22021, nothing written
#   write workers  a role's slow trigger holds neither other connections' reads nor another
#                role's write; the connection's own next request waits behind it, in order; a
#                write that runs only PostgreSQL's own code (no user trigger, default, check,
#                type or foreign key) and whose commit flushes nothing to disk runs in the RESP
#                worker itself
#   settings     ALTER ROLE / ALTER DATABASE ... SET (default_transaction_read_only, search_path,
#                statement_timeout, synchronous_commit at the commit) and postgresql.conf's statement_timeout apply to a role's
#                RESP writes, for that command only
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh tenants). Creates and
# drops its own roles (regress_resp_mallory, regress_resp_victim), schema and tables.

PW_MALLORY='mal-Pw-6Tn3-xyzzy'
PW_VICTIM='vic-Pw-1Ls7-plugh'
sql "CREATE ROLE regress_resp_mallory LOGIN PASSWORD '$PW_MALLORY';
CREATE ROLE regress_resp_victim LOGIN PASSWORD '$PW_VICTIM';
CREATE SCHEMA mallory AUTHORIZATION regress_resp_mallory;
GRANT USAGE ON SCHEMA mallory TO PUBLIC;
SET ROLE regress_resp_mallory;
CREATE TABLE mallory.calls (role name);
GRANT INSERT ON mallory.calls TO PUBLIC;
-- look-alikes of what the RESP writes call, in her schema: they note who ran them
CREATE FUNCTION mallory.json_typeof(json) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO mallory.calls VALUES (current_user); RETURN pg_catalog.json_typeof(\$1); END \$\$;
CREATE FUNCTION mallory.json_populate_record(anyelement, json) RETURNS anyelement LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO mallory.calls VALUES (current_user); RETURN pg_catalog.json_populate_record(\$1, \$2); END \$\$;
CREATE FUNCTION mallory.row_to_json(record) RETURNS json LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO mallory.calls VALUES (current_user); RETURN pg_catalog.row_to_json(\$1); END \$\$;
CREATE FUNCTION mallory.int4eq_noted(integer, integer) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO mallory.calls VALUES (current_user); RETURN \$1 OPERATOR(pg_catalog.=) \$2; END \$\$;
CREATE OPERATOR mallory.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = mallory.int4eq_noted);
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA mallory TO PUBLIC;

-- her first table: its trigger points the worker's search_path at her schema and takes a
-- session advisory lock
CREATE TABLE mallory.path (id integer PRIMARY KEY, v text, must integer NOT NULL DEFAULT 0);
CREATE FUNCTION mallory.path_trigger() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'mallory, pg_catalog', false);
    PERFORM pg_catalog.pg_advisory_lock(424242);
    RETURN NEW;
END \$\$;
CREATE TRIGGER path_trigger BEFORE INSERT OR UPDATE ON mallory.path FOR EACH ROW EXECUTE FUNCTION mallory.path_trigger();
SELECT local_cache.enable('mallory.path', resp_prefix => 'mpath');

-- her second table: its trigger changes every setting a role can change
CREATE TABLE mallory.settings (id integer PRIMARY KEY, v text);
CREATE FUNCTION mallory.settings_trigger() RETURNS trigger LANGUAGE plpgsql AS \$\$
DECLARE
    s record;
    other text;
BEGIN
    PERFORM set_config('search_path', 'mallory, pg_catalog', false);
    PERFORM set_config('default_transaction_read_only', 'on', false);
    PERFORM set_config('TimeZone', 'Asia/Kathmandu', false);
    PERFORM set_config('DateStyle', 'SQL, DMY', false);
    PERFORM set_config('IntervalStyle', 'sql_standard', false);
    PERFORM set_config('extra_float_digits', '-15', false);
    PERFORM set_config('bytea_output', 'escape', false);
    PERFORM set_config('statement_timeout', '1', false);
    FOR s IN SELECT name, vartype, setting, min_val, max_val, enumvals FROM pg_settings
             WHERE context = 'user' AND name NOT LIKE 'transaction%' AND name NOT IN
                   ('search_path', 'default_transaction_read_only', 'TimeZone', 'DateStyle',
                    'IntervalStyle', 'extra_float_digits', 'bytea_output', 'statement_timeout')
    LOOP
        other := CASE s.vartype
            WHEN 'bool' THEN CASE s.setting WHEN 'on' THEN 'off' ELSE 'on' END
            WHEN 'enum' THEN (SELECT e FROM unnest(s.enumvals) e WHERE e <> s.setting ORDER BY e DESC LIMIT 1)
            WHEN 'integer' THEN CASE WHEN s.setting = s.max_val THEN s.min_val ELSE s.max_val END
            WHEN 'real' THEN CASE WHEN s.setting = s.max_val THEN s.min_val ELSE s.max_val END
        END;
        CONTINUE WHEN other IS NULL;
        BEGIN
            PERFORM set_config(s.name, other, false);
        EXCEPTION WHEN OTHERS THEN NULL;
        END;
    END LOOP;
    RETURN NEW;
END \$\$;
CREATE TRIGGER settings_trigger BEFORE INSERT OR UPDATE ON mallory.settings FOR EACH ROW EXECUTE FUNCTION mallory.settings_trigger();
SELECT local_cache.enable('mallory.settings', resp_prefix => 'mset');
RESET ROLE;

-- the victim's table: values whose text depends on the session's settings
CREATE TABLE victim_t (id integer PRIMARY KEY, ts timestamptz, d date, iv interval, f float8,
                       r real, b bytea, n numeric, v text);
SELECT local_cache.enable('victim_t', resp_prefix => 'vt');
GRANT SELECT, INSERT, UPDATE, DELETE ON victim_t TO regress_resp_victim;
GRANT SELECT ON victim_t TO regress_resp_reader;
GRANT SELECT, INSERT, UPDATE, DELETE ON mallory.path, mallory.settings TO regress_resp_victim" >/dev/null

mcli() { cli --no-auth-warning --user regress_resp_mallory --pass "$PW_MALLORY" --raw "$@"; }
vcli() { cli --no-auth-warning --user regress_resp_victim --pass "$PW_VICTIM" --raw "$@"; }

# victim_session: what the victim's reads and writes answer, from an empty table; every
# command goes to every worker (connections are spread over them)
victim_session() {
    local round
    sql "DELETE FROM victim_t" >/dev/null
    for round in 1 2 3 4; do
        vcli SET "vt:$round" '{"ts":"2024-03-10 06:30:00.5+00","d":"2024-02-29","iv":"1 day 02:03:04.5","f":0.1,"r":1.5,"b":"\\x00ff","n":1.25,"v":"x"}'
        vcli GET "vt:$round"
        vcli HSET "vt:$round" ts '2024-01-01 00:00:00+00' iv '1 mon -2 days' b '\x01' f '2.5e-7'
        vcli HGETALL "vt:$round"
        vcli HINCRBYFLOAT "vt:$round" f 0.2
        vcli MGET "vt:$round" "mpath:$((round + 100))"
        cli --raw GET "vt:$round"
        vcli DEL "vt:$round"
    done
}

section "leftovers: nothing one role's trigger sets reaches another role's commands"
BEFORE=$(victim_session)
check "the victim's session works before anything happened" "" \
    "$(grep -E '^(ERR|NOPERM)' <<<"$BEFORE" | head -n 3)"
for i in 1 2 3 4; do mcli SET "mpath:$i" '{"v":"trap"}' >/dev/null; done
check "a trigger that changes search_path: the table owner's writes went through" "4" \
    "$(sql "SELECT count(*) FROM mallory.path")"
check "... and the advisory lock it took went with her command" "t" \
    "$(sql "SELECT pg_try_advisory_lock(424242)")"
check "... as it goes when her write fails after her trigger ran" "t" \
    "$(mcli SET mpath:9 '{"must":null}' >/dev/null; sql "SELECT pg_try_advisory_lock(424242)")"
for i in 1 2 3 4; do vcli SET "mpath:$((i + 10))" '{"v":"victim"}' >/dev/null; done
check "another role's SET on that table runs none of her look-alike functions or operators" \
    "" "$(sql "SELECT string_agg(DISTINCT role::text, ',') FROM mallory.calls")"
check "... nor do its other writes and reads" "" \
    "$(for i in 1 2 3 4; do vcli HSET "mpath:$((i + 10))" v h >/dev/null; vcli HINCRBYFLOAT "vt:$i" f 1 >/dev/null
       vcli DEL "mpath:$((i + 10))" >/dev/null; vcli GET "mpath:$i" >/dev/null; done
       sql "SELECT string_agg(DISTINCT role::text, ',') FROM mallory.calls")"
for i in 1 2 3 4; do mcli SET "mset:$i" '{"v":"trap"}' >/dev/null; done
check "a trigger that changes every user setting: the table owner's write itself went through" "4" \
    "$(sql "SELECT count(*) FROM mallory.settings")"
AFTER=$(victim_session)
check "... another role's reads and writes answer exactly as before" "$BEFORE" "$AFTER"
check "a trigger cannot create what would outlive the command (temporary tables)" \
    "NOPERM cannot create temporary table within security-restricted operation" \
    "$(sql "SET ROLE regress_resp_mallory;
CREATE OR REPLACE FUNCTION mallory.path_trigger() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN CREATE TEMP TABLE IF NOT EXISTS left_behind (x int); RETURN NEW; END \$\$" >/dev/null
       mcli SET mpath:1 '{"v":"temp"}')"

section "equivalence: a RESP write ends exactly as the same SQL write"
# Two tables of the same definition: eq_sql written by SQL, eq_resp by RESP (prefix eq).
sql "CREATE TYPE eq_mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN eq_even AS integer CHECK (VALUE % 2 = 0);
CREATE TABLE eq_sql (id integer PRIMARY KEY, c3 character(3), vc3 varchar(3), n52 numeric(5,2),
    n numeric, b3 bit(3), vb3 bit varying(3), i2 smallint, i4 integer, f4 real, f8 float8,
    ts timestamp(0), tstz timestamptz(2), d date, t time(1), iv interval(0), ivym interval year to month,
    ia integer[], ca character(2)[], mood eq_mood, ev eq_even, js json, jb jsonb, ba bytea,
    bo boolean, u uuid, tx text);
CREATE TABLE eq_resp (LIKE eq_sql INCLUDING ALL);
SELECT local_cache.enable('eq_resp', resp_prefix => 'eq');
GRANT SELECT, INSERT, UPDATE ON eq_sql, eq_resp TO regress_resp_victim;
INSERT INTO eq_sql (id) SELECT g FROM generate_series(1, 200) g;
INSERT INTO eq_resp (id) SELECT g FROM generate_series(1, 200) g;
-- the SQL write: an UPDATE of the column to a quoted literal, as an application writes it;
-- 'OK' or the SQLSTATE
CREATE FUNCTION eq_sql_write(k integer, col text, val text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN
    EXECUTE format('UPDATE eq_sql SET %I = %L WHERE id = %s', col, val, k);
    RETURN 'OK';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE;
END \$\$;
CREATE FUNCTION eq_sql_add(k integer, col text, val text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN
    EXECUTE format('UPDATE eq_sql SET %1\$I = COALESCE(%1\$I, 0) + %2\$L WHERE id = %3\$s', col, val, k);
    RETURN 'OK';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE;
END \$\$" >/dev/null

# outcome REPLY: OK for a write that succeeded, else the SQLSTATE of its error
outcome() {
    if [[ "$1" =~ \(SQLSTATE\ ([0-9A-Z]{5})\)$ ]]; then echo "${BASH_REMATCH[1]}"
    elif [[ "$1" =~ ^(ERR|NOPERM) ]]; then echo "unexpected: $1"
    else echo OK; fi
}
stored() { sql "SELECT coalesce($2::text, '<null>') FROM $1 WHERE id = $3"; }
EQ_ID=0
# equal NAME SQL-OUTCOME RESP-REPLY COLUMN: the outcomes agree and so do the stored values
equal() {
    local want=$2 got
    got=$(outcome "$3")
    check "$1" "$want $(stored eq_sql "$4" "$EQ_ID")" "$got $(stored eq_resp "$4" "$EQ_ID")"
}
# hset_case COLUMN VALUE: HSET against UPDATE ... SET column = 'value'
hset_case() {
    EQ_ID=$((EQ_ID + 1))
    equal "HSET $1 '$2'" "$(sql "SELECT eq_sql_write($EQ_ID, '$1', \$lc\$$2\$lc\$)")" \
        "$(vcli HSET "eq:$EQ_ID" "$1" "$2")" "$1"
}
# set_case COLUMN VALUE: SET of {"column": "value"} against the same UPDATE (a json or jsonb
# column's member is the JSON itself: {"column": value})
set_case() {
    local object
    EQ_ID=$((EQ_ID + 1))
    object=$(python3 -c 'import json, sys; print(json.dumps({sys.argv[1]: sys.argv[2]}))' "$1" "$2")
    [[ "$1" == js || "$1" == jb ]] && object="{\"$1\": $2}"
    equal "SET $object" "$(sql "SELECT eq_sql_write($EQ_ID, '$1', \$lc\$$2\$lc\$)")" \
        "$(vcli SET "eq:$EQ_ID" "$object")" "$1"
}
# add_case COLUMN START INCREMENT: HINCRBYFLOAT against UPDATE ... SET column = column + 'increment'
add_case() {
    EQ_ID=$((EQ_ID + 1))
    sql "UPDATE eq_sql SET $1 = '$2' WHERE id = $EQ_ID; UPDATE eq_resp SET $1 = '$2' WHERE id = $EQ_ID" >/dev/null
    equal "HINCRBYFLOAT $1 ($2) by $3" "$(sql "SELECT eq_sql_add($EQ_ID, '$1', '$3')")" \
        "$(vcli HINCRBYFLOAT "eq:$EQ_ID" "$1" "$3")" "$1"
}
while IFS='|' read -r column value; do
    [[ -z "$column" || "$column" == \#* ]] && continue
    hset_case "$column" "$value"
    set_case "$column" "$value"
done <<'CASES'
# character types with typmods: blanks pad and may be cut, anything else must fit
c3|ab
c3|abc
c3|abc  
c3|  abc
c3|abcd
c3|a
vc3|abcd
vc3|abc
vc3|
# numeric with and without scale: rounding, overflow
n52|1.005
n52|-1.005
n52|999.995
n52|1234.5
n52|1e2
n52|NaN
n|0.1000
n|-0
# bit strings
b3|101
b3|10
b3|1010
b3|1x1
vb3|1
vb3|1111
# integers and floats
i2|32767
i2|32768
i2| 42
i4|4.5
f4|3.4028236e38
f4|1e-46
f8|0.1
f8|1e400
f8|-0
# dates, times, intervals
ts|2024-03-10 06:30:00.7
ts|epoch
ts|2024-02-30 00:00
tstz|2024-03-10 06:30:00.555+05:30
tstz|infinity
d|2024-02-29
d|29/02/2024
t|12:34:56.78
iv|1 day 02:03:04.6
iv|P1Y2M3DT4H
ivym|1 year 2 months 3 days
# arrays, enums, domains
ia|{1,2,NULL}
ia|{1,two}
ca|{ab,c}
ca|{abc}
mood|happy
mood|ecstatic
ev|4
ev|5
# json, jsonb, bytea, boolean, uuid, text
js|{"a" : [1, 2.50]}
js|{"a":
jb|{"b": 1, "a": [true, null]}
ba|\x00ff10
ba|\xzz
bo|yes
bo|maybe
u|A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11
u|not-a-uuid
tx|plain text
CASES
add_case n52 1.00 0.005
add_case n52 999.99 0.01
add_case i2 32767 1
add_case f4 1.5 0.25
add_case n 1 1e-20
add_case n52 -500.00 1000
add_case i4 7 2.5

section "encoding: text the server encoding does not allow is refused, nothing written"
BAD_UTF8="ERR invalid byte sequence for encoding \"UTF8\": 0xc3 0x28 (SQLSTATE 22021)"
check "HSET of a value with an invalid sequence" "$BAD_UTF8" "$(vcli HSET eq:1 tx $'a\xc3\x28b')"
check "SET of JSON with an invalid sequence in a string" "$BAD_UTF8" \
    "$(vcli SET eq:1 $'{"tx": "a\xc3\x28b"}')"
check "SET of JSON with a byte that is never UTF-8" \
    "ERR invalid byte sequence for encoding \"UTF8\": 0xff (SQLSTATE 22021)" "$(vcli SET eq:1 $'{"tx": "\xff"}')"
check "HSET of a field name with an invalid sequence" "$BAD_UTF8" "$(vcli HSET eq:1 $'t\xc3\x28x' v)"
check "HINCRBYFLOAT with an invalid increment: no number (Redis's own check)" "ERR value is not a valid float" \
    "$(vcli HINCRBYFLOAT eq:1 f8 $'1\xc3\x28')"
check "HINCRBYFLOAT with a field name with an invalid sequence" "$BAD_UTF8" "$(vcli HINCRBYFLOAT eq:1 $'f\xc3\x28' 1)"
check "a key with an invalid sequence" "$BAD_UTF8" "$(vcli HSET $'eq:1\xc3\x28' tx v)"
check "DEL of a key with an invalid sequence" "$BAD_UTF8" "$(vcli DEL eq:1 $'eq:2\xc3\x28')"
raw_case "a NUL byte in a value" \
    '+OK\r\n-ERR invalid byte sequence for encoding "UTF8": 0x00 (SQLSTATE 22021)\r\n' \
    "send:AUTH regress_resp_victim $PW_VICTIM\\r\\n" "send:*4\\r\\n\$4\\r\\nHSET\\r\\n\$4\\r\\neq:1\\r\\n\$2\\r\\ntx\\r\\n\$3\\r\\na\\x00b\\r\\n" read:2
check "none of them wrote anything" "<null> <null>" "$(stored eq_resp tx 1) $(stored eq_resp f8 1)"
check "valid UTF-8 beyond ASCII is written as it came" "0 é日本😀" \
    "$(vcli HSET eq:1 tx 'é日本😀') $(stored eq_resp tx 1)"

section "settings: a RESP write runs as a new session of its role in the database would"
# ALTER ROLE / ALTER DATABASE ... SET and postgresql.conf's statement_timeout apply to the role's
# RESP writes and its triggers, inside the command only: the next command, of any role, starts
# without them.
sql "CREATE TABLE session_t (id integer PRIMARY KEY, v text, seen text);
CREATE FUNCTION session_t_seen() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    IF NEW.v = 'slow' THEN PERFORM pg_sleep(3); END IF;
    NEW.seen := current_setting('search_path') || ' / ' || current_setting('statement_timeout');
    RETURN NEW;
END \$\$;
CREATE TRIGGER session_t_seen BEFORE INSERT OR UPDATE ON session_t FOR EACH ROW EXECUTE FUNCTION session_t_seen();
SELECT local_cache.enable('session_t', resp_prefix => 'st');
GRANT SELECT, INSERT, UPDATE ON session_t TO regress_resp_victim, regress_resp_mallory" >/dev/null
seen() { sql "SELECT coalesce(seen, '<none>') FROM session_t WHERE id = $1 UNION ALL SELECT '<no row>' LIMIT 1"; }
sql "ALTER ROLE regress_resp_victim SET default_transaction_read_only = on" >/dev/null
check "ALTER ROLE ... SET default_transaction_read_only = on: the role's RESP SET is refused" \
    "ERR cannot execute INSERT in a read-only transaction (SQLSTATE 25006)" "$(vcli SET st:1 '{"v":"a"}')"
check "... and writes nothing" "<no row>" "$(seen 1)"
check "... while another role's SET commits, with the server's settings" 'OK "$user", public / 0' \
    "$(mcli SET st:2 '{"v":"b"}') $(seen 2)"
sql "ALTER ROLE regress_resp_victim RESET default_transaction_read_only;
ALTER DATABASE postgres SET default_transaction_read_only = on" >/dev/null
check "ALTER DATABASE ... SET default_transaction_read_only = on: RESP SET refused" \
    "ERR cannot execute INSERT in a read-only transaction (SQLSTATE 25006)" "$(mcli SET st:3 '{"v":"c"}')"
sql_in template1 "ALTER DATABASE postgres RESET default_transaction_read_only" >/dev/null
sql "ALTER ROLE regress_resp_victim SET search_path = mallory, public;
ALTER ROLE regress_resp_victim IN DATABASE postgres SET statement_timeout = '250ms'" >/dev/null
check "the role's search_path and its statement_timeout in this database reach its triggers" \
    "OK mallory, public / 250ms" "$(vcli SET st:4 '{"v":"d"}') $(seen 4)"
check "... and are gone for the next command of another role" 'OK "$user", public / 0' \
    "$(mcli SET st:5 '{"v":"e"}') $(seen 5)"
check "a trigger slower than the role's statement_timeout: canceled as PostgreSQL cancels it" \
    "ERR canceling statement due to statement timeout (SQLSTATE 57014)" "$(vcli SET st:6 '{"v":"slow"}')"
check "... nothing written, and the role's next write works" "<no row> OK" "$(seen 6) $(vcli SET st:6 '{"v":"f"}')"
sql "ALTER ROLE regress_resp_victim RESET ALL; ALTER ROLE regress_resp_victim IN DATABASE postgres RESET ALL" >/dev/null
# The commit reads synchronous_commit after the command's settings are rolled back: the role's
# own value must still hold there. With a synchronous standby named that never connects, a commit
# under the server's synchronous_commit = on (the throwaway cluster's is off) would wait for it
# forever.
sql "ALTER ROLE regress_resp_victim SET synchronous_commit = local" >/dev/null
set_setting synchronous_commit on
set_setting synchronous_standby_names nobody
sleep 1 # every process has taken the reload
check "the role's synchronous_commit = local holds at its RESP write's commit (no wait for the synchronous standby)" \
    "OK" "$(timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --no-auth-warning --user regress_resp_victim --pass "$PW_VICTIM" --raw SET st:8 '{"v":"g"}' 2>&1)"
set_setting synchronous_standby_names DEFAULT
set_setting synchronous_commit DEFAULT
sql "ALTER ROLE regress_resp_victim RESET ALL" >/dev/null
set_setting statement_timeout 300ms
server_timeout() { [[ "$(mcli SET st:7 '{"v":"slow"}')" == *"(SQLSTATE 57014)" ]]; }
wait_case "postgresql.conf's statement_timeout applies to RESP writes" "ERR canceling statement ... (SQLSTATE 57014)" 15 \
    server_timeout "mcli SET st:7 {\"v\":\"slow\"}"
set_setting statement_timeout DEFAULT
sql "DROP TABLE session_t; DROP FUNCTION session_t_seen()" >/dev/null

section "write workers: one role's slow trigger holds no other connection"
# A RESP write runs in a write worker (local_cache.resp_write_workers, 2 here), never on the loop
# of the RESP worker that serves the connection: while mallory's trigger sleeps, reads on other
# connections (on both RESP workers) and another role's write are answered, and her own
# connection's next request waits behind her write, answered in order.
sql "CREATE TABLE stall_t (id integer PRIMARY KEY, v text);
CREATE FUNCTION stall_t_slow() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN IF NEW.v = 'slow' THEN PERFORM pg_sleep(3); END IF; RETURN NEW; END \$\$;
CREATE TRIGGER stall_t_slow BEFORE INSERT OR UPDATE ON stall_t FOR EACH ROW EXECUTE FUNCTION stall_t_slow();
INSERT INTO stall_t VALUES (2, 'two');
SELECT local_cache.enable('stall_t', resp_prefix => 'stall');
GRANT SELECT, INSERT, UPDATE ON stall_t TO regress_resp_victim, regress_resp_mallory;
GRANT SELECT ON stall_t TO regress_resp_reader" >/dev/null
slow_out=$WORK/stall_slow.out
: >"$slow_out"
raw timeout:20 "send:AUTH regress_resp_mallory $PW_MALLORY\r\n$(cmd SET stall:1 '{"v":"slow"}')$(cmd GET stall:1)" read:3 \
    >"$slow_out" &
slow=$!
sleeping() { [[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")" == 1 ]]; }
wait_for "mallory's write sleeping in its trigger" 10 sleeping
reads=""
for i in $(seq 1 8); do reads+="$(cli GET stall:2) "; done
check "while it sleeps: GET on eight new connections (both workers) is answered" \
    "$(for i in $(seq 1 8); do printf '%s ' '"{\"id\":2,\"v\":\"two\"}"'; done)" "$reads"
check "... and another role's write commits" "OK" "$(vcli SET stall:3 '{"v":"fast"}')"
check "... all before mallory's write has answered" "not yet" \
    "$([[ "$(cat "$slow_out")" == *'+OK\r\n+OK'* ]] && echo answered || echo 'not yet')"
wait "$slow"
check "her write then answers, and her GET behind it sees the row it wrote" \
    "+OK\r\n+OK\r\n$(bulk '{"id":1,"v":"slow"}')" "$(cat "$slow_out")"
sql "DROP TABLE stall_t; DROP FUNCTION stall_t_slow()" >/dev/null

section "write workers: a write that runs only PostgreSQL's own code stays on the loop"
# The hop to a write worker costs more CPU than such a write: a table whose triggers are the
# cache's and whose defaults, checks and types are built in is written by the RESP worker itself
# (its default pg_backend_pid() names the process); a user's trigger, default or check, or a
# foreign key, sends the write to a write worker. One key of such a table in MSET sends it all.
sql "CREATE TABLE where_t (id integer PRIMARY KEY, v text CHECK (length(v) < 100), at timestamptz DEFAULT now(),
                      pid integer DEFAULT pg_backend_pid());
SELECT local_cache.enable('where_t', resp_prefix => 'where');
CREATE FUNCTION where_user_default() RETURNS text LANGUAGE sql AS 'SELECT ''d''';
CREATE TABLE where_u (id integer PRIMARY KEY, v text DEFAULT where_user_default(), pid integer DEFAULT pg_backend_pid());
SELECT local_cache.enable('where_u', resp_prefix => 'whereu');
CREATE TABLE where_parent (id integer PRIMARY KEY);
INSERT INTO where_parent VALUES (1);
CREATE TABLE where_fk (id integer PRIMARY KEY REFERENCES where_parent, pid integer DEFAULT pg_backend_pid());
SELECT local_cache.enable('where_fk', resp_prefix => 'wherefk');
GRANT SELECT, INSERT, UPDATE ON where_t, where_u, where_fk TO regress_resp_victim;
GRANT SELECT ON where_parent TO regress_resp_victim;
GRANT EXECUTE ON FUNCTION where_user_default() TO regress_resp_victim" >/dev/null
ran_in() {
    sql "SELECT b.backend_type FROM $1 t JOIN pg_stat_activity b ON b.pid = t.pid WHERE t.id = $2"
}
check "a plain table's SET" "OK" "$(vcli SET where:1 '{"v":"one"}')"
check "... ran in the RESP worker" "local_cache RESP worker" "$(ran_in where_t 1)"
check "... its CHECK enforced" 'ERR new row for relation "where_t" violates check constraint "where_t_v_check" (SQLSTATE 23514)' \
    "$(vcli SET where:2 "{\"v\":\"$(printf 'x%.0s' $(seq 1 120))\"}")"
check "a table with a user's default: in a write worker" "OK local_cache RESP write worker" \
    "$(vcli SET whereu:1 '{}') $(ran_in where_u 1)"
check "a table with a foreign key (its triggers): in a write worker" "OK local_cache RESP write worker" \
    "$(vcli SET wherefk:1 '{}') $(ran_in where_fk 1)"
check "MSET of both kinds: in a write worker" "OK local_cache RESP write worker local_cache RESP write worker" \
    "$(vcli MSET where:3 '{}' whereu:3 '{}') $(ran_in where_t 3) $(ran_in where_u 3)"
# A commit that flushes WAL to disk (fsync and synchronous_commit on, the server's defaults;
# the throwaway cluster runs with both off) would hold the loop for the flush: in a write worker.
set_setting fsync on
set_setting synchronous_commit on
sleep 1 # every process has taken the reload
check "with fsync and synchronous_commit on: in a write worker" "OK local_cache RESP write worker" \
    "$(vcli SET where:5 '{}') $(ran_in where_t 5)"
set_setting fsync DEFAULT
set_setting synchronous_commit DEFAULT
sleep 1
check "... off again: in the RESP worker" "OK local_cache RESP worker" "$(vcli SET where:6 '{}') $(ran_in where_t 6)"
sql "CREATE FUNCTION where_t_seen() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN RETURN NEW; END \$\$;
CREATE TRIGGER where_t_seen BEFORE INSERT ON where_t FOR EACH ROW EXECUTE FUNCTION where_t_seen()" >/dev/null
check "a trigger created later sends the plain table's writes to a write worker" "OK local_cache RESP write worker" \
    "$(vcli SET where:4 '{}') $(ran_in where_t 4)"
sql "DROP TABLE where_fk, where_parent, where_t, where_u; DROP FUNCTION where_t_seen, where_user_default" >/dev/null

sql "DROP TABLE victim_t, eq_sql, eq_resp; DROP FUNCTION eq_sql_write, eq_sql_add;
DROP DOMAIN eq_even; DROP TYPE eq_mood; DROP SCHEMA mallory CASCADE;
DROP OWNED BY regress_resp_mallory, regress_resp_victim;
DROP ROLE regress_resp_mallory, regress_resp_victim" >/dev/null
