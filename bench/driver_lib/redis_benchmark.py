"""bench/driver_lib/redis_benchmark.py: Debian's redis-benchmark as a client: its fixed commands,
their check against SQL (through a minimal RESP2 client), parsing its output, and one sample; with
TLS (the tls mode's "tls" samples) both servers' TLS ports and redis-benchmark's --tls."""
import json
import re
import resource
import socket
import ssl
import subprocess
import sys
import time

from driver_lib.env import (BATCHES, CLK, DURATION, KEY_TYPES, LOADGEN, PIPELINES, RB_CSV, RB_PATHS, REDIS_BENCHMARK,
                            REDIS_PORT, REDIS_TLS_PORT, RESP_PORT, ROWS, TLS_CA, log, psql, sh)
from driver_lib.measure import PeakMemory, cpu_ticks, delta, server_pids, stats_global
from driver_lib.clients import absent_per_request, prepare_table
from driver_lib.matrix import matrix


def rb_ids(mode, batch):
    """The ids of redis-benchmark's one fixed command. warm: 1..batch, like the other clients.
    miss: the keys of bench/loadgen_keys.cpp's miss_keys (every other one absent: ROWS+1, ROWS+2, ...);
    one key cannot alternate in a fixed command, so batch 1 asks the absent id ROWS+1 every time."""
    if mode in ("warm", "tls", "profile"):
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


def rb_port(path, tls=False):
    """Our RESP port (TLS or not, as the server was started) or redis-server's plain or TLS port."""
    if path == "resp":
        return RESP_PORT
    return REDIS_TLS_PORT if tls else REDIS_PORT


def is_tls(spec):
    return spec.get("variant") == "tls"


class RespConn:
    """A minimal blocking RESP2 client (the redis-benchmark client's check); with tls, over TLS,
    the server's certificate verified against bench/run's CA."""

    def __init__(self, port, tls=False):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        if tls:
            self.sock = ssl.create_default_context(cafile=TLS_CA).wrap_socket(self.sock, server_hostname="127.0.0.1")
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


def run_rb_check(tls=False):
    """Sends both servers exactly the commands of the redis-benchmark samples, twice (the first
    may fill the cache, the second is answered from it) and pipelined as deep as the deepest
    -P, and compares every reply with SQL's row_to_json (nil for an id without a row); with tls
    over TLS (our server must have been started with it)."""
    cases = sorted({(s["mode"], s["batch"], s["keys"]) for s in matrix() if s["client"] == "redis-benchmark"})
    log(f"correctness check, redis-benchmark client: its commands ({', '.join(sorted({m for m, _, _ in cases})) or 'none'}; "
        f"batches {','.join(map(str, BATCHES))}; key types {','.join(sorted({k for _, _, k in cases})) or 'none'}; "
        f"pipelined {max(PIPELINES)} deep) to the RESP port and redis-server{' with TLS' if tls else ''} against SQL")
    if sh([REDIS_BENCHMARK, "--version"]) is None:
        raise RuntimeError(f"{REDIS_BENCHMARK} not found (Debian's redis-tools)")
    commands = {case: rb_command(*case) for case in cases}
    want = {}
    for keys in {k for _, _, k in cases}:
        want.update(rows_by_resp_key(keys, sorted({k for (_, _, t), c in commands.items() if t == keys for k in c[1:]})))
    compared = mismatches = 0
    depth = max(PIPELINES)
    for path in RB_PATHS:
        conn = RespConn(rb_port(path, tls), tls)
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
    return dict({"client": "redis-benchmark", "comparisons": compared, "mismatches": mismatches},
                **({"tls": True} if tls else {}))


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
        return ([REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", str(rb_port(path, is_tls(spec))), "-c", str(conns),
                 "-n", str(n), "-P", str(pipeline), "--precision", "3"] + (["--csv"] if RB_CSV else [])
                + (["--tls", "--cacert", TLS_CA] if is_tls(spec) else []) + command)

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
