#!/usr/bin/env python3
"""bench/report.py: Markdown report and charts from a bench/run JSON document.

A soak document (bench/run soak) gets a report of its own: the stale probes (counts, the
standby's delays), requests/s, p99, server CPU and PSS over time (charts soak_*.svg).

    bench/report FILE.json > docs/BENCHMARKS.md     (charts: docs/benchmarks/*.svg)
    bench/report FILE.json > /tmp/x/report.md       (charts: /tmp/x/benchmarks/*.svg)
    bench/report FILE.json --keys KEYS.json --soak SOAK.json > docs/BENCHMARKS.md
    bench/report FILE.json ... --serializable SER.json --tls TLS.json --tracking TRK.json --profile PROF.json \
        --tail TAIL.json --stall STALL.json --cluster CLUSTER.json --write WRITE.json --bulk BULK.json --failover FAILOVER.json --soak SOAK.json > docs/BENCHMARKS.md

The other sections read the bigint table's samples (samples without "keys" are those) whose SQL
paths send text parameters (samples without "params" are those). The "Key types" section compares the key types (bench/loadgen --keys) with bigint keys, all from one
document: FILE's, or with --keys that of a bench/run keys result, so that the section can be
measured again without the full matrix; its SQL paths are the samples with the document's
config.key_params (binary key arrays since they exist; older documents: text), its RESP ones the
others. The "SERIALIZABLE" section (issue 26's targets) comes from FILE's serializable samples, or
with --serializable from a bench/run serializable result; the "TLS" section (issue 28's) from
FILE's tls samples, or with --tls from a bench/run tls result; each only when there are such
samples. The "Client-side caching (CLIENT TRACKING)" section (issue 29's), after TLS, comes from
FILE's "tracking" or with --tracking from a bench/run tracking result (which has no samples);
only when there is one. With --profile a bench/run profile result gives the section "Where the CPU
goes (perf)" after it: CPU, system calls and the budget per request against redis-server, and the
flame graphs (flame_*.svg beside the charts). With --tail a bench/run tail result gives the section
"Tail latency at 64 connections" after that: every client's RESP MGET beside redis-server's, with
and without the batching pause, and its other paths against the same run's baseline build
(BENCH_BASELINE_DIR). With --stall a bench/run stall result gives the section "One role's slow
trigger beside everyone else's reads" after that: GET latency alone and beside a writer whose
trigger sleeps. With --cluster a bench/run cluster result gives the section "Reads through a Redis
Cluster client: the primary and two hot standbys" after that: the reads' spread over the nodes and
the server CPU per request on each, and WAIT's time. With --write a bench/run write result gives the section "What the cache costs
writers" after that: UPDATE cached against not cached and RESP SET against UPDATE, paired by
round, with issue 46's targets. With --bulk a bench/run bulk result gives the section "Bulk writes" after that:
UPDATE, COPY and DELETE of a whole table, cached and not, and the writer's memory. With --failover a
bench/failover result gives the section "Failover under Patroni" after that: per event, the time from
the promotion to every node naming the new primary and to the clients' first write, and the check's
counts. With --soak the soak document is the last section.

Refuses partial documents. Charts go beside the Markdown: when standard output is a file, into
the directory "benchmarks" next to it, linked as benchmarks/NAME.svg; --charts DIR puts them
elsewhere (linked as <--link-prefix>NAME.svg). When standard output is not a file (a pipe, a
terminal) and no --charts is given, no charts are drawn: nothing outside the output is written.
"""

import argparse
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (bench/run runs as root)

from report_lib.charts import chart_links, charts_beside_output, make_charts  # noqa: E402
from report_lib.data import Data, die, load  # noqa: E402
from report_lib.key_types import key_types_section  # noqa: E402
from report_lib.method import write_environment, write_method  # noqa: E402
from report_lib.serializable import serializable_section  # noqa: E402
from report_lib.soak import soak_report, soak_section  # noqa: E402
from report_lib.tables import write_mode_tables, write_resp_vs_redis  # noqa: E402
from report_lib.targets import write_notes, write_ratios  # noqa: E402
from report_lib.tls import tls_section  # noqa: E402
from report_lib.tracking import tracking_section  # noqa: E402
from report_lib.stall import stall_section  # noqa: E402
from report_lib.cluster import cluster_section  # noqa: E402
from report_lib.bulk import bulk_section  # noqa: E402
from report_lib.failover import failover_section  # noqa: E402
from report_lib.write_cost import write_cost_section  # noqa: E402
from report_lib.profile import profile_section  # noqa: E402
from report_lib.tail import tail_section  # noqa: E402


def extra_doc(path):
    """The document of --keys, --serializable or --tls: a finished bench/run result with samples."""
    doc = load(path)
    if doc.get("partial", True) or doc.get("error") or not doc.get("samples"):
        die(f"{path} is no finished bench/run result with samples; refusing to report it")
    return doc


def producer(mode):
    """The command whose result a sampleless MODE document is."""
    return "bench/failover" if mode == "failover" else f"bench/run {mode}"


def sampleless_doc(path, mode):
    """The document of --tracking, --profile and the like: a finished bench/run MODE result (or
    bench/failover's), which has no samples."""
    doc = load(path)
    if doc.get("partial", True) or doc.get("error") or not doc.get(mode):
        why = doc.get("error") or ("not finished" if doc.get("partial", True) else f"no \"{mode}\" in it")
        die(f"{path} is no finished {producer(mode)} result ({why}); refusing to report it")
    return doc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--charts", help="directory for the SVG charts (default: beside the output file)")
    ap.add_argument("--link-prefix", default="benchmarks/")
    ap.add_argument("--soak", help="a bench/run soak result, reported as the last section")
    ap.add_argument("--keys", help="a bench/run keys result (or a warm/all one with key types): the Key types "
                                   "section comes from it instead of FILE")
    ap.add_argument("--serializable", help="a bench/run serializable result: the SERIALIZABLE section comes from it "
                                           "instead of FILE")
    ap.add_argument("--tls", help="a bench/run tls result: the TLS section comes from it instead of FILE")
    ap.add_argument("--tracking", help="a bench/run tracking result: the client-side caching (CLIENT TRACKING) "
                                       "section comes from it instead of FILE")
    ap.add_argument("--tail", help="a bench/run tail result: the section on tail latency at 64 connections, every "
                                   "client beside redis-server, and its other paths against its baseline build's")
    ap.add_argument("--stall", help="a bench/run stall result: the section on one role's slow trigger beside "
                                    "everyone else's reads")
    ap.add_argument("--cluster", help="a bench/run cluster result: the section on reads through a Redis Cluster "
                                      "client, the primary alone and with two hot standbys, and WAIT's time")
    ap.add_argument("--write", help="a bench/run write result: the section on what the cache costs writers")
    ap.add_argument("--bulk", help="a bench/run bulk result: the section on whole-table writes, cached and not")
    ap.add_argument("--failover", help="a bench/failover result: the section on Patroni's failovers, from the "
                                       "promotion to the clients' first write on the new primary")
    ap.add_argument("--profile", help="a bench/run profile result: the section on where the CPU goes, with its "
                                      "flame graphs")
    args = ap.parse_args()
    # refused before anything is drawn
    tdoc = sampleless_doc(args.tracking, "tracking") if args.tracking else None
    pdoc = sampleless_doc(args.profile, "profile") if args.profile else None
    stall_doc = sampleless_doc(args.stall, "stall") if args.stall else None
    cluster_doc = sampleless_doc(args.cluster, "cluster") if args.cluster else None
    bulk_doc = sampleless_doc(args.bulk, "bulk") if args.bulk else None
    failover_doc = sampleless_doc(args.failover, "failover") if args.failover else None
    doc = load(args.file)
    if doc.get("partial", True) or doc.get("error"):
        die(f"{args.file} is a partial result ({doc.get('error') or 'not finished'}); refusing to report it")
    charts = args.charts or charts_beside_output()
    if doc.get("soak") is not None:  # bench/run soak: a report of its own
        if not charts:
            print("bench/report: standard output is not a file and no --charts given: no charts drawn",
                  file=sys.stderr)
        sys.stdout.write("\n".join(soak_report(doc, args, charts)))
        return
    if not doc.get("samples"):
        for mode in ("tracking", "profile", "stall", "cluster", "bulk", "failover"):
            if doc.get(mode):
                die(f"{args.file} is a {producer(mode)} result: "
                    f"give it with --{mode} beside a bench/run result with samples")
        die(f"{args.file} has no samples")
    data = Data(doc)
    cfg = doc["config"]
    links = make_charts(data, cfg, charts, args.link_prefix) if charts else []
    if not charts:
        print("bench/report: standard output is not a file and no --charts given: no charts drawn",
              file=sys.stderr)
    out = []
    w = out.append
    write_method(w, args, doc, data, cfg)
    write_environment(w, doc)
    misses = write_ratios(out, data, cfg)
    chart_links(w, links)
    cpu_over = write_resp_vs_redis(w, data, cfg)
    write_mode_tables(w, doc, data, cfg)
    if args.keys:
        out += key_types_section(extra_doc(args.keys), args.keys, True)
    else:
        out += key_types_section(doc, args.file, False)
    for section, path in [(serializable_section, args.serializable), (tls_section, args.tls)]:
        sdoc = extra_doc(path) if path else doc
        out += section(Data(sdoc) if path else data, sdoc, path or args.file)
    out += tracking_section(tdoc or doc, args.tracking or args.file)
    if pdoc:
        out += profile_section(pdoc, args.profile, charts, args.link_prefix)
    if args.tail:
        out += tail_section(extra_doc(args.tail), args.tail)
    if stall_doc:
        out += stall_section(stall_doc, args.stall)
    if cluster_doc:
        out += cluster_section(cluster_doc, args.cluster)
    if args.write:
        out += write_cost_section(extra_doc(args.write), args.write)
    if bulk_doc:
        out += bulk_section(bulk_doc, args.bulk)
    if failover_doc:
        out += failover_section(failover_doc, args.failover)
    write_notes(w, doc, data, cfg, misses, cpu_over)
    if args.soak:
        out += soak_section(args, charts)
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
