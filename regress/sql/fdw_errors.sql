--
-- fdw_errors: every way local_cache_fdw refuses a statement or a mapping, with a clear
-- error and nothing changed: writes, row locks, bad mappings and options, sources that do
-- not exist or are not enabled, DDL of the source, privileges.
--
-- Uses its own objects only (schemas lce_src and lce, roles regress_lce_*).
--
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS local_cache;
RESET client_min_messages;

CREATE SCHEMA lce_src;
CREATE SCHEMA lce;
CREATE TABLE lce_src.items (id bigint PRIMARY KEY, value text, qty int);
INSERT INTO lce_src.items SELECT g, 'v' || g, g * 10 FROM generate_series(1, 5) g;
SELECT local_cache.enable('lce_src.items', 'lce_items');
CREATE TABLE lce_src.orders (id int PRIMARY KEY, item_id bigint);
INSERT INTO lce_src.orders VALUES (1, 1), (2, 2), (3, 99);
CREATE FOREIGN TABLE lce.items (id bigint, value text, qty int)
    SERVER local_cache OPTIONS (table 'lce_src.items');
SELECT * FROM lce.items WHERE id = ANY('{1,2}') ORDER BY id;

--
-- The foreign table is read-only: every write names the table to write instead.
--
INSERT INTO lce.items VALUES (10, 'x', 1);
INSERT INTO lce.items SELECT * FROM lce_src.items WHERE false;
INSERT INTO lce.items VALUES (1, 'x', 1) ON CONFLICT DO NOTHING;
UPDATE lce.items SET value = 'x' WHERE id = 1;
UPDATE lce.items SET value = 'x' WHERE false;
UPDATE lce.items i SET value = o.id::text FROM lce_src.orders o WHERE o.item_id = i.id;
DELETE FROM lce.items WHERE id = 1;
DELETE FROM lce.items;
WITH d AS (DELETE FROM lce.items WHERE id = 2 RETURNING *) SELECT count(*) FROM d;
COPY lce.items FROM STDIN;
10	x	1
11	y	2
\.
COPY lce.items (id, value) FROM STDIN WITH (FORMAT csv);
12,z
\.
-- PostgreSQL's own refusals for the statements foreign tables do not support here.
TRUNCATE lce.items;
MERGE INTO lce.items t USING (VALUES (1)) v(k) ON t.id = v.k WHEN MATCHED THEN DELETE;
-- In a function, too.
CREATE FUNCTION lce.write_through() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lce.items SET qty = 0 WHERE id = 3;
END $$;
SELECT lce.write_through();
-- Nothing changed.
SELECT * FROM lce_src.items ORDER BY id;

--
-- Row locks are refused; locking only the other tables of a join is fine.
--
SELECT * FROM lce.items WHERE id = 1 FOR UPDATE;
SELECT * FROM lce.items WHERE id = 1 FOR NO KEY UPDATE;
SELECT * FROM lce.items WHERE id = 1 FOR SHARE;
SELECT * FROM lce.items WHERE id = 1 FOR KEY SHARE;
SELECT * FROM lce.items FOR UPDATE NOWAIT;
SELECT * FROM lce.items FOR SHARE SKIP LOCKED;
SELECT o.id, i.value FROM lce_src.orders o JOIN lce.items i ON i.id = o.item_id FOR UPDATE;
SELECT o.id, i.value FROM lce_src.orders o JOIN lce.items i ON i.id = o.item_id FOR SHARE OF i;
SELECT o.id, i.value FROM lce_src.orders o JOIN lce.items i ON i.id = o.item_id
 ORDER BY o.id FOR UPDATE OF o;

--
-- Mappings: the foreign table's columns must be columns of the source with the same
-- names and types. Checked when a query is planned.
--
-- A column that the source does not have (even if the query does not read it).
CREATE FOREIGN TABLE lce.bad_column (id bigint, nope text)
    SERVER local_cache OPTIONS (table 'lce_src.items');
SELECT * FROM lce.bad_column WHERE id = 1;
SELECT id FROM lce.bad_column;
EXPLAIN (COSTS OFF) SELECT id FROM lce.bad_column WHERE id = 1;
-- Case matters: "Value" is not value.
CREATE FOREIGN TABLE lce.bad_case (id bigint, "Value" text)
    SERVER local_cache OPTIONS (table 'lce_src.items');
SELECT * FROM lce.bad_case;
-- Another type, for a plain column and for the key column.
CREATE FOREIGN TABLE lce.bad_type (id bigint, value integer)
    SERVER local_cache OPTIONS (table 'lce_src.items');
SELECT * FROM lce.bad_type WHERE id = 1;
CREATE FOREIGN TABLE lce.bad_key_type (id integer, value text)
    SERVER local_cache OPTIONS (table 'lce_src.items');
SELECT * FROM lce.bad_key_type WHERE id = 1;
CREATE FOREIGN TABLE lce.bad_typmod (id bigint, value varchar(10))
    SERVER local_cache OPTIONS (table 'lce_src.items');
SELECT * FROM lce.bad_typmod;
-- A column whose type is fixed later works from then on.
ALTER FOREIGN TABLE lce.bad_type ALTER COLUMN value TYPE text;
SELECT * FROM lce.bad_type WHERE id = 1;

-- No "table" option: refused at CREATE, and when ALTER drops it.
CREATE FOREIGN TABLE lce.no_option (id bigint) SERVER local_cache;
ALTER FOREIGN TABLE lce.items OPTIONS (DROP table);

-- Unknown options, on the foreign table, its columns, the server, user mappings and the
-- wrapper.
CREATE FOREIGN TABLE lce.bad_option (id bigint)
    SERVER local_cache OPTIONS (table 'lce_src.items', schema_name 'lce_src');
CREATE FOREIGN TABLE lce.bad_option (id bigint) SERVER local_cache OPTIONS (table_name 'lce_src.items');
CREATE FOREIGN TABLE lce.bad_option (id bigint OPTIONS (column_name 'id'))
    SERVER local_cache OPTIONS (table 'lce_src.items');
ALTER FOREIGN TABLE lce.items OPTIONS (ADD fetch_size '100');
CREATE SERVER regress_lce_server FOREIGN DATA WRAPPER local_cache_fdw OPTIONS (host 'localhost');
CREATE USER MAPPING FOR CURRENT_USER SERVER local_cache OPTIONS (user 'someone');
ALTER FOREIGN DATA WRAPPER local_cache_fdw OPTIONS (ADD debug 'true');
SELECT to_regclass('lce.bad_option') AS not_created;
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'lce.items'::regclass;

-- A source that does not exist: accepted by CREATE FOREIGN TABLE and ALTER (as postgres_fdw
-- does: pg_dump creates foreign tables before the tables they name), refused with a clear
-- error when the foreign table is used. Only the name's syntax is checked at once.
CREATE FOREIGN TABLE lce.no_source (id bigint, value text) SERVER local_cache OPTIONS (table 'lce_src.nope');
CREATE FOREIGN TABLE lce.no_schema (id bigint) SERVER local_cache OPTIONS (table 'no_such_schema.items');
CREATE FOREIGN TABLE lce.bad_name (id bigint) SERVER local_cache OPTIONS (table 'a.b.c.d');
SELECT * FROM lce.no_source WHERE id = 1;
SELECT * FROM lce.no_schema;
EXPLAIN (COSTS OFF) SELECT * FROM lce.no_source WHERE id = 1;
ALTER FOREIGN TABLE lce.items OPTIONS (SET table 'lce_src.nope');
SELECT * FROM lce.items WHERE id = 1;
ALTER FOREIGN TABLE lce.items OPTIONS (SET table 'lce_src.items');
-- Once the table exists and is enabled, the foreign table works (restore order).
CREATE TABLE lce_src.nope (id bigint PRIMARY KEY, value text);
INSERT INTO lce_src.nope VALUES (1, 'restored later');
SELECT * FROM lce.no_source WHERE id = 1;
SELECT local_cache.enable('lce_src.nope');
SELECT * FROM lce.no_source WHERE id = 1;
DROP TABLE lce_src.nope;
DROP FOREIGN TABLE lce.no_source, lce.no_schema;
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'lce.items'::regclass;
SELECT * FROM lce.items WHERE id = 1;

--
-- A source that is not enabled in local_cache: refused at first use, and by IMPORT
-- FOREIGN SCHEMA ... LIMIT TO.
--
CREATE TABLE lce_src.plain (id bigint PRIMARY KEY, value text);
INSERT INTO lce_src.plain VALUES (1, 'p1'), (2, 'p2');
CREATE FOREIGN TABLE lce.plain (id bigint, value text) SERVER local_cache OPTIONS (table 'lce_src.plain');
SELECT * FROM lce.plain WHERE id = 1;
SELECT * FROM lce.plain;
SELECT o.id, p.value FROM lce_src.orders o JOIN lce.plain p ON p.id = o.item_id;
IMPORT FOREIGN SCHEMA lce_src LIMIT TO (plain) FROM SERVER local_cache INTO lce;
CREATE SCHEMA lce_import;
IMPORT FOREIGN SCHEMA lce_src LIMIT TO (items, plain) FROM SERVER local_cache INTO lce_import;
IMPORT FOREIGN SCHEMA lce_src LIMIT TO (no_such_table) FROM SERVER local_cache INTO lce_import;
IMPORT FOREIGN SCHEMA lce_src LIMIT TO (orders) FROM SERVER local_cache INTO lce_import;
SELECT count(*) AS imported FROM pg_class WHERE relnamespace = 'lce_import'::regnamespace;
-- Sources that cannot be enabled at all: a view, a foreign table.
CREATE VIEW lce_src.items_view AS SELECT * FROM lce_src.items;
CREATE FOREIGN TABLE lce.on_view (id bigint, value text) SERVER local_cache OPTIONS (table 'lce_src.items_view');
SELECT * FROM lce.on_view WHERE id = 1;
CREATE FOREIGN TABLE lce.on_foreign (id bigint) SERVER local_cache OPTIONS (table 'lce.items');
SELECT * FROM lce.on_foreign;
-- Enabled later: works.
SELECT local_cache.enable('lce_src.plain', 'lce_plain');
SELECT * FROM lce.plain WHERE id = 1;
IMPORT FOREIGN SCHEMA lce_src LIMIT TO (plain) FROM SERVER local_cache INTO lce_import;
SELECT * FROM lce_import.plain WHERE id = ANY('{2,1}') ORDER BY id;

--
-- local_cache.disable() of the source: queries fail cleanly, also prepared ones, and work
-- again after enable().
--
PREPARE plain_lookup(bigint[]) AS SELECT id, value FROM lce.plain WHERE id = ANY($1) ORDER BY id;
PREPARE plain_scan AS SELECT id, value FROM lce.plain ORDER BY id;
EXECUTE plain_lookup('{1,2}');
SELECT local_cache.disable('lce_src.plain');
SELECT * FROM lce.plain WHERE id = 1;
SELECT * FROM lce.plain;
EXECUTE plain_lookup('{1,2}');
EXECUTE plain_scan;
SELECT local_cache.enable('lce_src.plain', 'lce_plain');
EXECUTE plain_lookup('{1,2}');
EXECUTE plain_scan;

--
-- DROP TABLE of the source: clean errors; a new table of the same name is used once it
-- is enabled.
--
DROP TABLE lce_src.plain;
SELECT * FROM lce.plain WHERE id = 1;
SELECT * FROM lce.plain;
EXECUTE plain_lookup('{1,2}');
EXECUTE plain_scan;
EXPLAIN (COSTS OFF) SELECT * FROM lce.plain WHERE id = 1;
SELECT * FROM lce_import.plain;
CREATE TABLE lce_src.plain (id bigint PRIMARY KEY, value text);
INSERT INTO lce_src.plain VALUES (1, 'new p1');
SELECT * FROM lce.plain WHERE id = 1;
SELECT local_cache.enable('lce_src.plain', 'lce_plain');
SELECT * FROM lce.plain WHERE id = 1;
EXECUTE plain_lookup('{1,2}');
EXECUTE plain_scan;
-- A source of another shape under the old name: the mapping is checked again.
DROP TABLE lce_src.plain;
CREATE TABLE lce_src.plain (id bigint PRIMARY KEY, value integer);
SELECT local_cache.enable('lce_src.plain', 'lce_plain');
SELECT * FROM lce.plain WHERE id = 1;
EXECUTE plain_scan;

--
-- ALTER TABLE of the source: a foreign table that maps a dropped column fails cleanly,
-- one that does not keeps working; ADD COLUMN (with a default, so older rows have no
-- value stored) keeps both working; a type change needs the foreign table changed too.
--
CREATE TABLE lce_src.alt (id bigint PRIMARY KEY, value text, extra int);
INSERT INTO lce_src.alt SELECT g, 'a' || g, g FROM generate_series(1, 4) g;
SELECT local_cache.enable('lce_src.alt', 'lce_alt');
CREATE FOREIGN TABLE lce.alt_all (id bigint, value text, extra int)
    SERVER local_cache OPTIONS (table 'lce_src.alt');
CREATE FOREIGN TABLE lce.alt_no_value (extra int, id bigint)
    SERVER local_cache OPTIONS (table 'lce_src.alt');
PREPARE alt_lookup AS SELECT id, value, extra FROM lce.alt_all WHERE id = ANY('{1,2,3}') ORDER BY id;
EXECUTE alt_lookup;
SELECT * FROM lce.alt_no_value WHERE id = ANY('{1,2,3}') ORDER BY id;
ALTER TABLE lce_src.alt DROP COLUMN value;
SELECT * FROM lce.alt_all WHERE id = 1;
SELECT id FROM lce.alt_all;
EXECUTE alt_lookup;
SELECT * FROM lce.alt_no_value WHERE id = ANY('{1,2,3}') ORDER BY id;
SELECT * FROM lce.alt_no_value ORDER BY id;
ALTER TABLE lce_src.alt ADD COLUMN added int DEFAULT 7;
INSERT INTO lce_src.alt VALUES (5, 5, 8);
SELECT * FROM lce.alt_no_value WHERE id = ANY('{1,5}') ORDER BY id;
ALTER FOREIGN TABLE lce.alt_no_value ADD COLUMN added int;
SELECT * FROM lce.alt_no_value WHERE id = ANY('{1,2,5}') ORDER BY id;
SELECT * FROM lce.alt_no_value WHERE id = ANY('{1,2,5}') ORDER BY id;   -- cached
SELECT * FROM lce.alt_no_value ORDER BY id;
SELECT extra, id, added FROM lce_src.alt ORDER BY id;
ALTER TABLE lce_src.alt ADD COLUMN value text;
EXECUTE alt_lookup;
SELECT * FROM lce.alt_all WHERE id = ANY('{4,5}') ORDER BY id;
ALTER TABLE lce_src.alt ALTER COLUMN extra TYPE bigint;
SELECT * FROM lce.alt_all WHERE id = 1;
EXECUTE alt_lookup;
ALTER FOREIGN TABLE lce.alt_all ALTER COLUMN extra TYPE bigint;
SELECT * FROM lce.alt_all WHERE id = 1;
ALTER TABLE lce_src.alt RENAME COLUMN extra TO renamed;
SELECT * FROM lce.alt_all WHERE id = 1;
SELECT * FROM lce.alt_no_value WHERE id = 1;
ALTER TABLE lce_src.alt RENAME COLUMN renamed TO extra;
SELECT * FROM lce.alt_all WHERE id = 1;
-- Without its primary key the table cannot be cached; a foreign table on it fails cleanly.
ALTER TABLE lce_src.alt DROP CONSTRAINT alt_pkey;
SELECT * FROM lce.alt_all WHERE id = 1;
SELECT * FROM lce.alt_all;

--
-- Privileges: SELECT on the foreign table gives no access by itself; reads need SELECT on
-- the source table, as plain SQL on it would.
--
CREATE ROLE regress_lce_reader;
CREATE ROLE regress_lce_owner;
GRANT USAGE ON SCHEMA lce, lce_src TO regress_lce_reader, regress_lce_owner;
GRANT SELECT ON lce.items TO regress_lce_reader;
SET ROLE regress_lce_reader;
SELECT * FROM lce_src.items WHERE id = 1;
SELECT * FROM lce.items WHERE id = 1;
SELECT * FROM lce.items WHERE id = ANY('{}');
SELECT count(*) FROM lce.items;
SELECT o.id FROM (VALUES (1), (2)) o(id) JOIN lce.items i ON i.id = o.id;
RESET ROLE;
-- Cached or not: the rows are in the cache now.
SELECT count(*) FROM lce.items WHERE id = ANY('{1,2,3}');
SET ROLE regress_lce_reader;
SELECT * FROM lce.items WHERE id = ANY('{1,2,3}');
RESET ROLE;
-- With SELECT on the source as well, it works.
GRANT SELECT ON lce_src.items TO regress_lce_reader;
SET ROLE regress_lce_reader;
SELECT * FROM lce.items WHERE id = ANY('{1,2,3}') ORDER BY id;
SELECT count(*) FROM lce.items;
RESET ROLE;
-- SELECT on the source alone is not enough to read the foreign table.
REVOKE SELECT ON lce.items FROM regress_lce_reader;
SET ROLE regress_lce_reader;
SELECT * FROM lce.items WHERE id = 1;
SELECT * FROM lce_src.items WHERE id = 1;
RESET ROLE;
-- Revoked again: denied again in the same session.
GRANT SELECT ON lce.items TO regress_lce_reader;
REVOKE SELECT ON lce_src.items FROM regress_lce_reader;
SET ROLE regress_lce_reader;
SELECT * FROM lce.items WHERE id = 1;
RESET ROLE;
-- Through a view, PostgreSQL checks the view owner's privileges on the tables the view
-- reads: the reader may read the view without any privilege on the tables. A view on the
-- foreign table must behave like a view on the source table.
GRANT SELECT ON lce_src.items, lce.items TO regress_lce_owner;
CREATE VIEW lce.items_sql_view AS SELECT id, value FROM lce_src.items;
CREATE VIEW lce.items_fdw_view AS SELECT id, value FROM lce.items;
ALTER VIEW lce.items_sql_view OWNER TO regress_lce_owner;
ALTER VIEW lce.items_fdw_view OWNER TO regress_lce_owner;
GRANT SELECT ON lce.items_sql_view, lce.items_fdw_view TO regress_lce_reader;
SET ROLE regress_lce_reader;
SELECT * FROM lce.items_sql_view WHERE id = ANY('{1,2}') ORDER BY id;
SELECT * FROM lce.items_fdw_view WHERE id = ANY('{1,2}') ORDER BY id;
RESET ROLE;
-- And when the view owner may not read the source, neither may the view's readers.
REVOKE SELECT ON lce_src.items FROM regress_lce_owner;
GRANT SELECT ON lce_src.items TO regress_lce_reader;
SET ROLE regress_lce_reader;
SELECT * FROM lce.items_sql_view WHERE id = 1;
SELECT * FROM lce.items_fdw_view WHERE id = 1;
RESET ROLE;

--
-- Clean up.
--
SET client_min_messages = warning;
DROP SCHEMA lce, lce_import CASCADE;
DROP SCHEMA lce_src CASCADE;
RESET client_min_messages;
DROP ROLE regress_lce_reader, regress_lce_owner;
SELECT relid FROM local_cache.tables WHERE relid::text LIKE 'lce%';
