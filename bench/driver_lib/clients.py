"""bench/driver_lib/clients.py: the clients with the READY/GO protocol (bench/loadgen, bench/node,
bench/go): their check, and one sample of one of them; the table's state each sample needs."""
import json
import os
import subprocess
import sys

from driver_lib.env import (CLK, CONNINFO, DURATION, GO_CLIENT, LOADGEN, MULTI_ROW_CLIENTS, NODE_DIR, PAIR_HALVES,
                            PAIR_PATH, PAIR_WINDOWS, REDIS_PORT,
                            RESP_PORT, RESP_WRITER, RESP_WRITER_PASSWORD, log, psql)
from driver_lib.measure import PeakMemory, cpu_ns, cpu_ticks, delta, server_pids, stats_global


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
    """The client's correctness check (its `check` subcommand): its result line."""
    log(f"correctness check, {client} client: every read path against prepared SQL, then RESP SET, "
        "SQL UPDATE and redis-server SET" + (f" ({client}: also RESP MSET, a 16-row SQL UPDATE and redis-server MSET)"
                                             if client in MULTI_ROW_CLIENTS else ""))
    p = subprocess.run(client_cmd(client, "check", common_args()), capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        raise RuntimeError(f"correctness check of the {client} client failed (exit {p.returncode}): the mismatches are listed above")
    return json.loads(p.stdout.strip().splitlines()[-1])


def prepare_table(spec):
    # Every write sample (each window of update_pair's) starts from both tables as a rewrite leaves
    # them. The sitting's earlier samples bloat what they update, public.items more than items_plain
    # (the separate samples write it alone), and bloat moves what an UPDATE costs by more than the
    # capture does: spread over more pages, concurrent UPDATEs wait less for each other's page (64
    # connections, items at 2.5x the pages of items_plain: update_pair's ratio 1.03-1.04, on equal
    # tables 1.05-1.06).
    if spec["mode"] == "write":
        psql("VACUUM FULL public.items, public.items_plain")
        psql("CHECKPOINT")
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


def pair_backends():
    """update_pair's backends by half (the application_name its client set on each connection)."""
    names = ",".join(f"'{n}'" for n in PAIR_HALVES.values())
    rows = psql(f"SELECT application_name, pid FROM pg_stat_activity WHERE application_name IN ({names})")
    pids = {half: [] for half in PAIR_HALVES}
    half_of = {n: half for half, n in PAIR_HALVES.items()}
    for row in rows.splitlines():
        name, pid = row.split("|")
        pids[half_of[name]].append(int(pid))
    return pids


def pair_halves(connections, pids, c0, c1, res):
    """update_pair's halves: each one's UPDATEs and its own backends' CPU in the same window (c0, c1:
    cpu_ns of every backend of both)."""
    if sum(map(len, pids.values())) != connections:
        raise RuntimeError(f"update_pair: {sum(map(len, pids.values()))} backends named by half, expected "
                           f"{connections}")
    updates = {"plain": res["plain_updates"], "cached": res["updates"] - res["plain_updates"]}
    halves = {}
    for half, ps in pids.items():
        cpu = sum(c1.get(p, 0) - c0.get(p, 0) for p in ps) / 1e9
        n = max(updates[half], 1)
        halves[half] = {"backends": len(ps), "updates": updates[half], "rps": updates[half] / res["elapsed_s"],
                        "backend_cpu_s": cpu, "backend_cpu_us_per_update": cpu * 1e6 / n}
    return halves


def run_sample(spec):
    """One sample of the client spec names; update_pair's is PAIR_WINDOWS windows (pair_sample)."""
    if spec["path"] == PAIR_PATH:
        return pair_sample(spec)
    return run_window(spec, DURATION)


def pair_sample(spec):
    """update_pair's sample: PAIR_WINDOWS windows of DURATION / PAIR_WINDOWS each, every one with a fresh
    client and so fresh backends, summed. With two backends per half (4 connections) one window's ratio
    depends mostly on where the scheduler placed its four backends (one window of 5 s: 0.91-1.23 between
    rounds in one sitting); fresh connections place them again, and the sum averages that out."""
    windows = [run_window(spec, DURATION / PAIR_WINDOWS) for _ in range(PAIR_WINDOWS)]
    sample = dict(windows[0])
    for field in ("requests", "reads", "updates", "elapsed_s", "client_cpu_s", "server_cpu_s"):
        sample[field] = sum(w[field] for w in windows)
    n = max(sample["requests"], 1)
    sample.update({
        "rps": sample["requests"] / sample["elapsed_s"], "windows": PAIR_WINDOWS,
        "client_cpu_us_per_req": sample["client_cpu_s"] * 1e6 / n,
        "server_cpu_us_per_req": sample["server_cpu_s"] * 1e6 / n,
        # percentiles do not add up: each is the windows' own weighted by their requests, the max their max
        "latency_us": {q: max(w["latency_us"][q] for w in windows) if q == "max" else
                       sum(w["latency_us"][q] * w["requests"] for w in windows) / n for q in windows[0]["latency_us"]},
        "server_rss_peak_bytes": max(w["server_rss_peak_bytes"] for w in windows),
        "server_pss_peak_bytes": max(w["server_pss_peak_bytes"] for w in windows),
        "cache_stats_before": windows[0]["cache_stats_before"], "cache_stats_after": windows[-1]["cache_stats_after"],
        "cache_stats_delta": delta(windows[0]["cache_stats_before"], windows[-1]["cache_stats_after"]),
    })
    halves = {}
    for half in PAIR_HALVES:
        updates = sum(w["halves"][half]["updates"] for w in windows)
        cpu = sum(w["halves"][half]["backend_cpu_s"] for w in windows)
        halves[half] = {"backends": windows[0]["halves"][half]["backends"], "updates": updates,
                        "rps": updates / sample["elapsed_s"], "backend_cpu_s": cpu,
                        "backend_cpu_us_per_update": cpu * 1e6 / max(updates, 1)}
    sample["halves"] = halves
    return sample


def run_window(spec, seconds):
    """One run of the client spec names for `seconds`: READY, counters, GO, its result, counters again."""
    mode, client, path, conns, batch = spec["mode"], spec["client"], spec["path"], spec["connections"], spec["batch"]
    lg_mode = {"warm": "warm", "miss": "miss", "mixed": "mixed", "cold": "cold", "write": "write",
               "serializable": "serializable"}[mode]
    args = common_args() + ["--path", path, "--conns", str(conns), "--batch", str(batch),
                            "--seconds", f"{seconds:g}", "--mode", lg_mode]
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
        halves = pair_backends() if path == PAIR_PATH else None
        halves_ns = cpu_ns([p for ps in halves.values() for p in ps]) if halves else None
        c0 = cpu_ticks(pids)
        peak_memory = PeakMemory(pids)
        proc.stdin.write("GO\n")
        proc.stdin.flush()
        line = proc.stdout.readline().strip()
        c1 = cpu_ticks(pids)
        halves_ns_after = cpu_ns(halves_ns) if halves else None
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
    if halves is not None:
        sample["halves"] = pair_halves(conns, halves, halves_ns, halves_ns_after, res)
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
