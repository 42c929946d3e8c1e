#!/usr/bin/env python3
"""bench/driver.py: runs the benchmark matrix for bench/run (which sets up the servers).

Reads its settings from the environment (see bench/run), runs the correctness checks of every
client, then every sample: starts a client (`loadgen run` or `node client.js run`), waits for
READY, reads the server's CPU counters and cache counters, says GO, samples server memory while
the client runs, reads its result line, reads the counters again, lets the client disconnect.
After every sample it rewrites BENCH_STATE (the JSON document, "partial": true until the end).
Standard library only.
"""
import json
import os
import platform
import subprocess
import sys
import threading
import time

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
MODE = ENV.get("BENCH_MODE", "all")


def int_list(name, default):
    return [int(x) for x in ENV.get(name, default).replace(" ", "").split(",") if x]


CLIENTS = [x for x in ENV.get("CLIENTS", "native,node").replace(" ", "").split(",") if x]
CONNECTIONS = int_list("CONNECTIONS", "4,64,256")
BATCHES = int_list("BATCHES", "1,16,64")
REPEATS = int(ENV.get("REPEATS", "3"))
DURATION = float(ENV.get("DURATION_SECONDS", "5"))
CHECK_CLIENTS = [x for x in ENV.get("BENCH_CHECK_CLIENTS", ",".join(CLIENTS)).split(",") if x]

READ_PATHS = ["sql", "mget", "mget_json", "fdw", "resp", "redis"]
CACHE_PATHS = ["sql", "mget", "mget_json", "fdw", "resp"]  # paths that see SQL updates / flushes
# write mode: (path, variant). One random row per request: the prepared SQL UPDATE with the table
# cached and not cached, RESP SET of the row's JSON (as RESP_WRITER), redis-server SET of the same bytes.
WRITE_PATHS = [("update", "cache_enabled"), ("update", "cache_disabled"), ("resp_set", "cache_enabled"),
               ("redis_set", None)]
# the RESP role of bench/run (local_cache.resp_role) may only read; writes AUTH as this role
RESP_WRITER = ENV.get("BENCH_RESP_WRITER", "bench_writer")
RESP_WRITER_PASSWORD = ENV.get("BENCH_RESP_WRITER_PASSWORD", "bench")


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def psql(sql):
    out = subprocess.run([PSQL, "-X", "-qAt", "-v", "ON_ERROR_STOP=1", "-d", CONNINFO, "-c", sql],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, shell=isinstance(cmd, str)).stdout.strip()
    except OSError:
        return None


# ------------------------------------------------------------------ /proc

def children(ppid):
    pids = [ppid]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    st = f.read()
                if int(st[st.rindex(")") + 2:].split()[1]) == ppid:
                    pids.append(int(d))
            except (OSError, ValueError):
                pass
    return pids


def server_pids(path):
    return [REDIS_PID] if path in ("redis", "redis_set") else children(PG_PID)


def cpu_ticks(pids):
    out = {}
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read()
            fields = st[st.rindex(")") + 2:].split()
            out[p] = int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, ValueError):
            pass
    return out


def memory(pids):
    rss = pss = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1]) * 1024
        except OSError:
            pass
    return rss, pss


def stats_global():
    return json.loads(psql("SELECT row_to_json(s) FROM local_cache.stats_global s"))


def delta(a, b):
    return {k: b[k] - a[k] for k in b if isinstance(b.get(k), (int, float)) and isinstance(a.get(k), (int, float))}


# ------------------------------------------------------------------ clients

def client_cmd(client, sub, args):
    if client == "native":
        return [LOADGEN, sub] + args
    if client == "node":
        return ["node", os.path.join(NODE_DIR, "client.js"), sub] + args
    raise SystemExit(f"unknown client {client}")


def common_args():
    return ["--pg", CONNINFO, "--resp-port", str(RESP_PORT), "--redis-port", str(REDIS_PORT),
            "--resp-user", RESP_WRITER, "--resp-password", RESP_WRITER_PASSWORD]


def run_check(client):
    log(f"correctness check, {client} client: every read path against prepared SQL, then RESP SET, "
        "SQL UPDATE and redis-server SET")
    p = subprocess.run(client_cmd(client, "check", common_args()), capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        raise RuntimeError(f"correctness check of the {client} client failed (exit {p.returncode}): the mismatches are listed above")
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_sample(spec):
    mode, client, path, conns, batch = spec["mode"], spec["client"], spec["path"], spec["connections"], spec["batch"]
    lg_mode = {"warm": "warm", "mixed": "mixed", "cold": "cold", "write": "write"}[mode]
    args = common_args() + ["--path", path, "--conns", str(conns), "--batch", str(batch),
                            "--seconds", str(DURATION), "--mode", lg_mode]
    # Only the write mode's cache_disabled samples run without the cache; every other sample,
    # whatever the rotated order put before it, runs with the table enabled.
    if mode == "write" and spec["variant"] == "cache_disabled":
        psql("SELECT local_cache.disable('public.items') WHERE EXISTS "
             "(SELECT FROM local_cache.tables WHERE relid = 'public.items'::regclass)")
    else:
        psql("SELECT local_cache.enable('public.items') WHERE NOT EXISTS "
             "(SELECT FROM local_cache.tables WHERE relid = 'public.items'::regclass)")
    if mode == "cold":
        psql("SELECT local_cache.flush()")
    proc = subprocess.Popen(client_cmd(client, "run", args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=sys.stderr, text=True, bufsize=1)
    try:
        line = proc.stdout.readline().strip()
        if line != "READY":
            raise RuntimeError(f"{client} client did not get ready ({line!r}, exit {proc.wait()})")
        if mode == "cold":  # the warm-up of the connections filled some entries: flush again
            psql("SELECT local_cache.flush()")
        s0 = stats_global()
        pids = server_pids(path)
        c0 = cpu_ticks(pids)
        peak = [0, 0]
        done = threading.Event()

        def sampler():
            while not done.is_set():
                rss, pss = memory(pids)
                peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)
                done.wait(0.25)

        th = threading.Thread(target=sampler, daemon=True)
        th.start()
        proc.stdin.write("GO\n")
        proc.stdin.flush()
        line = proc.stdout.readline().strip()
        c1 = cpu_ticks(pids)
        done.set()
        th.join()
        if not line.startswith("{"):
            raise RuntimeError(f"{client} client failed during the sample (exit {proc.wait()})")
        res = json.loads(line)
        s1 = stats_global()
        proc.stdin.write("CLOSE\n")
        proc.stdin.flush()
        rc = proc.wait(timeout=120)
        if rc != 0:
            raise RuntimeError(f"{client} client exited {rc}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    server_cpu = sum(t - c0.get(p, 0) for p, t in c1.items()) / CLK
    n = max(res["requests"], 1)
    sample = dict(spec)
    sample.update({
        "requests": res["requests"], "reads": res["reads"], "updates": res["updates"],
        "elapsed_s": res["elapsed_s"], "rps": res["requests"] / res["elapsed_s"],
        "latency_us": res["latency_us"], "client_threads": res["threads"],
        "client_cpu_s": res["client_cpu_s"], "client_cpu_us_per_req": res["client_cpu_s"] * 1e6 / n,
        "server_cpu_s": server_cpu, "server_cpu_us_per_req": server_cpu * 1e6 / n,
        "server_processes": len(pids), "server_rss_peak_bytes": peak[0], "server_pss_peak_bytes": peak[1],
        "cache_stats_before": s0, "cache_stats_after": s1, "cache_stats_delta": delta(s0, s1),
    })
    return sample


# ------------------------------------------------------------------ matrix

def rotated(lst, r):
    if not lst or REPEATS <= 1:
        return lst
    k = (r * len(lst)) // REPEATS
    return lst[k:] + lst[:k]


def matrix():
    modes = ["warm", "mixed", "cold", "write"] if MODE == "all" else [MODE]
    specs_by_rep = []
    for r in range(REPEATS):
        specs = []
        for mode in modes:
            group = []
            if mode == "write":
                for client in CLIENTS:
                    for conns in CONNECTIONS:
                        for path, variant in WRITE_PATHS:
                            group.append({"mode": mode, "client": client, "path": path, "connections": conns,
                                          "batch": 1, "variant": variant})
            else:
                paths = READ_PATHS if mode == "warm" else CACHE_PATHS
                for client in CLIENTS:
                    for path in paths:
                        for conns in CONNECTIONS:
                            for batch in BATCHES:
                                group.append({"mode": mode, "client": client, "path": path, "connections": conns,
                                              "batch": batch, "variant": None})
            for s in group:
                s["repeat"] = r + 1
            specs += rotated(group, r)
        specs_by_rep.append(specs)
    return [s for rep in specs_by_rep for s in rep]


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
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return {
        "machine": {"cpu_model": cpu, "cores": os.cpu_count(), "memory_bytes": mem, "kernel": platform.release(),
                    "os": sh("sh -c '. /etc/os-release && echo $PRETTY_NAME'")},
        "versions": {
            "postgresql": psql("SELECT version()"),
            "local_cache": psql("SELECT extversion FROM pg_extension WHERE extname = 'local_cache'"),
            "libpq": sh(["pg_config", "--version"]),
            "redis_server": sh(["redis-server", "--version"]),
            "node": sh(["node", "--version"]),
            "node_pg": pkg_version("pg"), "node_redis": pkg_version("redis"),
            "gxx": (sh(["g++", "--version"]) or "").splitlines()[0] if sh(["g++", "--version"]) else None,
            "python": platform.python_version(),
        },
        "git": {"head": sh(["git", "-C", root, "rev-parse", "HEAD"]),
                "dirty": bool(sh(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"]))},
    }


def main():
    doc = {
        "format": "local_cache-bench/1", "partial": True, "error": None,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": ENV.get("BENCH_COMMAND", ""),
        "config": {"mode": MODE, "clients": CLIENTS, "connections": CONNECTIONS, "batches": BATCHES,
                   "repeats": REPEATS, "duration_seconds": DURATION, "rows": 4096, "value_bytes": 128,
                   "hot_rows": 128, "update_percent": 5, "resp_writer_role": RESP_WRITER,
                   "server": {"max_connections": 300, "shared_buffers": "128MB", "local_cache.memory": "384MB",
                              "local_cache.resp_workers": psql("SHOW local_cache.resp_workers"),
                              "data_directory": "tmpfs (/dev/shm)", "fsync": "off", "synchronous_commit": "off"}},
        "checks": [], "samples": [],
    }

    def save():
        tmp = STATE + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, STATE)

    try:
        doc.update(environment())
        save()
        for client in CHECK_CLIENTS:
            doc["checks"].append(run_check(client))
            save()
        specs = matrix()
        log(f"{len(specs)} samples of {DURATION:g}s ({MODE}; clients {','.join(CLIENTS)}; connections "
            f"{','.join(map(str, CONNECTIONS))}; batches {','.join(map(str, BATCHES))}; repeats {REPEATS})")
        for i, spec in enumerate(specs, 1):
            s = run_sample(spec)
            doc["samples"].append(s)
            save()
            log(f"[{i}/{len(specs)}] {s['mode']} {s['client']} {s['path']}{' ' + s['variant'] if s['variant'] else ''} "
                f"c={s['connections']} b={s['batch']}: {s['rps']:.0f} req/s, p99 {s['latency_us']['p99']:.0f} us, "
                f"server {s['server_cpu_us_per_req']:.1f} us/req, client {s['client_cpu_us_per_req']:.1f} us/req")
        if MODE in ("all", "write"):
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
