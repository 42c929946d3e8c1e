#!/usr/bin/env python3
"""bench/driver.py: runs the benchmark matrix for bench/run (which sets up the servers).

Reads its settings from the environment (see bench/run), runs the correctness checks of every
client, then every sample: starts a client (`loadgen run` or `node client.js run`), waits for
READY, reads the server's CPU counters and cache counters, says GO, samples server memory while
the client runs, reads its result line, reads the counters again, lets the client disconnect.
After every sample it rewrites BENCH_STATE (the JSON document, "partial": true until the end).

The go client (bench/go/gobench) speaks the same protocol as loadgen and node.

Key types: every sample has "keys", the type of its table's primary key (bench/loadgen --keys):
"int" (public.items, bigint; every client), and for the native client (every path) and
redis-benchmark (unpipelined GET/MGET of rows 1..N on both RESP servers) "uuid", "text" and
"pair" (public.items_uuid, public.items_text, public.items_pair: the same rows under other keys).
The warm mode (and all) adds those warm reads at one connection count (KEY_CONNECTIONS) and
every batch, with the control path "parse" (mget's key array alone); their SQL paths (sql, mget,
mget_json, fdw, parse) send the key arrays as binary parameters (`loadgen run --params binary`,
the samples' "params": "binary"), int's too: the warm mode adds int's binary SQL paths beside the
matrix's text ones (int's RESP samples of the matrix are the RESP baseline); the keys mode (bench/run
keys) runs every key type's paths, int included, and nothing else. Samples without "params" send
text. doc["key_types"] describes the types (`loadgen keys`: tables, statements, parameters).

The soak mode (bench/run soak) runs the native client's `loadgen soak` instead of the matrix: every
path at once for DURATION_SECONDS with stale probes on the primary and the hot standby bench/run
started; at each interval line of the client it reads server CPU and PSS of the PostgreSQL
processes (primary, standby) and of redis-server from /proc and appends a point to
doc["soak"]["series"].

The redis-benchmark client (CLIENTS=redis-benchmark) has no READY/GO protocol: a short run of
the same command warms the connections and estimates the rate, then the timed run gets as many
requests as that rate does in DURATION_SECONDS; server CPU and cache counters are read just
before it starts and just after it exits. Its check (a RESP client of this file) sends exactly
the commands the samples send to both servers and compares the replies with SQL.

The tracking mode (bench/run tracking) runs bench/node/tracking.js instead of the matrix: the
invalidation delay of CLIENT TRACKING and reads through node-redis's client-side cache against
plain GETs (driver_lib/tracking.py), in doc["tracking"].

The tail mode (bench/run tail) runs the warm and write modes' matrix at 64 connections with every
client; its RESP samples run twice, with the batching pause and without it (variant "no_pause",
driver_lib/batching.py), and each sample records the pauses the workers took ("batch_pauses").

With a baseline build (BENCH_BASELINE_DIR), each round of the tail mode also runs the samples of
every client but redis-benchmark, with the pause, on that build, in a block of their own ("build":
"baseline"; driver_lib/builds.py installs one build or the other and restarts the cluster between
blocks): the "no loss" check in one sitting.

The cluster mode (bench/run cluster) runs bench/node/cluster.js, a Redis Cluster client, through the
primary and two hot standbys against the primary alone, and times WAIT (driver_lib/cluster.py), in
doc["cluster"].

The tls mode (bench/run tls) runs redis-benchmark alone against both RESP servers with TLS and in
plaintext, alternating blocks; our server restarts between them (driver_lib/tls.py), and each
state is checked before its first sample.
Standard library only.
"""
import json
import os
import platform
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (bench/run runs as root)

from driver_lib import batching, builds, clients, redis_benchmark, tls  # noqa: E402
from driver_lib.env import (BASELINE_DIR, BATCHES, BUILDS_DIR, CHECK_CLIENTS, CLIENTS, CONNECTIONS, DURATION, ENV, KEY_CLIENT,  # noqa: E402
                            KEY_CONNECTIONS, KEY_PARAMS, KEY_PATHS, KEY_SQL_PATHS, KEY_TYPES, LOADGEN, MODE, NODE_DIR,
                            PIPELINES, REDIS_BENCHMARK, REPEATS, RESP_WRITER, ROWS, STANDBY_CONNINFO, STATE, log, psql,
                            sh)
from driver_lib.matrix import matrix  # noqa: E402
from driver_lib.soak import run_soak, run_standby_check  # noqa: E402
from driver_lib.tracking import run_tracking  # noqa: E402
from driver_lib.profile import run_profile  # noqa: E402
from driver_lib.stall import run_stall  # noqa: E402
from driver_lib.cluster import run_cluster  # noqa: E402
from driver_lib.bulk import run_bulk  # noqa: E402


def run_check(client):
    """The client's correctness check; its result for doc["checks"]."""
    if client == "redis-benchmark":  # bench/run starts the tls mode's servers with TLS on
        return redis_benchmark.run_rb_check(tls=MODE == "tls")
    return clients.run_check(client)


def run_sample(spec):
    """One sample of the matrix; its result for doc["samples"]."""
    if spec["client"] == "redis-benchmark":
        return redis_benchmark.run_rb_sample(spec)
    return clients.run_sample(spec)


def environment():
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    def pkg_version(name):
        try:
            with open(os.path.join(NODE_DIR, "node_modules", name, "package.json")) as f:
                return json.load(f)["version"]
        except OSError:
            return None
    bench_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = ENV.get("BENCH_EXTENSION_DIR") or bench_root  # the extension measured (bench/run)
    return {
        "machine": {"cpu_model": cpu, "cores": os.cpu_count(), "memory_bytes": mem, "kernel": platform.release(),
                    "os": sh("sh -c '. /etc/os-release && echo $PRETTY_NAME'")},
        "versions": {
            "postgresql": psql("SELECT version()"),
            "local_cache": psql("SELECT extversion FROM pg_extension WHERE extname = 'local_cache'"),
            "libpq": sh(["pg_config", "--version"]),
            "redis_server": sh(["redis-server", "--version"]),
            "redis_benchmark": sh([REDIS_BENCHMARK, "--version"]) if "redis-benchmark" in CLIENTS else None,
            "node": sh(["node", "--version"]),
            "node_pg": pkg_version("pg"), "node_redis": pkg_version("redis"),
            "node_redis6": pkg_version("redis6"),
            "go": sh(["go", "version"]) if "go" in CLIENTS + CHECK_CLIENTS else None,
            "go_pgx": sh(["dpkg-query", "-W", "-f=${Version}", "golang-github-jackc-pgx-v4-dev"])
            if "go" in CLIENTS + CHECK_CLIENTS else None,
            "gxx": (sh(["g++", "--version"]) or "").splitlines()[0] if sh(["g++", "--version"]) else None,
            "python": platform.python_version(),
        },
        "git": {"head": sh(["git", "-C", root, "rev-parse", "HEAD"]),
                "dirty": bool(sh(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"]))}
        | ({} if root == bench_root else {"bench_head": sh(["git", "-C", bench_root, "rev-parse", "HEAD"])})
        | ({"baseline": sh(["git", "-C", BASELINE_DIR, "rev-parse", "HEAD"]),
            "baseline_dirty": bool(sh(["git", "-C", BASELINE_DIR, "status", "--porcelain", "--untracked-files=no"]))}
           if BUILDS_DIR else {}),
    }


def main():
    doc = {
        "format": "local_cache-bench/1", "partial": True, "error": None,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": ENV.get("BENCH_COMMAND", ""),
        "config": {"mode": MODE, "clients": CLIENTS, "connections": CONNECTIONS, "batches": BATCHES,
                   "pipelines": PIPELINES if "redis-benchmark" in CLIENTS else [1],
                   "repeats": REPEATS, "duration_seconds": DURATION, "rows": ROWS, "value_bytes": 128,
                   "hot_rows": 128, "update_percent": 5, "resp_writer_role": RESP_WRITER,
                   "write_multi_rows": 16,
                   "key_types": KEY_TYPES, "key_connections": KEY_CONNECTIONS, "key_paths": KEY_PATHS,
                   "key_client": KEY_CLIENT, "key_params": KEY_PARAMS, "key_sql_paths": KEY_SQL_PATHS,
                   "key_rows_same_size": True, "write_tables_rewritten": True,
                   "server": {"max_connections": 300, "shared_buffers": "128MB", "local_cache.memory": "384MB",
                              "local_cache.resp_workers": psql("SHOW local_cache.resp_workers"),
                              "resp_workers_running": int(psql("SELECT count(*) FROM pg_stat_activity WHERE "
                                                               "backend_type = 'local_cache RESP worker'")),
                              "data_directory": "tmpfs (/dev/shm)", "fsync": "off",
                              "synchronous_commit": psql("SHOW synchronous_commit"),
                              "huge_pages": psql("SHOW huge_pages")}},
        "checks": [], "samples": [],
    }

    def save():
        tmp = STATE + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, STATE)

    try:
        doc.update(environment())
        if MODE == "tls":
            doc["config"]["tls"] = tls.describe()
        save()
        for client in CHECK_CLIENTS:
            doc["checks"].append(run_check(client))
            save()
        if MODE == "soak":
            if STANDBY_CONNINFO:
                doc["checks"].append(run_standby_check())
                save()
            run_soak(doc, save)
            doc["partial"] = False
            doc["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            save()
            return 0
        if MODE in ("tracking", "profile", "stall", "cluster", "bulk"):
            {"tracking": run_tracking, "profile": run_profile, "stall": run_stall, "cluster": run_cluster,
             "bulk": run_bulk}[MODE](doc, save)
            doc["partial"] = False
            doc["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            save()
            return 0
        specs = matrix()
        kinds = sorted({s["keys"] for s in specs} - {"int"})
        if kinds:  # what the key types are: tables, statements, parameters
            doc["key_types"] = json.loads(subprocess.run([LOADGEN, "keys"], check=True, capture_output=True,
                                                         text=True).stdout)["key_types"]
        log(f"{len(specs)} samples of {DURATION:g}s ({MODE}; clients {','.join(CLIENTS)}; connections "
            f"{','.join(map(str, CONNECTIONS))}; batches {','.join(map(str, BATCHES))}; repeats {REPEATS}"
            + (f"; key types {','.join(kinds)}, {','.join(map(str, KEY_CONNECTIONS))} connections" if kinds else "")
            + ")")
        for i, spec in enumerate(specs, 1):
            if spec["mode"] == "tls":
                tls.switch(doc, spec)
            if BUILDS_DIR:
                builds.switch(spec)
            s = batching.run_sample(spec, run_sample) if MODE == "tail" else run_sample(spec)
            if "build" in spec:
                s["build"] = spec["build"]
            doc["samples"].append(s)
            save()
            log(f"[{i}/{len(specs)}] {s['mode']} {s['client']} {s['path']}{' ' + s['variant'] if s['variant'] else ''}"
                f"{' (' + s['build'] + ' build)' if 'build' in s else ''}"
                f"{' keys=' + s['keys'] if s['keys'] != 'int' else ''}"
                f"{' params=' + s['params'] if s.get('params', 'text') != 'text' else ''} "
                f"c={s['connections']} b={s['batch']}{' P=%d' % s['pipeline'] if s.get('pipeline', 1) != 1 else ''}: "
                f"{s['rps']:.0f} req/s, p99 {s['latency_us']['p99']:.0f} us, "
                f"server {s['server_cpu_us_per_req']:.1f} us/req, client {s['client_cpu_us_per_req']:.1f} us/req")
        if MODE in ("all", "write", "tail"):
            psql("SELECT local_cache.enable('public.items') WHERE NOT EXISTS "
                 "(SELECT FROM local_cache.tables WHERE relid = 'public.items'::regclass)")
        doc["partial"] = False
    except BaseException as e:  # keep the completed samples; the report refuses partial documents
        doc["error"] = f"{type(e).__name__}: {e}"
        log(f"FAILED: {doc['error']}")
        save()
        return 1
    doc["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
