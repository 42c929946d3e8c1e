/* local_cache 1.1 -> 1.2: the statistics count negative hits (absent keys answered from the cache)
   and coalesced misses (misses answered by another session's fill of the same key). */

\echo Use "ALTER EXTENSION local_cache UPDATE TO '1.2'" to load this file. \quit

DROP VIEW local_cache.stats;
DROP VIEW local_cache.stats_global;
DROP FUNCTION local_cache.table_counters();
DROP FUNCTION local_cache.global_counters();

CREATE FUNCTION local_cache.table_counters(
    OUT dbid oid, OUT relid oid,
    OUT hits bigint, OUT misses bigint, OUT fills bigint, OUT fill_rejections bigint,
    OUT evictions bigint, OUT invalidations bigint, OUT entries bigint, OUT bytes bigint,
    OUT negative_hits bigint, OUT coalesced_misses bigint)
RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'local_cache_table_counters' LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION local_cache.global_counters(
    OUT hits bigint, OUT misses bigint, OUT fills bigint, OUT fill_rejections bigint,
    OUT evictions bigint, OUT invalidations bigint, OUT entries bigint,
    OUT memory_used bigint, OUT memory_budget bigint, OUT shards integer,
    OUT negative_hits bigint, OUT coalesced_misses bigint)
RETURNS record
    AS 'MODULE_PATHNAME', 'local_cache_global_counters' LANGUAGE C STRICT VOLATILE;

-- One row per cached table of the current database. hits counts every key answered from the
-- cache; negative_hits those of them that have no row. misses counts the others;
-- coalesced_misses those of them answered by another session's fill (not read from the table).
CREATE VIEW local_cache.stats AS
SELECT t.relid AS relation,
       coalesce(c.hits, 0) AS hits,
       coalesce(c.misses, 0) AS misses,
       coalesce(c.fills, 0) AS fills,
       coalesce(c.fill_rejections, 0) AS fill_rejections,
       coalesce(c.evictions, 0) AS evictions,
       coalesce(c.invalidations, 0) AS invalidations,
       coalesce(c.entries, 0) AS entries,
       coalesce(c.bytes, 0) AS bytes,
       coalesce(c.negative_hits, 0) AS negative_hits,
       coalesce(c.coalesced_misses, 0) AS coalesced_misses
  FROM local_cache.tables t
  LEFT JOIN local_cache.table_counters() c
    ON c.relid = t.relid::oid
   AND c.dbid = (SELECT oid FROM pg_database WHERE datname = current_database());

-- One row for the whole server: every database, plus the memory budget and its use.
CREATE VIEW local_cache.stats_global AS SELECT * FROM local_cache.global_counters();

GRANT SELECT ON local_cache.stats, local_cache.stats_global TO PUBLIC;
