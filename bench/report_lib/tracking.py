"""bench/report_lib/tracking.py: the "Client-side caching (CLIENT TRACKING)" section (`--tracking`, a
bench/run tracking result, or FILE's own doc["tracking"]): the invalidation delay at the tracking
connections, reads through node-redis's client-side cache against plain GETs, the writers' commit
path (pgbench UPDATE tps) without and with the tracking connections, and issue 29's targets with
their verdicts: push delay p99 from the UPDATE's return ≤ 2 ms, commit path at most 5 % slower,
no stale read and no missing push."""
from report_lib.data import fmt, fmt_range, med, ratio, section_start
from report_lib.names import resp_workers

DELAY_TARGET_US = 2000    # p99 of the push's arrival after the SQL UPDATE returned
SLOWDOWN_TARGET = 0.05    # pgbench UPDATE tps with the tracking connections, at most this much lower
PERCENTILES = [("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9"), ("max", "max")]
VARIANTS = [("csc", "client-side cache"), ("plain", "plain GET")]


def us(xs):
    """Latencies in µs: a decimal below 100 µs (a local hit takes a few), none above."""
    m = med(xs)
    return fmt_range(xs, 1 if m is not None and m < 100 else 0)


def verdict(ok):
    return "" if ok is None else " ✓" if ok else " ✗"


def tracking_section(doc, src):
    """The section's lines from doc["tracking"] (none without it)."""
    tr = doc.get("tracking")
    if not tr:
        return []
    cfg = doc["config"]
    delay = tr.get("delay") or {}
    reads = tr.get("reads") or []
    cp = tr.get("commit_path") or {}
    v = doc.get("versions", {})
    redis_version = v.get("node_redis6") or "6"
    per_worker = ", ".join(f"{n} on worker {w}" for w, n in sorted((delay.get("per_worker") or {}).items()))
    out = section_start("Client-side caching (CLIENT TRACKING)", doc, src, "tracking")
    w = out.append
    w(f"bench/node/tracking.js (Node.js {v.get('node') or '?'}, node-redis {redis_version} over RESP3, node-postgres "
      f"{v.get('node_pg') or '?'}) against the RESP server ({resp_workers(cfg['server'])} worker(s), "
      f"`synchronous_commit = {cfg['server'].get('synchronous_commit', '?')}`), on the {tr['hot_rows']} hot rows "
      "`items:1` … of `public.items`. Three measurements:")
    w("")
    w(f"* **Invalidation delay**: {tr['connections']} RESP3 connections with `CLIENT TRACKING ON` (spread over the "
      "workers as SO_REUSEPORT places them" + (f": {per_worker}" if per_worker else "") + ") each read "
      f"`items:<id>`; one node-postgres connection runs an autocommit `UPDATE public.items … WHERE id = <id>`; per "
      "tracking connection, the time from the UPDATE's return to its client (the pg promise resolving) to the "
      f"invalidation push's arrival, and from the UPDATE's send. {tr['rounds']} UPDATEs (after 10 of warm-up), one "
      "at a time, cycling over the hot rows; a push that arrived before the UPDATE returned counts 0 from the return "
      f"({fmt(delay.get('before_return'))} did); a push still missing 2 s after the UPDATE is counted as missing. One "
      "node process receives every push, so its event loop is part of the figure.")
    w(f"* **Reads**: {tr['read_connections']} node-redis RESP3 clients, each a closed loop of `GET items:<random hot "
      "id>`, with node-redis's client-side cache (`clientSideCache: { ttl: 0, maxEntries: 0 }`: tracking on, "
      "nothing expires, nothing evicted) or without it (plain GETs, every one a round trip), while one node-postgres "
      f"connection UPDATEs random hot rows at {fmt(tr['write_rate'])} per second. The *local hit ratio* is node-redis's "
      "cache hits over its lookups; after each run and a 300 ms pause every client reads every hot row once more and "
      "compares it with SQL: *stale* counts the differences. Server CPU: all of PostgreSQL's processes over the run, "
      "the writer's UPDATEs included.")
    w(f"* **Commit path**: pgbench ({cp.get('pgbench_clients', '?')} clients, one thread) runs `UPDATE public.items SET "
      "value = md5(random()::text) WHERE id = <random hot id>` without and with "
      f"{cp.get('trackers', tr['connections'])} tracking connections that read every hot row once and then listen: "
      "every commit goes through the tracking log and both workers read it (the writers' side of tracking; a "
      "key invalidated is tracked again only once read again, and re-reads would be a read workload of their own, "
      "which the reads rows measure: *pushes received* counts the invalidations the commits sent).")
    w("")
    w(f"Reads and pgbench: {cfg['repeats']} run(s) of each variant of {cfg['duration_seconds']:g} s, the variants' "
      "order alternating by run; medians (min–max).")
    w("")
    # ------------------------------------------------------------ delay
    w(f"Invalidation delay at {tr['connections']} tracking connections (µs):")
    w("")
    w("| from | " + " | ".join(name for _, name in PERCENTILES) + " | pushes | missing |")
    w("| --- | " + " | ".join("---" for _ in PERCENTILES) + " | --- | --- |")
    for field, name in [("from_return_us", "the UPDATE's return"), ("from_send_us", "the UPDATE's send")]:
        p = delay.get(field) or {}
        w(f"| {name} | " + " | ".join(fmt(p.get(k)) for k, _ in PERCENTILES)
          + f" | {fmt(delay.get('pushes'))} | {fmt(delay.get('missing'))} |")
    w("")
    # ------------------------------------------------------------ reads
    runs = {variant: [r for r in reads if r.get("variant") == variant] for variant, _ in VARIANTS}
    vals = lambda variant, f: [x for x in (f(r) for r in runs[variant]) if x is not None]  # noqa: E731
    lat = lambda k: lambda r: (r.get("latency_us") or {}).get(k)  # noqa: E731
    w(f"Reads, {tr['read_connections']} clients, {fmt(tr['write_rate'])} SQL UPDATEs/s:")
    w("")
    w("| reads | requests/s | p50 µs | p99 µs | p99.9 µs | server CPU µs/req | local hit ratio | stale |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for variant, name in VARIANTS:
        if not runs[variant]:
            continue
        hits = vals(variant, lambda r: r.get("hit_ratio"))
        w(f"| {name} | {fmt_range(vals(variant, lambda r: r.get('rps')))} | {us(vals(variant, lat('p50')))} | "
          f"{us(vals(variant, lat('p99')))} | {us(vals(variant, lat('p999')))} | "
          f"{fmt_range(vals(variant, lambda r: r.get('server_cpu_us_per_req')), 2)} | "
          f"{fmt_range(hits, 3) if hits else '–'} | {sum(r.get('stale', 0) for r in runs[variant])} |")
    w("")
    m = lambda variant, f: med(vals(variant, f))  # noqa: E731
    rps_r = ratio(m("csc", lambda r: r.get("rps")), m("plain", lambda r: r.get("rps")))
    cpu_r = ratio(m("csc", lambda r: r.get("server_cpu_us_per_req")), m("plain", lambda r: r.get("server_cpu_us_per_req")))
    if rps_r is not None:
        w(f"The client-side cache against plain GETs: {rps_r:.1f}x the requests/s"
          + (f", {cpu_r:.2g}x the server CPU per request" if cpu_r is not None else "") + ".")
        w("")
    # ------------------------------------------------------------ commit path
    without, with_ = cp.get("without") or [], cp.get("with") or []
    slowdown = None
    if without and with_:
        slowdown = 1 - ratio(med(with_), med(without))
    cpu = cp.get("server_cpu_us_per_update") or {}
    resp = cp.get("resp_cpu_us_per_update") or {}
    rest = [a - b for a, b in zip(cpu.get("with") or [], resp.get("with") or [])]  # backends, postmaster, ...
    hold_cpu = cp.get("hold_cpu_s") or []
    w("Commit path (pgbench UPDATE tps, without connection setup). *Server CPU per UPDATE*: all of PostgreSQL's "
      "processes over the run over the UPDATEs pgbench ran; with tracking, split into the RESP workers' (the "
      "pushes, reading the tracking log) and the rest's (the writers' backends: the commit path); *tracking client CPU*: the process holding the tracking connections. Both share the "
      f"machine's {doc.get('machine', {}).get('cores', '?')} cores with pgbench and its backends, so the slowdown is "
      "the commit path's own cost plus the cores they take from the writers.")
    w("")
    trackers = cp.get("trackers", tr["connections"])
    w(f"| pgbench clients | tps without tracking | tps with {trackers} tracking connections | slowdown "
      "| server CPU µs/UPDATE without | with | with: RESP workers | with: the rest | tracking client CPU s "
      "| pushes received |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    pushes = [h.get("pushes") for h in cp.get("hold") or [] if h.get("pushes") is not None]
    w(f"| {cp.get('pgbench_clients', '–')} | {fmt_range(without)} | {fmt_range(with_)} | "
      f"{'–' if slowdown is None else f'{100 * slowdown:.1f} %'} | {fmt_range(cpu.get('without') or [])} | "
      f"{fmt_range(cpu.get('with') or [])} | {fmt_range(resp.get('with') or [])} | {fmt_range(rest)} | "
      f"{fmt_range(hold_cpu, 1)} | {fmt(sum(pushes)) if pushes else '–'} |")
    w("")
    # ------------------------------------------------------------ targets
    p99 = (delay.get("from_return_us") or {}).get("p99")
    stale = sum(r.get("stale", 0) for r in reads)
    missing = delay.get("missing")
    targets = [
        (f"push delay p99 from the UPDATE's return ≤ {DELAY_TARGET_US:,} µs ({tr['connections']} tracking "
         "connections)", "–" if p99 is None else f"{fmt(p99)} µs", None if p99 is None else p99 <= DELAY_TARGET_US),
        (f"commit path slowdown ≤ {100 * SLOWDOWN_TARGET:.0f} % (pgbench UPDATE tps with / without)",
         "–" if slowdown is None else f"{100 * slowdown:.1f} %",
         None if slowdown is None else slowdown <= SLOWDOWN_TARGET),
        ("stale reads = 0 (every client's view of every hot row after each read run)", fmt(stale) if reads else "–",
         stale == 0 if reads else None),
        ("missing pushes = 0", fmt(missing), None if missing is None else missing == 0),
    ]
    w("Targets (issue 29; ✓/✗):")
    w("")
    w("| target | value |")
    w("| --- | --- |")
    for label, value, ok in targets:
        w(f"| {label} | {value}{verdict(ok)} |")
    w("")
    missed = [f"{label}: {value}" for label, value, ok in targets if ok is False]
    if missed:
        w("Targets missed: " + "; ".join(missed) + ".")
        w("")
    return out
