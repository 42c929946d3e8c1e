#!/usr/bin/env bash
# regress/resp/redis_cli.sh: scripted tests of the RESP server with redis-cli (Debian's
# redis-tools) and byte-exact raw-socket checks (regress/resp/resp_raw.pl), on a throwaway
# cluster of its own (tools/cluster.sh). Needs the extension installed (make install).
#
#   regress/resp/redis_cli.sh          as root (servers run as postgres) or as a normal user
#   KEEP_TMP=1 regress/resp/redis_cli.sh   keep the cluster directory and its log
#
# Every case compares what came back with what was expected and prints both when they differ.
# The last line is `N passed, N failed`; the exit status is 0 only if nothing failed.
# Everything listens on 127.0.0.1 only; every wait is bounded.
set -uo pipefail
export LC_ALL=C PGCLIENTENCODING=UTF8
unset PGTZ PGOPTIONS PGDATESTYLE PGHOST PGPORT PGUSER PGDATABASE PGSERVICE PGPASSWORD

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=regress/resp/lib.sh
source "$HERE/lib.sh"
require_tools
start_cluster

SUITES=(commands connection protocol auth limits lifecycle)
for suite in "${SUITES[@]}"; do
    # shellcheck source=/dev/null
    source "$HERE/suites/$suite.sh"
done

check "no password appears in the server log (end of run)" "" "$(passwords_leaked)"

echo
if ((FAILED > 0)); then
    echo "---- last lines of $LOG ----"
    tail -n 40 "$LOG"
    echo "----"
fi
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
