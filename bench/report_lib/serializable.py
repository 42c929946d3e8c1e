"""bench/report_lib/serializable.py: the "SERIALIZABLE" section (`--serializable`, a bench/run
serializable result, or the main document's serializable samples): mget_json against prepared SQL
with every request its own SERIALIZABLE transaction, beside the same at READ COMMITTED (the warm
samples of the same run), and issue 26's targets with their verdicts: at 64 keys mget_json at least
1.3x SQL's requests/s and at least 0.8 of the READ COMMITTED lead, the reads served from memory."""
from report_lib.data import fmt, judged, med, ratio, section_start

SER_TARGET = 1.3        # mget_json / prepared SQL requests/s at SERIALIZABLE, 64 keys
LEAD_TARGET = 0.8       # that ratio over the same ratio at READ COMMITTED, 64 keys
HITS_TARGET = 0.99      # cache hits per key looked up by the SERIALIZABLE mget_json samples
CLIENT = "native"       # bench/loadgen --mode serializable


def serializable_section(data, doc, src):
    """The section's lines from the serializable samples of doc (none without them)."""
    keys = sorted({(k[4], k[5]) for k in data.groups if k[0] == "serializable" and k[1] == CLIENT})
    if not keys:
        return []
    cfg = doc["config"]
    rps = lambda mode, path, n, b: data.median("rps", mode, CLIENT, path, n, b)
    cpu = lambda mode, path, n, b: data.median("server_cpu_us_per_req", mode, CLIENT, path, n, b)

    def per_key(field, n, b):  # the cache counter's delta per key the SERIALIZABLE mget_json looked up
        return med([s["cache_stats_delta"].get(field, 0) / max(s["requests"] * b, 1)
                    for s in data.get("serializable", CLIENT, "mget_json", n, b) if s.get("cache_stats_delta")])

    lead = lambda mode, n, b: ratio(rps(mode, "mget_json", n, b), rps(mode, "sql", n, b))
    out = section_start("SERIALIZABLE reads: mget_json against prepared SQL", doc, src, "serializable")
    w = out.append
    w("The native client's warm requests (keys 1..N) with `default_transaction_isolation = 'serializable'` on its "
      "connections, so every request is its own SERIALIZABLE transaction: `local_cache.mget_json` against prepared "
      "SQL on the table. *READ COMMITTED*: the same requests in the same run (bench/run serializable takes each "
      "beside its SERIALIZABLE sample; `all` has its warm mode's). The *lead* is mget_json's requests/s over prepared "
      "SQL's; *SER / RC lead* compares the two levels' leads. *hits/key* and *misses/key*: the cache's counters "
      "(`local_cache.stats_global`) over the SERIALIZABLE mget_json samples, per key looked up: 1.00 hits/key is "
      f"every key served from memory. Medians of {cfg['repeats']} repetition(s).")
    w("")
    w("| conns | keys | SER mget_json req/s | SER SQL req/s | SER lead | RC mget_json req/s | RC SQL req/s | RC lead "
      "| SER / RC lead | SER server CPU µs/req mget_json | SQL | hits/key | misses/key |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, b in keys:
        w(f"| {n} | {b} | {fmt(rps('serializable', 'mget_json', n, b))} | {fmt(rps('serializable', 'sql', n, b))} | "
          f"{fmt(lead('serializable', n, b), 2)} | {fmt(rps('warm', 'mget_json', n, b))} | "
          f"{fmt(rps('warm', 'sql', n, b))} | {fmt(lead('warm', n, b), 2)} | "
          f"{fmt(ratio(lead('serializable', n, b), lead('warm', n, b)), 2)} | "
          f"{fmt(cpu('serializable', 'mget_json', n, b), 1)} | {fmt(cpu('serializable', 'sql', n, b), 1)} | "
          f"{fmt(per_key('hits', n, b), 2)} | {fmt(per_key('misses', n, b), 2)} |")
    w("")
    w(f"Targets (issue 26; ✓/✗), at every connection count measured: at 64 keys the SERIALIZABLE lead ≥ {SER_TARGET} "
      f"and ≥ {LEAD_TARGET} of the READ COMMITTED lead; the SERIALIZABLE mget_json reads served from memory "
      f"(≥ {HITS_TARGET} cache hits per key looked up). The 1-key lead has no target.")
    w("")
    w("| target | conns | keys | value |")
    w("| --- | --- | --- | --- |")
    missed = []

    def row(label, n, b, r, goal):
        w(f"| {label} | {n} | {b} | {judged(r, goal) if goal else fmt(r, 2)} |")
        if goal and r is not None and r < goal:
            missed.append(f"{label}, {n} connections, {b} key(s): {r:.2f}")

    for n, b in keys:
        if b == 1:
            row("SER lead (mget_json / prepared SQL requests/s)", n, b, lead("serializable", n, b), None)
        if b == 64:
            row(f"SER lead ≥ {SER_TARGET}", n, b, lead("serializable", n, b), SER_TARGET)
            row(f"SER lead / RC lead ≥ {LEAD_TARGET}", n, b,
                ratio(lead("serializable", n, b), lead("warm", n, b)), LEAD_TARGET)
    for n, b in keys:
        row(f"SER mget_json cache hits per key ≥ {HITS_TARGET}", n, b, per_key("hits", n, b), HITS_TARGET)
    w("")
    if missed:
        w("Targets missed: " + "; ".join(missed) + ".")
        w("")
    return out
