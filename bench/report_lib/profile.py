"""bench/report_lib/profile.py: the "Where the CPU goes" section (`--profile`, a bench/run profile
result): per workload, both servers' CPU per request (perf stat's task-clock over the requests they
served), system calls and context switches per request, the budget per request by category
(perf record's samples, bench/driver_lib/profile.py's categories, times the CPU per request), the
I/O floor's CPU per request (bench/io_floor: the same ring, parser and pause, no command), the
flame graphs (drawn beside the report), and the CPU targets (issue 30's; issue 46's for MGET 64)
with their verdicts."""
import os

from report_lib.data import fmt, fmt_range, judged, med, ratio, section_start
from report_lib.flamegraph import flame_svg
from report_lib.write_profile import write_budget

CPU_TARGETS = {"get": 0.6, "mget16": 0.6, "mget64": 0.6, "get_p64": 0.8}  # ours / redis-server's CPU per request
# Issue 46 item 4: the prefetching lookup of many keys, MGET 64 against redis-server's CPU per request
MANY_KEYS_TARGETS = {"mget64": 0.75}
SERVERS = [("resp", "local_cache RESP"), ("redis", "redis-server")]
LABELS = {"get": "GET", "mget16": "MGET 16 keys", "mget64": "MGET 64 keys", "get_p64": "GET, pipelined 64 deep"}


def stat(workload, server, field):
    return [s[field] for s in workload["stat"].get(server, []) if s.get(field) is not None]


def flame_graphs(prof, charts, prefix):
    """One SVG per workload and server into charts; their links, by (workload, server)."""
    links = {}
    if not charts:
        return links
    os.makedirs(charts, exist_ok=True)
    for wl in prof["workloads"]:
        for server, name in SERVERS:
            stacks = wl.get("stacks", {}).get(server)
            if not stacks:
                continue
            file = f"flame_{wl['name']}_{server}.svg"
            with open(os.path.join(charts, file), "w") as f:
                f.write(flame_svg(stacks, f"{name}: {LABELS.get(wl['name'], wl['name'])}, "
                                          f"{prof['connections']} connections"))
            links[(wl["name"], server)] = prefix + file
    return links


def profile_section(doc, src, charts, prefix):
    prof = doc.get("profile")
    if not prof:
        return []
    out = section_start("Where the CPU goes (perf)", doc, src, "profile")
    w = out.append
    links = flame_graphs(prof, charts, prefix)
    w(f"redis-benchmark at {prof['connections']} connections against our RESP workers and against redis-server, "
      f"{doc['config']['repeats']} alternating rounds per workload. Each round: `perf stat` over "
      f"{prof['seconds']:g} s of the server's processes (the RESP workers; redis-server) while redis-benchmark runs: "
      "*CPU per request* is task-clock over the requests the server counted (INFO `total_commands_processed`), "
      "system calls and context switches likewise. The first round also runs `perf record --call-graph dwarf` "
      f"({prof['frequency']} Hz, {prof['seconds']:g} s): the flame graphs, and the *budget*: each sample goes to "
      "the system call it is in (by the kernel's frames or the C library's wrapper) or to the first user-space "
      "frame, from the leaf up, of a category (bench/driver_lib/profile.py), and each category's share of the "
      f"samples times the median CPU per request is its µs per request. {prof.get('perf_version', 'perf')}; "
      "medians (min–max). The *I/O floor* takes its turn in the same rounds: bench/io_floor, the RESP worker's "
      "io_uring, request parser and batching pause with no command behind them, answering every request with "
      "the workers' own reply bytes for the workload: what receiving, sending and waiting alone cost for "
      "this traffic on this machine, the least any change to the commands could reach.")
    w("")
    w("| workload | CPU µs/req, ours | redis-server | ours / redis | target | I/O floor | floor / redis "
      "| requests/s, ours | redis-server | system calls/req, ours | redis-server "
      "| context switches/req, ours | redis-server |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    verdicts = []
    for wl in prof["workloads"]:
        r = ratio(med(stat(wl, "resp", "cpu_us_per_req")), med(stat(wl, "redis", "cpu_us_per_req")))
        goal = CPU_TARGETS.get(wl["name"])
        verdicts.append((wl["name"], r))
        w(f"| {LABELS.get(wl['name'], wl['name'])} | {fmt_range(stat(wl, 'resp', 'cpu_us_per_req'), 2)} | "
          f"{fmt_range(stat(wl, 'redis', 'cpu_us_per_req'), 2)} | "
          f"{judged(r, goal, higher=False) if goal else fmt(r, 2)} | {'≤ %.1f' % goal if goal else '–'} | "
          f"{fmt_range(stat(wl, 'floor', 'cpu_us_per_req'), 2)} | "
          f"{fmt(ratio(med(stat(wl, 'floor', 'cpu_us_per_req')), med(stat(wl, 'redis', 'cpu_us_per_req'))), 2)} | "
          f"{fmt_range(stat(wl, 'resp', 'rps'))} | {fmt_range(stat(wl, 'redis', 'rps'))} | "
          f"{fmt_range(stat(wl, 'resp', 'all_syscalls_per_req'), 2)} | "
          f"{fmt_range(stat(wl, 'redis', 'all_syscalls_per_req'), 2)} | "
          f"{fmt_range(stat(wl, 'resp', 'context_switches_per_req'), 3)} | "
          f"{fmt_range(stat(wl, 'redis', 'context_switches_per_req'), 3)} |")
    w("")
    for wl in prof["workloads"]:
        label = LABELS.get(wl["name"], wl["name"])
        cpu = {server: med(stat(wl, server, "cpu_us_per_req")) for server, _ in SERVERS}
        budgets = wl.get("budget", {})
        categories = []
        for server, _ in SERVERS:
            categories += [c for c in budgets.get(server, {}) if c not in categories]
        w(f"### {label}: budget per request")
        w("")
        calls = {server: (wl["stat"].get(server) or [{}])[0].get("syscalls_per_req", {}) for server, _ in SERVERS}
        w("System calls per request (first round): " + "; ".join(
            f"{name}: " + (", ".join(f"{s} {n:.2f}" for s, n in sorted(calls[server].items(), key=lambda x: -x[1])
                                     if n >= 0.005) or "–") for server, name in SERVERS) + ".")
        w("")
        w("| where | ours µs/req | ours share | redis-server µs/req | redis-server share |")
        w("| --- | --- | --- | --- | --- |")
        for c in categories:
            cells = []
            for server, _ in SERVERS:
                share = budgets.get(server, {}).get(c)
                cells.append("–" if share is None or cpu[server] is None else fmt(share * cpu[server], 2))
                cells.append("–" if share is None else f"{100 * share:.1f} %")
            w(f"| {c} | " + " | ".join(cells) + " |")
        w(f"| **total** | {fmt(cpu['resp'], 2)} | | {fmt(cpu['redis'], 2)} | |")
        w("")
        graphs = [f"[{name}]({links[(wl['name'], server)]})" for server, name in SERVERS if (wl["name"], server) in links]
        if graphs:
            w("Flame graphs: " + ", ".join(graphs) + ".")
            w("")
    for title, goals, digits in (("Targets (issue 30, server CPU per request against redis-server's):", CPU_TARGETS, 1),
                                 ("Target of issue 46 (item 4, many keys' lookups prefetched), the same ratio:",
                                  MANY_KEYS_TARGETS, 2)):
        rows = [(name, r, goals[name]) for name, r in verdicts if goals.get(name)]
        if not rows:
            continue
        w(title)
        w("")
        w("| workload | ours / redis-server | target |")
        w("| --- | --- | --- |")
        for name, r, goal in rows:
            w(f"| {LABELS.get(name, name)} | {judged(r, goal, higher=False)} | ≤ {goal:.{digits}f} |")
        w("")
    out += write_budget(prof)
    return out
