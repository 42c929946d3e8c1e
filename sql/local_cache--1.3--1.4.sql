/* local_cache 1.3 -> 1.4: what a DBA needs to adopt the extension (the schema belongs to the
   extension; upgrades keep privileges and dependent objects; enable() adopts the capture
   triggers a per-table dump restored without the registry). */

\echo Use "ALTER EXTENSION local_cache UPDATE TO '1.4'" to load this file. \quit

/* Catalogs made before 1.4 recorded the extension in the schema local_cache, which CREATE
   EXTENSION had made for it, outside the extension (the control file named it). Now the script
   creates the schema and the extension is recorded in pg_catalog (local_cache.control). ALTER
   EXTENSION ADD refuses the schema that contains the extension and SET SCHEMA is for relocatable
   extensions only, so the record moves by hand, as CREATE EXTENSION would have written it (no
   dependency on pinned pg_catalog), then the schema joins the extension with the initial
   privileges it had (ADD would take the DBA's current grants for the extension's). */
DO $$
DECLARE
    ext oid := (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'local_cache');
    initial aclitem[];
BEGIN
    IF (SELECT extnamespace FROM pg_catalog.pg_extension WHERE oid = ext) <> 'local_cache'::regnamespace THEN
        RETURN;
    END IF;
    SELECT initprivs INTO initial FROM pg_catalog.pg_init_privs
     WHERE objoid = 'local_cache'::regnamespace AND classoid = 'pg_namespace'::regclass;
    DELETE FROM pg_catalog.pg_depend
     WHERE classid = 'pg_extension'::regclass AND objid = ext
       AND refclassid = 'pg_namespace'::regclass AND refobjid = 'local_cache'::regnamespace;
    UPDATE pg_catalog.pg_extension SET extnamespace = 'pg_catalog'::regnamespace WHERE oid = ext;
    ALTER EXTENSION local_cache ADD SCHEMA local_cache;
    UPDATE pg_catalog.pg_init_privs SET initprivs = initial
     WHERE objoid = 'local_cache'::regnamespace AND classoid = 'pg_namespace'::regclass;
END $$;

/* The capture triggers, identified by name and function: true when rel has all three, false when
   none; an error when a trigger of one of these names runs another function (it is the user's,
   and enable() must not replace it). */
CREATE FUNCTION local_cache._has_capture_triggers(rel regclass) RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS $$
DECLARE
    foreign_trigger name;
BEGIN
    SELECT tgname INTO foreign_trigger FROM pg_trigger
     WHERE tgrelid = rel AND tgfoid <> 'local_cache.capture_changes()'::regprocedure
       AND tgname IN ('local_cache_mark_written', 'local_cache_invalidate', 'local_cache_invalidate_truncate');
    IF FOUND THEN
        RAISE EXCEPTION 'trigger "%" on table "%" is not one of local_cache''s', foreign_trigger, rel
            USING ERRCODE = 'duplicate_object',
                  DETAIL = 'local_cache names its capture triggers local_cache_mark_written, local_cache_invalidate and local_cache_invalidate_truncate, all executing local_cache.capture_changes().',
                  HINT = 'Rename that trigger (ALTER TRIGGER ... RENAME TO), then call local_cache.enable() again.';
    END IF;
    RETURN EXISTS (SELECT FROM pg_trigger WHERE tgrelid = rel
                     AND tgfoid = 'local_cache.capture_changes()'::regprocedure);
END $$;

/* A per-table dump (pg_dump -t) restores a cached table with its capture triggers but without
   its registry row (the registry is dumped with the whole database only): enable() replaces the
   triggers it finds (CREATE OR REPLACE TRIGGER), so that it brings such a table back. */
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
                   'FOR EACH ROW EXECUTE FUNCTION local_cache.capture_changes()', rel);
    EXECUTE format('CREATE OR REPLACE TRIGGER local_cache_invalidate_truncate AFTER TRUNCATE ON %s '
                   'FOR EACH STATEMENT EXECUTE FUNCTION local_cache.capture_changes()', rel);
    -- ALWAYS: the triggers must also fire under session_replication_role = replica.
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER local_cache_mark_written', rel);
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER local_cache_invalidate', rel);
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER local_cache_invalidate_truncate', rel);
    PERFORM local_cache._register(rel, prefix);
END $$;

/* disable() of a table that is not registered but has the capture triggers (a per-table dump
   restored) removes them: afterwards the table is as if it had never been enabled. */
CREATE OR REPLACE FUNCTION local_cache.disable(rel regclass) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
    orphan boolean := NOT EXISTS (SELECT FROM local_cache.tables WHERE relid = rel)
                      AND local_cache._has_capture_triggers(rel);
BEGIN
    IF NOT orphan THEN
        PERFORM local_cache._check_enabled(rel);
    END IF;
    IF NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = rel), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', (SELECT relname FROM pg_class WHERE oid = rel)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    EXECUTE format('DROP TRIGGER IF EXISTS local_cache_mark_written ON %s', rel);
    EXECUTE format('DROP TRIGGER IF EXISTS local_cache_invalidate ON %s', rel);
    EXECUTE format('DROP TRIGGER IF EXISTS local_cache_invalidate_truncate ON %s', rel);
    IF orphan THEN
        RAISE NOTICE 'table "%" was not enabled in local_cache: removed the capture triggers it had', rel;
    ELSE
        PERFORM local_cache._unregister(rel);
    END IF;
END $$;
