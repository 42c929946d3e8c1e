"""bench/driver_lib/soak.py: the soak mode: the check on the standby, `loadgen soak` with every
path at once, a point of server CPU and memory at each of its intervals, the stale probes' verdict."""
import json
import subprocess
import sys

from driver_lib.env import (CLK, DURATION, LOADGEN, PG_PID, REDIS_PID, SOAK_BATCH, SOAK_CONNECTIONS, SOAK_INTERVAL,
                            SOAK_PROBE_BOUND_MS, SOAK_PROBE_INTERVAL_MS, SOAK_PROBE_ROWS, SOAK_WRITE_RATE,
                            STANDBY_CONNINFO, STANDBY_PID, STANDBY_RESP_PORT, log)
from driver_lib.measure import children, cpu_ticks, memory_detail, stats_global
from driver_lib.clients import common_args


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
