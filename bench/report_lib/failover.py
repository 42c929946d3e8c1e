"""bench/report_lib/failover.py: the "Failover under Patroni" section (`--failover`, a bench/failover
result): per event (switchover, kill -9 of the primary) the promotion's time from the event, then from
the promotion until every surviving node names the new primary (issue 47's 10 s bound, ✓/✗), until the
clients' first write answered OK and the first one WAIT 1 acknowledged (median and max over the
rounds); the check's counts of lost writes and reads back in time (0 expected)."""
from report_lib.data import fmt, section_start

EVENTS = [("switchover", "switchover (`patronictl switchover`)"),
          ("kill-primary", "crash (`kill -9` of the primary's postmaster)")]
TIMINGS = [("promotion_ms", "event → promotion"),
           ("topology_ms", "promotion → every surviving node names it"),
           ("first_write_ms", "promotion → first write answered OK"),
           ("first_acknowledged_write_ms", "promotion → first write acknowledged by WAIT 1")]
COUNTS = [("lost_acknowledged_writes", "writes acknowledged by WAIT 1 missing from the new primary"),
          ("unshown_versions", "versions a standby showed missing from the new primary"),
          ("back_in_time_reads", "reads older than one the same reader had read on the same node")]


def failover_section(doc, src):
    """The section's lines from doc["failover"] (none without it)."""
    fo = doc.get("failover")
    if not fo:
        return []
    return (section_start("Failover under Patroni", doc, src, "failover") + [how_measured(doc, fo), ""]
            + timings_table(fo, doc["config"]["topology_limit_ms"]) + [""] + counts_table(fo) + [""])


def how_measured(doc, fo):
    """The paragraph on the setup, the events and what each time runs from."""
    cfg = doc["config"]
    patroni = cfg["patroni"]
    return (f"`bench/failover` runs the failover check (`regress/resp/node/checks/failover.check.mjs`): etcd and "
            f"{cfg['nodes']} Patroni nodes (`tools/patroni.sh`: `ttl` {patroni['ttl_s']} s, `loop_wait` "
            f"{patroni['loop_wait_s']} s, `retry_timeout` {patroni['retry_timeout_s']} s) with "
            f"`local_cache.resp_cluster = on`, ioredis and node-redis cluster clients writing (each write followed by "
            f"`WAIT 1`) and reading from the standbys throughout, through {fo['rounds']} round(s) of a switchover and "
            f"a crash. The promotion is the moment a node other than the old primary answers `ROLE` as master (polled "
            f"every 50 ms); the other times run from it. Milliseconds, median (max) over the rounds; the machine's "
            f"{doc['machine']['cores']} cores run all three nodes, etcd and the clients. Bound (issue 47): every "
            f"surviving node's `ROLE` and `CLUSTER SHARDS` name the new primary within "
            f"{fmt(cfg['topology_limit_ms'] / 1000)} s of its promotion.")


def timings_table(fo, limit):
    """A row per event: its rounds, each time's median (max), the bound's verdict on the slowest round."""
    lines = ["| event | rounds | " + " | ".join(label + " ms" for _, label in TIMINGS) + f" | ≤ {fmt(limit / 1000)} s |",
             "| --- | --- |" + " --- |" * (len(TIMINGS) + 1)]
    for event, label in EVENTS:
        s = fo["summary"].get(event)
        if s:
            rounds = sum(f["event"] == event for f in fo["failovers"])
            lines.append(f"| {label} | {rounds} | "
                         + " | ".join(f"{fmt(s[k]['median'])} ({fmt(s[k]['max'])})" for k, _ in TIMINGS)
                         + f" | {'✓' if s['topology_ms']['max'] <= limit else '✗'} |")
    return lines


def counts_table(fo):
    """The clients' totals and the check's counts (0 expected)."""
    crashes = [f for f in fo["failovers"] if f["event"] == "kill-primary"]
    clients = fo["clients"]
    return ([f"Over the run the clients had {fmt(clients['acked'])} writes acknowledged and read "
             f"{fmt(clients['reads'])} times from the standbys ({fmt(clients['writeErrors'])} write and "
             f"{fmt(clients['readErrors'])} read errors over the run). The check's counts, 0 expected (a run with "
             f"any other fails and gives no result):", "", "| what | count |", "| --- | --- |"]
            + [f"| {label} | {fmt(fo['counts'][key])} |" for key, label in COUNTS]
            + [f"| reads of the crash's lost write on the old primary while it rejoined, over {len(crashes)} "
               f"crash(es) | {fmt(sum(f['lost_version_reads'] for f in crashes))} |"])
