"""bench/driver_lib/tracking.py: the tracking mode (bench/run tracking, issue #29): the
invalidation delay of CLIENT TRACKING at TRACKING_CONNECTIONS tracking connections, a read
workload through node-redis's client-side cache against plain GETs (bench/node/tracking.js does
both; server CPU is read here around each run), and the writers' commit path: pgbench's SQL
UPDATE tps without and with TRACKING_CONNECTIONS connections tracking every updated key
(tracking.js hold). The result goes to doc["tracking"]."""
import json
import os
import re
import statistics
import subprocess
import sys

from driver_lib.env import CLK, CONNINFO, DURATION, ENV, NODE_DIR, PG_PID, PSQL, REPEATS, RESP_PORT, STATE, log, psql
from driver_lib.measure import children, cpu_ticks

TRACKING_CONNECTIONS = int(ENV.get("TRACKING_CONNECTIONS") or 50)
TRACKING_ROUNDS = int(ENV.get("TRACKING_ROUNDS") or 300)
TRACKING_READ_CONNECTIONS = int(ENV.get("TRACKING_READ_CONNECTIONS") or 4)
TRACKING_WRITE_RATE = float(ENV.get("TRACKING_WRITE_RATE") or 20)
TRACKING_HOT_ROWS = 128
TRACKING_PGBENCH_CLIENTS = int(ENV.get("TRACKING_PGBENCH_CLIENTS") or 4)
PGBENCH = os.path.join(os.path.dirname(PSQL), "pgbench") if os.path.dirname(PSQL) else "pgbench"


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


def pgbench_tps(script):
    """pgbench's tps (without connection setup) over DURATION_SECONDS of the script, and how many
    transactions it ran."""
    args = [PGBENCH, "-n", "-f", script, "-c", str(TRACKING_PGBENCH_CLIENTS), "-j", "1", "-T", str(max(1, round(DURATION))),
            "-d", CONNINFO]
    p = subprocess.run(args, capture_output=True, text=True)
    m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", p.stdout)
    n = re.search(r"number of transactions actually processed: ([0-9]+)", p.stdout)
    if p.returncode != 0 or not m or not n:
        sys.stderr.write(p.stdout + p.stderr)
        raise RuntimeError(f"pgbench failed (exit {p.returncode})")
    return float(m.group(1)), int(n.group(1))


def server_ticks(resp_pids):
    """CPU ticks of all of PostgreSQL's processes, the exited ones too (pgbench's backends end with
    it, and their time is then in the postmaster's cutime and cstime), and of the RESP workers among
    them."""
    ticks = cpu_ticks(children(PG_PID))
    total = sum(ticks.values())
    resp = sum(ticks.get(pid, 0) for pid in resp_pids)
    try:
        with open(f"/proc/{PG_PID}/stat") as f:
            st = f.read()
        fields = st[st.rindex(")") + 2:].split()
        total += int(fields[13]) + int(fields[14])
    except (OSError, ValueError):
        pass
    return total, resp


def pgbench_run(script, runs, variant, hold_pid=None):
    """One pgbench run into runs[variant], with what it cost in CPU: the server's per UPDATE (RESP
    workers included: with the tracking connections they read the tracking log and send the pushes)
    and the tracking client's (tracking.js hold) seconds. On a machine of few cores both take
    cores from the writers: the slowdown is then more than the commit path's own cost."""
    resp_pids = [int(x) for x in psql("SELECT pid FROM pg_stat_activity WHERE backend_type = "
                                      "'local_cache RESP worker'").split()]
    (s0, r0), h0 = server_ticks(resp_pids), cpu_ticks([hold_pid]).get(hold_pid, 0) if hold_pid else 0
    tps, transactions = pgbench_tps(script)
    (s1, r1), h1 = server_ticks(resp_pids), cpu_ticks([hold_pid]).get(hold_pid, 0) if hold_pid else 0
    runs[variant].append(tps)
    per_update = lambda ticks: ticks / CLK * 1e6 / max(transactions, 1)  # noqa: E731
    runs["server_cpu_us_per_update"][variant].append(per_update(s1 - s0))
    runs["resp_cpu_us_per_update"][variant].append(per_update(r1 - r0))
    if hold_pid:
        runs["hold_cpu_s"].append((h1 - h0) / CLK)


def commit_path(tr, save):
    """pgbench UPDATE tps without and with the tracking connections, REPEATS times each, in
    alternating order; their medians and the slowdown."""
    script = os.path.join(os.path.dirname(os.path.abspath(STATE)), "tracking_update.pgbench")
    with open(script, "w") as f:
        f.write(f"\\set id random(1, {TRACKING_HOT_ROWS})\n"
                "UPDATE public.items SET value = md5(random()::text) WHERE id = :id;\n")
    runs = tr["commit_path"] = {"pgbench_clients": TRACKING_PGBENCH_CLIENTS, "trackers": TRACKING_CONNECTIONS,
                                "without": [], "with": [], "hold": [], "hold_cpu_s": [],
                                "server_cpu_us_per_update": {"without": [], "with": []},
                                "resp_cpu_us_per_update": {"without": [], "with": []}}
    for r in range(REPEATS):
        for variant in (("without", "with") if r % 2 == 0 else ("with", "without")):
            if variant == "without":
                pgbench_run(script, runs, "without")
                continue
            proc = subprocess.Popen(["node", os.path.join(NODE_DIR, "tracking.js"), "hold", "--pg", CONNINFO,
                                     "--resp-port", str(RESP_PORT), "--trackers", str(TRACKING_CONNECTIONS),
                                     "--hot", str(TRACKING_HOT_ROWS)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
            try:
                if proc.stdout.readline().strip() != "READY":
                    raise RuntimeError(f"tracking.js hold did not get ready (exit {proc.wait()})")
                pgbench_run(script, runs, "with", proc.pid)
                proc.stdin.close()
                runs["hold"].append(json.loads(proc.stdout.readline()))
                if proc.wait(timeout=60) != 0:
                    raise RuntimeError("tracking.js hold failed")
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        save()
    # statistics.median, as bench/report takes it (an even REPEATS: the mean of the middle two)
    runs["tps_without_median"] = statistics.median(runs["without"])
    runs["tps_with_median"] = statistics.median(runs["with"])
    runs["slowdown"] = 1 - runs["tps_with_median"] / runs["tps_without_median"]
    log(f"tracking: pgbench UPDATE tps {runs['tps_without_median']:.0f} without, {runs['tps_with_median']:.0f} with "
        f"{TRACKING_CONNECTIONS} tracking connections ({100 * runs['slowdown']:.1f}% slower); server CPU per UPDATE "
        f"{statistics.median(runs['server_cpu_us_per_update']['without']):.0f} us without, "
        f"{statistics.median(runs['server_cpu_us_per_update']['with']):.0f} us with (RESP workers "
        f"{statistics.median(runs['resp_cpu_us_per_update']['with']):.0f} us); the tracking client "
        f"{statistics.median(runs['hold_cpu_s']):.1f} s of CPU")
    save()


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
    commit_path(tr, save)
