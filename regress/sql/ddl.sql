--
-- ddl: schema changes and maintenance commands on a cached table. After each one, with
-- the cache warm before it, mget returns rows of the new shape equal to SQL.
--
\set SHOW_CONTEXT never

CREATE TABLE ddl_t (id bigint PRIMARY KEY, a text, b integer);
INSERT INTO ddl_t VALUES (1, 'one', 10), (2, 'two', 20), (3, 'three', 30);
SELECT local_cache.enable('ddl_t');
SELECT local_cache.mget_json('ddl_t', '{1,2,3,4}');
SELECT lc_check('ddl_t', '{1,2,3,4}');

-- ADD COLUMN with a DEFAULT (no rewrite: the stored rows lack the column).
ALTER TABLE ddl_t ADD COLUMN c integer DEFAULT 42;
SELECT local_cache.mget_json('ddl_t', '{1,2,3,4}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
INSERT INTO ddl_t (id, a, b) VALUES (4, 'four', 40);
UPDATE ddl_t SET c = 7 WHERE id = 2;
SELECT local_cache.mget_json('ddl_t', '{1,2,3,4}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
-- ADD COLUMN without default, and with a volatile default (rewrites the table).
ALTER TABLE ddl_t ADD COLUMN d text;
SELECT local_cache.mget_json('ddl_t', '{1,4}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
ALTER TABLE ddl_t ADD COLUMN e double precision DEFAULT random();
SELECT lc_check('ddl_t', '{1,2,3,4}');
SELECT count(*) AS rows_with_e
  FROM json_array_elements(local_cache.mget_json('ddl_t', '{1,2,3,4}')) r WHERE r->'e' IS NOT NULL;
ALTER TABLE ddl_t DROP COLUMN e;
SELECT lc_check('ddl_t', '{1,2,3,4}');

-- DROP COLUMN.
SELECT lc_check('ddl_t', '{1,2,3,4}');
ALTER TABLE ddl_t DROP COLUMN b;
SELECT local_cache.mget_json('ddl_t', '{1,2,3,4}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
UPDATE ddl_t SET d = 'dee' WHERE id = 3;
SELECT lc_check('ddl_t', '{1,2,3,4}');

-- ALTER COLUMN TYPE (integer to text: the JSON value becomes a string).
SELECT lc_check('ddl_t', '{1,2,3,4}');
ALTER TABLE ddl_t ALTER COLUMN c TYPE text USING 'c' || c;
SELECT local_cache.mget_json('ddl_t', '{1,2,3,4}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
-- A binary-compatible type change (no rewrite).
ALTER TABLE ddl_t ALTER COLUMN a TYPE varchar(40);
SELECT lc_check('ddl_t', '{1,2,3,4}');

-- RENAME COLUMN: the JSON keys change.
SELECT lc_check('ddl_t', '{1,2,3,4}');
ALTER TABLE ddl_t RENAME COLUMN a TO title;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT array_to_json(local_cache.mget('ddl_t', '{1,2}')) AS rows;
SELECT lc_check('ddl_t', '{1,2,3,4}');
-- RENAME of the key column.
ALTER TABLE ddl_t RENAME COLUMN id TO ddl_id;
SELECT local_cache.mget_json('ddl_t', '{1}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
ALTER TABLE ddl_t RENAME COLUMN ddl_id TO id;

-- RENAME TABLE: the registry follows the table.
ALTER TABLE ddl_t RENAME TO ddl_renamed;
SELECT relid, resp_prefix FROM local_cache.tables WHERE relid = 'ddl_renamed'::regclass;
SELECT local_cache.mget_json('ddl_renamed', '{1}');
SELECT lc_check('ddl_renamed', '{1,2,3,4}');
ALTER TABLE ddl_renamed RENAME TO ddl_t;

-- A different key type: bigint to integer (rewrites the table).
SELECT lc_check('ddl_t', '{1,2,3,4}');
ALTER TABLE ddl_t ALTER COLUMN id TYPE integer;
SELECT local_cache.mget_json('ddl_t', '{1,2,3,4}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
UPDATE ddl_t SET title = 'after key type change' WHERE id = 1;
SELECT lc_check('ddl_t', '{1,2,3,4}');

-- Schema change rolled back: the old shape again.
SELECT lc_check('ddl_t', '{1,2,3,4}');
BEGIN;
ALTER TABLE ddl_t ADD COLUMN z integer DEFAULT 99;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
ROLLBACK;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
BEGIN;
ALTER TABLE ddl_t DROP COLUMN d;
SELECT lc_check('ddl_t', '{1,2,3,4}');
ROLLBACK;
SELECT lc_check('ddl_t', '{1,2,3,4}');

-- VACUUM FULL and CLUSTER move every row; invalidation keeps working after them.
UPDATE ddl_t SET title = title || '!' WHERE id IN (2, 3);
DELETE FROM ddl_t WHERE id = 4;
SELECT lc_check('ddl_t', '{1,2,3,4}');
VACUUM FULL ddl_t;
SELECT local_cache.mget_json('ddl_t', '{1,2,3,4}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
UPDATE ddl_t SET title = 'after vacuum full' WHERE id = 1;
SELECT lc_check('ddl_t', '{1,2,3,4}');
CLUSTER ddl_t USING ddl_t_pkey;
SELECT lc_check('ddl_t', '{1,2,3,4}');
UPDATE ddl_t SET title = 'after cluster' WHERE id = 2;
INSERT INTO ddl_t (id, title) VALUES (4, 'four again');
SELECT local_cache.mget_json('ddl_t', '{1,2,3,4}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
VACUUM ddl_t;
SELECT lc_check('ddl_t', '{1,2,3,4}');

-- TRUNCATE.
TRUNCATE ddl_t;
SELECT local_cache.mget_json('ddl_t', '{1,2,3,4}');
SELECT lc_check('ddl_t', '{1,2,3,4}');
INSERT INTO ddl_t (id, title, c) VALUES (1, 'new one', 'c1'), (2, 'new two', 'c2');
SELECT local_cache.mget_json('ddl_t', '{1,2,3,4}');
SELECT lc_check('ddl_t', '{1,2,3,4}');

--
-- Triggers disabled by hand: never a stale row. While a trigger does not fire ALWAYS,
-- reads go to the table; once both fire ALWAYS again the cache serves again, and must
-- not serve what it held before.
--
SELECT lc_check('ddl_t', '{1,2}');
SELECT hits AS hits_before FROM local_cache.stats WHERE relation = 'ddl_t'::regclass \gset
SELECT lc_check('ddl_t', '{1,2}');
SELECT hits > :hits_before AS cache_used FROM local_cache.stats WHERE relation = 'ddl_t'::regclass;
-- Updated while the triggers are disabled, without any read in between; then enabled
-- again as enable() left them (ALWAYS).
ALTER TABLE ddl_t DISABLE TRIGGER ALL;
UPDATE ddl_t SET title = 'no trigger 1' WHERE id = 1;
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_invalidate;
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_invalidate_truncate;
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_mark_written;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2}');
SELECT hits AS hits_before FROM local_cache.stats WHERE relation = 'ddl_t'::regclass \gset
SELECT lc_check('ddl_t', '{1,2}');
SELECT hits > :hits_before AS cache_used FROM local_cache.stats WHERE relation = 'ddl_t'::regclass;
-- The same, enabled again with ENABLE TRIGGER ALL (origin only), then ALWAYS.
ALTER TABLE ddl_t DISABLE TRIGGER ALL;
UPDATE ddl_t SET title = 'no trigger 1 again' WHERE id = 1;
ALTER TABLE ddl_t ENABLE TRIGGER ALL;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2}');
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_invalidate;
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_invalidate_truncate;
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_mark_written;
SELECT lc_check('ddl_t', '{1,2}');
-- Read while the triggers are disabled, before and after an update.
SELECT lc_check('ddl_t', '{1,2}');
ALTER TABLE ddl_t DISABLE TRIGGER ALL;
SELECT lc_check('ddl_t', '{1,2}');
UPDATE ddl_t SET title = 'no trigger 2' WHERE id = 2;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2}');
DELETE FROM ddl_t WHERE id = 1;
SELECT lc_check('ddl_t', '{1,2}');
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_invalidate;
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_invalidate_truncate;
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_mark_written;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2}');
INSERT INTO ddl_t (id, title) VALUES (1, 'one is back');
SELECT lc_check('ddl_t', '{1,2}');
-- Only the row trigger, inside one transaction.
SELECT lc_check('ddl_t', '{1,2}');
BEGIN;
ALTER TABLE ddl_t DISABLE TRIGGER local_cache_invalidate;
UPDATE ddl_t SET title = 'row trigger disabled 1' WHERE id = 1;
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_invalidate;
COMMIT;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2}');
-- Only the TRUNCATE trigger.
SELECT lc_check('ddl_t', '{1,2}');
ALTER TABLE ddl_t DISABLE TRIGGER local_cache_invalidate_truncate;
TRUNCATE ddl_t;
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_invalidate_truncate;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2}');
INSERT INTO ddl_t (id, title) VALUES (1, 'one'), (2, 'two');
-- ENABLE TRIGGER ALL re-enables the triggers for origin only: under
-- session_replication_role = replica they do not fire, and mget must not be stale.
SELECT lc_check('ddl_t', '{1,2}');
ALTER TABLE ddl_t DISABLE TRIGGER ALL;
ALTER TABLE ddl_t ENABLE TRIGGER ALL;
SELECT tgname, tgenabled FROM pg_trigger
 WHERE tgrelid = 'ddl_t'::regclass AND NOT tgisinternal ORDER BY tgname;
SELECT lc_check('ddl_t', '{1,2}');
SET session_replication_role = replica;
UPDATE ddl_t SET title = 'replica, origin-only trigger' WHERE id = 1;
SELECT lc_check('ddl_t', '{1,2}');
RESET session_replication_role;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2}');
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_invalidate;
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_invalidate_truncate;
ALTER TABLE ddl_t ENABLE ALWAYS TRIGGER local_cache_mark_written;
SELECT lc_check('ddl_t', '{1,2}');

-- The invalidation trigger dropped by hand: reads stay right; disable and enable
-- repair the table.
SELECT lc_check('ddl_t', '{1,2}');
DROP TRIGGER local_cache_invalidate ON ddl_t;
UPDATE ddl_t SET title = 'trigger dropped 1' WHERE id = 1;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2}');
SELECT local_cache.disable('ddl_t');
SELECT local_cache.enable('ddl_t');
UPDATE ddl_t SET title = 'trigger back 2' WHERE id = 2;
SELECT local_cache.mget_json('ddl_t', '{1,2}');
SELECT lc_check('ddl_t', '{1,2}');

--
-- disable, write, enable again: no stale rows.
--
SELECT lc_check('ddl_t', '{1,2,3}');
SELECT local_cache.disable('ddl_t');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'ddl_t'::regclass AND NOT tgisinternal;
SELECT local_cache.mget_json('ddl_t', '{1}');
UPDATE ddl_t SET title = 'while disabled 1' WHERE id = 1;
DELETE FROM ddl_t WHERE id = 2;
INSERT INTO ddl_t (id, title) VALUES (3, 'while disabled 3');
SELECT local_cache.enable('ddl_t');
SELECT local_cache.mget_json('ddl_t', '{1,2,3}');
SELECT lc_check('ddl_t', '{1,2,3}');
UPDATE ddl_t SET title = 'enabled again 1' WHERE id = 1;
SELECT lc_check('ddl_t', '{1,2,3}');
-- disable and enable in one transaction, with writes in between.
BEGIN;
SELECT local_cache.disable('ddl_t');
UPDATE ddl_t SET title = 'disabled in tx 3' WHERE id = 3;
SELECT local_cache.enable('ddl_t');
COMMIT;
SELECT local_cache.mget_json('ddl_t', '{1,2,3}');
SELECT lc_check('ddl_t', '{1,2,3}');
-- disable rolled back: still enabled, still invalidated.
BEGIN;
SELECT local_cache.disable('ddl_t');
ROLLBACK;
SELECT count(*) AS registered FROM local_cache.tables WHERE relid = 'ddl_t'::regclass;
UPDATE ddl_t SET title = 'after rolled back disable' WHERE id = 1;
SELECT lc_check('ddl_t', '{1,2,3}');

--
-- The primary key moves to another column: keys now name other rows.
--
CREATE TABLE ddl_pk (id integer PRIMARY KEY, alt integer NOT NULL, v text);
CREATE UNIQUE INDEX ddl_pk_alt_idx ON ddl_pk (alt);
INSERT INTO ddl_pk VALUES (1, 101, 'id 1, alt 101'), (2, 102, 'id 2, alt 102'), (101, 1, 'id 101, alt 1');
SELECT local_cache.enable('ddl_pk');
SELECT local_cache.mget_json('ddl_pk', '{1,2,101,102}');
SELECT lc_check('ddl_pk', '{1,2,101,102}');
-- (a write first, so that the session knows the old key: it must not name rows by it after)
UPDATE ddl_pk SET v = v WHERE id = 2;
BEGIN;
ALTER TABLE ddl_pk DROP CONSTRAINT ddl_pk_pkey;
ALTER TABLE ddl_pk ADD PRIMARY KEY USING INDEX ddl_pk_alt_idx;
COMMIT;
SELECT local_cache.mget_json('ddl_pk', '{1,2,101,102}');
SELECT lc_check('ddl_pk', '{1,2,101,102}');
UPDATE ddl_pk SET v = v || '!' WHERE alt = 1;
SELECT lc_check('ddl_pk', '{1,2,101,102}');
-- to a column of another type: rows are named by the new key (entries of the old one are gone);
SELECT lc_check('ddl_pk', '{1,2,101,102}');
BEGIN;
ALTER TABLE ddl_pk DROP CONSTRAINT ddl_pk_alt_idx;
ALTER TABLE ddl_pk ADD PRIMARY KEY (v);
COMMIT;
SELECT local_cache.mget_json('ddl_pk', '{1,2,101,102}');
SELECT local_cache.mget_json('ddl_pk', ARRAY['id 1, alt 101', 'id 101, alt 1!', 'id 1']);
SELECT local_cache.mget_json('ddl_pk', ARRAY['id 1, alt 101', 'id 101, alt 1!', 'id 1']);
-- and to columns that cannot be a cache key.
ALTER TABLE ddl_pk ADD COLUMN n numeric;
UPDATE ddl_pk SET n = id;
BEGIN;
ALTER TABLE ddl_pk DROP CONSTRAINT ddl_pk_pkey;
ALTER TABLE ddl_pk ADD PRIMARY KEY (n);
COMMIT;
SELECT local_cache.mget_json('ddl_pk', '{1,2,101,102}');
DROP TABLE ddl_pk;

--
-- DROP TABLE removes it from the registry; a new table of the same name starts empty.
--
SELECT lc_check('ddl_t', '{1,2,3}');
CREATE TEMP TABLE ddl_old AS SELECT 'ddl_t'::regclass::oid AS oid;
DROP TABLE ddl_t;
SELECT count(*) AS registered FROM local_cache.tables t, ddl_old o WHERE t.relid::oid = o.oid;
SELECT count(*) AS registered FROM local_cache.tables WHERE relid::text LIKE '%ddl%';
SELECT try(format('SELECT local_cache.mget(%s::oid::regclass, ''{1}'')', oid)) FROM ddl_old;
CREATE TABLE ddl_t (id bigint PRIMARY KEY, other text);
INSERT INTO ddl_t VALUES (1, 'recreated');
SELECT local_cache.mget('ddl_t', '{1}');
SELECT local_cache.enable('ddl_t');
SELECT local_cache.mget_json('ddl_t', '{1,2,3}');
SELECT lc_check('ddl_t', '{1,2,3}');
-- Dropped inside a transaction that is rolled back: still enabled and correct.
BEGIN;
DROP TABLE ddl_t;
ROLLBACK;
SELECT count(*) AS registered FROM local_cache.tables WHERE relid = 'ddl_t'::regclass;
UPDATE ddl_t SET other = 'survived' WHERE id = 1;
SELECT lc_check('ddl_t', '{1,2,3}');
-- DROP SCHEMA ... CASCADE drops cached tables too.
CREATE SCHEMA ddl_schema;
CREATE TABLE ddl_schema.t (id int PRIMARY KEY);
SELECT local_cache.enable('ddl_schema.t', 'ddl_schema_t');
DROP SCHEMA ddl_schema CASCADE;
SELECT count(*) AS registered FROM local_cache.tables WHERE resp_prefix = 'ddl_schema_t';
-- DROP TABLE under session_replication_role = replica (as the invalidation triggers,
-- the cleanup fires there too).
CREATE TABLE ddl_replica (id bigint PRIMARY KEY);
SELECT local_cache.enable('ddl_replica');
SET session_replication_role = replica;
DROP TABLE ddl_replica;
RESET session_replication_role;
SELECT count(*) AS registered FROM local_cache.tables WHERE resp_prefix = 'ddl_replica';
-- (no-op when the row is gone, as it should be; keeps the next files independent)
DELETE FROM local_cache.tables WHERE resp_prefix = 'ddl_replica';
DROP TABLE ddl_t;
SELECT relid, resp_prefix FROM local_cache.tables ORDER BY resp_prefix;

-- The ALTER event trigger's query runs without JIT: the planner's guesses put it past
-- jit_above_cost, and compiling it took 100-250 ms of every ALTER TABLE, under the table's lock.
SELECT proconfig @> '{jit=off}' AS without_jit FROM pg_proc WHERE oid = 'local_cache._table_altered()'::regprocedure;
