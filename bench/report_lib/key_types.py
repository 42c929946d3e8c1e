"""bench/report_lib/key_types.py: the "Key types" section: each key type against bigint keys, the
issue #12 target (server CPU per key) and its verdict."""
from report_lib.data import Data, fmt, fmt_range, med, ratio
from report_lib.names import PATH_NAMES, RB, RB_PATHS

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
