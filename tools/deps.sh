#!/usr/bin/env bash
# tools/deps.sh: owns the list of Debian 12 packages needed to build, install and test
# local_cache, and installs the missing ones (apt-get, non-interactive).
#
#   tools/deps.sh            install whatever is missing (as root, or through sudo)
#   tools/deps.sh --check    only report; exit 1 if something is missing
#
# Quick and silent apart from one line when everything is already installed.
set -euo pipefail

PACKAGES=(
    postgresql-15              # server, initdb, pg_ctl, psql
    postgresql-server-dev-15   # pg_config, PGXS, pg_regress, pg_isolation_regress
    libpq-dev                  # libpq headers for tools/stress_check/
    libuv1-dev
    liburing-dev               # io_uring for the RESP workers' connections (liburing 2.3)
    libssl-dev                 # OpenSSL: RESP AUTH checks SCRAM/MD5 password secrets
    libkrb5-dev                # gssapi.h, which libpq/libpq-be.h (Port, for the ClientAuthentication hook) includes
    rapidjson-dev
    libboost-test-dev          # Boost.Test for `make unittest`
    clang                      # libFuzzer target of the RESP parser (`make fuzz`)
    libclang-rt-14-dev         # its sanitizer and fuzzer runtimes
    libipc-run-perl
    redis-tools
    prometheus-redis-exporter  # regress/resp/suites/monitoring.sh scrapes the RESP server
    curl                       # with it, over HTTP
    prometheus                 # promtool: tools/alerts_test.py checks docs/alerts/local_cache.rules.yml
    patroni                    # the failover check (tools/patroni.sh): Patroni 3.0 manages three nodes,
    etcd-server                # with one etcd 3.4 member as its DCS (Patroni's etcd3: section, which
    python3-etcd               # needs python-etcd's exceptions)
    python3-redis              # redis-py: its SCAN iterator (regress/resp/suites/clients.sh), RedisCluster (regress/t/cluster_redis_py.py)
    golang-go                  # the benchmark's Go client (bench/go), built in GOPATH mode from
    golang-github-jackc-pgx-v4-dev  # Debian's packages only: pgx v4 and its dependencies
    make
    g++
    util-linux                 # runuser (run servers as the postgres user)
    coreutils                  # timeout, mktemp
    tar
    # the Debian package (tools/package_test.sh: dpkg-buildpackage, pg_buildext, lintian)
    build-essential
    dpkg-dev
    debhelper
    postgresql-server-dev-all
    postgresql-all             # pg_virtualenv's servers for the build-time installcheck
    lintian
)

missing=()
for p in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [[ "$status" == installed ]] || missing+=("$p")
done
# Node.js for the RESP client tests and the benchmark's Node client: Debian's nodejs and npm,
# unless a Node.js (with its own npm, as NodeSource's) is already installed.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "deps: all ${#PACKAGES[@]} packages installed"
    exit 0
fi

echo "deps: missing: ${missing[*]}"
if [[ "${1:-}" == --check ]]; then
    exit 1
fi

if [[ $(id -u) -eq 0 ]]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "deps: not root and sudo is not available; run as root:" >&2
    echo "    apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
echo "deps: installed ${missing[*]}"
