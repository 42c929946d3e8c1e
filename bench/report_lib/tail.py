"""bench/report_lib/tail.py: the "Tail latency at 64 connections" section (`--tail`, a bench/run tail
result): every client's RESP MGET of 1 and 16 keys beside redis-server's, with the batching pause
and without it, issue 30's tail targets (p99 and p99.9 at most 1.2x redis-server's, requests/s not
below) with their verdicts, and the check that nothing else lost: the tail run's other paths on
this tree's build against the same samples on its baseline build (bench/run's BENCH_BASELINE_DIR,
alternating blocks of the same run), corrected by how much redis-server's own samples moved between
the blocks (the same code, so what the minutes between them changed)."""
from report_lib.data import Data, fmt, fmt_pct, fmt_range, judged, ratio, section_start
from report_lib.names import PATH_NAMES, RB, path_label
from report_lib.tables import side_by_side

TAIL_TARGET = 1.2
RPS_TARGET = 1.0
LOSS_LIMIT = -5.0  # per cent of requests/s, after the sitting's drift
POLICIES = [(None, "pause (default)"), ("no_pause", "none (`resp_batch_delay = 0`)")]
# what else the tail run measures, each with the redis-server samples that show the sitting's drift
OTHERS = [("warm", "sql", None, "redis"), ("warm", "mget", None, "redis"), ("warm", "mget_json", None, "redis"),
          ("warm", "fdw", None, "redis"), ("warm", "resp", None, "redis"),
          ("write", "update", "cache_enabled", "redis_set"), ("write", "update", "cache_disabled", "redis_set"),
          ("write", "resp_set", "cache_enabled", "redis_set")]


def pauses_per_1000(data, group):
    n = sum(s["requests"] for s in data.get(**group))
    pauses = data.values("batch_pauses", **group)
    return fmt(sum(pauses) * 1000 / n, 1) if pauses and n else "–"


def tail_rows(w, data, clients, conns, batches):
    """The side-by-side table: each client, request and batching policy beside redis-server."""
    w("| client | request | batching | requests/s RESP | requests/s redis-server | RESP / redis | p50 µs | p99 µs "
      "| p99.9 µs | server CPU µs/req RESP | server CPU µs/req redis-server | RESP / redis | pauses per 1,000 "
      "requests |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in clients:
        for b in batches:
            ref = dict(mode="warm", client=c, path="redis", conns=conns, batch=b)
            for variant, name in POLICIES:
                ours = dict(ref, path="resp", variant=variant)
                if data.get(**ours) and data.get(**ref):
                    w(f"| {c} | {path_label(c, 'resp', b)} of {b} | {name} | {side_by_side(data, ours, ref)[0]} | "
                      f"{pauses_per_1000(data, ours)} |")


def targets(w, data, clients, conns, batches):
    w(f"Targets (issue 30, item 3: {conns} connections, the shipped policy, the pause; ✓/✗): p99 and p99.9 at most "
      f"{TAIL_TARGET}x redis-server's, requests/s at least {RPS_TARGET}x.")
    w("")
    w("| client | request | p99 RESP / redis | p99.9 RESP / redis | requests/s RESP / redis |")
    w("| --- | --- | --- | --- | --- |")
    missed = []
    for c in clients:
        for b in batches:
            ref = dict(mode="warm", client=c, path="redis", conns=conns, batch=b)
            ours = dict(ref, path="resp")
            if not (data.get(**ours) and data.get(**ref)):
                continue
            r = {q: ratio(data.median(f"latency_us.{q}", **ours), data.median(f"latency_us.{q}", **ref))
                 for q in ("p99", "p999")}
            r_rps = ratio(data.median("rps", **ours), data.median("rps", **ref))
            label = f"{path_label(c, 'resp', b)} of {b}"
            w(f"| {c} | {label} | {judged(r['p99'], TAIL_TARGET, higher=False)} | "
              f"{judged(r['p999'], TAIL_TARGET, higher=False)} | {judged(r_rps, RPS_TARGET)} |")
            missed += [f"{c} {label}: {what} {v:.2f}x" for what, v, ok in
                       [("p99", r["p99"], r["p99"] is None or r["p99"] <= TAIL_TARGET),
                        ("p99.9", r["p999"], r["p999"] is None or r["p999"] <= TAIL_TARGET),
                        ("requests/s", r_rps, r_rps is None or r_rps >= RPS_TARGET)] if not ok]
    w("")
    if missed:
        w("Targets missed: " + "; ".join(missed) + ".")
        w("")


def no_loss_rows(w, data, baseline, clients, conns, batches):
    """The samples of this tree's build (data) against the baseline build's; the misses of the loss
    limit."""
    w("| client | path | keys | requests/s baseline | requests/s this build | change | redis-server's change "
      "| change beside redis-server's | server CPU µs/req baseline | this build |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    missed = []
    for c in clients:
        for mode, path, variant, control in OTHERS:
            for b in (batches if mode == "warm" else [1]):
                ours = dict(mode=mode, client=c, path=path, conns=conns, batch=b, variant=variant)
                ref = dict(ours, path=control, variant=None)
                old, new = baseline.median("rps", **ours), data.median("rps", **ours)
                if old is None or new is None:
                    continue
                drift = ratio(data.median("rps", **ref), baseline.median("rps", **ref))
                own = ratio(new, old)
                beside = None if drift is None else (own / drift - 1) * 100
                name = PATH_NAMES[path] + {"cache_enabled": ", cached", "cache_disabled": ", not cached"}.get(variant, "")
                mark = "" if beside is None else " ✓" if beside >= LOSS_LIMIT else " ✗"
                w(f"| {c} | {name} | {b if mode == 'warm' else '1 row'} | {fmt_range(baseline.values('rps', **ours))} | "
                  f"{fmt_range(data.values('rps', **ours))} | "
                  f"{fmt_pct((own - 1) * 100)} | {fmt_pct(None if drift is None else (drift - 1) * 100)} | "
                  f"{fmt_pct(beside)}{mark} | {fmt(baseline.median('server_cpu_us_per_req', **ours), 1)} | "
                  f"{fmt(data.median('server_cpu_us_per_req', **ours), 1)} |")
                if beside is not None and beside < LOSS_LIMIT:
                    missed.append(f"{c} {name} ({b}): {beside:+.0f} %")
    return missed


def tail_section(doc, src):
    """The section's lines from a bench/run tail result (its "no loss" part only when the run had a
    baseline build)."""
    data, baseline = Data(doc), Data(doc, build="baseline")
    cfg = doc["config"]
    conns = 64 if 64 in cfg["connections"] else max(cfg["connections"])
    batches = cfg["batches"]
    clients = [c for c in cfg["clients"] if any(k[1] == c for k in data.groups)]
    out = section_start(f"Tail latency at {conns} connections: RESP vs redis-server, every client", doc, src, "tail")
    w = out.append
    w(f"Each client sends the same MGET (redis-benchmark: GET for one key) to the extension's RESP server and to "
      f"redis-server at {conns} connections, no pipelining, the warm mode's rows; medians of {cfg['repeats']} "
      "alternating round(s) (min–max), latencies *RESP / redis-server*. The RESP samples run twice, with the "
      "workers' batching pause (`local_cache.resp_batch_delay`, the default) and without it (0, set by ALTER "
      "SYSTEM and a reload between samples); *pauses per 1,000 requests* counts the pauses the workers took "
      f"(INFO `batch_pauses`). {RB} is one thread driving every connection; native is a thread per few "
      "connections, node one event loop, go a goroutine per connection.")
    w("")
    tail_rows(w, data, clients, conns, batches)
    w("")
    targets(w, data, clients, conns, batches)
    baseline_commit = doc.get("git", {}).get("baseline")
    if not baseline_commit:
        w("No loss elsewhere: not measured (the run had no baseline build, bench/run's `BENCH_BASELINE_DIR`).")
        w("")
        return out
    w(f"No loss elsewhere: this run's other paths at {conns} connections on this build against the same samples on "
      f"the baseline build (local_cache git {baseline_commit}), medians of the same rounds: each round ran one block of "
      "samples on each build, their order alternating, the cluster restarted between them with the other build's "
      "library. Figures on this VM also move between blocks, so each change is shown beside redis-server's change "
      "for the same client and keys (redis-server MGET for the reads, SET for the writes, in the same blocks: code "
      f"that did not change), and that corrected change is judged: at least {LOSS_LIMIT:+.0f} % ✓. Requests/s are "
      "medians (min–max of the rounds): how far one build's own samples move shows what a change can be told from.")
    w("")
    missed = no_loss_rows(w, data, baseline, [c for c in clients if c != RB], conns, batches)
    w("")
    if missed:
        w("Losses beyond the limit: " + "; ".join(missed) + ".")
        w("")
    return out
