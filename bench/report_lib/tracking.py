"""bench/report_lib/tracking.py: the "Client-side caching (CLIENT TRACKING)" section (`--tracking`, a
bench/run tracking result, or FILE's own doc["tracking"]): the invalidation delay at the tracking
connections, the push delay on the primary and on a hot standby without and with concurrent DDL,
reads through node-redis's client-side cache against plain GETs, the writers' commit path
(pgbench UPDATE tps) without and with the tracking connections, and the targets with their
verdicts: issue 29's (push delay p99 from the commit's return ≤ 2 ms, commit path at most 5 %
slower, no stale read and no missing push) and issue 43's (per push-delay cell: p99 ≤ 2 ms on the
primary, ≤ 2 ms after the standby's replay on a standby)."""
from report_lib.data import fmt, fmt_range, med, ratio, section_start
from report_lib.names import resp_workers

DELAY_TARGET_US = 2000    # p99 of the push's arrival after the SQL COMMIT (UPDATE) returned
AFTER_REPLAY_TARGET_US = 2000  # on a standby: p99 of the push's arrival after the commit became visible there
SLOWDOWN_TARGET = 0.05    # pgbench UPDATE tps with the tracking connections, at most this much lower
PERCENTILES = [("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9"), ("max", "max")]
VARIANTS = [("csc", "client-side cache"), ("plain", "plain GET")]
# the with-DDL cells' statements (bench/node/tracking.js DDL), as the DDL table names them
DDL_NAMES = {"vacuum_full": "VACUUM FULL", "cluster": "CLUSTER", "truncate_side": "TRUNCATE items_side",
             "alter": "ALTER TABLE"}


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
    # results since issue 43 time the COMMIT of `BEGIN; UPDATE`, older ones an autocommit UPDATE
    commit = "server" in delay
    what = "COMMIT" if commit else "UPDATE"
    out = section_start("Client-side caching (CLIENT TRACKING)", doc, src, "tracking")
    w = out.append
    w(f"bench/node/tracking.js (Node.js {v.get('node') or '?'}, node-redis {redis_version} over RESP3, node-postgres "
      f"{v.get('node_pg') or '?'}) against the RESP server ({resp_workers(cfg['server'])} worker(s), "
      f"`synchronous_commit = {cfg['server'].get('synchronous_commit', '?')}`), on the {tr['hot_rows']} hot rows "
      "`items:1` … of `public.items`. Three measurements:")
    w("")
    if commit:
        w(f"* **Invalidation delay**: {tr['connections']} RESP3 connections with `CLIENT TRACKING ON` (spread over the "
          "workers as SO_REUSEPORT places them" + (f": {per_worker}" if per_worker else "") + ") each read "
          "`items:<id>`; one node-postgres connection (`SET synchronous_commit = "
          f"{delay.get('synchronous_commit') or 'off'}`) runs `BEGIN; UPDATE public.items … WHERE id = <id>` and then "
          "`COMMIT`; per tracking connection, the time from the COMMIT's return to its client (the pg promise "
          f"resolving) to the arrival of the push naming the key, and from the COMMIT's send. {tr['rounds']} commits "
          "(after 10 of warm-up), one at a time, cycling over the hot rows; a push that arrived before the COMMIT "
          f"returned counts 0 from the return ({fmt(delay.get('before_return'))} did); a push still missing 2 s after "
          "the COMMIT is counted as missing. One node process receives every push, so its event loop is part of the "
          "figure.")
    else:
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
    for field, name in [("from_return_us", f"the {what}'s return"), ("from_send_us", f"the {what}'s send")]:
        p = delay.get(field) or {}
        w(f"| {name} | " + " | ".join(fmt(p.get(k)) for k, _ in PERCENTILES)
          + f" | {fmt(delay.get('pushes'))} | {fmt(delay.get('missing'))} |")
    w("")
    out += push_delay_lines(tr)
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
        (f"push delay p99 from the {what}'s return ≤ {DELAY_TARGET_US:,} µs ({tr['connections']} tracking "
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
    cells = push_delay_targets(tr)
    if cells:
        w("Targets (issue 43, per push-delay cell; ✓/✗):")
        w("")
        w("| target | value |")
        w("| --- | --- |")
        for label, value, ok in cells:
            w(f"| {label} | {value}{verdict(ok)} |")
        w("")
        missed += [f"{label}: {value}" for label, value, ok in cells if ok is False]
    if missed:
        w("Targets missed: " + "; ".join(missed) + ".")
        w("")
    return out


def cell_name(c):
    return f"{c.get('server', 'primary')}, {'with DDL' if c.get('ddl') else 'no DDL'}"


def push_delay_targets(tr):
    """Issue 43's target line of each push-delay cell: (label, value, verdict)."""
    out = []
    for c in tr.get("push_delay") or []:
        p99 = (c.get("from_return_us") or {}).get("p99")
        if c.get("server") == "standby":
            after = (c.get("after_replay_us") or {}).get("p99")
            replay = ((c.get("replay") or {}).get("from_return_us") or {}).get("p99")
            out.append((f"{cell_name(c)}: push p99 after the commit became visible on the standby ≤ "
                        f"{AFTER_REPLAY_TARGET_US:,} µs (≤ 2 ms plus the replay delay)",
                        "–" if after is None else f"{fmt(after)} µs (push p99 {fmt(p99)} µs from the COMMIT's return, "
                        f"replay p99 {fmt(replay)} µs)",
                        None if after is None else after <= AFTER_REPLAY_TARGET_US))
        else:
            out.append((f"{cell_name(c)}: push p99 from the COMMIT's return ≤ {DELAY_TARGET_US:,} µs",
                        "–" if p99 is None else f"{fmt(p99)} µs", None if p99 is None else p99 <= DELAY_TARGET_US))
    return out


def wait_share(waits, kinds):
    """The share of the RESP workers' pg_stat_activity samples in a wait of these types."""
    if not waits or not waits.get("samples"):
        return None
    n = sum(v for k, v in (waits.get("by_event") or {}).items() if k.split(":")[0] in kinds)
    return n / waits["samples"]


def push_delay_lines(tr):
    """Issue 43's push-delay cells: primary and standby, without and with concurrent DDL."""
    cells = tr.get("push_delay") or []
    if not cells:
        return []
    out = []
    w = out.append
    ddl_cell = next((c for c in cells if c.get("ddl")), None)
    standby_cell = next((c for c in cells if c.get("server") == "standby"), None)
    w(f"**Push delay on the primary and on a hot standby, without and with concurrent DDL** (issue 43): the delay "
      f"above, {tr['rounds']} commits per cell, each cell with {tr['connections']} new tracking connections. "
      "The percentiles are of the pushes naming the updated key, from the COMMIT's return to their arrival (0 when "
      "they came before it).")
    w("")
    if standby_cell:
        sb = standby_cell.get("per_worker") or {}
        w(f"* *Standby*: a streaming hot standby of the cluster (`tools/cluster.sh standby`, "
          f"{tr.get('standby_resp_workers_running', '?')} RESP worker(s)) streams during every cell; in its cells the "
          "tracking connections are the standby's RESP server's (" + ", ".join(f"{n} on worker {k}" for k, n in sorted(sb.items()))
          + "), the commits are the primary's. *Replay*: from just before each COMMIT is sent, a thread of the "
          "tracking process with nothing else to do polls the standby back to back with "
          "`pg_visible_in_snapshot(xid, pg_current_snapshot())` until a new snapshot there sees the commit: the "
          "replay delay is from the COMMIT's return to the reply of that poll (at most one poll late: p50 "
          f"{fmt(((standby_cell.get('replay') or {}).get('probe_rtt_us') or {}).get('p50'))} µs per poll), and *after "
          "replay* is each push's arrival after that moment, the push delay minus the replay delay (negative when "
          "the push came first, which the poll's lateness allows). The writer commits with `synchronous_commit = "
          f"{standby_cell.get('synchronous_commit') or 'off'}`, so that its WAL is streamed when COMMIT returns "
          "rather than at the walwriter's next round (up to `wal_writer_delay`, 200 ms, later).")
    if ddl_cell:
        stats = (ddl_cell.get("ddl_stats") or {})
        lock = ddl_cell.get("lock_readers") or {}
        w(f"* *Concurrent DDL*: another primary connection runs one statement every {fmt(stats.get('interval_ms'))} ms, "
          "in turn: `VACUUM FULL public.items` and `CLUSTER public.items USING items_pkey` (ACCESS EXCLUSIVE on the "
          "tracked table while they rewrite it: the UPDATE waits for them; nothing is flushed), `TRUNCATE "
          "public.items_side` refilled in the same transaction (ACCESS EXCLUSIVE on a second cached table; that "
          "table is flushed) and `ALTER TABLE public.items ALTER COLUMN value SET STORAGE EXTENDED` (ACCESS EXCLUSIVE, "
          "a definition change of the tracked table: everything is flushed, a null push to every tracking "
          f"connection). Meanwhile {fmt(lock.get('connections'))} more RESP connections to the same server each "
          f"read a key no row has every {fmt(lock.get('pause_ms'))} ms, alternately of both tables (a miss every time, "
          "so every read needs the table's lock): while a DDL holds the table they wait in the worker, which serves "
          "its other connections meanwhile. *Flush pushes* are the null pushes the tracking connections received "
          "(the DDL's own); a tracking connection a flush reached after its read and before the key's push no longer "
          "tracks the key, so no key push follows: that connection's commit counts under *covered by a flush*, "
          "neither as a key push nor as missing. *Worker waits*: the RESP workers' `wait_event_type` in "
          "`pg_stat_activity` sampled every 10 ms during the counted commits, the share in a Lock or LWLock wait.")
    if standby_cell or ddl_cell:
        w("")
    loads = [c["loadavg_1min"] for c in cells if c.get("loadavg_1min")]
    if loads:
        w("The machine's 1-minute load average around each cell (before → after; 2 cores: more than 2 means "
          "processes waited for a core, other work on the machine included): "
          + "; ".join(f"{cell_name(c)} {c['loadavg_1min'][0]:.1f} → {c['loadavg_1min'][1]:.1f}"
                      for c in cells if c.get("loadavg_1min")) + ".")
        w("")
    w("| server | concurrent DDL | p50 µs | p99 µs | max µs | key pushes | covered by a flush | flush pushes "
      "| missing | replay p50 µs | replay p99 µs | after replay p99 µs | workers in Lock/LWLock waits |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in cells:
        d = c.get("from_return_us") or {}
        rp = (c.get("replay") or {}).get("from_return_us") or {}
        after = c.get("after_replay_us") or {}
        share = wait_share(c.get("worker_waits"), ("Lock", "LWLock"))
        w(f"| {c.get('server', 'primary')} | {'yes' if c.get('ddl') else 'no'} | {fmt(d.get('p50'))} | "
          f"{fmt(d.get('p99'))} | {fmt(d.get('max'))} | {fmt(c.get('pushes'))} | {fmt(c.get('covered_by_flush'))} | "
          f"{fmt(c.get('flush_pushes'))} | {fmt(c.get('missing'))} | {fmt(rp.get('p50'))} | {fmt(rp.get('p99'))} | "
          f"{fmt(after.get('p99'))} | {'–' if share is None else f'{100 * share:.1f} %'} |")
    w("")
    ddl_cells = [c for c in cells if c.get("ddl_stats")]
    if ddl_cells:
        kinds = list((ddl_cells[0]["ddl_stats"].get("by_kind") or {}).keys())
        w("The DDL of the with-DDL cells: statements run (failed ones) and their median duration in ms, the time "
          "their locks were held at most; the lock readers' GETs and their latency:")
        w("")
        w("| server | " + " | ".join(f"{DDL_NAMES.get(k, k)} | ms" for k in kinds) + " | lock readers' GETs | p50 µs "
          "| p99 µs | max µs |")
        w("| --- | " + " | ".join("--- | ---" for _ in kinds) + " | --- | --- | --- | --- |")
        for c in ddl_cells:
            by = c["ddl_stats"].get("by_kind") or {}
            lock = c.get("lock_readers") or {}
            lat = lock.get("latency_us") or {}
            cols = []
            for k in kinds:
                b = by.get(k) or {}
                took = (b.get("took_us") or {}).get("p50")
                errors = f" ({b['errors']} failed)" if b.get("errors") else ""
                cols.append(f"{fmt(b.get('count'))}{errors} | {'–' if took is None else fmt(took / 1000, 1)}")
            w(f"| {c.get('server', 'primary')} | " + " | ".join(cols) + f" | {fmt(lock.get('requests'))} | "
              f"{fmt(lat.get('p50'))} | {fmt(lat.get('p99'))} | {fmt(lat.get('max'))} |")
        w("")
    return out
