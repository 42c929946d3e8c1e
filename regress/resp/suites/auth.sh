# regress/resp/suites/auth.sh: who may read what.
#   privileges  SELECT (table, columns, through a role membership) and schema USAGE are checked
#               on every request, also on open connections; NOPERM otherwise
#   RLS         tables with row-level security are never served
#   AUTH        resp_role, AUTH [user] password (SCRAM, md5), HELLO AUTH, NOAUTH without a role,
#               the limits on unauthenticated requests, roles losing LOGIN or changing password,
#               the database's CONNECT, ALLOW_CONNECTIONS and connection limits (both ways)
#   secrecy     no password ever appears in the server log; the launcher warns about exposure
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh auth). Puts back
# local_cache.resp_role, regress_resp_reader's grants and regress_resp_user's password (the
# later suites log in with it); leaves regress_resp_noperm with SELECT on items (id) and on typed.

section "NOPERM: privileges checked on every request"
raw_case "role without SELECT: NOPERM on MGET, GET, HGET, HGETALL, EXISTS" \
    '+OK\r\n-NOPERM permission denied for table items\r\n-NOPERM permission denied for table items\r\n-NOPERM permission denied for table items\r\n-NOPERM permission denied for table items\r\n-NOPERM permission denied for table items\r\n' \
    "send:AUTH regress_resp_noperm $PW_NOPERM\\r\\nMGET items:1 items:2\\r\\nGET items:1\\r\\nHGET items:1 value\\r\\nHGETALL items:1\\r\\nEXISTS items:1\\r\\n" read:6
raw_case "a role without SELECT: unknown keys are still nil, connection usable" \
    '+OK\r\n*2\r\n$-1\r\n$-1\r\n+PONG\r\n' \
    "send:AUTH regress_resp_noperm $PW_NOPERM\\r\\nMGET nope:1 nope:01\\r\\nPING\\r\\n" read:3
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
# Protected mode, in the spirit of Redis: the launcher warns when clients that never AUTH act as
# a superuser (and, not tested here, when it listens beyond loopback with a resp_role).
check "loopback and an ordinary resp_role: no exposure warning" "0" \
    "$(grep -c 'serves clients that do not AUTH\|is a superuser: RESP clients' "$LOG")"
log_before=$(log_size)
set_setting local_cache.resp_role "$(sql 'SELECT current_user')"
warned_superuser() { [[ "$(log_since "$log_before")" =~ resp_role\ \"[a-z_]+\"\ is\ a\ superuser ]]; }
wait_case "resp_role a superuser: the launcher warns at reload" "a WARNING" 10 warned_superuser "log_since $log_before"
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

# pg_hba.conf and CONNECTION LIMIT apply as they do to a PostgreSQL login
hba_lines=("host all regress_resp_md5 127.0.0.1/32 reject" "host all all 127.0.0.1/32 md5" "host all all ::1/128 md5")
"$CLUSTER_SH" hba "$DIR" "${hba_lines[@]}"
hba_rejects() { [[ "$(raw "send:AUTH regress_resp_md5 $PW_MD5\r\n" read:1)" == -ERR* ]]; }
for i in 1 2 3 4 5 6; do wait_for "pg_hba.conf reloaded" 10 hba_rejects || break; done
raw_case "pg_hba.conf rejects the role from this address: AUTH refused, whatever the password" \
    '-ERR pg_hba.conf rejects connection for host "127.0.0.1", user "regress_resp_md5", database "postgres", no encryption\r\n' \
    "send:AUTH regress_resp_md5 $PW_MD5\r\n" read:1
raw_case "other roles still log in" "+OK\r\n" "send:AUTH regress_resp_user ${PW_USER}-new\r\n" read:1
"$CLUSTER_SH" hba "$DIR" "host all all 127.0.0.1/32 ldap ldapserver=127.0.0.1 ldapprefix=x ldapsuffix=y" "host all all ::1/128 md5"
hba_ldap() { [[ "$(raw "send:AUTH regress_resp_md5 $PW_MD5\r\n" read:1)" == *ldap* ]]; }
for i in 1 2 3 4 5 6; do wait_for "pg_hba.conf reloaded" 10 hba_ldap || break; done
check_re "a method the RESP server cannot use is refused with a clear error" \
    '^-ERR authentication method "ldap" \(pg_hba.conf line [0-9]+\) is not supported by the RESP server\\r\\n$' \
    "$(raw "send:AUTH regress_resp_md5 $PW_MD5\r\n" read:1)"
"$CLUSTER_SH" hba "$DIR" "host all all 127.0.0.1/32 md5" "host all all ::1/128 md5"
hba_back() { [[ "$(raw "send:AUTH regress_resp_md5 $PW_MD5\r\n" read:1)" == '+OK\r\n' ]]; }
for i in 1 2 3 4 5 6; do wait_for "pg_hba.conf back" 10 hba_back || break; done
# A remembered login counts for the method it passed: an md5-stored password that logged in
# through an md5 line does not pass a scram-sha-256 line, which refuses it as it refuses psql.
# Each worker remembers its own logins: ten logins reach both (the kernel spreads connections).
md5_login() { raw "send:AUTH regress_resp_md5 $PW_MD5\r\n" read:1; }
for i in $(seq 1 10); do md5_login >/dev/null; done
"$CLUSTER_SH" hba "$DIR" "host all regress_resp_nologin 127.0.0.1/32 reject" \
    "host all all 127.0.0.1/32 scram-sha-256" "host all all ::1/128 scram-sha-256"
nologin_rejected() { [[ "$(raw "send:AUTH regress_resp_nologin x\r\n" read:1)" == "-ERR pg_hba.conf rejects"* ]]; }
for i in 1 2 3 4 5 6; do wait_for "pg_hba.conf with scram-sha-256 lines" 10 nologin_rejected || break; done
check "after logins through an md5 line, a scram-sha-256 line refuses the md5-stored password (ten times)" \
    "$(for i in $(seq 1 10); do printf '%s' "$wp"; done)" "$(for i in $(seq 1 10); do printf '%s' "$(md5_login)"; done)"
"$CLUSTER_SH" hba "$DIR" "host all all 127.0.0.1/32 md5" "host all all ::1/128 md5"
for i in 1 2 3 4 5 6; do wait_for "pg_hba.conf back" 10 hba_back || break; done
sql "ALTER ROLE regress_resp_user CONNECTION LIMIT 0" >/dev/null
raw_case "CONNECTION LIMIT 0: AUTH refused" '-ERR too many connections for role "regress_resp_user"\r\n' \
    "send:AUTH regress_resp_user ${PW_USER}-new\r\n" read:1
sql "ALTER ROLE regress_resp_user CONNECTION LIMIT 1" >/dev/null
exec {held}<>"/dev/tcp/127.0.0.1/$RESP_PORT"
printf 'AUTH regress_resp_user %s-new\r\n' "$PW_USER" >&"$held"
IFS= read -r -t 10 -u "$held" line
check "CONNECTION LIMIT 1: a first RESP session logs in" $'+OK\r' "$line"
raw_case "CONNECTION LIMIT 1: a second is refused while the first is open" \
    '-ERR too many connections for role "regress_resp_user"\r\n' "send:AUTH regress_resp_user ${PW_USER}-new\r\n" read:1
exec {held}>&-
second_logs_in() { [[ "$(raw "send:AUTH regress_resp_user ${PW_USER}-new\r\n" read:1)" == '+OK\r\n' ]]; }
wait_case "CONNECTION LIMIT 1: once the first session closed, another logs in" '+OK' 10 second_logs_in \
    "raw send:AUTH\ regress_resp_user\ ${PW_USER}-new\\r\\n read:1"
sql "ALTER ROLE regress_resp_user CONNECTION LIMIT -1" >/dev/null

# The database's rules apply to a RESP login as InitPostgres applies them to a backend's: the
# CONNECT privilege, ALLOW_CONNECTIONS and the database's CONNECTION LIMIT; RESP sessions and
# PostgreSQL backends count together against both limits, whichever way the login comes.
login_user() { raw "send:AUTH regress_resp_user ${PW_USER}-new\r\n" read:1; }
psql_user() { timeout 20 "$PGBIN/psql" -X -h "$DIR/sock" -p "$(<"$DIR/port")" -U regress_resp_user -d postgres -Atq -c "$1" 2>&1; }
sql "REVOKE CONNECT ON DATABASE postgres FROM PUBLIC" >/dev/null
check_re "REVOKE CONNECT ON DATABASE: psql is refused" 'permission denied for database "postgres"' "$(psql_user 'SELECT 1')"
check "... and so is AUTH, in the same words" '-ERR permission denied for database "postgres"\r\n' "$(login_user)"
sql "GRANT CONNECT ON DATABASE postgres TO regress_resp_user" >/dev/null
check "GRANT CONNECT to the role: AUTH logs in again" '+OK\r\n' "$(login_user)"
sql "GRANT CONNECT ON DATABASE postgres TO PUBLIC" >/dev/null
sql_in template1 "ALTER DATABASE postgres ALLOW_CONNECTIONS false" >/dev/null
check "ALLOW_CONNECTIONS false: AUTH refused" '-ERR database "postgres" is not currently accepting connections\r\n' "$(login_user)"
sql_in template1 "ALTER DATABASE postgres ALLOW_CONNECTIONS true" >/dev/null
sql "ALTER DATABASE postgres CONNECTION LIMIT 0" >/dev/null
check "the database's CONNECTION LIMIT 0: AUTH refused" '-ERR too many connections for database "postgres"\r\n' "$(login_user)"
sql "ALTER DATABASE postgres CONNECTION LIMIT 1" >/dev/null
# Watched from template1: a backend in postgres, even a superuser's that has just answered,
# takes the one slot.
backends_in_postgres() { sql_in template1 "SELECT count(*) FROM pg_stat_activity WHERE datname = 'postgres' AND backend_type = 'client backend'"; }
postgres_empty() { [[ "$(backends_in_postgres)" == 0 ]]; }
backend_open() { [[ "$(backends_in_postgres)" == 1 ]]; }
wait_for "no backend in database postgres" 10 postgres_empty
exec {held}<>"/dev/tcp/127.0.0.1/$RESP_PORT"
printf 'AUTH regress_resp_user %s-new\r\n' "$PW_USER" >&"$held"
IFS= read -r -t 10 -u "$held" line
check "the database's CONNECTION LIMIT 1: a RESP session logs in" $'+OK\r' "$line"
check_re "... and a PostgreSQL login of another role finds the database full" \
    'too many connections for database "postgres"' "$(psql_user 'SELECT 1')"
exec {held}>&-
sql "ALTER DATABASE postgres CONNECTION LIMIT -1; ALTER ROLE regress_resp_user CONNECTION LIMIT 1" >/dev/null
exec {held}<>"/dev/tcp/127.0.0.1/$RESP_PORT"
printf 'AUTH regress_resp_user %s-new\r\n' "$PW_USER" >&"$held"
IFS= read -r -t 10 -u "$held" line
check "the role's CONNECTION LIMIT 1: a RESP session logs in" $'+OK\r' "$line"
check_re "... and the role's PostgreSQL login is refused while it is open" \
    'too many connections for role "regress_resp_user"' "$(psql_user 'SELECT 1')"
exec {held}>&-
psql_select_1() { psql_user 'SELECT 1'; }
backend_gone() { [[ "$(psql_select_1)" == 1 ]]; }
wait_case "... and accepted once the RESP session closed" 1 10 backend_gone psql_select_1
sql "ALTER ROLE regress_resp_user CONNECTION LIMIT -1; ALTER DATABASE postgres CONNECTION LIMIT 1" >/dev/null
wait_for "no backend in database postgres" 10 postgres_empty
psql_user "SELECT pg_sleep(5)" >/dev/null &
sleeper=$!
wait_for "the role's psql session" 10 backend_open
check "the database's CONNECTION LIMIT 1 taken by a backend: AUTH refused" \
    '-ERR too many connections for database "postgres"\r\n' "$(login_user)"
wait "$sleeper"
sql "ALTER DATABASE postgres CONNECTION LIMIT -1" >/dev/null

# Password checks run off the event loop: a connection pipelining wrong passwords neither stalls
# the others (a PING on another connection is answered while its replies still trickle in,
# slowed by the back-off after each failure) nor goes faster than the back-off allows.
flood_out=$WORK/auth_flood.out
start=$(date +%s%N)
( raw timeout:30 "send:$(for i in $(seq 1 6); do printf 'AUTH regress_resp_user %s\\r\\n' "$PW_WRONG"; done)" read:6 >"$flood_out"; date +%s%N >"$flood_out.end" ) &
flood=$!
sleep 0.2
check "another connection is answered while a connection's wrong passwords are checked" "$na" "$(raw 'send:PING\r\n' read:1)"
check "... before the flood's replies are all there" "" "$(cat "$flood_out.end" 2>/dev/null)"
wait "$flood"
check "six wrong passwords pipelined: six refusals" "$(for i in $(seq 1 6); do printf '%s' "$wp"; done)" "$(cat "$flood_out")"
elapsed_ms=$(( ($(cat "$flood_out.end") - start) / 1000000 ))
check "... answered no faster than the back-off (50+100+200+400+800 ms)" "at least 1550 ms" \
    "$( ((elapsed_ms >= 1550)) && echo "at least 1550 ms" || echo "$elapsed_ms ms")"

# The back-off is per client address and user name: 60 failed logins of one name from this
# address (clients behind one NAT, proxy or application host share it) make that name wait
# 2 s there, and leave another user's valid AUTH from the same address unslowed.
failing=()
for i in $(seq 1 60); do raw "send:AUTH regress_resp_nobody $PW_WRONG\r\n" read:1 >/dev/null & failing+=($!); done
wait "${failing[@]}"
start=$(date +%s%N)
check "after 60 failed logins of another name from this address, a valid AUTH logs in" '+OK\r\n' \
    "$(raw "send:AUTH regress_resp_user ${PW_USER}-new\r\n" read:1)"
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "... without that name's back-off (answered within 1 s, where the failing name waits 2 s)" "within 1 s" \
    "$( ((elapsed_ms < 1000)) && echo "within 1 s" || echo "$elapsed_ms ms")"

# back to resp_role
set_setting local_cache.resp_role DEFAULT
authed() { [[ "$(raw 'send:EXISTS items:1\r\n' read:1)" == ':1\r\n' ]]; }
for i in 1 2 3 4 5 6; do wait_for "resp_role reset" 10 authed || break; done
raw_case "resp_role back: unauthenticated clients act as it" ':1\r\n' 'send:EXISTS items:1\r\n' read:1
sql "ALTER ROLE regress_resp_user PASSWORD '$PW_USER'" >/dev/null

check "no password appears in the server log" "" "$(passwords_leaked)"
