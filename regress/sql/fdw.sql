--
-- fdw: local_cache_fdw returns exactly what the same query on the source table returns.
--
-- A differential suite: every query shape runs once against the foreign tables in schema
-- lc_fdw and once against their source tables in schema lc_src, and the results must be
-- equal (as multisets, or in order where the query orders them). Then the EXPLAIN shapes,
-- ANALYZE, invalidation, own writes, isolation levels and column mappings.
--
-- This file uses its own tables only (schemas lc_src and lc_fdw), so it does not depend on
-- the fixtures of the other tests. Its comparison functions (lc_diff, lc_compare, ...) stay
-- for fdw_keys, which runs next and drops them.
--
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS local_cache;
RESET client_min_messages;

-- The extension creates the wrapper and the server.
SELECT fdwname, fdwhandler::regproc, fdwvalidator::regproc FROM pg_foreign_data_wrapper
 WHERE fdwname = 'local_cache_fdw';
SELECT srvname, fdwname FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
 WHERE srvname = 'local_cache';

--
-- Fixtures.
--
CREATE SCHEMA lc_src;
CREATE SCHEMA lc_fdw;

-- bigint primary key; NULLs in value, qty and note; extreme keys.
CREATE TABLE lc_src.items (
    id bigint PRIMARY KEY,
    value text,
    grp int NOT NULL,
    qty int,
    note text
);
INSERT INTO lc_src.items
SELECT g, CASE WHEN g % 17 = 0 THEN NULL ELSE 'v' || g END, g % 5, (g * 7) % 23,
       CASE WHEN g % 4 = 0 THEN NULL ELSE 'n' || (g % 3) END
  FROM generate_series(1, 200) g;
INSERT INTO lc_src.items VALUES
    (0, 'zero', 0, NULL, NULL),
    (-7, 'minus seven', 2, -1, 'neg'),
    (5000000000, 'five billion', 3, 5, 'big'),
    (9223372036854775807, 'max', 1, 1, NULL),
    (-9223372036854775808, 'min', 1, 1, NULL);

-- A plain table to join with: item_id has NULLs, keys that do not exist and duplicates;
-- item_id4 and item_id2 hold the same keys as integer and smallint (cross-type joins).
CREATE TABLE lc_src.orders (
    id int PRIMARY KEY,
    customer_id int NOT NULL,
    item_id bigint,
    item_id4 int,
    item_id2 smallint,
    amount int NOT NULL
);
INSERT INTO lc_src.orders
SELECT g, g % 20, k, k, CASE WHEN k < 32768 THEN k END, g % 7 + 1
  FROM generate_series(1, 300) g,
       LATERAL (SELECT CASE WHEN g % 11 = 0 THEN NULL
                            WHEN g % 13 = 0 THEN 100000 + g
                            ELSE (g * 7) % 230 END AS k) k;

-- integer primary key.
CREATE TABLE lc_src.medium (id integer PRIMARY KEY, label text);
INSERT INTO lc_src.medium SELECT g, 'm' || g FROM generate_series(1, 50) g;
INSERT INTO lc_src.medium VALUES (-2147483648, 'min'), (2147483647, 'max');

-- More column types, and a row of NULLs.
CREATE TABLE lc_src.typed (
    id bigint PRIMARY KEY,
    t text,
    n numeric(12,3),
    b boolean,
    j jsonb,
    ts timestamptz,
    arr int[],
    vc varchar(20),
    f float8,
    d date
);
INSERT INTO lc_src.typed
SELECT g, 'text ' || g || E' "quoted" \\ ' || repeat('x', g), g * 1.125, g % 2 = 0,
       jsonb_build_object('g', g, 'odd', g % 2 = 1, 'list', jsonb_build_array(g, 'a', NULL)),
       '2024-03-10 12:34:56.789+00'::timestamptz + g * interval '1 day 1 hour',
       ARRAY[g, NULL, -g], 'vc' || g, g / 3.0, date '2024-02-28' + g
  FROM generate_series(1, 30) g;
INSERT INTO lc_src.typed (id) VALUES (100);

SELECT local_cache.enable('lc_src.items', 'lc_items'), local_cache.enable('lc_src.medium', 'lc_medium'),
       local_cache.enable('lc_src.typed', 'lc_typed');
ANALYZE lc_src.items, lc_src.orders, lc_src.medium, lc_src.typed;

-- lc_fdw.items by CREATE FOREIGN TABLE, all columns.
CREATE FOREIGN TABLE lc_fdw.items (id bigint NOT NULL, value text, grp int NOT NULL, qty int, note text)
    SERVER local_cache OPTIONS (table 'lc_src.items');
-- lc_fdw.typed and lc_fdw.medium by IMPORT FOREIGN SCHEMA, with the source's column types
-- (and typmods) and NOT NULLs.
IMPORT FOREIGN SCHEMA lc_src LIMIT TO (typed) FROM SERVER local_cache INTO lc_fdw;
\d lc_fdw.typed
IMPORT FOREIGN SCHEMA lc_src LIMIT TO (medium) FROM SERVER local_cache INTO lc_fdw;
\d lc_fdw.medium
-- A subset of the columns, in another order.
CREATE FOREIGN TABLE lc_fdw.items_subset (note text, value text, id bigint)
    SERVER local_cache OPTIONS (table 'lc_src.items');
-- Without the key column: only full scans.
CREATE FOREIGN TABLE lc_fdw.items_nokey (qty int, value text)
    SERVER local_cache OPTIONS (table 'lc_src.items');
SELECT c.oid::regclass AS foreign_table, ft.ftoptions
  FROM pg_foreign_table ft JOIN pg_class c ON c.oid = ft.ftrelid
 WHERE c.relnamespace = 'lc_fdw'::regnamespace ORDER BY 1::text;

-- Functions with static SQL (PL/pgSQL plan caching), one per schema, so that a query can
-- name them as %5$s.lookup(...).
CREATE FUNCTION lc_fdw.lookup(keys bigint[]) RETURNS SETOF text LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY SELECT i::text FROM lc_fdw.items i WHERE i.id = ANY(keys);
END $$;
CREATE FUNCTION lc_src.lookup(keys bigint[]) RETURNS SETOF text LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY SELECT i::text FROM lc_src.items i WHERE i.id = ANY(keys);
END $$;
CREATE FUNCTION lc_fdw.value_of(k bigint) RETURNS text LANGUAGE plpgsql STABLE AS $$
DECLARE
    v text;
BEGIN
    SELECT i.value INTO v FROM lc_fdw.items i WHERE i.id = k;
    RETURN coalesce(v, '<none>');
END $$;
CREATE FUNCTION lc_src.value_of(k bigint) RETURNS text LANGUAGE plpgsql STABLE AS $$
DECLARE
    v text;
BEGIN
    SELECT i.value INTO v FROM lc_src.items i WHERE i.id = k;
    RETURN coalesce(v, '<none>');
END $$;

--
-- lc_diff(q): runs query q with
--   %1$s = lc_fdw.items   %2$s = lc_fdw.medium   %3$s = lc_fdw.typed
--   %4$s = lc_fdw.items_subset   %5$s = lc_fdw (schema)
-- and with the same names in schema lc_src (%4$s = lc_src.items), and compares the
-- results: as multisets of row texts, or in order when `ordered`. The foreign-table query
-- runs twice: on a cold cache (flushed first unless `flush` is false) and again with the
-- rows cached. An error is a result too (both sides must raise the same error).
-- Returns
--   path:   how the plan reads the foreign tables: keys (lookups with a value known before
--           the scan), param (lookups per outer row), scan (full scan), sorted, distinct;
--   rows:   the number of rows of the source query;
--   result: ok, or the differences.
--
CREATE FUNCTION lc_run(q text, ordered boolean) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
    result text[];
BEGIN
    IF ordered THEN
        EXECUTE format('SELECT coalesce(array_agg(x::text), ''{}'') FROM (%s) x', q) INTO result;
    ELSE
        EXECUTE format('SELECT coalesce(array_agg(x::text ORDER BY x::text), ''{}'') FROM (%s) x', q)
           INTO result;
    END IF;
    RETURN result;
EXCEPTION WHEN OTHERS THEN
    RETURN ARRAY['ERROR ' || SQLSTATE || ': ' || SQLERRM];
END $$;

CREATE FUNCTION lc_paths(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    line text;
    kinds text[] := '{}';
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        IF line ~ 'Cache Scan:' THEN
            kinds := kinds || 'scan'::text;
        ELSIF line ~ 'Cache Keys:.*(\m[a-z_0-9]+\.[a-z_0-9]+\M|\(expression\))' THEN
            kinds := kinds || 'param'::text;
        ELSIF line ~ 'Cache Keys:' THEN
            kinds := kinds || 'keys'::text;
        END IF;
    END LOOP;
    RETURN coalesce((SELECT string_agg(DISTINCT k, '+' ORDER BY k) FROM unnest(kinds) k), 'none');
EXCEPTION WHEN OTHERS THEN
    RETURN 'ERROR ' || SQLSTATE;
END $$;

-- What `got` has that `expected` has not (+) and the reverse (-), as multisets; for
-- ordered results with the same rows, that their order differs.
CREATE FUNCTION lc_delta(got text[], expected text[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN got = expected THEN NULL
                WHEN plus = '{}' AND minus = '{}' THEN 'same rows in another order'
                ELSE left(concat_ws(' ', '+' || plus::text, '-' || minus::text), 400) END
      FROM (SELECT ARRAY(SELECT unnest(got) EXCEPT ALL SELECT unnest(expected) ORDER BY 1) AS plus,
                   ARRAY(SELECT unnest(expected) EXCEPT ALL SELECT unnest(got) ORDER BY 1) AS minus) d
$$;

-- lc_compare(fdw_q, src_q, ...): the query on the foreign tables, cold (its tables flushed
-- first unless flush is false) and warm, against the same query on the source tables; path is
-- how the foreign scans ran. lc_diff and lc_kdiff name the tables of their sections.
CREATE FUNCTION lc_compare(fdw_q text, src_q text, flushed regclass[], ordered boolean, flush boolean,
                           OUT path text, OUT rows int, OUT result text)
LANGUAGE plpgsql AS $$
DECLARE
    cold text[];
    warm text[];
    expected text[];
BEGIN
    IF flush THEN
        PERFORM local_cache.flush(t) FROM unnest(flushed) t;
    END IF;
    cold := lc_run(fdw_q, ordered);
    expected := lc_run(src_q, ordered);
    warm := lc_run(fdw_q, ordered);
    path := lc_paths(fdw_q);
    rows := cardinality(expected);
    IF cold = expected AND warm = expected THEN
        result := 'ok';
    ELSE
        result := concat_ws('; ', 'MISMATCH', 'cold: ' || lc_delta(cold, expected),
                            'warm: ' || lc_delta(warm, expected));
    END IF;
END $$;

CREATE FUNCTION lc_diff(q text, ordered boolean DEFAULT false, flush boolean DEFAULT true,
                        OUT path text, OUT rows int, OUT result text)
LANGUAGE sql AS $$
    SELECT * FROM lc_compare(format(q, 'lc_fdw.items', 'lc_fdw.medium', 'lc_fdw.typed', 'lc_fdw.items_subset', 'lc_fdw'),
                             format(q, 'lc_src.items', 'lc_src.medium', 'lc_src.typed', 'lc_src.items', 'lc_src'),
                             '{lc_src.items,lc_src.medium,lc_src.typed}', ordered, flush)
$$;

-- The helper itself notices differences (a query that is not the same on both sides).
SELECT * FROM lc_diff($$SELECT '%5$s' AS schema$$);
SELECT * FROM lc_diff($$SELECT 1 WHERE '%5$s' = 'lc_src'$$);
SELECT * FROM lc_diff($$SELECT 1/0 FROM %1$s$$);

--
-- Key lookups: id = value.
--
SELECT shape, d.* FROM (VALUES
    ('id = const',                    $$SELECT * FROM %1$s WHERE id = 7$$),
    ('const = id',                    $$SELECT * FROM %1$s WHERE 7 = id$$),
    ('id = missing const',            $$SELECT * FROM %1$s WHERE id = 999999$$),
    ('id = max bigint',               $$SELECT * FROM %1$s WHERE id = 9223372036854775807$$),
    ('id = min bigint',               $$SELECT * FROM %1$s WHERE id = -9223372036854775808$$),
    ('id = 0',                        $$SELECT * FROM %1$s WHERE id = 0$$),
    ('id = negative',                 $$SELECT * FROM %1$s WHERE id = -7$$),
    ('id = NULL',                     $$SELECT * FROM %1$s WHERE id = NULL$$),
    ('id = int4 value',               $$SELECT * FROM %1$s WHERE id = 12::int4$$),
    ('id = int2 value',               $$SELECT * FROM %1$s WHERE id = 12::int2$$),
    ('id = numeric (not a key)',      $$SELECT * FROM %1$s WHERE id = 12.0$$),
    ('id = stable expression',        $$SELECT * FROM %1$s WHERE id = length('twelve chars')$$),
    ('id = volatile expression',      $$SELECT * FROM %1$s WHERE id = 12 + (random() * 0)::int$$),
    ('id = key, value column only',   $$SELECT value FROM %1$s WHERE id = 5$$),
    ('id = key, count(*)',            $$SELECT count(*) FROM %1$s WHERE id = 5$$),
    ('id = key and other condition',  $$SELECT * FROM %1$s WHERE id = 6 AND grp = 1$$),
    ('id = key and false condition',  $$SELECT * FROM %1$s WHERE id = 6 AND grp = 2$$),
    ('id = key and NULL column',      $$SELECT * FROM %1$s WHERE id = 17 AND value IS NULL$$),
    ('two key conditions',            $$SELECT * FROM %1$s WHERE id = 6 AND id = 6::int2$$),
    ('contradicting key conditions',  $$SELECT * FROM %1$s WHERE id = 6 AND id = 7$$),
    ('whole row',                     $$SELECT i FROM %1$s i WHERE id = 8$$),
    ('row_to_json',                   $$SELECT row_to_json(i) FROM %1$s i WHERE id = 8$$),
    ('tableoid is the foreign table', $$SELECT tableoid = '%1$s'::regclass FROM %1$s WHERE id = 8$$)
) s(shape, q), LATERAL lc_diff(q) d;

--
-- Key lookups: id = ANY(array) and IN lists, SQL set semantics (duplicates and NULLs in
-- the array give no extra rows, order does not matter).
--
SELECT shape, d.* FROM (VALUES
    ('ANY const array',               $$SELECT * FROM %1$s WHERE id = ANY('{3,1,2}')$$),
    ('ANY with duplicates',           $$SELECT * FROM %1$s WHERE id = ANY('{3,1,3,3,1}')$$),
    ('ANY with NULLs',                $$SELECT * FROM %1$s WHERE id = ANY('{3,NULL,1,NULL}')$$),
    ('ANY empty array',               $$SELECT * FROM %1$s WHERE id = ANY('{}')$$),
    ('ANY all NULLs',                 $$SELECT * FROM %1$s WHERE id = ANY('{NULL,NULL}')$$),
    ('ANY NULL array',                $$SELECT * FROM %1$s WHERE id = ANY(NULL::bigint[])$$),
    ('ANY missing keys',              $$SELECT * FROM %1$s WHERE id = ANY('{999999,-999999,1000000}')$$),
    ('ANY some missing keys',         $$SELECT * FROM %1$s WHERE id = ANY('{3,1,3,999999}')$$),
    ('ANY extreme keys',              $$SELECT * FROM %1$s WHERE id = ANY('{9223372036854775807,-9223372036854775808,0,5000000000}')$$),
    ('ANY int4 array',                $$SELECT * FROM %1$s WHERE id = ANY('{4,2,4,NULL}'::int4[])$$),
    ('ANY int2 array',                $$SELECT * FROM %1$s WHERE id = ANY('{4,2,4,NULL}'::int2[])$$),
    ('ANY two-dimensional array',     $$SELECT * FROM %1$s WHERE id = ANY('{{1,2},{3,1}}')$$),
    ('ANY ARRAY[] expression',        $$SELECT * FROM %1$s WHERE id = ANY(ARRAY[1, 2 + 3, NULL, 5])$$),
    ('ANY and other condition',       $$SELECT * FROM %1$s WHERE id = ANY('{1,2,3,4,5,6,7,8}') AND qty > 10$$),
    ('ANY and NULL-column condition', $$SELECT * FROM %1$s WHERE id = ANY('{1,2,3,4,5,6,7,8}') AND note IS NULL$$),
    ('ANY and key range',             $$SELECT * FROM %1$s WHERE id = ANY('{1,2,3,4,5,6,7,8}') AND id > 4$$),
    ('ANY twice',                     $$SELECT * FROM %1$s WHERE id = ANY('{1,2,3,4}') AND id = ANY('{3,4,5}')$$),
    ('IN list',                       $$SELECT * FROM %1$s WHERE id IN (10, 20, 10, 30)$$),
    ('IN list with NULL',             $$SELECT * FROM %1$s WHERE id IN (10, NULL, 999999)$$),
    ('IN list of int4',               $$SELECT * FROM %1$s WHERE id IN (10::int4, 11::int4)$$),
    ('IN list, one element',          $$SELECT * FROM %1$s WHERE id IN (10)$$),
    ('NOT IN list (not a key)',       $$SELECT * FROM %1$s WHERE id NOT IN (1, 2, 3) AND id < 10$$),
    ('<> ALL (not a key)',            $$SELECT * FROM %1$s WHERE id <> ALL('{1,2,3}') AND id < 10$$),
    ('OR of keys (not a key)',        $$SELECT * FROM %1$s WHERE id = 1 OR id = 2$$)
) s(shape, q), LATERAL lc_diff(q) d;

--
-- No key condition: full scans of the source table.
--
SELECT shape, d.* FROM (VALUES
    ('all rows',                      $$SELECT * FROM %1$s$$),
    ('count(*)',                      $$SELECT count(*) FROM %1$s$$),
    ('value LIKE',                    $$SELECT * FROM %1$s WHERE value LIKE 'v1%%'$$),
    ('IS NULL',                       $$SELECT id FROM %1$s WHERE value IS NULL$$),
    ('key range',                     $$SELECT * FROM %1$s WHERE id BETWEEN 5 AND 10$$),
    ('key IS NULL',                   $$SELECT * FROM %1$s WHERE id IS NULL$$),
    ('expression on the key',         $$SELECT * FROM %1$s WHERE id + 0 = 5$$),
    ('key in an OR',                  $$SELECT * FROM %1$s WHERE id = 5 OR value = 'v6'$$),
    ('only the key column',           $$SELECT id FROM %1$s$$),
    ('whole rows',                    $$SELECT i FROM %1$s i WHERE grp = 3$$)
) s(shape, q), LATERAL lc_diff(q) d;

--
-- Joins.
--
SELECT shape, d.* FROM (VALUES
    ('inner join, foreign inner',     $$SELECT o.id, i.* FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id WHERE o.customer_id = 3$$),
    ('join on int4 column',           $$SELECT o.id, i.* FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id4 WHERE o.customer_id = 3$$),
    ('join on int2 column',           $$SELECT o.id, i.* FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id2 WHERE o.customer_id = 3$$),
    ('join on expression',            $$SELECT o.id, i.* FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id + 1 WHERE o.customer_id = 4$$),
    ('join, key from equivalence',    $$SELECT o.id, i.* FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id WHERE o.item_id = 28$$),
    ('join and other condition',      $$SELECT o.id, i.* FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id AND i.grp <> mod(o.amount, 5) WHERE o.customer_id < 4$$),
    ('inner join, foreign outer',     $$SELECT i.id, o.id FROM %1$s i JOIN lc_src.orders o ON o.item_id = i.id WHERE i.id = ANY('{21,42,63,84,999}')$$),
    ('join of all rows',              $$SELECT o.id, i.value FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id$$),
    ('join of all rows, int4',        $$SELECT o.id, i.value FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id4$$),
    ('left join, foreign inner',      $$SELECT o.id, i.value FROM lc_src.orders o LEFT JOIN %1$s i ON i.id = o.item_id WHERE o.customer_id IN (0, 11)$$),
    ('left join, foreign outer',      $$SELECT i.id, o.id FROM %1$s i LEFT JOIN lc_src.orders o ON o.item_id = i.id WHERE i.id BETWEEN 1 AND 40$$),
    ('right join',                    $$SELECT o.id, i.value FROM %1$s i RIGHT JOIN lc_src.orders o ON i.id = o.item_id WHERE o.customer_id IN (0, 11)$$),
    ('full join',                     $$SELECT o.id, i.id FROM (SELECT * FROM lc_src.orders WHERE customer_id = 13) o FULL JOIN (SELECT * FROM %1$s WHERE id BETWEEN 1 AND 30) i ON i.id = o.item_id$$),
    ('full join, all rows',           $$SELECT o.id, i.id FROM lc_src.orders o FULL JOIN %1$s i ON i.id = o.item_id$$),
    ('join VALUES with NULL keys',    $$SELECT v.k, i.value FROM (VALUES (1), (2), (2), (NULL), (999999)) v(k) JOIN %1$s i ON i.id = v.k$$),
    ('unnest WITH ORDINALITY',        $$SELECT u.o, i FROM unnest('{3,1,3,NULL,999999}'::bigint[]) WITH ORDINALITY u(k, o) LEFT JOIN %1$s i ON i.id = u.k ORDER BY u.o$$),
    ('self join',                     $$SELECT a.id, b.value FROM %1$s a JOIN %1$s b ON b.id = a.id + 1 WHERE a.id < 10$$),
    ('three-way join',                $$SELECT o.id, i.value, m.label FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id JOIN %2$s m ON m.id = i.qty WHERE o.customer_id = 5$$),
    ('semi join EXISTS',              $$SELECT * FROM %1$s i WHERE EXISTS (SELECT 1 FROM lc_src.orders o WHERE o.item_id = i.id AND o.customer_id = 7)$$),
    ('semi join, foreign inner',      $$SELECT * FROM lc_src.orders o WHERE o.customer_id < 5 AND EXISTS (SELECT 1 FROM %1$s i WHERE i.id = o.item_id AND i.qty > 5)$$),
    ('IN subquery',                   $$SELECT * FROM %1$s WHERE id IN (SELECT item_id FROM lc_src.orders WHERE customer_id = 2)$$),
    ('IN subquery of foreign table',  $$SELECT * FROM lc_src.orders WHERE item_id IN (SELECT id FROM %1$s WHERE grp = 2)$$),
    ('anti join NOT EXISTS',          $$SELECT * FROM %1$s i WHERE i.id < 50 AND NOT EXISTS (SELECT 1 FROM lc_src.orders o WHERE o.item_id = i.id)$$),
    ('anti join, foreign inner',      $$SELECT * FROM lc_src.orders o WHERE NOT EXISTS (SELECT 1 FROM %1$s i WHERE i.id = o.item_id)$$),
    ('NOT IN with NULLs',             $$SELECT * FROM %1$s WHERE id NOT IN (SELECT item_id FROM lc_src.orders)$$),
    ('LATERAL function',              $$SELECT g, x.* FROM generate_series(-1, 12) g, LATERAL (SELECT * FROM %1$s i WHERE i.id = g) x$$)
) s(shape, q), LATERAL lc_diff(q) d;

--
-- Aggregates, subqueries, CTEs, set operations, ordering.
--
SELECT shape, d.* FROM (VALUES
    ('count, sum, avg',               $$SELECT count(*), count(value), sum(qty), avg(qty) FROM %1$s$$),
    ('GROUP BY',                      $$SELECT grp, count(*), sum(qty), min(value), max(id) FROM %1$s GROUP BY grp$$),
    ('GROUP BY on lookups',           $$SELECT grp, count(*), sum(qty) FROM %1$s WHERE id = ANY('{1,2,3,4,5,6,7,8,9,10,11}') GROUP BY grp$$),
    ('GROUP BY HAVING',               $$SELECT qty, count(*) FROM %1$s GROUP BY qty HAVING count(*) > 9$$),
    ('GROUPING SETS',                 $$SELECT grp, note, count(*) FROM %1$s GROUP BY GROUPING SETS ((grp), (note), ())$$),
    ('aggregate over join',           $$SELECT o.customer_id, count(*), sum(i.qty * o.amount) FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id GROUP BY o.customer_id$$),
    ('count(DISTINCT)',               $$SELECT count(DISTINCT grp), count(DISTINCT note) FROM %1$s$$),
    ('array_agg ordered',             $$SELECT array_agg(value ORDER BY id) FROM %1$s WHERE id = ANY('{5,3,1}')$$),
    ('subquery in FROM',              $$SELECT s.grp, s.v FROM (SELECT grp, value AS v FROM %1$s WHERE id < 20 OFFSET 0) s WHERE s.grp = 1$$),
    ('subquery with lookups',         $$SELECT * FROM (SELECT * FROM %1$s WHERE id = ANY('{1,2,3}') OFFSET 0) s WHERE s.qty > 0$$),
    ('CTE',                           $$WITH c AS (SELECT * FROM %1$s WHERE id = ANY('{4,5,6}')) SELECT * FROM c WHERE grp > 0$$),
    ('CTE MATERIALIZED',              $$WITH c AS MATERIALIZED (SELECT * FROM %1$s WHERE id = ANY('{4,5,6}')) SELECT a.id, b.id FROM c a, c b$$),
    ('recursive CTE',                 $$WITH RECURSIVE r(id, depth) AS (SELECT 1::bigint, 0 UNION ALL SELECT i.id, r.depth + 1 FROM r JOIN %1$s i ON i.id = r.id * 2 WHERE r.depth < 10) SELECT * FROM r$$),
    ('ORDER BY LIMIT (full scan)',    $$SELECT * FROM %1$s ORDER BY qty DESC NULLS LAST, id LIMIT 7$$),
    ('ORDER BY LIMIT (lookups)',      $$SELECT * FROM %1$s WHERE id = ANY('{9,3,7,1,5}') ORDER BY id DESC LIMIT 3$$),
    ('ORDER BY OFFSET',               $$SELECT id FROM %1$s WHERE id > 0 ORDER BY id OFFSET 195$$),
    ('DISTINCT',                      $$SELECT DISTINCT grp, note FROM %1$s$$),
    ('DISTINCT ON',                   $$SELECT DISTINCT ON (grp) grp, id, value FROM %1$s ORDER BY grp, id DESC$$),
    ('window functions',              $$SELECT id, grp, row_number() OVER (PARTITION BY grp ORDER BY id), sum(qty) OVER (PARTITION BY grp) FROM %1$s WHERE id BETWEEN 1 AND 30$$),
    ('window over lookups',           $$SELECT id, lag(value) OVER (ORDER BY id) FROM %1$s WHERE id = ANY('{1,5,9,13,999}')$$),
    ('UNION',                         $$SELECT id FROM %1$s WHERE id = ANY('{1,2,3}') UNION SELECT id FROM %1$s WHERE id = ANY('{3,4}')$$),
    ('UNION ALL',                     $$SELECT id FROM %1$s WHERE id = ANY('{1,2,3}') UNION ALL SELECT id FROM %1$s WHERE id = ANY('{3,4}')$$),
    ('INTERSECT',                     $$SELECT grp FROM %1$s WHERE id = ANY('{1,2,3}') INTERSECT SELECT grp FROM %1$s WHERE id > 190$$),
    ('EXCEPT ALL',                    $$SELECT grp FROM %1$s EXCEPT ALL SELECT grp FROM %1$s WHERE id = ANY('{1,2,3}')$$),
    ('CASE and COALESCE on NULLs',    $$SELECT id, coalesce(value, '-'), CASE WHEN note IS NULL THEN 'none' ELSE note END FROM %1$s WHERE id = ANY('{16,17,34,51}')$$),
    ('PL/pgSQL function, plan cache', $$SELECT k, %5$s.lookup(ARRAY[k, k + 1, k, NULL, 999999]) FROM generate_series(1, 12) k$$),
    ('PL/pgSQL scalar lookup',        $$SELECT k, %5$s.value_of(k) FROM generate_series(-8, 20) k$$)
) s(shape, q), LATERAL lc_diff(q) d;
-- Ordered results, compared in order.
SELECT shape, d.* FROM (VALUES
    ('ORDER BY id',                   $$SELECT * FROM %1$s WHERE id = ANY('{9,3,7,1,5,3}') ORDER BY id$$),
    ('ORDER BY value DESC',           $$SELECT value, id FROM %1$s ORDER BY value DESC NULLS FIRST, id$$),
    ('unnest WITH ORDINALITY',        $$SELECT u.o, i.value FROM unnest('{3,1,3,NULL,999999,-7}'::bigint[]) WITH ORDINALITY u(k, o) LEFT JOIN %1$s i ON i.id = u.k ORDER BY u.o$$),
    ('window ORDER BY',               $$SELECT id, rank() OVER (ORDER BY qty) FROM %1$s WHERE id < 25 ORDER BY 2, 1$$)
) s(shape, q), LATERAL lc_diff(q, ordered => true) d;

--
-- integer primary key: keys outside the int4 range are missing keys, never wrapped ones.
--
SELECT shape, d.* FROM (VALUES
    ('int4 pk: id = const',           $$SELECT * FROM %2$s WHERE id = 3$$),
    ('int4 pk: id = bigint const',    $$SELECT * FROM %2$s WHERE id = 3::bigint$$),
    ('int4 pk: id = int2 const',      $$SELECT * FROM %2$s WHERE id = 3::int2$$),
    ('int4 pk: out of range',         $$SELECT * FROM %2$s WHERE id = 4294967299$$),
    ('int4 pk: ANY',                  $$SELECT * FROM %2$s WHERE id = ANY('{3,1,3,NULL,999}')$$),
    ('int4 pk: ANY bigint wrapping',  $$SELECT * FROM %2$s WHERE id = ANY('{4294967297,-4294967295,2,2147483647,-2147483648}'::bigint[])$$),
    ('int4 pk: full scan',            $$SELECT * FROM %2$s WHERE label LIKE 'm1%%'$$),
    ('int4 pk: join on bigint',       $$SELECT o.id, m.label FROM lc_src.orders o JOIN %2$s m ON m.id = o.item_id WHERE o.customer_id < 3$$),
    ('int4 pk: join on int2',         $$SELECT o.id, m.label FROM lc_src.orders o JOIN %2$s m ON m.id = o.item_id2 WHERE o.customer_id < 3$$),
    ('int4 pk: join all rows',        $$SELECT o.id, m.label FROM lc_src.orders o JOIN %2$s m ON m.id = o.item_id$$)
) s(shape, q), LATERAL lc_diff(q) d;

--
-- More column types (text with quotes and backslashes, numeric, bool, jsonb, timestamptz,
-- int[], varchar, float8, date) and a row of NULLs.
--
SELECT shape, d.* FROM (VALUES
    ('typed: lookups',                $$SELECT * FROM %3$s WHERE id = ANY('{1,2,15,30,100,101}')$$),
    ('typed: all rows',               $$SELECT * FROM %3$s$$),
    ('typed: row_to_json',            $$SELECT row_to_json(x) FROM %3$s x WHERE id = ANY('{3,100}')$$),
    ('typed: jsonb condition',        $$SELECT id, j FROM %3$s WHERE j @> '{"odd": true}' AND id = ANY('{1,2,3,4,5}')$$),
    ('typed: jsonb operators',        $$SELECT id, j->'list'->>1, j->>'g' FROM %3$s WHERE id < 6$$),
    ('typed: numeric arithmetic',     $$SELECT id, n * 2, round(n, 1) FROM %3$s WHERE id IN (1, 2, 3, 100)$$),
    ('typed: bool condition',         $$SELECT id FROM %3$s WHERE b AND id = ANY('{1,2,3,4}')$$),
    ('typed: timestamptz',            $$SELECT id, ts, ts AT TIME ZONE 'UTC', extract(epoch FROM ts) FROM %3$s WHERE id = ANY('{1,30,100}')$$),
    ('typed: arrays',                 $$SELECT id, arr, arr[3], cardinality(arr) FROM %3$s WHERE 2 = ANY(arr) OR id = 100$$),
    ('typed: float and date',         $$SELECT id, f, d, d - date '2024-01-01' FROM %3$s WHERE id = ANY('{3,4,30}')$$),
    ('typed: NULL row',               $$SELECT t.*, t IS NULL, num_nulls(t.t, t.n, t.b, t.j, t.ts, t.arr, t.vc, t.f, t.d) FROM %3$s t WHERE id = 100$$)
) s(shape, q), LATERAL lc_diff(q) d;

--
-- A foreign table with a subset of the columns in another order (%4$s is the source table
-- itself on the SQL side), and one without the key column.
--
SELECT shape, d.* FROM (VALUES
    ('subset: lookups',               $$SELECT id, value, note FROM %4$s WHERE id = ANY('{1,2,3,4,17}')$$),
    ('subset: value only',            $$SELECT value FROM %4$s WHERE id = ANY('{1,2,3,4,17}')$$),
    ('subset: full scan',             $$SELECT note, id FROM %4$s WHERE value LIKE '%%9'$$),
    ('subset: join',                  $$SELECT o.id, s.value FROM lc_src.orders o JOIN %4$s s ON s.id = o.item_id WHERE o.customer_id = 8$$),
    ('subset: ROW of its columns',    $$SELECT ROW(s.note, s.value, s.id) FROM %4$s s WHERE id = ANY('{8,9}')$$)
) s(shape, q), LATERAL lc_diff(q) d;
-- The foreign table's whole row has its own shape: (note, value, id).
SELECT s FROM lc_fdw.items_subset s WHERE id = ANY('{8,9}') ORDER BY id;
-- Without the key column every read is a full scan, and a key condition is a filter.
EXPLAIN (COSTS OFF) SELECT * FROM lc_fdw.items_nokey WHERE value = 'v5';
SELECT * FROM lc_fdw.items_nokey WHERE value = ANY('{v5,v6,nothing}') ORDER BY value;
SELECT count(*), sum(qty) FROM lc_fdw.items_nokey;

--
-- Prepared statements: custom plans (the keys are constants) and generic plans
-- (id = ANY($1) with the array known only at execution).
--
PREPARE fdw_any(bigint[]) AS
    SELECT coalesce(array_agg(i::text ORDER BY i.id), '{}') AS r FROM lc_fdw.items i WHERE id = ANY($1);
PREPARE src_any(bigint[]) AS
    SELECT coalesce(array_agg(i::text ORDER BY i.id), '{}') AS r FROM lc_src.items i WHERE id = ANY($1);
PREPARE fdw_eq(bigint) AS SELECT coalesce(array_agg(i::text), '{}') AS r FROM lc_fdw.items i WHERE id = $1;
PREPARE src_eq(bigint) AS SELECT coalesce(array_agg(i::text), '{}') AS r FROM lc_src.items i WHERE id = $1;
PREPARE fdw_eq4(int) AS SELECT coalesce(array_agg(i::text), '{}') AS r FROM lc_fdw.items i WHERE id = $1;
PREPARE src_eq4(int) AS SELECT coalesce(array_agg(i::text), '{}') AS r FROM lc_src.items i WHERE id = $1;
PREPARE fdw_join(int) AS
    SELECT coalesce(array_agg(o.id || ':' || i.value ORDER BY o.id), '{}') AS r
      FROM lc_src.orders o JOIN lc_fdw.items i ON i.id = o.item_id WHERE o.customer_id = $1;
PREPARE src_join(int) AS
    SELECT coalesce(array_agg(o.id || ':' || i.value ORDER BY o.id), '{}') AS r
      FROM lc_src.orders o JOIN lc_src.items i ON i.id = o.item_id WHERE o.customer_id = $1;

SET plan_cache_mode = force_custom_plan;
EXECUTE fdw_any('{3,1,3,NULL,999999}') \gset fdw_
EXECUTE src_any('{3,1,3,NULL,999999}') \gset src_
SELECT 'custom: ANY' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE fdw_any('{}') \gset fdw_
EXECUTE src_any('{}') \gset src_
SELECT 'custom: ANY empty' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE fdw_eq(5) \gset fdw_
EXECUTE src_eq(5) \gset src_
SELECT 'custom: = $1' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE fdw_join(3) \gset fdw_
EXECUTE src_join(3) \gset src_
SELECT 'custom: join' AS shape, :'fdw_r' = :'src_r' AS same;

SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE fdw_eq(1);
EXPLAIN (COSTS OFF) EXECUTE fdw_join(1);
EXECUTE fdw_any('{3,1,3,NULL,999999}') \gset fdw_
EXECUTE src_any('{3,1,3,NULL,999999}') \gset src_
SELECT 'generic: ANY' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE fdw_any('{3,1,3,NULL,999999}') \gset fdw_
SELECT 'generic: ANY again (cached)' AS shape, :'fdw_r' = :'src_r' AS same;
EXECUTE fdw_any('{}') \gset fdw_
EXECUTE src_any('{}') \gset src_
SELECT 'generic: ANY empty' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE fdw_any(NULL) \gset fdw_
EXECUTE src_any(NULL) \gset src_
SELECT 'generic: ANY NULL' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE fdw_any('{NULL,NULL}') \gset fdw_
EXECUTE src_any('{NULL,NULL}') \gset src_
SELECT 'generic: ANY all NULLs' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE fdw_any('{9223372036854775807,-9223372036854775808,5000000000,0}') \gset fdw_
EXECUTE src_any('{9223372036854775807,-9223372036854775808,5000000000,0}') \gset src_
SELECT 'generic: ANY extreme keys' AS shape, :'fdw_r' = :'src_r' AS same;
EXECUTE fdw_eq(5) \gset fdw_
EXECUTE src_eq(5) \gset src_
SELECT 'generic: = $1' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE fdw_eq(NULL) \gset fdw_
EXECUTE src_eq(NULL) \gset src_
SELECT 'generic: = NULL' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE fdw_eq4(-7) \gset fdw_
EXECUTE src_eq4(-7) \gset src_
SELECT 'generic: = $1::int4' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE fdw_join(3) \gset fdw_
EXECUTE src_join(3) \gset src_
SELECT 'generic: join' AS shape, :'fdw_r' = :'src_r' AS same;
EXECUTE fdw_join(11) \gset fdw_
EXECUTE src_join(11) \gset src_
SELECT 'generic: join, other $1' AS shape, :'fdw_r' = :'src_r' AS same;
-- PL/pgSQL static SQL with generic plans.
SELECT shape, d.* FROM (VALUES
    ('generic: PL/pgSQL lookup',      $$SELECT k, %5$s.lookup(ARRAY[k, k + 1, k, NULL, 999999]) FROM generate_series(1, 12) k$$),
    ('generic: PL/pgSQL scalar',      $$SELECT k, %5$s.value_of(k) FROM generate_series(-8, 20) k$$)
) s(shape, q), LATERAL lc_diff(q) d;
RESET plan_cache_mode;

--
-- EXPLAIN: what becomes a lookup.
--
-- id = ANY($1), generic plan:
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE fdw_any('{1,2}');
RESET plan_cache_mode;
-- id = const:
EXPLAIN (COSTS OFF) SELECT * FROM lc_fdw.items WHERE id = 42;
-- id = const with another condition, evaluated on the rows:
EXPLAIN (COSTS OFF) SELECT * FROM lc_fdw.items WHERE id = ANY('{1,2,3}') AND grp = 1;
-- A nested loop probes the cache once per outer row:
EXPLAIN (COSTS OFF)
SELECT o.*, i.value FROM lc_src.orders o JOIN lc_fdw.items i ON i.id = o.item_id WHERE o.customer_id = 3;
-- No key condition: a full scan of the source table:
EXPLAIN (COSTS OFF) SELECT * FROM lc_fdw.items WHERE value LIKE 'v1%';
-- VERBOSE names the cached table.
EXPLAIN (COSTS OFF, VERBOSE) SELECT value FROM lc_fdw.items WHERE id = 42;

-- EXPLAIN ANALYZE counts hits, misses and fills of the scan: cold, then warm.
SELECT local_cache.flush('lc_src.items') >= 0 AS flushed;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT * FROM lc_fdw.items WHERE id = ANY('{1,2,3,3,NULL,999999}');
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT * FROM lc_fdw.items WHERE id = ANY('{1,2,3,3,NULL,999999}');
-- A nested loop looks up each outer row's key: customer 1 has 15 orders, one with a NULL
-- item (no lookup), 14 of distinct items, 11 of which exist (and none is cached yet).
SELECT array_agg(item_id ORDER BY id) AS items,
       array_agg(item_id ORDER BY id) FILTER (WHERE EXISTS (SELECT FROM lc_src.items i WHERE i.id = item_id)) AS existing
  FROM lc_src.orders WHERE customer_id = 1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT o.id, i.value FROM lc_src.orders o JOIN lc_fdw.items i ON i.id = o.item_id WHERE o.customer_id = 1;

--
-- ANALYZE of a foreign table samples the source table's rows.
--
ANALYZE lc_fdw.items;
ANALYZE lc_fdw.items_subset;
ANALYZE lc_fdw.typed;
SELECT relname, reltuples FROM pg_class WHERE oid IN ('lc_fdw.items'::regclass, 'lc_fdw.items_subset'::regclass)
 ORDER BY relname;
-- The sample holds every row, so the statistics equal those of the source table.
SELECT f.attname, f.null_frac = s.null_frac AS null_frac, f.n_distinct = s.n_distinct AS n_distinct,
       f.most_common_vals::text IS NOT DISTINCT FROM s.most_common_vals::text AS mcv,
       f.histogram_bounds::text IS NOT DISTINCT FROM s.histogram_bounds::text AS histogram
  FROM pg_stats f JOIN pg_stats s ON s.schemaname = 'lc_src' AND s.tablename = 'items' AND s.attname = f.attname
 WHERE f.schemaname = 'lc_fdw' AND f.tablename = 'items' ORDER BY f.attname;
SELECT count(*) AS columns_with_stats FROM pg_stats WHERE schemaname = 'lc_fdw' AND tablename = 'typed';

--
-- Parallel query: the source side gets parallel plans; the results agree.
--
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET min_parallel_index_scan_size = 0;
CREATE FUNCTION lc_plan(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    line text;
    result text := '';
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        result := result || line || E'\n';
    END LOOP;
    RETURN result;
END $$;
SELECT lc_plan('SELECT grp, count(*) FROM lc_src.items GROUP BY grp') LIKE '%Gather%' AS source_parallel;
SELECT shape, d.* FROM (VALUES
    ('parallel: all rows',            $$SELECT * FROM %1$s$$),
    ('parallel: aggregate',           $$SELECT grp, count(*), sum(qty) FROM %1$s GROUP BY grp$$),
    ('parallel: lookups',             $$SELECT * FROM %1$s WHERE id = ANY('{3,1,3,NULL,999999}')$$),
    ('parallel: join',                $$SELECT o.id, i.value FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id WHERE o.amount = 3$$),
    ('parallel: join all rows',       $$SELECT o.id, i.value FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id$$),
    ('parallel: aggregate over join', $$SELECT o.customer_id, count(*), sum(i.qty) FROM lc_src.orders o LEFT JOIN %1$s i ON i.id = o.item_id GROUP BY o.customer_id$$),
    ('parallel: semi join',           $$SELECT * FROM lc_src.orders o WHERE EXISTS (SELECT 1 FROM %1$s i WHERE i.id = o.item_id AND i.grp = 2)$$)
) s(shape, q), LATERAL lc_diff(q) d;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET min_parallel_index_scan_size;

--
-- Invalidation: cached rows, then UPDATE, DELETE, INSERT, a key change and TRUNCATE of the
-- source (each committed); the foreign table shows the new state at once.
--
CREATE TABLE lc_src.inv (id bigint PRIMARY KEY, value text, n int);
INSERT INTO lc_src.inv SELECT g, 'inv' || g, g FROM generate_series(1, 10) g;
SELECT local_cache.enable('lc_src.inv', 'lc_inv');
CREATE FOREIGN TABLE lc_fdw.inv (id bigint, value text, n int) SERVER local_cache OPTIONS (table 'lc_src.inv');
CREATE FUNCTION lc_inv_diff(keys bigint[]) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    via_fdw text := (SELECT coalesce(array_agg(i::text ORDER BY i.id), '{}') FROM lc_fdw.inv i WHERE id = ANY(keys));
    via_scan text := (SELECT coalesce(array_agg(i::text ORDER BY i.id), '{}') FROM lc_fdw.inv i WHERE id + 0 = ANY(keys));
    via_sql text := (SELECT coalesce(array_agg(i::text ORDER BY i.id), '{}') FROM lc_src.inv i WHERE id = ANY(keys));
BEGIN
    IF via_fdw = via_sql AND via_scan = via_sql THEN
        RETURN 'ok ' || via_sql;
    END IF;
    RETURN format('MISMATCH fdw=%s scan=%s sql=%s', via_fdw, via_scan, via_sql);
END $$;
SELECT local_cache.flush('lc_src.inv') >= 0 AS flushed;
SELECT lc_inv_diff('{1,2,3,4,5,11}');
SELECT lc_inv_diff('{1,2,3,4,5,11}');   -- now from the cache
SELECT hits > 0 AS cache_hits, entries FROM local_cache.stats WHERE relation = 'lc_src.inv'::regclass;
UPDATE lc_src.inv SET value = 'updated' WHERE id = 1;
SELECT 'after UPDATE' AS step, lc_inv_diff('{1,2,3,4,5,11}');
DELETE FROM lc_src.inv WHERE id = 2;
SELECT 'after DELETE' AS step, lc_inv_diff('{1,2,3,4,5,11}');
INSERT INTO lc_src.inv VALUES (11, 'inserted', 11);
SELECT 'after INSERT' AS step, lc_inv_diff('{1,2,3,4,5,11}');
UPDATE lc_src.inv SET id = 12 WHERE id = 3;
SELECT 'after key change' AS step, lc_inv_diff('{1,2,3,4,5,11,12}');
INSERT INTO lc_src.inv VALUES (4, 'upserted', 0) ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value;
SELECT 'after upsert' AS step, lc_inv_diff('{1,2,3,4,5,11,12}');
-- Through a join too (cached rows probed per outer row).
SELECT shape, d.* FROM (VALUES
    ('join after writes',             $$SELECT g, i.* FROM generate_series(0, 13) g LEFT JOIN lc_fdw.inv i ON i.id = g$$)
) s(shape, q), LATERAL lc_diff(q, flush => false) d;
TRUNCATE lc_src.inv;
SELECT 'after TRUNCATE' AS step, lc_inv_diff('{1,2,3,4,5,11,12}');
INSERT INTO lc_src.inv SELECT g, 'again' || g, g FROM generate_series(1, 5) g;
SELECT 'after re-INSERT' AS step, lc_inv_diff('{1,2,3,4,5,11,12}');
SELECT lc_inv_diff('{1,2,3,4,5,11,12}');
-- A rolled-back write changes nothing.
BEGIN;
UPDATE lc_src.inv SET value = 'rolled back' WHERE id = 1;
ROLLBACK;
SELECT 'after ROLLBACK' AS step, lc_inv_diff('{1,2,3,4,5}');

--
-- Own writes: inside a transaction that wrote the source table, the foreign table shows
-- the transaction's own changes (as the table does).
--
SELECT lc_inv_diff('{1,2,3,4,5,6}');   -- cached
BEGIN;
UPDATE lc_src.inv SET value = 'own update' WHERE id = 1;
DELETE FROM lc_src.inv WHERE id = 2;
INSERT INTO lc_src.inv VALUES (6, 'own insert', 6);
SELECT 'own writes' AS step, lc_inv_diff('{1,2,3,4,5,6}');
SELECT shape, d.* FROM (VALUES
    ('own writes: lookups',           $$SELECT * FROM lc_fdw.inv WHERE id = ANY('{1,2,3,6}')$$),
    ('own writes: full scan',         $$SELECT * FROM lc_fdw.inv$$),
    ('own writes: join',              $$SELECT g, i.value FROM generate_series(0, 7) g JOIN lc_fdw.inv i ON i.id = g$$)
) s(shape, q), LATERAL lc_diff(q, flush => false) d;
SAVEPOINT s1;
UPDATE lc_src.inv SET value = 'in savepoint' WHERE id = 3;
SELECT 'own writes in a savepoint' AS step, lc_inv_diff('{1,2,3,4,5,6}');
ROLLBACK TO SAVEPOINT s1;
SELECT 'after ROLLBACK TO SAVEPOINT' AS step, lc_inv_diff('{1,2,3,4,5,6}');
COMMIT;
SELECT 'after COMMIT' AS step, lc_inv_diff('{1,2,3,4,5,6}');
SELECT lc_inv_diff('{1,2,3,4,5,6}');
-- A cursor keeps the snapshot it was opened with, also after a later write of its own
-- transaction.
BEGIN;
DECLARE c_fdw CURSOR FOR SELECT id, value FROM lc_fdw.inv WHERE id = ANY('{1,3,4}') ORDER BY id;
DECLARE c_sql CURSOR FOR SELECT id, value FROM lc_src.inv WHERE id = ANY('{1,3,4}') ORDER BY id;
UPDATE lc_src.inv SET value = 'after cursor' WHERE id IN (1, 3, 4);
FETCH ALL FROM c_fdw;
FETCH ALL FROM c_sql;
SELECT 'after cursor' AS step, lc_inv_diff('{1,3,4}');
ROLLBACK;

-- Own writes the invalidation trigger has not recorded yet: a row written earlier in the
-- same statement, read by a VOLATILE function (which sees the statement's earlier writes),
-- and an AFTER trigger that fires before local_cache's own trigger (trigger order is by
-- name). The table shows the new row; so must the foreign table.
CREATE FUNCTION lc_src.peek(k bigint) RETURNS text VOLATILE LANGUAGE sql AS
    $$ SELECT coalesce(value, '<null>') FROM lc_src.inv WHERE id = k $$;
CREATE FUNCTION lc_fdw.peek(k bigint) RETURNS text VOLATILE LANGUAGE sql AS
    $$ SELECT coalesce(value, '<null>') FROM lc_fdw.inv WHERE id = k $$;
SELECT lc_inv_diff('{1,3}');   -- cached
BEGIN;
UPDATE lc_src.inv SET value = CASE WHEN id = 1 THEN 'first' ELSE 'second' END
 WHERE id IN (1, 3)
RETURNING id, value, lc_fdw.peek(1) AS fdw_peek_1, lc_src.peek(1) AS sql_peek_1,
          lc_fdw.peek(3) AS fdw_peek_3, lc_src.peek(3) AS sql_peek_3;
ROLLBACK;
CREATE TABLE lc_src.inv_log (id bigint, via_fdw text, via_sql text);
CREATE FUNCTION lc_src.inv_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lc_src.inv_log VALUES (NEW.id, lc_fdw.peek(NEW.id), lc_src.peek(NEW.id));
    RETURN NULL;
END $$;
CREATE TRIGGER a_inv_log AFTER UPDATE ON lc_src.inv FOR EACH ROW EXECUTE FUNCTION lc_src.inv_log();
SELECT lc_inv_diff('{1,3}');   -- cached
UPDATE lc_src.inv SET value = 'logged' WHERE id = 3;
SELECT *, via_fdw = via_sql AS same FROM lc_src.inv_log;
DROP TRIGGER a_inv_log ON lc_src.inv;

--
-- Isolation levels and settings.
--
SELECT lc_inv_diff('{1,2,3,4,5,6}');   -- cached
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT 'repeatable read' AS step, lc_inv_diff('{1,2,3,4,5,6}');
SELECT shape, d.* FROM (VALUES
    ('repeatable read: lookups',      $$SELECT * FROM %1$s WHERE id = ANY('{3,1,3,NULL,999999}')$$),
    ('repeatable read: join',         $$SELECT o.id, i.* FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id WHERE o.customer_id = 3$$),
    ('repeatable read: full scan',    $$SELECT count(*), sum(qty) FROM %1$s$$)
) s(shape, q), LATERAL lc_diff(q, flush => false) d;
UPDATE lc_src.inv SET value = 'rr write' WHERE id = 5;
SELECT 'repeatable read, own write' AS step, lc_inv_diff('{1,2,3,4,5,6}');
COMMIT;
SELECT lc_inv_diff('{1,2,3,4,5,6}');
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT 'serializable' AS step, lc_inv_diff('{1,2,3,4,5,6}');
SELECT shape, d.* FROM (VALUES
    ('serializable: lookups',         $$SELECT * FROM %1$s WHERE id = ANY('{3,1,3,NULL,999999}')$$),
    ('serializable: join',            $$SELECT o.id, i.* FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id WHERE o.customer_id = 3$$)
) s(shape, q), LATERAL lc_diff(q, flush => false) d;
COMMIT;
SET local_cache.enabled = off;
SELECT 'local_cache.enabled = off' AS step, lc_inv_diff('{1,2,3,4,5,6}');
SELECT shape, d.* FROM (VALUES
    ('enabled off: lookups',          $$SELECT * FROM %1$s WHERE id = ANY('{3,1,3,NULL,999999}')$$),
    ('enabled off: join',             $$SELECT o.id, i.* FROM lc_src.orders o JOIN %1$s i ON i.id = o.item_id WHERE o.customer_id = 3$$)
) s(shape, q), LATERAL lc_diff(q, flush => false) d;
RESET local_cache.enabled;

--
-- Writing another table with rows read through the foreign table.
--
CREATE TABLE lc_src.order_notes AS SELECT id, item_id, NULL::text AS note FROM lc_src.orders WHERE customer_id = 4;
CREATE TABLE lc_src.order_notes2 AS SELECT * FROM lc_src.order_notes;
UPDATE lc_src.order_notes n SET note = i.value FROM lc_fdw.items i WHERE i.id = n.item_id;
UPDATE lc_src.order_notes2 n SET note = i.value FROM lc_src.items i WHERE i.id = n.item_id;
SELECT (SELECT array_agg(n::text ORDER BY id) FROM lc_src.order_notes n)
     = (SELECT array_agg(n::text ORDER BY id) FROM lc_src.order_notes2 n) AS same_update;
INSERT INTO lc_src.order_notes SELECT -id, id, value FROM lc_fdw.items WHERE id = ANY('{1,2}');
INSERT INTO lc_src.order_notes2 SELECT -id, id, value FROM lc_src.items WHERE id = ANY('{1,2}');
SELECT (SELECT array_agg(n::text ORDER BY id) FROM lc_src.order_notes n)
     = (SELECT array_agg(n::text ORDER BY id) FROM lc_src.order_notes2 n) AS same_insert;
-- FOR UPDATE of the other table only is allowed.
SELECT o.id, i.value FROM lc_src.orders o JOIN lc_fdw.items i ON i.id = o.item_id
 WHERE o.customer_id = 1 ORDER BY o.id FOR UPDATE OF o;

--
-- IMPORT FOREIGN SCHEMA of every enabled table of a schema, and EXCEPT.
--
CREATE SCHEMA lc_fdw_all;
IMPORT FOREIGN SCHEMA lc_src FROM SERVER local_cache INTO lc_fdw_all;
SELECT c.relname, ft.ftoptions FROM pg_foreign_table ft JOIN pg_class c ON c.oid = ft.ftrelid
 WHERE c.relnamespace = 'lc_fdw_all'::regnamespace ORDER BY 1;
SELECT count(*) FROM lc_fdw_all.items;
SELECT * FROM lc_fdw_all.medium WHERE id = ANY('{1,2}') ORDER BY id;
CREATE SCHEMA lc_fdw_except;
IMPORT FOREIGN SCHEMA lc_src EXCEPT (items, typed) FROM SERVER local_cache INTO lc_fdw_except;
SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'lc_fdw_except'::regnamespace ORDER BY 1;
-- Tables of the schema that are not enabled (orders) are not imported.
SELECT to_regclass('lc_fdw_all.orders') IS NULL AS orders_not_imported;

--
-- Key values the executor computes while the query runs (PARAM_EXEC parameters): the
-- result of an uncorrelated subquery (an initplan), and the outer row's value in a
-- correlated subquery or a LATERAL subquery that is not pulled up. The plan shape of these
-- lookups is not shown (only rows and result). Kept last, so that a failure that ends the
-- session here cannot hide the results of the other sections.
--
SELECT shape, d.rows, d.result FROM (VALUES
    ('id = int4 column of a row',     $$SELECT * FROM %1$s WHERE id = (SELECT item_id4 FROM lc_src.orders WHERE id = 1)$$),
    ('id = scalar subquery',          $$SELECT * FROM %1$s WHERE id = (SELECT max(id) FROM %1$s WHERE id < 100)$$),
    ('ANY array from subquery',       $$SELECT * FROM %1$s WHERE id = ANY(ARRAY(SELECT item_id FROM lc_src.orders WHERE customer_id = 3))$$),
    ('ANY 300 keys',                  $$SELECT * FROM %1$s WHERE id = ANY(ARRAY(SELECT g FROM generate_series(-50, 249) g))$$),
    ('correlated scalar subquery',    $$SELECT o.id, (SELECT value FROM %1$s i WHERE i.id = o.item_id) FROM lc_src.orders o WHERE o.customer_id = 9$$),
    ('LATERAL with LIMIT',            $$SELECT o.id, x.* FROM lc_src.orders o, LATERAL (SELECT * FROM %1$s i WHERE i.id = o.item_id LIMIT 1) x WHERE o.customer_id = 6$$),
    ('LATERAL, array per row',        $$SELECT o.id, x.* FROM lc_src.orders o, LATERAL (SELECT * FROM %1$s i WHERE i.id = ANY(ARRAY[o.item_id, o.item_id + 1, NULL]) OFFSET 0) x WHERE o.customer_id = 6$$),
    ('LEFT JOIN LATERAL',             $$SELECT o.id, x.* FROM lc_src.orders o LEFT JOIN LATERAL (SELECT value FROM %1$s i WHERE i.id = o.item_id AND i.grp = 1 OFFSET 0) x ON true WHERE o.customer_id = 6$$),
    ('correlated EXISTS subplan',     $$SELECT o.id FROM lc_src.orders o WHERE o.customer_id < 3 AND EXISTS (SELECT 1 FROM %1$s i WHERE i.id = o.item_id AND i.grp > 1 OFFSET 0)$$)
) s(shape, q), LATERAL lc_diff(q) d;

--
-- Clean up.
--
SET client_min_messages = warning;
DROP SCHEMA lc_fdw_all, lc_fdw_except CASCADE;
DROP SCHEMA lc_fdw CASCADE;
DROP SCHEMA lc_src CASCADE;
RESET client_min_messages;
SELECT relid FROM local_cache.tables WHERE relid::text LIKE 'lc_%';
