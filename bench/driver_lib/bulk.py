"""bench/driver_lib/bulk.py: the bulk mode (issue 46 item 3): what whole-table writes cost with the
table cached. Two tables of BULK_ROWS rows of 128-byte values, `public.bulk_cached` (enabled, its
first BULK_FILLED keys read into the cache before each write) and `public.bulk_plain` (not cached);
in each of REPEATS rounds, on both tables in turn (the order alternating by round, so that neither
always runs first): an UPDATE of every row, a COPY of BULK_ROWS new rows (from a file on the
server, as CSV) and a DELETE of every row, each a statement of its own in autocommit, timed by psql
(`\\timing`: the statement and its commit). After each, the writing backend's peak memory (VmHWM
and the anonymous part of its resident set, RssAnon, from /proc/self/status read through
pg_read_file in the same session) and, on the cached table, the cache checked: mget_json of the
filled keys and of keys of the new rows against the table (a mismatch fails the run)."""
import os
import re
import subprocess
import tempfile

from driver_lib.env import CONNINFO, ENV, PSQL, REPEATS, log, psql

ROWS = int(ENV.get("BULK_ROWS", "1000000"))
FILLED = int(ENV.get("BULK_FILLED", "4096"))  # keys read into the cache before each write
TABLES = ("bulk_cached", "bulk_plain")
OPERATIONS = ("update", "copy", "delete")
VALUE = "repeat(md5(g::text), 4)"  # 128 bytes


def session(sql):
    """Runs a psql script in one session; returns its output lines."""
    out = subprocess.run([PSQL, "-X", "-qAt", "-v", "ON_ERROR_STOP=1", "-d", CONNINFO],
                         input=sql, check=True, capture_output=True, text=True)
    return out.stdout.splitlines()


def memory_kb(status_text, field):
    m = re.search(rf"^{field}:\s+(\d+) kB", status_text, re.M)
    return int(m.group(1)) if m else None


def timed(table, statement):
    """The statement alone in a fresh session: (milliseconds, peak and anonymous memory in kB)."""
    lines = session(f"\\timing on\n{statement};\n\\timing off\n"
                    "SELECT replace(pg_read_file('/proc/self/status'), E'\\n', '|');\n")
    ms = [float(m.group(1)) for line in lines for m in [re.match(r"Time: ([\d.]+) ms", line)] if m]
    status = lines[-1].replace("|", "\n")
    return ms[-1], memory_kb(status, "VmHWM"), memory_kb(status, "RssAnon")


def check_exact(first_new):
    """The cached table's filled keys and some of the new rows' keys through mget_json, as the
    table has them."""
    bad = psql(f"""WITH k AS (SELECT array_agg(id ORDER BY id) AS ids FROM
                     (SELECT generate_series(1, {FILLED})::bigint AS id
                      UNION ALL SELECT generate_series({first_new}, {first_new + FILLED - 1})) s)
                   SELECT count(*) FROM k
                   CROSS JOIN LATERAL json_array_elements(local_cache.mget_json('public.bulk_cached', k.ids))
                     WITH ORDINALITY AS c(r, n)
                   LEFT JOIN public.bulk_cached t ON t.id = k.ids[c.n]
                   WHERE c.r::text IS DISTINCT FROM coalesce(row_to_json(t)::text, 'null')""")
    return int(bad)


def fill():
    psql(f"SELECT count(*) FROM json_array_elements(local_cache.mget_json('public.bulk_cached', "
         f"ARRAY(SELECT generate_series(1, {FILLED})::bigint)))")


def run_bulk(doc, save):
    for table in TABLES:
        psql(f"DROP TABLE IF EXISTS public.{table}; CREATE TABLE public.{table} (id bigint PRIMARY KEY, value text)")
    psql("SELECT local_cache.enable('public.bulk_cached')")
    directory = tempfile.mkdtemp(prefix="lc_bench_bulk.")
    os.chmod(directory, 0o755)
    csv = os.path.join(directory, "rows.csv")
    with open(csv, "w") as f:  # ids ROWS+1 .. 2*ROWS: new rows beside the loaded ones
        for i in range(ROWS + 1, 2 * ROWS + 1):
            f.write(f"{i},{'v' * 128}\n")
    os.chmod(csv, 0o644)
    bulk = doc["bulk"] = {"rows": ROWS, "filled_keys": FILLED, "samples": [], "mismatches": 0}
    try:
        for r in range(REPEATS):
            for table in (TABLES if r % 2 == 0 else TABLES[::-1]):
                psql(f"TRUNCATE public.{table}; INSERT INTO public.{table} SELECT g, {VALUE} "
                     f"FROM generate_series(1, {ROWS}) g")
                psql(f"VACUUM ANALYZE public.{table}")
                statements = {"update": f"UPDATE public.{table} SET value = upper(value)",
                              "copy": f"COPY public.{table} FROM '{csv}' (FORMAT csv)",
                              "delete": f"DELETE FROM public.{table}"}
                for op in OPERATIONS:
                    if table == "bulk_cached":
                        fill()
                    ms, peak_kb, anon_kb = timed(table, statements[op])
                    mismatches = check_exact(ROWS + 1) if table == "bulk_cached" else None
                    bulk["mismatches"] += mismatches or 0
                    bulk["samples"].append({"repeat": r, "table": table, "operation": op, "ms": ms,
                                            "peak_rss_kb": peak_kb, "anon_rss_kb": anon_kb,
                                            "mismatches": mismatches})
                    log(f"bulk {table} {op}: {ms:.0f} ms, peak {peak_kb} kB, anon {anon_kb} kB"
                        + (f", {mismatches} mismatches" if mismatches is not None else ""))
                    save()
                    if mismatches:
                        raise RuntimeError(f"bulk {op}: the cache differs from the table in {mismatches} keys")
    finally:
        os.unlink(csv)
        os.rmdir(directory)
        for table in TABLES:
            psql(f"DROP TABLE IF EXISTS public.{table}")
