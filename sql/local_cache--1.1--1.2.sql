/* local_cache 1.1 -> 1.2: the statistics count negative hits (absent keys answered from the cache)
   and coalesced misses (misses answered by another session's fill of the same key).

   The views are replaced, never dropped, so that they keep their privileges and the views users
   built on them; the counter functions, whose result columns grow, must be dropped, and their
   privileges pass to the new ones (docs/SQL.md, "Upgrades"). */

\echo Use "ALTER EXTENSION local_cache UPDATE TO '1.2'" to load this file. \quit

-- Gives new_fn the privileges old_fn has (a DBA's GRANTs and REVOKEs), as GRANTs of the owner
-- (so that pg_shdepend knows the roles), then puts back old_fn's initial privileges, so that the
-- DBA's are not taken for the extension's and pg_dump keeps dumping them. Dropped at the end.
CREATE FUNCTION local_cache._copy_acl(old_fn regprocedure, new_fn regprocedure) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
    g record;
BEGIN
    IF (SELECT proacl FROM pg_proc WHERE oid = old_fn) IS NULL THEN
        RETURN;
    END IF;
    -- The first GRANT starts from the default (PUBLIC, then the owner): the entries keep their order.
    IF NOT has_function_privilege('public', old_fn, 'EXECUTE') THEN
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', new_fn);
    END IF;
    FOR g IN SELECT a.grantee, a.is_grantable FROM pg_proc p, aclexplode(p.proacl) a WHERE p.oid = old_fn LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s%s', new_fn,
                       CASE g.grantee WHEN 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END,
                       CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
    DELETE FROM pg_init_privs WHERE objoid = new_fn AND classoid = 'pg_proc'::regclass;
    INSERT INTO pg_init_privs
    SELECT new_fn, classoid, objsubid, privtype, initprivs
      FROM pg_init_privs WHERE objoid = old_fn AND classoid = 'pg_proc'::regclass;
END $$;

-- The views stop reading the counter functions for a moment (same columns, no counters).
CREATE OR REPLACE VIEW local_cache.stats AS
SELECT relid AS relation, 0::bigint AS hits, 0::bigint AS misses, 0::bigint AS fills,
       0::bigint AS fill_rejections, 0::bigint AS evictions, 0::bigint AS invalidations,
       0::bigint AS entries, 0::bigint AS bytes
  FROM local_cache.tables;
CREATE OR REPLACE VIEW local_cache.stats_global AS
SELECT NULL::bigint AS hits, NULL::bigint AS misses, NULL::bigint AS fills,
       NULL::bigint AS fill_rejections, NULL::bigint AS evictions, NULL::bigint AS invalidations,
       NULL::bigint AS entries, NULL::bigint AS memory_used, NULL::bigint AS memory_budget,
       NULL::integer AS shards;

ALTER FUNCTION local_cache.table_counters() RENAME TO _table_counters_1_1;
ALTER FUNCTION local_cache.global_counters() RENAME TO _global_counters_1_1;

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

SELECT local_cache._copy_acl('local_cache._table_counters_1_1()', 'local_cache.table_counters()'),
       local_cache._copy_acl('local_cache._global_counters_1_1()', 'local_cache.global_counters()');
DROP FUNCTION local_cache._table_counters_1_1();
DROP FUNCTION local_cache._global_counters_1_1();
DROP FUNCTION local_cache._copy_acl(regprocedure, regprocedure);

-- One row per cached table of the current database. hits counts every key answered from the
-- cache; negative_hits those of them that have no row. misses counts the others;
-- coalesced_misses those of them answered by another session's fill (not read from the table).
-- New columns go last: CREATE OR REPLACE VIEW may only add columns at the end.
CREATE OR REPLACE VIEW local_cache.stats AS
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
CREATE OR REPLACE VIEW local_cache.stats_global AS SELECT * FROM local_cache.global_counters();
