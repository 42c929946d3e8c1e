"""bench/report_lib/targets.py: the verdicts: ratios against the other issues' targets (with
✓/✗) and the generated notes on where the cache does not help."""
from report_lib.data import fmt, med, ratio
from report_lib.names import PATH_NAMES, RB, READ_PATHS, path_label


def warm_conns(cfg):
    """The connection count the ratios compare at: 64, or the largest of the run's without it."""
    conns_all = cfg["connections"]
    return 64 if 64 in conns_all else max(conns_all)


def warm(data, field, c64):
    """field's median over the warm samples at c64 connections, by (client, path, batch)."""
    return lambda client, p, b: data.median(field, "warm", client, p, c64, b)


def write_ratios(out, data, cfg):
    """The ratios against the targets and the server CPU per request of the warm reads (no section
    without warm samples); the targets missed, for the notes."""
    w = out.append
    c64 = warm_conns(cfg)
    rps, cpu = warm(data, "rps", c64), warm(data, "server_cpu_us_per_req", c64)
    ratios_start = len(out)  # the section is dropped when the run has no warm samples
    w("## Ratios against the targets")
    w("")
    note64 = "" if c64 == 64 else f" (64 connections were not measured in this run: {c64} connections instead)"
    w(f"Same machine, same client, {c64} connections{note64}, warm reads; ratios of medians. The targets are goals "
      "of the other issues, not assertions of the harness.")
    w("")
    w("| ratio | target | " + " | ".join(f"{c} client" for c in cfg["clients"]) + " |")
    w("| --- | --- | " + " | ".join("---" for _ in cfg["clients"]) + " |")
    rows = []
    for b in cfg["batches"]:
        tgt = {1: ">= 1.0", 64: ">= 1.6"}.get(b, "–")
        rows.append((f"mget / prepared SQL requests/s, {b} key(s)", tgt, b,
                     lambda c, b=b: ratio(rps(c, "mget", b), rps(c, "sql", b)), {1: 1.0, 64: 1.6}.get(b), True))
    for b in cfg["batches"]:
        rows.append((f"mget_json / prepared SQL requests/s, {b} key(s)", "–", b,
                     lambda c, b=b: ratio(rps(c, "mget_json", b), rps(c, "sql", b)), None, True))
    for b in cfg["batches"]:
        rows.append((f"mget / prepared SQL server CPU per request, {b} key(s)", "<= 0.6" if b == 64 else "–", b,
                     lambda c, b=b: ratio(cpu(c, "mget", b), cpu(c, "sql", b)), 0.6 if b == 64 else None, False))
    for b in cfg["batches"]:
        rows.append((f"FDW / prepared SQL requests/s, {b} key(s)", ">= 1.2" if b == 64 else "–", b,
                     lambda c, b=b: ratio(rps(c, "fdw", b), rps(c, "sql", b)), 1.2 if b == 64 else None, True))
    rows.append(("RESP / prepared SQL requests/s, 1 key", "–", 1,
                 lambda c: ratio(rps(c, "resp", 1), rps(c, "sql", 1)), None, True))
    rows.append(("RESP / prepared SQL server CPU per request, 1 key", "<= 0.33", 1,
                 lambda c: ratio(cpu(c, "resp", 1), cpu(c, "sql", 1)), 1 / 3, False))
    for b in cfg["batches"]:
        rows.append((f"RESP / redis-server requests/s, {b} key(s)", ">= 0.8", b,
                     lambda c, b=b: ratio(rps(c, "resp", b), rps(c, "redis", b)), 0.8, True))
    for b in cfg["batches"]:
        rows.append((f"RESP / redis-server server CPU per request, {b} key(s)", "–", b,
                     lambda c, b=b: ratio(cpu(c, "resp", b), cpu(c, "redis", b)), None, False))
    misses = []
    for label, tgt, b, fn, goal, higher in rows:
        if b not in cfg["batches"]:
            continue
        cells = []
        any_value = False
        for c in cfg["clients"]:
            r = fn(c)
            if r is None:
                cells.append("–")
                continue
            any_value = True
            mark = ""
            if goal is not None:
                ok = r >= goal if higher else r <= goal
                mark = " ✓" if ok else " ✗"
                if not ok:
                    misses.append(f"{label}: {r:.2f} with the {c} client (target {tgt})")
            cells.append(f"{r:.2f}{mark}")
        if any_value:
            w(f"| {label} | {tgt} | " + " | ".join(cells) + " |")
    w("")
    w(f"Server CPU µs per request at {c64} connections (warm reads, median):")
    w("")
    paths = READ_PATHS
    w("| client | keys | " + " | ".join(PATH_NAMES[p] for p in paths) + " |")
    w("| --- | --- | " + " | ".join("---" for _ in paths) + " |")
    for c in cfg["clients"]:
        for b in cfg["batches"]:
            cells = [fmt(cpu(c, p, b), 1) for p in paths]
            if any(x != "–" for x in cells):
                w(f"| {c} | {b} | " + " | ".join(cells) + " |")
    w("")
    if not any(k[0] == "warm" for k in data.groups):
        del out[ratios_start:]
    return misses


def write_notes(w, doc, data, cfg, misses, cpu_over):
    """Where the cache does not help: the targets missed, the RESP combinations that cost more CPU
    than redis-server (cpu_over) and what the numbers say about each mode."""
    conns_all = cfg["connections"]
    c64 = warm_conns(cfg)
    rps = warm(data, "rps", c64)
    paths = READ_PATHS
    has_rb = any(k[1] == RB for k in data.groups)
    has_miss = any(k[0] == "miss" for k in data.groups)
    has_neg = any("negative_hits" in (smp.get("cache_stats_delta") or {}) for smp in doc["samples"])
    w("## Where the cache does not help (generated from the numbers above)")
    w("")
    notes = []
    for x in misses:
        notes.append(f"Target missed: {x}.")
    for c in cfg["clients"]:
        for b in cfg["batches"]:
            for p in ["mget", "mget_json", "fdw"]:
                r = ratio(rps(c, p, b), rps(c, "sql", b))
                if r is not None and r < 1.0:
                    notes.append(f"{PATH_NAMES[p]} is slower than prepared SQL at {b} key(s), {c64} connections, "
                                 f"{c} client ({r:.2f}x requests/s).")
    for c in cfg["clients"]:
        bound = []
        for p in paths:
            for b in cfg["batches"]:
                cl = data.median("client_cpu_us_per_req", "warm", c, p, c64, b)
                sv = data.median("server_cpu_us_per_req", "warm", c, p, c64, b)
                if cl is not None and sv is not None and cl >= sv:
                    bound.append(f"{path_label(c, p, b)}/{b}")
        if bound:
            notes.append(f"With the {c} client the client spends at least as much CPU per request as the server on "
                         f"{len(bound)} of the warm combinations at {c64} connections ({', '.join(bound[:8])}"
                         f"{', …' if len(bound) > 8 else ''}): there requests/s measures the client as much as the "
                         "server, and the server CPU column is the fairer comparison.")
    for n in conns_all:
        for c in cfg["clients"]:
            on = data.median("rps", "write", c, "update", n, 1, "cache_enabled")
            off = data.median("rps", "write", c, "update", n, 1, "cache_disabled")
            con = data.median("server_cpu_us_per_req", "write", c, "update", n, 1, "cache_enabled")
            coff = data.median("server_cpu_us_per_req", "write", c, "update", n, 1, "cache_disabled")
            if on and off:
                notes.append(f"Writes, {c} client, {n} connections: with the cache enabled UPDATE runs at "
                             f"{on / off:.2f}x the requests/s of the uncached table, server CPU per UPDATE "
                             f"{fmt(con, 1)} vs {fmt(coff, 1)} µs (the triggers and pre-commit invalidation cost this).")
            rs = data.median("rps", "write", c, "resp_set", n, 1, "cache_enabled")
            crs = data.median("server_cpu_us_per_req", "write", c, "resp_set", n, 1, "cache_enabled")
            rd = data.median("rps", "write", c, "redis_set", n, 1, None)
            crd = data.median("server_cpu_us_per_req", "write", c, "redis_set", n, 1, None)
            if rs and on:
                notes.append(f"Writes, {c} client, {n} connections: RESP SET runs at {rs / on:.2f}x the requests/s "
                             "of SQL UPDATE on the cached table"
                             + (f" and {rs / rd:.2f}x those of redis-server SET" if rd else "")
                             + f"; server CPU per write {fmt(crs, 1)} µs vs {fmt(con, 1)} µs for SQL UPDATE"
                             + (f" and {fmt(crd, 1)} µs for redis-server SET" if rd else "")
                             + " (SET writes the whole row from its JSON through SPI, and answers after its "
                               "commit).")
    if cpu_over:
        shown = sorted(cpu_over, key=lambda x: -x[5])
        notes.append(f"RESP costs more server CPU per request than redis-server in {len(cpu_over)} of the side-by-side "
                     "combinations (largest first): " + "; ".join(
                         f"{mo}, {c}, {'GET' if c == RB and b == 1 else 'MGET'} of {b}, {n} conns"
                         f"{', -P ' + str(pl) if pl != 1 else ''}: {r:.2f}x" for mo, c, n, b, pl, r in shown[:10])
                     + (", …" if len(shown) > 10 else "") + ".")
    if has_miss:
        for c in cfg["clients"]:
            for b in cfg["batches"]:
                for pl in data.pipelines():
                    for p in ["mget", "fdw", "resp"]:
                        a = dict(mode="miss", client=c, path=p, conns=c64, batch=b, pipeline=pl)
                        g = data.get(**a)
                        if not g:
                            continue
                        neg = med([s_["cache_stats_delta"].get("negative_hits", 0) / max(s_["requests"], 1)
                                   for s_ in g if s_.get("cache_stats_delta")])
                        absent = data.median("absent_keys_per_request", **a)
                        label = path_label(c, p, b, pl)
                        if has_neg and absent and (neg or 0) < 0.9 * absent:
                            notes.append(f"Miss mode, {c} client, {label}, {b} key(s), {c64} connections: only "
                                         f"{fmt(neg, 2)} of the {fmt(absent, 1)} absent keys per request were "
                                         "answered from negative entries.")
                        cm = data.median("server_cpu_us_per_req", **a)
                        cw = data.median("server_cpu_us_per_req", "warm", c, p, c64, b, pipeline=pl)
                        cs = data.median("server_cpu_us_per_req", "miss", c, "sql", c64, b)
                        if cm is not None and cs is not None and cm >= cs:
                            notes.append(f"Miss mode, {c} client, {label}, {b} key(s), {c64} connections: "
                                         f"{fmt(cm, 1)} µs server CPU per request, not below prepared SQL's "
                                         f"{fmt(cs, 1)} µs.")
                        if cm is not None and cw and cm > 1.25 * cw:
                            notes.append(f"Miss mode, {c} client, {label}, {b} key(s), {c64} connections: "
                                         f"{fmt(cm, 1)} µs server CPU per request against {fmt(cw, 1)} µs for the "
                                         "same number of present keys (warm): absent keys cost more than rows.")
    if has_rb:
        notes.append("redis-benchmark: its server CPU window runs from just before the process starts to just "
                     "after it exits, so it includes opening and closing its connections (a few ms at most "
                     "against a run of seconds); its requests/s counts commands, also when pipelined.")
    if any(k[0] == "cold" for k in data.groups):
        notes.append("Cold fill: the table has only 4,096 rows, so a flushed cache is refilled within the first "
                     "fraction of a second of a sample; the misses/req column shows how cold each sample really was. "
                     "Misses cost an index scan plus the fill, i.e. at least what prepared SQL costs.")
    if any(k[0] == "mixed" for k in data.groups):
        notes.append("Mixed: each UPDATE of a hot row invalidates its entry, and the next read of it misses and "
                     "refills (misses/req column).")
    if cfg["repeats"] == 1:
        notes.append("This run has a single repetition per combination (no min–max): differences of 10–15 % "
                     "between paths are within its noise; use the default REPEATS=3 for conclusions.")
    notes.append("Everything here is one machine with the client on the same cores; a larger machine, or the "
                 "client on another one, changes the requests/s ratios, much less the server CPU per request.")
    for n_ in notes:
        w(f"* {n_}")
    w("")
