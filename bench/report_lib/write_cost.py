"""bench/report_lib/write_cost.py: the "What the cache costs writers" section (`--write`, a bench/run
write result): SQL UPDATE of one row with the table cached against the same not cached, and RESP SET
against the SQL UPDATE it replaces, per client and connection count, paired by round, with issue 46's
targets (UPDATE: at most 5 % fewer requests/s and at most 1.05x the server CPU per UPDATE; SET: at
most 1.0x the server CPU of the UPDATE) and their verdicts."""
from report_lib.data import fmt_range, med, section_start

TPS_LOSS_TARGET = 0.95  # cached / not cached requests/s, at least
CPU_TARGET = 1.05       # cached / not cached server CPU per UPDATE, at most
SET_CPU_TARGET = 1.0    # RESP SET / SQL UPDATE (cached) server CPU per write, at most


def paired(samples, a, b, field):
    """Per round, a's field over b's: the ratios of the rounds both have."""
    by = {}
    for s in samples:
        by.setdefault(s.get("repeat"), {})[(s["path"], s["variant"])] = s[field]
    return [r[a] / r[b] for r in by.values() if a in r and b in r and r[b]]


def verdict(ratio, target, at_least=False):
    if ratio is None:
        return "–"
    ok = ratio >= target if at_least else ratio <= target
    return f"{'≥' if at_least else '≤'} {target}x " + ("✓" if ok else "✗")


def write_cost_section(doc, src):
    """The section's lines from doc's write samples (none without them)."""
    samples = [s for s in doc.get("samples", []) if s["mode"] == "write"]
    if not samples:
        return []
    cfg = doc["config"]
    out = section_start("What the cache costs writers", doc, src, "write")
    w = out.append
    w("The write mode's samples (one random row of `public.items` per request, batch 1; server CPU is all of "
      "PostgreSQL's processes), each ratio taken within one round (the cached and the not cached table, or SET and "
      f"UPDATE, measured minutes apart at most), {cfg['repeats']} round(s): medians (min–max). Targets (issue 46): "
      f"UPDATE with the table cached at least {TPS_LOSS_TARGET}x the requests/s and at most {CPU_TARGET}x the server "
      f"CPU per UPDATE of the same table not cached; RESP SET at most {SET_CPU_TARGET}x the server CPU of the SQL "
      "UPDATE it replaces (the table cached).")
    w("")
    w("| client | connections | UPDATE requests/s cached / not | target | server CPU µs per UPDATE cached, not | "
      "cached / not | target | RESP SET server CPU µs | SET / UPDATE | target |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    cached, plain, resp_set = ("update", "cache_enabled"), ("update", "cache_disabled"), ("resp_set", "cache_enabled")
    for client in cfg["clients"]:
        for conns in cfg["connections"]:
            group = [s for s in samples if s["client"] == client and s["connections"] == conns]
            if not group:
                continue
            tps = paired(group, cached, plain, "rps")
            cpu = paired(group, cached, plain, "server_cpu_us_per_req")
            set_cpu = paired(group, resp_set, cached, "server_cpu_us_per_req")

            def cpu_of(key):
                return med([s["server_cpu_us_per_req"] for s in group if (s["path"], s["variant"]) == key])
            w(f"| {client} | {conns} | {fmt_range(tps, 2)} | {verdict(med(tps), TPS_LOSS_TARGET, True)} | "
              f"{fmt_range([cpu_of(cached)], 1)}, {fmt_range([cpu_of(plain)], 1)} | {fmt_range(cpu, 2)} | "
              f"{verdict(med(cpu), CPU_TARGET)} | {fmt_range([cpu_of(resp_set)], 1)} | {fmt_range(set_cpu, 2)} | "
              f"{verdict(med(set_cpu), SET_CPU_TARGET)} |")
    w("")
    return out
