--
-- keys_composite: tables keyed by primary keys of 2 to 8 columns of the types the cache
-- knows. Keys are two-dimensional arrays, a row per key and an element per key column in the
-- key's order (not the table's); a NULL element makes a NULL key. For every key, mget and
-- mget_json return exactly the row plain SQL finds by it (sql_kmget in setup.sql), cold and
-- warm, after every kind of write, DDL, and inside writing transactions. Columns whose
-- values could run into each other ('ab' + 'c' and 'a' + 'bc', ':' and '\' inside values,
-- lengths around 128 and 16384 bytes) are distinct keys.
--
\set SHOW_CONTEXT never

--
-- (order_id bigint, line_no int), declared in the other order than the table's columns.
--
CREATE TABLE co_lines (line_no int, item text NOT NULL, order_id bigint, qty int,
                       PRIMARY KEY (order_id, line_no));
INSERT INTO co_lines SELECT l, 'item ' || o || '/' || l, o, o * 10 + l
  FROM generate_series(1, 20) o, generate_series(1, 3) l;
INSERT INTO co_lines VALUES
    (2147483647, 'max', 9223372036854775807, 1), (-2147483648, 'min', -9223372036854775808, 2),
    (0, 'zero', 0, 3);
SELECT local_cache.enable('co_lines');
CREATE TEMP TABLE cl_keys AS
SELECT '{{1,1},{1,2},{2,1},{20,3},{3,1},{1,3},{9223372036854775807,2147483647},{-9223372036854775808,-2147483648},{0,0},
         {NULL,1},{1,NULL},{NULL,NULL},{1,2},{2,1},
         {1,4},{21,1},{0,1},{1,0},{1,4294967297},{2147483647,9223372036854775807},{1,9},{3,5},{5,3},{21,2},{22,1},{22,2}}'::bigint[] AS k;

-- Cold (the first of lc_kcheck's three reads fills, the other two hit), then warm.
SELECT local_cache.flush('co_lines') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT lc_kcheck('co_lines', k) AS cold FROM cl_keys;
SELECT * FROM lc_kstats('co_lines');
SELECT lc_kcheck('co_lines', k) AS warm FROM cl_keys;
SELECT * FROM lc_kstats('co_lines');
-- The same keys as int[], numeric[] and text[]: integers of any width as they are, others by
-- their text form.
SELECT lc_kcheck('co_lines', k::text[]) AS as_text, lc_kcheck('co_lines', k::numeric[]) AS as_numeric
  FROM cl_keys;
SELECT lc_kcheck('co_lines', '{{1,1},{2,3},{NULL,2},{3,2}}'::int[]) AS as_int,
       lc_kcheck('co_lines', '{{1,1},{2,3},{NULL,2},{3,2}}'::int2[]) AS as_int2;

-- What the rows are: input order, key order (order_id first), duplicates, NULL for NULL and
-- missing keys; a line number beyond integer's range names no row (is not wrapped).
SELECT local_cache.mget_json('co_lines', '{{1,2},{2,1},{NULL,1},{1,4},{1,2},{1,4294967297}}');
SELECT array_to_json(local_cache.mget('co_lines', ARRAY[[20, 3], [3, 20]])) AS rows;
SELECT u.ord, u.order_id, u.line_no, u.item
  FROM (SELECT local_cache.mget('co_lines', '{{3,2},{NULL,NULL},{2,3}}'::int[]) AS m OFFSET 0) s,
       ROWS FROM (unnest(s.m) AS (line_no int, item text, order_id bigint, qty int))
           WITH ORDINALITY AS u(line_no, item, order_id, qty, ord)
 ORDER BY u.ord;
-- Empty, NULL and all-NULL arrays; other lower bounds.
SELECT local_cache.mget_json('co_lines', '{}'), local_cache.mget('co_lines', '{}') AS mget,
       local_cache.mget_json('co_lines', NULL::int[]) IS NULL AS null_json,
       local_cache.mget('co_lines', NULL::int[]) IS NULL AS null_mget,
       local_cache.mget_json('co_lines', '{{NULL,NULL},{NULL,1}}') AS all_null;
SELECT local_cache.mget_json('co_lines', '[0:1][-1:0]={{5,1},{1,5}}');
SELECT lc_kcheck('co_lines', '[0:1][-1:0]={{5,1},{1,5}}'::int[]);

-- A thousand keys (present, missing, NULL, repeated), cold and warm.
CREATE TEMP TABLE cl_many AS
SELECT ARRAY(SELECT ARRAY[CASE WHEN g % 11 = 0 THEN NULL ELSE g % 23 END, g % 5]
               FROM generate_series(1, 1000) g) AS k;
SELECT array_dims(k) FROM cl_many;
SELECT local_cache.flush('co_lines') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT lc_kcheck('co_lines', k) AS cold, lc_kcheck('co_lines', k) AS warm FROM cl_many;
SELECT * FROM lc_kstats('co_lines');

--
-- Errors: arrays of the wrong shape (SQLSTATE 2202E), elements that are no value of their
-- column (the error names the key and the column).
--
SELECT local_cache.mget('co_lines', '{1,2}');
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.mget_json('co_lines', ARRAY[1, 2]);
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.mget_json('co_lines', '{{{1,2}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.mget_json('co_lines', '{{1,2,3}}');
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.mget('co_lines', '{{1},{2}}');
\echo :LAST_ERROR_SQLSTATE
\set SHOW_CONTEXT errors
SELECT local_cache.mget_json('co_lines', '{{1,1},{2,x}}');
SELECT local_cache.mget_json('co_lines', '{{1,1},{2,2},{1.5,1}}');
SELECT local_cache.mget_json('co_lines', '{{1,1},{99999999999999999999,1}}');
SELECT local_cache.mget_json('co_lines', ARRAY[[true, false]]);
\set SHOW_CONTEXT never

--
-- (tenant text, id uuid).
--
CREATE TABLE co_tenant (tenant text, id uuid, v text NOT NULL, PRIMARY KEY (tenant, id));
INSERT INTO co_tenant VALUES
    ('acme', '00000000-0000-0000-0000-000000000001', 'acme 1'),
    ('acme', '00000000-0000-0000-0000-000000000002', 'acme 2'),
    ('globex', '00000000-0000-0000-0000-000000000001', 'globex 1'),
    ('', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'no tenant'),
    ('a:b', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'colon tenant'),
    ('ünï', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'multibyte tenant');
SELECT local_cache.enable('co_tenant');
CREATE TEMP TABLE ct_keys AS
SELECT ARRAY[['acme', '00000000-0000-0000-0000-000000000001'], ['acme', '00000000-0000-0000-0000-000000000002'],
             ['globex', '00000000-0000-0000-0000-000000000001'], ['', 'ffffffff-ffff-ffff-ffff-ffffffffffff'],
             ['a:b', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'], ['ünï', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'],
             ['ACME', '00000000-0000-0000-0000-000000000001'], ['acme ', '00000000-0000-0000-0000-000000000001'],
             ['acme', '00000000000000000000000000000001'], ['globex', '{00000000-0000-0000-0000-000000000001}'],
             ['a:b', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'], ['a', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'],
             ['globex', '00000000-0000-0000-0000-000000000002'], [NULL, '00000000-0000-0000-0000-000000000001'],
             ['acme', NULL], ['initech', '00000000-0000-0000-0000-000000000001'], ['ACME', 'ffffffff-ffff-ffff-ffff-ffffffffffff'],
             ['acme', '00000000-0000-0000-0000-000000000003']] AS k;
SELECT local_cache.flush('co_tenant') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT lc_kcheck('co_tenant', k) AS cold FROM ct_keys;
SELECT * FROM lc_kstats('co_tenant');
SELECT lc_kcheck('co_tenant', k) AS warm, lc_kcheck('co_tenant', k::varchar[]) AS as_varchar FROM ct_keys;
SELECT r->>'v' AS v FROM ct_keys, json_array_elements(local_cache.mget_json('co_tenant', k)) r;
\set SHOW_CONTEXT errors
SELECT local_cache.mget_json('co_tenant', '{{acme,00000000-0000-0000-0000-000000000001},{acme,1},{acme,2}}');
SELECT local_cache.mget_json('co_tenant', ARRAY[[1, 2]]);
\set SHOW_CONTEXT never
SELECT local_cache.mget_json('co_tenant', '{acme,00000000-0000-0000-0000-000000000001}');
\echo :LAST_ERROR_SQLSTATE

--
-- (a int, b text, c char(3)): as character keys (k::char(8)[]) trailing blanks of c do not
-- count, of b they do; as text keys (the text[] every composite key can be given as) they
-- count in both (c = text is text = text, as in SQL).
--
CREATE TABLE co_mixed (a int, b text, c char(3), v text NOT NULL, PRIMARY KEY (a, b, c));
INSERT INTO co_mixed VALUES
    (1, 'x', 'ab', 'one'), (1, 'x:y', 'a', 'two'), (1, 'x:', 'y', 'three'), (1, 'x', ':y', 'four'),
    (2, '', '', 'five'), (2, ' ', ' a', 'six'), (1, 'x ', 'ab', 'seven'), (1, 'x\', 'y', 'eight'),
    (1, 'x', '\y', 'nine'), (-1, 'é', 'ü', 'ten');
-- 'ab ' is the key 'ab' of c.
INSERT INTO co_mixed VALUES (1, 'x', 'ab ', 'duplicate');
SELECT local_cache.enable('co_mixed');
CREATE TEMP TABLE cm_keys AS
SELECT ARRAY[['1', 'x', 'ab'], ['1', 'x:y', 'a'], ['1', 'x:', 'y'], ['1', 'x', ':y'], ['2', '', ''],
             ['2', ' ', ' a'], ['1', 'x ', 'ab'], ['1', 'x\', 'y'], ['1', 'x', '\y'], ['-1', 'é', 'ü'],
             ['1', 'x', 'ab '], ['1', 'x', 'ab      '], ['2', '', '   '], ['1', 'x:y', 'a  '], ['-1', 'é', 'ü  '],
             ['1', 'x  ', 'ab'], ['1', 'x', ' ab'], ['1', 'x', 'y'], ['1', 'x:', ':y'], ['1', 'x\y', ''],
             ['1', 'x', 'abc'], ['1', 'x', 'abcd'], ['2', ' ', 'a'], [NULL, 'x', 'ab'], ['1', NULL, 'ab'],
             ['1', 'x', NULL], ['3', 'new', 'key'], ['1', 'x', 'zz'], ['1', 'x:  ', 'y']] AS k;
SELECT local_cache.flush('co_mixed') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT lc_kcheck('co_mixed', k) AS cold FROM cm_keys;
SELECT * FROM lc_kstats('co_mixed');
SELECT lc_kcheck('co_mixed', k) AS warm, lc_kcheck('co_mixed', k::varchar[]) AS as_varchar,
       lc_kcheck('co_mixed', k::char(8)[]) AS as_char8
  FROM cm_keys;
SELECT ord, r->>'v' AS v FROM cm_keys, json_array_elements(local_cache.mget_json('co_mixed', k)) WITH ORDINALITY j(r, ord)
 ORDER BY ord;

--
-- (x text, y text): keys whose columns' bytes run into each other are distinct keys; column
-- lengths around the length prefix's byte boundaries (128, 16384).
--
CREATE TABLE co_tt (x text, y text, v text NOT NULL, PRIMARY KEY (x, y));
INSERT INTO co_tt VALUES
    ('ab', 'c', 'ab|c'), ('a', 'bc', 'a|bc'), ('abc', '', 'abc|'), ('', 'abc', '|abc'), ('', '', '|'),
    ('a:b', 'c', 'a:b|c'), ('a', 'b:c', 'a|b:c'), ('a\', 'b', 'a\|b'), ('a', '\b', 'a|\b'),
    ('a\:b', 'c', 'a\:b|c'), ('a:', 'b', 'a:|b'), ('a', ':b', 'a|:b'), ('é', '中', 'é|中'),
    ('x', 'NULL', 'x|NULL'),
    (repeat('x', 127), 'y', '127|y'), (repeat('x', 128), 'y', '128|y'), (repeat('x', 127), 'xy', '127|xy'),
    (repeat('x', 128), '', '128|'), (repeat('x', 16383), 'y', '16383|y'), (repeat('x', 16384), 'y', '16384|y'),
    (repeat('x', 16383), 'xy', '16383|xy'), ('y', repeat('x', 200), 'y|200');
SELECT local_cache.enable('co_tt');
CREATE TEMP TABLE ctt_keys AS
SELECT ARRAY[['ab', 'c'], ['a', 'bc'], ['abc', ''], ['', 'abc'], ['', ''], ['a:b', 'c'], ['a', 'b:c'],
             ['a\', 'b'], ['a', '\b'], ['a\:b', 'c'], ['a:', 'b'], ['a', ':b'], ['é', '中'], ['x', 'NULL'],
             ['x', NULL], [repeat('x', 127), 'y'], [repeat('x', 128), 'y'], [repeat('x', 127), 'xy'],
             [repeat('x', 128), ''], [repeat('x', 16383), 'y'], [repeat('x', 16384), 'y'], [repeat('x', 16383), 'xy'],
             ['y', repeat('x', 200)],
             ['abc', 'c'], ['a', 'b'], ['a', 'c'], ['ab', ''], ['', 'ab'], ['a:b:c', ''], ['a', 'b\:c'],
             ['a\\', 'b'], ['a\b', ''], [repeat('x', 129), ''], [repeat('x', 127), ''], [repeat('x', 126), 'xy'],
             [repeat('x', 16385), ''], [repeat('x', 16384), ''], ['y', repeat('x', 199)], ['y', repeat('x', 201)]] AS k;
SELECT local_cache.flush('co_tt') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT lc_kcheck('co_tt', k) AS cold FROM ctt_keys;
SELECT * FROM lc_kstats('co_tt');
SELECT lc_kcheck('co_tt', k) AS warm FROM ctt_keys;
SELECT ord, r->>'v' AS v FROM ctt_keys, json_array_elements(local_cache.mget_json('co_tt', k)) WITH ORDINALITY j(r, ord)
 ORDER BY ord;

--
-- Eight columns, one of each kind (and text twice).
--
CREATE TABLE co_eight (k1 smallint, k2 int, k3 bigint, k4 text, k5 varchar(10), k6 char(4), k7 uuid, k8 text,
                       v text NOT NULL, PRIMARY KEY (k1, k2, k3, k4, k5, k6, k7, k8));
INSERT INTO co_eight VALUES
    (1, 2, 3, 'four', 'five', 'six', '00000000-0000-0000-0000-000000000007', 'eight', 'row 1'),
    (-1, -2, -3, '', '', '', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '', 'row 2: empty strings'),
    (1, 2, 3, 'four', 'five', 'six', '00000000-0000-0000-0000-000000000007', 'eight:', 'row 3: one more character'),
    (1, 2, 3, 'fou', 'rfive', 'six', '00000000-0000-0000-0000-000000000007', 'eight', 'row 4: a character moved'),
    (32767, 2147483647, 9223372036854775807, 'a:b', 'c\d', 'é', '123e4567-e89b-12d3-a456-426614174000', '中文',
     'row 5: extremes'),
    (-32768, -2147483648, -9223372036854775808, ' ', ' ', ' ', '00000000-0000-0000-0000-000000000000', ' ',
     'row 6: blanks');
SELECT local_cache.enable('co_eight');
CREATE TEMP TABLE c8_keys AS
SELECT ARRAY[['1', '2', '3', 'four', 'five', 'six', '00000000-0000-0000-0000-000000000007', 'eight'],
             ['-1', '-2', '-3', '', '', '', 'ffffffff-ffff-ffff-ffff-ffffffffffff', ''],
             ['1', '2', '3', 'four', 'five', 'six', '00000000-0000-0000-0000-000000000007', 'eight:'],
             ['1', '2', '3', 'fou', 'rfive', 'six', '00000000-0000-0000-0000-000000000007', 'eight'],
             ['32767', '2147483647', '9223372036854775807', 'a:b', 'c\d', 'é', '123e4567-e89b-12d3-a456-426614174000', '中文'],
             ['-32768', '-2147483648', '-9223372036854775808', ' ', ' ', ' ', '00000000-0000-0000-0000-000000000000', ' '],
             ['1', '2', '3', 'four', 'five', 'six   ', '00000000000000000000000000000007', 'eight'],
             ['-1', '-2', '-3', '', '', '    ', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', ''],
             ['-32768', '-2147483648', '-9223372036854775808', ' ', ' ', '', '00000000-0000-0000-0000-000000000000', ' '],
             ['-32768', '-2147483648', '-9223372036854775808', '', ' ', ' ', '00000000-0000-0000-0000-000000000000', ' '],
             ['1', '2', '3', 'four', 'five ', 'six', '00000000-0000-0000-0000-000000000007', 'eight'],
             ['1', '2', '3', 'four', 'five', 'six', '00000000-0000-0000-0000-000000000007', 'eight '],
             ['65537', '2', '3', 'four', 'five', 'six', '00000000-0000-0000-0000-000000000007', 'eight'],
             ['1', '4294967298', '3', 'four', 'five', 'six', '00000000-0000-0000-0000-000000000007', 'eight'],
             ['1', '2', '3', 'four', 'five', 'six', '00000000-0000-0000-0000-000000000008', 'eight'],
             ['1', '2', '3', 'four', 'five', 'six', '00000000-0000-0000-0000-000000000007', NULL],
             [NULL, '2', '3', 'four', 'five', 'six', '00000000-0000-0000-0000-000000000007', 'eight'],
             ['2', '2', '3', 'four', 'five', 'six', '00000000-0000-0000-0000-000000000007', 'eight']] AS k;
SELECT local_cache.flush('co_eight') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT lc_kcheck('co_eight', k) AS cold FROM c8_keys;
SELECT * FROM lc_kstats('co_eight');
SELECT lc_kcheck('co_eight', k) AS warm FROM c8_keys;
SELECT ord, r->>'v' AS v FROM c8_keys, json_array_elements(local_cache.mget_json('co_eight', k)) WITH ORDINALITY j(r, ord)
 ORDER BY ord;
\pset format unaligned
SELECT local_cache.mget_json('co_eight', ARRAY[['32767', '2147483647', '9223372036854775807', 'a:b', 'c\d', 'é',
                                                '123e4567-e89b-12d3-a456-426614174000', '中文']]);
\pset format aligned
-- Seven or nine elements per key; an element that is no value of its column.
SELECT local_cache.mget_json('co_eight', '{{1,2,3,four,five,six,00000000-0000-0000-0000-000000000007}}');
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.mget_json('co_eight', '{{1,2,3,four,five,six,00000000-0000-0000-0000-000000000007,eight,nine}}');
\echo :LAST_ERROR_SQLSTATE
\set SHOW_CONTEXT errors
SELECT local_cache.mget_json('co_eight', '{{1,2,3,four,five,six,00000000-0000-0000-0000-000000000007,eight},{1,2,3,four,five,six,7,eight}}');
SELECT local_cache.mget_json('co_eight', '{{1,2,3,four,five,six,00000000-0000-0000-0000-000000000007,eight},{1,2,x,four,five,six,00000000-0000-0000-0000-000000000007,eight}}');
\set SHOW_CONTEXT never

--
-- Invalidation: every write is seen by the next read, cached rows and cached absent keys
-- alike.
--
SELECT lc_kcheck('co_lines', k) AS warm FROM cl_keys;
-- UPDATE of a column that is not part of the key.
UPDATE co_lines SET qty = -qty, item = item || '!' WHERE order_id IN (1, 2) AND line_no = 1;
SELECT 'update of a column' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
SELECT local_cache.mget_json('co_lines', '{{1,1},{2,1},{1,2}}');
-- UPDATE of one column of the key: the old key is missing, the new one present.
UPDATE co_lines SET line_no = 9 WHERE order_id = 1 AND line_no = 3;
SELECT 'update of a key column' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
SELECT local_cache.mget_json('co_lines', '{{1,3},{1,9}}');
-- Both columns exchanged: (5,3) becomes (3,5).
UPDATE co_lines SET order_id = line_no, line_no = order_id WHERE order_id = 5 AND line_no = 3;
SELECT 'update of both key columns' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
SELECT local_cache.mget_json('co_lines', '{{5,3},{3,5}}');
-- DELETE, then INSERT of the same key.
DELETE FROM co_lines WHERE (order_id, line_no) IN ((20, 3), (0, 0));
SELECT 'delete' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
SELECT local_cache.mget_json('co_lines', '{{20,3},{0,0}}');
INSERT INTO co_lines VALUES (3, 'again', 20, 0), (0, 'zero again', 0, 0);
SELECT 'insert again' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
SELECT local_cache.mget_json('co_lines', '{{20,3},{0,0}}');
-- INSERT of keys read (and cached) as absent.
SELECT local_cache.reset_stats();
SELECT local_cache.mget_json('co_lines', '{{21,1},{0,1}}') AS first, local_cache.mget_json('co_lines', '{{21,1},{0,1}}') AS second;
SELECT * FROM lc_kstats('co_lines');
INSERT INTO co_lines VALUES (1, 'new order', 21, 1), (1, 'new line', 0, 1);
SELECT local_cache.mget_json('co_lines', '{{21,1},{0,1}}');
SELECT 'insert of absent keys' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
-- INSERT ... ON CONFLICT on the composite key, both ways.
INSERT INTO co_lines VALUES (2, 'upserted', 21, 5), (1, 'conflict', 21, 6)
    ON CONFLICT (order_id, line_no) DO UPDATE SET item = EXCLUDED.item;
SELECT local_cache.mget_json('co_lines', '{{21,2},{21,1}}');
SELECT 'upsert' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
-- MERGE: an update, a delete and an insert by composite key in one statement.
SELECT lc_kcheck('co_lines', k) AS warm FROM cl_keys;
MERGE INTO co_lines t
USING (VALUES (21::bigint, 2, 'merged update'), (21, 1, 'merged delete'), (22, 1, 'merged insert')) s(o, l, item)
   ON t.order_id = s.o AND t.line_no = s.l
 WHEN MATCHED AND s.item = 'merged delete' THEN DELETE
 WHEN MATCHED THEN UPDATE SET item = s.item
 WHEN NOT MATCHED THEN INSERT (order_id, line_no, item, qty) VALUES (s.o, s.l, s.item, 0);
SELECT local_cache.mget_json('co_lines', '{{21,2},{21,1},{22,1}}');
SELECT 'merge' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
DELETE FROM co_lines WHERE order_id = 22;
-- character(n) and text columns of a key: a change of trailing blanks of c changes no key,
-- of b it does.
SELECT lc_kcheck('co_mixed', k) AS warm FROM cm_keys;
UPDATE co_mixed SET c = 'ab ', v = 'one, c blank-padded' WHERE a = 1 AND b = 'x' AND c = 'ab';
UPDATE co_mixed SET b = 'x:  ', v = 'three, b blank-padded' WHERE a = 1 AND b = 'x:' AND c = 'y';
UPDATE co_mixed SET c = 'zz' WHERE v = 'nine';
SELECT 'trailing blanks' AS step, lc_kcheck('co_mixed', k) FROM cm_keys;
SELECT local_cache.mget_json('co_mixed', '{{1,x,ab},{1,x:,y},{1,"x:  ",y},{1,x,"\\y"},{1,x,zz}}');
-- uuid column of a key.
SELECT lc_kcheck('co_tenant', k) AS warm FROM ct_keys;
UPDATE co_tenant SET id = '00000000-0000-0000-0000-000000000003' WHERE tenant = 'acme' AND id = '00000000-0000-0000-0000-000000000002';
UPDATE co_tenant SET tenant = 'initech' WHERE tenant = 'globex';
UPDATE co_tenant SET tenant = 'ACME' WHERE tenant = '';
SELECT 'uuid and text key columns' AS step, lc_kcheck('co_tenant', k) FROM ct_keys;
SELECT r->>'v' AS v FROM ct_keys, json_array_elements(local_cache.mget_json('co_tenant', k)) r;
-- Eight columns.
SELECT lc_kcheck('co_eight', k) AS warm FROM c8_keys;
UPDATE co_eight SET k8 = 'eight!' WHERE v = 'row 1';
UPDATE co_eight SET k1 = 2, k4 = 'four', k5 = 'five' WHERE v = 'row 4: a character moved';
UPDATE co_eight SET v = 'row 5, updated' WHERE k1 = 32767;
SELECT 'eight columns' AS step, lc_kcheck('co_eight', k) FROM c8_keys;
SELECT ord, r->>'v' AS v FROM c8_keys, json_array_elements(local_cache.mget_json('co_eight', k)) WITH ORDINALITY j(r, ord)
 ORDER BY ord;

-- Own writes: inside a transaction that wrote the table, its own rows; after ROLLBACK the
-- committed ones.
SELECT lc_kcheck('co_lines', k) AS warm FROM cl_keys;
BEGIN;
UPDATE co_lines SET item = 'own update' WHERE order_id = 1 AND line_no = 1;
DELETE FROM co_lines WHERE order_id = 1 AND line_no = 2;
INSERT INTO co_lines VALUES (2, 'own insert', 22, 0);
UPDATE co_lines SET line_no = 4 WHERE order_id = 1 AND line_no = 9;
SELECT 'own writes' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
SELECT local_cache.mget_json('co_lines', '{{1,1},{1,2},{22,2},{1,9},{1,4}}');
SAVEPOINT s1;
DELETE FROM co_lines WHERE order_id = 22;
SELECT 'own delete in a savepoint' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
ROLLBACK TO SAVEPOINT s1;
SELECT 'after ROLLBACK TO SAVEPOINT' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
ROLLBACK;
SELECT 'after ROLLBACK' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
SELECT local_cache.mget_json('co_lines', '{{1,1},{1,2},{22,2},{1,9},{1,4}}');
BEGIN;
INSERT INTO co_lines VALUES (2, 'committed insert', 22, 0);
SELECT 'own writes' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
COMMIT;
SELECT 'after COMMIT' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
SELECT local_cache.mget_json('co_lines', '{{22,2}}');

--
-- DDL.
--
-- A new column.
SELECT lc_kcheck('co_lines', k) AS warm FROM cl_keys;
ALTER TABLE co_lines ADD COLUMN note text DEFAULT 'n';
SELECT 'add column' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
SELECT local_cache.mget_json('co_lines', '{{22,2}}');
-- A key column from integer to bigint (integers of every width are the same keys).
ALTER TABLE co_lines ALTER COLUMN line_no TYPE bigint;
SELECT 'line_no bigint' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
SELECT local_cache.mget_json('co_lines', '{{22,2},{1,4294967297}}');
INSERT INTO co_lines VALUES (4294967297, 'beyond integer', 1, 0);
SELECT local_cache.mget_json('co_lines', '{{22,2},{1,4294967297}}');
SELECT 'line_no bigint, after insert' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
-- A key column from varchar(10) to varchar(20) and to text.
SELECT lc_kcheck('co_eight', k) AS warm FROM c8_keys;
ALTER TABLE co_eight ALTER COLUMN k5 TYPE varchar(20);
SELECT 'k5 varchar(20)' AS step, lc_kcheck('co_eight', k) FROM c8_keys;
ALTER TABLE co_eight ALTER COLUMN k5 TYPE text;
SELECT 'k5 text' AS step, lc_kcheck('co_eight', k) FROM c8_keys;
UPDATE co_eight SET k5 = 'a much longer value', v = 'row 6, k5 longer' WHERE k1 = -32768;
SELECT 'k5 text, after update' AS step, lc_kcheck('co_eight', k) FROM c8_keys;
SELECT local_cache.mget_json('co_eight', ARRAY[['-32768', '-2147483648', '-9223372036854775808', ' ', 'a much longer value', ' ',
                                                '00000000-0000-0000-0000-000000000000', ' ']]);
-- The key's columns in the other order: (1, 2) is order 2, line 1 from then on.
SELECT lc_kcheck('co_lines', k) AS warm FROM cl_keys;
SELECT local_cache.mget_json('co_lines', '{{1,2},{2,1}}');
ALTER TABLE co_lines DROP CONSTRAINT co_lines_pkey, ADD PRIMARY KEY (line_no, order_id);
SELECT local_cache.mget_json('co_lines', '{{1,2},{2,1}}');
SELECT 'reversed key' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
SELECT 'reversed key' AS step, lc_kcheck('co_lines', k) FROM cl_keys;
-- Three columns: two-element keys are refused.
ALTER TABLE co_lines DROP CONSTRAINT co_lines_pkey, ADD PRIMARY KEY (order_id, line_no, item);
SELECT local_cache.mget_json('co_lines', '{{1,2},{2,1}}');
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.mget_json('co_lines', '{{2,1,"item 2/1!"},{2,1,"item 2/1"},{1,2,"item 1/2"}}');
SELECT lc_kcheck('co_lines', '{{2,1,"item 2/1!"},{2,1,"item 2/1"},{1,2,"item 1/2"},{21,1,conflict}}'::text[]) AS three_columns;
-- One uuid column: one-dimensional arrays again.
SELECT lc_kcheck('co_tenant', k) AS warm FROM ct_keys;
DELETE FROM co_tenant WHERE v IN ('multibyte tenant', 'globex 1');
ALTER TABLE co_tenant DROP CONSTRAINT co_tenant_pkey, ADD PRIMARY KEY (id);
SELECT local_cache.mget_json('co_tenant', ARRAY[['acme', '00000000-0000-0000-0000-000000000001']]);
\echo :LAST_ERROR_SQLSTATE
SELECT r->>'v' AS v FROM json_array_elements(local_cache.mget_json('co_tenant',
    '{00000000-0000-0000-0000-000000000001,00000000-0000-0000-0000-000000000003,a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,NULL,ffffffff-ffff-ffff-ffff-ffffffffffff,00000000-0000-0000-0000-000000000002}')) r;
SELECT lc_kcheck('co_tenant', '{00000000-0000-0000-0000-000000000001,00000000-0000-0000-0000-000000000003,a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,NULL,ffffffff-ffff-ffff-ffff-ffffffffffff,00000000-0000-0000-0000-000000000002}'::uuid[]) AS one_column;
-- and back to two.
ALTER TABLE co_tenant DROP CONSTRAINT co_tenant_pkey, ADD PRIMARY KEY (tenant, id);
SELECT 'two columns again' AS step, lc_kcheck('co_tenant', k) FROM ct_keys;

-- TRUNCATE: every key is absent, then present again once inserted.
SELECT lc_kcheck('co_mixed', k) AS warm FROM cm_keys;
TRUNCATE co_mixed;
SELECT 'truncate' AS step, lc_kcheck('co_mixed', k) FROM cm_keys;
SELECT local_cache.mget_json('co_mixed', '{{1,x,ab},{2,"",""}}');
INSERT INTO co_mixed VALUES (2, '', '  ', 'after truncate');
SELECT 'insert after truncate' AS step, lc_kcheck('co_mixed', k) FROM cm_keys;
SELECT local_cache.mget_json('co_mixed', '{{1,x,ab},{2,"",""}}');

DROP TABLE co_lines, co_tenant, co_mixed, co_tt, co_eight;
