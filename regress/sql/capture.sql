--
-- capture: writes cannot be slipped past the cache. A cached table cannot join an inheritance
-- tree later; the capture triggers are checked by their whole definition, so a replaced or
-- redefined trigger switches the cache off for the table; switching the extension's event
-- trigger off does not let a disabled-capture window go unnoticed; reading a table by OID
-- checks USAGE on its schema as SELECT does.
--
\set SHOW_CONTEXT never

CREATE TABLE cap_items (id bigint PRIMARY KEY, value text);
INSERT INTO cap_items SELECT g, 'v' || g FROM generate_series(1, 10) g;
SELECT local_cache.enable('cap_items');
CREATE FUNCTION cap_hits() RETURNS bigint LANGUAGE sql
    AS $$SELECT hits FROM local_cache.stats WHERE relation = 'cap_items'::regclass$$;

-- Joining an inheritance tree or a partitioned table later is refused.
CREATE TABLE cap_parent (id bigint, value text);
ALTER TABLE cap_items INHERIT cap_parent;
CREATE TABLE cap_child () INHERITS (cap_items);
CREATE FOREIGN TABLE cap_foreign_child () INHERITS (cap_items) SERVER local_cache OPTIONS (table 'cap_items');
CREATE TABLE cap_parted (id bigint PRIMARY KEY, value text) PARTITION BY RANGE (id);
ALTER TABLE cap_parted ATTACH PARTITION cap_items FOR VALUES FROM (0) TO (1000);
SELECT count(*) AS inheritance FROM pg_inherits WHERE inhrelid = 'cap_items'::regclass OR inhparent = 'cap_items'::regclass;
DROP TABLE cap_parent, cap_parted;

-- The capture triggers are checked by their whole definition: any other definition switches
-- the cache off for the table (reads go to the table, and stay exact), until enable() again.
CREATE FUNCTION cap_redefine(definition text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE definition;
    EXECUTE 'ALTER TABLE cap_items ENABLE ALWAYS TRIGGER local_cache_invalidate';
    RETURN 'redefined';
END $$;
SELECT lc_check('cap_items', '{1,2,3}'), lc_check('cap_items', '{1,2,3}');
SELECT cap_hits() AS before \gset
SELECT lc_check('cap_items', '{1,2,3}');
SELECT cap_hits() > :before AS cache_used_when_intact;

SELECT cap_redefine($$CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT ON cap_items
    FOR EACH ROW EXECUTE FUNCTION local_cache.capture_changes()$$);
SELECT cap_hits() AS before \gset
UPDATE cap_items SET value = 'after insert-only trigger' WHERE id = 1;
SELECT lc_check('cap_items', '{1,2,3}');
SELECT lc_check('cap_items', '{1,2,3}');
SELECT cap_hits() = :before AS cache_bypassed;

SELECT cap_redefine($$CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OR DELETE ON cap_items
    FOR EACH STATEMENT EXECUTE FUNCTION local_cache.capture_changes()$$);
SELECT lc_check('cap_items', '{1,2,3}'), cap_hits() = :before AS cache_bypassed;
SELECT cap_redefine($$CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OF value OR DELETE ON cap_items
    FOR EACH ROW EXECUTE FUNCTION local_cache.capture_changes()$$);
SELECT lc_check('cap_items', '{1,2,3}'), cap_hits() = :before AS cache_bypassed;
SELECT cap_redefine($$CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OR DELETE ON cap_items
    FOR EACH ROW WHEN (false) EXECUTE FUNCTION local_cache.capture_changes()$$);
SELECT lc_check('cap_items', '{1,2,3}'), cap_hits() = :before AS cache_bypassed;
-- capture_keys' WHEN clause (enable()'s) only naming the table itself, and alone.
SELECT cap_redefine($$CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OR DELETE ON cap_items
    FOR EACH ROW WHEN (local_cache.capture_keys('pg_class'::regclass)) EXECUTE FUNCTION local_cache.capture_changes()$$);
SELECT lc_check('cap_items', '{1,2,3}'), cap_hits() = :before AS cache_bypassed;
SELECT cap_redefine($$CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OR DELETE ON cap_items
    FOR EACH ROW WHEN (NOT local_cache.capture_keys('cap_items'::regclass)) EXECUTE FUNCTION local_cache.capture_changes()$$);
SELECT lc_check('cap_items', '{1,2,3}'), cap_hits() = :before AS cache_bypassed;
CREATE FUNCTION public.capture_changes() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END $$;
SELECT cap_redefine($$CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OR DELETE ON cap_items
    FOR EACH ROW EXECUTE FUNCTION public.capture_changes()$$);
SELECT lc_check('cap_items', '{1,2,3}'), cap_hits() = :before AS cache_bypassed;
SELECT cap_redefine($$CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OR DELETE ON cap_items
    FOR EACH ROW EXECUTE FUNCTION local_cache.capture_changes('x')$$);
SELECT lc_check('cap_items', '{1,2,3}'), cap_hits() = :before AS cache_bypassed;
-- Enabled, but not ALWAYS: it would not fire under session_replication_role = replica.
SELECT cap_redefine($$CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OR DELETE ON cap_items
    FOR EACH ROW EXECUTE FUNCTION local_cache.capture_changes()$$);
ALTER TABLE cap_items ENABLE TRIGGER local_cache_invalidate;
SELECT lc_check('cap_items', '{1,2,3}'), cap_hits() = :before AS cache_bypassed;
-- The definition enable() made before 1.5 (no WHEN clause), back in place: the cache is used again (nothing cached
-- meanwhile is served: every change flushed the table).
ALTER TABLE cap_items ENABLE ALWAYS TRIGGER local_cache_invalidate;
SELECT lc_check('cap_items', '{1,2,3}'), lc_check('cap_items', '{1,2,3}');
SELECT cap_hits() > :before AS cache_used_again;
-- and enable()'s own since 1.5, with capture_keys naming the table: used too.
SELECT cap_redefine($$CREATE OR REPLACE TRIGGER local_cache_invalidate AFTER INSERT OR UPDATE OR DELETE ON cap_items
    FOR EACH ROW WHEN (local_cache.capture_keys('cap_items'::regclass)) EXECUTE FUNCTION local_cache.capture_changes()$$);
SELECT cap_hits() AS before \gset
SELECT lc_check('cap_items', '{1,2,3}'), lc_check('cap_items', '{1,2,3}');
SELECT cap_hits() > :before AS cache_used_with_capture_keys;
DROP FUNCTION public.capture_changes();

-- With the extension's event triggers switched off (superuser), a capture trigger disabled
-- around a write is still noticed, by the DDL itself and by the first reader afterwards.
SELECT lc_check('cap_items', '{4,5}'), lc_check('cap_items', '{4,5}');
ALTER EVENT TRIGGER local_cache_table_altered DISABLE;
ALTER EVENT TRIGGER local_cache_forget_dropped DISABLE;
ALTER TABLE cap_items DISABLE TRIGGER local_cache_invalidate;
UPDATE cap_items SET value = 'written while capture was off' WHERE id IN (4, 5);
ALTER TABLE cap_items ENABLE ALWAYS TRIGGER local_cache_invalidate;
ALTER EVENT TRIGGER local_cache_table_altered ENABLE ALWAYS;
ALTER EVENT TRIGGER local_cache_forget_dropped ENABLE ALWAYS;
SELECT lc_check('cap_items', '{4,5}'), local_cache.mget_json('cap_items', '{4}');

-- USAGE on the schema is checked as SELECT checks it, also when the table is named by OID.
CREATE SCHEMA cap_private;
CREATE TABLE cap_private.secret (id bigint PRIMARY KEY, value text);
INSERT INTO cap_private.secret VALUES (1, 'secret');
SELECT local_cache.enable('cap_private.secret');
CREATE ROLE regress_cap_reader;
GRANT SELECT ON cap_private.secret TO regress_cap_reader;
SELECT 'cap_private.secret'::regclass::oid AS secret_oid \gset
SET ROLE regress_cap_reader;
SELECT * FROM cap_private.secret;
SELECT local_cache.mget_json(:secret_oid, '{1}');
RESET ROLE;
GRANT USAGE ON SCHEMA cap_private TO regress_cap_reader;
SET ROLE regress_cap_reader;
SELECT local_cache.mget_json(:secret_oid, '{1}');
RESET ROLE;
REVOKE USAGE ON SCHEMA cap_private FROM regress_cap_reader;
SET ROLE regress_cap_reader;
SELECT local_cache.mget_json(:secret_oid, '{1}');
RESET ROLE;
DROP SCHEMA cap_private CASCADE;
DROP ROLE regress_cap_reader;

-- The row trigger's WHEN clause is prepared once per session (extension/capture_setup.cpp). An
-- invalidation in the middle of a statement makes the session prepare it again, but the statement
-- keeps evaluating the one it started with: here each row's own BEFORE trigger redefines a
-- function (a catalog invalidation, taken at once) before the row is written and its WHEN clause
-- runs, and a second statement then prepares the clause anew.
CREATE FUNCTION cap_redefine_each_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE OR REPLACE FUNCTION cap_scratch() RETURNS bigint LANGUAGE sql AS %L',
                   'SELECT ' || NEW.id);
    RETURN NEW;
END $$;
CREATE TRIGGER cap_redefine_each_row BEFORE UPDATE ON cap_items
    FOR EACH ROW EXECUTE FUNCTION cap_redefine_each_row();
SELECT lc_check('cap_items', '{1,2,3,6,7,8,9,10}');
UPDATE cap_items SET value = value || ' (redefined)' WHERE id <> 4 AND id <> 5;
SELECT lc_check('cap_items', '{1,2,3,6,7,8,9,10}'), local_cache.mget_json('cap_items', '{1,10}');
UPDATE cap_items SET value = value || ' again' WHERE id IN (1, 10);
SELECT lc_check('cap_items', '{1,2,3,6,7,8,9,10}'), local_cache.mget_json('cap_items', '{1,10}'), cap_scratch();
DROP TRIGGER cap_redefine_each_row ON cap_items;
DROP FUNCTION cap_redefine_each_row(), cap_scratch();

-- A statement the executor plans marks the table written at ExecutorStart and switches the
-- capture's BEFORE STATEMENT trigger off in its own copy of the triggers: a user's statement
-- trigger on the table still fires, once per statement and event (not under
-- session_replication_role = replica, where the capture's, ENABLE ALWAYS, still works), and the
-- cache stays exact.
CREATE TABLE cap_statements (event text);
CREATE FUNCTION cap_log_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cap_statements VALUES (TG_OP);
    RETURN NULL;
END $$;
CREATE TRIGGER cap_log_statement BEFORE INSERT OR UPDATE OR DELETE ON cap_items
    FOR EACH STATEMENT EXECUTE FUNCTION cap_log_statement();
SELECT lc_check('cap_items', '{1,2,11}');
UPDATE cap_items SET value = value || ' (logged)' WHERE id = 1;
INSERT INTO cap_items VALUES (11, 'eleven') ON CONFLICT (id) DO UPDATE SET value = 'not inserted';
SELECT lc_check('cap_items', '{11}'), local_cache.mget_json('cap_items', '{11}');
INSERT INTO cap_items VALUES (11, 'eleven') ON CONFLICT (id) DO UPDATE SET value = 'updated';
SELECT lc_check('cap_items', '{11}'), local_cache.mget_json('cap_items', '{11}');
SET session_replication_role = replica;
UPDATE cap_items SET value = 'by replica' WHERE id = 2;
RESET session_replication_role;
DELETE FROM cap_items WHERE id = 11;
SELECT event, count(*) FROM cap_statements GROUP BY event ORDER BY event;
SELECT lc_check('cap_items', '{1,2,11}'), local_cache.mget_json('cap_items', '{1,2,11}');
DROP TRIGGER cap_log_statement ON cap_items;
DROP TABLE cap_statements;
DROP FUNCTION cap_log_statement();

-- An UPDATE or DELETE whose rows keep their keys records them from its plan (the junk column
-- local_cache.capture_row_key), and its statements run without the capture's row trigger; the
-- others keep the trigger: an UPDATE that assigns a key column, one of a table with another
-- BEFORE ROW UPDATE trigger (it may change the key), a data-modifying WITH query. Each first
-- reads the keys it will write, absent ones included (negative entries), so that a key the
-- capture missed would stay cached.
EXPLAIN (COSTS OFF, VERBOSE) UPDATE cap_items SET value = 'planned' WHERE id IN (1, 2);
EXPLAIN (COSTS OFF, VERBOSE) DELETE FROM cap_items WHERE value = 'planned';
EXPLAIN (COSTS OFF, VERBOSE) UPDATE cap_items SET id = id + 100 WHERE id = 1;
SELECT lc_check('cap_items', '{1,2,3,101,102}');
UPDATE cap_items SET value = 'planned' WHERE id IN (1, 2);
SELECT lc_check('cap_items', '{1,2,3,101,102}'), local_cache.mget_json('cap_items', '{1,2}');
UPDATE cap_items SET id = id + 100 WHERE id IN (1, 2);
SELECT lc_check('cap_items', '{1,2,3,101,102}'), local_cache.mget_json('cap_items', '{101,102}');
DELETE FROM cap_items WHERE id = 102;
SELECT lc_check('cap_items', '{1,2,3,101,102}');
WITH moved AS (UPDATE cap_items SET id = 2 WHERE id = 101 RETURNING id) SELECT * FROM moved;
SELECT lc_check('cap_items', '{1,2,3,101,102}'), local_cache.mget_json('cap_items', '{2}');
-- A statement whose WHERE clause names the one key it may write (key = constant or parameter,
-- by the key's equality) hands that key to ExecutorStart in the plan (junk column local_cache_key),
-- which records it for the statement: no call per row either. Constants, a prepared statement's
-- parameters (custom plans and the generic one), a PL/pgSQL variable, NULL, another integer type.
EXPLAIN (COSTS OFF, VERBOSE) UPDATE cap_items SET value = 'keyed' WHERE id = 2;
EXPLAIN (COSTS OFF, VERBOSE) DELETE FROM cap_items WHERE 2::integer = id AND value <> 'x';
SELECT lc_check('cap_items', '{2,3,4,5}');
UPDATE cap_items SET value = 'keyed' WHERE id = 2;
SELECT lc_check('cap_items', '{2,3,4,5}'), local_cache.mget_json('cap_items', '{2}');
PREPARE cap_set(bigint, text) AS UPDATE cap_items SET value = $2 WHERE id = $1;
EXPLAIN (COSTS OFF, VERBOSE) EXECUTE cap_set(3, 'x');
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF, VERBOSE) EXECUTE cap_set(3, 'x');
SELECT lc_check('cap_items', '{2,3,4,5}');
EXECUTE cap_set(3, 'generic');
SELECT lc_check('cap_items', '{2,3,4,5}'), local_cache.mget_json('cap_items', '{3}');
EXECUTE cap_set(NULL, 'nothing');
RESET plan_cache_mode;
EXECUTE cap_set(3, 'custom');
SELECT lc_check('cap_items', '{2,3,4,5}'), local_cache.mget_json('cap_items', '{3}');
DEALLOCATE cap_set;
CREATE FUNCTION cap_set_in_plpgsql(k integer, v text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE cap_items SET value = v WHERE id = k;
END $$;
SELECT cap_set_in_plpgsql(4, 'from plpgsql');
SELECT lc_check('cap_items', '{2,3,4,5}'), local_cache.mget_json('cap_items', '{4}');
SELECT cap_set_in_plpgsql(4, 'again');
SELECT lc_check('cap_items', '{2,3,4,5}'), local_cache.mget_json('cap_items', '{4}');
DELETE FROM cap_items WHERE 5::integer = id;
SELECT lc_check('cap_items', '{2,3,4,5}');
DROP FUNCTION cap_set_in_plpgsql(integer, text);
-- A statement with no condition writes every row: its plan stays PostgreSQL's own (no junk
-- column), the row trigger is off, and the table is flushed at commit, moved keys included.
CREATE TABLE cap_all (id bigint PRIMARY KEY, value text);
INSERT INTO cap_all SELECT i, 'all ' || i FROM generate_series(1, 20) i;
SELECT local_cache.enable('cap_all');
EXPLAIN (COSTS OFF, VERBOSE) UPDATE cap_all SET value = value || '!';
SELECT lc_check('cap_all', '{1,2,20,101,120}'), lc_check('cap_all', '{1,2,20,101,120}');
UPDATE cap_all SET value = value || '!';
SELECT lc_check('cap_all', '{1,2,20,101,120}'), local_cache.mget_json('cap_all', '{1}');
UPDATE cap_all SET id = id + 100;
SELECT lc_check('cap_all', '{1,2,20,101,120}'), local_cache.mget_json('cap_all', '{101}');
DELETE FROM cap_all;
SELECT lc_check('cap_all', '{1,2,20,101,120}'), local_cache.mget_json('cap_all', '{101,120}');
DROP TABLE cap_all;
-- A user's AFTER ROW trigger still fires for each row; a BEFORE ROW trigger that moves the row.
CREATE TABLE cap_rows (event text, id bigint);
CREATE FUNCTION cap_log_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cap_rows VALUES (TG_OP, OLD.id);
    RETURN NULL;
END $$;
CREATE TRIGGER cap_log_row AFTER UPDATE OR DELETE ON cap_items FOR EACH ROW EXECUTE FUNCTION cap_log_row();
UPDATE cap_items SET value = 'logged' WHERE id IN (2, 3);
DELETE FROM cap_items WHERE id = 3;
SELECT event, id FROM cap_rows ORDER BY event, id;
CREATE FUNCTION cap_move_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.id := NEW.id + 1000;
    RETURN NEW;
END $$;
CREATE TRIGGER cap_move_row BEFORE UPDATE ON cap_items FOR EACH ROW EXECUTE FUNCTION cap_move_row();
SELECT lc_check('cap_items', '{2,3,1002}');
EXPLAIN (COSTS OFF, VERBOSE) UPDATE cap_items SET value = 'moved' WHERE id = 2;
UPDATE cap_items SET value = 'moved' WHERE id = 2;
SELECT lc_check('cap_items', '{2,3,1002}'), local_cache.mget_json('cap_items', '{1002}');
DROP TRIGGER cap_move_row ON cap_items;
DROP TRIGGER cap_log_row ON cap_items;
DROP TABLE cap_rows;
DROP FUNCTION cap_log_row(), cap_move_row();

-- capture_row_key called by hand: nothing outside a transaction that writes the table; in one,
-- only the key's columns, in number and type, and not as a VARIADIC array.
SELECT local_cache.capture_row_key('cap_items', 'not a key'::text);
BEGIN;
UPDATE cap_items SET value = value WHERE id = 1002;
SELECT local_cache.capture_row_key('cap_items', 'not a key'::text);
ROLLBACK;
BEGIN;
UPDATE cap_items SET value = value WHERE id = 1002;
SELECT local_cache.capture_row_key('cap_items', 1002, 1);
ROLLBACK;
SELECT local_cache.capture_row_key('cap_items', VARIADIC '{1002}'::bigint[]);
BEGIN;
UPDATE cap_items SET value = value WHERE id = 1002;
SELECT local_cache.capture_row_key('cap_items', 1002::bigint), local_cache.capture_row_key('cap_items', NULL::bigint);
COMMIT;
SELECT lc_check('cap_items', '{1002}');

DROP FUNCTION cap_redefine(text), cap_hits();
DROP TABLE cap_items;
