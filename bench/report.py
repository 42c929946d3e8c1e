#!/usr/bin/env python3
"""bench/report.py: Markdown report and charts from a bench/run JSON document.

A soak document (bench/run soak) gets a report of its own: the stale probes (counts, the
standby's delays), requests/s, p99, server CPU and PSS over time (charts soak_*.svg).

    bench/report FILE.json > docs/BENCHMARKS.md     (charts: docs/benchmarks/*.svg)
    bench/report FILE.json > /tmp/x/report.md       (charts: /tmp/x/benchmarks/*.svg)
    bench/report FILE.json --keys KEYS.json --soak SOAK.json > docs/BENCHMARKS.md

The other sections read the bigint table's samples (samples without "keys" are those) whose SQL
paths send text parameters (samples without "params" are those). The "Key types" section compares the key types (bench/loadgen --keys) with bigint keys, all from one
document: FILE's, or with --keys that of a bench/run keys result, so that the section can be
measured again without the full matrix; its SQL paths are the samples with the document's
config.key_params (binary key arrays since they exist; older documents: text), its RESP ones the
others. With --soak the soak document is the last section.

Refuses partial documents. Charts go beside the Markdown: when standard output is a file, into
the directory "benchmarks" next to it, linked as benchmarks/NAME.svg; --charts DIR puts them
elsewhere (linked as <--link-prefix>NAME.svg). When standard output is not a file (a pipe, a
terminal) and no --charts is given, no charts are drawn: nothing outside the output is written.
"""
import argparse
import json
import os
import statistics
import sys

PATH_NAMES = {
    "sql": "prepared SQL",
    "mget": "SQL mget",
    "mget_json": "mget_json",
    "fdw": "FDW",
    "resp": "RESP MGET",
    "redis": "redis-server MGET",
    "update": "SQL UPDATE",
    "resp_set": "RESP SET",
    "redis_set": "redis-server SET",
    "parse": "key array alone",
}
PATH_SQL = {
    "sql": "`SELECT * FROM items WHERE id = ANY($1)` (prepared)",
    "mget": "`SELECT array_to_json(local_cache.mget('public.items'::regclass, $1::bigint[]))` (prepared)",
    "mget_json": "`SELECT local_cache.mget_json('public.items'::regclass, $1::bigint[])` (prepared)",
    "fdw": "`SELECT * FROM cache.items WHERE id = ANY($1)` on the imported foreign table (prepared)",
    "resp": "`MGET items:1 … items:N` to the extension's RESP server (background workers of PostgreSQL)",
    "redis": "`MGET items:1 … items:N` to Debian's redis-server holding the same rows as `row_to_json` strings (reference)",
}
# write mode: one random row of the 4,096 per request, a fresh 128-byte value
WRITE_PATHS = [("update", "cache_enabled"), ("update", "cache_disabled"), ("resp_set", "cache_enabled"),
               ("redis_set", None)]
WRITE_SQL = {
    "update": "`UPDATE public.items SET value = $2 WHERE id = $1` (prepared), with the table cached and, "
              "for comparison, not cached (`local_cache.disable`)",
    "resp_set": "`SET items:<id> {\"id\":<id>,\"value\":\"…\"}` to the extension's RESP server, AUTHed as a role "
                "with INSERT and UPDATE (`{resp_writer}`): an `INSERT … ON CONFLICT (id) DO UPDATE` through SPI in a "
                "transaction of its own, `+OK` after COMMIT",
    "redis_set": "the same `SET` with the same JSON bytes to redis-server (no persistence; reference)",
}
MODE_TITLES = {
    "warm": "Warm reads (the same N keys, starting at 1, in every request)",
    "miss": "Miss-heavy reads (every other key has no row: the same N keys in every request, half of them absent)",
    "mixed": "Reads mixed with 5% UPDATEs (reads cycle through 128 hot rows; updates through SQL on the same connections)",
    "cold": "Cold fill (local_cache.flush() just before the sample; reads walk all 4,096 rows)",
    "write": "Writes (one row by primary key: SQL UPDATE with the table cached and not cached, RESP SET, "
             "redis-server SET)",
    "serializable": "SERIALIZABLE reads (the warm mode's requests, each its own SERIALIZABLE transaction: "
                    "mget_json against the equivalent prepared SQL; the warm mode has the same at READ COMMITTED)",
}


READ_MODES = ["warm", "miss", "mixed", "cold"]
RB = "redis-benchmark"
RB_PATHS = ["resp", "redis"]  # redis-benchmark's paths: the extension's RESP server and redis-server


def path_label(client, path, batch, pipeline=1):
    """The path's name in a table row; redis-benchmark sends GET for one key and may pipeline."""
    name = PATH_NAMES[path]
    if client == RB and batch == 1:
        name = name.replace("MGET", "GET")
    return name + (f", -P {pipeline}" if pipeline != 1 else "")


def v_rb(doc):
    return (doc.get("versions", {}).get("redis_benchmark") or "version unknown").strip()


def resp_workers(server):
    """How many RESP workers served the run: counted by bench/run (older documents: the setting)."""
    running = server.get("resp_workers_running")
    setting = server.get("local_cache.resp_workers")
    if running is None:
        return setting
    return f"{running}" + (f" (`local_cache.resp_workers = {setting}`: one per four cores)" if setting == "0" else "")


def die(msg):
    print(f"bench/report: {msg}", file=sys.stderr)
    sys.exit(1)


def med(xs):
    return statistics.median(xs) if xs else None


def fmt(x, digits=0):
    if x is None:
        return "–"
    if digits == 0:
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


def fmt_range(xs, digits=0):
    if not xs:
        return "–"
    m = fmt(med(xs), digits)
    if len(xs) == 1:
        return m
    return f"{m} ({fmt(min(xs), digits)}–{fmt(max(xs), digits)})"


# the paths whose parameters are key arrays, sent as text or binary (a sample's "params", default text)
PARAM_PATHS = {"sql", "mget", "mget_json", "fdw", "parse"}


class Data:
    """The samples of one key type (bench/loadgen --keys; documents without the field: int) whose
    SQL paths send their key arrays in the format params ("params"; documents without it: text)."""

    def __init__(self, doc, keys="int", params="text"):
        self.doc = doc
        self.groups = {}
        for s in doc["samples"]:
            if s.get("keys", "int") != keys:
                continue
            if s["path"] in PARAM_PATHS and s.get("params", "text") != params:
                continue
            key = (s["mode"], s["client"], s["path"], s.get("variant"), s["connections"], s["batch"],
                   s.get("pipeline", 1))
            self.groups.setdefault(key, []).append(s)

    def get(self, mode, client, path, conns, batch, variant=None, pipeline=1):
        return self.groups.get((mode, client, path, variant, conns, batch, pipeline), [])

    def pipelines(self):
        return sorted({k[6] for k in self.groups})

    def values(self, field, *args, **kw):
        out = []
        for s in self.get(*args, **kw):
            v = s
            for part in field.split("."):
                v = v.get(part) if isinstance(v, dict) else None
            if v is not None:
                out.append(v)
        return out

    def median(self, field, *args, **kw):
        return med(self.values(field, *args, **kw))


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def make_charts(data, cfg, outdir, prefix):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is missing: install python3-matplotlib (bench/report does so on Debian)")
    matplotlib.rcParams["svg.hashsalt"] = "local_cache"  # reproducible SVG ids
    os.makedirs(outdir, exist_ok=True)
    for f in os.listdir(outdir):
        if f.endswith(".svg") and not f.startswith("soak_"):  # soak charts belong to the soak report
            os.remove(os.path.join(outdir, f))
    links = []
    conns = cfg["connections"]
    batches = cfg["batches"]
    colors = {"sql": "#444444", "mget": "#1f77b4", "mget_json": "#17becf", "fdw": "#2ca02c",
              "resp": "#d62728", "redis": "#ff7f0e"}
    for mode in READ_MODES:
        for client in cfg["clients"]:
            paths = [p for p in ["sql", "mget", "mget_json", "fdw", "resp", "redis"]
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
            fig.savefig(os.path.join(outdir, name), metadata={"Date": None})  # reproducible: no date
            plt.close(fig)
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
            fig.savefig(os.path.join(outdir, name), metadata={"Date": None})  # reproducible: no date
            plt.close(fig)
            links.append((mode, client, "cpu", prefix + name))
    return links


# ------------------------------------------------------------------ key types

KEY_TYPE_ORDER = ["int", "uuid", "text", "pair"]
KEY_TYPE_NAMES = {"int": "bigint", "uuid": "uuid", "text": "short text", "pair": "composite (bigint, int)"}
KEY_TYPE_ROW = {  # how row n of public.items is keyed (bench/run loads the tables so)
    "int": "`n`",
    "uuid": "`'00000000-0000-4000-8000-' || lpad(to_hex(n), 12, '0')`",
    "text": "`'k' || n` (2 to 5 bytes)",
    "pair": "`(n / 16, n % 16)`",
}
KEY_PATHS = ["sql", "mget", "mget_json", "fdw", "resp"]
KEY_CACHED = ["mget", "mget_json", "fdw", "resp"]  # the paths that look keys up in the cache
# issue #12: server CPU per key looked up (cache hits) of uuid and short text keys within 1.2x of
# bigint keys'
KEY_TARGET = 1.2
KEY_TARGET_TYPES = ("uuid", "text")


def key_types_section(doc, src, separate):
    """The "Key types" section from the key-type samples of doc (a bench/run keys result, or a
    warm/all result with KEY_TYPES), each type against the int samples of the same document."""
    kinds = [k for k in KEY_TYPE_ORDER if k != "int" and any(s.get("keys") == k for s in doc["samples"])]
    kinds += sorted({s.get("keys") for s in doc["samples"]} - set(KEY_TYPE_ORDER) - {None})
    if not kinds:
        return []
    cfg = doc["config"]
    # the key arrays' format of the key types' SQL samples (binary; older documents: text), and
    # whether every table's row n has the size of public.items' row n
    key_params = cfg.get("key_params", "text")
    same_size = cfg.get("key_rows_same_size", False)
    data = {k: Data(doc, keys=k, params=key_params) for k in ["int"] + kinds}
    client = cfg.get("key_client", "native")
    c = min({s["connections"] for s in doc["samples"] if s.get("keys", "int") != "int"})
    batches = sorted({s["batch"] for s in doc["samples"] if s.get("keys", "int") != "int"})
    desc = {t["name"]: t for t in doc.get("key_types", [])}
    name = lambda kind: KEY_TYPE_NAMES.get(kind, kind)
    out = []
    w = out.append

    def cpu(kind, path, b):
        return data[kind].median("server_cpu_us_per_req", "warm", client, path, c, b)

    def per_key(kind, path, b):
        x = cpu(kind, path, b)
        return None if x is None else x / b

    def vs_int(fn, kind, path, b):
        return ratio(fn(kind, path, b), fn("int", path, b))

    def rb_per_key(kind, path, b):  # redis-benchmark's unpipelined GET/MGET
        x = data[kind].median("server_cpu_us_per_req", "warm", RB, path, c, b)
        return None if x is None else x / b

    top = max(batches)
    # RESP is judged on redis-benchmark's samples when the run has them: its command is fixed, so
    # its cost does not change with the key type, where the native client's longer keys to format
    # leave the server fewer requests per wakeup (and so more CPU per request)
    has_rb = all(rb_per_key(k, "resp", top) is not None for k in ["int"] + kinds)

    def judged(kind, path):
        return kind in KEY_TARGET_TYPES and path in KEY_CACHED and not (path == "resp" and has_rb)

    def fails(r):
        return r is not None and round(r, 2) > KEY_TARGET

    def per_key_cell(fn, kind, path, b, target):
        """µs per key and, for the key types, the ratio to bigint's (✓/✗ where the target applies)."""
        x, r = fn(kind, path, b), vs_int(fn, kind, path, b)
        if kind == "int" or r is None:
            return fmt(x, 2)
        return fmt(x, 2) + f" ({r:.2f}×{(' ✗' if fails(r) else ' ✓') if target else ''})"

    has_parse = any(cpu(k, "parse", top) is not None for k in ["int"] + kinds)
    # ------------------------------------------------------------ verdict
    w("## Key types")
    w("")
    parts, missed = [], []
    for kind in kinds:
        rs = [(PATH_NAMES[p] + (" (redis-benchmark)" if p == "resp" and has_rb else ""),
               vs_int(rb_per_key if p == "resp" and has_rb else per_key, kind, p, top)) for p in KEY_CACHED]
        rs = [(p, r) for p, r in rs if r is not None]
        if not rs:
            continue
        lo, hi = min(r for _, r in rs), max(r for _, r in rs)
        parts.append(f"{name(kind)} {lo:.2f}–{hi:.2f}×" if len(rs) > 1 else f"{name(kind)} {lo:.2f}×")
        if kind in KEY_TARGET_TYPES:
            missed += [f"{name(kind)} on {p} ({r:.2f}×)" for p, r in rs if fails(r)]
    rest = []  # mget_json without the key array's parse: (path - parse) against bigint's
    for kind in kinds:
        x, x0 = cpu(kind, "mget_json", top), cpu("int", "mget_json", top)
        z, z0 = cpu(kind, "parse", top), cpu("int", "parse", top)
        if None not in (x, x0, z, z0) and x0 > z0:
            rest.append(f"{name(kind)} {(x - z) / (x0 - z0):.2f}×")
    if parts:
        w(f"**Server CPU per key looked up (cache hits, {top} keys per request, the cached paths"
          + (", RESP with redis-benchmark as the client" if has_rb else "") + ") against bigint keys: "
          f"{'; '.join(parts)}. Target for uuid and short text keys ≤ {KEY_TARGET:.1f}×: "
          + ("met on every cached path.**" if not missed else "not met for " + ", ".join(missed) + ".**")
          + (f" Without receiving {'and parsing ' if key_params == 'text' else ''}the key array (the control *key array "
             f"alone* subtracted), mget_json "
             f"costs {'; '.join(rest)} bigint's (notes below)." if rest else ""))
        w("")
    # ------------------------------------------------------------ method
    if same_size:
        w(f"Warm reads of the {client} client, {c} connections, the same keys in every request (rows 1..N), on four "
          "tables holding the 4,096 rows of `public.items` under primary keys of different types, row n of each the "
          "size of `public.items`' row n: its value is `public.items`' value shortened by what its key adds to "
          "`row_to_json(row)` (uuid 34–37 bytes, short text 3, composite 3–5), so every path returns as many bytes "
          "per row whatever the key (RESP and mget_json send the key inside the row's JSON), and the comparison is "
          "of the lookups, not of longer rows; each enabled, with its foreign table in `cache` and, in "
          "redis-server, the same rows under the same RESP keys. The node and go clients read bigint keys only"
          + ("; redis-benchmark reads every key type on the RESP paths (below)." if has_rb else
             ", so does redis-benchmark."))
    else:
        w(f"Warm reads of the {client} client, {c} connections, the same keys in every request (rows 1..N), on four "
          "tables holding the same 4,096 rows — the values of `public.items` — under primary keys of different types; "
          "each enabled, with its foreign table in `cache` and, in redis-server, the same rows under the same RESP "
          "keys. The node and go clients read bigint keys only"
          + ("; redis-benchmark reads every key type on the RESP paths (below)." if has_rb else
             ", so does redis-benchmark."))
    if key_params == "binary":
        w("")
        w("The SQL paths (prepared SQL, mget, mget_json, the FDW, key array alone) send every key type's key arrays, "
          "bigint's included, as **binary parameters**, as pgx and other binary-protocol drivers send a `uuid[]`: "
          "PostgreSQL's binary array format (ndim, has-null flag, element type OID, per dimension its size and lower "
          "bound, then per element its length and bytes: 16 for a uuid, 8 big-endian for a bigint, 4 for an int, a "
          "text's bytes), which the server reads with array_recv and the type's receive function (uuid_recv, "
          "int8recv, textrecv) rather than array_in and its input function (uuid_in) for text. Results are text. "
          "The bigint rows of this section are therefore samples of their own (`bench/run keys`), not the text-"
          "parameter samples of the other sections. The table shows the arrays' text form; the check runs every "
          "SQL path with text and with binary arrays.")
    w("")
    w("| key type | table | key of row n | RESP keys of rows 1, 2 | prepared SQL (the baseline) | FDW | mget's key array, rows 1, 2 |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    for kind in ["int"] + kinds:
        t = desc.get(kind, {})
        st = t.get("statements", {})
        cols = ", ".join(f"{x['name']} {x['type']}" for x in t.get("columns", []))
        params = (t.get("rows_1_2") or {}).get("params", {})
        cells = [name(kind), f"`{t.get('table', '?')}` ({cols})", KEY_TYPE_ROW.get(kind, "–"),
                 f"`{(t.get('rows_1_2') or {}).get('resp', '–')}`", f"`{st.get('sql', '–')}`", f"`{st.get('fdw', '–')}`",
                 f"`'{', '.join(params.get('mget', [])) or '–'}'::{t.get('array_type', '?')}[]`"]
        w("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")  # a | in a cell, also in code, is \|
    w("")
    w("SQL mget is `SELECT array_to_json(local_cache.mget('<table>'::regclass, $1::<type>[]))`, mget_json "
      "`SELECT local_cache.mget_json('<table>'::regclass, $1::<type>[])` (prepared, the key array as above: a "
      "composite key's has a row per key and an element per key column); RESP is `MGET` of the RESP keys. A "
      "composite key has no `= ANY` form: its prepared SQL and FDW statements join `unnest()` of one array per key "
      "column with the table, which PostgreSQL runs as a nested loop of one index scan (on the foreign table: one "
      "parameterized cache lookup) per key. Of the natural forms it is the fastest: `(a, b) IN (SELECT * FROM "
      "unnest($1, $2))` adds a hash aggregate of the keys, and `(a, b) IN (($1, $2), …)` (a statement per batch "
      "size) runs as a BitmapOr of index scans; like mget it answers a key asked twice twice. The cluster's "
      "collation is C (`initdb --locale=C`)."
      + ((" **Key array alone** is the control `SELECT cardinality($1::<type>[])` with mget's key array: what the "
          "server spends on receiving the binary parameter (array_recv and the type's receive function), a cost of "
          "the key's type in PostgreSQL that every statement taking the keys pays." if key_params == "binary" else
          " **Key array alone** is the control `SELECT cardinality($1::<type>[])` with mget's key array: what the "
          "server spends on receiving the parameter as text and parsing it (array_in and the type's input function: "
          "uuid_in for uuid), a cost of the key's type in PostgreSQL that every statement taking the keys pays.")
         if has_parse else ""))
    w("")
    checks = "; ".join(f"{x['client']} client's check: {x['comparisons']} comparisons"
                       + (f" over the key types {', '.join(x['key_types'])}" if x.get("key_types") else "")
                       + f", {x['mismatches']} mismatches" for x in doc.get("checks", []) if x.get("key_types"))
    if separate:
        g = doc.get("git", {})
        w(f"From `{src}`: `{doc.get('command') or 'bench/run keys'}`, run from {doc['started_at']} to "
          f"{doc.get('finished_at', '?')}, local_cache git {g.get('head')}"
          f"{' (working tree modified)' if g.get('dirty') else ''}; each sample {cfg['duration_seconds']:g} s, "
          f"repeated {cfg['repeats']} time(s), the order rotated between repetitions" + (f"; {checks}" if checks else "")
          + ".")
    else:
        w(f"The key-type samples of this run" + (f"; {checks}" if checks else "") + ".")
    w("")
    w("The check compares, for every key type, mget, mget_json, the FDW, RESP and redis-server with the prepared SQL "
      "statement above on the cases of the bigint check (input order, duplicates, missing and NULL keys, empty "
      "input, keys 1..64 both ways, the miss mode's keys; twice, the second pass from the cache), and prepared SQL "
      "must find a row for every key of rows 1..4,096 (so the client spells the keys the tables hold).")
    w("")
    # ------------------------------------------------------------ requests/s and CPU per request
    for field, title, digits, paths in (("rps", "Requests/s", 0, KEY_PATHS),
                                        ("server_cpu_us_per_req", "Server CPU µs per request", 1,
                                         KEY_PATHS + (["parse"] if has_parse else []))):
        w(f"{title} (median{', min–max' if cfg['repeats'] > 1 else ''}) and the ratios against prepared SQL on the "
          "same table:")
        w("")
        w("| key type | keys | " + " | ".join(PATH_NAMES[p] for p in paths) + " | "
          + " | ".join(f"{PATH_NAMES[p]} / SQL" for p in KEY_PATHS[1:]) + " |")
        w("| --- | --- | " + " | ".join("---" for _ in paths) + " | " + " | ".join("---" for _ in KEY_PATHS[1:]) + " |")
        for kind in ["int"] + kinds:
            for b in batches:
                vals = {p: data[kind].values(field, "warm", client, p, c, b) for p in paths}
                cells = [fmt_range(vals[p], digits) for p in paths]
                cells += [fmt(ratio(med(vals[p]), med(vals["sql"])), 2) for p in KEY_PATHS[1:]]
                w(f"| {name(kind)} | {b} | " + " | ".join(cells) + " |")
        w("")
    # ------------------------------------------------------------ per key
    paths = KEY_PATHS + (["parse"] if has_parse else [])
    w("Server CPU µs per key looked up (server CPU per request / keys per request) and, in parentheses, relative to "
      f"bigint keys on the same path (✓/✗: uuid and short text against the {KEY_TARGET:.1f}× target on the cached "
      "paths):")
    w("")
    w("| key type | keys | " + " | ".join(PATH_NAMES[p] for p in paths) + " |")
    w("| --- | --- | " + " | ".join("---" for _ in paths) + " |")
    for kind in ["int"] + kinds:
        for b in batches:
            cells = [per_key_cell(per_key, kind, p, b, judged(kind, p)) for p in paths]
            w(f"| {name(kind)} | {b} | " + " | ".join(cells) + " |")
    w("")
    if has_rb:
        w(f"RESP with `{RB}` as the client ({c} connections, no pipelining, `GET`/`MGET` of the RESP keys of rows "
          "1..N, a fixed command, so the client's cost is the same whatever the key type): server CPU µs per key "
          f"looked up and, in parentheses, relative to bigint keys (✓/✗: uuid and short text against the "
          f"{KEY_TARGET:.1f}× target); redis-server, holding the same rows under the same keys, shows what the "
          "longer keys cost a RESP server that does no more than hash and compare them:")
        w("")
        w("| key type | keys | RESP | redis-server | RESP / redis-server | RESP requests/s | redis-server requests/s |")
        w("| --- | --- | --- | --- | --- | --- | --- |")
        for kind in ["int"] + kinds:
            for b in batches:
                cells = [per_key_cell(rb_per_key, kind, p, b, kind in KEY_TARGET_TYPES and p == "resp")
                         for p in RB_PATHS]
                cells.append(fmt(ratio(rb_per_key(kind, "resp", b), rb_per_key(kind, "redis", b)), 2))
                cells += [fmt(data[kind].median("rps", "warm", RB, p, c, b)) for p in RB_PATHS]
                w(f"| {name(kind)} | {b} | " + " | ".join(cells) + " |")
        w("")
    lo_b = min(batches)
    if top > lo_b:
        paths = KEY_PATHS + (["parse"] if has_parse else [])
        w(f"The cost of one more key: (server CPU per request at {top} keys − at {lo_b}) / {top - lo_b}, in µs, and "
          "relative to bigint keys; it leaves out what every request costs whatever its keys (the protocol, the "
          "executor, the statement):")
        w("")
        w("| key type | " + " | ".join(PATH_NAMES[p] for p in paths) + " |")
        w("| --- | " + " | ".join("---" for _ in paths) + " |")

        def marginal(kind, p):
            a, z = cpu(kind, p, lo_b), cpu(kind, p, top)
            return None if a is None or z is None else (z - a) / (top - lo_b)

        for kind in ["int"] + kinds:
            cells = []
            for p in paths:
                x, r = marginal(kind, p), ratio(marginal(kind, p), marginal("int", p))
                cells.append(fmt(x, 2) + (f" ({r:.2f}×)" if kind != "int" and r is not None else ""))
            w(f"| {name(kind)} | " + " | ".join(cells) + " |")
        w("")
    # ------------------------------------------------------------ notes
    notes = []
    hits = []
    for kind in ["int"] + kinds:
        for p in KEY_CACHED:
            for b in batches:
                for smp in data[kind].get("warm", client, p, c, b):
                    d = smp.get("cache_stats_delta") or {}
                    if d and smp["requests"]:
                        hits.append((d.get("hits", 0) / (smp["requests"] * b), kind, p, b))
    if hits:
        short = [h for h in hits if h[0] < 0.99]
        notes.append(f"Cache hits per key looked up on the cached paths: {min(h[0] for h in hits):.2f} to "
                     f"{max(h[0] for h in hits):.2f} over {len(hits)} samples"
                     + (f"; {len(short)} sample(s) below 0.99: " + ", ".join(
                         f"{name(k)} {PATH_NAMES[p]} {b} keys {h:.2f}" for h, k, p, b in short[:6])
                        if short else " (every key a hit)") + ".")
    for kind in kinds:
        for b in batches:
            for p in ["mget", "mget_json", "fdw"]:
                r = ratio(data[kind].median("rps", "warm", client, p, c, b),
                          data[kind].median("rps", "warm", client, "sql", c, b))
                if r is not None and r < 1.0:
                    notes.append(f"{name(kind)} keys: {PATH_NAMES[p]} is slower than prepared SQL at {b} key(s) "
                                 f"({r:.2f}× requests/s).")
    if has_parse:  # where a key type's extra server CPU goes: the key array, or the rest
        for kind in kinds:
            x, x0 = cpu(kind, "mget_json", top), cpu("int", "mget_json", top)
            z, z0 = cpu(kind, "parse", top), cpu("int", "parse", top)
            if None in (x, x0, z, z0) or x <= x0:
                continue
            rest = ratio(x - z, x0 - z0)
            notes.append(f"{name(kind)} keys, {top} per request: mget_json costs {x - x0:.1f} µs more server CPU per "
                         f"request than with bigint keys; the key array alone costs {z - z0:+.1f} µs against bigint's"
                         + (f" ({(z - z0) / (x - x0):.0%} of the difference)" if z > z0 else "")
                         + (f"; the rest of the request (the lookups, the rows, the reply) {rest:.2f}× bigint's"
                            if rest is not None and x0 > z0 else "") + ".")
    for kind in kinds:
        if len(desc.get(kind, {}).get("columns", [])) > 1:
            r, f, q = vs_int(per_key, kind, "fdw", top), cpu(kind, "fdw", top), cpu(kind, "sql", top)
            if r is not None and f is not None and q:
                notes.append(f"{name(kind)} keys, {top} per request: the FDW costs {r:.2f}× bigint's server CPU per key: "
                             "the join with unnest() runs one parameterized foreign scan (a cache lookup) per key through "
                             "the executor's nested loop, where a one-column key's `= ANY` is one scan for all of them; "
                             f"{f / q:.2f}× the server CPU of prepared SQL's join on the table.")
    if cfg["repeats"] == 1:
        notes.append("A single repetition per combination (no min–max): differences of 10–15 % are within its noise.")
    notes.append("Client and servers share the machine's cores: requests/s moves with the client's own cost (longer "
                 "keys to format" + ("" if same_size else ", longer rows to receive") + "), server CPU per key does "
                 "not depend on it.")
    for n_ in notes:
        w(f"* {n_}")
    w("")
    return out


# ------------------------------------------------------------------ soak

SOAK_PATHS = ["mget", "fdw", "resp", "redis", "update", "resp_set", "redis_set"]
SOAK_READS = ["mget", "fdw", "resp", "redis"]
SOAK_WRITES = ["update", "resp_set", "redis_set"]
SOAK_PATH_NAMES = {"mget": "SQL mget", "fdw": "FDW", "resp": "RESP MGET", "redis": "redis-server MGET",
                   "update": "SQL UPDATE", "resp_set": "RESP SET", "redis_set": "redis-server SET"}
SOAK_COLORS = {"mget": "#1f77b4", "fdw": "#2ca02c", "resp": "#d62728", "redis": "#ff7f0e", "update": "#444444",
               "resp_set": "#9467bd", "redis_set": "#8c564b", "primary": "#1f77b4", "standby": "#2ca02c",
               "redis_server": "#ff7f0e", "client": "#7f7f7f", "sql": "#bbbbbb"}
PROBE_PATH_NAMES = {"mget": "SQL mget (typed rows of the record[])", "fdw": "FDW", "resp": "RESP GET",
                    "sql": "prepared SQL (control: the table, no cache)"}
PROBE_PATHS = ["mget", "fdw", "resp", "sql"]


def soak_windows(series):
    """(first, last): the first and the last tenth of the points (at least one each)."""
    k = max(1, len(series) // 10)
    return series[:k], series[-k:]


def soak_field(points, fn):
    out = []
    for p in points:
        try:
            v = fn(p)
        except (KeyError, TypeError):
            v = None
        if v is not None:
            out.append(v)
    return out


def change(a, b):
    if a is None or b is None or a == 0:
        return None
    return (b - a) / a * 100


def fmt_pct(x):
    return "–" if x is None else f"{x:+.0f} %"


def fmt_us(x):
    if x is None:
        return "–"
    return f"{x / 1000:,.1f} ms" if x >= 10000 else f"{x:,.0f} µs"


def soak_charts(soak, outdir, prefix):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is missing: install python3-matplotlib (bench/report does so on Debian)")
    matplotlib.rcParams["svg.hashsalt"] = "local_cache"
    os.makedirs(outdir, exist_ok=True)
    for f in os.listdir(outdir):
        if f.startswith("soak_") and f.endswith(".svg"):
            os.remove(os.path.join(outdir, f))
    series = soak["series"]
    minutes = soak["duration_seconds"] >= 600
    xs = [p["t"] / 60 if minutes else p["t"] for p in series]
    xlabel = "minutes" if minutes else "seconds"
    links = []

    def save(fig, name, title):
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, name), metadata={"Date": None})  # reproducible: no date
        plt.close(fig)
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


def soak_report(doc, args, charts):
    soak, cfg = doc["soak"], doc["config"]
    series = soak["series"]
    if not series:
        die(f"{args.file} has no soak points")
    links = soak_charts(soak, charts, args.link_prefix) if charts else []
    out = []
    w = out.append
    sp = soak.get("stale_probes") or {}
    sb = sp.get("standby")
    standby = soak.get("standby")
    w("<!-- GENERATED FILE: written by bench/report from a bench/run soak result; do not edit by hand. -->")
    w("# Soak")
    w("")
    w(f"*Generated by `bench/report {args.file}` from the JSON document of one `bench/run soak`; do not edit by hand.*")
    w("")
    # ------------------------------------------------------------ verdict
    pr = sp.get("primary") or {}
    bad = (pr.get("stale", 0) + pr.get("wrong", 0) + (sb or {}).get("stale", 0) + (sb or {}).get("wrong", 0)
           + (sb or {}).get("not_visible_within_bound", 0))
    if sp:
        w(f"**Stale probes: {sp['probes']:,} writes, each read back at once through mget, the FDW and RESP on the "
          f"primary{' and, until visible, on the hot standby' if sb else ''}: "
          + ("no stale or wrong observation.**" if not bad else f"{bad} stale, wrong or never visible observations.**"))
        w("")
    # ------------------------------------------------------------ method
    w("## Method")
    w("")
    w(f"Produced by: `{doc.get('command') or 'bench/run soak'}` then `bench/report {args.file}`, run from "
      f"{doc['started_at']} to {doc.get('finished_at', '?')} ({soak.get('elapsed_s', 0):,.0f} s).")
    w("")
    srv = cfg.get("server", {})
    w("`bench/run soak` starts the throwaway cluster of the other modes (tmpfs, fsync off, `shared_buffers = 128MB`, "
      f"`local_cache.memory = 384MB`, {resp_workers(srv)} RESP workers; `synchronous_commit = "
      f"{srv.get('synchronous_commit')}`), 4,096 rows of 128-byte values in `public.items`, cached, the foreign table, "
      "and redis-server holding the same rows"
      + (", plus a **hot standby**: a streaming replica of the cluster (`pg_basebackup -R`, the same "
         "`shared_preload_libraries = 'local_cache'`) with its own RESP port" if standby else "")
      + ". One native client (`bench/loadgen soak`) then runs every path at once:")
    w("")
    w(f"* reads, closed loops, {soak['connections_per_read_path']} connections per path, {soak['batch']} consecutive "
      "keys from a random start per request: SQL mget (`array_to_json(local_cache.mget(...))`), the FDW "
      "(`SELECT * FROM cache.items WHERE id = ANY($1)`), RESP `MGET` and, as the reference, redis-server `MGET`; "
      "every reply must hold exactly the requested rows;")
    w(f"* writes, paced at {soak['write_rate_per_path']:g} per second per path, one random row with a fresh value: "
      "the prepared SQL `UPDATE`, RESP `SET` (as the writing role) and redis-server `SET`;")
    if sp:
        w(f"* **stale probes**, one every {sp['interval_ms']} ms on {sp['rows']} rows of their own (ids 1000001…): a "
          "writer commits a new value (alternately SQL `UPDATE` and RESP `SET`) and, as soon as the COMMIT has "
          "returned (the UPDATE's or the SET's reply), reads the row through mget (typed rows of the `record[]`: "
          "`unnest(local_cache.mget(...)) AS r(id bigint, value text)`), the FDW and RESP `GET` on the primary, and "
          "prepared SQL on the table as the control, all requests sent before any reply is read. Each must show "
          "exactly the new value; an older value is **stale**, anything else **wrong**."
          + (f" The same reads go to the standby in the same first round and then in rounds (0.2 ms apart) until "
             f"each has shown the new value, at most {sb['bound_ms']:,} ms after the COMMIT: the **delay** of a path is "
             "the time from the COMMIT's reply to the reply that first showed the new value (the first round runs "
             "concurrently with the primary's reads, so delays below a round trip read as one). The control's delay "
             "is the replay's; a cached path much slower than the control would be the cache lagging behind the "
             "replay. On the standby a "
             "read is **stale** if it shows an older version than any standby read of the row already showed in an "
             "earlier round: once a commit is visible there, no later read may go back. A path that never showed "
             "the value within the bound counts as *not visible*." if sb else ""))
    w("")
    w(f"Every {soak['interval_seconds']:g} s the client reports per path the requests, requests/s, p50, p99 and max "
      "latency of the interval; at that moment the harness reads from `/proc` the CPU time (utime + stime) and the "
      "memory (PSS from `smaps_rollup`, so shared memory counts once, split into *anonymous* — the processes' own "
      "heap, where a leak would show — and *shared memory* — shared_buffers and the cache segment, which grow as "
      "pages are first touched, up to their size; RSS in the JSON) of the postmaster and all its "
      "children" + (", of the standby's" if standby else "") + " and of redis-server. CPU is shown as a percentage "
      "of one core over the interval. PSS grows while the cache segment, shared buffers and catalog caches are first "
      "touched; a leak shows as growth that goes on after that.")
    w("")
    checks = doc.get("checks", [])
    if checks:
        w("Before the soak: " + "; ".join(
            f"{c['client']} client's check{' on the standby (read paths)' if c.get('server') == 'standby' else ''}: "
            f"{c['comparisons']} comparisons, {c['mismatches']} mismatches" for c in checks) + ".")
        w("")
    write_environment(w, doc)
    # ------------------------------------------------------------ stale probes
    if sp:
        w("## Stale probes")
        w("")
        wp = sp.get("write_paths", {})
        w(f"{sp['probes']:,} probes ({wp.get('update', 0):,} by SQL UPDATE, {wp.get('resp_set', 0):,} by RESP SET).")
        w("")
        w("| server | path | observations | stale | wrong | not visible | delay p50 | p90 | p99 | max |")
        w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for p in PROBE_PATHS:
            if p not in pr["by_path"]:
                continue
            b = pr["by_path"].get(p, {})
            w(f"| primary | {PROBE_PATH_NAMES[p]} | {b.get('observations', 0):,} | {b.get('stale', 0)} | "
              f"{b.get('wrong', 0)} | – | – | – | – | – |")
        if sb:
            for p in PROBE_PATHS:
                if p not in sb["by_path"]:
                    continue
                b = sb["by_path"].get(p, {})
                d = b.get("delay_us", {})
                w(f"| standby | {PROBE_PATH_NAMES[p]} | {b.get('observations', 0):,} | {b.get('stale', 0)} | "
                  f"{b.get('wrong', 0)} | {b.get('not_visible_within_bound', 0)} | {fmt_us(d.get('p50'))} | "
                  f"{fmt_us(d.get('p90'))} | {fmt_us(d.get('p99'))} | {fmt_us(d.get('max'))} |")
            d = sb.get("delay_all_paths_us", {})
            w(f"| standby | mget, FDW, RESP (the slowest of a probe) | | {sb['stale']} | {sb['wrong']} | "
              f"{sb['not_visible_within_bound']} | {fmt_us(d.get('p50'))} | {fmt_us(d.get('p90'))} | "
              f"{fmt_us(d.get('p99'))} | {fmt_us(d.get('max'))} |")
        w("")
        w("Stale on the primary must be 0 (after COMMIT returns nobody reads the old row); on the standby stale "
          "must be 0 too (a read never goes back behind what the standby already showed)."
          + (" Standby observations count every read of the rounds, the ones before the value arrived included."
             if sb else "")
          + ("" if sb else " This run had no standby (SOAK_STANDBY=0)."))
        w("")
        events = sp.get("events") or []
        if events:
            w(f"Observations that failed ({sp.get('events_total', len(events))} in all; the first {len(events)}):")
            w("")
            w("| kind | server | path | row | write | written | seen | standby had shown | ms after COMMIT |")
            w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            for e in events:
                w(f"| {e['kind']} | {e['server']} | {e['path']} | {e['row']} | {e['write_path']} | "
                  f"`{e['written_value']}` (v{e['written_version']}) | `{e['seen']}` (v{e['seen_version']}) | "
                  f"{'–' if e.get('standby_newest_seen_before') is None else 'v' + str(e['standby_newest_seen_before'])} | "
                  f"{e['ms_after_commit']:.3f} |")
            w("")
    # ------------------------------------------------------------ over time
    first, last = soak_windows(series)
    w("## Over time")
    w("")
    w(f"{len(series)} points, one every {soak['interval_seconds']:g} s. *first* and *last*: medians over the first and "
      f"the last tenth of the points ({len(first)} each).")
    w("")
    w("| path | requests | mean requests/s | requests/s first → last | change | p99 first → last | p99 max of the points |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    notes = []
    elapsed = soak.get("elapsed_s") or sum(p["interval_s"] for p in series)
    for path in SOAK_PATHS:
        if not any(path in p["paths"] for p in series):
            continue
        total = (soak.get("requests") or {}).get(path) or sum(p["paths"][path]["requests"] for p in series if path in p["paths"])
        r0 = med(soak_field(first, lambda p: p["paths"][path]["rps"]))
        r1 = med(soak_field(last, lambda p: p["paths"][path]["rps"]))
        q0 = med(soak_field(first, lambda p: p["paths"][path]["p99_us"]))
        q1 = med(soak_field(last, lambda p: p["paths"][path]["p99_us"]))
        qmax = max(soak_field(series, lambda p: p["paths"][path]["p99_us"]) or [0])
        w(f"| {SOAK_PATH_NAMES[path]} | {total:,} | {fmt(total / elapsed if elapsed else None)} | {fmt(r0)} → {fmt(r1)} | "
          f"{fmt_pct(change(r0, r1))} | {fmt_us(q0)} → {fmt_us(q1)} | {fmt_us(qmax)} |")
        if path in SOAK_READS and r0 and r1 is not None and r1 < 0.8 * r0:
            notes.append(f"{SOAK_PATH_NAMES[path]}: requests/s fell from {fmt(r0)} to {fmt(r1)} "
                         f"({fmt_pct(change(r0, r1))}) between the first and the last tenth of the run.")
        if q0 and q1 is not None and q1 > 2 * q0 and q1 - q0 > 1000:
            notes.append(f"{SOAK_PATH_NAMES[path]}: p99 rose from {fmt_us(q0)} to {fmt_us(q1)} between the first and the "
                         "last tenth of the run.")
    w("")
    w("| server | mean CPU (% of a core) | PSS first → last | change | PSS max | anonymous PSS first → last | "
      "shared-memory PSS first → last | processes (last point) |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, key in (("PostgreSQL primary", "primary"), ("PostgreSQL standby", "standby"), ("redis-server", "redis")):
        if not any(key in p["servers"] for p in series):
            continue
        cpu = soak_field(series, lambda p: p["servers"][key]["cpu_percent"])
        m0 = med(soak_field(first, lambda p: p["servers"][key]["pss_bytes"]))
        m1 = med(soak_field(last, lambda p: p["servers"][key]["pss_bytes"]))
        mmax = max(soak_field(series, lambda p: p["servers"][key]["pss_bytes"]) or [0])
        a0 = med(soak_field(first, lambda p: p["servers"][key]["pss_anon_bytes"]))
        a1 = med(soak_field(last, lambda p: p["servers"][key]["pss_anon_bytes"]))
        h0 = med(soak_field(first, lambda p: p["servers"][key]["pss_shmem_bytes"]))
        h1 = med(soak_field(last, lambda p: p["servers"][key]["pss_shmem_bytes"]))
        procs = series[-1]["servers"].get(key, {}).get("processes")
        mib = lambda x: "–" if x is None else fmt(x / 2**20, 1)
        w(f"| {name} | {fmt(statistics.mean(cpu) if cpu else None)} | {mib(m0)} → {mib(m1)} MiB | "
          f"{fmt_pct(change(m0, m1))} | {mib(mmax)} MiB | {mib(a0)} → {mib(a1)} MiB | {mib(h0)} → {mib(h1)} MiB | {procs} |")
        if a0 is not None and a1 is not None and a1 - a0 > max(4 * 2**20, 0.05 * a0):
            notes.append(f"{name}: anonymous (private, heap) PSS grew by {mib(a1 - a0)} MiB ({fmt_pct(change(a0, a1))}) "
                         "from the first to the last tenth of the run: **a possible leak** (a longer run tells it from "
                         "caches still filling).")
        elif m0 and m1 and m1 - m0 > max(8 * 2**20, 0.05 * m0):
            notes.append(f"{name}: PSS grew by {mib(m1 - m0)} MiB ({fmt_pct(change(m0, m1))}) from the first to the "
                         "last tenth of the run"
                         + (f", of which shared memory {mib((h1 or 0) - (h0 or 0))} MiB (pages of shared_buffers and of "
                            "the cache segment touched for the first time: bounded by their size), anonymous "
                            f"{mib((a1 or 0) - (a0 or 0))} MiB" if h0 is not None and h1 is not None else "")
                         + ".")
    w("")
    if links:
        for title, link in links:
            w(f"![{title}]({link})")
            w("")
    # ------------------------------------------------------------ cache counters
    rows = []
    for name, k0, k1 in (("primary", "cache_stats_before", "cache_stats_after"),
                         ("standby", "standby_cache_stats_before", "standby_cache_stats_after")):
        a, b = soak.get(k0), soak.get(k1)
        if a and b:
            d = {k: b[k] - a[k] for k in b if isinstance(b.get(k), (int, float)) and isinstance(a.get(k), (int, float))}
            rows.append((name, d, b))
    if rows:
        keys = ["hits", "misses", "fills", "evictions", "invalidations"]
        w("## Cache counters over the soak")
        w("")
        w("| server | " + " | ".join(keys) + " | memory used at the end |")
        w("| --- | " + " | ".join("---" for _ in keys) + " | --- |")
        for name, d, b in rows:
            w(f"| {name} | " + " | ".join(fmt(d.get(k)) for k in keys)
              + f" | {fmt((b.get('memory_used') or 0) / 2**20, 1)} MiB |")
        w("")
    # ------------------------------------------------------------ notes
    w("## Notes (generated from the numbers above)")
    w("")
    if elapsed < 600:
        notes.append(f"This run lasted {elapsed:,.0f} s: too short to tell a slow leak or slowdown from noise (the "
                     "default is one hour).")
    if sb and "sql" in sb.get("by_path", {}):
        ctl = sb["by_path"]["sql"]["delay_us"]
        lagging = [p for p in ("mget", "fdw", "resp") if p in sb["by_path"]
                   and sb["by_path"][p]["delay_us"]["p99"] > 2 * ctl["p99"] + 2000]
        notes.append("Standby delays, cached paths against the control (plain SQL on the table, which sees a commit "
                     "when it is replayed): " + "; ".join(
                         f"{PROBE_PATH_NAMES[p].split(' (')[0]} p50 {fmt_us(sb['by_path'][p]['delay_us']['p50'])}, p99 "
                         f"{fmt_us(sb['by_path'][p]['delay_us']['p99'])}, max {fmt_us(sb['by_path'][p]['delay_us']['max'])}"
                         for p in PROBE_PATHS if p in sb["by_path"]) + ". "
                     + (f"**{', '.join(lagging)} lag behind the replay** (p99 more than twice the control's)."
                        if lagging else "The cached paths follow the replay: their delays are the control's, so the "
                                        "delay is shipping and replaying the WAL, not the cache."))
    if srv.get("synchronous_commit") == "off" and sb:
        notes.append("synchronous_commit was off: a commit's WAL reaches the standby only when the walwriter "
                     "flushes it (wal_writer_delay, 200 ms), which dominates the standby delays.")
    notes.append("Client and servers share the machine's cores: the readers run closed loops, so requests/s moves "
                 "with whatever else runs on the machine; compare the shape over time, not the level.")
    for n_ in notes:
        w(f"* {n_}")
    w("")
    return out


def charts_beside_output():
    """<dir of the file standard output writes to>/benchmarks, or None when it is no file."""
    try:
        if not os.path.isfile(f"/proc/self/fd/{sys.stdout.fileno()}"):
            return None
        return os.path.join(os.path.dirname(os.path.realpath(f"/proc/self/fd/{sys.stdout.fileno()}")), "benchmarks")
    except OSError:
        return None


def write_environment(w, doc):
    m, v, g = doc.get("machine", {}), doc.get("versions", {}), doc.get("git", {})
    w("## Environment")
    w("")
    w("| | |")
    w("| --- | --- |")
    w(f"| CPU | {m.get('cpu_model')} ({m.get('cores')} cores) |")
    w(f"| memory | {fmt((m.get('memory_bytes') or 0) / 2**30, 1)} GiB |")
    w(f"| OS, kernel | {m.get('os')}, {m.get('kernel')} |")
    w(f"| PostgreSQL | {v.get('postgresql')} |")
    w(f"| local_cache | extension {v.get('local_cache')}, git {g.get('head')}{' (working tree modified)' if g.get('dirty') else ''} |")
    w(f"| redis-server | {v.get('redis_server')} |")
    w(f"| clients | libpq {v.get('libpq')}; {v.get('gxx')}; Node.js {v.get('node')}, pg {v.get('node_pg')}, redis {v.get('node_redis')}"
      + (f"; {v.get('go')}, pgx {v.get('go_pgx')} (Debian)" if v.get("go") else "")
      + (f"; {v.get('redis_benchmark')}" if v.get("redis_benchmark") else "") + " |")
    w("")
    w("Client and servers share the same machine and its cores: every request costs client CPU as well as "
      "server CPU, so on a small machine requests/s measures the sum of both. Server CPU µs per request is the "
      "number that does not depend on the client.")
    w("")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--charts", help="directory for the SVG charts (default: beside the output file)")
    ap.add_argument("--link-prefix", default="benchmarks/")
    ap.add_argument("--soak", help="a bench/run soak result, reported as the last section")
    ap.add_argument("--keys", help="a bench/run keys result (or a warm/all one with key types): the Key types "
                                   "section comes from it instead of FILE")
    args = ap.parse_args()
    with open(args.file) as f:
        doc = json.load(f)
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
        die(f"{args.file} has no samples")
    data = Data(doc)
    cfg = doc["config"]
    links = make_charts(data, cfg, charts, args.link_prefix) if charts else []
    if not charts:
        print("bench/report: standard output is not a file and no --charts given: no charts drawn",
              file=sys.stderr)
    out = []
    w = out.append
    src = os.path.basename(args.file)
    w("<!-- GENERATED FILE: written by bench/report from a bench/run result; do not edit by hand. -->")
    w("# Benchmarks")
    w("")
    invocation = (f"bench/report {args.file}" + (f" --keys {args.keys}" if args.keys else "")
                  + (f" --soak {args.soak}" if args.soak else ""))
    docs = ["one `bench/run`"] + (["one `bench/run keys`"] if args.keys else []) + (["one `bench/run soak`"] if args.soak else [])
    w(f"*Generated by `{invocation}` from the JSON document of " + (", ".join(docs[:-1]) + " and " + docs[-1] if len(docs) > 1 else docs[0])
      + "; do not edit by hand.*")
    w("")
    # ------------------------------------------------------------ method
    w("## Method")
    w("")
    w(f"Produced by: `{doc.get('command') or 'bench/run'}` then `{invocation} > docs/BENCHMARKS.md`, "
      f"run from {doc['started_at']} to {doc.get('finished_at', '?')}.")
    w("")
    w("`bench/run` builds and installs the extension, starts a throwaway PostgreSQL 15 cluster with its data "
      "directory and WAL on tmpfs (`/dev/shm`; fsync and synchronous_commit off), `shared_preload_libraries = "
      "'local_cache'`, `max_connections = 300`, `shared_buffers = 128MB`, `local_cache.memory = 384MB` and the RESP "
      f"server on a loopback port ({resp_workers(cfg['server'])} worker(s)), loads `public.items(id bigint "
      "primary key, value text)` with 4,096 rows of 128-byte values, enables the cache, imports the foreign table, and "
      "starts Debian's redis-server on loopback without persistence, holding the same rows as `row_to_json` strings "
      "under the same keys (`items:<id>`).")
    w("")
    w("Read paths:")
    w("")
    for p in ["sql", "mget", "mget_json", "fdw", "resp", "redis"]:
        w(f"* **{PATH_NAMES[p]}**: {PATH_SQL[p]}")
    w("")
    if any(k[0] == "write" for k in data.groups):
        w("Write paths (write mode; each request writes one random row of the 4,096 with a fresh 128-byte value):")
        w("")
        for p in ["update", "resp_set", "redis_set"]:
            w(f"* **{PATH_NAMES[p]}**: " + WRITE_SQL[p].replace("{resp_writer}", cfg.get("resp_writer_role", "bench_writer")))
        w("")
    w("Clients: **native** is `bench/loadgen` (C++17, libpq in non-blocking mode with prepared statements and text "
      "results, its own RESP2 client; min(connections, 2 × cores) threads driving the connections with `poll()`); "
      "**node** is Node.js with node-postgres (`pg`, prepared statements, rows parsed into objects) and node-redis "
      "(`redis`, replies `JSON.parse`d into rows) on one event loop"
      + ("; **go** is `bench/go` (Go with pgx v4 from Debian's packages, prepared statements and binary results "
         "scanned into typed rows, one goroutine per connection; a plain RESP2 client of its own, values decoded with "
         "`encoding/json`). **The go client's SQL mget is `SELECT local_cache.mget('public.items'::regclass, "
         "$1::bigint[])` itself** — the `record[]`, which pgx decodes in binary (pgtype's `Record` inside a registered "
         "`_record` array type) — not the `array_to_json(...)` the other clients send (which the server plans as "
         "`mget_json`)" if "go" in cfg["clients"] else "")
      + (". All are" if "go" in cfg["clients"] else ". Both are") + " closed loops with one outstanding request "
      "per connection; every connection is warmed (3 requests) before the sample starts.")
    w("")
    has_rb = any(k[1] == RB for k in data.groups)
    has_miss = any(k[0] == "miss" for k in data.groups)
    rows_n = cfg.get("rows", 4096)
    if has_rb:
        w(f"**redis-benchmark** is Debian's `redis-benchmark` ({v_rb(doc)}) against the RESP port and redis-server "
          "only, in the warm and miss modes. It sends one fixed command per sample: `GET items:1` for one key, "
          "`MGET items:1 … items:N` for N keys (warm), the miss mode's keys below for the miss mode. Its only way to "
          "vary keys, `-r` with `__rand_int__`, substitutes zero-padded 12-digit numbers (`items:000000000042`): no "
          "canonical id for the RESP server (nil without a lookup) and no key of redis-server either, so both would "
          "answer nil to everything. The fixed keys are the ones the other clients send in the warm mode, and the "
          "same command goes to both servers. Each combination runs "
          + " and ".join("without pipelining" if x == 1 else f"with `-P {x}`" for x in cfg.get("pipelines", [1]))
          + ": with `-P` every command counts as a request and its latency is that of its pipeline's round trip. "
          "Before each sample a "
          "short run of the same command warms the connections and estimates the rate; the timed run gets rate × "
          "duration requests (`-n`). Requests/s, p50, p95, p99 are redis-benchmark's own (what `--csv` prints); "
          "**p99.9** is read from its printed latency distribution: the smallest printed latency at or under which "
          "at least 99.9% of the requests completed, an upper bound at the distribution's resolution. Server CPU "
          "is read just before the process starts and just after it exits, so it also counts opening and closing "
          "its connections; client CPU is its rusage; one thread (its default).")
        w("")
    if has_miss:
        w(f"The **miss** mode asks the warm mode's numbers of keys with every other key absent (ids {rows_n + 1}, "
          f"{rows_n + 2}, … follow the table's {rows_n:,} rows): `1, {rows_n + 1}, 2, {rows_n + 2}, …`, the same keys "
          f"in every request; with one key per request, native and node alternate between ids 1 and {rows_n + 1} "
          f"(half of the requests miss), redis-benchmark asks `GET items:{rows_n + 1}` every time (every request "
          "misses; see the *absent keys/req* column). The cache keeps negative entries for keys without a row, so "
          "both halves are answered from it once the connections' warm-up has filled them: *negative hits/req* "
          "counts the absent keys it answered (they are part of *cache hits/req*). Paths: prepared SQL (the "
          "baseline), SQL mget, the FDW, RESP and redis-server; every reply of the timed loop must have exactly "
          "the expected number of rows, nils (RESP) or, for node's mget, NULL elements.")
        w("")
    w("Before any timing, each client compares every path with prepared SQL on the result contract (input order, "
      "duplicates, missing keys, NULL keys, empty and all-NULL input, keys 1..64 forwards and backwards, "
      + ("the miss mode's keys (absent keys must be NULL / nil), " if has_miss else "")
      + "each twice so "
      "that the second pass reads from the cache; for RESP and redis-server the values must be byte for byte "
      "`row_to_json(row)::text`, and MGET without keys must be an error) and the run fails on any difference. "
      + ("Then the writes, on two rows the reads do not use (one with a plain value, one with characters JSON "
         "escapes), each first read through RESP so that it is cached: after a RESP SET, `mget_json`, plain SQL and "
         "a RESP GET by the reading role show exactly the object; after the prepared SQL UPDATE, SQL and RESP GET "
         "show the new row; redis-server SET and GET of the same bytes. "
         if any("write_comparisons" in c for c in doc.get("checks", [])) else "")
      + ("The redis-benchmark client's check sends both servers exactly its commands, pipelined as deep as its "
         "deepest `-P`, twice, and compares every reply with SQL's `row_to_json` (nil for an absent key). "
         if any(c.get("client") == RB for c in doc.get("checks", [])) else "")
      + "Results: " + "; ".join(f"{c['client']}: {c['comparisons']} comparisons"
                                + (f" ({c['write_comparisons']} of them writes)" if "write_comparisons" in c else "")
                                + f", {c['mismatches']} mismatches"
                                for c in doc.get("checks", [])) + ".")
    w("")
    w(f"Each sample runs for {cfg['duration_seconds']:g} s; the matrix (clients {', '.join(cfg['clients'])}; "
      f"connections {', '.join(map(str, cfg['connections']))}; keys per request "
      f"{', '.join(map(str, cfg['batches']))}) is repeated {cfg['repeats']} time(s), the order rotated between "
      "repetitions. Tables show the median over repetitions and, when there are several, min–max in parentheses. "
      "Server CPU is the utime+stime delta over the sample of the postmaster and all its children (backends, RESP "
      "workers, background processes), or of redis-server for the reference; divided by the number of requests it "
      "gives **server CPU µs per request**. Client CPU is the client's own getrusage / process.cpuUsage. Peak "
      "server memory is the largest sum of PSS (proportional set size, so the shared segments count once) sampled "
      "every 250 ms.")
    w("")
    # ------------------------------------------------------------ environment
    write_environment(w, doc)
    # ------------------------------------------------------------ ratios
    conns_all = cfg["connections"]
    c64 = 64 if 64 in conns_all else max(conns_all)
    ratios_start = len(out)  # the section is dropped when the run has no warm samples
    w("## Ratios against the targets")
    w("")
    note64 = "" if c64 == 64 else f" (64 connections were not measured in this run: {c64} connections instead)"
    w(f"Same machine, same client, {c64} connections{note64}, warm reads; ratios of medians. The targets are goals "
      "of the other issues, not assertions of the harness.")
    w("")
    w("| ratio | target | " + " | ".join(f"{c} client" for c in cfg["clients"]) + " |")
    w("| --- | --- | " + " | ".join("---" for _ in cfg["clients"]) + " |")
    rows = []
    def rps(client, p, b):
        return data.median("rps", "warm", client, p, c64, b)
    def cpu(client, p, b):
        return data.median("server_cpu_us_per_req", "warm", client, p, c64, b)
    for b in cfg["batches"]:
        tgt = {1: ">= 1.0", 64: ">= 1.6"}.get(b, "–")
        rows.append((f"mget / prepared SQL requests/s, {b} key(s)", tgt, b,
                     lambda c, b=b: ratio(rps(c, "mget", b), rps(c, "sql", b)), {1: 1.0, 64: 1.6}.get(b), True))
    for b in cfg["batches"]:
        rows.append((f"mget_json / prepared SQL requests/s, {b} key(s)", "–", b,
                     lambda c, b=b: ratio(rps(c, "mget_json", b), rps(c, "sql", b)), None, True))
    for b in cfg["batches"]:
        rows.append((f"mget / prepared SQL server CPU per request, {b} key(s)", "<= 0.6" if b == 64 else "–", b,
                     lambda c, b=b: ratio(cpu(c, "mget", b), cpu(c, "sql", b)), 0.6 if b == 64 else None, False))
    for b in cfg["batches"]:
        rows.append((f"FDW / prepared SQL requests/s, {b} key(s)", ">= 1.2" if b == 64 else "–", b,
                     lambda c, b=b: ratio(rps(c, "fdw", b), rps(c, "sql", b)), 1.2 if b == 64 else None, True))
    rows.append(("RESP / prepared SQL requests/s, 1 key", "–", 1,
                 lambda c: ratio(rps(c, "resp", 1), rps(c, "sql", 1)), None, True))
    rows.append(("RESP / prepared SQL server CPU per request, 1 key", "<= 0.33", 1,
                 lambda c: ratio(cpu(c, "resp", 1), cpu(c, "sql", 1)), 1 / 3, False))
    for b in cfg["batches"]:
        rows.append((f"RESP / redis-server requests/s, {b} key(s)", ">= 0.8", b,
                     lambda c, b=b: ratio(rps(c, "resp", b), rps(c, "redis", b)), 0.8, True))
    for b in cfg["batches"]:
        rows.append((f"RESP / redis-server server CPU per request, {b} key(s)", "–", b,
                     lambda c, b=b: ratio(cpu(c, "resp", b), cpu(c, "redis", b)), None, False))
    misses = []
    for label, tgt, b, fn, goal, higher in rows:
        if b not in cfg["batches"]:
            continue
        cells = []
        any_value = False
        for c in cfg["clients"]:
            r = fn(c)
            if r is None:
                cells.append("–")
                continue
            any_value = True
            mark = ""
            if goal is not None:
                ok = r >= goal if higher else r <= goal
                mark = " ✓" if ok else " ✗"
                if not ok:
                    misses.append(f"{label}: {r:.2f} with the {c} client (target {tgt})")
            cells.append(f"{r:.2f}{mark}")
        if any_value:
            w(f"| {label} | {tgt} | " + " | ".join(cells) + " |")
    w("")
    w(f"Server CPU µs per request at {c64} connections (warm reads, median):")
    w("")
    paths = ["sql", "mget", "mget_json", "fdw", "resp", "redis"]
    w("| client | keys | " + " | ".join(PATH_NAMES[p] for p in paths) + " |")
    w("| --- | --- | " + " | ".join("---" for _ in paths) + " |")
    for c in cfg["clients"]:
        for b in cfg["batches"]:
            cells = [fmt(cpu(c, p, b), 1) for p in paths]
            if any(x != "–" for x in cells):
                w(f"| {c} | {b} | " + " | ".join(cells) + " |")
    w("")
    if not any(k[0] == "warm" for k in data.groups):
        del out[ratios_start:]
    # ------------------------------------------------------------ charts
    if links:
        w("## Charts")
        w("")
        for mode, client, kind, link in links:
            what = "requests/s by connections" if kind == "rps" else "server CPU µs per request"
            w(f"![{mode} reads, {client} client: {what}]({link})")
            w("")
    # ------------------------------------------------------------ workload tables
    # ------------------------------------------------------------ RESP vs redis-server
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
                            lat = lambda q: (f"{fmt(data.median('latency_us.' + q, **ours))} / "
                                             f"{fmt(data.median('latency_us.' + q, **ref))}")
                            r_rps = ratio(data.median("rps", **ours), data.median("rps", **ref))
                            c_ours = data.median("server_cpu_us_per_req", **ours)
                            c_ref = data.median("server_cpu_us_per_req", **ref)
                            r_cpu = ratio(c_ours, c_ref)
                            over = r_cpu is not None and round(r_cpu, 2) > 1.0  # as the cell shows it
                            mark = "" if r_cpu is None else (" ✗" if over else " ✓")
                            if over:
                                cpu_over.append((mode, c, n, b, pl, r_cpu))
                            cmd = "MGET" if c != RB or b != 1 else "GET"
                            w(f"| {c} | {cmd} | {n} | {b} | {pl if pl != 1 else 'none'} | "
                              f"{fmt_range(data.values('rps', **ours))} | {fmt_range(data.values('rps', **ref))} | "
                              f"{fmt(r_rps, 2)} | {lat('p50')} | {lat('p99')} | {lat('p999')} | "
                              f"{fmt_range(data.values('server_cpu_us_per_req', **ours), 1)} | "
                              f"{fmt_range(data.values('server_cpu_us_per_req', **ref), 1)} | {fmt(r_cpu, 2)}{mark} |")
            w("")
    modes_present = [mo for mo in ["warm", "miss", "mixed", "cold", "write", "serializable"]
                     if any(k[0] == mo for k in data.groups)]
    has_neg = any("negative_hits" in (smp.get("cache_stats_delta") or {}) for smp in doc["samples"])
    has_coalesced = any("coalesced_misses" in (smp.get("cache_stats_delta") or {}) for smp in doc["samples"])
    for mode in modes_present:
        w(f"## {MODE_TITLES[mode]}")
        w("")
        if mode == "write":
            w("One random row per request (batch 1). *cache*: whether `public.items` is cached (RESP SET needs it; "
              "redis-server has no such thing). Server CPU is PostgreSQL's (all its processes) for SQL UPDATE and RESP "
              "SET, redis-server's for redis-server SET.")
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
    # ------------------------------------------------------------ key types
    if args.keys:
        with open(args.keys) as f:
            kdoc = json.load(f)
        if kdoc.get("partial", True) or kdoc.get("error") or not kdoc.get("samples"):
            die(f"{args.keys} is no finished bench/run result with samples; refusing to report it")
        out += key_types_section(kdoc, args.keys, True)
    else:
        out += key_types_section(doc, args.file, False)
    # ------------------------------------------------------------ notes
    w("## Where the cache does not help (generated from the numbers above)")
    w("")
    notes = []
    for x in misses:
        notes.append(f"Target missed: {x}.")
    for c in cfg["clients"]:
        for b in cfg["batches"]:
            for p in ["mget", "mget_json", "fdw"]:
                r = ratio(rps(c, p, b), rps(c, "sql", b))
                if r is not None and r < 1.0:
                    notes.append(f"{PATH_NAMES[p]} is slower than prepared SQL at {b} key(s), {c64} connections, "
                                 f"{c} client ({r:.2f}x requests/s).")
    for c in cfg["clients"]:
        bound = []
        for p in paths:
            for b in cfg["batches"]:
                cl = data.median("client_cpu_us_per_req", "warm", c, p, c64, b)
                sv = data.median("server_cpu_us_per_req", "warm", c, p, c64, b)
                if cl is not None and sv is not None and cl >= sv:
                    bound.append(f"{path_label(c, p, b)}/{b}")
        if bound:
            notes.append(f"With the {c} client the client spends at least as much CPU per request as the server on "
                         f"{len(bound)} of the warm combinations at {c64} connections ({', '.join(bound[:8])}"
                         f"{', …' if len(bound) > 8 else ''}): there requests/s measures the client as much as the "
                         "server, and the server CPU column is the fairer comparison.")
    for n in conns_all:
        for c in cfg["clients"]:
            on = data.median("rps", "write", c, "update", n, 1, "cache_enabled")
            off = data.median("rps", "write", c, "update", n, 1, "cache_disabled")
            con = data.median("server_cpu_us_per_req", "write", c, "update", n, 1, "cache_enabled")
            coff = data.median("server_cpu_us_per_req", "write", c, "update", n, 1, "cache_disabled")
            if on and off:
                notes.append(f"Writes, {c} client, {n} connections: with the cache enabled UPDATE runs at "
                             f"{on / off:.2f}x the requests/s of the uncached table, server CPU per UPDATE "
                             f"{fmt(con, 1)} vs {fmt(coff, 1)} µs (the triggers and pre-commit invalidation cost this).")
            rs = data.median("rps", "write", c, "resp_set", n, 1, "cache_enabled")
            crs = data.median("server_cpu_us_per_req", "write", c, "resp_set", n, 1, "cache_enabled")
            rd = data.median("rps", "write", c, "redis_set", n, 1, None)
            crd = data.median("server_cpu_us_per_req", "write", c, "redis_set", n, 1, None)
            if rs and on:
                notes.append(f"Writes, {c} client, {n} connections: RESP SET runs at {rs / on:.2f}x the requests/s "
                             "of SQL UPDATE on the cached table"
                             + (f" and {rs / rd:.2f}x those of redis-server SET" if rd else "")
                             + f"; server CPU per write {fmt(crs, 1)} µs vs {fmt(con, 1)} µs for SQL UPDATE"
                             + (f" and {fmt(crd, 1)} µs for redis-server SET" if rd else "")
                             + " (SET is an INSERT … ON CONFLICT DO UPDATE of the whole row from its JSON, run "
                               "through SPI in a transaction of its own).")
    if cpu_over:
        shown = sorted(cpu_over, key=lambda x: -x[5])
        notes.append(f"RESP costs more server CPU per request than redis-server in {len(cpu_over)} of the side-by-side "
                     "combinations (largest first): " + "; ".join(
                         f"{mo}, {c}, {'GET' if c == RB and b == 1 else 'MGET'} of {b}, {n} conns"
                         f"{', -P ' + str(pl) if pl != 1 else ''}: {r:.2f}x" for mo, c, n, b, pl, r in shown[:10])
                     + (", …" if len(shown) > 10 else "") + ".")
    if has_miss:
        for c in cfg["clients"]:
            for b in cfg["batches"]:
                for pl in data.pipelines():
                    for p in ["mget", "fdw", "resp"]:
                        a = dict(mode="miss", client=c, path=p, conns=c64, batch=b, pipeline=pl)
                        g = data.get(**a)
                        if not g:
                            continue
                        neg = med([s_["cache_stats_delta"].get("negative_hits", 0) / max(s_["requests"], 1)
                                   for s_ in g if s_.get("cache_stats_delta")])
                        absent = data.median("absent_keys_per_request", **a)
                        label = path_label(c, p, b, pl)
                        if has_neg and absent and (neg or 0) < 0.9 * absent:
                            notes.append(f"Miss mode, {c} client, {label}, {b} key(s), {c64} connections: only "
                                         f"{fmt(neg, 2)} of the {fmt(absent, 1)} absent keys per request were "
                                         "answered from negative entries.")
                        cm = data.median("server_cpu_us_per_req", **a)
                        cw = data.median("server_cpu_us_per_req", "warm", c, p, c64, b, pipeline=pl)
                        cs = data.median("server_cpu_us_per_req", "miss", c, "sql", c64, b)
                        if cm is not None and cs is not None and cm >= cs:
                            notes.append(f"Miss mode, {c} client, {label}, {b} key(s), {c64} connections: "
                                         f"{fmt(cm, 1)} µs server CPU per request, not below prepared SQL's "
                                         f"{fmt(cs, 1)} µs.")
                        if cm is not None and cw and cm > 1.25 * cw:
                            notes.append(f"Miss mode, {c} client, {label}, {b} key(s), {c64} connections: "
                                         f"{fmt(cm, 1)} µs server CPU per request against {fmt(cw, 1)} µs for the "
                                         "same number of present keys (warm): absent keys cost more than rows.")
    if has_rb:
        notes.append("redis-benchmark: its server CPU window runs from just before the process starts to just "
                     "after it exits, so it includes opening and closing its connections (a few ms at most "
                     "against a run of seconds); its requests/s counts commands, also when pipelined.")
    if any(k[0] == "cold" for k in data.groups):
        notes.append("Cold fill: the table has only 4,096 rows, so a flushed cache is refilled within the first "
                     "fraction of a second of a sample; the misses/req column shows how cold each sample really was. "
                     "Misses cost an index scan plus the fill, i.e. at least what prepared SQL costs.")
    if any(k[0] == "mixed" for k in data.groups):
        notes.append("Mixed: each UPDATE of a hot row invalidates its entry, and the next read of it misses and "
                     "refills (misses/req column).")
    if cfg["repeats"] == 1:
        notes.append("This run has a single repetition per combination (no min–max): differences of 10–15 % "
                     "between paths are within its noise; use the default REPEATS=3 for conclusions.")
    notes.append("Everything here is one machine with the client on the same cores; a larger machine, or the "
                 "client on another one, changes the requests/s ratios, much less the server CPU per request.")
    for n_ in notes:
        w(f"* {n_}")
    w("")
    if args.soak:
        out += soak_section(args, charts)
    sys.stdout.write("\n".join(out))


def soak_section(args, charts):
    """The soak report of --soak FILE, one heading level down, as the last section."""
    with open(args.soak) as f:
        doc = json.load(f)
    if doc.get("partial", True) or doc.get("error") or doc.get("soak") is None:
        die(f"{args.soak} is no finished bench/run soak result; refusing to report it")
    soak_args = argparse.Namespace(file=args.soak, link_prefix=args.link_prefix)
    lines = [line for line in soak_report(doc, soak_args, charts) if not line.startswith("<!--")]
    return [("#" + line) if line.startswith("#") else line for line in lines]


if __name__ == "__main__":
    main()
