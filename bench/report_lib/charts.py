"""bench/report_lib/charts.py: the SVG charts (matplotlib) of the matrix and of the soak, and
where they go. Both kinds share one directory: each drawing replaces only its own kind
(soak_*.svg are the soak's); ids and metadata are fixed so that a chart drawn again from the same
document is the same file."""
import os
import sys

from report_lib.data import die, fmt_us, med
from report_lib.names import (PATH_NAMES, PROBE_PATH_NAMES, PROBE_PATHS, RB, READ_MODES, READ_PATHS, SOAK_COLORS,
                              SOAK_PATH_NAMES, SOAK_READS, SOAK_WRITES)


def pyplot(outdir, soak):
    """matplotlib's pyplot, drawing reproducible SVGs; outdir exists and holds no old chart of the kind."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is missing: install python3-matplotlib (bench/report does so on Debian)")
    matplotlib.rcParams["svg.hashsalt"] = "local_cache"  # reproducible SVG ids
    os.makedirs(outdir, exist_ok=True)
    for f in os.listdir(outdir):
        if f.endswith(".svg") and f.startswith("soak_") == soak:  # each report replaces only its own charts
            os.remove(os.path.join(outdir, f))
    return plt


def save_svg(plt, fig, path):
    fig.savefig(path, metadata={"Date": None})  # reproducible: no date
    plt.close(fig)


def make_charts(data, cfg, outdir, prefix):
    """Per read mode and client: requests/s by connections and server CPU per request; their links."""
    plt = pyplot(outdir, soak=False)
    links = []
    conns = cfg["connections"]
    batches = cfg["batches"]
    colors = {"sql": "#444444", "mget": "#1f77b4", "mget_json": "#17becf", "fdw": "#2ca02c",
              "resp": "#d62728", "redis": "#ff7f0e"}
    for mode in READ_MODES:
        for client in cfg["clients"]:
            paths = [p for p in READ_PATHS
                     if any(data.get(mode, client, p, c, b) for c in conns for b in batches)]
            if not paths:
                continue
            # requests/s by connections, one panel per batch size
            fig, axes = plt.subplots(1, len(batches), figsize=(4.2 * len(batches), 3.6), squeeze=False)
            for ax, b in zip(axes[0], batches):
                for p in paths:
                    xs, ys, lo, hi = [], [], [], []
                    for c in conns:
                        v = data.values("rps", mode, client, p, c, b)
                        if v:
                            xs.append(c); ys.append(med(v)); lo.append(med(v) - min(v)); hi.append(max(v) - med(v))
                    if xs:
                        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=PATH_NAMES[p], color=colors[p])
                ax.set_title(f"{b} key{'s' if b != 1 else ''} per request")
                ax.set_xlabel("connections")
                if len(conns) > 1:
                    ax.set_xscale("log", base=2)
                ax.set_xticks(conns)
                ax.set_xticklabels([str(c) for c in conns])
                ax.set_ylim(bottom=0)
                ax.grid(alpha=0.3)
            axes[0][0].set_ylabel("requests/s (median, min–max)")
            axes[0][-1].legend(fontsize=8)
            fig.suptitle(f"{mode} reads, {client} client: requests/s by connections"
                         + (" (no pipelining)" if client == RB else ""))
            fig.tight_layout()
            name = f"{mode}_{client}_rps.svg"
            save_svg(plt, fig, os.path.join(outdir, name))
            links.append((mode, client, "rps", prefix + name))

            # server CPU µs per request (median over connections and repeats), grouped by batch
            fig, ax = plt.subplots(figsize=(7.5, 3.6))
            width = 0.8 / len(paths)
            for i, p in enumerate(paths):
                ys = []
                for b in batches:
                    v = [x for c in conns for x in data.values("server_cpu_us_per_req", mode, client, p, c, b)]
                    ys.append(med(v) or 0)
                ax.bar([j + i * width for j in range(len(batches))], ys, width, label=PATH_NAMES[p], color=colors[p])
            ax.set_xticks([j + width * (len(paths) - 1) / 2 for j in range(len(batches))])
            ax.set_xticklabels([f"{b} key{'s' if b != 1 else ''}" for b in batches])
            ax.set_ylabel("server CPU µs per request")
            if client == RB:
                ax.set_title(f"{mode} reads, {client} client: server CPU per request (median over connections), "
                             "no pipelining", fontsize=9)
            else:
                ax.set_title(f"{mode} reads, {client} client: server CPU per request (median over connections)")
            ax.grid(axis="y", alpha=0.3)
            ax.legend(fontsize=8)
            fig.tight_layout()
            name = f"{mode}_{client}_cpu.svg"
            save_svg(plt, fig, os.path.join(outdir, name))
            links.append((mode, client, "cpu", prefix + name))
    return links


def soak_charts(soak, outdir, prefix):
    """The soak's series over time (requests/s, p99, server CPU and PSS) and the standby's delays; their links."""
    plt = pyplot(outdir, soak=True)
    series = soak["series"]
    minutes = soak["duration_seconds"] >= 600
    xs = [p["t"] / 60 if minutes else p["t"] for p in series]
    xlabel = "minutes" if minutes else "seconds"
    links = []

    def save(fig, name, title):
        fig.tight_layout()
        save_svg(plt, fig, os.path.join(outdir, name))
        links.append((title, prefix + name))

    for field, label, name, title in (("rps", "requests/s", "soak_rps.svg", "requests/s per path over time"),
                                      ("p99_us", "p99 latency (µs)", "soak_p99.svg", "p99 latency per path over time")):
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), squeeze=False)
        for ax, group, gname in ((axes[0][0], SOAK_READS, "reads"), (axes[0][1], SOAK_WRITES, "writes")):
            for path in group:
                ys = [(p["paths"].get(path) or {}).get(field) for p in series]
                if any(y is not None for y in ys):
                    ax.plot(xs, ys, label=SOAK_PATH_NAMES[path], color=SOAK_COLORS[path], linewidth=1.2)
            ax.set_title(f"{gname}: {label}")
            ax.set_xlabel(xlabel)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        save(fig, name, title)

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), squeeze=False)
    for server, key in (("primary", "primary"), ("standby", "standby"), ("redis-server", "redis")):
        cpu = [(p["servers"].get(key) or {}).get("cpu_percent") for p in series]
        pss = [(p["servers"].get(key) or {}).get("pss_bytes") for p in series]
        color = SOAK_COLORS["redis_server" if key == "redis" else key]
        if any(c is not None for c in cpu):
            axes[0][0].plot(xs, cpu, label=server, color=color, linewidth=1.2)
        anon = [(p["servers"].get(key) or {}).get("pss_anon_bytes") for p in series]
        if any(m is not None for m in pss):
            axes[0][1].plot(xs, [m / 2**20 if m is not None else None for m in pss], label=server, color=color,
                            linewidth=1.2)
        if any(m is not None for m in anon):
            axes[0][1].plot(xs, [m / 2**20 if m is not None else None for m in anon], label=f"{server}: anonymous",
                            color=color, linewidth=1, linestyle="--")
    axes[0][0].plot(xs, [p.get("client_cpu_percent") for p in series], label="client (loadgen)",
                    color=SOAK_COLORS["client"], linewidth=1, linestyle="--")
    axes[0][0].set_title("CPU (% of one core)")
    axes[0][1].set_title("PSS (MiB, all processes; dashed: anonymous)")
    for ax in axes[0]:
        ax.set_xlabel(xlabel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, "soak_server.svg", "server CPU and memory (PSS) over time")

    sb = (soak.get("stale_probes") or {}).get("standby")
    if sb:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), squeeze=False)
        ax = axes[0][0]
        paths = [p for p in PROBE_PATHS if p in sb["by_path"]]
        hist0 = sb["by_path"][paths[0]]["delay_histogram_us"] if paths else []
        labels = [("≤ " + fmt_us(e)) if e is not None else "more" for e, _ in hist0]
        # drop empty buckets at both ends
        nonzero = [i for i in range(len(hist0)) if any(sb["by_path"][p]["delay_histogram_us"][i][1] for p in paths)]
        lo, hi = (nonzero[0], nonzero[-1] + 1) if nonzero else (0, 0)
        width = 0.8 / max(1, len(paths))
        for j, p in enumerate(paths):
            counts = [c for _, c in sb["by_path"][p]["delay_histogram_us"][lo:hi]]
            ax.bar([i + j * width for i in range(len(counts))], counts, width, label=PROBE_PATH_NAMES[p].split(" (")[0],
                   color=SOAK_COLORS[p])
        ax.set_xticks([i + width * (len(paths) - 1) / 2 for i in range(hi - lo)])
        ax.set_xticklabels(labels[lo:hi], rotation=30, fontsize=7)
        ax.set_ylabel("probes")
        ax.set_title("standby: COMMIT to visible, per path")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
        ax = axes[0][1]
        for q, style in (("p50", "-"), ("max", "--")):
            ys = [((p.get("probes") or {}).get("standby_delay_us") or {}).get(q) for p in series]
            ys = [y / 1000 if y else None for y in ys]
            ax.plot(xs, ys, linestyle=style, color="#2ca02c", label=f"{q} of the interval's probes (slowest path)")
        ax.set_title("standby: COMMIT to visible on the three cached paths (ms)")
        ax.set_xlabel(xlabel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, "soak_standby_delay.svg", "standby visibility delay of the stale probes")
    return links


def charts_beside_output():
    """<dir of the file standard output writes to>/benchmarks, or None when it is no file."""
    try:
        if not os.path.isfile(f"/proc/self/fd/{sys.stdout.fileno()}"):
            return None
        return os.path.join(os.path.dirname(os.path.realpath(f"/proc/self/fd/{sys.stdout.fileno()}")), "benchmarks")
    except OSError:
        return None


def chart_links(w, links):
    """The main report's Charts section."""
    if links:
        w("## Charts")
        w("")
        for mode, client, kind, link in links:
            what = "requests/s by connections" if kind == "rps" else "server CPU µs per request"
            w(f"![{mode} reads, {client} client: {what}]({link})")
            w("")
