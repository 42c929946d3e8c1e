/* local_cache 1.0 -> 1.1: enable() refuses what it cannot keep exact, with clear errors. */

\echo Use "ALTER EXTENSION local_cache UPDATE TO '1.1'" to load this file. \quit

-- Raises a clean ERROR (with a hint naming shared_preload_libraries) unless the server
-- preloads the library: without the shared segment no write could be invalidated.
CREATE FUNCTION local_cache._check_preloaded() RETURNS void
    AS 'MODULE_PATHNAME', 'local_cache_check_preloaded' LANGUAGE C STRICT VOLATILE;

-- Raises a clear error unless the table's primary key is one the cache can key rows by (the
-- library decides: one bigint, integer or smallint column).
CREATE FUNCTION local_cache._check_primary_key(rel regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'local_cache_check_primary_key' LANGUAGE C STRICT STABLE;

-- Raises a clear error unless `rel` can be cached by the caller: the caller owns it; an
-- ordinary, permanent or unlogged table outside any partitioned table or inheritance tree
-- (writes through a parent fire no trigger of the child); a primary key the cache can use;
-- no row-level security.
CREATE OR REPLACE FUNCTION local_cache._check_cacheable(rel regclass) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS $$
DECLARE
    cls pg_class;
BEGIN
    SELECT * INTO cls FROM pg_class WHERE oid = rel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', rel::oid
            USING ERRCODE = 'undefined_table';
    END IF;
    IF cls.relkind <> 'r' THEN
        RAISE EXCEPTION '"%" is not an ordinary table', rel
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'local_cache caches rows of ordinary tables only.';
    END IF;
    IF NOT pg_has_role(cls.relowner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', cls.relname
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF cls.relpersistence = 't' THEN
        RAISE EXCEPTION 'temporary table "%" cannot be cached', rel
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Cached rows are shared by every session; a temporary table belongs to one.';
    END IF;
    IF cls.relispartition THEN
        RAISE EXCEPTION 'table "%" is a partition', rel
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'local_cache caches tables outside partitioned tables and inheritance trees: writes through the parent would not be seen.';
    END IF;
    IF EXISTS (SELECT FROM pg_inherits WHERE inhrelid = rel OR inhparent = rel) THEN
        RAISE EXCEPTION 'table "%" is part of an inheritance tree', rel
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'local_cache caches tables outside partitioned tables and inheritance trees: writes through the parent would not be seen.';
    END IF;
    IF cls.relrowsecurity THEN
        RAISE EXCEPTION 'table "%" has row-level security enabled', rel
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Cached reads cannot apply row security policies.';
    END IF;
    PERFORM local_cache._check_primary_key(rel);
END $$;

-- "Not enabled" is object_not_in_prerequisite_state (55000) everywhere: here as on reads.
CREATE OR REPLACE FUNCTION local_cache._check_enabled(rel regclass) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM local_cache.tables WHERE relid = rel) THEN
        RAISE EXCEPTION 'table "%" is not enabled in local_cache', rel
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
END $$;

CREATE OR REPLACE FUNCTION local_cache.enable(rel regclass, resp_prefix text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
    prefix text := coalesce(resp_prefix, (SELECT relname FROM pg_class WHERE oid = rel)::text);
BEGIN
    PERFORM local_cache._check_preloaded();
    PERFORM local_cache._check_cacheable(rel);
    IF prefix = '' OR prefix ~ '[:[:space:]]' THEN
        RAISE EXCEPTION 'invalid RESP prefix "%"', prefix
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'RESP keys are <prefix>:<id>: a prefix is not empty and has no ":" and no white space.',
                  HINT = 'Pass another prefix: local_cache.enable(table, resp_prefix => ''name'').';
    END IF;
    IF EXISTS (SELECT FROM local_cache.tables WHERE relid = rel) THEN
        RAISE EXCEPTION 'table "%" is already enabled in local_cache', rel
            USING ERRCODE = 'duplicate_object';
    END IF;
    EXECUTE format('CREATE TRIGGER local_cache_mark_written BEFORE INSERT OR UPDATE OR DELETE ON %s '
                   'FOR EACH STATEMENT EXECUTE FUNCTION local_cache.capture_changes()', rel);
    EXECUTE format('CREATE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OR DELETE ON %s '
                   'FOR EACH ROW EXECUTE FUNCTION local_cache.capture_changes()', rel);
    EXECUTE format('CREATE TRIGGER local_cache_invalidate_truncate AFTER TRUNCATE ON %s '
                   'FOR EACH STATEMENT EXECUTE FUNCTION local_cache.capture_changes()', rel);
    -- ALWAYS: the triggers must also fire under session_replication_role = replica.
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER local_cache_mark_written', rel);
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER local_cache_invalidate', rel);
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER local_cache_invalidate_truncate', rel);
    PERFORM local_cache._register(rel, prefix);
END $$;

CREATE OR REPLACE FUNCTION local_cache.disable(rel regclass) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    PERFORM local_cache._check_enabled(rel);
    IF NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = rel), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', (SELECT relname FROM pg_class WHERE oid = rel)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    EXECUTE format('DROP TRIGGER IF EXISTS local_cache_mark_written ON %s', rel);
    EXECUTE format('DROP TRIGGER IF EXISTS local_cache_invalidate ON %s', rel);
    EXECUTE format('DROP TRIGGER IF EXISTS local_cache_invalidate_truncate ON %s', rel);
    PERFORM local_cache._unregister(rel);
END $$;

-- Registry rows 1.0 may have left: tables dropped without the sql_drop event trigger firing
-- (temporary tables at session end), and temporary tables, which 1.1 refuses. Their rows no
-- longer name a table anybody may read through the cache.
DELETE FROM local_cache.tables t
 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid = t.relid AND c.relpersistence <> 't');
