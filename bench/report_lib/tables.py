"""bench/report_lib/tables.py: the Markdown tables of the matrix: RESP against redis-server side
by side, and one table per mode (requests/s, latencies, CPU, memory, cache counters)."""
from report_lib.data import fmt, fmt_range, med, ratio
from report_lib.names import (MODE_TITLES, MULTI_ROW_WRITE_PATHS, MULTI_ROW_WRITE_TITLE, PATH_NAMES, RB, READ_PATHS,
                               WRITE_PATHS, path_label)


def write_resp_vs_redis(w, data, cfg):
    """RESP against redis-server, same client and commands, per mode; the combinations where RESP
    costs more server CPU per request, for the notes."""
    conns_all = cfg["connections"]
    cpu_over = []  # (mode, client, conns, batch, pipeline, ratio) where RESP costs more CPU than redis-server
    vs_modes = [mo for mo in ["warm", "miss"] if any(k[0] == mo and k[2] == "resp" for k in data.groups)]
    if vs_modes:
        w("## RESP vs redis-server, side by side")
        w("")
        w("The same client sending the same commands to the extension's RESP server and to redis-server (same "
          "keys, same connections, same pipelining). Latencies are *RESP / redis-server*; ratios are RESP over "
          "redis-server (medians). The issue's goal is RESP at redis-server's server CPU per request or below "
          "(✓: ratio ≤ 1.00). Server CPU is all of PostgreSQL's processes for RESP, redis-server's for the "
          "reference. p99.9 of redis-benchmark: from its printed distribution (an upper bound).")
        w("")
        for mode in vs_modes:
            w(f"### {mode}")
            w("")
            w("| client | command | conns | keys | pipeline | requests/s RESP | requests/s redis-server | RESP / redis "
              "| p50 µs | p99 µs | p99.9 µs | server CPU µs/req RESP | server CPU µs/req redis-server | RESP / redis |")
            w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            for c in cfg["clients"]:
                for n in conns_all:
                    for b in cfg["batches"]:
                        for pl in data.pipelines():
                            ours = dict(mode=mode, client=c, path="resp", conns=n, batch=b, pipeline=pl)
                            ref = dict(ours, path="redis")
                            if not data.get(**ours) or not data.get(**ref):
                                continue
                            cells, _, r_cpu = side_by_side(data, ours, ref)
                            over = r_cpu is not None and round(r_cpu, 2) > 1.0  # as the cell shows it
                            mark = "" if r_cpu is None else (" ✗" if over else " ✓")
                            if over:
                                cpu_over.append((mode, c, n, b, pl, r_cpu))
                            cmd = "MGET" if c != RB or b != 1 else "GET"
                            w(f"| {c} | {cmd} | {n} | {b} | {pl if pl != 1 else 'none'} | {cells}{mark} |")
            w("")
    return cpu_over


def side_by_side(data, ours, ref):
    """The cells of one RESP vs redis-server row (the sample groups ours and ref, Data.get's
    arguments): requests/s of each and their ratio, p50/p99/p99.9 as *RESP / redis-server*, server
    CPU per request of each and their ratio (the last cell, for a mark after it); and the two ratios."""
    lat = lambda q: f"{fmt(data.median('latency_us.' + q, **ours))} / {fmt(data.median('latency_us.' + q, **ref))}"
    r_rps = ratio(data.median("rps", **ours), data.median("rps", **ref))
    r_cpu = ratio(data.median("server_cpu_us_per_req", **ours), data.median("server_cpu_us_per_req", **ref))
    cells = (f"{fmt_range(data.values('rps', **ours))} | {fmt_range(data.values('rps', **ref))} | "
             f"{fmt(r_rps, 2)} | {lat('p50')} | {lat('p99')} | {lat('p999')} | "
             f"{fmt_range(data.values('server_cpu_us_per_req', **ours), 1)} | "
             f"{fmt_range(data.values('server_cpu_us_per_req', **ref), 1)} | {fmt(r_cpu, 2)}")
    return cells, r_rps, r_cpu


def write_mode_tables(w, doc, data, cfg):
    """One section per mode of the run: every sample group's figures."""
    conns_all = cfg["connections"]
    paths = READ_PATHS
    modes_present = [mo for mo in ["warm", "miss", "mixed", "cold", "write", "serializable"]
                     if any(k[0] == mo for k in data.groups)]
    has_neg = any("negative_hits" in (smp.get("cache_stats_delta") or {}) for smp in doc["samples"])
    has_coalesced = any("coalesced_misses" in (smp.get("cache_stats_delta") or {}) for smp in doc["samples"])
    for mode in modes_present:
        multi = mode == "write" and any(k[0] == "write" and k[2] in MULTI_ROW_WRITE_PATHS for k in data.groups)
        w(f"## {MULTI_ROW_WRITE_TITLE if multi else MODE_TITLES[mode]}")
        w("")
        if mode == "write":
            if multi:
                w("One random row per request (batch 1), or 16 for the 16-row paths (one statement or one MSET per "
                  "request). *cache*: whether `public.items` is cached (RESP SET and MSET need it; "
                  "redis-server has no such thing). Server CPU is PostgreSQL's (all its processes) for SQL UPDATE and "
                  "RESP SET/MSET, redis-server's for redis-server SET/MSET.")
            else:
                w("One random row per request (batch 1). *cache*: whether `public.items` is cached (RESP SET needs it; "
                  "redis-server has no such thing). Server CPU is PostgreSQL's (all its processes) for SQL UPDATE and "
                  "RESP SET, redis-server's for redis-server SET.")
            w("")
            w("| client | path | connections | cache | requests/s | p50 µs | p90 µs | p99 µs | p99.9 µs | "
              "server CPU µs/req | client CPU µs/req |")
            w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            for c in cfg["clients"]:
                for n in conns_all:
                    for p, var in WRITE_PATHS:
                        key = ("write", c, p, n, 1, var)
                        if not data.get(*key):
                            continue
                        cache = {"cache_enabled": "enabled", "cache_disabled": "disabled"}.get(var, "–")
                        w(f"| {c} | {PATH_NAMES[p]} | {n} | {cache} | {fmt_range(data.values('rps', *key))} | "
                          f"{fmt(data.median('latency_us.p50', *key))} | "
                          f"{fmt(data.median('latency_us.p90', *key))} | "
                          f"{fmt(data.median('latency_us.p99', *key))} | "
                          f"{fmt(data.median('latency_us.p999', *key))} | "
                          f"{fmt_range(data.values('server_cpu_us_per_req', *key), 1)} | "
                          f"{fmt(data.median('client_cpu_us_per_req', *key), 1)} |")
            w("")
            continue
        if mode == "miss":
            w("*absent keys/req*: keys without a row per request (on average); *negative hits/req*: the absent "
              "keys the cache answered from its negative entries. For redis-benchmark, a request is one command "
              "(also with `-P`), and p90 is not printed by it (its p95 is in the JSON).")
            w("")
        elif any(k[0] == mode and k[1] == RB for k in data.groups):
            w("For redis-benchmark, a request is one command (also with `-P`), and p90 is not printed by it (its "
              "p95 is in the JSON).")
            w("")
        if has_coalesced and mode == "cold":
            w("*coalesced/req*: misses answered by another connection's read of the same key "
              "(`local_cache.fill_wait`); each is one index read saved.")
            w("")
        miss_col = mode == "miss"
        cols = (["client", "path", "conns", "keys"] + (["absent keys/req"] if miss_col else [])
                + ["requests/s", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "server CPU µs/req", "client CPU µs/req",
                   "peak server PSS MiB", "cache hits/req"] + (["negative hits/req"] if has_neg else []) + ["misses/req"]
                + (["coalesced/req"] if has_coalesced and mode == "cold" else []))
        w("| " + " | ".join(cols) + " |")
        w("| " + " | ".join("---" for _ in cols) + " |")
        for c in cfg["clients"]:
            for p in paths:
                for n in conns_all:
                    for b in cfg["batches"]:
                        for pl in data.pipelines():
                            a = dict(mode=mode, client=c, path=p, conns=n, batch=b, pipeline=pl)
                            g = data.get(**a)
                            if not g:
                                continue
                            def per_req(field, g=g, p=p):
                                xs = [s["cache_stats_delta"].get(field, 0) / max(s["requests"], 1) for s in g
                                      if s.get("cache_stats_delta")]
                                return fmt(med(xs), 2) if p != "redis" else "–"
                            cells = [c, path_label(c, p, b, pl), str(n), str(b)]
                            if miss_col:
                                cells.append(fmt(data.median("absent_keys_per_request", **a), 1))
                            cells += [fmt_range(data.values("rps", **a)),
                                      fmt(data.median("latency_us.p50", **a)), fmt(data.median("latency_us.p90", **a)),
                                      fmt(data.median("latency_us.p99", **a)), fmt(data.median("latency_us.p999", **a)),
                                      fmt_range(data.values("server_cpu_us_per_req", **a), 1),
                                      fmt(data.median("client_cpu_us_per_req", **a), 1),
                                      fmt((data.median("server_pss_peak_bytes", **a) or 0) / 2**20), per_req("hits")]
                            if has_neg:
                                cells.append(per_req("negative_hits"))
                            cells.append(per_req("misses"))
                            if has_coalesced and mode == "cold":
                                cells.append(per_req("coalesced_misses"))
                            w("| " + " | ".join(cells) + " |")
        w("")
