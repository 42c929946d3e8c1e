"""bench/driver_lib/tracking.py: the tracking mode (bench/run tracking, issues #29 and 43): the
push delay of CLIENT TRACKING at TRACKING_CONNECTIONS tracking connections, on the primary and on
a hot standby, without and with concurrent DDL; a read workload through node-redis's client-side
cache against plain GETs (bench/node/tracking.js does both; server CPU is read here around each
run), and the writers' commit path: pgbench's SQL UPDATE tps without and with
TRACKING_CONNECTIONS connections tracking every updated key (tracking.js hold). The result goes
to doc["tracking"]: the push-delay cells in "push_delay", the primary's without DDL also in
"delay" (issue #29's figure)."""
import json
import os
import re
import statistics
import subprocess
import sys
import time

from driver_lib.env import (CLK, CLUSTER_SH, CONNINFO, DURATION, ENV, NODE_DIR, PG_PID, PSQL, REPEATS, RESP_PORT,
                            STANDBY_CONNINFO, STANDBY_DIR, STANDBY_PID, STANDBY_RESP_PORT, STATE, log, psql)
from driver_lib.measure import children, cpu_ticks

TRACKING_CONNECTIONS = int(ENV.get("TRACKING_CONNECTIONS") or 50)
TRACKING_ROUNDS = int(ENV.get("TRACKING_ROUNDS") or 300)
# the with-DDL cells (tracking.js --ddl): the statements, one every TRACKING_DDL_INTERVAL_MS, and
# the RESP connections that read keys no row has meanwhile (each read needs the table's lock)
TRACKING_DDL = [x for x in ENV.get("TRACKING_DDL", "vacuum_full,cluster,truncate_side,alter").replace(" ", "").split(",") if x]
TRACKING_DDL_INTERVAL_MS = int(ENV.get("TRACKING_DDL_INTERVAL_MS") or 250)
TRACKING_LOCK_READERS = int(ENV.get("TRACKING_LOCK_READERS") or 4)
# the push-delay cells' writer commits with synchronous_commit = on (the cluster's is off): its
# WAL goes to the standby when COMMIT returns, not at the walwriter's next round
TRACKING_SYNC_COMMIT = "on"
SIDE_ROWS = 64  # public.items_side, the cached table the DDL truncates (bench/node/tracking.js)
TRACKING_READ_CONNECTIONS = int(ENV.get("TRACKING_READ_CONNECTIONS") or 4)
TRACKING_WRITE_RATE = float(ENV.get("TRACKING_WRITE_RATE") or 20)
TRACKING_HOT_ROWS = 128
TRACKING_PGBENCH_CLIENTS = int(ENV.get("TRACKING_PGBENCH_CLIENTS") or 4)
PGBENCH = os.path.join(os.path.dirname(PSQL), "pgbench") if os.path.dirname(PSQL) else "pgbench"


def run_node(args, standby_cpu=None):
    """tracking.js with args; (its JSON result, server CPU seconds while it ran). With a dict as
    standby_cpu, the standby's CPU seconds go to standby_cpu["s"]."""
    pids = children(PG_PID)
    c0 = cpu_ticks(pids)
    s0 = cpu_ticks(children(STANDBY_PID)) if standby_cpu is not None else {}
    p = subprocess.run(["node", os.path.join(NODE_DIR, "tracking.js")] + args
                       + ["--pg", CONNINFO, "--resp-port", str(RESP_PORT), "--hot", str(TRACKING_HOT_ROWS)],
                       stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
    c1 = cpu_ticks(children(PG_PID))
    if standby_cpu is not None:
        s1 = cpu_ticks(children(STANDBY_PID))
        standby_cpu["s"] = sum(t - s0.get(pid, 0) for pid, t in s1.items()) / CLK
    lines = p.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        raise RuntimeError(f"bench/node/tracking.js {args[0]} failed (exit {p.returncode})")
    res = json.loads(lines[-1])
    if p.returncode != 0:
        raise RuntimeError(f"bench/node/tracking.js {args[0]} exit {p.returncode}: {lines[-1]}")
    return res, sum(t - c0.get(pid, 0) for pid, t in c1.items()) / CLK


def side_table():
    """public.items_side: a small cached table the with-DDL cells truncate (and refill) and the
    lock readers read, readable by the RESP role; on the standby too once replayed."""
    psql("CREATE TABLE public.items_side (id bigint PRIMARY KEY, value text); "
         f"INSERT INTO public.items_side SELECT g, md5(g::text) FROM generate_series(1, {SIDE_ROWS}) g; "
         "SELECT local_cache.enable('public.items_side'); "
         "GRANT SELECT ON public.items_side TO bench_reader")
    if not STANDBY_CONNINFO:
        return
    lsn = psql("SELECT pg_current_wal_lsn()")
    for _ in range(200):
        if psql(f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'", STANDBY_CONNINFO) == "t":
            return
        time.sleep(0.05)
    raise RuntimeError("the standby did not replay public.items_side in 10 s")


def push_delay_cell(server, ddl):
    """One push-delay cell: TRACKING_ROUNDS UPDATEs on the primary, the pushes from `server`'s
    RESP server, with the DDL loop and the lock readers when `ddl`."""
    args = ["delay", "--trackers", str(TRACKING_CONNECTIONS), "--rounds", str(TRACKING_ROUNDS),
            "--sync-commit", TRACKING_SYNC_COMMIT]
    if server == "standby":
        args += ["--push-port", str(STANDBY_RESP_PORT), "--standby-pg", STANDBY_CONNINFO]
    if ddl:
        args += ["--ddl", ",".join(TRACKING_DDL), "--ddl-interval-ms", str(TRACKING_DDL_INTERVAL_MS),
                 "--lock-readers", str(TRACKING_LOCK_READERS)]
    log(f"tracking: push delay on the {server}, {'with DDL (' + ','.join(TRACKING_DDL) + ')' if ddl else 'no DDL'}, "
        f"{TRACKING_CONNECTIONS} tracking connections, {TRACKING_ROUNDS} commits of a SQL UPDATE")
    standby_cpu = {} if STANDBY_PID else None
    load = os.getloadavg()[0]
    res, cpu = run_node(args, standby_cpu)
    # the machine's 1-minute load average before and after: on a shared machine, what else ran
    res["loadavg_1min"] = [load, os.getloadavg()[0]]
    res["server_cpu_s"] = cpu
    if standby_cpu is not None:
        res["standby_cpu_s"] = standby_cpu["s"]
    d = res["from_return_us"]
    log(f"tracking: {server}{' + DDL' if ddl else ''}: push delay from the COMMIT's return p50 {d['p50']} us, "
        f"p99 {d['p99']} us, max {d['max']} us ({res['pushes']} key pushes, {res['missing']} missing, "
        f"{res['covered_by_flush']} covered by a flush, {res['flush_pushes']} flush pushes)"
        + (f"; replay p50 {res['replay']['from_return_us']['p50']} us, p99 {res['replay']['from_return_us']['p99']} us; "
           f"push after replay p99 {res['after_replay_us']['p99']} us" if res.get("replay") else ""))
    return res


def push_delay(tr, save):
    """The push-delay cells (issue 43): primary and standby, without and with DDL. The primary's
    without DDL is also doc["tracking"]["delay"]. The standby stops afterwards, so that it takes
    no CPU from the reads and the commit path."""
    cells = [("primary", False)] + ([("primary", True)] if TRACKING_DDL else [])
    if STANDBY_CONNINFO:
        cells += [("standby", False)] + ([("standby", True)] if TRACKING_DDL else [])
    if TRACKING_DDL:
        side_table()
    tr["push_delay"] = []
    for server, ddl in cells:
        res = push_delay_cell(server, ddl)
        tr["push_delay"].append(res)
        if server == "primary" and not ddl:
            tr["delay"] = res
        save()
        if res["missing"]:
            raise RuntimeError(f"{res['missing']} invalidations never arrived ({server}{' with DDL' if ddl else ''})")
    if STANDBY_DIR:
        subprocess.run([CLUSTER_SH, "stop", STANDBY_DIR], check=True, stdout=sys.stderr)


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
                            "hot_rows": TRACKING_HOT_ROWS, "delay": None, "reads": [],
                            "ddl": TRACKING_DDL, "ddl_interval_ms": TRACKING_DDL_INTERVAL_MS,
                            "lock_readers": TRACKING_LOCK_READERS, "delay_synchronous_commit": TRACKING_SYNC_COMMIT,
                            "standby": bool(STANDBY_CONNINFO)}
    if STANDBY_CONNINFO:
        tr["standby_resp_workers_running"] = int(psql("SELECT count(*) FROM pg_stat_activity WHERE "
                                                      "backend_type = 'local_cache RESP worker'", STANDBY_CONNINFO))
    push_delay(tr, save)
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
