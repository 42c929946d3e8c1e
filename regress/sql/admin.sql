--
-- admin: what a DBA meets around the extension. Which tables enable() accepts, what happens
-- to the registry when tables go, one SQLSTATE for "not enabled", RESP prefixes, the idiom
-- for typed rows that looks every key up once, and the upgrade from 1.0.
--
\set SHOW_CONTEXT never

-- Temporary tables are refused: cached rows are shared by every session.
CREATE TEMP TABLE adm_temp (id bigint PRIMARY KEY, value text);
SELECT local_cache.enable('adm_temp');
-- Unlogged tables are fine.
CREATE UNLOGGED TABLE adm_unlogged (id bigint PRIMARY KEY, value text);
SELECT local_cache.enable('adm_unlogged');
SELECT local_cache.disable('adm_unlogged');

-- Partitioned tables, partitions and inheritance trees are refused: a write through the
-- parent fires no statement trigger of the child.
CREATE TABLE adm_parted (id bigint PRIMARY KEY, value text) PARTITION BY RANGE (id);
CREATE TABLE adm_part1 PARTITION OF adm_parted FOR VALUES FROM (0) TO (100);
SELECT local_cache.enable('adm_parted');
SELECT local_cache.enable('adm_part1');
CREATE TABLE adm_parent (id bigint PRIMARY KEY, value text);
CREATE TABLE adm_child (id bigint PRIMARY KEY, value text) INHERITS (adm_parent);
SELECT local_cache.enable('adm_parent');
SELECT local_cache.enable('adm_child');
DROP TABLE adm_parted, adm_parent CASCADE;

-- "Not enabled" is SQLSTATE 55000 (object_not_in_prerequisite_state) on every path.
CREATE TABLE adm_plain (id bigint PRIMARY KEY, value text);
CREATE SCHEMA adm_fdw;
CREATE FOREIGN TABLE adm_fdw.plain (id bigint, value text) SERVER local_cache OPTIONS (table 'public.adm_plain');
\set VERBOSITY sqlstate
SELECT local_cache.mget('adm_plain', '{1}');
SELECT local_cache.mget_json('adm_plain', '{1}');
SELECT local_cache.disable('adm_plain');
SELECT * FROM adm_fdw.plain WHERE id = 1;
IMPORT FOREIGN SCHEMA public LIMIT TO (adm_plain) FROM SERVER local_cache INTO adm_fdw;
\set VERBOSITY default
DROP SCHEMA adm_fdw CASCADE;

-- RESP prefixes: keys are <prefix>:<id>, so a prefix is not empty and has no ':' or white
-- space. The default, the table's name, is checked the same way.
CREATE TABLE "adm:colon" (id bigint PRIMARY KEY);
SELECT local_cache.enable('"adm:colon"');
SELECT local_cache.enable('"adm:colon"', resp_prefix => 'adm_colon');
SELECT relid, resp_prefix FROM local_cache.tables WHERE relid = '"adm:colon"'::regclass;
DROP TABLE "adm:colon";

-- The registry follows a table however it goes: DROP TABLE, DROP SCHEMA ... CASCADE, DROP OWNED.
CREATE SCHEMA adm_s;
CREATE TABLE adm_s.t (id bigint PRIMARY KEY);
SELECT local_cache.enable('adm_s.t');
CREATE ROLE regress_adm_owner;
CREATE TABLE adm_owned (id bigint PRIMARY KEY);
ALTER TABLE adm_owned OWNER TO regress_adm_owner;
SELECT local_cache.enable('adm_owned');
CREATE TABLE adm_dropped (id bigint PRIMARY KEY);
SELECT local_cache.enable('adm_dropped');
SELECT count(*) AS registered FROM local_cache.tables WHERE relid::text ~ 'adm_';
DROP SCHEMA adm_s CASCADE;
DROP OWNED BY regress_adm_owner;
DROP TABLE adm_dropped;
SELECT count(*) AS registered FROM local_cache.tables WHERE relid::text ~ 'adm_';
SELECT count(*) AS dangling FROM local_cache.tables t
 WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = t.relid);
DROP ROLE regress_adm_owner;

-- Typed rows. unnest(local_cache.mget(...)) AS r(...) looks every key up twice: the planner
-- evaluates the (stable) call once to estimate how many rows unnest returns. Keeping the call
-- in a subquery that is not flattened looks every key up once, with the same rows.
CREATE TABLE adm_items (id bigint PRIMARY KEY, value text);
INSERT INTO adm_items SELECT g, 'v' || g FROM generate_series(1, 10) g;
SELECT local_cache.enable('adm_items');
CREATE FUNCTION adm_lookups() RETURNS bigint LANGUAGE sql
    AS $$SELECT hits + misses FROM local_cache.stats WHERE relation = 'adm_items'::regclass$$;
SELECT adm_lookups() AS before \gset
SELECT * FROM unnest(local_cache.mget('adm_items', '{3,1,999,3}')) AS r(id bigint, value text);
SELECT adm_lookups() - :before AS lookups_of_4_keys;
SELECT adm_lookups() AS before \gset
SELECT r.*
  FROM (SELECT local_cache.mget('adm_items', '{3,1,999,3}') AS rows OFFSET 0) m,
       unnest(m.rows) AS r(id bigint, value text);
SELECT adm_lookups() - :before AS lookups_of_4_keys;
PREPARE adm_typed(bigint[]) AS
SELECT r.* FROM (SELECT local_cache.mget('adm_items', $1) AS rows OFFSET 0) m,
                unnest(m.rows) AS r(id bigint, value text);
SELECT adm_lookups() AS before \gset
EXECUTE adm_typed('{2,4}');
SELECT adm_lookups() - :before AS lookups_of_2_keys;
DEALLOCATE adm_typed;
DROP TABLE adm_items;
DROP FUNCTION adm_lookups();

-- Upgrade from 1.0 (in a database of its own): enable() then refuses what 1.0 accepted, and
-- registry rows of temporary tables are dropped.
CREATE DATABASE regress_lc_upgrade;
\c regress_lc_upgrade
\set SHOW_CONTEXT never
CREATE EXTENSION local_cache VERSION '1.0';
CREATE TABLE up_items (id bigint PRIMARY KEY, value text);
INSERT INTO up_items VALUES (1, 'one');
SELECT local_cache.enable('up_items');
CREATE TEMP TABLE up_temp (id bigint PRIMARY KEY);
SELECT local_cache.enable('up_temp');
SELECT local_cache.mget_json('up_temp', '{1}');
SELECT count(*) AS registered FROM local_cache.tables;
ALTER EXTENSION local_cache UPDATE TO '1.1';
-- The library serves every SQL version: 1.1's statistics views, without negative_hits.
SELECT hits >= 0 AS counted FROM local_cache.stats WHERE relation = 'up_items'::regclass;
SELECT count(*) AS rows FROM local_cache.stats_global;
ALTER EXTENSION local_cache UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'local_cache';
SELECT negative_hits >= 0 AS counted FROM local_cache.stats WHERE relation = 'up_items'::regclass;
SELECT relid FROM local_cache.tables;
SELECT local_cache.mget_json('up_items', '{1}');
-- terse: the hint names this session's temporary schema, pg_temp_N, whose N depends on the other
-- sessions of the server (make installcheck runs on a server that may have some).
\set VERBOSITY terse
SELECT local_cache.mget_json('up_temp', '{1}');
\set VERBOSITY default
SELECT local_cache.enable('up_temp');
CREATE TEMP TABLE up_temp2 (id bigint PRIMARY KEY);
SELECT local_cache.enable('up_temp2');
\c contrib_regression
DROP DATABASE regress_lc_upgrade;
