/* local_cache 1.0: registry, enable/disable, read functions and statistics. */

\echo Use "CREATE EXTENSION local_cache" to load this file. \quit

-- The schema belongs to the extension (DROP EXTENSION removes it, pg_dump leaves it to CREATE
-- EXTENSION), so the script creates it: the control file names pg_catalog as the extension's own
-- schema, because a schema that contains its extension cannot be one of its members.
CREATE SCHEMA local_cache;

-- Everyone may call the read functions; each checks SELECT on the table it reads.
GRANT USAGE ON SCHEMA local_cache TO PUBLIC;

-- The registry of cached tables. regclass so that pg_dump/restore keeps it by name;
-- dumped with the database (extension configuration table) and so replicated too.
CREATE TABLE local_cache.tables (
    relid regclass PRIMARY KEY,
    resp_prefix text NOT NULL UNIQUE
        CHECK (resp_prefix <> '' AND resp_prefix !~ '[:[:space:]]'),
    enabled_at timestamptz NOT NULL DEFAULT now()
);
SELECT pg_catalog.pg_extension_config_dump('local_cache.tables', '');
GRANT SELECT ON local_cache.tables TO PUBLIC;

-- The triggers on every cached table: mark the table written at the start of a writing
-- statement, collect the changed keys, which are invalidated at pre-commit, and catch
-- TRUNCATE (see docs/CONSISTENCY.md).
CREATE FUNCTION local_cache.capture_changes() RETURNS trigger
    AS 'MODULE_PATHNAME', 'local_cache_capture_changes' LANGUAGE C;

CREATE FUNCTION local_cache._flush_oid(relid oid) RETURNS bigint
    AS 'MODULE_PATHNAME', 'local_cache_flush_oid' LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION local_cache._flush_oid(oid) FROM PUBLIC;

-- Raises a clear error unless `rel` can be cached: an ordinary table, a single-column
-- int2/int4/int8 primary key, no row-level security.
CREATE FUNCTION local_cache._check_cacheable(rel regclass) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS $$
DECLARE
    cls pg_class;
    pk pg_index;
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
    IF cls.relrowsecurity THEN
        RAISE EXCEPTION 'table "%" has row-level security enabled', rel
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Cached reads cannot apply row security policies.';
    END IF;
    SELECT * INTO pk FROM pg_index WHERE indrelid = rel AND indisprimary;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table "%" has no primary key', rel
            USING ERRCODE = 'invalid_table_definition',
                  HINT = 'local_cache needs a single-column bigint, integer or smallint primary key.';
    END IF;
    IF pk.indnkeyatts <> 1 OR pk.indkey[0] = 0 THEN
        RAISE EXCEPTION 'primary key of table "%" is not a single column', rel
            USING ERRCODE = 'invalid_table_definition',
                  HINT = 'local_cache needs a single-column bigint, integer or smallint primary key.';
    END IF;
    IF (SELECT atttypid FROM pg_attribute WHERE attrelid = rel AND attnum = pk.indkey[0])
           NOT IN ('int8'::regtype, 'int4'::regtype, 'int2'::regtype) THEN
        RAISE EXCEPTION 'primary key of table "%" is not of type bigint, integer or smallint', rel
            USING ERRCODE = 'datatype_mismatch';
    END IF;
END $$;

-- Registry writes run as the extension owner, but only for a caller who has just created
-- (or dropped) the triggers, which needs ownership of the table.
CREATE FUNCTION local_cache._register(rel regclass, resp_prefix text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    IF (SELECT count(*) FROM pg_trigger
         WHERE tgrelid = rel AND tgenabled = 'A'
           AND tgfoid = 'local_cache.capture_changes()'::regprocedure) <> 3 THEN
        RAISE EXCEPTION 'table "%" does not have the local_cache triggers', rel
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Call local_cache.enable().';
    END IF;
    BEGIN
        INSERT INTO local_cache.tables (relid, resp_prefix) VALUES (rel, resp_prefix);
    EXCEPTION WHEN unique_violation THEN
        RAISE EXCEPTION 'RESP prefix "%" is already used by table %', resp_prefix,
            (SELECT relid FROM local_cache.tables t WHERE t.resp_prefix = _register.resp_prefix)
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Pass another prefix: local_cache.enable(table, resp_prefix => ''name'').';
    END;
    -- Entries left from an earlier enablement were not kept up to date: drop them.
    PERFORM local_cache._flush_oid(rel);
END $$;

CREATE FUNCTION local_cache._unregister(rel regclass) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    IF EXISTS (SELECT FROM pg_trigger WHERE tgrelid = rel
                 AND tgfoid = 'local_cache.capture_changes()'::regprocedure) THEN
        RAISE EXCEPTION 'table "%" still has the local_cache triggers', rel
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Call local_cache.disable().';
    END IF;
    DELETE FROM local_cache.tables WHERE relid = rel;
    PERFORM local_cache._flush_oid(rel);
END $$;

CREATE FUNCTION local_cache.enable(rel regclass, resp_prefix text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    PERFORM local_cache._check_cacheable(rel);
    IF EXISTS (SELECT FROM local_cache.tables WHERE relid = rel) THEN
        RAISE EXCEPTION 'table "%" is already enabled in local_cache', rel
            USING ERRCODE = 'duplicate_object';
    END IF;
    -- Creating triggers and ENABLE ALWAYS need ownership of the table: PostgreSQL checks it.
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
    PERFORM local_cache._register(rel, coalesce(resp_prefix,
        (SELECT relname FROM pg_class WHERE oid = rel)::text));
END $$;

CREATE FUNCTION local_cache.disable(rel regclass) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM local_cache.tables WHERE relid = rel) THEN
        RAISE EXCEPTION 'table "%" is not enabled in local_cache', rel
            USING ERRCODE = 'undefined_object';
    END IF;
    EXECUTE format('DROP TRIGGER IF EXISTS local_cache_mark_written ON %s', rel);
    EXECUTE format('DROP TRIGGER IF EXISTS local_cache_invalidate ON %s', rel);
    EXECUTE format('DROP TRIGGER IF EXISTS local_cache_invalidate_truncate ON %s', rel);
    PERFORM local_cache._unregister(rel);
END $$;

-- A dropped table leaves the registry with it.
CREATE FUNCTION local_cache._forget_dropped() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
DECLARE
    dropped oid;
BEGIN
    FOR dropped IN
        DELETE FROM local_cache.tables t USING pg_event_trigger_dropped_objects() d
         WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0 AND t.relid::oid = d.objid
        RETURNING d.objid
    LOOP
        PERFORM local_cache._flush_oid(dropped);
    END LOOP;
END $$;
CREATE EVENT TRIGGER local_cache_forget_dropped ON sql_drop
    EXECUTE FUNCTION local_cache._forget_dropped();

-- ALTER TABLE of a cached table flushes it when the transaction commits (and the transaction
-- reads the table itself until then): it may change what rows look like, or switch the
-- capture triggers off and on around writes they did not see.
CREATE FUNCTION local_cache._flush_at_commit(relid oid) RETURNS void
    AS 'MODULE_PATHNAME', 'local_cache_flush_at_commit' LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION local_cache._flush_at_commit(oid) FROM PUBLIC;

CREATE FUNCTION local_cache._table_altered() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    PERFORM local_cache._flush_at_commit(c.objid)
       FROM pg_event_trigger_ddl_commands() c
       JOIN local_cache.tables t ON t.relid::oid = c.objid
      WHERE c.classid = 'pg_class'::regclass;
END $$;
CREATE EVENT TRIGGER local_cache_table_altered ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION local_cache._table_altered();

-- Like the table triggers, these must fire under session_replication_role = replica too.
ALTER EVENT TRIGGER local_cache_forget_dropped ENABLE ALWAYS;
ALTER EVENT TRIGGER local_cache_table_altered ENABLE ALWAYS;

-- Reads. Rows come back in input order, duplicates kept, NULL for missing or NULL keys.
CREATE FUNCTION local_cache.mget(rel regclass, keys bigint[]) RETURNS record[]
    AS 'MODULE_PATHNAME', 'local_cache_mget'
    LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;

CREATE FUNCTION local_cache.mget_json(rel regclass, keys bigint[]) RETURNS json
    AS 'MODULE_PATHNAME', 'local_cache_mget_json'
    LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;

-- Maintenance.
CREATE FUNCTION local_cache.flush(rel regclass) RETURNS bigint
    AS 'MODULE_PATHNAME', 'local_cache_flush_table' LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION local_cache.flush() RETURNS bigint
    AS 'MODULE_PATHNAME', 'local_cache_flush_all' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION local_cache.flush() FROM PUBLIC;

CREATE FUNCTION local_cache.reset_stats() RETURNS void
    AS 'MODULE_PATHNAME', 'local_cache_reset_stats' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION local_cache.reset_stats() FROM PUBLIC;

-- Statistics.
CREATE FUNCTION local_cache.table_counters(
    OUT dbid oid, OUT relid oid,
    OUT hits bigint, OUT misses bigint, OUT fills bigint, OUT fill_rejections bigint,
    OUT evictions bigint, OUT invalidations bigint, OUT entries bigint, OUT bytes bigint)
RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'local_cache_table_counters' LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION local_cache.global_counters(
    OUT hits bigint, OUT misses bigint, OUT fills bigint, OUT fill_rejections bigint,
    OUT evictions bigint, OUT invalidations bigint, OUT entries bigint,
    OUT memory_used bigint, OUT memory_budget bigint, OUT shards integer)
RETURNS record
    AS 'MODULE_PATHNAME', 'local_cache_global_counters' LANGUAGE C STRICT VOLATILE;

-- One row per cached table of the current database.
CREATE VIEW local_cache.stats AS
SELECT t.relid AS relation,
       coalesce(c.hits, 0) AS hits,
       coalesce(c.misses, 0) AS misses,
       coalesce(c.fills, 0) AS fills,
       coalesce(c.fill_rejections, 0) AS fill_rejections,
       coalesce(c.evictions, 0) AS evictions,
       coalesce(c.invalidations, 0) AS invalidations,
       coalesce(c.entries, 0) AS entries,
       coalesce(c.bytes, 0) AS bytes
  FROM local_cache.tables t
  LEFT JOIN local_cache.table_counters() c
    ON c.relid = t.relid::oid
   AND c.dbid = (SELECT oid FROM pg_database WHERE datname = current_database());

-- One row for the whole server: every database, plus the memory budget and its use.
CREATE VIEW local_cache.stats_global AS SELECT * FROM local_cache.global_counters();

GRANT SELECT ON local_cache.stats, local_cache.stats_global TO PUBLIC;

-- The foreign data wrapper: typed, SQL-set-semantics access to cached rows.
--   IMPORT FOREIGN SCHEMA public LIMIT TO (items) FROM SERVER local_cache INTO cache;
--   CREATE FOREIGN TABLE cache.items (id bigint, value text) SERVER local_cache OPTIONS (table 'public.items');
CREATE FUNCTION local_cache.fdw_handler() RETURNS fdw_handler
    AS 'MODULE_PATHNAME', 'local_cache_fdw_handler' LANGUAGE C STRICT;
CREATE FUNCTION local_cache.fdw_validator(text[], oid) RETURNS void
    AS 'MODULE_PATHNAME', 'local_cache_fdw_validator' LANGUAGE C STRICT;
CREATE FOREIGN DATA WRAPPER local_cache_fdw
    HANDLER local_cache.fdw_handler VALIDATOR local_cache.fdw_validator;
CREATE SERVER local_cache FOREIGN DATA WRAPPER local_cache_fdw;
-- A foreign table gives no access by itself: reads check SELECT on the source table.
GRANT USAGE ON FOREIGN SERVER local_cache TO PUBLIC;
