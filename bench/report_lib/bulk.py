"""bench/report_lib/bulk.py: the "Bulk writes" section (`--bulk`, a bench/run bulk result): UPDATE of
every row, COPY of as many new rows and DELETE of every row on a cached table against the same on a
table not cached, the writing backend's memory, the cache checked after each, and issue 46's target
(each at most 1.15x the time not cached) with its verdict."""
from report_lib.data import fmt, fmt_range, med, section_start

TIME_TARGET = 1.15
OPERATIONS = [("update", "UPDATE of every row"), ("copy", "COPY of as many new rows"), ("delete", "DELETE of every row")]


def bulk_section(doc, src):
    """The section's lines from doc["bulk"] (none without it)."""
    bulk = doc.get("bulk")
    if not bulk:
        return []
    cfg = doc["config"]
    out = section_start("Bulk writes", doc, src, "bulk")
    w = out.append
    w(f"Two tables of {fmt(bulk['rows'])} rows (bigint key, 128-byte text value): `public.bulk_cached`, enabled, "
      f"its first {fmt(bulk['filled_keys'])} keys read into the cache before each write, and `public.bulk_plain`, "
      f"not cached. Each operation is one statement in autocommit, timed by psql (the statement and its commit), on "
      f"both tables in turn, {cfg['repeats']} round(s), the order alternating by round; after each, the writing "
      f"backend's peak resident memory (VmHWM: shared buffers it touched included) and its anonymous resident memory "
      f"at the end (RssAnon), and on the cached table the cache compared with the table (mget_json of the filled "
      f"keys and of as many keys of the new rows). Medians (min–max). Target (issue 46): each at most "
      f"{TIME_TARGET}x its time on the table not cached.")
    w("")
    w("| operation | cached ms | not cached ms | cached / not | target | peak MB cached / not | cache mismatches |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    for op, label in OPERATIONS:
        cached = [s for s in bulk["samples"] if s["operation"] == op and s["table"] == "bulk_cached"]
        plain = [s for s in bulk["samples"] if s["operation"] == op and s["table"] == "bulk_plain"]
        if not cached or not plain:
            continue
        ratios = [c["ms"] / p["ms"] for c, p in zip(sorted(cached, key=lambda s: s["repeat"]),
                                                   sorted(plain, key=lambda s: s["repeat"])) if p["ms"] > 0]
        ratio = med(ratios)
        verdict = "–" if ratio is None else f"≤ {TIME_TARGET}x " + ("✓" if ratio <= TIME_TARGET else "✗")
        w(f"| {label} | {fmt_range([s['ms'] for s in cached])} | {fmt_range([s['ms'] for s in plain])} | "
          f"{fmt_range(ratios, 2)} | {verdict} | {fmt(med([s['peak_rss_kb'] / 1024 for s in cached]), 1)} / "
          f"{fmt(med([s['peak_rss_kb'] / 1024 for s in plain]), 1)} | "
          f"{sum(s['mismatches'] or 0 for s in cached)} |")
    w("")
    w("What bounds the writer's memory: the capture keeps each changed key once (about 100 bytes for a bigint "
      "key) for the first 10,000 rows of a table in a transaction; past them it records no more keys and the table "
      "is flushed at commit. An UPDATE or DELETE whose rows keep their keys records them from its plan "
      "(the key its WHERE clause names, or `local_cache.capture_row_key` per row) and runs without the row trigger, "
      "and one with no condition, which writes every row, records none: the table is flushed at commit; in an INSERT, or an UPDATE that may move "
      "rows to other keys, the row trigger's WHEN clause records the keys itself and PostgreSQL queues no AFTER ROW "
      "event for it (past the 10,000 rows it switches the trigger off for the rest of the statement); COPY and rows "
      "routed into a partition queue the event, its tuple identifiers (about 10 bytes), for those first 10,000 rows "
      "only.")
    w("")
    return out
