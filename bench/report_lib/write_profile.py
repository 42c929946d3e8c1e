"""bench/report_lib/write_profile.py: the write budget in the "Where the CPU goes" section (a bench/run
profile result's doc["profile"]["write"], bench/driver_lib/write_profile.py): where each µs of a
one-row UPDATE goes in the backends, with the table cached and not, in one window."""
import math

from report_lib.data import fmt


def sampling_error(half, category):
    """One standard error of a category's µs per UPDATE that sampling alone gives (binomial share)."""
    share, n = half["budget"].get(category, 0.0), max(half["samples"], 1)
    return half["cpu_us_per_update"] * math.sqrt(share * (1 - share) / n)


def write_budget(prof):
    """The lines of the write budget (none without one)."""
    write = prof.get("write")
    if not write:
        return []
    halves = write["halves"]
    cached, plain = halves["cached"], halves["plain"]
    out = []
    w = out.append
    w("### One-row UPDATE: budget per UPDATE, the table cached and not")
    w("")
    w(f"bench/loadgen's `update_pair` at {write['connections']} connections, two windows of {write['seconds']:g} s: "
      "half the "
      "connections run the prepared `UPDATE public.items SET value = $2 WHERE id = $1` (cached), the other half the "
      "same on `public.items_plain` (the same rows, never cached), each UPDATE its own transaction "
      "(synchronous_commit off). In the second window `perf record --call-graph dwarf` "
      f"({write.get('frequency', '?')} Hz) samples both halves' backends; each sample "
      "goes to the first category one of whose functions is on its stack, the capture's parts first "
      "(bench/driver_lib/write_profile.py); a category's share of its half's samples times that half's exact CPU "
      "per UPDATE in the first window (/proc/PID/schedstat, without perf's own work in the backends) is its µs per "
      "UPDATE. Statement: ExecutorStart, the "
      "plan's run and ExecutorEnd; commit: the capture's pre-commit callback and PostgreSQL's commit.")
    w("")
    w("| where | cached µs/UPDATE | not cached µs/UPDATE | cached − not | ± sampling |")
    w("| --- | --- | --- | --- | --- |")
    categories = list(cached["budget"]) + [c for c in plain["budget"] if c not in cached["budget"]]
    for c in categories:
        a = cached["budget"].get(c, 0.0) * cached["cpu_us_per_update"]
        b = plain["budget"].get(c, 0.0) * plain["cpu_us_per_update"]
        error = math.hypot(sampling_error(cached, c), sampling_error(plain, c))
        w(f"| {c} | {fmt(a, 2)} | {fmt(b, 2)} | {a - b:+.2f} | {error:.2f} |")
    diff = cached["cpu_us_per_update"] - plain["cpu_us_per_update"]
    w(f"| **total** (backend CPU per UPDATE) | {fmt(cached['cpu_us_per_update'], 2)} | "
      f"{fmt(plain['cpu_us_per_update'], 2)} | {diff:+.2f} ({cached['cpu_us_per_update'] / plain['cpu_us_per_update']:.2f}x) | |")
    w("")
    w(f"UPDATEs in the first window: {cached['updates']:,} cached, {plain['updates']:,} not cached; perf samples "
      f"{cached['samples']:,} and {plain['samples']:,}. *± sampling* is one standard error of the difference "
      "from the sampling alone; one window each, so the machine's moments are not averaged out.")
    w("")
    return out
