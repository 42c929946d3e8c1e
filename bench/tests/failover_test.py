#!/usr/bin/env python3
"""bench/tests/failover_test.py: bench/failover's document and the failover section without servers:
bench/failover_doc.py turns a made-up check output into a finished result (mode, medians and maxima
per event, the counts), also run as bench/failover runs it (environment first, then the document); the section gives a row per event with median (max) of each time and the 10 s
bound's verdict (✗ past it), and the counts' table; no section without doc["failover"]; bench/report
refuses a failover result given as FILE and reports one given with --failover (written under OUTDIR).

    python3 bench/tests/failover_test.py OUTDIR      prints "N passed, M failed"; exit 1 on a failure
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # before the first import of the tree: no __pycache__ in it
from harness import BENCH, check, summary, table_rows  # noqa: E402 (sets up the imports below)

from failover_doc import document  # noqa: E402
from report_lib.failover import failover_section  # noqa: E402


def failover(event, promotion, topology, write, ack, lost_reads=0):
    return {"event": event, "promotion_ms": promotion, "topology_ms": topology, "first_write_ms": write,
            "first_acknowledged_write_ms": ack, "lost_version_reads": lost_reads, "write_errors": 3, "read_errors": 1}


def made_up(topology_max=900):
    check_output = {
        "failovers": [failover("switchover", 2000, 300, 400, 900), failover("kill-primary", 11000, 600, 700, 1500),
                      failover("switchover", 2400, 500, 600, 1100), failover("kill-primary", 12000, topology_max, 800, 1700),
                      failover("switchover", 2200, 400, 500, 1000), failover("kill-primary", 11500, 700, 750, 1600)],
        "stats": {"writes": 15000, "acked": 14000, "writeErrors": 40, "waitShort": 2, "reads": 250000,
                  "primaryReads": 10, "readErrors": 12},
        "counts": {"lost_acknowledged_writes": 0, "unshown_versions": 0, "back_in_time_reads": 0}}
    env = {"machine": {"cores": 2}, "versions": {}, "git": {"head": "abc", "dirty": False}}
    return document(check_output, "2026-01-01T00:00:00Z", "2026-01-01T00:03:00Z", 3, "FAILOVER_ROUNDS=3 bench/failover", env)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/failover_test"
    os.makedirs(out, exist_ok=True)
    doc = made_up()
    check("the document: finished, mode failover, no samples, the commit",
          doc["partial"] is False and doc["error"] is None and doc["config"]["mode"] == "failover"
          and doc["samples"] == [] and doc["git"]["head"] == "abc", json.dumps(doc)[:300])
    s = doc["failover"]["summary"]
    check("the summary: median and max per event and timing",
          s["switchover"]["promotion_ms"] == {"median": 2200, "max": 2400}
          and s["kill-primary"]["first_acknowledged_write_ms"] == {"median": 1600, "max": 1700}, json.dumps(s))
    text = "\n".join(failover_section(doc, "made-up.json"))
    switch = table_rows(text, "| switchover")
    crash = table_rows(text, "| crash")
    check("a row per event: rounds, median (max) of each time, the bound met",
          len(switch) == 1 and len(crash) == 1
          and switch[0][1:7] == ["3", "2,200 (2,400)", "400 (500)", "500 (600)", "1,000 (1,100)", "✓ |"]
          and crash[0][1:7] == ["3", "11,500 (12,000)", "700 (900)", "750 (800)", "1,600 (1,700)", "✓ |"],
          repr(switch + crash))
    check("the section's heading names the run and its commit, without a sample duration",
          "## Failover under Patroni" in text and "`FAILOVER_ROUNDS=3 bench/failover`" in text
          and "local_cache git abc." in text, text[:400])
    check("the counts' table: each count, the crash's lost-write reads summed",
          table_rows(text, "| writes acknowledged by WAIT 1 missing")[0][1] == "0 |"
          and table_rows(text, "| reads older than one")[0][1] == "0 |"
          and table_rows(text, "| reads of the crash's lost write")[0][0].endswith("over 3 crash(es)"), text)
    late = "\n".join(failover_section(made_up(topology_max=10500), "late.json"))
    check("a topology past 10 s fails the bound on that event only",
          table_rows(late, "| crash")[0][6] == "✗ |" and table_rows(late, "| switchover")[0][6] == "✓ |", late)
    check("no section without doc[\"failover\"]",
          failover_section({k: v for k, v in doc.items() if k != "failover"}, "x.json") == [])

    script = os.path.join(BENCH, "failover_doc.py")
    env = subprocess.run([sys.executable, script, "environment"], capture_output=True, text=True)
    check_path, env_path = os.path.join(out, "check.json"), os.path.join(out, "env.json")
    with open(check_path, "w") as f:
        fo = doc["failover"]
        json.dump({"failovers": fo["failovers"], "stats": fo["clients"], "counts": fo["counts"]}, f)  # the check's
    with open(env_path, "w") as f:
        f.write(env.stdout)
    p = subprocess.run([sys.executable, script, check_path, env_path, "2026-01-01T00:00:00Z", "3", "x"],
                       capture_output=True, text=True)
    written = json.loads(p.stdout) if p.returncode == 0 else {}
    check("failover_doc.py as bench/failover runs it: the environment at the start, then the document",
          written.get("failover") == doc["failover"] and written.get("git") == json.loads(env.stdout)["git"]
          and written["machine"]["cores"] == os.cpu_count(), p.stderr[-300:] + env.stderr[-300:])

    path = os.path.join(out, "failover.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    p = subprocess.run([os.path.join(BENCH, "report"), path], capture_output=True, text=True)
    check("bench/report refuses a failover result as FILE, naming --failover and bench/failover",
          p.returncode != 0 and "--failover" in p.stderr and "bench/failover result" in p.stderr, p.stderr[-300:])
    report = os.path.join(out, "failover.md")
    with open(report, "w") as f:
        p = subprocess.run([os.path.join(BENCH, "report"), os.path.join(BENCH, "results", "all-2core.json"),
                            "--failover", path, "--charts", os.path.join(out, "charts")],
                           stdout=f, stderr=subprocess.PIPE, text=True)
    text = open(report).read()
    check("bench/report --failover: the section, and the run in the Generated line",
          p.returncode == 0 and "## Failover under Patroni" in text and f"--failover {path}" in text
          and "one `bench/failover`" in text, f"exit {p.returncode}: {p.stderr[-300:]}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
