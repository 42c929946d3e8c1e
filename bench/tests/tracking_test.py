#!/usr/bin/env python3
"""bench/tests/tracking_test.py: the tracking section without servers: issue 43's push-delay cells
on a made-up result (one row and one target line per cell, judged as the issue says: p99 from the
COMMIT's return on the primary, p99 after the replay on a standby; the DDL's table; the flush
counts), an issue-29 result from before the cells (its UPDATE wording, no cell table), and
bench/report --tracking on the committed result (written under OUTDIR).

    python3 bench/tests/tracking_test.py OUTDIR      prints "N passed, M failed"; exit 1 on a failure
"""
import copy
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # before the first import of the tree: no __pycache__ in it
from harness import BENCH, check, summary, table_rows  # noqa: E402 (sets up the imports below)

from report_lib.tracking import tracking_section  # noqa: E402


def pct(p50, p99, mx):
    return {"p50": p50, "p90": p99, "p99": p99, "p999": mx, "max": mx, "avg": p50}


def cell(server, ddl, p99, after_p99=None, covered=0, flushes=0):
    c = {"cmd": "delay", "server": server, "ddl": ["vacuum_full", "alter"] if ddl else [], "synchronous_commit": "on",
         "trackers": 50, "per_worker": {"0": 25, "1": 25}, "rounds": 100, "hot_rows": 128,
         "pushes": 5000 - covered, "missing": 0, "before_return": 7, "covered_by_flush": covered, "flush_pushes": flushes,
         "get_retries": 0, "from_return_us": pct(300, p99, p99 + 500), "from_send_us": pct(900, p99 + 700, p99 + 900),
         "flush_from_return_us": pct(100, 200, 300), "replay": None, "after_replay_us": None, "ddl_stats": None,
         "lock_readers": None, "loadavg_1min": [1.5, 2.25], "worker_waits": {"every_ms": 10, "samples": 200, "by_event": {"running": 190,
                                                                                             "Lock:relation": 10}}}
    if server == "standby":
        c["replay"] = {"from_return_us": pct(400, 1500, 2500), "before_return": 3, "missing": 0,
                       "probe_rtt_us": pct(150, 400, 900), "probe_polls": pct(3, 8, 20)}
        c["after_replay_us"] = pct(200, after_p99, after_p99 + 100)
    if ddl:
        took = {"count": 12, "errors": 0, "took_us": pct(15000, 20000, 21000)}
        c["ddl_stats"] = {"interval_ms": 250, "by_kind": {"vacuum_full": took, "alter": dict(took, errors=1)},
                          "errors": ["alter: boom"]}
        c["lock_readers"] = {"connections": 4, "pause_ms": 10, "requests": 900, "errors": 0,
                             "latency_us": pct(500, 18000, 25000)}
    return c


def made_up():
    cells = [cell("primary", False, 1500), cell("primary", True, 2500, covered=50, flushes=300),
             cell("standby", False, 3000, after_p99=1900), cell("standby", True, 4000, after_p99=2600, covered=20)]
    return {"command": "bench/run tracking", "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:05:00Z",
            "git": {"head": "abc"}, "machine": {"cores": 2}, "versions": {"node": "v20"},
            "config": {"repeats": 1, "duration_seconds": 1.0,
                       "server": {"resp_workers_running": 2, "synchronous_commit": "off"}},
            "tracking": {"connections": 50, "rounds": 100, "read_connections": 4, "write_rate": 20, "hot_rows": 128,
                         "delay": cells[0], "reads": [], "push_delay": cells, "ddl": ["vacuum_full", "alter"],
                         "ddl_interval_ms": 250, "lock_readers": 4, "delay_synchronous_commit": "on", "standby": True,
                         "standby_resp_workers_running": 2}}


def cell_rows(text):
    """The push-delay table's rows (server, concurrent DDL no/yes, ...)."""
    return [r for r in table_rows(text, "| primary | ") + table_rows(text, "| standby | ") if len(r) == 13 and r[1] in ("no", "yes")]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tracking_test"
    os.makedirs(out, exist_ok=True)
    doc = made_up()
    text = "\n".join(tracking_section(doc, "made-up.json"))
    table = cell_rows(text)
    check("push-delay table: a row per cell, primary and standby, without and with DDL",
          [(r[0], r[1]) for r in table] == [("| primary", "no"), ("| primary", "yes"), ("| standby", "no"),
                                            ("| standby", "yes")], repr(table))
    check("push-delay table: p99, key pushes, covered by a flush, flush pushes, replay and after-replay p99",
          table[1][3] == "2,500" and table[1][5] == "4,950" and table[1][6] == "50" and table[1][7] == "300"
          and table[2][9] == "400" and table[2][10] == "1,500" and table[2][11] == "1,900" and table[0][9] == "–",
          repr(table[:3]))
    check("push-delay table: the workers' share of samples in a Lock or LWLock wait", table[0][12] == "5.0 % |",
          repr(table[0]))
    targets = [line for line in text.splitlines() if line.startswith("| primary, ") or line.startswith("| standby, ")]
    verdicts = [line.rstrip(" |").endswith("✓") for line in targets]
    check("issue 43's targets: one line per cell, p99 ≤ 2 ms from the return (primary), after the replay (standby)",
          verdicts == [True, False, True, False], repr(targets))
    check("issue 43's targets: the standby's line shows the push and replay p99 beside the judged figure",
          "1,900 µs (push p99 3,000 µs from the COMMIT's return, replay p99 1,500 µs)" in targets[2], targets[2])
    missed = next((line for line in text.splitlines() if line.startswith("Targets missed: ")), "")
    check("the machine's load average around each cell",
          "primary, no DDL 1.5 → 2.2; primary, with DDL 1.5 → 2.2;" in text, text)
    check("the missed targets are listed", "primary, with DDL" in missed and "standby, with DDL" in missed
          and "standby, no DDL" not in missed, missed)
    ddl = table_rows(text, "| primary | 12 | ")
    check("the DDL table: statements run (failures), median ms, the lock readers' GETs",
          len(ddl) == 1 and ddl[0][3] == "12 (1 failed)" and ddl[0][4] == "15.0" and ddl[0][5] == "900"
          and ddl[0][7] == "18,000", repr(ddl))
    check("issue 29's rows and target are the COMMIT's (the primary's cell without DDL)",
          "| the COMMIT's return | 300 | 1,500 |" in text
          and "push delay p99 from the COMMIT's return ≤ 2,000 µs (50 tracking connections) | 1,500 µs ✓" in text, text)

    old = copy.deepcopy(doc)
    old["tracking"]["delay"] = {k: v for k, v in old["tracking"]["delay"].items() if k != "server"}
    del old["tracking"]["push_delay"]
    text = "\n".join(tracking_section(old, "old.json"))
    check("a result from before issue 43: the UPDATE's wording, no push-delay cells",
          "| the UPDATE's return | 300 |" in text and "Push delay on the primary" not in text
          and "issue 43" not in text, text[:2000])

    report = os.path.join(out, "tracking.md")
    with open(report, "w") as f:
        p = subprocess.run([os.path.join(BENCH, "report"), os.path.join(BENCH, "results", "all-2core.json"), "--tracking",
                            os.path.join(BENCH, "results", "tracking-2core.json"), "--charts", os.path.join(out, "charts")],
                           stdout=f, stderr=subprocess.PIPE, text=True)
    text = open(report).read()
    cells = cell_rows(text)
    check("bench/report --tracking on the committed result: the section, its four cells and their targets",
          p.returncode == 0 and "## Client-side caching (CLIENT TRACKING)" in text and len(cells) == 4
          and "Targets (issue 43, per push-delay cell; ✓/✗):" in text, f"exit {p.returncode}, {len(cells)} cells, "
          f"{p.stderr[-300:]}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
