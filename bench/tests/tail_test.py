#!/usr/bin/env python3
"""bench/tests/tail_test.py: the tail mode's parts without servers: its matrix (every client at 64
connections, the RESP samples twice, with the batching pause and without), the switching of
local_cache.resp_batch_delay between samples (and the refusal of a "no_pause" sample the workers
paused in), the baseline build's blocks and the switching between builds, and bench/report --tail on
a made-up document: the targets' verdicts and the "no loss elsewhere" changes beside redis-server's.

    python3 bench/tests/tail_test.py OUTDIR      prints "N passed, M failed"; exit 1 on a failure
"""
import copy
import json
import os
import subprocess
import sys
import types

sys.dont_write_bytecode = True  # before the first import of the tree: no __pycache__ in it
from harness import BENCH, check, summary  # noqa: E402 (sets up the imports below)
# what bench/run tail exports (CLIENTS narrowed to two kinds of client), with a baseline build
os.environ.update(BENCH_MODE="tail", CLIENTS="native,redis-benchmark", CONNECTIONS="64", BATCHES="1,16",
                  PIPELINES="1", KEY_TYPES="", REPEATS="2", BENCH_BUILDS_DIR="/builds",
                  BENCH_INSTALLED_LIBRARY="/lib/local_cache.so")

from driver_lib import batching, builds  # noqa: E402
from driver_lib.matrix import matrix, with_baseline  # noqa: E402
from report_lib.tail import tail_section  # noqa: E402


def check_matrix():
    specs = [s for s in matrix() if "build" not in s]
    rounds = [[s for s in specs if s["repeat"] == r] for r in (1, 2)]
    no_pause = [s for s in specs if s["variant"] == "no_pause"]
    # per round: native 6 read paths + redis-benchmark's 2, times 2 batches, the RESP ones again
    # without the pause (2 clients x 2 batches), and native's 4 writes
    check("matrix: warm and write samples, every round the same ones",
          len(rounds[0]) == len(rounds[1]) == 24 and {s["mode"] for s in specs} == {"warm", "write"}
          and all(s["connections"] == 64 for s in specs),
          f"{len(rounds[0])}, {len(rounds[1])} samples, modes {sorted({s['mode'] for s in specs})}")
    check("matrix: only the RESP server's samples run also without the pause, each beside its default one",
          len(no_pause) == 8 and all(s["path"] == "resp" and s["mode"] == "warm" for s in no_pause)
          and all(dict(s, variant=None) in specs for s in no_pause), repr(no_pause[:2]))


def check_baseline_blocks():
    specs = matrix()
    rounds = [[s for s in specs if s["repeat"] == r] for r in (1, 2)]
    blocks = [[s.get("build") for s in r] for r in rounds]
    # round 1: this build's 24 samples, then the baseline's 16 (native's); round 2 the other way round
    check("baseline: each round a block per build, their order alternating",
          blocks[0] == [None] * 24 + ["baseline"] * 16 and blocks[1] == ["baseline"] * 16 + [None] * 24,
          repr(blocks))
    baseline = [s for s in rounds[0] if s.get("build")]
    check("baseline: every sample of this build but redis-benchmark's and the no_pause ones",
          [dict(s, build=None) for s in baseline] == [dict(s, build=None) for s in rounds[0][:24]
                                                      if s["client"] != "redis-benchmark" and s["variant"] != "no_pause"],
          repr(baseline[:2]))
    check("baseline: the blocks' order alternates with the round",
          with_baseline([{"client": "native", "variant": None}], 1)[0].get("build") == "baseline")


def check_build_switching():
    calls = []
    builds.subprocess = types.SimpleNamespace(run=lambda cmd, **kw: calls.append(cmd[:2] if cmd[0] != "sudo" else cmd[1:3]))
    builds.measure.restart_cluster = lambda: calls.append("restart")
    builds.tls.wait_for_resp = lambda tls: calls.append(("ping", tls))
    for build in [None, "baseline", "baseline", None]:
        builds.switch({"build": build} if build else {})
    switch = [["install", "-m"], ["mv", "-f"], "restart", ("ping", False)]
    check("builds: the library and a restart only when the build changes, each time the other's",
          calls == switch * 2, repr(calls))


def fake_sample(spec, pauses):
    return dict(spec, requests=1000, rps=1000.0)


def check_switching():
    calls = []
    counter = {"n": 0}
    batching.psql = lambda sql, conninfo=None: calls.append(sql)
    batching.time.sleep = lambda s: None
    batching.batch_pauses = lambda: counter["n"]

    def run(spec, pauses=0):
        counter["n"] += pauses
        return fake_sample(spec, pauses)
    base = {"mode": "warm", "client": "native", "path": "resp", "connections": 64, "batch": 1, "variant": None}
    s1 = batching.run_sample(base, lambda s: run(s, 7))
    s2 = batching.run_sample(dict(base, variant="no_pause"), run)
    s3 = batching.run_sample(dict(base, variant="no_pause"), run)
    s4 = batching.run_sample(base, run)
    check("batching: the setting changes only when the policy does, reloaded each time",
          calls == ["ALTER SYSTEM SET local_cache.resp_batch_delay = 0", "SELECT pg_reload_conf()",
                    "ALTER SYSTEM RESET local_cache.resp_batch_delay", "SELECT pg_reload_conf()"], repr(calls))
    check("batching: each sample records the pauses taken during it",
          [s["batch_pauses"] for s in (s1, s2, s3, s4)] == [7, 0, 0, 0], repr([s1, s2]))
    try:
        batching.run_sample(dict(base, variant="no_pause"), lambda s: run(s, 3))
        refused = False
    except RuntimeError as e:
        refused = "did not reach the workers" in str(e)
    check("batching: a sample without the pause that saw pauses fails the run", refused)


def sample(mode, client, path, batch, rps, p99, p999, cpu, variant=None, pauses=None):
    s = {"mode": mode, "client": client, "path": path, "connections": 64, "batch": batch, "variant": variant,
         "pipeline": 1, "keys": "int", "repeat": 1, "requests": int(rps * 3), "rps": rps,
         "latency_us": {"p50": p99 / 4, "p99": p99, "p999": p999}, "server_cpu_us_per_req": cpu}
    if pauses is not None:
        s["batch_pauses"] = pauses
    return s


def baseline(s):
    return dict(s, build="baseline")


def document():
    """A tail result with a baseline build: its samples on this build, then the baseline's."""
    tail = dict({"format": "local_cache-bench/1", "partial": False, "error": None, "started_at": "2026-12-01T00:00:00Z",
                 "finished_at": "2026-12-01T01:00:00Z", "git": {"head": "x", "dirty": False, "baseline": "b"}},
                config={"mode": "tail", "clients": ["native", "redis-benchmark"],
                                             "connections": [64], "batches": [1], "repeats": 1,
                                             "duration_seconds": 3, "pipelines": [1]},
                samples=[sample("warm", "native", "redis", 1, 90000, 4000, 10000, 5.0, pauses=0),
                         sample("warm", "native", "resp", 1, 180000, 1000, 3000, 4.0, pauses=900),
                         sample("warm", "native", "resp", 1, 200000, 9000, 14000, 4.0, "no_pause", 0),
                         sample("warm", "native", "sql", 1, 40000, 3000, 9000, 30.0, pauses=0),
                         sample("write", "native", "redis_set", 1, 80000, 3000, 9000, 6.0, pauses=0),
                         sample("write", "native", "resp_set", 1, 20000, 9000, 20000, 50.0, "cache_enabled", 0),
                         sample("warm", "redis-benchmark", "redis", 1, 100000, 1000, 2000, 5.0, pauses=0),
                         sample("warm", "redis-benchmark", "resp", 1, 110000, 1300, 2000, 4.0, pauses=500),
                         baseline(sample("warm", "native", "redis", 1, 100000, 4000, 12000, 5.0, pauses=0)),
                         baseline(sample("warm", "native", "resp", 1, 200000, 3000, 10000, 4.0, pauses=900)),
                         baseline(sample("warm", "native", "sql", 1, 50000, 3000, 9000, 30.0, pauses=0)),
                         baseline(sample("write", "native", "redis_set", 1, 80000, 3000, 9000, 6.0, pauses=0)),
                         baseline(sample("write", "native", "resp_set", 1, 20000, 9000, 20000, 50.0, "cache_enabled",
                                         0))])
    return tail


def check_section():
    tail = document()
    section = "\n".join(tail_section(tail, "tail.json"))
    check("tail section: both policies of every client",
          "| native | RESP MGET of 1 | pause (default) |" in section
          and "| native | RESP MGET of 1 | none (`resp_batch_delay = 0`) |" in section
          and "| redis-benchmark | RESP GET of 1 | pause (default) |" in section, section[:800])
    check("tail section: the pauses per 1,000 requests", "| 5.0 |" in section and "| 0.0 |" in section, section[:1500])
    check("tail section: targets judged on the default policy (native within, redis-benchmark's p99 1.30x not)",
          "| native | RESP MGET of 1 | 0.25 ✓ | 0.30 ✓ | 2.00 ✓ |" in section
          and "| redis-benchmark | RESP GET of 1 | 1.30 ✗ | 1.00 ✓ | 1.10 ✓ |" in section
          and "Targets missed: redis-benchmark RESP GET of 1: p99 1.30x." in section, section)
    # RESP: -10 % beside redis-server's -10 %: 0 %; SQL: -20 % beside -10 %: -11 %; writes: no drift
    check("tail section: each change beside redis-server's, judged at -5 %",
          "| native | RESP MGET | 1 | 200,000 | 180,000 | -10 % | -10 % | +0 % ✓ |" in section
          and "| native | prepared SQL | 1 | 50,000 | 40,000 | -20 % | -10 % | -11 % ✗ |" in section
          and "| native | RESP SET, cached | 1 row | 20,000 | 20,000 | +0 % | +0 % | +0 % ✓ |" in section
          and "Losses beyond the limit: native prepared SQL (1): -11 %." in section
          and "(local_cache git b)" in section, section)
    plain = dict(tail, git={"head": "x", "dirty": False},
                 samples=[s for s in tail["samples"] if "build" not in s])
    section = "\n".join(tail_section(plain, "tail.json"))
    check("tail section: without a baseline build, the tail tables and no loss table",
          "| native | RESP MGET of 1 | 0.25 ✓ |" in section and "requests/s baseline" not in section
          and "not measured (the run had no baseline build" in section, section[-600:])


def check_report(out):
    """bench/report --tail beside the committed main result, and its refusal of a partial tail result."""
    tail = document()
    path = os.path.join(out, "tail.json")
    main_doc = os.path.join(BENCH, "results", "all-2core.json")

    def report(doc):
        with open(path, "w") as f:
            json.dump(doc, f)
        return subprocess.run([os.path.join(BENCH, "report"), main_doc, "--tail", path], capture_output=True, text=True)
    p = report(tail)
    check("bench/report --tail: the section after the others", p.returncode == 0 and
          "## Tail latency at 64 connections: RESP vs redis-server, every client" in p.stdout
          and "| native | prepared SQL | 1 |" in p.stdout, f"exit {p.returncode}: {p.stderr[-400:]}")
    p = report(dict(tail, partial=True))
    check("bench/report --tail: a partial tail result is refused", p.returncode != 0 and "refusing" in p.stderr,
          p.stderr[-400:])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tail_test"
    os.makedirs(out, exist_ok=True)
    check_matrix()
    check_baseline_blocks()
    check_switching()
    check_build_switching()
    check_section()
    check_report(out)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
