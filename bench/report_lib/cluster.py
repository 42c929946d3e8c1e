"""bench/report_lib/cluster.py: the "Reads through a Redis Cluster client" section (`--cluster`, a
bench/run cluster result): node-redis's cluster client reading through the primary alone and through
the primary and two hot standbys (useReplicas): requests per second and latency, where the GETs ran
(each node's share) and the server CPU per request on each node; then WAIT 2's time after a write,
alone and beside a writer."""
from report_lib.data import fmt, fmt_range, med, section_start
from report_lib.names import resp_workers

VARIANTS = [("primary", "the primary alone (`useReplicas: false`)"),
            ("replicas", "primary + 2 standbys (`useReplicas: true`)")]
WAIT_CELLS = [("idle", "alone"), ("writer", "beside a writer")]


def share(samples, node):
    """The node's median share of the GETs, in percent."""
    return med([s["nodes"][node]["gets"] / sum(n["gets"] for n in s["nodes"].values()) * 100
                for s in samples if sum(n["gets"] for n in s["nodes"].values())])


def cluster_section(doc, src):
    """The section's lines from doc["cluster"] (none without it)."""
    cl = doc.get("cluster")
    if not cl:
        return []
    cfg = doc["config"]
    nodes = cl["nodes"]
    by = {v: [s for s in cl["samples"] if s["variant"] == v] for v, _ in VARIANTS}
    out = section_start("Reads through a Redis Cluster client: the primary and two hot standbys", doc, src, "cluster")
    w = out.append
    w(f"`bench/node/cluster.js` ({cl['client']}, rooted at the primary) reads `GET items:<id>` over the "
      f"{cl['hot_rows']} hot rows with {cl['concurrency']} requests in flight, through a primary and two hot "
      f"standbys with `local_cache.resp_cluster = on` (one shard: the client takes the slot map from `CLUSTER "
      f"SLOTS`), once with every read on the primary and once spread over the three nodes. Per node, the GETs it "
      f"ran (`INFO commandstats`) and the CPU time of all its PostgreSQL processes (RESP workers {resp_workers(cfg['server'])} "
      f"per node, walsenders, WAL receiver and startup included). {cfg['repeats']} round(s), the order alternating; "
      f"medians (min–max). All the servers and the client share the machine's {doc['machine']['cores']} cores: "
      f"spreading the reads cannot raise the total there, it shows where the requests go and what each costs.")
    w("")
    w("| reads through | requests/s | p50 µs | p99 µs | " + " | ".join(f"GETs on {n}" for n in nodes)
      + " | " + " | ".join(f"server CPU µs/GET, {n}" for n in nodes) + " | server CPU µs/request, all nodes | client CPU µs/request |")
    w("| --- |" + " --- |" * (3 + 2 * len(nodes) + 2))
    for variant, label in VARIANTS:
        samples = by[variant]
        if not samples:
            continue
        cells = [fmt_range([s["rps"] for s in samples]), fmt_range([s["latency_us"]["p50"] for s in samples]),
                 fmt_range([s["latency_us"]["p99"] for s in samples])]
        cells += [f"{fmt(share(samples, n))} %" for n in nodes]
        cells += [fmt_range([s["nodes"][n]["server_cpu_us_per_req"] for s in samples
                             if s["nodes"][n]["server_cpu_us_per_req"] is not None], 1) for n in nodes]
        cells += [fmt_range([s["server_cpu_us_per_req"] for s in samples], 1),
                  fmt_range([s["client_cpu_us_per_req"] for s in samples], 1)]
        w(f"| {label} | " + " | ".join(cells) + " |")
    standbys = [n for n in nodes if n != "primary"]
    spread = by["replicas"]
    if spread:
        on_standbys = med([sum(s["nodes"][n]["gets"] for n in standbys) / max(1, sum(v["gets"] for v in s["nodes"].values()))
                           * 100 for s in spread])
        primary_cost = med([s["nodes"]["primary"]["server_cpu_us_per_req"] for s in spread
                            if s["nodes"]["primary"]["server_cpu_us_per_req"] is not None])
        standby_cost = med([s["nodes"][n]["server_cpu_us_per_req"] for s in spread for n in standbys
                            if s["nodes"][n]["server_cpu_us_per_req"] is not None])
        alone_cost = med([s["nodes"]["primary"]["server_cpu_us_per_req"] for s in by["primary"]
                          if s["nodes"]["primary"]["server_cpu_us_per_req"] is not None])
        w("")
        w(f"Spread over the group, {fmt(on_standbys)} % of the reads ran on the standbys. A GET cost a standby's "
          f"server {fmt(standby_cost, 1)} µs of CPU and the primary's {fmt(primary_cost, 1)} µs, against "
          f"{fmt(alone_cost, 1)} µs with every read on the primary: the client's connection to each node carries a "
          f"third of the requests in flight, so each wakeup of a RESP worker serves fewer of them. Here the three "
          f"servers and the client share {doc['machine']['cores']} cores, so the total cannot grow; with each node on "
          f"a machine of its own, each standby brings its own CPU to the reads.")
    waits = {c["cell"]: c for c in cl.get("wait", [])}
    if waits:
        w("")
        first = next(iter(waits.values()))
        w(f"`WAIT 2 {first['timeout_ms']}` right after a `SET` on the same connection to the primary "
          f"(the standbys keep the default `wal_receiver_status_interval`, 10 s), {first['rounds']} rounds per cell, "
          f"timed by the client; \"answers\" counts the replies by the number of standbys that had replayed the write.")
        w("")
        w("| WAIT 2 | p50 µs | p90 µs | p99 µs | max µs | answers | writer's writes meanwhile |")
        w("| --- | --- | --- | --- | --- | --- | --- |")
        for cell, label in WAIT_CELLS:
            c = waits.get(cell)
            if not c:
                continue
            t = c["wait_us"]
            answers = ", ".join(f"{k}: {v}" for k, v in c["answers"].items())
            w(f"| {label} | {fmt(t['p50'])} | {fmt(t['p90'])} | {fmt(t['p99'])} | {fmt(t['max'])} | {answers} | "
              f"{fmt(c['writer_writes'])} |")
    w("")
    return out
