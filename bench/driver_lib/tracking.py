"""bench/driver_lib/tracking.py: the tracking mode (bench/run tracking, issue #29): the
invalidation delay of CLIENT TRACKING at TRACKING_CONNECTIONS tracking connections, and a read
workload through node-redis's client-side cache against plain GETs (bench/node/tracking.js does
both; server CPU is read here around each run). The result goes to doc["tracking"]."""
import json
import os
import subprocess
import sys

from driver_lib.env import CLK, CONNINFO, DURATION, ENV, NODE_DIR, PG_PID, REPEATS, RESP_PORT, log
from driver_lib.measure import children, cpu_ticks

TRACKING_CONNECTIONS = int(ENV.get("TRACKING_CONNECTIONS") or 50)
TRACKING_ROUNDS = int(ENV.get("TRACKING_ROUNDS") or 300)
TRACKING_READ_CONNECTIONS = int(ENV.get("TRACKING_READ_CONNECTIONS") or 4)
TRACKING_WRITE_RATE = float(ENV.get("TRACKING_WRITE_RATE") or 20)
TRACKING_HOT_ROWS = 128


def run_node(args):
    """tracking.js with args; (its JSON result, server CPU seconds while it ran)."""
    pids = children(PG_PID)
    c0 = cpu_ticks(pids)
    p = subprocess.run(["node", os.path.join(NODE_DIR, "tracking.js")] + args
                       + ["--pg", CONNINFO, "--resp-port", str(RESP_PORT), "--hot", str(TRACKING_HOT_ROWS)],
                       stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
    c1 = cpu_ticks(children(PG_PID))
    lines = p.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        raise RuntimeError(f"bench/node/tracking.js {args[0]} failed (exit {p.returncode})")
    res = json.loads(lines[-1])
    if p.returncode != 0:
        raise RuntimeError(f"bench/node/tracking.js {args[0]} exit {p.returncode}: {lines[-1]}")
    return res, sum(t - c0.get(pid, 0) for pid, t in c1.items()) / CLK


def run_tracking(doc, save):
    tr = doc["tracking"] = {"connections": TRACKING_CONNECTIONS, "rounds": TRACKING_ROUNDS,
                            "read_connections": TRACKING_READ_CONNECTIONS, "write_rate": TRACKING_WRITE_RATE,
                            "hot_rows": TRACKING_HOT_ROWS, "delay": None, "reads": []}
    log(f"tracking: invalidation delay, {TRACKING_CONNECTIONS} tracking connections, {TRACKING_ROUNDS} SQL UPDATEs")
    res, cpu = run_node(["delay", "--trackers", str(TRACKING_CONNECTIONS), "--rounds", str(TRACKING_ROUNDS)])
    res["server_cpu_s"] = cpu
    tr["delay"] = res
    d = res["from_return_us"]
    log(f"tracking: delay from the UPDATE's return to the push: p50 {d['p50']} us, p99 {d['p99']} us, "
        f"p99.9 {d['p999']} us ({res['pushes']} pushes, {res['missing']} missing, {res['before_return']} before the return)")
    save()
    if res["missing"]:
        raise RuntimeError(f"{res['missing']} invalidations never arrived")
    for r in range(REPEATS):
        # the order alternates by round, so that neither variant always runs on a warmer server
        for variant in (("csc", "plain") if r % 2 == 0 else ("plain", "csc")):
            res, cpu = run_node(["reads", "--variant", variant, "--conns", str(TRACKING_READ_CONNECTIONS),
                                 "--seconds", str(DURATION), "--write-rate", str(TRACKING_WRITE_RATE)])
            res["server_cpu_s"] = cpu
            res["server_cpu_us_per_req"] = cpu * 1e6 / max(res["requests"], 1)
            res["repeat"] = r
            tr["reads"].append(res)
            save()
            log(f"tracking: reads {variant} c={TRACKING_READ_CONNECTIONS}: {res['rps']:.0f} req/s, "
                f"p99 {res['latency_us']['p99']} us, server {res['server_cpu_us_per_req']:.1f} us/req"
                + (f", local hit ratio {res['hit_ratio']:.3f}" if res["hit_ratio"] is not None else "")
                + f", {res['stale']} stale")
