# regress/resp/suites/sharing.sh: what one role sees of another on a RESP server they share.
#   CLIENT LIST  another role's connections are listed only to members of pg_read_all_stats and
#                of that role (pg_stat_activity's rule); the others' lines are left out
#   DBSIZE       and INFO keyspace count only the keys SCAN finds: schema USAGE, SELECT, no RLS
#   WATCH        needs SELECT only: WATCH what you read, write elsewhere; a commit to the
#                watched row before EXEC, or while EXEC runs, still makes EXEC answer nil
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh sharing). Creates and
# drops its own roles (regress_share_*), schema (regress_share_hidden) and tables (prices,
# orders).

PW_SHARE='shr-Pw-6Tn3-frobozz'
sql "CREATE ROLE regress_share_a LOGIN PASSWORD '$PW_SHARE';
CREATE ROLE regress_share_b LOGIN PASSWORD '$PW_SHARE';
CREATE ROLE regress_share_stats LOGIN PASSWORD '$PW_SHARE' IN ROLE pg_read_all_stats;
CREATE ROLE regress_share_boss LOGIN PASSWORD '$PW_SHARE' IN ROLE regress_share_a" >/dev/null
share_auth() { printf 'send:AUTH %s %s\\r\\n' "$1" "$PW_SHARE"; }

section "CLIENT LIST: another role's connections only to pg_read_all_stats and the role's members"
open_held
a_fd=${HELD[-1]}
send_held "$a_fd" "AUTH regress_share_a $PW_SHARE"$'\r\nCLIENT SETNAME share-a-conn\r\n'
IFS= read -r -t 10 -u "$a_fd" line
IFS= read -r -t 10 -u "$a_fd" line
# CLIENT LIST shows the connections of the worker serving it: one connection that switches
# roles with AUTH asks as each role, retried until it lands on the held connection's worker
# (the pg_read_all_stats member sees it there).
listings=""
for i in $(seq 1 40); do
    listings=$(raw "$(share_auth regress_share_stats)" 'send:CLIENT LIST\r\n' \
        "$(share_auth regress_share_b)" 'send:CLIENT LIST\r\n' \
        "$(share_auth regress_share_boss)" 'send:CLIENT LIST\r\n' \
        "$(share_auth regress_share_a)" 'send:CLIENT LIST\r\n' read:8)
    [[ "$listings" =~ ^\+OK[^+]*name=share-a-conn ]] && break
done
# the four listings, one per line
listed_as() { sed 's/+OK\\r\\n/\n/g' <<<"$listings" | sed -n "$(($1 + 1))p"; }
check_re "a member of pg_read_all_stats sees the other role's connection" \
    'name=share-a-conn .*user=regress_share_a ' "$(listed_as 1)"
check "another role does not see it" "" "$(listed_as 2 | grep -o 'share-a-conn\|user=regress_share_a ')"
check_re "... but sees its own connection" 'cmd=client\|list user=regress_share_b ' "$(listed_as 2)"
check_re "a member of the role sees it" 'name=share-a-conn .*user=regress_share_a ' "$(listed_as 3)"
check_re "the role itself sees it" 'name=share-a-conn .*user=regress_share_a ' "$(listed_as 4)"
check "CLIENT LIST ID of a hidden connection: nothing" \
    '+OK\r\n$0\r\n\r\n' \
    "$(raw "$(share_auth regress_share_b)" \
        "send:CLIENT LIST ID $(sed -n 's/.*id=\([0-9]*\) [^\\]*name=share-a-conn .*/\1/p' <<<"$(listed_as 1)")\\r\\n" read:2)"
close_held

section "DBSIZE and INFO keyspace: the keys the role may read, as SCAN finds them"
sql "CREATE SCHEMA regress_share_hidden;
CREATE TABLE regress_share_hidden.h (id bigint PRIMARY KEY, v text);
INSERT INTO regress_share_hidden.h SELECT g, 'h' || g FROM generate_series(1, 3) g;
SELECT local_cache.enable('regress_share_hidden.h', resp_prefix => 'shh');
GRANT SELECT ON regress_share_hidden.h TO regress_share_b" >/dev/null
# (a transaction of its own: one that has written the table reads around the cache)
sql "SELECT local_cache.mget('regress_share_hidden.h', '{1,2,3}'::bigint[])" >/dev/null
check "the three rows are cached" "3" \
    "$(sql "SELECT entries FROM local_cache.stats WHERE relation = 'regress_share_hidden.h'::regclass")"
raw_case "SELECT on a cached table without USAGE on its schema: DBSIZE 0, no keyspace line, SCAN finds nothing" \
    '+OK\r\n:0\r\n$12\r\n# Keyspace\r\n\r\n*2\r\n$1\r\n0\r\n*0\r\n' \
    "$(share_auth regress_share_b)" 'send:DBSIZE\r\nINFO keyspace\r\nSCAN 0 COUNT 1000\r\n' read:4
sql "GRANT USAGE ON SCHEMA regress_share_hidden TO regress_share_b" >/dev/null
raw_case "with USAGE: the three cached keys" \
    '+OK\r\n:3\r\n$44\r\n# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0\r\n\r\n' \
    "$(share_auth regress_share_b)" 'send:DBSIZE\r\nINFO keyspace\r\n' read:3
sql "ALTER TABLE regress_share_hidden.h ENABLE ROW LEVEL SECURITY; CREATE POLICY all_rows ON regress_share_hidden.h USING (true)" >/dev/null
raw_case "row-level security: not counted (never served)" '+OK\r\n:0\r\n' \
    "$(share_auth regress_share_b)" 'send:DBSIZE\r\n' read:2
sql "DROP SCHEMA regress_share_hidden CASCADE" >/dev/null

section "WATCH with SELECT only on the watched table"
sql "CREATE TABLE prices (id integer PRIMARY KEY, amount numeric NOT NULL);
INSERT INTO prices VALUES (3, 10);
SELECT local_cache.enable('prices');
CREATE TABLE orders (id integer PRIMARY KEY, price numeric, note text);
SELECT local_cache.enable('orders');
GRANT SELECT ON prices TO regress_share_a;
GRANT SELECT, INSERT, UPDATE ON orders TO regress_share_a;
CREATE EXTENSION dblink;
-- An order noted 'race' commits a change to prices:3 from another session while EXEC runs:
-- after EXEC's snapshot and its first version check, before its commit.
CREATE FUNCTION orders_race() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = public, pg_catalog AS \$\$
BEGIN
    IF NEW.note = 'race' THEN
        PERFORM dblink_exec('host=$DIR/sock port=$(cat "$DIR/port") dbname=postgres',
                            'UPDATE prices SET amount = amount + 1 WHERE id = 3');
    END IF;
    RETURN NEW;
END \$\$;
CREATE TRIGGER orders_race BEFORE INSERT ON orders FOR EACH ROW EXECUTE FUNCTION orders_race()" >/dev/null
order_of() { sql "SELECT coalesce((SELECT price::text || ' ' || note FROM orders WHERE id = $1), 'none')"; }
A_AUTH="send:AUTH regress_share_a $PW_SHARE\\r\\n"
raw_case "WATCH prices:3 (SELECT only), GET it, MULTI, SET orders:1, EXEC: committed" \
    '+OK\r\n+OK\r\n$20\r\n{"id":3,"amount":10}\r\n+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n' \
    "$A_AUTH" "send:WATCH prices:3\\r\\nGET prices:3\\r\\nMULTI\\r\\n$(cmd SET orders:1 '{"price":10,"note":"first"}')EXEC\\r\\n" read:6
check "... the order is written" "10 first" "$(order_of 1)"
exec {aconn}<>"/dev/tcp/127.0.0.1/$RESP_PORT"
asend() { printf '%s' "$1" >&"$aconn"; }
# asend_multi ARG...: MULTI, the request ARG... (as cmd builds it), EXEC
asend_multi() { asend $'MULTI\r\n'; printf '%b' "$(cmd "$@")" >&"$aconn"; asend $'EXEC\r\n'; }
aread() { local line; IFS= read -r -t 10 -u "$aconn" line; printf '%s' "${line%$'\r'}"; }
asend "AUTH regress_share_a $PW_SHARE"$'\r\nWATCH prices:3\r\n'; aread >/dev/null; aread >/dev/null
sql "UPDATE prices SET amount = 11 WHERE id = 3" >/dev/null
asend_multi SET orders:2 '{"price":10,"note":"stale"}'
aread >/dev/null; aread >/dev/null
check "a commit to the watched row between WATCH and EXEC: EXEC answers nil" "*-1" "$(aread)"
check "... nothing written" "none" "$(order_of 2)"
asend $'WATCH prices:3\r\n'
asend_multi SET orders:3 '{"price":11,"note":"race"}'
aread >/dev/null; aread >/dev/null; aread >/dev/null
check "a commit to the watched row while EXEC runs (after its snapshot): EXEC answers nil" "*-1" "$(aread)"
check "... nothing written, the other session's change is there" "none 12" \
    "$(order_of 3) $(sql "SELECT amount FROM prices WHERE id = 3")"
asend $'WATCH prices:3\r\n'
asend_multi SET orders:4 '{"price":12,"note":"calm"}'
aread >/dev/null; aread >/dev/null; aread >/dev/null
check "no change: EXEC commits" "*1" "$(aread)"
exec {aconn}>&-
check "... the order is written" "12 calm" "$(order_of 4)"

sql "DROP TABLE orders; DROP TABLE prices; DROP FUNCTION orders_race(); DROP EXTENSION dblink;
     DROP ROLE regress_share_boss; DROP ROLE regress_share_stats; DROP ROLE regress_share_b; DROP ROLE regress_share_a" >/dev/null
