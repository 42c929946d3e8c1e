#!/usr/bin/env bash
# regress/resp/node/run.sh: runs the node --test suites of the RESP server (node-redis v6, v5 and
# v4, ioredis) against throwaway clusters of their own: one plaintext, one whose RESP port speaks
# TLS (tests/tls.test.mjs, with certificates made here).
#
#   regress/resp/node/run.sh                 as root (servers run as postgres) or a normal user
#   regress/resp/node/run.sh tests/x.test.mjs   only some files
#   LC_TRACKING_CHECK_SECONDS=300 regress/resp/node/run.sh checks/tracking.check.mjs
#   KEEP_TMP=1 regress/resp/node/run.sh      keep the cluster directory and its log
#
# Installs the npm packages (npm ci from package-lock.json, quietly), starts the cluster with
# the RESP server on a free port, creates the tables and roles the tests share, runs
# `node --test` with the TAP reporter (its summary: `# pass N`, `# fail N`), destroys the
# cluster. The tests find the server through LC_RESP_PORT, LC_CLUSTER_SH, LC_CLUSTER_DIR; the
# cluster allows prepared transactions (the tracking tests' two-phase commit) and trusts loopback
# replication, and tests/tracking_standby.test.mjs makes a hot standby of it in LC_STANDBY_DIR
# (tests/cluster.test.mjs two, in LC_STANDBY_DIR and LC_STANDBY_DIR-2, destroyed by the test).
# `run.sh checks/tracking.check.mjs` runs the randomized CLIENT TRACKING checker instead (not
# part of the default tests/*.test.mjs) for LC_TRACKING_CHECK_SECONDS (default 5); the time
# limits below grow with it. `run.sh checks/failover.check.mjs` runs the Patroni failover check
# (its own etcd and three Patroni nodes through tools/patroni.sh, in $WORK/patroni) for
# LC_FAILOVER_ROUNDS rounds (default 1; bench/failover's FAILOVER_ROUNDS); the limits grow with them.
# Exit status: node's (0 only if every test passed); 2 if node or npm is missing.
set -uo pipefail
export LC_ALL=C PGCLIENTENCODING=UTF8
unset PGTZ PGOPTIONS PGDATESTYLE PGHOST PGPORT PGUSER PGDATABASE PGSERVICE PGPASSWORD

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
CLUSTER_SH=$ROOT/tools/cluster.sh
CONNECTIONS=1000

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "run.sh: $tool is not installed; the node tests need Node.js >= 20 and npm"
        exit 2
    fi
done
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if ((major < 20)); then
    echo "run.sh: node $(node --version 2>/dev/null) is too old; the tests need Node.js >= 20"
    exit 2
fi

cd "$HERE" || exit 1
if [[ ! -w "$HERE" ]]; then
    echo "run.sh: $HERE is not writable by $(id -un): npm cannot install node_modules there"
    exit 1
fi
echo "run.sh: installing npm packages (node $(node --version), npm $(npm --version))"
if [[ -f package-lock.json ]]; then
    npm_cmd=(npm ci)
else
    npm_cmd=(npm install)
fi
if ! timeout 300 "${npm_cmd[@]}" --prefer-offline --no-audit --no-fund --loglevel=error >"$HERE/.npm.log" 2>&1; then
    cat "$HERE/.npm.log"
    echo "run.sh: ${npm_cmd[*]} failed (no access to the npm registry and nothing in the npm cache?)"
    rm -f "$HERE/.npm.log"
    exit 1
fi
rm -f "$HERE/.npm.log"

# 1,000 client sockets in the node process and as many in the workers: raise the soft limit on
# open files (the cluster started below inherits it).
need=$((CONNECTIONS + 1000))
soft=$(ulimit -Sn)
if [[ "$soft" != unlimited ]] && ((soft < need)); then
    hard=$(ulimit -Hn)
    if [[ "$hard" == unlimited ]] || ((hard >= need)); then
        ulimit -Sn "$need"
    else
        ulimit -Sn "$hard"
    fi
fi
echo "run.sh: open files limit $(ulimit -Sn) (the 1,000-connection test needs $need)"
export LC_FD_LIMIT=$(ulimit -Sn) LC_CONNECTIONS=$CONNECTIONS

WORK=$(mktemp -d /tmp/lc_resp_node.XXXXXX)
chmod 755 "$WORK"
DIR=$WORK/c
TLS_DIR=$WORK/tls
STANDBY_DIR=$WORK/standby
rc=1
cleanup() {
    "$CLUSTER_SH" destroy "$STANDBY_DIR" >/dev/null 2>&1 || true
    "$CLUSTER_SH" destroy "$DIR" >/dev/null 2>&1 || true
    "$CLUSTER_SH" destroy "$TLS_DIR" >/dev/null 2>&1 || true
    if ((rc == 0)) && [[ "${KEEP_TMP:-0}" != 1 ]]; then
        rm -rf "$WORK"
    else
        echo "run.sh: work directory kept: $WORK"
    fi
}
trap cleanup EXIT

RESP_PORT=$("$CLUSTER_SH" freeport)
if ! timeout 120 "$CLUSTER_SH" start "$DIR" auto \
        "local_cache.resp_port = $RESP_PORT" \
        "local_cache.resp_role = 'regress_resp_reader'" \
        "local_cache.resp_workers = 2" \
        "local_cache.resp_max_clients = 10000" \
        "max_prepared_transactions = 10"; then
    echo "run.sh: the cluster did not start"
    exit 1
fi
# Passwords are checked over TCP (md5 takes SCRAM secrets too); replication from loopback is
# trusted for the hot standby that tests/tracking_standby.test.mjs makes (in $STANDBY_DIR).
"$CLUSTER_SH" hba "$DIR" "host all all 127.0.0.1/32 md5" "host all all ::1/128 md5" \
    "host replication all 127.0.0.1/32 trust"

READER_PASSWORD='node-rdr-Pw-4Jx8'
if ! timeout 60 "$CLUSTER_SH" psql "$DIR" -v ON_ERROR_STOP=1 -q >/dev/null <<SQL
CREATE EXTENSION local_cache;
CREATE ROLE regress_resp_reader LOGIN PASSWORD '$READER_PASSWORD';
CREATE TABLE items (id bigint PRIMARY KEY, value text, n integer);
INSERT INTO items SELECT g, 'value ' || g, g * 10 FROM generate_series(1, 2000) g;
SELECT local_cache.enable('items');
CREATE TABLE bigrow (id integer PRIMARY KEY, v text);
INSERT INTO bigrow VALUES (1, repeat('x', 4000));
SELECT local_cache.enable('bigrow', resp_prefix => 'big');
GRANT SELECT ON items, bigrow TO regress_resp_reader;
SQL
then
    echo "run.sh: setup SQL failed"
    exit 1
fi

ready=0
for _ in $(seq 1 300); do
    if [[ "$(timeout 5 perl "$HERE/../resp_raw.pl" "$RESP_PORT" 'send:PING\r\n' read:1 2>/dev/null)" == '+PONG\r\n' ]]; then
        ready=1
        break
    fi
    sleep 0.1
done
if ((!ready)); then
    tail -n 30 "$DIR/server.log"
    echo "run.sh: the RESP server on port $RESP_PORT does not answer"
    exit 1
fi

# A second cluster whose RESP port speaks TLS (tests/tls.test.mjs): a CA, the server's certificate
# (for 127.0.0.1) and a client certificate for regress_resp_reader, made here with openssl.
TLS_DIR=$WORK/tls
CERTS=$WORK/certs
mkdir -p "$CERTS"
certificate() { # NAME CN [CA]
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" \
        -keyout "$CERTS/$1.key" -out "$CERTS/$1.csr" 2>/dev/null &&
    if [[ -n "${3:-}" ]]; then
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$CERTS/$1.ext"
        openssl x509 -req -in "$CERTS/$1.csr" -days 2 -CA "$CERTS/$3.crt" -CAkey "$CERTS/$3.key" \
            -CAcreateserial -extfile "$CERTS/$1.ext" -out "$CERTS/$1.crt" 2>/dev/null
    else
        printf 'basicConstraints=critical,CA:TRUE\n' >"$CERTS/$1.ext"
        openssl x509 -req -in "$CERTS/$1.csr" -days 2 -signkey "$CERTS/$1.key" -extfile "$CERTS/$1.ext" \
            -out "$CERTS/$1.crt" 2>/dev/null
    fi
}
if ! { certificate ca "local_cache test CA" && certificate server localhost ca &&
       certificate client regress_resp_reader ca; }; then
    echo "run.sh: openssl could not make the test certificates"
    exit 1
fi
chmod 600 "$CERTS"/*.key
chmod 755 "$CERTS"
[[ $(id -u) -eq 0 ]] && chown postgres: "$CERTS/server.key"
TLS_PORT=$("$CLUSTER_SH" freeport)
TLS_PASSWORD='node-tls-Pw-7Qm2'
if ! timeout 120 "$CLUSTER_SH" start "$TLS_DIR" auto \
        "local_cache.resp_port = $TLS_PORT" \
        "local_cache.resp_workers = 1" \
        "local_cache.resp_tls = on" \
        "local_cache.resp_tls_cert_file = '$CERTS/server.crt'" \
        "local_cache.resp_tls_key_file = '$CERTS/server.key'" \
        "local_cache.resp_tls_ca_file = '$CERTS/ca.crt'" >/dev/null; then
    echo "run.sh: the TLS cluster did not start"
    exit 1
fi
"$CLUSTER_SH" hba "$TLS_DIR" "hostssl all regress_resp_reader 127.0.0.1/32 cert" "hostssl all all 127.0.0.1/32 md5"
if ! timeout 60 "$CLUSTER_SH" psql "$TLS_DIR" -v ON_ERROR_STOP=1 -q >/dev/null <<SQL
CREATE EXTENSION local_cache;
CREATE ROLE regress_resp_reader LOGIN;
CREATE ROLE regress_tls_password LOGIN PASSWORD '$TLS_PASSWORD';
CREATE TABLE tls_items (id bigint PRIMARY KEY, v text);
INSERT INTO tls_items VALUES (1, 'one'), (2, 'two');
SELECT local_cache.enable('tls_items');
GRANT SELECT ON tls_items TO regress_resp_reader, regress_tls_password;
SQL
then
    echo "run.sh: setup SQL of the TLS cluster failed"
    exit 1
fi

export LC_RESP_PORT=$RESP_PORT LC_CLUSTER_SH=$CLUSTER_SH LC_CLUSTER_DIR=$DIR LC_READER_PASSWORD=$READER_PASSWORD
export LC_STANDBY_DIR=$STANDBY_DIR
export LC_TLS_PORT=$TLS_PORT LC_TLS_CERTS=$CERTS LC_TLS_PASSWORD=$TLS_PASSWORD
if (($# > 0)); then files=("$@"); else files=(tests/*.test.mjs); fi
echo "run.sh: node --test on RESP port $RESP_PORT: ${files[*]}"
# the checks' own lengths: the tracking check's seconds, and 60 s for each failover round past the
# first (bench/failover's; a round took about 40 s on 2 cores, the first fits the base limit)
check_seconds=$((${LC_TRACKING_CHECK_SECONDS:-5} + 60 * (${LC_FAILOVER_ROUNDS:-1} - 1)))
timeout --kill-after=10 $((300 + check_seconds)) node --test --test-reporter=tap --test-concurrency=1 \
    --test-timeout=$((120000 + 1000 * check_seconds)) "${files[@]}"
rc=$?
if ((rc != 0)); then
    echo "---- last lines of $DIR/server.log ----"
    tail -n 40 "$DIR/server.log"
    echo "----"
    if ((rc == 124 || rc == 137)); then echo "run.sh: node --test TIMED OUT after $((300 + check_seconds)) s"; fi
fi
exit "$rc"
