#!/usr/bin/env python3
"""bench/tests/write_cost_test.py: bench/report's --write and --bulk sections (issue 46) on made-up
documents, without servers: the ratios are taken within each round, and the targets' verdicts; and
the write mode's matrix (the 16-row paths for the clients that have them).

    python3 bench/tests/write_cost_test.py      prints "N passed, M failed"; exit 1 on a failure
"""
import os
import sys

sys.dont_write_bytecode = True  # before the first import of the tree: no __pycache__ in it
from harness import check, summary  # noqa: E402 (sets up the imports below)

# what bench/run write exports, with every client
os.environ.update(BENCH_MODE="write", CLIENTS="native,node,go,redis-benchmark", CONNECTIONS="4,64", REPEATS="2",
                  KEY_TYPES="")
from driver_lib import clients  # noqa: E402
from driver_lib.matrix import matrix  # noqa: E402
from report_lib.bulk import bulk_section  # noqa: E402
from report_lib.write_cost import write_cost_section  # noqa: E402

CONFIG = {"clients": ["native"], "connections": [4], "repeats": 2, "duration_seconds": 4}


def sample(repeat, path, variant, rps, cpu):
    return {"mode": "write", "client": "native", "connections": 4, "path": path, "variant": variant,
            "repeat": repeat, "rps": rps, "server_cpu_us_per_req": cpu}


def row_of(lines, start):
    return next((line for line in lines if line.startswith(start)), "")


def check_write():
    # round 0: cached loses 2 % and 3 % CPU; round 1: the machine was slower for both, the same ratios
    samples = [sample(0, "update", "cache_enabled", 98, 41.2), sample(0, "update", "cache_disabled", 100, 40),
               sample(0, "resp_set", "cache_enabled", 50, 40),
               sample(1, "update", "cache_enabled", 49, 82.4), sample(1, "update", "cache_disabled", 50, 80),
               sample(1, "resp_set", "cache_enabled", 25, 90)]
    doc = {"config": CONFIG, "samples": samples, "started_at": "t0", "finished_at": "t1", "git": {"head": "abc"}}
    row = row_of(write_cost_section(doc, "w.json"), "| native | 4 |")
    check("write: ratios within each round (0.98x requests/s, 1.03x CPU) meet the targets",
          "| 0.98 (0.98–0.98) | ≥ 0.95x ✓" in row and "| 1.03 (1.03–1.03) |" in row and "≤ 1.05x ✓" in row, row)
    check("write: SET over UPDATE per round (0.97x, 1.09x) reported with their median and verdict",
          "1.03 (0.97–1.09)" in row and "≤ 1.0x ✗" in row, row)
    check("write: no write samples, no section", write_cost_section({"config": CONFIG, "samples": []}, "x") == [])
    check("write: no 16-row samples, no MSET table",
          not any(line.startswith("### MSET") for line in write_cost_section(doc, "w.json")), "")


def check_tables_rewritten():
    """Each write sample starts from both tables rewritten (their bloat moved the ratio more than the
    capture costs); other modes' samples do not; the report says so when the run recorded it."""
    statements = []
    saved = clients.psql
    clients.psql = lambda sql, conninfo=None: statements.append(sql) or ""
    try:
        clients.prepare_table({"mode": "write", "variant": "cache_disabled"})
        write = list(statements)
        statements.clear()
        clients.prepare_table({"mode": "warm", "variant": None})
        warm = list(statements)
    finally:
        clients.psql = saved
    check("rewritten: a write sample rewrites both tables, then checkpoints, before the cache is switched",
          write[:2] == ["VACUUM FULL public.items, public.items_plain", "CHECKPOINT"] and "disable" in write[2], repr(write))
    check("rewritten: a read sample rewrites nothing", not any("VACUUM" in s for s in warm), repr(warm))
    samples = [sample(0, "update", "cache_enabled", 98, 41.2), sample(0, "update", "cache_disabled", 100, 40)]
    doc = {"config": dict(CONFIG, write_tables_rewritten=True), "samples": samples, "started_at": "t0",
           "finished_at": "t1", "git": {"head": "abc"}}
    text = " ".join(write_cost_section(doc, "w.json"))
    check("rewritten: the report says each sample starts from both tables rewritten",
          "just rewritten (`VACUUM FULL` of both, then `CHECKPOINT`)" in text, text[:600])
    text = " ".join(write_cost_section(dict(doc, config=CONFIG), "w.json"))
    check("rewritten: an older run's report does not", "just rewritten" not in text, "")


def check_multi_row():
    # round 0: MSET 80 µs vs the 16-row UPDATE's 100 (0.80x), the UPDATE cached 100 vs 80 not cached
    # (1.25x CPU), 900 vs 1000 requests/s; round 1: the machine slower, MSET 240 vs 200 (1.20x)
    samples = [sample(0, "update", "cache_enabled", 98, 41.2), sample(0, "update", "cache_disabled", 100, 40),
               sample(0, "update16", "cache_enabled", 900, 100), sample(0, "update16", "cache_disabled", 1000, 80),
               sample(0, "resp_mset", "cache_enabled", 700, 80), sample(0, "redis_mset", None, 5000, 12),
               sample(1, "update16", "cache_enabled", 450, 200), sample(1, "update16", "cache_disabled", 500, 160),
               sample(1, "resp_mset", "cache_enabled", 300, 240), sample(1, "redis_mset", None, 4000, 14)]
    doc = {"config": CONFIG, "samples": samples, "started_at": "t0", "finished_at": "t1", "git": {"head": "abc"}}
    lines = write_cost_section(doc, "w.json")
    check("multi-row: the table's heading", "### MSET 16 vs one 16-row UPDATE (cached)" in lines, "\n".join(lines))
    table = lines[lines.index("### MSET 16 vs one 16-row UPDATE (cached)"):] if "### MSET 16 vs one 16-row UPDATE (cached)" in lines else []
    row = row_of(table, "| native | 4 |")
    cells = [c.strip() for c in row.strip("|").split("|")]
    check("multi-row: server CPU per MSET and per cached 16-row UPDATE, medians of the rounds",
          cells[2:4] == ["160.0 (80.0–240.0)", "150.0 (100.0–200.0)"], row)
    check("multi-row: MSET / UPDATE per round (0.80x, 1.20x), median 1.00x meets the 1.0x target",
          cells[4:6] == ["1.00 (0.80–1.20)", "≤ 1.0x ✓"], row)
    check("multi-row: the 16-row UPDATE cached / not cached (0.90x requests/s, 1.25x CPU in both rounds)",
          cells[6:8] == ["0.90 (0.90–0.90)", "1.25 (1.25–1.25)"], row)
    check("multi-row: MSET requests/s and redis-server's MSET CPU", cells[8:10] == ["500 (300–700)", "13.0 (12.0–14.0)"], row)
    over = [dict(s, server_cpu_us_per_req=s["server_cpu_us_per_req"] * 2) if s["path"] == "resp_mset" else s
            for s in samples]
    row = [r for r in write_cost_section(dict(doc, samples=over), "w.json") if r.startswith("| native | 4 |")][-1]
    check("multi-row: MSET at 2.00x the UPDATE's CPU fails the target", "| 2.00 (1.60–2.40) | ≤ 1.0x ✗ |" in row, row)
    only_single = [s for s in samples if s["path"] not in ("resp_mset",)]
    row = [r for r in write_cost_section(dict(doc, samples=only_single), "w.json") if r.startswith("| native | 4 |")][-1]
    check("multi-row: without MSET samples no ratio and no verdict",
          "| native | 4 | – | 150.0 (100.0–200.0) | – | – | 0.90" in row, row)


def check_same_window():
    # round 0: the cached half 42 µs per UPDATE against 40 (1.05x), 950 against 1000 UPDATEs/s; round 1:
    # the machine slower for both halves, 1.03x and 0.97x
    def pair(repeat, cached, plain, variant="cache_enabled"):
        return {"mode": "write", "client": "native", "connections": 4, "path": "update_pair",
                "variant": variant, "repeat": repeat, "rps": 0, "server_cpu_us_per_req": 0,
                "halves": {half: {"backends": 2, "updates": int(rps * 4), "rps": rps, "backend_cpu_s": 0,
                                  "backend_cpu_us_per_update": cpu}
                           for half, (rps, cpu) in (("cached", cached), ("plain", plain))}}
    samples = [pair(0, (950, 42.0), (1000, 40.0)), pair(1, (485, 82.4), (500, 80.0))]
    doc = {"config": CONFIG, "samples": samples, "started_at": "t0", "finished_at": "t1", "git": {"head": "abc"}}
    lines = write_cost_section(doc, "w.json")
    table = lines[lines.index("### Both tables in one window"):] if "### Both tables in one window" in lines else []
    cells = [c.strip() for c in row_of(table, "| native | 4 |").strip("|").split("|")]
    check("same window: each half's UPDATEs/s and the ratio per round (0.95x, 0.97x), no verdict",
          cells[2:4] == ["718 (485–950), 750 (500–1,000)", "0.96 (0.95–0.97)"], repr(cells))
    check("same window: backend CPU per UPDATE per half and per round (1.05x, 1.03x) meet 1.05x",
          cells[4:7] == ["62.2 (42.0–82.4), 60.0 (40.0–80.0)", "1.04 (1.03–1.05)", "≤ 1.05x ✓"], repr(cells))
    slower = [dict(samples[0], halves=dict(samples[0]["halves"], cached=dict(samples[0]["halves"]["cached"],
                                                                              backend_cpu_us_per_update=48.0)))]
    row = row_of(write_cost_section(dict(doc, samples=slower), "w.json"), "| native | 4 | 950")
    check("same window: 1.20x the CPU fails the target", "| 1.20 | ≤ 1.05x ✗ |" in row, row)
    windowed = [dict(x, windows=5) for x in samples]
    text = " ".join(write_cost_section(dict(doc, samples=windowed), "w.json"))
    check("same window: the text says a sample is 5 windows with fresh connections",
          "each made of 5 windows, every one with fresh connections, summed" in text, text[:300])
    check("same window: samples of one window say nothing of windows",
          "windows, every one" not in " ".join(lines), "")
    check("same window: without control samples no control column, and no word of it",
          len(cells) == 7 and "Control" not in " ".join(table), repr(cells))
    # the control: 40.4 against 40 and 79.2 against 80 (1.01x, 0.99x); its 2x UPDATEs/s change nothing else
    controlled = samples + [pair(0, (2000, 40.4), (1000, 40.0), "cache_disabled"),
                            pair(1, (1000, 79.2), (500, 80.0), "cache_disabled")]
    lines = write_cost_section(dict(doc, samples=controlled), "w.json")
    cells = [c.strip() for c in row_of(lines[lines.index("### Both tables in one window"):], "| native | 4 |")
             .strip("|").split("|")]
    check("same window: the control's CPU ratio per round (1.01x, 0.99x) in its own column, the rest unchanged",
          cells[2:] == ["718 (485–950), 750 (500–1,000)", "0.96 (0.95–0.97)", "62.2 (42.0–82.4), 60.0 (40.0–80.0)",
                        "1.04 (1.03–1.05)", "≤ 1.05x ✓", "1.00 (0.99–1.01)"], repr(cells))
    # a cell without control samples while others have them
    other = controlled + [dict(x, connections=64) for x in samples]
    wider = dict(doc, config=dict(CONFIG, connections=[4, 64]), samples=other)
    lines = write_cost_section(wider, "w.json")
    cells = [c.strip() for c in row_of(lines[lines.index("### Both tables in one window"):], "| native | 64 |")
             .strip("|").split("|")]
    check("same window: a cell without control samples has none in its column", cells[7:] == ["–"], repr(cells))
    check("same window: control samples alone make no table",
          "### Both tables in one window" not in write_cost_section(dict(doc, samples=controlled[2:]), "w.json"), "")
    check("same window: no update_pair samples, no table",
          "### Both tables in one window" not in write_cost_section(dict(doc, samples=[]), "w.json"), "")


def check_pair_windows():
    """clients.pair_sample sums its windows: each half's UPDATEs and CPU, then the rates of the sums."""
    def window(cached_updates, cached_cpu, plain_updates, plain_cpu, p50):
        halves = {"cached": (cached_updates, cached_cpu), "plain": (plain_updates, plain_cpu)}
        n = cached_updates + plain_updates
        return {"mode": "write", "client": "native", "connections": 4, "path": "update_pair", "requests": n,
                "reads": 0, "updates": n, "elapsed_s": 1.0, "client_cpu_s": 0.5, "server_cpu_s": n * 30e-6,
                "latency_us": {"p50": p50, "max": p50 * 10}, "server_rss_peak_bytes": n, "server_pss_peak_bytes": n,
                "cache_stats_before": {"hits": n}, "cache_stats_after": {"hits": 2 * n},
                "halves": {h: {"backends": 2, "updates": u, "rps": u, "backend_cpu_s": c,
                               "backend_cpu_us_per_update": c * 1e6 / u} for h, (u, c) in halves.items()}}
    windows = iter([window(1000, 0.030, 1000, 0.025, 40), window(3000, 0.075, 1000, 0.025, 80)])
    saved = clients.run_window, clients.PAIR_WINDOWS
    clients.run_window = lambda spec, seconds: dict(next(windows), seconds=seconds)
    clients.PAIR_WINDOWS = 2
    try:
        merged = clients.run_sample({"mode": "write", "path": "update_pair"})
    finally:
        clients.run_window, clients.PAIR_WINDOWS = saved
    cached, plain = merged["halves"]["cached"], merged["halves"]["plain"]
    check("pair windows: each half's UPDATEs and CPU summed, CPU per UPDATE of the sums (105/4000, 50/2000)",
          (cached["updates"], plain["updates"], round(cached["backend_cpu_us_per_update"], 3),
           round(plain["backend_cpu_us_per_update"], 3)) == (4000, 2000, 26.25, 25.0), repr(merged["halves"]))
    check("pair windows: requests over the windows' time, p50 weighted by requests, max the largest",
          (merged["requests"], merged["rps"], merged["latency_us"], merged["windows"], merged["seconds"])
          == (6000, 3000, {"p50": (40 * 2000 + 80 * 4000) / 6000, "max": 800}, 2, clients.DURATION / 2),
          repr({k: merged[k] for k in ("requests", "rps", "latency_us", "windows")}))


def check_bulk():
    bulk = {"rows": 1000, "filled_keys": 10, "mismatches": 0, "samples": []}
    for repeat, (cached, plain) in enumerate([(110, 100), (240, 200)]):
        for table, ms in (("bulk_cached", cached), ("bulk_plain", plain)):
            bulk["samples"].append({"repeat": repeat, "table": table, "operation": "delete", "ms": ms,
                                    "peak_rss_kb": 2048, "anon_rss_kb": 1024,
                                    "mismatches": 0 if table == "bulk_cached" else None})
    doc = {"config": CONFIG, "bulk": bulk, "started_at": "t0", "finished_at": "t1", "git": {"head": "abc"}}
    row = row_of(bulk_section(doc, "b.json"), "| DELETE")
    check("bulk: per round 1.10x and 1.20x, median 1.15x meets the 1.15x target",
          "1.15 (1.10–1.20)" in row and "≤ 1.15x ✓" in row, row)
    check("bulk: operations without samples have no row", row_of(bulk_section(doc, "b.json"), "| UPDATE") == "")


def check_matrix():
    specs = matrix()
    by_client = {c: sorted({(s["path"], s["variant"] or "") for s in specs if s["client"] == c})
                 for c in ("native", "node", "go", "redis-benchmark")}
    multi = [("redis_mset", ""), ("resp_mset", "cache_enabled"), ("update16", "cache_disabled"),
             ("update16", "cache_enabled")]
    check("matrix: native and node write the 16-row paths (update16 cached and not, resp_mset, redis_mset)",
          all(set(multi) <= set(by_client[c]) and len(by_client[c]) == 10 for c in ("native", "node")), repr(by_client))
    check("matrix: native and node update both tables in one window, with the table cached and not (the control), "
          "go does not",
          all({("update_pair", "cache_enabled"), ("update_pair", "cache_disabled")} <= set(by_client[c])
              for c in ("native", "node"))
          and not any(p == "update_pair" for p, _ in by_client["go"]), repr(by_client))

    def update_order(repeat, path="update"):
        return [s["variant"] for s in specs if s["repeat"] == repeat and s["client"] == "native"
                and s["connections"] == 4 and s["path"] == path]
    check("matrix: the cached UPDATE runs first in one round, the not cached one in the next",
          update_order(1) == ["cache_enabled", "cache_disabled"] and update_order(2) == ["cache_disabled", "cache_enabled"],
          repr((update_order(1), update_order(2))))
    check("matrix: so does update_pair's cached sample and its control",
          update_order(1, "update_pair") == ["cache_enabled", "cache_disabled"]
          and update_order(2, "update_pair") == ["cache_disabled", "cache_enabled"],
          repr((update_order(1, "update_pair"), update_order(2, "update_pair"))))
    check("matrix: go has only the one-row writes, redis-benchmark none",
          len(by_client["go"]) == 4 and not set(multi) & set(by_client["go"]) and not by_client["redis-benchmark"],
          repr(by_client))
    check("matrix: every 16-row sample at batch 1, per round and connection count",
          len([s for s in specs if s["path"] in ("update16", "resp_mset", "redis_mset")]) == 2 * 4 * 2 * 2
          and all(s["batch"] == 1 for s in specs), str(len(specs)))


check_write()
check_tables_rewritten()
check_multi_row()
check_matrix()
check_same_window()
check_pair_windows()
check_bulk()
sys.exit(summary())
