--
-- mget: the result contract of local_cache.mget and local_cache.mget_json.
-- Uses public.items, small and medium from setup.sql.
--
\set SHOW_CONTEXT never

-- The documented call: JSON objects with the real column names, in input order.
SELECT array_to_json(local_cache.mget('public.items'::regclass, '{1,2}'::bigint[])) AS rows;
-- The record[] rendered by array_to_json itself (the subquery keeps the call as is),
-- and pretty-printed.
SELECT array_to_json(m) AS rows
  FROM (SELECT local_cache.mget('public.items'::regclass, '{1,2}'::bigint[]) AS m OFFSET 0) s;
SELECT array_to_json(local_cache.mget('small', '{1,2,3}'), true) AS rows;
SELECT array_to_json(local_cache.mget('small', '{1,2,3}'), false) AS rows;
-- Untyped literals resolve to (regclass, bigint[]).
SELECT array_to_json(local_cache.mget('items', '{3,1}')) AS rows;
-- The record[] itself.
SELECT local_cache.mget('small', '{1,2}');
SELECT pg_typeof(local_cache.mget('small', '{1,2}'));
-- Cold and then warm: the same answer.
SELECT local_cache.flush('items') >= 0 AS flushed;
SELECT lc_check('items', '{1,2,3,4,5}');
SELECT lc_check('items', '{1,2,3,4,5}');

-- Input order, duplicates, missing keys, NULL keys.
SELECT array_to_json(local_cache.mget('items', '{5,1,5,1000,NULL,2,5}')) AS rows;
SELECT lc_check('items', '{5,1,5,1000,NULL,2,5}');
SELECT local_cache.mget_json('items', '{5,1,5,1000,NULL,2,5}');
-- Negative, zero and extreme keys.
SELECT local_cache.mget_json('items', '{-1,0,9223372036854775807,-9223372036854775808,-2}');
SELECT lc_check('items', '{-1,0,9223372036854775807,-9223372036854775808,-2}');
-- Every element of the result, by position.
SELECT i AS ord, m[i] IS NULL AS is_null, row_to_json(m[i])->>'id' AS id
  FROM (SELECT local_cache.mget('items', '{7,NULL,424242,7,0}') AS m) s,
       generate_subscripts(m, 1) i
 ORDER BY i;

-- Empty array in, empty array out.
SELECT local_cache.mget('items', '{}') AS rows, cardinality(local_cache.mget('items', '{}'));
SELECT array_to_json(local_cache.mget('items', '{}')) AS rows, local_cache.mget_json('items', '{}');
-- All-NULL input, all-NULL output.
SELECT local_cache.mget('items', '{NULL,NULL,NULL}') AS rows;
SELECT array_to_json(local_cache.mget('items', '{NULL,NULL,NULL}')) AS rows,
       local_cache.mget_json('items', '{NULL,NULL,NULL}');
-- Only missing keys.
SELECT array_to_json(local_cache.mget('items', '{100,101}')) AS rows,
       local_cache.mget_json('items', '{100,101}');
-- NULL array (or NULL relation) gives NULL.
SELECT local_cache.mget('items', NULL) IS NULL AS null_array,
       local_cache.mget_json('items', NULL) IS NULL AS null_array_json,
       local_cache.mget(NULL, '{1}') IS NULL AS null_rel,
       local_cache.mget_json(NULL, '{1}') IS NULL AS null_rel_json;
-- Multi-dimensional arrays are refused.
SELECT local_cache.mget('items', '{{1,2},{3,4}}');
SELECT local_cache.mget_json('items', '{{1,2},{3,4}}');
SELECT local_cache.mget('items', '{{1}}');
-- Lower bounds other than 1 do not matter: input order still.
SELECT array_to_json(local_cache.mget('items', '[0:2]={3,1,2}')) AS rows,
       local_cache.mget_json('items', '[-5:-4]={2,1}');
-- An int[] argument is coerced to bigint[].
SELECT array_to_json(local_cache.mget('items', ARRAY[4, 3])) AS rows;
-- The same key many times in one call.
SELECT cardinality(m) AS n,
       (SELECT count(*) FROM json_array_elements(array_to_json(m)) r WHERE (r->>'id')::bigint = 6) AS sixes
  FROM (SELECT local_cache.mget('items', array_fill(6::bigint, ARRAY[1000])) AS m) s;

-- Elements expand back to typed rows: with a column definition list (the row
-- types must match the table's), or through JSON. (PostgreSQL itself cannot cast an
-- anonymous record to a named row type, so r::small is not available.)
SELECT * FROM unnest(local_cache.mget('small', '{2,1,3}'))
    AS r(id smallint, label text);
SELECT * FROM ROWS FROM (unnest(local_cache.mget('small', '{2,NULL,1}')) AS (id smallint, label text))
    WITH ORDINALITY AS r(id, label, ord);
SELECT * FROM unnest(local_cache.mget('small', '{2,1}'))
    AS r(id integer, label text);
SELECT (json_populate_record(NULL::items, row_to_json(m[i]))).*
  FROM (SELECT local_cache.mget('items', '{2,1}') AS m) s, generate_subscripts(m, 1) i
 ORDER BY i;
SELECT (jsonb_populate_record(NULL::small, to_jsonb(r))).*
  FROM (SELECT unnest(local_cache.mget('small', '{1,2}')) AS r) s;
SELECT r, r IS NULL AS is_null FROM (SELECT unnest(local_cache.mget('small', '{1,NULL,2,7}')) AS r) s;

--
-- Errors.
--
-- Table that is not enabled: error with a hint about local_cache.enable.
CREATE TABLE not_enabled (id bigint PRIMARY KEY, v text);
INSERT INTO not_enabled VALUES (1, 'x');
SELECT local_cache.mget('not_enabled', '{1}');
SELECT local_cache.mget_json('not_enabled', '{1}');
-- Not a table.
SELECT local_cache.mget('items_view', '{1}');
SELECT local_cache.mget_json('items_view', '{1}');
CREATE SEQUENCE mget_seq;
SELECT local_cache.mget('mget_seq', '{1}');
SELECT local_cache.mget('items_pkey', '{1}');
SELECT local_cache.mget('no_such_table', '{1}');
-- A dropped table, by its old oid.
CREATE TABLE gone (id bigint PRIMARY KEY, v text);
INSERT INTO gone VALUES (1, 'bye');
SELECT local_cache.enable('gone');
SELECT local_cache.mget_json('gone', '{1}');
CREATE TEMP TABLE gone_oid AS SELECT 'gone'::regclass::oid AS oid;
DROP TABLE gone;
SELECT try(format('SELECT local_cache.mget(%s::oid::regclass, ''{1}'')', oid)) FROM gone_oid;
SELECT try(format('SELECT local_cache.mget_json(%s::oid::regclass, ''{1}'')', oid)) FROM gone_oid;
SELECT try(format('SELECT local_cache.mget(%s::oid::regclass, ''{}'')', oid)) FROM gone_oid;
SELECT count(*) AS registered FROM local_cache.tables t, gone_oid g WHERE t.relid::oid = g.oid;
-- Keys of the wrong type.
SELECT local_cache.mget('items', '{a}');
-- array_to_json(mget(...)) is planned as mget_json(...), which returns the same bytes.
EXPLAIN (VERBOSE, COSTS OFF) SELECT array_to_json(local_cache.mget('items', '{1,2}'));
EXPLAIN (VERBOSE, COSTS OFF) SELECT array_to_json(local_cache.mget('items', ARRAY[1, 2]::bigint[]));
-- Elements of another type name keys through their text form (an untyped '{1,2}' is text[]).
SELECT local_cache.mget('items', ARRAY['1', '2']::text[]) = local_cache.mget('items', '{1,2}'::bigint[]) AS same;
SELECT local_cache.mget('items', ARRAY[1.5]);
SELECT local_cache.mget_json('items', '{1.5}');
SELECT local_cache.mget('items', '{99999999999999999999}');
SELECT local_cache.mget('items', '1');

--
-- 100,000 keys in one call, compared with SQL (not printed).
--
CREATE TABLE big (id bigint PRIMARY KEY, v integer NOT NULL, s text NOT NULL);
INSERT INTO big SELECT i, i % 1000, 'row ' || i FROM generate_series(1, 100000) i;
SELECT local_cache.enable('big');
CREATE TEMP TABLE big_keys AS
SELECT ARRAY(SELECT g::bigint FROM generate_series(100000, 1, -1) g) AS k;
-- cold, then warm
SELECT cardinality(m) AS n,
       (SELECT count(*) FROM ROWS FROM (unnest(m) AS (id bigint, v integer, s text)) WITH ORDINALITY AS u(id, v, s, ord)
         WHERE u.id = 100001 - ord AND u.v = (100001 - ord) % 1000 AND u.s = 'row ' || (100001 - ord)) AS in_order,
       (SELECT sum(u.v) FROM unnest(m) AS u(id bigint, v integer, s text)) AS sum_v,
       (SELECT sum(v) FROM big) AS sql_sum_v
  FROM (SELECT local_cache.mget('big', k) AS m FROM big_keys) s;
SELECT cardinality(m) AS n,
       (SELECT count(*) FROM ROWS FROM (unnest(m) AS (id bigint, v integer, s text)) WITH ORDINALITY AS u(id, v, s, ord)
         WHERE u.id = 100001 - ord AND u.v = (100001 - ord) % 1000 AND u.s = 'row ' || (100001 - ord)) AS in_order,
       (SELECT sum(u.v) FROM unnest(m) AS u(id bigint, v integer, s text)) AS sum_v
  FROM (SELECT local_cache.mget('big', k) AS m FROM big_keys) s;
SELECT md5(array_to_json(m)::text) = md5(sql_mget('big', k)::text) AS mget_ok,
       md5(array_to_json(local_cache.mget('big', k))::text) = md5(sql_mget('big', k)::text) AS call_ok,
       md5(local_cache.mget_json('big', k)::text) = md5(sql_mget('big', k)::text) AS mget_json_ok
  FROM (SELECT k, local_cache.mget('big', k) AS m FROM big_keys OFFSET 0) s;
-- 100,000 keys with missing keys, NULLs and duplicates.
CREATE TEMP TABLE big_keys2 AS
SELECT ARRAY(SELECT CASE WHEN g % 7 = 0 THEN NULL WHEN g % 11 = 0 THEN g + 200000
                         ELSE (g % 5000) + 1 END::bigint
               FROM generate_series(1, 100000) g) AS k;
SELECT cardinality(m) AS n,
       md5(array_to_json(m)::text) = md5(sql_mget('big', k)::text) AS mget_ok,
       md5(array_to_json(local_cache.mget('big', k))::text) = md5(sql_mget('big', k)::text) AS call_ok,
       md5(local_cache.mget_json('big', k)::text) = md5(sql_mget('big', k)::text) AS mget_json_ok
  FROM (SELECT k, local_cache.mget('big', k) AS m FROM big_keys2 OFFSET 0) s;

--
-- mget_json renders exactly what array_to_json(mget(...)) renders, for all kinds of
-- column types and contents, cold and warm.
--
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE pair AS (x int, label text);
CREATE DOMAIN positive AS int CHECK (VALUE > 0);
CREATE TABLE typed (
    id bigint PRIMARY KEY,
    t text,
    vc varchar(20),
    ch char(5),
    n numeric,
    b boolean,
    j jsonb,
    js json,
    ia int[],
    ta text[],
    i2 int[][],
    ts timestamptz,
    tsn timestamp,
    d date,
    tm time,
    f8 float8,
    f4 float4,
    iv interval,
    by bytea,
    u uuid,
    m mood,
    p pair,
    pa pair[],
    r int4range,
    dom positive,
    bits bit(4),
    nm name,
    "quote""d \ key é" text,
    g bigint GENERATED ALWAYS AS (id * 10) STORED
);
INSERT INTO typed VALUES
(1, 'plain', 'varchar', 'ab', 123.450, true, '{"b": [1, 2, {"c": null}], "a": "x"}',
 '{ "spaced" :  1 , "dup": 1, "dup": 2 }', '{1,2,3}', '{a,"b c",NULL}', '{{1,2},{3,4}}',
 '2024-02-29 13:14:15.123456+00', '2024-02-29 13:14:15', '2024-02-29', '13:14:15',
 3.141592653589793, 1.5, '1 year 2 mons 3 days 04:05:06', '\x00ff10', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
 'happy', ROW(1, 'one'), ARRAY[ROW(1, 'one'), ROW(2, NULL)]::pair[], '[1,5)', 7, B'1010', 'a_name',
 'weird column'),
(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(3, E'quote " backslash \\ slash / nl \n cr \r tab \t bs \b ff \f ctl \x01 \x1f del \x7f',
 E'é ü 中文', 'abc', -0.0000001, false,
 E'{"k\\"ey": "va\\\\lue\\n", "uni": "é ☃", "ctl": "\\u0001"}',
 E'["raw", "json \\" text", 1e3]',
 '{}', E'{"q\\"uote","back\\\\slash","com,ma","{brace}","","NULL"}', '{}',
 'infinity', '-infinity', 'infinity', '00:00:00', 'NaN', '-Infinity', '-1 days -00:00:01',
 '\x', '00000000-0000-0000-0000-000000000000', 'sad', ROW(NULL, E'a"b\\c'), '{}',
 'empty', 1, B'0000', E'na"me', '€ ü non-ASCII'),
(4, repeat('long ', 2000), '', '', 1e-20, true, '[]', '{}', '{-2147483648,2147483647}',
 '{""}', '{{NULL}}', '1999-12-31 23:59:59.999999-08', '0001-01-01 00:00:00', '4713-01-01 BC',
 '23:59:59.999999', 1e300, 'Infinity', '-178000000 years', '\xdeadbeef',
 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'ok', ROW(-1, ''), ARRAY[NULL]::pair[], '(,)',
 2147483647, B'1111', '', ''),
(5, (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 300) i), 'toasted', 'x', 'NaN', NULL,
 (SELECT jsonb_agg(md5(i::text)) FROM generate_series(1, 200) i), NULL,
 (SELECT array_agg(i) FROM generate_series(1, 2000) i), NULL, NULL, NULL, NULL, NULL, NULL,
 -0.0, 1e-45, '0', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(6, 'x', NULL, NULL, 12345678901234567890.123456789012345678901, NULL, '"just a string"', 'null',
 NULL, NULL, NULL, '2024-07-01 00:00:00+05:30', NULL, NULL, NULL, 1.0000000000000002, 0.1, NULL,
 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT local_cache.enable('typed');
-- Cold.
SELECT local_cache.flush('typed') >= 0 AS flushed;
SELECT lc_check('typed', '{1,2,3,4,5,6,7,NULL,3}');
-- Warm: both orders of filling (mget first, mget_json first).
SELECT lc_check('typed', '{1,2,3,4,5,6,7,NULL,3}');
SELECT local_cache.flush('typed') >= 0 AS flushed;
SELECT local_cache.mget_json('typed', '{1,2,3,4,5,6}') IS NOT NULL AS warmed;
SELECT lc_check('typed', '{6,5,4,3,2,1}');
-- What they render (the long rows 4 and 5 are compared above only). Unaligned, so
-- that the output does not depend on how wide psql finds non-ASCII characters.
\pset format unaligned
SELECT local_cache.mget_json('typed', '{1}');
SELECT local_cache.mget_json('typed', '{2}');
SELECT local_cache.mget_json('typed', '{3}');
SELECT local_cache.mget_json('typed', '{6}');
\pset format aligned
SELECT array_to_json(m)::text = local_cache.mget_json('typed', '{1,2,3,6}')::text AS same_text,
       array_to_json(m)::text
     = (SELECT array_to_json(array_agg(typed_row ORDER BY id)) FROM typed typed_row WHERE id IN (1,2,3,6))::text AS same_as_sql
  FROM (SELECT local_cache.mget('typed', '{1,2,3,6}') AS m OFFSET 0) s;
-- The toasted row, field by field.
SELECT length(r->>'t') AS t_len, (r->>'t') = (SELECT t FROM typed WHERE id = 5) AS t_same,
       json_array_length(r->'ia') AS ia_len, jsonb_array_length((r->'j')::jsonb) AS j_len
  FROM json_array_elements(local_cache.mget_json('typed', '{5}')) r;
SELECT length(r->>'t') AS t_len FROM json_array_elements(array_to_json(local_cache.mget('typed', '{4}'))) r;

-- The rendering follows the session's settings, also for rows already cached.
SELECT lc_check('typed', '{1,3,4,5,6}');
SET TimeZone = 'Asia/Kolkata';
SELECT lc_check('typed', '{1,3,4,5,6}');
SELECT r->'ts' AS ts FROM json_array_elements(local_cache.mget_json('typed', '{1}')) r;
SET extra_float_digits = 0;
SELECT lc_check('typed', '{1,3,4,5,6}');
SELECT r->'f8' AS f8 FROM json_array_elements(local_cache.mget_json('typed', '{1}')) r;
SET IntervalStyle = 'iso_8601';
SELECT lc_check('typed', '{1,3,4,5,6}');
SELECT r->'iv' AS iv FROM json_array_elements(local_cache.mget_json('typed', '{1}')) r;
SET bytea_output = 'escape';
SELECT lc_check('typed', '{1,3,4,5,6}');
SELECT r->'by' AS "by" FROM json_array_elements(local_cache.mget_json('typed', '{1}')) r;
SET DateStyle = 'SQL, DMY';
SELECT lc_check('typed', '{1,3,4,5,6}');
RESET TimeZone;
RESET extra_float_digits;
RESET IntervalStyle;
RESET bytea_output;
RESET DateStyle;
SELECT lc_check('typed', '{1,3,4,5,6}');
SELECT r->'ts' AS ts, r->'f8' AS f8, r->'iv' AS iv, r->'by' AS "by"
  FROM json_array_elements(local_cache.mget_json('typed', '{1}')) r;

-- Changing the composite type of a column changes the rendering of cached rows.
SELECT lc_check('typed', '{1,3,4}');
ALTER TYPE pair RENAME ATTRIBUTE label TO title;
SELECT r->'p' AS p, r->'pa' AS pa FROM json_array_elements(local_cache.mget_json('typed', '{1}')) r;
SELECT lc_check('typed', '{1,3,4}');

--
-- A table whose every column renders the same in every session (the cache may keep
-- its JSON): session settings, and changes of an enum type of a column.
--
CREATE TYPE flavor AS ENUM ('vanilla', 'chocolate');
CREATE DOMAIN short_text AS varchar(10);
CREATE TABLE plain_types (
    id integer PRIMARY KEY,
    i2 smallint,
    i8 bigint,
    n numeric(8,3),
    t text,
    vc varchar(5),
    b boolean,
    j jsonb,
    js json,
    u uuid,
    d date,
    ts timestamp,
    f flavor,
    fa flavor[],
    ta text[],
    dt short_text
);
INSERT INTO plain_types VALUES
(1, 1, 10000000000, 3.5, E'a "quoted"\ttab', 'five', true, '{"k": [1, "x"]}', '{"raw" : 1}',
 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-02-29', '2024-02-29 13:14:15.5', 'vanilla',
 '{vanilla,chocolate}', '{x,NULL}', 'dom'),
(2, -1, -1, -0.001, '', '', false, 'null', 'null', NULL, 'infinity', '-infinity', 'chocolate',
 '{}', '{}', ''),
(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT local_cache.enable('plain_types');
SELECT local_cache.flush('plain_types') >= 0 AS flushed;
SELECT lc_check('plain_types', '{1,2,3,4}');
SELECT lc_check('plain_types', '{3,2,1,4,1}');
SELECT local_cache.mget_json('plain_types', '{1,2,3,4}');
SET DateStyle = 'German';
SET TimeZone = 'UTC';
SET extra_float_digits = -3;
SET IntervalStyle = 'postgres_verbose';
SELECT lc_check('plain_types', '{1,2,3,4}');
RESET DateStyle;
RESET TimeZone;
RESET extra_float_digits;
RESET IntervalStyle;
-- An enum label renamed: the rows render with the new label at once.
SELECT lc_check('plain_types', '{1,2,3}');
ALTER TYPE flavor RENAME VALUE 'vanilla' TO 'vanille';
SELECT local_cache.mget_json('plain_types', '{1,2}');
SELECT lc_check('plain_types', '{1,2,3}');
ALTER TYPE flavor ADD VALUE 'strawberry' BEFORE 'chocolate';
UPDATE plain_types SET f = 'strawberry' WHERE id = 3;
SELECT lc_check('plain_types', '{1,2,3}');
SELECT local_cache.mget_json('plain_types', '{3}');

-- Tables with other key types render the same way.
SELECT local_cache.mget_json('small', '{1,NULL,2,1}'),
       array_to_json(m)::text = local_cache.mget_json('small', '{1,NULL,2,1}')::text AS same
  FROM (SELECT local_cache.mget('small', '{1,NULL,2,1}') AS m OFFSET 0) s;
SELECT lc_check('medium', '{1,2,1,-2147483648}');

-- A C++ exception in an entry point becomes an ERROR of the statement (SQLSTATE XX000), raised
-- by the boundary (extension/boundary.h) after the exception is gone; the session goes on.
-- local_cache.debug_throw_at makes the named entry point throw: mget (a V1 function), planner
-- (the planner hook).
SET local_cache.debug_throw_at = 'mget';
SELECT local_cache.mget('public.items'::regclass, '{1}'::bigint[]);
DO $$
BEGIN
    PERFORM local_cache.mget('public.items'::regclass, '{1}'::bigint[]);
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'caught: % %', SQLSTATE, SQLERRM;
END $$;
SET local_cache.debug_throw_at = 'planner';
SELECT 1;
RESET local_cache.debug_throw_at;
SELECT array_to_json(local_cache.mget('public.items'::regclass, '{1}'::bigint[])) AS rows;
-- Not a setting for everyone.
CREATE ROLE mget_nobody;
SET ROLE mget_nobody;
SET local_cache.debug_throw_at = 'mget';
RESET ROLE;
DROP ROLE mget_nobody;

DROP TABLE not_enabled, big, typed, plain_types;
DROP SEQUENCE mget_seq;
DROP TYPE mood, pair, flavor;
DROP DOMAIN positive, short_text;
