#!/usr/bin/env bash
# tools/package_test.sh: owns the test of the Debian package (debian/): it is built from a clean
# copy of the tree, is lintian-clean, holds the files it should, loads, creates and serves, and —
# with a real install — is removed without leaving files behind.
#
#   tools/package_test.sh                          build (dpkg-buildpackage -us -uc -b), lintian,
#                                                  the package's files (dpkg -x into a temp root);
#                                                  a throwaway cluster (tools/cluster.sh) that
#                                                  takes the library and the extension from that
#                                                  root (extension_destdir, dynamic_library_path)
#                                                  serves as below, without installing anything
#   PACKAGE_TEST_INSTALL=1 tools/package_test.sh   also, as root: dpkg -i; a throwaway cluster
#                                                  (tools/cluster.sh) that preloads the installed
#                                                  library; CREATE EXTENSION, enable a table, read
#                                                  it through mget and RESP (redis-cli); DROP
#                                                  EXTENSION; dpkg -P, and its files are gone
#
# The real install writes into /usr/lib/postgresql/15 and /usr/share/postgresql/15: it is for
# throwaway machines (CI); purging also removes a local_cache that `make install` put there.
# DEB_BUILD_OPTIONS is passed on (default parallel=2; `nocheck` skips the build-time
# installcheck). Needs dpkg-dev, debhelper, postgresql-server-dev-all, postgresql-all, lintian
# (tools/deps.sh installs them). Each check counts as one test; the last line is always
# `N passed, N failed`, and the exit status is 0 only if nothing failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PACKAGE=postgresql-15-local-cache
PGBIN=/usr/lib/postgresql/15/bin
PASSED=0
FAILED=0

pass() { PASSED=$((PASSED + 1)); echo "PASS: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
# check DESCRIPTION cmd...: one test, passed when cmd succeeds
check() {
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() {
    echo "$PASSED passed, $FAILED failed"
    ((FAILED == 0))
    exit
}

for tool in dpkg-buildpackage dh pg_buildext lintian; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        fail "$tool is not installed (run tools/deps.sh as root)"
        finish
    fi
done
if [[ "${PACKAGE_TEST_INSTALL:-0}" == 1 && $(id -u) -ne 0 ]]; then
    fail "PACKAGE_TEST_INSTALL=1 installs the package: run as root"
    finish
fi

# The upstream version: the control file's default_version with a patch level (META.json's).
EXT_VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$ROOT/local_cache.control")
DEB_VERSION=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
ARCH=$(dpkg --print-architecture)
DEB_FILE=${PACKAGE}_${DEB_VERSION}_${ARCH}.deb

WORK=$(mktemp -d /tmp/local_cache_pkg.XXXXXX)
CLUSTER=$WORK/cluster
cleanup() {
    [[ -d "$CLUSTER" ]] && PG_CONFIG=$PGBIN/pg_config "$ROOT/tools/cluster.sh" destroy "$CLUSTER" >/dev/null 2>&1
    if ((FAILED == 0)); then rm -rf "$WORK"; else echo "package_test: logs kept in $WORK"; fi
}
trap cleanup EXIT

# ---------------------------------------------------------------- build from a clean copy
# What git knows (tracked files, and new ones not ignored): no build output, no local state.
SRC=$WORK/local-cache-$EXT_VERSION.0
mkdir -p "$SRC"
if ! (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
        tar --null -T - -cf -) | tar -C "$SRC" -xf -; then
    fail "copy of the tree (git ls-files) into $SRC"
    finish
fi
if [[ $(id -u) -eq 0 ]]; then chown -R postgres: "$WORK"; fi

echo "package_test: dpkg-buildpackage -us -uc -b in $SRC (log: $WORK/build.log)"
build_rc=0
(cd "$SRC" && DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=2} dpkg-buildpackage -us -uc -b) \
    >"$WORK/build.log" 2>&1 || build_rc=$?
DEB=$WORK/$DEB_FILE
if ((build_rc != 0)) || [[ ! -f "$DEB" ]]; then
    tail -n 80 "$WORK/build.log"
    fail "dpkg-buildpackage builds $DEB_FILE (exit $build_rc; see above)"
    finish
fi
pass "dpkg-buildpackage -us -uc -b builds $DEB_FILE"
if grep -q "dh_pgxs_test" "$WORK/build.log"; then
    check "the build-time installcheck (pg_buildext, library preloaded) passed" \
        grep -qE "^ All [0-9]+ tests passed" "$WORK/build.log"
fi

# ---------------------------------------------------------------- lintian
lintian_rc=0
lintian --fail-on error,warning --suppress-tags-from-file /dev/null "$DEB" >"$WORK/lintian.log" 2>&1 || lintian_rc=$?
cat "$WORK/lintian.log"
check "lintian: no errors, no warnings" test "$lintian_rc" -eq 0

# ---------------------------------------------------------------- the package's files
ROOTFS=$WORK/root
dpkg -x "$DEB" "$ROOTFS"
LIB=usr/lib/postgresql/15/lib
EXT=usr/share/postgresql/15/extension
DOC=usr/share/doc/$PACKAGE
# The files a real install puts in place (and a purge must remove).
FILES=("$LIB/local_cache.so" "$EXT/local_cache.control" "usr/share/doc/$PACKAGE/copyright")
for f in "$ROOT"/sql/*.sql; do FILES+=("$EXT/$(basename "$f")"); done
missing=()
# debian/rules installs every doc of docs/ but the generated BENCHMARKS.md
DOCS=(README.md changelog SECURITY.md)
for f in "$ROOT"/docs/*.md; do [[ $f == */BENCHMARKS.md ]] || DOCS+=("$(basename "$f")"); done
for f in "${DOCS[@]}"; do
    # dh_compress gzips the larger ones
    if [[ -f "$ROOTFS/$DOC/$f.gz" ]]; then FILES+=("$DOC/$f.gz"); else FILES+=("$DOC/$f"); fi
done
for f in "${FILES[@]}"; do [[ -f "$ROOTFS/$f" ]] || missing+=("$f"); done
check "the package holds the library, the control file, every SQL script and the docs${missing[*]:+ (missing: ${missing[*]})}" \
    test ${#missing[@]} -eq 0
check "nothing in another package's directory (/usr/share/doc/postgresql-doc-15)" \
    test ! -e "$ROOTFS/usr/share/doc/postgresql-doc-15"
same=1
for f in "$ROOT/local_cache.control" "$ROOT"/sql/*.sql; do
    cmp -s "$f" "$ROOTFS/$EXT/$(basename "$f")" || { echo "differs from the tree: $(basename "$f")"; same=0; }
done
check "its control file and SQL scripts are the tree's (default_version $EXT_VERSION, package $DEB_VERSION)" \
    test "$same" -eq 1
check "the package version $DEB_VERSION is default_version $EXT_VERSION with a patch level and a Debian revision" \
    bash -c '[[ "$1" == "$2".[0-9]*-* ]]' _ "$DEB_VERSION" "$EXT_VERSION"
check "META.json (PGXN Meta Spec 1.0.0) names version $DEB_VERSION's upstream part for the distribution and local_cache" \
    python3 - "$ROOT/META.json" "${DEB_VERSION%-*}" "$ROOT/CHANGELOG.md" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
want = sys.argv[2]
# The CHANGELOG's section of this version says whether it is released ("unreleased" or a date).
changelog = open(sys.argv[3]).read()
unreleased = ("## " + want.rsplit(".", 1)[0] + " — unreleased") in changelog
ok = (m["meta-spec"]["version"] == "1.0.0" and m["license"] == "postgresql" and m["version"] == want
      and m["provides"]["local_cache"]["version"] == want
      and m["prereqs"]["runtime"]["requires"]["PostgreSQL"] == ">= 15.0.0, < 16.0.0"
      and m["release_status"] == ("unstable" if unreleased else "stable")
      and all("<" in x and "@" in x for x in m["maintainer"])
      and all(m.get(k) for k in ("name", "abstract", "maintainer")))
sys.exit(0 if ok else 1)
PY
check "the library needs libuv, liburing and libcrypto (Depends from shlibs)" \
    bash -c 'd=$(dpkg-deb -f "$1" Depends) && grep -q libuv1 <<<"$d" && grep -q liburing2 <<<"$d" && grep -q libssl <<<"$d"' _ "$DEB"

# serve WHAT [postgresql.conf lines...]: a throwaway cluster of $PGBIN that preloads local_cache
# (found as WHAT says), CREATE EXTENSION, an enabled table read through mget and RESP, DROP
# EXTENSION; the cluster is removed after.
serve() {
    local what=$1 resp_port out got pid
    shift
    resp_port=$(PG_CONFIG=$PGBIN/pg_config "$ROOT/tools/cluster.sh" freeport)
    if ! PG_CONFIG=$PGBIN/pg_config "$ROOT/tools/cluster.sh" start "$CLUSTER" auto \
            "local_cache.resp_port = $resp_port" "local_cache.resp_role = 'pkg_reader'" "$@" >"$WORK/cluster.log" 2>&1; then
        cat "$WORK/cluster.log"
        fail "a cluster of $PGBIN with shared_preload_libraries = 'local_cache' ($what) starts (log above)"
        fail "CREATE EXTENSION, mget, RESP and DROP EXTENSION (no cluster)"
        return
    fi
    pass "a cluster of $PGBIN starts with shared_preload_libraries = 'local_cache' ($what)"
    pid=$(head -n 1 "$CLUSTER/data/postmaster.pid")
    check "the server loaded the package's library ($LIB_LOADED)" grep -qF "$LIB_LOADED" "/proc/$pid/maps"
    out=$(PG_CONFIG=$PGBIN/pg_config "$ROOT/tools/cluster.sh" psql "$CLUSTER" -qAt -v ON_ERROR_STOP=1 <<'SQL' 2>&1
CREATE EXTENSION local_cache;
CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items VALUES (1, 'one'), (2, 'two');
SELECT local_cache.enable('items');
CREATE ROLE pkg_reader LOGIN;
GRANT SELECT ON items TO pkg_reader;
SELECT extversion FROM pg_extension WHERE extname = 'local_cache';
SELECT local_cache.mget_json('items', '{1,2,3}');
SQL
    )
    echo "$out"
    check "CREATE EXTENSION creates version $EXT_VERSION" grep -qx "$EXT_VERSION" <<<"$out"
    check "mget_json reads the enabled table" \
        grep -qxF '[{"id":1,"value":"one"},{"id":2,"value":"two"},null]' <<<"$out"
    got=""
    for _ in $(seq 1 100); do  # the launcher starts the workers once the database is there
        got=$(redis-cli -p "$resp_port" GET items:2 2>/dev/null)
        [[ "$got" == '{"id":2,"value":"two"}' ]] && break
        sleep 0.2
    done
    check "RESP GET items:2 (redis-cli) answers the row" test "$got" == '{"id":2,"value":"two"}'
    out=$(PG_CONFIG=$PGBIN/pg_config "$ROOT/tools/cluster.sh" psql "$CLUSTER" -qAt \
        -c "DROP EXTENSION local_cache CASCADE" \
        -c "SELECT count(*) FROM pg_extension WHERE extname = 'local_cache'" 2>&1)
    check "DROP EXTENSION local_cache removes it" test "$(tail -n 1 <<<"$out")" == 0
    PG_CONFIG=$PGBIN/pg_config "$ROOT/tools/cluster.sh" destroy "$CLUSTER" >/dev/null 2>&1
}

if [[ "${PACKAGE_TEST_INSTALL:-0}" != 1 ]]; then
    # Without installing: the server takes the extension's files and the library from the
    # unpacked package (Debian's extension_destdir, as pg_buildext's tests do).
    echo "package_test: PACKAGE_TEST_INSTALL is not 1: no real install; the unpacked package serves"
    LIB_LOADED=$ROOTFS/$LIB/local_cache.so
    serve "from the unpacked package" "extension_destdir = '$ROOTFS'" \
        "dynamic_library_path = '$ROOTFS/$LIB:\$libdir'"
    finish
fi

# ---------------------------------------------------------------- install, serve, remove
if ! dpkg -i "$DEB" >"$WORK/install.log" 2>&1; then
    cat "$WORK/install.log"
    fail "dpkg -i $DEB_FILE"
    finish
fi
pass "dpkg -i $DEB_FILE"
check "dpkg lists $PACKAGE as installed" \
    bash -c '[[ $(dpkg-query -W -f="\${db:Status-Status}" "$1") == installed ]]' _ "$PACKAGE"
LIB_LOADED=/$LIB/local_cache.so
serve "installed by the package"

if dpkg -P "$PACKAGE" >"$WORK/purge.log" 2>&1; then
    pass "dpkg -P $PACKAGE"
else
    cat "$WORK/purge.log"
    fail "dpkg -P $PACKAGE"
fi
left=()
for f in "${FILES[@]}"; do [[ -e "/$f" ]] && left+=("/$f"); done
check "no file of the package is left after the purge${left[*]:+ (left: ${left[*]})}" test ${#left[@]} -eq 0
finish
