"""bench/report_lib/write_cost.py: the "What the cache costs writers" section (`--write`, a bench/run
write result): SQL UPDATE of one row with the table cached against the same not cached, and RESP SET
against the SQL UPDATE it replaces, per client and connection count, paired by round, with issue 46's
targets (UPDATE: at most 5 % fewer requests/s and at most 1.05x the server CPU per UPDATE; SET: at
most 1.0x the server CPU of the UPDATE) and their verdicts; then the same for 16 rows per request:
RESP MSET of 16 rows against ONE prepared SQL UPDATE of 16 rows on the cached table (target: at most
1.0x its server CPU), beside that UPDATE's cached / not cached ratios and redis-server's MSET; and
the UPDATE of both tables in one window (update_pair), each half's backends' CPU per UPDATE, beside its
control (the same with neither table cached)."""
from report_lib.data import fmt_range, med, section_start

TPS_LOSS_TARGET = 0.95  # cached / not cached requests/s, at least
CPU_TARGET = 1.05       # cached / not cached server CPU per UPDATE, at most
SET_CPU_TARGET = 1.0    # RESP SET / SQL UPDATE (cached) server CPU per write, at most
MSET_CPU_TARGET = 1.0   # RESP MSET of 16 rows / one 16-row SQL UPDATE (cached) server CPU per request, at most


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
    if cfg.get("write_tables_rewritten"):
        w("")
        w("Each sample, and each window of the samples made of windows, starts from `public.items` and "
          "`public.items_plain` just rewritten (`VACUUM FULL` of both, then `CHECKPOINT`): the UPDATEs of the "
          "samples before it bloat the tables they write, `public.items` more (the separate samples write it "
          "alone), and a table spread over more pages makes concurrent UPDATEs wait less for each other's page, "
          "which moved the cached/not cached ratio by more than the capture costs.")
    if cfg.get("server", {}).get("huge_pages") == "on":
        w("")
        w("This run's cluster had its shared memory in huge pages (`BENCH_HUGE_PAGES=1`: `huge_pages = on`, 2 MB "
          "pages reserved for the run), as PostgreSQL recommends for a large segment; with 4 kB pages each new "
          "backend takes a page fault on its first touch of each page of the cache's buckets, which at hundreds of "
          "connections becomes most of what the capture costs a writer (docs/OPERATIONS.md).")
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
    out += same_window_table(samples, cfg)
    out += multi_row_table(samples, cfg)
    return out


def same_window_table(samples, cfg):
    """The table "Both tables in one window" (no lines without update_pair samples)."""
    measured = [s for s in samples if s["path"] == "update_pair" and "halves" in s]
    pairs = [s for s in measured if s["variant"] != "cache_disabled"]
    controls = [s for s in measured if s["variant"] == "cache_disabled"]
    if not pairs:
        return []
    out = []
    w = out.append
    windows = {s.get("windows", 1) for s in pairs}
    made_of = ("" if windows == {1} else
               f", each made of {'/'.join(map(str, sorted(windows)))} windows, every one with fresh connections, summed "
               "(with two backends per half, one window's ratio depends mostly on where the scheduler placed its "
               "backends; fresh connections place them again)")
    w("### Both tables in one window")
    w("")
    w("The same prepared UPDATE at once on `public.items` (cached) from half the connections and on "
      f"`public.items_plain` (the same rows, never cached) from the other half, one sample per round{made_of}: both "
      "halves share the machine's state second by second, which the separate samples above, minutes apart, do not "
      "(their rounds of the same cell differ by more than the capture costs). Each half's *backend CPU per UPDATE* is its own backends' "
      "CPU, exact (`/proc/PID/schedstat`; each connection names its half in `application_name`), over its own UPDATEs; what the cache costs other "
      "processes is in the separate samples' server CPU. Ratios per round, medians (min–max). Target (issue 46): "
      f"cached at most {CPU_TARGET}x the CPU per UPDATE of the not cached half. Each half's UPDATEs/s are the "
      "client's to share out (node's one event loop takes its connections' replies in its own order) and have no "
      "target here; the separate samples above have it." + (
          " *Control*: the same sample with `public.items` not cached either, in the same rounds: the ratio of the "
          "two halves' CPU per UPDATE when nothing tells them apart, so how far from 1.00 the method itself lands "
          "(the tables' state, the client's order of its connections, the machine's moments)." if controls else ""))
    w("")
    w("| client | connections | UPDATEs/s cached, not | cached / not | backend CPU µs per UPDATE cached, not | "
      "cached / not | target |" + (" control: neither cached, CPU ratio |" if controls else ""))
    w("| --- | --- | --- | --- | --- | --- | --- |" + (" --- |" if controls else ""))
    def halves_of(of_samples, client, conns):
        return [s["halves"] for s in of_samples if s["client"] == client and s["connections"] == conns]

    def ratio(halves, field):
        return [h["cached"][field] / h["plain"][field] for h in halves if h["plain"][field]]

    for client in cfg["clients"]:
        for conns in cfg["connections"]:
            group = halves_of(pairs, client, conns)
            if not group:
                continue

            def of(half, field):
                return [h[half][field] for h in group]
            tps, cpu = ratio(group, "rps"), ratio(group, "backend_cpu_us_per_update")
            control_cpu = ratio(halves_of(controls, client, conns), "backend_cpu_us_per_update")
            w(f"| {client} | {conns} | {fmt_range(of('cached', 'rps'))}, {fmt_range(of('plain', 'rps'))} | "
              f"{fmt_range(tps, 2)} | "
              f"{fmt_range(of('cached', 'backend_cpu_us_per_update'), 1)}, "
              f"{fmt_range(of('plain', 'backend_cpu_us_per_update'), 1)} | {fmt_range(cpu, 2)} | "
              f"{verdict(med(cpu), CPU_TARGET)} |" + (f" {fmt_range(control_cpu, 2)} |" if controls else ""))
    w("")
    return out


def multi_row_table(samples, cfg):
    """The table "MSET 16 vs one 16-row UPDATE (cached)" (no lines without 16-row samples)."""
    cached, plain = ("update16", "cache_enabled"), ("update16", "cache_disabled")
    mset, redis_mset = ("resp_mset", "cache_enabled"), ("redis_mset", None)
    multi = [s for s in samples if s["path"] in ("update16", "resp_mset", "redis_mset")]
    if not multi:
        return []
    rows = cfg.get("write_multi_rows", 16)
    out = []
    w = out.append
    w(f"### MSET {rows} vs one {rows}-row UPDATE (cached)")
    w("")
    w(f"{rows} distinct random rows per request (ascending ids), one request a statement or a command: ONE prepared "
      "`UPDATE public.items AS t SET value = v.value FROM unnest($1::bigint[], $2::text[]) AS v(id, value) WHERE "
      f"t.id = v.id` with the table cached and not cached, RESP `MSET` of the {rows} rows' JSON objects (as the "
      "writing role) and redis-server's `MSET` of the same bytes; server CPU per request as above, ratios within "
      f"one round, medians (min–max). Target (issue 46): an MSET of {rows} rows at most {MSET_CPU_TARGET}x the "
      f"server CPU of one {rows}-row SQL statement on the cached table. Clients with no {rows}-row paths have no row.")
    w("")
    w(f"| client | connections | server CPU µs per MSET | per {rows}-row UPDATE cached | MSET / UPDATE (cached) | "
      f"target | {rows}-row UPDATE requests/s cached / not | server CPU cached / not | MSET requests/s | "
      "redis-server MSET server CPU µs |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for client in cfg["clients"]:
        for conns in cfg["connections"]:
            group = [s for s in multi if s["client"] == client and s["connections"] == conns]
            if not group:
                continue
            mset_cpu = paired(group, mset, cached, "server_cpu_us_per_req")
            tps = paired(group, cached, plain, "rps")
            cpu = paired(group, cached, plain, "server_cpu_us_per_req")

            def of(key, field="server_cpu_us_per_req"):
                return [s[field] for s in group if (s["path"], s["variant"]) == key]
            w(f"| {client} | {conns} | {fmt_range(of(mset), 1)} | {fmt_range(of(cached), 1)} | "
              f"{fmt_range(mset_cpu, 2)} | {verdict(med(mset_cpu), MSET_CPU_TARGET)} | {fmt_range(tps, 2)} | "
              f"{fmt_range(cpu, 2)} | {fmt_range(of(mset, 'rps'))} | {fmt_range(of(redis_mset), 1)} |")
    w("")
    return out
