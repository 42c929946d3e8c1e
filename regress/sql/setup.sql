--
-- setup: creates the extension, the shared fixtures and helpers used by the later
-- files (mget, invalidation, ddl, privileges, keys_text, keys_uuid, keys_composite, stats
-- run in this order in one database), and checks what local_cache.enable() accepts and
-- refuses.
--
-- Error CONTEXT lines would quote line numbers of the extension's PL/pgSQL: hide them.
\set SHOW_CONTEXT never

CREATE EXTENSION local_cache;
SELECT extname, extversion = (SELECT default_version FROM pg_available_extensions
                                WHERE name = 'local_cache') AS default_version,
       extnamespace::regnamespace AS schema
  FROM pg_extension WHERE extname = 'local_cache';

-- The segment is as large as the server's setting says (whatever it is: make installcheck runs
-- on the DBA's server).
SELECT memory_budget = pg_size_bytes(current_setting('local_cache.memory')) AS budget_is_setting
  FROM local_cache.stats_global;

--
-- Helpers.
--
-- sql_mget(rel, keys): what local_cache.mget must give, computed with plain SQL in the
-- caller's snapshot (STABLE): rows in input order, NULL for missing and NULL keys.
CREATE FUNCTION sql_mget(rel regclass, keys bigint[]) RETURNS json
LANGUAGE plpgsql STABLE AS $$
DECLARE
    pk name;
    result json;
BEGIN
    IF keys IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT a.attname INTO pk
      FROM pg_index i
      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
     WHERE i.indrelid = rel AND i.indisprimary;
    EXECUTE format('SELECT array_to_json(ARRAY(SELECT lc_row__ FROM unnest($1) WITH ORDINALITY AS u(k, ord) '
                   'LEFT JOIN %s lc_row__ ON lc_row__.%I = u.k ORDER BY u.ord))', rel, pk)
       INTO result USING keys;
    RETURN result;
END $$;

-- try(query): runs a query, returns its SQLSTATE and message with long numbers (OIDs)
-- masked, for errors whose text is not deterministic.
CREATE FUNCTION try(q text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, '[0-9]{4,}', 'NNNN', 'g');
END $$;

GRANT EXECUTE ON FUNCTION sql_mget(regclass, bigint[]), try(text) TO PUBLIC;

-- sql_kmget(rel, keys): sql_mget for primary keys of every kind local_cache keys rows by
-- (smallint, integer, bigint, text, varchar, character(n), uuid, and composite keys of up to
-- 8 of them), computed with plain SQL in the caller's snapshot: for a one-column key a
-- one-dimensional array, for a composite key a two-dimensional one (a row per key, an element
-- per key column in key order). A string element (text, varchar, character, or a domain over
-- one) of a string column is compared as SQL's `column = element` resolves (character(n) =
-- text is text = text: trailing blanks of the element count); any other element names the
-- key it does as SQL's cast from its text form to the column's type (integers: to bigint, so
-- out-of-range keys are missing keys; character(n): to bpchar without a length, whose
-- equality ignores trailing blanks), compared with the column's own equality. A NULL
-- element: no row.
CREATE FUNCTION sql_kmget(rel regclass, keys anyarray) RETURNS json
LANGUAGE plpgsql STABLE AS $$
DECLARE
    conditions text[];
    single boolean;
    result json;
    strings regtype[] := ARRAY['text', 'varchar', 'bpchar']::regtype[];
    element_base regtype;
BEGIN
    IF keys IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT coalesce(nullif(e.typbasetype, 0), e.oid) INTO element_base
      FROM pg_type arr JOIN pg_type e ON e.oid = arr.typelem WHERE arr.oid = pg_typeof(keys);
    SELECT i.indnkeyatts = 1,
           array_agg(format(CASE WHEN coalesce(nullif(t.typbasetype, 0), t.oid) = ANY(strings)
                                      AND element_base = ANY(strings) THEN 'lc_row__.%I = %s'
                                 ELSE 'lc_row__.%I = %s::text::%s' END,
                            a.attname,
                            CASE WHEN i.indnkeyatts = 1 THEN 'u.k'
                                 ELSE format('$1[u.k][array_lower($1, 2) + %s]', c.ord - 1) END,
                            CASE WHEN t.typname IN ('int2', 'int4', 'int8') THEN 'pg_catalog.int8'
                                 ELSE 'pg_catalog.' || quote_ident(t.typname) END)
                     ORDER BY c.ord)
      INTO single, conditions
      FROM pg_index i
      CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS c(attnum, ord)
      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = c.attnum
      JOIN pg_type t ON t.oid = a.atttypid
     WHERE i.indrelid = rel AND i.indisprimary AND c.ord <= i.indnkeyatts
     GROUP BY i.indnkeyatts;
    EXECUTE format('SELECT array_to_json(ARRAY(SELECT lc_row__ FROM %s AS u(k, ord) '
                   'LEFT JOIN %s lc_row__ ON %s ORDER BY u.ord))',
                   CASE WHEN single THEN 'unnest($1) WITH ORDINALITY'
                        ELSE 'generate_subscripts($1, 1) WITH ORDINALITY' END,
                   rel, array_to_string(conditions, ' AND '))
       INTO result USING keys;
    RETURN result;
END $$;

-- lc_kcheck(rel, keys): 'ok' when, in the caller's snapshot, these agree byte for byte with
-- plain SQL (sql_kmget), for keys of every kind:
--   array_to_json over the record[] that mget returns (kept in a subquery, so that
--   nothing rewrites the call),
--   array_to_json(local_cache.mget(...)) as users write it (which the extension may
--   plan as mget_json),
--   local_cache.mget_json(...);
-- otherwise all of them (long values cut).
CREATE FUNCTION lc_kcheck(rel regclass, keys anyarray) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    via_mget text := (SELECT array_to_json(m)
                        FROM (SELECT local_cache.mget(rel, keys) AS m OFFSET 0) s)::text;
    via_call text := array_to_json(local_cache.mget(rel, keys))::text;
    via_json text := local_cache.mget_json(rel, keys)::text;
    via_sql text := sql_kmget(rel, keys)::text;
BEGIN
    IF via_mget IS NOT DISTINCT FROM via_sql AND via_call IS NOT DISTINCT FROM via_sql
       AND via_json IS NOT DISTINCT FROM via_sql THEN
        RETURN 'ok';
    END IF;
    RETURN format('MISMATCH mget=%s array_to_json(mget)=%s mget_json=%s sql=%s',
                  left(via_mget, 300), left(via_call, 300), left(via_json, 300), left(via_sql, 300));
END $$;

-- lc_kstats(rel): the counters of one table that say what the cache did (reset them first
-- with local_cache.reset_stats()).
CREATE FUNCTION lc_kstats(rel regclass, OUT hits bigint, OUT negative_hits bigint, OUT misses bigint,
                          OUT fills bigint, OUT fill_rejections bigint)
LANGUAGE sql STABLE AS $$
    SELECT hits, negative_hits, misses, fills, fill_rejections FROM local_cache.stats WHERE relation = rel
$$;

-- lc_check(rel, keys): lc_kcheck for the bigint[] keys the suites before keys_* pass.
CREATE FUNCTION lc_check(rel regclass, keys bigint[]) RETURNS text
LANGUAGE sql STABLE AS $$ SELECT lc_kcheck(rel, keys) $$;

GRANT EXECUTE ON FUNCTION sql_kmget(regclass, anyarray), lc_kcheck(regclass, anyarray),
    lc_check(regclass, bigint[]), lc_kstats(regclass) TO PUBLIC;

--
-- Shared fixture: public.items (bigint primary key).
--
CREATE TABLE items (
    id bigint PRIMARY KEY,
    name text NOT NULL,
    price numeric(10,2),
    in_stock boolean,
    tags text[],
    attrs jsonb,
    updated_at timestamptz
);
INSERT INTO items
SELECT i, 'item ' || i, i * 1.25, i % 2 = 0, ARRAY['t' || i, 'common'],
       jsonb_build_object('n', i, 'even', i % 2 = 0),
       '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 hour'
  FROM generate_series(1, 20) i;
INSERT INTO items VALUES
    (0, 'zero', 0, false, '{}', '{}', NULL),
    (-1, 'minus one', NULL, NULL, NULL, NULL, NULL),
    (9223372036854775807, 'max', 1, true, '{max}', '[1, 2]', '2024-06-30 12:00:00+00'),
    (-9223372036854775808, 'min', -1, false, '{min}', 'null', '2024-06-30 12:00:00+00');

SELECT local_cache.enable('items');
SELECT relid, resp_prefix FROM local_cache.tables ORDER BY resp_prefix;
-- enable() installs the invalidation triggers, enabled ALWAYS.
SELECT tgname, tgenabled FROM pg_trigger
 WHERE tgrelid = 'items'::regclass AND NOT tgisinternal ORDER BY tgname;

--
-- int4 and int2 primary keys.
--
CREATE TABLE small (id smallint PRIMARY KEY, label text);
INSERT INTO small VALUES (1, 'one'), (2, 'two'), (-32768, 'min'), (32767, 'max');
SELECT local_cache.enable('small');
CREATE TABLE medium (id integer PRIMARY KEY, label text);
INSERT INTO medium VALUES (1, 'one'), (2, 'two'), (-2147483648, 'min'), (2147483647, 'max');
SELECT local_cache.enable('medium', resp_prefix => 'med');
SELECT relid, resp_prefix FROM local_cache.tables ORDER BY resp_prefix;
SELECT local_cache.mget_json('small', '{2,1,3,-32768,32767}');
SELECT local_cache.mget_json('medium', '{2,1,3,-2147483648,2147483647}');
SELECT lc_check('small', '{2,1,3,-32768,32767,NULL}');
SELECT lc_check('medium', '{2,1,3,-2147483648,2147483647,NULL}');
-- Keys out of the column's range are missing keys, never truncated ones
-- (65537 and 4294967297 would wrap around to 1).
SELECT local_cache.mget_json('small', '{65537,-65535,1}');
SELECT local_cache.mget_json('medium', '{4294967297,-4294967295,1}');
SELECT lc_check('small', '{65537,-65535,1}'), lc_check('medium', '{4294967297,-4294967295,1}');

--
-- What enable() refuses.
--
-- Not an ordinary table: wrong_object_type (42809).
CREATE VIEW items_view AS SELECT * FROM items;
SELECT local_cache.enable('items_view');
\echo :LAST_ERROR_SQLSTATE
CREATE MATERIALIZED VIEW items_matview AS SELECT * FROM items;
SELECT local_cache.enable('items_matview');
\echo :LAST_ERROR_SQLSTATE
CREATE SEQUENCE items_seq;
SELECT local_cache.enable('items_seq');
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.enable('items_pkey');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE parted (id bigint PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
SELECT local_cache.enable('parted');
\echo :LAST_ERROR_SQLSTATE
CREATE FOREIGN DATA WRAPPER regress_lc_dummy_fdw;
CREATE SERVER regress_lc_dummy_server FOREIGN DATA WRAPPER regress_lc_dummy_fdw;
CREATE FOREIGN TABLE items_foreign (id bigint, v text) SERVER regress_lc_dummy_server;
SELECT local_cache.enable('items_foreign');
\echo :LAST_ERROR_SQLSTATE
CREATE TYPE items_pair AS (a int, b int);
SELECT local_cache.enable('items_pair');
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.enable('no_such_table');

-- No primary key (a unique index is not enough), a primary key of more than 8 columns.
CREATE TABLE no_pk (id bigint NOT NULL UNIQUE, v text);
SELECT local_cache.enable('no_pk');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE wide_pk (a1 int, a2 int, a3 int, a4 int, a5 int, a6 int, a7 int, a8 int, a9 int,
                      PRIMARY KEY (a1, a2, a3, a4, a5, a6, a7, a8, a9));
SELECT local_cache.enable('wide_pk');
\echo :LAST_ERROR_SQLSTATE

-- A key column of a type whose equality the cache does not know (keys_text.sql, keys_uuid.sql
-- and keys_composite.sql have the types it does), alone or in a composite key; a text key under
-- a nondeterministic collation, whose equality is not equality of bytes.
CREATE TABLE numeric_pk (id numeric PRIMARY KEY, v text);
SELECT local_cache.enable('numeric_pk');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE mixed_pk (a bigint, b timestamptz, PRIMARY KEY (a, b));
SELECT local_cache.enable('mixed_pk');
\echo :LAST_ERROR_SQLSTATE
CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE ci_pk (name text COLLATE case_insensitive PRIMARY KEY);
SELECT local_cache.enable('ci_pk');
\echo :LAST_ERROR_SQLSTATE

-- Row-level security.
CREATE TABLE rls_t (id bigint PRIMARY KEY, owner_name text);
ALTER TABLE rls_t ENABLE ROW LEVEL SECURITY;
SELECT local_cache.enable('rls_t');
\echo :LAST_ERROR_SQLSTATE

-- A refused enable leaves nothing behind: no trigger, no registry row.
SELECT count(*) AS triggers FROM pg_trigger
 WHERE tgrelid IN ('no_pk'::regclass, 'wide_pk'::regclass, 'numeric_pk'::regclass,
                   'mixed_pk'::regclass, 'ci_pk'::regclass, 'rls_t'::regclass);

-- Enabling twice.
SELECT local_cache.enable('items');
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.enable('items', 'another_prefix');

-- Duplicate RESP prefix: explicit, and the default one (the table name) of a table of
-- the same name in another schema.
CREATE TABLE items2 (id bigint PRIMARY KEY, v text);
SELECT local_cache.enable('items2', resp_prefix => 'items');
\echo :LAST_ERROR_SQLSTATE
CREATE SCHEMA other;
CREATE TABLE other.items (id bigint PRIMARY KEY, v text);
SELECT local_cache.enable('other.items');
SELECT local_cache.enable('other.items', 'med');
SELECT count(*) AS triggers FROM pg_trigger
 WHERE tgrelid IN ('items2'::regclass, 'other.items'::regclass);
-- With a free prefix it works.
SELECT local_cache.enable('other.items', 'other_items');
-- An invalid prefix (the registry checks it) is refused too.
\set VERBOSITY terse
SELECT local_cache.enable('items2', 'a:b');
SELECT local_cache.enable('items2', 'a b');
SELECT local_cache.enable('items2', '');
\set VERBOSITY default
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'items2'::regclass;

-- Disable of a table that is not enabled.
SELECT local_cache.disable('items2');
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.disable('items_view');
-- Disable of an enabled table removes it from the registry and its triggers.
SELECT local_cache.disable('other.items');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'other.items'::regclass;
SELECT local_cache.disable('other.items');

SELECT relid, resp_prefix FROM local_cache.tables ORDER BY resp_prefix;

DROP TABLE items2, other.items, no_pk, wide_pk, numeric_pk, mixed_pk, ci_pk, rls_t, parted;
DROP COLLATION case_insensitive;
DROP SCHEMA other;
DROP FOREIGN TABLE items_foreign;
DROP SERVER regress_lc_dummy_server;
DROP FOREIGN DATA WRAPPER regress_lc_dummy_fdw;
DROP TYPE items_pair;
DROP MATERIALIZED VIEW items_matview;
DROP SEQUENCE items_seq;
-- items_view stays for mget.sql.
SELECT relid, resp_prefix FROM local_cache.tables ORDER BY resp_prefix;
