"""bench/driver_lib/env.py: the run's settings, read once from the environment bench/run sets
(servers, ports, the matrix, the key types, redis-benchmark, the soak), and what every part uses:
log, psql, sh."""
import os
import subprocess
import sys

ENV = os.environ
CLK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

CONNINFO = ENV["BENCH_CONNINFO"]
PSQL = ENV.get("BENCH_PSQL", "psql")
RESP_PORT = int(ENV["BENCH_RESP_PORT"])
REDIS_PORT = int(ENV["BENCH_REDIS_PORT"])
PG_PID = int(ENV["BENCH_PG_PID"])
REDIS_PID = int(ENV["BENCH_REDIS_PID"])
STATE = ENV["BENCH_STATE"]
LOADGEN = ENV["BENCH_LOADGEN"]
NODE_DIR = ENV["BENCH_NODE_DIR"]
BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GO_CLIENT = ENV.get("BENCH_GO_CLIENT", os.path.join(BENCH_DIR, "go", "gobench"))
IO_FLOOR = os.path.join(BENCH_DIR, "io_floor")  # the profile mode's I/O floor server
# soak, tracking: the hot standby bench/run started (empty / 0 without one)
STANDBY_CONNINFO = ENV.get("BENCH_STANDBY_CONNINFO", "")
STANDBY_RESP_PORT = int(ENV.get("BENCH_STANDBY_RESP_PORT") or 0)
STANDBY_PID = int(ENV.get("BENCH_STANDBY_PID") or 0)
STANDBY_DIR = ENV.get("BENCH_STANDBY_DIR", "")  # tools/cluster.sh's directory of the standby
MODE = ENV.get("BENCH_MODE", "all")
# the tls mode: the cluster's directory (tools/cluster.sh restart between TLS and plaintext), the CA
# of bench/run's throwaway certificates, redis-server's TLS port (its plain port stays REDIS_PORT)
PG_DIR = ENV.get("BENCH_PG_DIR", "")
CLUSTER_SH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "tools", "cluster.sh")
TLS_CA = ENV.get("BENCH_TLS_CA", "")
# the tail mode's baseline build (bench/run's BENCH_BASELINE_DIR; empty without one): current/ and
# baseline/, each with its local_cache.so, and the installed library they take turns as
BASELINE_DIR = ENV.get("BENCH_BASELINE_DIR", "")
BUILDS_DIR = ENV.get("BENCH_BUILDS_DIR", "")
INSTALLED_LIBRARY = ENV.get("BENCH_INSTALLED_LIBRARY", "")
REDIS_TLS_PORT = int(ENV.get("BENCH_REDIS_TLS_PORT") or 0)


def int_list(name, default):
    return [int(x) for x in ENV.get(name, default).replace(" ", "").split(",") if x]


CLIENTS = [x for x in ENV.get("CLIENTS", "native,node").replace(" ", "").split(",") if x]
REDIS_BENCHMARK = ENV.get("BENCH_REDIS_BENCHMARK", "redis-benchmark")
# redis-benchmark only: requests per pipeline (-P); 1 is no pipelining
PIPELINES = int_list("PIPELINES", "1,16")
CONNECTIONS = int_list("CONNECTIONS", "4,64,256")
BATCHES = int_list("BATCHES", "1,16,64")
REPEATS = int(ENV.get("REPEATS", "3"))
DURATION = float(ENV.get("DURATION_SECONDS", "5"))
CHECK_CLIENTS = [x for x in ENV.get("BENCH_CHECK_CLIENTS", ",".join(CLIENTS)).split(",") if x]
# the key types beside int (bench/loadgen --keys) of the native client's warm reads, at
# KEY_CONNECTIONS connections (default 64, else the largest of CONNECTIONS: int's samples there
# are their baseline) and every batch; their paths are the cached ones, prepared SQL and parse,
# the control (`SELECT cardinality($1::uuid[])`: receiving and parsing mget's key array alone);
# the SQL ones with binary key arrays (KEY_SQL_PATHS, loadgen --params binary), int's as well
KEY_TYPES = [x for x in ENV.get("KEY_TYPES", "uuid,text,pair").replace(" ", "").split(",") if x and x != "int"]
KEY_CONNECTIONS = int_list("KEY_CONNECTIONS", str(64 if 64 in CONNECTIONS else max(CONNECTIONS)))
KEY_PATHS = ["sql", "mget", "mget_json", "fdw", "resp", "parse"]
KEY_SQL_PATHS = ["sql", "mget", "mget_json", "fdw", "parse"]
KEY_PARAMS = "binary"
KEY_CLIENT = "native"

READ_PATHS = ["sql", "mget", "mget_json", "fdw", "resp", "redis"]
CACHE_PATHS = ["sql", "mget", "mget_json", "fdw", "resp"]  # paths that see SQL updates / flushes
# miss mode: every other key of a request has no row (prepared SQL as the baseline)
MISS_PATHS = ["sql", "mget", "fdw", "resp", "redis"]
# serializable mode: the warm mode's requests, each a SERIALIZABLE transaction; mget_json against
# the equivalent prepared SQL, beside the same paths at READ COMMITTED (warm samples: in the same
# run, bench/run serializable takes them itself; all has its warm mode's)
SERIALIZABLE_PATHS = ["sql", "mget_json"]
# tls mode: redis-benchmark's GET/MGET to both RESP servers with TLS and in plaintext (the variants),
# in blocks: every round both, their order alternating (our server restarts between them)
TLS_VARIANTS = ["tls", "plain"]
ROWS = 4096
# redis-benchmark sends one fixed command (see rb_ids), so it runs only the modes whose keys do
# not change from request to request, and only the RESP paths
RB_MODES = ("warm", "miss", "tls", "profile")
RB_PATHS = ("resp", "redis")
# write mode: (path, variant). One random row per request: the prepared SQL UPDATE with the table
# cached and not cached, RESP SET of the row's JSON (as RESP_WRITER), redis-server SET of the same bytes.
# Then 16 distinct random rows per request (issue 46: an MSET of 16 rows at most the server CPU of one
# 16-row SQL statement): one prepared UPDATE ... FROM unnest($1::bigint[], $2::text[]) cached and not
# cached, RESP MSET of the 16 rows' JSON (as RESP_WRITER), redis-server MSET of the same bytes.
# And the UPDATE of both tables in one window (update_pair): half the connections update public.items
# (cached), half public.items_plain (its rows, never cached); the driver reads each half's backends' CPU.
# Its cache_disabled sample, public.items not cached either, is the method's control: the two halves'
# ratio when nothing tells them apart.
WRITE_PATHS = [("update", "cache_enabled"), ("update", "cache_disabled"), ("update_pair", "cache_enabled"),
               ("update_pair", "cache_disabled"), ("resp_set", "cache_enabled"), ("redis_set", None),
               ("update16", "cache_enabled"), ("update16", "cache_disabled"), ("resp_mset", "cache_enabled"),
               ("redis_mset", None)]
# the 16-row paths and update_pair: bench/loadgen's and bench/node's (the go client has no such path),
# and not in the tail mode (its matrix and report are the one-row writes')
MULTI_ROW_WRITE_PATHS = ("update16", "resp_mset", "redis_mset")
MULTI_ROW_CLIENTS = ("native", "node")
PAIR_PATH = "update_pair"
# update_pair's halves: the application_name of their connections (bench/loadgen_main.cpp)
PAIR_HALVES = {"cached": "local_cache_bench_cached", "plain": "local_cache_bench_plain"}
# update_pair's windows per sample, each with fresh connections (clients.pair_sample)
PAIR_WINDOWS = int(ENV.get("PAIR_WINDOWS", "5"))
# the RESP role of bench/run (local_cache.resp_role) may only read; writes AUTH as this role
RESP_WRITER = ENV.get("BENCH_RESP_WRITER", "bench_writer")
RESP_WRITER_PASSWORD = ENV.get("BENCH_RESP_WRITER_PASSWORD", "bench")
# BENCH_REDIS_BENCHMARK_CSV=1: parse `--csv` output (no p99.9) instead of the default output
RB_CSV = ENV.get("BENCH_REDIS_BENCHMARK_CSV", "0") == "1"

# the soak (bench/run soak)

SOAK_INTERVAL = float(ENV.get("SOAK_INTERVAL_SECONDS") or min(10.0, max(1.0, DURATION / 20)))
SOAK_CONNECTIONS = int(ENV.get("SOAK_CONNECTIONS") or 2)
SOAK_BATCH = int(ENV.get("SOAK_BATCH") or 16)
SOAK_WRITE_RATE = float(ENV.get("SOAK_WRITE_RATE") or 100)
SOAK_PROBE_INTERVAL_MS = int(ENV.get("SOAK_PROBE_INTERVAL_MS") or 100) if ENV.get("SOAK_PROBE_INTERVAL_MS") != "0" else 0
SOAK_PROBE_BOUND_MS = int(ENV.get("SOAK_PROBE_BOUND_MS") or 10000)
SOAK_PROBE_ROWS = 4


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def psql(sql, conninfo=None):
    out = subprocess.run([PSQL, "-X", "-qAt", "-v", "ON_ERROR_STOP=1", "-d", conninfo or CONNINFO, "-c", sql],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, shell=isinstance(cmd, str)).stdout.strip()
    except OSError:
        return None
