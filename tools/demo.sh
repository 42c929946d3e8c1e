#!/usr/bin/env bash
# tools/demo.sh: owns the README's first command, a guided tour of local_cache: installs the
# dependencies, builds and installs the extension, starts a throwaway cluster and shows the
# read paths, the statistics and invalidation.
#
#   tools/demo.sh                     as root, or as a normal user with sudo
#   DEMO_DIR=/tmp/x DEMO_PORT=5433 RESP_PORT=6380 tools/demo.sh
#
# The cluster stays up afterwards; the script prints how to connect and how to remove it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

DEMO_DIR=${DEMO_DIR:-/tmp/local_cache_demo}
DEMO_PORT=${DEMO_PORT:-5499}
PG_CONFIG=${PG_CONFIG:-pg_config}

step() { printf '\n==> %s\n' "$*"; }

step "dependencies"
tools/deps.sh

step "build"
make -j2 PG_CONFIG="$PG_CONFIG"

step "install"
if [[ $(id -u) -eq 0 ]]; then
    make install PG_CONFIG="$PG_CONFIG"
elif command -v sudo >/dev/null 2>&1; then
    sudo make install PG_CONFIG="$PG_CONFIG"
else
    echo "demo.sh: not root and sudo is not available: run \`make install\` as root, then rerun" >&2
    exit 1
fi

step "throwaway cluster in $DEMO_DIR on port $DEMO_PORT"
tools/cluster.sh destroy "$DEMO_DIR"     # a previous demo, if any
RESP_PORT=${RESP_PORT:-$(tools/cluster.sh freeport)}
tools/cluster.sh start "$DEMO_DIR" "$DEMO_PORT" \
    "local_cache.resp_port = $RESP_PORT" "local_cache.resp_role = 'cache_reader'"

# wrapped output: the JSON rows are long
demo_psql() {
    tools/cluster.sh psql "$DEMO_DIR" -v ON_ERROR_STOP=1 --echo-queries \
        -P format=wrapped -P columns=110 "$@"
}

step "a cached table"
demo_psql -q <<'SQL'
CREATE EXTENSION local_cache;
CREATE TABLE public.items(id bigint primary key, value text);
INSERT INTO public.items SELECT g, repeat(md5(g::text), 4) FROM generate_series(1, 4096) g;
SELECT local_cache.enable('public.items');
SQL

step "reads: rows in input order, duplicates kept, NULL for the missing key 999999 and for NULL"
demo_psql <<'SQL'
SELECT array_to_json(local_cache.mget('public.items'::regclass, '{1,2,3,2,999999,NULL}'::bigint[])) AS rows;
SQL

step "the same rows as JSON, built in the cache (rows 1 and 2 are now hits)"
demo_psql <<'SQL'
SELECT local_cache.mget_json('public.items', '{1,2}');
SQL

step "statistics"
demo_psql <<'SQL'
SELECT * FROM local_cache.stats;
SQL

step "invalidation: after the UPDATE commits, mget returns the new value"
demo_psql <<'SQL'
UPDATE public.items SET value = 'updated at ' || now() WHERE id = 1;
SELECT array_to_json(local_cache.mget('public.items'::regclass, '{1}'::bigint[])) AS rows;
SELECT relation, hits, misses, fills, invalidations, entries FROM local_cache.stats;
SQL

step "the foreign table: typed rows with SQL semantics; key conditions and joins become cache lookups"
demo_psql <<'SQL'
CREATE SCHEMA cache;
IMPORT FOREIGN SCHEMA public LIMIT TO (items) FROM SERVER local_cache INTO cache;
PREPARE q(bigint[]) AS SELECT id, left(value, 24) AS value FROM cache.items WHERE id = ANY($1);
EXECUTE q('{3,1,3,999999}');
EXPLAIN (COSTS OFF) EXECUTE q('{3,1,3,999999}');
SQL

step "the RESP server: redis-cli reads the same rows as JSON"
demo_psql -q <<'SQL'
-- the role RESP clients act as before any AUTH (local_cache.resp_role)
CREATE ROLE cache_reader;
GRANT SELECT ON public.items TO cache_reader;
SQL
for _ in $(seq 50); do redis-cli -p "$RESP_PORT" PING >/dev/null 2>&1 && break; sleep 0.2; done
echo "\$ redis-cli -p $RESP_PORT MGET items:1 items:2 items:999999"
redis-cli -p "$RESP_PORT" MGET items:1 items:2 items:999999
echo "\$ redis-cli -p $RESP_PORT HGET items:2 value"
redis-cli -p "$RESP_PORT" HGET items:2 value

step "keys beyond integers: a composite key (order_id, line_no), on all three paths"
demo_psql <<'SQL'
CREATE TABLE public.order_lines(order_id bigint, line_no int, sku text, PRIMARY KEY (order_id, line_no));
INSERT INTO public.order_lines VALUES (7, 1, 'apple'), (7, 2, 'pear'), (8, 1, 'fig');
SELECT local_cache.enable('public.order_lines', resp_prefix => 'lines');
GRANT SELECT ON public.order_lines TO cache_reader;
-- one row of the two-dimensional array per key, its elements the key's columns in order
SELECT local_cache.mget_json('public.order_lines', '{{7,2},{8,1},{9,9}}'::bigint[]);
IMPORT FOREIGN SCHEMA public LIMIT TO (order_lines) FROM SERVER local_cache INTO cache;
EXPLAIN (COSTS OFF) SELECT sku FROM cache.order_lines WHERE order_id = 7 AND line_no = 1;
SQL
echo "\$ redis-cli -p $RESP_PORT MGET lines:7:1 lines:8:1"
redis-cli -p "$RESP_PORT" MGET lines:7:1 lines:8:1

step "RESP writes: SET is an INSERT ... ON CONFLICT DO UPDATE as the role that logged in"
demo_psql -q <<'SQL'
CREATE ROLE cache_writer LOGIN PASSWORD 'demo-writer';
GRANT SELECT, INSERT, UPDATE ON public.items TO cache_writer;
SQL
echo "\$ redis-cli -p $RESP_PORT --user cache_writer --pass ... SET items:7 '{\"value\":\"written through RESP\"}'"
redis-cli -p "$RESP_PORT" --no-auth-warning --user cache_writer --pass demo-writer \
    SET items:7 '{"value":"written through RESP"}'
demo_psql -c "SELECT id, value FROM public.items WHERE id = 7"

port=$(tools/cluster.sh port "$DEMO_DIR")
owner=$(stat -c %U "$DEMO_DIR/data")
cat <<EOF

Demo cluster is running in $DEMO_DIR (log: $DEMO_DIR/server.log).
Connect:  psql "host=127.0.0.1 port=$port user=$owner dbname=postgres"
     or:  tools/cluster.sh psql $DEMO_DIR
RESP:     redis-cli -p $RESP_PORT MGET items:1 items:2
Stop and remove it:  tools/cluster.sh destroy $DEMO_DIR
EOF
