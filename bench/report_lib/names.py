"""bench/report_lib/names.py: what the report calls things: the paths and modes (of the matrix and
of the soak), the statements each path runs, and the labels built from them."""

PATH_NAMES = {
    "sql": "prepared SQL",
    "mget": "SQL mget",
    "mget_json": "mget_json",
    "fdw": "FDW",
    "resp": "RESP MGET",
    "redis": "redis-server MGET",
    "update": "SQL UPDATE",
    "update_pair": "SQL UPDATE of both tables in one window",
    "resp_set": "RESP SET",
    "redis_set": "redis-server SET",
    "update16": "SQL UPDATE of 16 rows",
    "resp_mset": "RESP MSET of 16",
    "redis_mset": "redis-server MSET of 16",
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
               ("redis_set", None), ("update16", "cache_enabled"), ("update16", "cache_disabled"),
               ("resp_mset", "cache_enabled"), ("redis_mset", None)]
# the 16-row write paths (bench/loadgen's and bench/node's: the go client has no samples of them)
MULTI_ROW_WRITE_PATHS = ["update16", "resp_mset", "redis_mset"]
MULTI_ROW_CLIENTS = ["native", "node"]
# the write mode's title when a run has them
MULTI_ROW_WRITE_TITLE = ("Writes (one row by primary key: SQL UPDATE with the table cached and not cached, RESP SET, "
                         "redis-server SET; 16 rows per request: one SQL UPDATE of 16 rows, RESP MSET, redis-server MSET)")
WRITE_SQL = {
    "update": "`UPDATE public.items SET value = $2 WHERE id = $1` (prepared), with the table cached and, "
              "for comparison, not cached (`local_cache.disable`)",
    "update_pair": "the same UPDATE from half the connections, and from the other half on `public.items_plain` "
                   "(`public.items`' rows in a table never cached), in the same sample; each connection names its "
                   "half in `application_name`, whose backends' CPU is that half's",
    "resp_set": "`SET items:<id> {\"id\":<id>,\"value\":\"…\"}` to the extension's RESP server, AUTHed as a role "
                "with INSERT and UPDATE (`{resp_writer}`): the row written through SPI (docs/RESP.md, \"Writes\"), `+OK` "
                "after COMMIT",
    "redis_set": "the same `SET` with the same JSON bytes to redis-server (no persistence; reference)",
    "update16": "16 distinct random rows (ascending ids) in ONE prepared statement, `UPDATE public.items AS t SET "
                "value = v.value FROM unnest($1::bigint[], $2::text[]) AS v(id, value) WHERE t.id = v.id`, with the "
                "table cached and not cached",
    "resp_mset": "`MSET items:<id1> <json1> … items:<id16> <json16>` of 16 distinct random rows (the objects `SET` "
                 "sends) to the extension's RESP server as `{resp_writer}`: one transaction, `+OK` after COMMIT",
    "redis_mset": "the same `MSET` with the same bytes to redis-server (reference)",
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
# the read paths, in the order of every table and chart
READ_PATHS = ["sql", "mget", "mget_json", "fdw", "resp", "redis"]


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


# the soak (bench/run soak) and its stale probes
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
