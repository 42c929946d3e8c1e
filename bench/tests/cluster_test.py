#!/usr/bin/env python3
"""bench/tests/cluster_test.py: the cluster section without servers: on a made-up result, a row per
variant with each node's share of the GETs and its server CPU per GET, the spread line, the WAIT table
(percentiles, answers by count, the writer's writes); no section without doc["cluster"]; bench/report
refuses a cluster result given as FILE and reports one given with --cluster (written under OUTDIR).

    python3 bench/tests/cluster_test.py OUTDIR      prints "N passed, M failed"; exit 1 on a failure
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # before the first import of the tree: no __pycache__ in it
from harness import BENCH, check, summary, table_rows  # noqa: E402 (sets up the imports below)

from report_lib.cluster import cluster_section  # noqa: E402


def sample(variant, gets, cpu_us, rps):
    nodes = {n: {"gets": g, "server_cpu_us": c, "server_cpu_us_per_req": c / g if g else None}
             for n, g, c in zip(("primary", "standby1", "standby2"), gets, cpu_us)}
    total = sum(gets)
    return {"variant": variant, "requests": total, "elapsed_s": 1.0, "rps": rps,
            "latency_us": {"p50": 400, "p90": 600, "p99": 900, "p999": 1500, "max": 3000}, "nodes": nodes,
            "server_cpu_us_per_req": sum(cpu_us) / total, "client_cpu_us_per_req": 30.0}


def made_up():
    return {"command": "bench/run cluster", "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:02:00Z",
            "partial": False, "error": None, "git": {"head": "abc"}, "machine": {"cores": 2},
            "config": {"repeats": 1, "duration_seconds": 8.0, "server": {"resp_workers_running": 1}},
            "checks": [], "samples": [],
            "cluster": {"client": "node-redis v6 createCluster", "concurrency": 16, "hot_rows": 128,
                        "nodes": ["primary", "standby1", "standby2"],
                        "samples": [sample("primary", (10000, 0, 0), (160000, 1000, 1000), 10000),
                                    sample("replicas", (3000, 3500, 3500), (60000, 63000, 77000), 10000)],
                        "wait": [{"cell": "idle", "rounds": 200, "timeout_ms": 1000,
                                  "wait_us": {"p50": 5000, "p90": 8000, "p99": 12000, "max": 15000},
                                  "answers": {"2": 200}, "writer_writes": 0},
                                 {"cell": "writer", "rounds": 200, "timeout_ms": 1000,
                                  "wait_us": {"p50": 6000, "p90": 9000, "p99": 20000, "max": 30000},
                                  "answers": {"1": 3, "2": 197}, "writer_writes": 4321}]}}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/cluster_test"
    os.makedirs(out, exist_ok=True)
    doc = made_up()
    text = "\n".join(cluster_section(doc, "made-up.json"))
    alone = table_rows(text, "| the primary alone")
    spread = table_rows(text, "| primary + 2 standbys")
    check("a row per variant", len(alone) == 1 and len(spread) == 1, text)
    check("the primary alone: every GET on the primary, 16 µs of its CPU per GET, none on the standbys",
          alone[0][4:7] == ["100 %", "0 %", "0 %"] and alone[0][7] == "16.0" and alone[0][8:10] == ["–", "–"],
          repr(alone))
    check("spread: each node's share and CPU per GET; all nodes' CPU per request; the client's",
          spread[0][4:7] == ["30 %", "35 %", "35 %"] and spread[0][7:10] == ["20.0", "18.0", "22.0"]
          and spread[0][10] == "20.0" and spread[0][11] == "30.0 |", repr(spread))
    check("the spread line: the standbys' share, their CPU per GET against the primary's",
          "70 % of the reads ran on the standbys. A GET cost a standby's server 20.0 µs of CPU and the primary's "
          "20.0 µs, against 16.0 µs with every read on the primary" in text, text)
    wait = table_rows(text, "| alone | ") + table_rows(text, "| beside a writer | ")
    check("the WAIT table: percentiles, answers by count, the writer's writes",
          len(wait) == 2 and wait[0][1:5] == ["5,000", "8,000", "12,000", "15,000"] and wait[0][5] == "2: 200"
          and wait[1][5] == "1: 3, 2: 197" and wait[1][6] == "4,321 |", repr(wait))
    check("no section without doc[\"cluster\"]", cluster_section({k: v for k, v in doc.items() if k != "cluster"},
                                                                "x.json") == [])

    path = os.path.join(out, "cluster.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    p = subprocess.run([os.path.join(BENCH, "report"), path], capture_output=True, text=True)
    check("bench/report refuses a cluster result as FILE, naming --cluster",
          p.returncode != 0 and "--cluster" in p.stderr, p.stderr[-300:])
    report = os.path.join(out, "cluster.md")
    with open(report, "w") as f:
        p = subprocess.run([os.path.join(BENCH, "report"), os.path.join(BENCH, "results", "all-2core.json"), "--cluster", path,
                            "--charts", os.path.join(out, "charts")], stdout=f, stderr=subprocess.PIPE, text=True)
    text = open(report).read()
    check("bench/report --cluster: the section, and the run in the Generated line",
          p.returncode == 0 and "## Reads through a Redis Cluster client: the primary and two hot standbys" in text
          and f"--cluster {path}" in text and "one `bench/run cluster`" in text, f"exit {p.returncode}: {p.stderr[-300:]}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
