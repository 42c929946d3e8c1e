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
Standard library only.
"""
import json
import os
import platform
import re
import resource
import socket
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
GO_CLIENT = ENV.get("BENCH_GO_CLIENT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "go", "gobench"))
# soak: the hot standby bench/run started (empty / 0 without one)
STANDBY_CONNINFO = ENV.get("BENCH_STANDBY_CONNINFO", "")
STANDBY_RESP_PORT = int(ENV.get("BENCH_STANDBY_RESP_PORT") or 0)
STANDBY_PID = int(ENV.get("BENCH_STANDBY_PID") or 0)
MODE = ENV.get("BENCH_MODE", "all")


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
# the equivalent prepared SQL (the warm mode's samples, at READ COMMITTED, beside them)
SERIALIZABLE_PATHS = ["sql", "mget_json"]
ROWS = 4096
# redis-benchmark sends one fixed command (see rb_ids), so it runs only the modes whose keys do
# not change from request to request, and only the RESP paths
RB_MODES = ("warm", "miss")
RB_PATHS = ("resp", "redis")
# write mode: (path, variant). One random row per request: the prepared SQL UPDATE with the table
# cached and not cached, RESP SET of the row's JSON (as RESP_WRITER), redis-server SET of the same bytes.
WRITE_PATHS = [("update", "cache_enabled"), ("update", "cache_disabled"), ("resp_set", "cache_enabled"),
               ("redis_set", None)]
# the RESP role of bench/run (local_cache.resp_role) may only read; writes AUTH as this role
RESP_WRITER = ENV.get("BENCH_RESP_WRITER", "bench_writer")
RESP_WRITER_PASSWORD = ENV.get("BENCH_RESP_WRITER_PASSWORD", "bench")


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


class PeakMemory:
    """The peak RSS and PSS of pids, sampled every 0.25 s by a thread until stop()."""

    def __init__(self, pids):
        self.peak = [0, 0]
        self.done = threading.Event()

        def sample():
            while not self.done.is_set():
                rss, pss = memory(pids)
                self.peak = [max(self.peak[0], rss), max(self.peak[1], pss)]
                self.done.wait(0.25)

        self.thread = threading.Thread(target=sample, daemon=True)
        self.thread.start()

    def stop(self):
        """[peak RSS, peak PSS] in bytes."""
        self.done.set()
        self.thread.join()
        return self.peak


def memory_detail(pids):
    """{rss, pss, pss_anon, pss_shmem} in bytes, summed over pids: Pss_Anon is the processes' own
    (heap) memory, Pss_Shmem their share of shared memory (shared_buffers, the cache segment)."""
    fields = {"Rss:": "rss_bytes", "Pss:": "pss_bytes", "Pss_Anon:": "pss_anon_bytes", "Pss_Shmem:": "pss_shmem_bytes"}
    out = {v: 0 for v in fields.values()}
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    k = line.split(None, 1)[0]
                    if k in fields:
                        out[fields[k]] += int(line.split()[1]) * 1024
        except OSError:
            pass
    return out


def stats_global(conninfo=None):
    return json.loads(psql("SELECT row_to_json(s) FROM local_cache.stats_global s", conninfo))


def delta(a, b):
    return {k: b[k] - a[k] for k in b if isinstance(b.get(k), (int, float)) and isinstance(a.get(k), (int, float))}


# ------------------------------------------------------------------ clients

def client_cmd(client, sub, args):
    if client == "redis-benchmark":
        raise SystemExit("redis-benchmark has no check/run subcommands (see run_rb_sample)")
    if client == "native":
        return [LOADGEN, sub] + args
    if client == "node":
        return ["node", os.path.join(NODE_DIR, "client.js"), sub] + args
    if client == "go":
        return [GO_CLIENT, sub] + args
    raise SystemExit(f"unknown client {client}")


def common_args():
    return ["--pg", CONNINFO, "--resp-port", str(RESP_PORT), "--redis-port", str(REDIS_PORT),
            "--resp-user", RESP_WRITER, "--resp-password", RESP_WRITER_PASSWORD]


def run_check(client):
    if client == "redis-benchmark":
        return run_rb_check()
    log(f"correctness check, {client} client: every read path against prepared SQL, then RESP SET, "
        "SQL UPDATE and redis-server SET")
    p = subprocess.run(client_cmd(client, "check", common_args()), capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        raise RuntimeError(f"correctness check of the {client} client failed (exit {p.returncode}): the mismatches are listed above")
    return json.loads(p.stdout.strip().splitlines()[-1])


def prepare_table(spec):
    # Only the write mode's cache_disabled samples run without the cache; every other sample,
    # whatever the rotated order put before it, runs with the table enabled.
    if spec["mode"] == "write" and spec["variant"] == "cache_disabled":
        psql("SELECT local_cache.disable('public.items') WHERE EXISTS "
             "(SELECT FROM local_cache.tables WHERE relid = 'public.items'::regclass)")
    else:
        psql("SELECT local_cache.enable('public.items') WHERE NOT EXISTS "
             "(SELECT FROM local_cache.tables WHERE relid = 'public.items'::regclass)")
    if spec["mode"] == "cold":
        psql("SELECT local_cache.flush()")


def absent_per_request(spec):
    """Keys without a row per request (the miss mode), on average."""
    if spec["mode"] != "miss":
        return 0
    if spec["batch"] == 1:  # loadgen and node alternate; redis-benchmark asks the absent key
        return 1.0 if spec["client"] == "redis-benchmark" else 0.5
    return spec["batch"] // 2


def run_sample(spec):
    mode, client, path, conns, batch = spec["mode"], spec["client"], spec["path"], spec["connections"], spec["batch"]
    if client == "redis-benchmark":
        return run_rb_sample(spec)
    lg_mode = {"warm": "warm", "miss": "miss", "mixed": "mixed", "cold": "cold", "write": "write",
               "serializable": "serializable"}[mode]
    args = common_args() + ["--path", path, "--conns", str(conns), "--batch", str(batch),
                            "--seconds", str(DURATION), "--mode", lg_mode]
    if spec["keys"] != "int":  # the native client's other key types (other clients: int only)
        args += ["--keys", spec["keys"]]
    if spec.get("params", "text") != "text":  # the key types' samples: binary key arrays
        args += ["--params", spec["params"]]
    prepare_table(spec)
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
        peak_memory = PeakMemory(pids)
        proc.stdin.write("GO\n")
        proc.stdin.flush()
        line = proc.stdout.readline().strip()
        c1 = cpu_ticks(pids)
        peak = peak_memory.stop()
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
        "absent_keys_per_request": absent_per_request(spec),
        "client_cpu_s": res["client_cpu_s"], "client_cpu_us_per_req": res["client_cpu_s"] * 1e6 / n,
        "server_cpu_s": server_cpu, "server_cpu_us_per_req": server_cpu * 1e6 / n,
        "server_processes": len(pids), "server_rss_peak_bytes": peak[0], "server_pss_peak_bytes": peak[1],
        "cache_stats_before": s0, "cache_stats_after": s1, "cache_stats_delta": delta(s0, s1),
    })
    return sample


# ------------------------------------------------------------------ redis-benchmark

# BENCH_REDIS_BENCHMARK_CSV=1: parse `--csv` output (no p99.9) instead of the default output
RB_CSV = ENV.get("BENCH_REDIS_BENCHMARK_CSV", "0") == "1"


def rb_ids(mode, batch):
    """The ids of redis-benchmark's one fixed command. warm: 1..batch, like the other clients.
    miss: the keys of bench/loadgen.cpp's miss_keys (every other one absent: ROWS+1, ROWS+2, ...);
    one key cannot alternate in a fixed command, so batch 1 asks the absent id ROWS+1 every time."""
    if mode == "warm":
        return list(range(1, batch + 1))
    if mode == "miss":
        if batch == 1:
            return [ROWS + 1]
        return [i // 2 + 1 if i % 2 == 0 else ROWS + i // 2 + 1 for i in range(batch)]
    raise SystemExit(f"redis-benchmark has no {mode} mode")


def rb_keys(mode, batch, keys="int"):
    """The RESP keys of redis-benchmark's fixed command: public.items' of rb_ids, or a key type's
    (warm only) of rows 1..batch, spelled by bench/loadgen (`loadgen resp-keys`)."""
    if keys == "int":
        return [f"items:{i}" for i in rb_ids(mode, batch)]
    if mode != "warm":
        raise SystemExit(f"redis-benchmark reads {keys} keys in the warm mode only")
    return subprocess.run([LOADGEN, "resp-keys", "--keys", keys, "--batch", str(batch)], check=True,
                          capture_output=True, text=True).stdout.split()


def rb_command(mode, batch, keys="int"):
    resp_keys = rb_keys(mode, batch, keys)
    return ["GET"] + resp_keys if batch == 1 else ["MGET"] + resp_keys


def rows_by_resp_key(keys, resp_keys):
    """SQL's row_to_json of the rows named by resp_keys in the key type's table, by RESP key."""
    t = key_type_desc()[keys]
    parts = [f"replace(replace(t.{c['name']}::text, '\\', '\\\\'), ':', '\\:')" if len(t["columns"]) > 1
             else f"t.{c['name']}::text" for c in t["columns"]]
    key_sql = f"'{t['resp_prefix']}:' || " + " || ':' || ".join(parts)
    wanted = ",".join("'" + k.replace("'", "''") + "'" for k in resp_keys) or "NULL"
    return json.loads(psql(f"SELECT coalesce(json_object_agg(k, j), '{{}}') FROM (SELECT {key_sql} AS k, "
                           f"row_to_json(t)::text AS j FROM {t['table']} t) s WHERE k IN ({wanted})"))


_key_type_desc = {}


def key_type_desc():
    """`loadgen keys` of every key type, by name (tables, key columns, RESP prefix)."""
    if not _key_type_desc:
        out = subprocess.run([LOADGEN, "keys", "--keys", ",".join(["int"] + KEY_TYPES)], check=True,
                             capture_output=True, text=True).stdout
        _key_type_desc.update({t["name"]: t for t in json.loads(out)["key_types"]})
    return _key_type_desc


def rb_port(path):
    return RESP_PORT if path == "resp" else REDIS_PORT


class RespConn:
    """A minimal blocking RESP2 client (the redis-benchmark client's check)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def close(self):
        self.sock.close()

    def send(self, commands):
        out = []
        for args in commands:
            out.append(b"*%d\r\n" % len(args))
            for a in args:
                a = a.encode()
                out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))

    def _fill(self):
        d = self.sock.recv(65536)
        if not d:
            raise RuntimeError("RESP connection closed by the server")
        self.buf += d

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        i = self.buf.index(b"\r\n")
        line, self.buf = self.buf[:i], self.buf[i + 2:]
        return line

    def reply(self):
        """str for a bulk string, None for nil, a list for an array, ("+"|"-"|":", text) otherwise."""
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-", b":"):
            return (t.decode(), rest.decode(errors="replace"))
        n = int(rest)
        if t == b"$":
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            v, self.buf = self.buf[:n], self.buf[n + 2:]
            return v.decode(errors="replace")
        if t == b"*":
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RuntimeError(f"RESP protocol error: {line[:40]!r}")


def run_rb_check():
    """Sends both servers exactly the commands of the redis-benchmark samples, twice (the first
    may fill the cache, the second is answered from it) and pipelined as deep as the deepest
    -P, and compares every reply with SQL's row_to_json (nil for an id without a row)."""
    cases = sorted({(s["mode"], s["batch"], s["keys"]) for s in matrix() if s["client"] == "redis-benchmark"})
    log(f"correctness check, redis-benchmark client: its commands ({', '.join(sorted({m for m, _, _ in cases})) or 'none'}; "
        f"batches {','.join(map(str, BATCHES))}; key types {','.join(sorted({k for _, _, k in cases})) or 'none'}; "
        f"pipelined {max(PIPELINES)} deep) to the RESP port and redis-server against SQL")
    if sh([REDIS_BENCHMARK, "--version"]) is None:
        raise RuntimeError(f"{REDIS_BENCHMARK} not found (Debian's redis-tools)")
    commands = {case: rb_command(*case) for case in cases}
    want = {}
    for keys in {k for _, _, k in cases}:
        want.update(rows_by_resp_key(keys, sorted({k for (_, _, t), c in commands.items() if t == keys for k in c[1:]})))
    compared = mismatches = 0
    depth = max(PIPELINES)
    for path in RB_PATHS:
        conn = RespConn(rb_port(path))
        try:
            for (mode, b, keys), cmd in commands.items():
                expect = [want.get(k) for k in cmd[1:]]
                expect = expect[0] if b == 1 else expect
                for rnd in range(2):
                    conn.send([cmd] * depth)
                    for k in range(depth):
                        got = conn.reply()
                        compared += 1
                        if got != expect:
                            mismatches += 1
                            print(f"bench: redis-benchmark check: MISMATCH: {path} {mode} {' '.join(cmd)[:120]} "
                                  f"(round {rnd + 1}, reply {k + 1} of {depth}): got {str(got)[:300]}, expected "
                                  f"{str(expect)[:300]}", file=sys.stderr, flush=True)
        finally:
            conn.close()
    log(f"redis-benchmark check: {compared} comparisons, {mismatches} mismatches")
    if mismatches:
        raise RuntimeError("correctness check of the redis-benchmark client failed: the mismatches are listed above")
    return {"client": "redis-benchmark", "comparisons": compared, "mismatches": mismatches}


def parse_rb(text):
    """Figures of one redis-benchmark run (one test) from its default output, or with --csv from
    the CSV: rps, and latency in µs: avg, min, p50, p95, p99, max (and p999 from the default
    output's printed distribution: the smallest printed latency at or under which at least
    99.9% of the requests completed, an upper bound of the true p99.9)."""
    text = text.replace("\r", "\n")
    lat = {}
    if RB_CSV:
        import csv
        rows = [r for r in csv.reader(l for l in text.splitlines() if l.startswith('"'))]
        if len(rows) < 2 or rows[0][:2] != ["test", "rps"]:
            raise RuntimeError(f"no CSV in the redis-benchmark output: {text[-300:]!r}")
        row = dict(zip(rows[0], rows[-1]))
        rps = float(row["rps"])
        for k in ("avg", "min", "p50", "p95", "p99", "max"):
            lat[k] = round(float(row[f"{k}_latency_ms"]) * 1000, 3)
        return rps, None, lat
    m = re.search(r"throughput summary:\s*([0-9.]+) requests per second", text)
    ls = re.search(r"latency summary \(msec\):\s*\n\s*avg\s+min\s+p50\s+p95\s+p99\s+max\s*\n\s*([0-9.]+)\s+([0-9.]+)\s+"
                   r"([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", text)
    done = re.search(r"([0-9]+) requests completed in", text)
    if not (m and ls and done):
        raise RuntimeError(f"unexpected redis-benchmark output: {text[-400:]!r}")
    for k, v in zip(("avg", "min", "p50", "p95", "p99", "max"), ls.groups()):
        lat[k] = round(float(v) * 1000, 3)
    n = int(done.group(1))
    points = [(round(float(v) * 1000, 3), int(c)) for v, c in
              re.findall(r"^\s*[0-9.]+% <= ([0-9.]+) milliseconds \(cumulative count ([0-9]+)\)", text, re.M)]
    above = [v for v, c in points if c >= 0.999 * n]
    lat["p999"] = min(above) if above else None
    return float(m.group(1)), n, lat


def rb_exec(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(120, DURATION * 30), stdin=subprocess.DEVNULL)
    errors = [l for l in (p.stdout + "\n" + p.stderr).replace("\r", "\n").splitlines() if "error" in l.lower()]
    if p.returncode != 0 or errors:
        raise RuntimeError(f"redis-benchmark failed (exit {p.returncode}): {' | '.join(errors)[:400] or p.stderr[-400:]}")
    return p.stdout


def run_rb_sample(spec):
    mode, path, conns, batch, pipeline = (spec["mode"], spec["path"], spec["connections"], spec["batch"],
                                          spec["pipeline"])
    prepare_table(spec)
    command = rb_command(mode, batch, spec["keys"])

    def cmd(n):
        return ([REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", str(rb_port(path)), "-c", str(conns), "-n", str(n),
                 "-P", str(pipeline), "--precision", "3"] + (["--csv"] if RB_CSV else []) + command)

    # warm-up and rate estimate: every connection gets a few pipelines; grown until it lasts
    # long enough to say something about the rate
    n = max(2000, conns * 3 * pipeline)
    goal = min(0.1, DURATION / 4)
    for _ in range(4):
        rate, _, _ = parse_rb(rb_exec(cmd(n)))
        if n / rate >= goal:
            break
        n = int(n * goal / max(n / rate, 1e-3) * 1.5) + 1
    n_timed = max(conns * pipeline, int(rate * DURATION))

    s0 = stats_global()
    pids = server_pids(path)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    c0 = cpu_ticks(pids)
    peak_memory = PeakMemory(pids)
    t0 = time.monotonic()
    try:
        out = rb_exec(cmd(n_timed))
    finally:
        wall = time.monotonic() - t0
        c1 = cpu_ticks(pids)
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak = peak_memory.stop()
    s1 = stats_global()
    rps, completed, lat = parse_rb(out)
    requests = completed or n_timed
    client_cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    server_cpu = sum(t - c0.get(p, 0) for p, t in c1.items()) / CLK
    sample = dict(spec)
    sample.update({
        "requests": requests, "reads": requests, "updates": 0, "elapsed_s": requests / rps, "wall_s": wall,
        "rps": rps, "latency_us": lat, "client_threads": 1, "command": " ".join(command),
        "absent_keys_per_request": absent_per_request(spec),
        "client_cpu_s": client_cpu, "client_cpu_us_per_req": client_cpu * 1e6 / requests,
        "server_cpu_s": server_cpu, "server_cpu_us_per_req": server_cpu * 1e6 / requests,
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


def key_specs():
    """The warm reads of the key types (native client) and their int baseline, the SQL paths with
    binary key arrays: in the keys mode every path of int, in the warm mode int's SQL paths (the
    matrix has int's RESP samples, and its SQL ones with text key arrays). With redis-benchmark
    among the clients also its unpipelined MGET of every key type on both RESP servers (int's in
    the keys mode; the warm mode's matrix has them): RESP's cost per key without a client of ours."""
    if not KEY_TYPES:
        return []
    specs = []
    for keys in ["int"] + KEY_TYPES:
        paths = []
        if KEY_CLIENT in CLIENTS:
            paths += [(KEY_CLIENT, p) for p in (KEY_PATHS if keys != "int" or MODE == "keys" else KEY_SQL_PATHS)]
        if "redis-benchmark" in CLIENTS and (keys != "int" or MODE == "keys"):
            paths += [("redis-benchmark", p) for p in RB_PATHS]
        for client, path in paths:
            for conns in KEY_CONNECTIONS:
                for batch in BATCHES:
                    spec = {"mode": "warm", "client": client, "path": path, "connections": conns, "batch": batch,
                            "variant": None, "pipeline": 1, "keys": keys}
                    if path in KEY_SQL_PATHS:
                        spec["params"] = KEY_PARAMS
                    specs.append(spec)
    return specs


def matrix():
    modes = {"all": ["warm", "miss", "mixed", "cold", "write", "serializable"], "keys": ["warm"]}.get(MODE, [MODE])
    specs_by_rep = []
    for r in range(REPEATS):
        specs = []
        for mode in modes:
            group = []
            if mode == "write":
                for client in [c for c in CLIENTS if c != "redis-benchmark"]:
                    for conns in CONNECTIONS:
                        for path, variant in WRITE_PATHS:
                            group.append({"mode": mode, "client": client, "path": path, "connections": conns,
                                          "batch": 1, "variant": variant, "pipeline": 1, "keys": "int"})
            elif MODE == "keys":
                group = key_specs()
            else:
                paths = {"warm": READ_PATHS, "miss": MISS_PATHS, "serializable": SERIALIZABLE_PATHS}.get(mode, CACHE_PATHS)
                for client in CLIENTS:
                    rb = client == "redis-benchmark"
                    if rb and mode not in RB_MODES:
                        continue
                    if mode == "serializable" and client != "native":  # bench/loadgen's --mode only
                        continue
                    for path in paths:
                        if rb and path not in RB_PATHS:
                            continue
                        for conns in CONNECTIONS:
                            for batch in BATCHES:
                                for pipeline in (PIPELINES if rb else [1]):
                                    group.append({"mode": mode, "client": client, "path": path,
                                                  "connections": conns, "batch": batch, "variant": None,
                                                  "pipeline": pipeline, "keys": "int"})
                if mode == "warm":
                    group += key_specs()
            for s in group:
                s["repeat"] = r + 1
            specs += rotated(group, r)
        specs_by_rep.append(specs)
    return [s for rep in specs_by_rep for s in rep]


# ------------------------------------------------------------------ soak

SOAK_INTERVAL = float(ENV.get("SOAK_INTERVAL_SECONDS") or min(10.0, max(1.0, DURATION / 20)))
SOAK_CONNECTIONS = int(ENV.get("SOAK_CONNECTIONS") or 2)
SOAK_BATCH = int(ENV.get("SOAK_BATCH") or 16)
SOAK_WRITE_RATE = float(ENV.get("SOAK_WRITE_RATE") or 100)
SOAK_PROBE_INTERVAL_MS = int(ENV.get("SOAK_PROBE_INTERVAL_MS") or 100) if ENV.get("SOAK_PROBE_INTERVAL_MS") != "0" else 0
SOAK_PROBE_BOUND_MS = int(ENV.get("SOAK_PROBE_BOUND_MS") or 10000)
SOAK_PROBE_ROWS = 4


def run_standby_check():
    """The native client's read check against the standby: mget, mget_json, the FDW and RESP
    on the standby against prepared SQL on the standby (no writes: a standby is read-only)."""
    log("correctness check, native client, on the standby: every read path against prepared SQL there")
    p = subprocess.run([LOADGEN, "check", "--pg", STANDBY_CONNINFO, "--resp-port", str(STANDBY_RESP_PORT),
                        "--redis-port", "0"], capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        raise RuntimeError(f"correctness check on the standby failed (exit {p.returncode}): the mismatches are listed above")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["server"] = "standby"
    return res


def server_groups():
    """name -> pids of every server the soak samples (recomputed at every point: backends and
    autovacuum workers come and go)."""
    g = {"primary": children(PG_PID), "redis": [REDIS_PID]}
    if STANDBY_PID:
        g["standby"] = children(STANDBY_PID)
    return g


def run_soak(doc, save):
    standby = bool(STANDBY_CONNINFO)
    probes = SOAK_PROBE_INTERVAL_MS > 0
    soak = doc["soak"] = {
        "duration_seconds": DURATION, "interval_seconds": SOAK_INTERVAL, "connections_per_read_path": SOAK_CONNECTIONS,
        "batch": SOAK_BATCH, "write_rate_per_path": SOAK_WRITE_RATE, "standby": standby,
        "read_paths": ["mget", "fdw", "resp", "redis"], "write_paths": ["update", "resp_set", "redis_set"],
        "probe_interval_ms": SOAK_PROBE_INTERVAL_MS, "probe_bound_ms": SOAK_PROBE_BOUND_MS, "probe_rows": SOAK_PROBE_ROWS,
        "series": [], "stale_probes": None,
    }
    args = common_args() + ["--conns", str(SOAK_CONNECTIONS), "--batch", str(SOAK_BATCH), "--seconds", str(DURATION),
                            "--interval", str(SOAK_INTERVAL), "--write-rate", str(SOAK_WRITE_RATE),
                            "--probe-interval-ms", str(SOAK_PROBE_INTERVAL_MS), "--probe-bound-ms", str(SOAK_PROBE_BOUND_MS),
                            "--probe-rows", str(SOAK_PROBE_ROWS)]
    if standby:
        args += ["--standby-pg", STANDBY_CONNINFO, "--standby-resp-port", str(STANDBY_RESP_PORT)]
    log(f"soak: {DURATION:g}s, a point every {SOAK_INTERVAL:g}s; reads mget, FDW, RESP, redis-server "
        f"({SOAK_CONNECTIONS} connections each, {SOAK_BATCH} keys); writes SQL UPDATE, RESP SET, redis-server SET "
        f"({SOAK_WRITE_RATE:g}/s each); stale probes "
        + (f"every {SOAK_PROBE_INTERVAL_MS} ms on the primary" + (" and the standby" if standby else "") if probes else "off"))
    proc = subprocess.Popen([LOADGEN, "soak"] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr,
                            text=True, bufsize=1)
    final = None
    try:
        line = proc.stdout.readline().strip()
        if line != "READY":
            raise RuntimeError(f"loadgen soak did not get ready ({line!r}, exit {proc.wait()})")
        soak["cache_stats_before"] = stats_global()
        if standby:
            soak["standby_cache_stats_before"] = stats_global(STANDBY_CONNINFO)
        groups = server_groups()
        ticks = {name: cpu_ticks(pids) for name, pids in groups.items()}
        proc.stdin.write("GO\n")
        proc.stdin.flush()
        for line in proc.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            point = json.loads(line)
            if point.get("final"):
                final = point
                break
            groups = server_groups()
            servers = {}
            for name, pids in groups.items():
                now = cpu_ticks(pids)
                prev = ticks.get(name, {})
                cpu = sum(t - prev.get(p, 0) for p, t in now.items()) / CLK
                servers[name] = {"cpu_s": cpu, "cpu_percent": 100 * cpu / max(point["interval_s"], 1e-9),
                                 "processes": len(now), **memory_detail(pids)}
                ticks[name] = now
            point["servers"] = servers
            point["client_cpu_percent"] = 100 * point["client_cpu_s"] / max(point["interval_s"], 1e-9)
            soak["series"].append(point)
            save()
            pr = point.get("probes") or {}
            log(f"soak t={point['t']:.0f}s: " + ", ".join(
                f"{p} {v['rps']:.0f}/s p99 {v['p99_us']}us" for p, v in point["paths"].items())
                + f"; PSS primary {servers['primary']['pss_bytes'] / 2**20:.0f} MiB "
                  f"(anon {servers['primary']['pss_anon_bytes'] / 2**20:.1f})"
                + (f", standby {servers['standby']['pss_bytes'] / 2**20:.0f} MiB" if "standby" in servers else "")
                + (f"; probes {pr.get('probes')}, stale {pr.get('primary_stale')}/{pr.get('standby_stale')}, "
                   f"standby delay p50 {pr.get('standby_delay_us', {}).get('p50')}us" if pr else ""))
        soak["cache_stats_after"] = stats_global()
        if standby:
            soak["standby_cache_stats_after"] = stats_global(STANDBY_CONNINFO)
        if proc.poll() is None:
            proc.stdin.write("CLOSE\n")
            proc.stdin.flush()
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if final is None:
        raise RuntimeError(f"loadgen soak ended without its final line (exit {rc})")
    soak["elapsed_s"] = final["elapsed_s"]
    soak["client_cpu_s"] = final["client_cpu_s"]
    soak["requests"] = final["requests"]
    soak["stale_probes"] = final.get("stale_probes")
    save()
    if final.get("error"):
        raise RuntimeError(f"loadgen soak failed: {final['error']}")
    sp = soak["stale_probes"]
    if sp:
        pr, sb = sp["primary"], sp.get("standby") or {}
        bad = {"stale on the primary": pr["stale"], "wrong on the primary": pr["wrong"],
               "stale on the standby": sb.get("stale", 0), "wrong on the standby": sb.get("wrong", 0),
               "not visible on the standby within the bound": sb.get("not_visible_within_bound", 0)}
        log(f"stale probes: {sp['probes']} probes; primary {pr['observations']} observations, {pr['stale']} stale, "
            f"{pr['wrong']} wrong" + (f"; standby {sb['observations']} observations, {sb['stale']} stale, {sb['wrong']} wrong, "
                                      f"{sb['not_visible_within_bound']} not visible within {sb['bound_ms']} ms, delay "
                                      f"p50/p99/max {sb['delay_all_paths_us']['p50']}/{sb['delay_all_paths_us']['p99']}/"
                                      f"{sb['delay_all_paths_us']['max']} us" if sb else ""))
        if any(bad.values()):
            for e in sp.get("events", []):
                log(f"stale probe event: {json.dumps(e)}")
            raise RuntimeError("stale probes: " + ", ".join(f"{n} {k}" for k, n in bad.items() if n)
                               + " (events above and in soak.stale_probes.events)")
    if rc != 0:
        raise RuntimeError(f"loadgen soak exited {rc}")


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
            "redis_benchmark": sh([REDIS_BENCHMARK, "--version"]) if "redis-benchmark" in CLIENTS else None,
            "node": sh(["node", "--version"]),
            "node_pg": pkg_version("pg"), "node_redis": pkg_version("redis"),
            "go": sh(["go", "version"]) if "go" in CLIENTS + CHECK_CLIENTS else None,
            "go_pgx": sh(["dpkg-query", "-W", "-f=${Version}", "golang-github-jackc-pgx-v4-dev"])
            if "go" in CLIENTS + CHECK_CLIENTS else None,
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
                   "pipelines": PIPELINES if "redis-benchmark" in CLIENTS else [1],
                   "repeats": REPEATS, "duration_seconds": DURATION, "rows": ROWS, "value_bytes": 128,
                   "hot_rows": 128, "update_percent": 5, "resp_writer_role": RESP_WRITER,
                   "key_types": KEY_TYPES, "key_connections": KEY_CONNECTIONS, "key_paths": KEY_PATHS,
                   "key_client": KEY_CLIENT, "key_params": KEY_PARAMS, "key_sql_paths": KEY_SQL_PATHS,
                   "key_rows_same_size": True,
                   "server": {"max_connections": 300, "shared_buffers": "128MB", "local_cache.memory": "384MB",
                              "local_cache.resp_workers": psql("SHOW local_cache.resp_workers"),
                              "resp_workers_running": int(psql("SELECT count(*) FROM pg_stat_activity WHERE "
                                                               "backend_type = 'local_cache RESP worker'")),
                              "data_directory": "tmpfs (/dev/shm)", "fsync": "off",
                              "synchronous_commit": psql("SHOW synchronous_commit")}},
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
        if MODE == "soak":
            if STANDBY_CONNINFO:
                doc["checks"].append(run_standby_check())
                save()
            run_soak(doc, save)
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
            s = run_sample(spec)
            doc["samples"].append(s)
            save()
            log(f"[{i}/{len(specs)}] {s['mode']} {s['client']} {s['path']}{' ' + s['variant'] if s['variant'] else ''}"
                f"{' keys=' + s['keys'] if s['keys'] != 'int' else ''}"
                f"{' params=' + s['params'] if s.get('params', 'text') != 'text' else ''} "
                f"c={s['connections']} b={s['batch']}{' P=%d' % s['pipeline'] if s.get('pipeline', 1) != 1 else ''}: "
                f"{s['rps']:.0f} req/s, p99 {s['latency_us']['p99']:.0f} us, "
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
