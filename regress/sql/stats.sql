--
-- stats: hits, misses, fills, fill rejections, entries, flush, reset_stats, the global
-- view, local_cache.enabled and local_cache.max_row_size. Counters are printed exactly
-- only right after reset_stats() and flush(), when this file makes every call.
--
\set SHOW_CONTEXT never

CREATE TABLE st (id bigint PRIMARY KEY, v text NOT NULL);
INSERT INTO st SELECT i, 'v' || i FROM generate_series(1, 10) i;
SELECT local_cache.enable('st');

SELECT local_cache.flush('st');
SELECT local_cache.reset_stats();
SELECT hits, misses, fills, fill_rejections, evictions, invalidations, entries, bytes
  FROM local_cache.stats WHERE relation = 'st'::regclass;

-- First read: misses and fills; second read: hits.
SELECT local_cache.mget_json('st', '{1,2,3}');
SELECT hits, misses, fills, fill_rejections, entries, bytes > 0 AS has_bytes
  FROM local_cache.stats WHERE relation = 'st'::regclass;
SELECT array_to_json(local_cache.mget('st', '{1,2,3}')) AS rows;
SELECT hits, misses, fills, fill_rejections, entries
  FROM local_cache.stats WHERE relation = 'st'::regclass;
SELECT lc_check('st', '{1,2,3}');
SELECT hits >= 3 AS hit_again, entries
  FROM local_cache.stats WHERE relation = 'st'::regclass;
-- Duplicates in one call.
SELECT local_cache.reset_stats();
SELECT local_cache.mget_json('st', '{1,1,1}');
SELECT hits, misses, fills FROM local_cache.stats WHERE relation = 'st'::regclass;

-- An update invalidates the entry.
SELECT local_cache.reset_stats();
UPDATE st SET v = 'changed' WHERE id = 2;
SELECT invalidations > 0 AS invalidated, entries
  FROM local_cache.stats WHERE relation = 'st'::regclass;
SELECT local_cache.mget_json('st', '{1,2,3}');
SELECT hits, misses, entries FROM local_cache.stats WHERE relation = 'st'::regclass;

-- reset_stats() zeroes the counters (entries and bytes describe the cache content).
SELECT local_cache.reset_stats();
SELECT hits, misses, fills, fill_rejections, evictions, invalidations, entries, bytes > 0 AS has_bytes
  FROM local_cache.stats WHERE relation = 'st'::regclass;
-- The global counters also count other databases' and sessions' reads (make installcheck runs on
-- a server that may be busy): they cover at least this table's.
SELECT g.hits >= s.hits AND g.misses >= s.misses AND g.fills >= s.fills AS global_covers_table
  FROM local_cache.stats_global g, local_cache.stats s WHERE s.relation = 'st'::regclass;

-- flush(table) empties that table's entries and says how many there were.
SELECT local_cache.flush('st');
SELECT entries, bytes FROM local_cache.stats WHERE relation = 'st'::regclass;
SELECT local_cache.flush('st');
SELECT local_cache.mget_json('st', '{1,2,3}');
SELECT misses, entries FROM local_cache.stats WHERE relation = 'st'::regclass;
-- flush(table) of a table that is not enabled.
CREATE TABLE st_plain (id bigint PRIMARY KEY);
SELECT local_cache.flush('st_plain');
DROP TABLE st_plain;
-- flush() empties everything.
SELECT local_cache.mget_json('items', '{1,2}') IS NOT NULL AS warmed;
SELECT local_cache.flush() >= 5 AS flushed;
SELECT sum(entries) AS entries, sum(bytes) AS bytes FROM local_cache.stats;
SELECT local_cache.flush();

-- The global view.
SELECT memory_budget > 0 AS has_budget, memory_used >= 0 AS has_memory_used, shards > 0 AS has_shards
  FROM local_cache.stats_global;
SELECT local_cache.mget_json('st', '{1,2,3,4,5,6,7,8,9,10}') IS NOT NULL AS warmed;
SELECT memory_used > 0 AS uses_memory, memory_used <= memory_budget AS within_budget,
       entries >= 10 AS entries
  FROM local_cache.stats_global;

--
-- local_cache.enabled = off: mget reads the table, no new hits, the same rows.
--
SHOW local_cache.enabled;
SELECT lc_check('st', '{1,2,3}');
SELECT local_cache.reset_stats();
SET local_cache.enabled = off;
SELECT local_cache.mget_json('st', '{1,2,3}');
SELECT array_to_json(local_cache.mget('st', '{3,2,1,11}')) AS rows;
SELECT lc_check('st', '{1,2,3,11}');
SELECT hits FROM local_cache.stats WHERE relation = 'st'::regclass;
UPDATE st SET v = 'while off' WHERE id = 3;
SELECT lc_check('st', '{1,2,3,11}');
SELECT hits FROM local_cache.stats WHERE relation = 'st'::regclass;
RESET local_cache.enabled;
SELECT local_cache.mget_json('st', '{1,2,3}');
SELECT lc_check('st', '{1,2,3}');
SELECT hits > 0 AS hits_again FROM local_cache.stats WHERE relation = 'st'::regclass;

--
-- Rows larger than local_cache.max_row_size: returned correctly, not cached.
--
CREATE TABLE st_wide (id bigint PRIMARY KEY, payload text NOT NULL);
INSERT INTO st_wide VALUES
    (1, 'small'),
    (2, (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 100) i)),
    (3, (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 1000) i));
SELECT local_cache.enable('st_wide');
SHOW local_cache.max_row_size;
SET local_cache.max_row_size = '1kB';
SELECT local_cache.flush('st_wide');
SELECT local_cache.reset_stats();
SELECT lc_check('st_wide', '{1,2,3}');
SELECT fill_rejections, entries FROM local_cache.stats WHERE relation = 'st_wide'::regclass;
SELECT lc_check('st_wide', '{1,2,3}');
SELECT fill_rejections >= 2 AS rejected_again, entries FROM local_cache.stats WHERE relation = 'st_wide'::regclass;
SELECT r->>'id' AS id, length(r->>'payload') AS payload_length
  FROM json_array_elements(local_cache.mget_json('st_wide', '{1,2,3}')) r;
SELECT r.payload = (SELECT payload FROM st_wide WHERE id = 3) AS same_payload
  FROM unnest(local_cache.mget('st_wide', '{3}')) AS r(id bigint, payload text);
SELECT fill_rejections, entries FROM local_cache.stats WHERE relation = 'st_wide'::regclass;
-- The default limit (8kB) caches row 2 (3,200 bytes, compressed in the table: the cache
-- keeps it flattened) but still not row 3 (32,000 bytes).
RESET local_cache.max_row_size;
SELECT local_cache.reset_stats();
SELECT lc_check('st_wide', '{1,2,3}');
SELECT lc_check('st_wide', '{1,2,3}');
SELECT fill_rejections, entries, hits FROM local_cache.stats WHERE relation = 'st_wide'::regclass;
UPDATE st_wide SET payload = payload || 'x' WHERE id = 3;
SELECT lc_check('st_wide', '{1,2,3}');
SELECT r->>'id' AS id, length(r->>'payload') AS payload_length
  FROM json_array_elements(local_cache.mget_json('st_wide', '{1,2,3}')) r;

--
-- More rows than the memory budget: entries are evicted, results stay right. Whatever the
-- server's local_cache.memory, 1500 rows of 1/1024 of it each (well under an entry's limit of
-- 1/8 of a shard) are half as much again as the budget; repeat() keeps the table small (TOAST
-- compresses it), the cached JSON is full size.
--
SET local_cache.max_row_size = '64MB';
SELECT memory_budget / 1024 / 32 AS evict_md5s FROM local_cache.stats_global \gset
CREATE TABLE st_evict (id bigint PRIMARY KEY, payload text NOT NULL);
INSERT INTO st_evict SELECT i, repeat(md5(i::text), :evict_md5s) FROM generate_series(1, 1500) i;
SELECT local_cache.enable('st_evict');
SELECT local_cache.reset_stats();
-- 100 keys a call, so that no value comes near 1GB with a large budget.
CREATE TEMP TABLE evict_keys AS
SELECT array_agg(i::bigint ORDER BY i) AS k FROM generate_series(1, 1500) i GROUP BY i / 100;
SELECT bool_and(md5(array_to_json(m)::text) = sql AND md5(j::text) = sql) AS same
  FROM (SELECT local_cache.mget('st_evict', k) AS m, local_cache.mget_json('st_evict', k) AS j,
               md5(sql_mget('st_evict', k)::text) AS sql
          FROM evict_keys OFFSET 0) s;
SELECT evictions > 0 AS evicted, memory_used <= memory_budget AS within_budget
  FROM local_cache.stats_global;
SELECT lc_check('st_evict', '{1,2,1499,1500}');
UPDATE st_evict SET payload = 'changed' WHERE id IN (1, 1500);
SELECT lc_check('st_evict', '{1,2,1499,1500}');
RESET local_cache.max_row_size;

-- A session never waits for its own fill: duplicates of a missed key are one read and no
-- coalesced miss, with any local_cache.fill_wait (several sessions: regress/t/006).
SHOW local_cache.fill_wait;
SELECT local_cache.flush('st') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT local_cache.mget_json('st', '{4,4,11,4,11}');
SELECT misses, fills, coalesced_misses, negative_hits FROM local_cache.stats WHERE relation = 'st'::regclass;
SET local_cache.fill_wait = 0;
SELECT local_cache.flush('st') >= 0 AS flushed;
SELECT local_cache.mget_json('st', '{4,4,11,4,11}');
SELECT misses, fills, coalesced_misses FROM local_cache.stats WHERE relation = 'st'::regclass;
RESET local_cache.fill_wait;
SET local_cache.fill_wait = -1;
SET local_cache.fill_wait = '61s';

DROP TABLE st, st_wide, st_evict;
-- The remaining fixtures of setup.sql.
DROP VIEW items_view;
DROP TABLE items, small, medium;
SELECT count(*) AS registered FROM local_cache.tables;
DROP FUNCTION lc_check(regclass, bigint[]), sql_mget(regclass, bigint[]), try(text);
DROP FUNCTION lc_kcheck(regclass, anyarray), sql_kmget(regclass, anyarray), lc_kstats(regclass);
DROP EXTENSION local_cache;
