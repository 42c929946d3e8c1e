/* local_cache 1.4 -> 1.5: only a table's owner moves its RESP prefix, and nothing a caller
   creates changes what the extension's SECURITY DEFINER functions do. */

\echo Use "ALTER EXTENSION local_cache UPDATE TO '1.5'" to load this file. \quit

/* A SECURITY DEFINER function is not told who called it, so the owner check cannot be made
   inside one: _register and _unregister become C functions that run as the caller, check that
   it owns the table, then call the registry writes below, which run as the extension's owner
   and which nobody else may call. */
ALTER FUNCTION local_cache._register(regclass, text) RENAME TO _register_as_owner;
ALTER FUNCTION local_cache._unregister(regclass) RENAME TO _unregister_as_owner;
REVOKE ALL ON FUNCTION local_cache._register_as_owner(regclass, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION local_cache._unregister_as_owner(regclass) FROM PUBLIC;

/* Every SECURITY DEFINER function: search_path = pg_catalog, pg_temp (PostgreSQL looks for
   relations and types in the caller's temporary schema first unless pg_temp is named, so a
   temporary table "pg_trigger" answered the trigger check) and every relation named with its
   schema. tools/check_tree.py fails on a SECURITY DEFINER function without that setting. */
CREATE OR REPLACE FUNCTION local_cache._register_as_owner(rel regclass, resp_prefix text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF (SELECT count(*) FROM pg_catalog.pg_trigger
         WHERE tgrelid = rel AND tgenabled = 'A'
           AND tgfoid = 'local_cache.capture_changes()'::pg_catalog.regprocedure) <> 3 THEN
        RAISE EXCEPTION 'table "%" does not have the local_cache triggers', rel
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Call local_cache.enable().';
    END IF;
    BEGIN
        INSERT INTO local_cache.tables (relid, resp_prefix) VALUES (rel, resp_prefix);
    EXCEPTION WHEN unique_violation THEN
        RAISE EXCEPTION 'RESP prefix "%" is already used by table %', resp_prefix,
            (SELECT relid FROM local_cache.tables t WHERE t.resp_prefix = _register_as_owner.resp_prefix)
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Pass another prefix: local_cache.enable(table, resp_prefix => ''name'').';
    END;
    -- Entries left from an earlier enablement were not kept up to date: drop them.
    PERFORM local_cache._flush_oid(rel);
END $$;

CREATE OR REPLACE FUNCTION local_cache._unregister_as_owner(rel regclass) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_trigger WHERE tgrelid = rel
                 AND tgfoid = 'local_cache.capture_changes()'::pg_catalog.regprocedure) THEN
        RAISE EXCEPTION 'table "%" still has the local_cache triggers', rel
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Call local_cache.disable().';
    END IF;
    DELETE FROM local_cache.tables WHERE relid = rel;
    PERFORM local_cache._flush_oid(rel);
END $$;

CREATE FUNCTION local_cache._register(rel regclass, resp_prefix text) RETURNS void
    AS 'MODULE_PATHNAME', 'local_cache_register' LANGUAGE C STRICT VOLATILE;
CREATE FUNCTION local_cache._unregister(rel regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'local_cache_unregister' LANGUAGE C STRICT VOLATILE;

CREATE OR REPLACE FUNCTION local_cache._forget_dropped() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    dropped oid;
BEGIN
    FOR dropped IN
        DELETE FROM local_cache.tables t USING pg_catalog.pg_event_trigger_dropped_objects() d
         WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objsubid = 0
           AND t.relid::oid = d.objid
        RETURNING d.objid
    LOOP
        PERFORM local_cache._flush_oid(dropped);
    END LOOP;
END $$;


/* A committed change to a type a cached table's rows are made of (an enum value renamed, a
   composite type's attribute renamed or retyped, a domain altered, another table's row type
   altered) changes how its rows render without touching the table: it is flushed at commit as
   for ALTER TABLE of the table itself, so CLIENT TRACKING pushes the flush. The types a table's
   rows are made of: its columns' types and, recursively, array elements, domains' base types,
   composite types' attributes, ranges' subtypes and multiranges' ranges. */
CREATE FUNCTION local_cache._types_used(rel regclass) RETURNS SETOF oid
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
WITH RECURSIVE used(typid) AS (
    SELECT a.atttypid FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped
  UNION
    SELECT n.typid FROM used u
      JOIN pg_catalog.pg_type ty ON ty.oid = u.typid
     CROSS JOIN LATERAL (
            SELECT ty.typelem WHERE ty.typelem <> 0
  UNION ALL SELECT ty.typbasetype WHERE ty.typbasetype <> 0
  UNION ALL SELECT a.atttypid FROM pg_catalog.pg_attribute a
             WHERE ty.typrelid <> 0 AND a.attrelid = ty.typrelid AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT r.rngsubtype FROM pg_catalog.pg_range r WHERE r.rngtypid = ty.oid
  UNION ALL SELECT r.rngtypid FROM pg_catalog.pg_range r WHERE r.rngmultitypid = ty.oid) n(typid)
)
SELECT typid FROM used
$$;

-- jit = off: the planner's guesses for the query below (a never-analyzed registry, the set
-- functions' default row counts) put its cost past jit_above_cost, and compiling it took 100-250
-- ms of every ALTER TABLE, ALTER TYPE and ALTER DOMAIN, under their locks.
CREATE OR REPLACE FUNCTION local_cache._table_altered() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
BEGIN
    PERFORM local_cache._flush_at_commit(t.relid::oid)
       FROM local_cache.tables t
      WHERE EXISTS (
            SELECT FROM pg_catalog.pg_event_trigger_ddl_commands() c
             WHERE (c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND c.objid = t.relid::oid)
                OR (CASE WHEN c.classid = 'pg_catalog.pg_type'::pg_catalog.regclass THEN c.objid
                         WHEN c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
                         THEN (SELECT reltype FROM pg_catalog.pg_class WHERE oid = c.objid) END)
                   IN (SELECT local_cache._types_used(t.relid)));
END $$;
DROP EVENT TRIGGER local_cache_table_altered;
CREATE EVENT TRIGGER local_cache_table_altered ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'ALTER TYPE', 'ALTER DOMAIN')
    EXECUTE FUNCTION local_cache._table_altered();
ALTER EVENT TRIGGER local_cache_table_altered ENABLE ALWAYS;

-- local_cache.stats fails without the preloaded library, as every entry point does, also when
-- no table is cached (its counters are then never read): a STABLE call without arguments is a
-- one-time filter, evaluated before the tables are scanned.
CREATE FUNCTION local_cache._require_preloaded() RETURNS boolean
    AS 'MODULE_PATHNAME', 'local_cache_require_preloaded' LANGUAGE C STRICT STABLE;
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
   AND c.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
 WHERE local_cache._require_preloaded();

/* The RESP server's command statistics (INFO commandstats, errorstats and latencystats), per
   role and command, summed over its workers and write workers: calls, their microseconds, the
   requests refused before they ran (rejected_calls), those that answered an error
   (failed_calls), latency percentiles, and the error replies by code. Like pg_stat_statements,
   each role sees its own rows, members of pg_read_all_stats every role's and those without one
   (usesysid NULL: requests before a login, or of pairs that found the table full): the functions
   leave the others out, so they are for every role to call. Empty when local_cache.resp_port is
   0. */
CREATE FUNCTION local_cache.resp_command_counters(
    OUT usesysid oid, OUT command text, OUT calls bigint, OUT usec bigint,
    OUT usec_per_call double precision, OUT rejected_calls bigint, OUT failed_calls bigint,
    OUT p50_usec double precision, OUT p99_usec double precision, OUT p999_usec double precision)
RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'local_cache_resp_command_counters' LANGUAGE C STRICT VOLATILE;
CREATE FUNCTION local_cache.resp_error_counters(OUT usesysid oid, OUT error text, OUT count bigint)
RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'local_cache_resp_error_counters' LANGUAGE C STRICT VOLATILE;
-- Forgets every role's: superuser, or whom it is granted to (CONFIG RESETSTAT asks the same).
CREATE FUNCTION local_cache.resp_reset_stats() RETURNS void
    AS 'MODULE_PATHNAME', 'local_cache_resp_reset_stats' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION local_cache.resp_reset_stats() FROM PUBLIC;

CREATE VIEW local_cache.resp_commands AS
SELECT c.usesysid, r.rolname AS usename, c.command, c.calls, c.usec, c.usec_per_call,
       c.rejected_calls, c.failed_calls, c.p50_usec, c.p99_usec, c.p999_usec
  FROM local_cache.resp_command_counters() c
  LEFT JOIN pg_catalog.pg_roles r ON r.oid = c.usesysid;
CREATE VIEW local_cache.resp_errors AS
SELECT e.usesysid, r.rolname AS usename, e.error, e.count
  FROM local_cache.resp_error_counters() e
  LEFT JOIN pg_catalog.pg_roles r ON r.oid = e.usesysid;
GRANT SELECT ON local_cache.resp_commands, local_cache.resp_errors TO PUBLIC;

/* The RESP server's counters that INFO reports (summed over its workers), for SQL readers and
   for the alerts of docs/MONITORING.md: rejected connections, the largest output buffer a client
   has not read (largest_output_buffer: CLIENT TRACKING pushes or replies; INFO's
   client_recent_max_output_buffer), and the RESP workers' and write workers' restarts since the
   server started. Every role may read them, as every RESP client reads INFO. */
CREATE FUNCTION local_cache.resp_server_counters(
    OUT connected_clients bigint, OUT total_connections_received bigint,
    OUT total_commands_processed bigint, OUT rejected_connections bigint,
    OUT largest_output_buffer bigint, OUT worker_restarts bigint, OUT last_worker_start timestamptz)
RETURNS record
    AS 'MODULE_PATHNAME', 'local_cache_resp_server_counters' LANGUAGE C STRICT VOLATILE;
CREATE VIEW local_cache.resp_server AS
SELECT * FROM local_cache.resp_server_counters();
GRANT SELECT ON local_cache.resp_server TO PUBLIC;

/* Cluster mode (local_cache.resp_cluster): the standbys the primary's RESP server sees, by the
   RESP endpoint each announces in its application_name, and their health. The primary's first
   RESP worker keeps it current (once a second, writing only on a change); WAL carries it to the
   standbys, which list their siblings from it, so every node describes the whole group. A
   standby gone stays 'failed' until its row is deleted. Not dumped: it describes the servers,
   not the data. */
CREATE TABLE local_cache.cluster_members (
    endpoint text PRIMARY KEY,
    health text NOT NULL CHECK (health IN ('online', 'loading', 'failed')),
    changed_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT ON local_cache.cluster_members TO PUBLIC;

/* The row trigger asks capture_keys() first (its WHEN clause, evaluated as the row is written):
   once a transaction flushes the table whole at commit (past 10,000 rows or keys, after a
   TRUNCATE), the rest of its rows queue no trigger event, and a bulk write of a cached table costs
   little more than of one not cached. The capture check accepts the row trigger with this WHEN clause naming
   its own table, or with none (as enable() made it before). */
CREATE FUNCTION local_cache.capture_keys(rel regclass) RETURNS boolean
    AS 'MODULE_PATHNAME', 'local_cache_capture_keys' LANGUAGE C STRICT VOLATILE;

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
    PERFORM local_cache._has_capture_triggers(rel);
    EXECUTE format('CREATE OR REPLACE TRIGGER local_cache_mark_written BEFORE INSERT OR UPDATE OR DELETE ON %s '
                   'FOR EACH STATEMENT EXECUTE FUNCTION local_cache.capture_changes()', rel);
    EXECUTE format('CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OR DELETE ON %s '
                   'FOR EACH ROW WHEN (local_cache.capture_keys(%L::regclass)) '
                   'EXECUTE FUNCTION local_cache.capture_changes()', rel, rel);
    EXECUTE format('CREATE OR REPLACE TRIGGER local_cache_invalidate_truncate AFTER TRUNCATE ON %s '
                   'FOR EACH STATEMENT EXECUTE FUNCTION local_cache.capture_changes()', rel);
    -- ALWAYS: the triggers must also fire under session_replication_role = replica.
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER local_cache_mark_written', rel);
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER local_cache_invalidate', rel);
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER local_cache_invalidate_truncate', rel);
    PERFORM local_cache._register(rel, prefix);
END $$;

/* The cached tables' row triggers, as enable() now makes them (one catalog change each: CREATE
   OR REPLACE, then ALWAYS again, in this transaction). */
DO $$
DECLARE
    rel regclass;
BEGIN
    FOR rel IN SELECT t.relid FROM local_cache.tables t
                WHERE EXISTS (SELECT FROM pg_catalog.pg_trigger g WHERE g.tgrelid = t.relid
                                AND g.tgname = 'local_cache_invalidate'
                                AND g.tgfoid = 'local_cache.capture_changes()'::pg_catalog.regprocedure) LOOP
        EXECUTE pg_catalog.format('CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OR DELETE ON %s '
                                  'FOR EACH ROW WHEN (local_cache.capture_keys(%L::regclass)) '
                                  'EXECUTE FUNCTION local_cache.capture_changes()', rel, rel);
        EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER local_cache_invalidate', rel);
    END LOOP;
END $$;

/* The planner hook adds a call of this function, with the table and its key columns, to the plan
   of an UPDATE or DELETE of a cached table whose rows keep their keys (unless its WHERE clause
   names the one key it may write, which is then recorded once): it records each row's key
   as the plan hands the row to the write, and the statement runs without the capture's row
   trigger (PostgreSQL's fetch of the old row again for it, and its set-up, cost that statement
   more than the recording). It records keys only in a transaction that is writing the table, and
   recording more keys only invalidates more; like capture_keys() it is for everyone, since a
   statement's plan calls it as the statement's user. */
CREATE FUNCTION local_cache.capture_row_key(rel regclass, VARIADIC key "any") RETURNS boolean
    AS 'MODULE_PATHNAME', 'local_cache_capture_row_key' LANGUAGE C VOLATILE;

