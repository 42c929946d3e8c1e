"""bench/report_lib/stall.py: the "One role's slow trigger" section (`--stall`, a bench/run stall
result): everyone else's GET latency alone and while a slow writer's trigger sleeps, and issue 42's
target with its verdict (p99 with the slow writer at most 1.5x the p99 alone)."""
from report_lib.data import fmt, fmt_range, med, section_start
from report_lib.names import resp_workers

P99_TARGET = 1.5
PERCENTILES = [("p50", "p50"), ("p99", "p99"), ("p999", "p99.9"), ("max", "max")]
VARIANTS = [("alone", "alone"), ("slow_writer", "beside the slow writer")]


def stall_section(doc, src):
    """The section's lines from doc["stall"] (none without it)."""
    st = doc.get("stall")
    if not st:
        return []
    cfg = doc["config"]
    by = {v: [s for s in st["samples"] if s["variant"] == v] for v, _ in VARIANTS}
    out = section_start("One role's slow trigger beside everyone else's reads", doc, src, "stall")
    w = out.append
    w(f"bench/loadgen (the native client) reads `public.items` through RESP (`GET items:<id>`, the warm mode's hot "
      f"rows) on {st['connections']} connections for {fmt(cfg['duration_seconds'])} s, alone and while one more "
      f"connection, logged in as `{cfg['resp_writer_role']}`, writes one row after the other with `SET stall:1 ...` "
      f"to a table whose `BEFORE` trigger runs `pg_sleep` for {st['trigger_ms']} ms. RESP workers: "
      f"{resp_workers(cfg['server'])}; write workers (`local_cache.resp_write_workers`): {st['write_workers']}. "
      f"{cfg['repeats']} round(s), the order alternating by round; medians (min–max). Target (issue 42): the p99 of the "
      f"reads beside the slow writer at most {P99_TARGET}x the p99 alone.")
    w("")
    w("| reads | " + " | ".join(label + " µs" for _, label in PERCENTILES) + " | requests/s | slow writes committed |")
    w("| --- |" + " --- |" * (len(PERCENTILES) + 2))
    for variant, label in VARIANTS:
        samples = by[variant]
        if not samples:
            continue
        w(f"| {label} | " + " | ".join(fmt_range([s["latency_us"][k] for s in samples], 0) for k, _ in PERCENTILES)
          + f" | {fmt_range([s['rps'] for s in samples], 0)} | {fmt_range([s['slow_writes'] for s in samples], 0)} |")
    alone = med([s["latency_us"]["p99"] for s in by["alone"]])
    beside = med([s["latency_us"]["p99"] for s in by["slow_writer"]])
    if alone and beside is not None:
        ratio = beside / alone
        w("")
        w(f"p99 beside the slow writer / p99 alone: **{ratio:.2f}x** (target ≤ {P99_TARGET}x) "
          + ("✓" if ratio <= P99_TARGET else "✗"))
    w("")
    return out
