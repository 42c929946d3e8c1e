--
-- fdw_keys: local_cache_fdw over tables keyed by text, uuid and composite keys returns exactly
-- what the same query on the source tables returns. Runs after fdw, whose comparison functions
-- (lc_compare, lc_diff, ...) it uses and then drops.
--
-- Keys beyond integers: foreign tables over tables keyed by text, by uuid, by (order_id
-- bigint, line_no int) and by (a int, b text, c char(3)). A condition on the key is a lookup
-- when it is `key = value`, `key = ANY(array)` or an IN list (one-column keys) with the
-- key's equality, and, for a composite key, when every key column has an equality (values,
-- parameters, join columns); a condition on part of a composite key is evaluated on a full
-- scan. lc_kdiff compares every query with the same one on the source tables, as lc_diff
-- does, with
--   %1$s = lc_kfdw.tk (text key)   %2$s = lc_kfdw.uk (uuid key)
--   %3$s = lc_kfdw.ol (order_id, line_no)   %4$s = lc_kfdw.mx (a, b, c)   %5$s = lc_kfdw
-- and the same names in schema lc_ksrc. lc_ksrc.probe holds keys of each of them (NULLs,
-- missing keys, duplicates) in columns of several types, to join with.
--
CREATE SCHEMA lc_ksrc;
CREATE SCHEMA lc_kfdw;
-- Under a nondeterministic collation key equality is not equality of bytes: no lookup.
CREATE COLLATION lc_kfdw_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE lc_ksrc.tk (k text PRIMARY KEY, v text, grp int NOT NULL);
INSERT INTO lc_ksrc.tk SELECT 'k' || g, 'v' || g, g % 4 FROM generate_series(1, 100) g;
INSERT INTO lc_ksrc.tk VALUES ('', 'empty', 0), ('a:b', 'colon', 1), ('é', 'e acute', 2), ('中文', 'chinese', 3),
    ('trail', 'no blank', 0), ('trail  ', 'two blanks', 1), ('A', 'upper', 2), ('a', 'lower', 3);
CREATE TABLE lc_ksrc.uk (id uuid PRIMARY KEY, v text, grp int NOT NULL);
INSERT INTO lc_ksrc.uk SELECT md5(g::text)::uuid, 'u' || g, g % 4 FROM generate_series(1, 100) g;
INSERT INTO lc_ksrc.uk VALUES ('00000000-0000-0000-0000-000000000000', 'zero', 0),
    ('ffffffff-ffff-ffff-ffff-ffffffffffff', 'ones', 1);
-- The key's columns in another order than the table's.
CREATE TABLE lc_ksrc.ol (line_no int, item text, order_id bigint, qty int, PRIMARY KEY (order_id, line_no));
INSERT INTO lc_ksrc.ol SELECT l, 'item ' || o || '/' || l, o, (o * l) % 7
  FROM generate_series(1, 40) o, generate_series(1, 4) l;
CREATE TABLE lc_ksrc.mx (a int, b text, c char(3), v text, PRIMARY KEY (a, b, c));
INSERT INTO lc_ksrc.mx VALUES (1, 'x', 'ab', 'one'), (1, 'x:y', 'a', 'two'), (1, 'x:', 'y', 'three'),
    (1, 'x', ':y', 'four'), (2, '', '', 'five'), (2, 'x', 'ab', 'six'), (1, 'x ', 'ab', 'seven'),
    (2, 'x:y', 'a', 'eight');
CREATE TABLE lc_ksrc.probe (
    id int PRIMARY KEY,
    tk text, tkv varchar(12), tkc char(10), tkn name,
    uk uuid, ukt text,
    order_id bigint, line_no int, line_no8 bigint,
    a int, b text, c char(3), ctext text
);
INSERT INTO lc_ksrc.probe (id, tk, uk, order_id, line_no, line_no8, a, b, c)
SELECT g,
       CASE WHEN g % 10 = 0 THEN NULL WHEN g % 13 = 0 THEN 'nope' || g WHEN g % 7 = 0 THEN 'trail  '
            WHEN g % 11 = 0 THEN '' WHEN g % 9 = 0 THEN 'a:b' ELSE 'k' || (g * 7 % 110) END,
       CASE WHEN g % 10 = 0 THEN NULL WHEN g % 9 = 0 THEN md5('x' || g)::uuid ELSE md5((g * 3 % 110)::text)::uuid END,
       CASE WHEN g % 10 = 0 THEN NULL ELSE g % 45 END,
       g % 5,
       g % 5 + CASE WHEN g % 17 = 0 THEN 4294967296 ELSE 0 END,
       g % 3,
       CASE g % 4 WHEN 0 THEN 'x' WHEN 1 THEN 'x:y' WHEN 2 THEN '' ELSE 'x ' END,
       CASE g % 5 WHEN 0 THEN 'ab' WHEN 1 THEN 'a' WHEN 2 THEN '' WHEN 3 THEN 'ab ' ELSE ':y' END
  FROM generate_series(1, 60) g;
UPDATE lc_ksrc.probe SET tkv = tk, tkc = tk, tkn = tk, ukt = upper(uk::text),
       ctext = CASE WHEN id % 2 = 0 THEN c::text ELSE c::text || ' ' END;
SELECT local_cache.enable('lc_ksrc.tk', 'lc_tk'), local_cache.enable('lc_ksrc.uk', 'lc_uk'),
       local_cache.enable('lc_ksrc.ol', 'lc_ol'), local_cache.enable('lc_ksrc.mx', 'lc_mx');
ANALYZE lc_ksrc.tk, lc_ksrc.uk, lc_ksrc.ol, lc_ksrc.mx, lc_ksrc.probe;
CREATE FOREIGN TABLE lc_kfdw.tk (k text, v text, grp int) SERVER local_cache OPTIONS (table 'lc_ksrc.tk');
IMPORT FOREIGN SCHEMA lc_ksrc LIMIT TO (uk, ol, mx) FROM SERVER local_cache INTO lc_kfdw;
\d lc_kfdw.ol
\d lc_kfdw.mx

CREATE FUNCTION lc_kdiff(q text, ordered boolean DEFAULT false, flush boolean DEFAULT true,
                         OUT path text, OUT rows int, OUT result text)
LANGUAGE sql AS $$
    SELECT * FROM lc_compare(format(q, 'lc_kfdw.tk', 'lc_kfdw.uk', 'lc_kfdw.ol', 'lc_kfdw.mx', 'lc_kfdw'),
                             format(q, 'lc_ksrc.tk', 'lc_ksrc.uk', 'lc_ksrc.ol', 'lc_ksrc.mx', 'lc_ksrc'),
                             '{lc_ksrc.tk,lc_ksrc.uk,lc_ksrc.ol,lc_ksrc.mx}', ordered, flush)
$$;

-- text keys. A name value, which text's operators compare with text, is no text value: no
-- lookup (pushed down as one, it made the scan fail).
SELECT shape, d.* FROM (VALUES
    ('text: k = const',               $$SELECT * FROM %1$s WHERE k = 'k5'$$),
    ('text: const = k',               $$SELECT * FROM %1$s WHERE 'k5' = k$$),
    ('text: k = empty string',        $$SELECT * FROM %1$s WHERE k = ''$$),
    ('text: k = with colon',          $$SELECT * FROM %1$s WHERE k = 'a:b'$$),
    ('text: k = multibyte',           $$SELECT * FROM %1$s WHERE k = '中文'$$),
    ('text: trailing blanks count',   $$SELECT * FROM %1$s WHERE k = 'trail  '$$),
    ('text: case counts',             $$SELECT * FROM %1$s WHERE k = 'A'$$),
    ('text: k = missing',             $$SELECT * FROM %1$s WHERE k = 'k0'$$),
    ('text: k = NULL',                $$SELECT * FROM %1$s WHERE k = NULL$$),
    ('text: k = varchar',             $$SELECT * FROM %1$s WHERE k = 'k5'::varchar(3)$$),
    ('text: k = char(n)',             $$SELECT * FROM %1$s WHERE k = 'trail  '::char(8)$$),
    ('text: k = name (scan)',         $$SELECT * FROM %1$s WHERE k = 'k5'::name$$),
    ('text: k = expression',          $$SELECT * FROM %1$s WHERE k = lower('K') || length('xxxxx')$$),
    ('text: k = COLLATE "C"',         $$SELECT * FROM %1$s WHERE k = 'a' COLLATE "C"$$),
    ('text: nondeterministic (scan)', $$SELECT * FROM %1$s WHERE k = 'A' COLLATE lc_kfdw_ci$$),
    ('text: nondeterministic ANY',    $$SELECT * FROM %1$s WHERE k = ANY('{a,TRAIL}' COLLATE lc_kfdw_ci)$$),
    ('text: k = key and condition',   $$SELECT * FROM %1$s WHERE k = 'k6' AND grp = 2$$),
    ('text: ANY',                     $$SELECT * FROM %1$s WHERE k = ANY('{k1,k2,k1,NULL,k0,"",a:b,trail}')$$),
    ('text: ANY varchar[]',           $$SELECT * FROM %1$s WHERE k = ANY('{k1,k2,"trail  "}'::varchar[])$$),
    ('text: ANY name[] (scan)',       $$SELECT * FROM %1$s WHERE k = ANY('{k1,k2}'::name[])$$),
    ('text: ANY empty',               $$SELECT * FROM %1$s WHERE k = ANY('{}')$$),
    ('text: IN list',                 $$SELECT * FROM %1$s WHERE k IN ('k3', 'k4', 'é', 'k3', 'nope')$$),
    ('text: NOT IN (scan)',           $$SELECT * FROM %1$s WHERE k NOT IN ('k3', 'k4') AND grp = 1$$),
    ('text: LIKE (scan)',             $$SELECT * FROM %1$s WHERE k LIKE 'k1%%'$$),
    ('text: range (scan)',            $$SELECT * FROM %1$s WHERE k > 'k9'$$),
    ('text: rtrim(k) (scan)',         $$SELECT * FROM %1$s WHERE rtrim(k) = 'trail'$$)
) s(shape, q), LATERAL lc_kdiff(q) d;
-- uuid keys.
SELECT shape, d.* FROM (VALUES
    ('uuid: id = const',              $$SELECT * FROM %2$s WHERE id = 'c4ca4238-a0b9-2382-0dcc-509a6f75849b'$$),
    ('uuid: id = upper case',         $$SELECT * FROM %2$s WHERE id = 'C4CA4238-A0B9-2382-0DCC-509A6F75849B'$$),
    ('uuid: id = no dashes',          $$SELECT * FROM %2$s WHERE id = 'c4ca4238a0b923820dcc509a6f75849b'$$),
    ('uuid: id = zero',               $$SELECT * FROM %2$s WHERE id = '00000000-0000-0000-0000-000000000000'$$),
    ('uuid: id = missing',            $$SELECT * FROM %2$s WHERE id = '00000000-0000-0000-0000-000000000001'$$),
    ('uuid: id = NULL',               $$SELECT * FROM %2$s WHERE id = NULL$$),
    ('uuid: id = md5 expression',     $$SELECT * FROM %2$s WHERE id = md5('7')::uuid$$),
    ('uuid: ANY',                     $$SELECT * FROM %2$s WHERE id = ANY(ARRAY[md5('1'), md5('2'), md5('1'), NULL, md5('x'), 'ffffffff-ffff-ffff-ffff-ffffffffffff']::uuid[])$$),
    ('uuid: IN list',                 $$SELECT * FROM %2$s WHERE id IN ('00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', md5('3')::uuid)$$),
    ('uuid: id::text (scan)',         $$SELECT * FROM %2$s WHERE id::text LIKE 'c%%'$$),
    ('uuid: key and condition',       $$SELECT * FROM %2$s WHERE id = md5('4')::uuid AND grp = 0$$)
) s(shape, q), LATERAL lc_kdiff(q) d;
-- Composite keys: an equality on every key column, in any order and form.
SELECT shape, d.* FROM (VALUES
    ('(order_id, line_no) = consts',  $$SELECT * FROM %3$s WHERE order_id = 3 AND line_no = 2$$),
    ('the other order',               $$SELECT * FROM %3$s WHERE line_no = 2 AND order_id = 3$$),
    ('other integer widths',          $$SELECT * FROM %3$s WHERE order_id = 3::int2 AND line_no = 2::bigint$$),
    ('row comparison',                $$SELECT * FROM %3$s WHERE (order_id, line_no) = (3, 2)$$),
    ('missing key',                   $$SELECT * FROM %3$s WHERE order_id = 41 AND line_no = 1$$),
    ('line_no out of range',          $$SELECT * FROM %3$s WHERE order_id = 3 AND line_no = 4294967298$$),
    ('NULL column',                   $$SELECT * FROM %3$s WHERE order_id = 3 AND line_no = NULL$$),
    ('contradicting conditions',      $$SELECT * FROM %3$s WHERE order_id = 3 AND line_no = 2 AND order_id = 4$$),
    ('key and condition',             $$SELECT * FROM %3$s WHERE order_id = 3 AND line_no = 2 AND qty > 100$$),
    ('partial: order_id (scan)',      $$SELECT * FROM %3$s WHERE order_id = 3$$),
    ('partial: line_no (scan)',       $$SELECT * FROM %3$s WHERE line_no = 2$$),
    ('partial: ANY (scan)',           $$SELECT * FROM %3$s WHERE order_id = ANY('{1,2,99}') AND line_no = 1$$),
    ('pairs IN (scan)',               $$SELECT * FROM %3$s WHERE (order_id, line_no) IN ((1, 1), (2, 2), (99, 1))$$),
    ('pairs OR (scan)',               $$SELECT * FROM %3$s WHERE (order_id = 1 AND line_no = 1) OR (order_id = 2 AND line_no = 2)$$),
    ('(a, b, c) = consts',            $$SELECT * FROM %4$s WHERE a = 1 AND b = 'x' AND c = 'ab'$$),
    ('c with trailing blanks',        $$SELECT * FROM %4$s WHERE a = 1 AND b = 'x' AND c = 'ab      '$$),
    ('b with trailing blank',         $$SELECT * FROM %4$s WHERE a = 1 AND b = 'x ' AND c = 'ab'$$),
    ('colons in b and c',             $$SELECT * FROM %4$s WHERE a = 1 AND b = 'x:y' AND c = 'a'$$),
    ('colons elsewhere',              $$SELECT * FROM %4$s WHERE a = 1 AND b = 'x:' AND c = 'y'$$),
    ('empty strings',                 $$SELECT * FROM %4$s WHERE a = 2 AND b = '' AND c = ''$$),
    ('c = text value (scan)',         $$SELECT * FROM %4$s WHERE a = 1 AND b = 'x' AND c = 'ab'::text$$),
    ('partial: a, b (scan)',          $$SELECT * FROM %4$s WHERE a = 1 AND b = 'x'$$),
    ('partial: c (scan)',             $$SELECT * FROM %4$s WHERE c = 'ab'$$)
) s(shape, q), LATERAL lc_kdiff(q) d;

-- Joins: a nested loop probes the cache once per outer row (hash and merge joins off, so
-- that the foreign table is the inner side of a nested loop wherever it can be).
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT shape, d.* FROM (VALUES
    ('text: join',                    $$SELECT p.id, t.v FROM lc_ksrc.probe p JOIN %1$s t ON t.k = p.tk$$),
    ('text: left join',               $$SELECT p.id, t.v FROM lc_ksrc.probe p LEFT JOIN %1$s t ON t.k = p.tk$$),
    ('text: join on varchar',         $$SELECT p.id, t.v FROM lc_ksrc.probe p JOIN %1$s t ON t.k = p.tkv$$),
    ('text: join on char(n)',         $$SELECT p.id, t.v FROM lc_ksrc.probe p JOIN %1$s t ON t.k = p.tkc$$),
    ('text: join on name (scan)',     $$SELECT p.id, t.v FROM lc_ksrc.probe p JOIN %1$s t ON t.k = p.tkn$$),
    ('text: join and condition',      $$SELECT p.id, t.v FROM lc_ksrc.probe p JOIN %1$s t ON t.k = p.tk AND t.grp = 1$$),
    ('text: EXISTS',                  $$SELECT p.id FROM lc_ksrc.probe p WHERE EXISTS (SELECT 1 FROM %1$s t WHERE t.k = p.tk)$$),
    ('text: NOT EXISTS',              $$SELECT p.id FROM lc_ksrc.probe p WHERE NOT EXISTS (SELECT 1 FROM %1$s t WHERE t.k = p.tk)$$),
    ('text: LATERAL',                 $$SELECT g, x.* FROM generate_series(1, 12) g, LATERAL (SELECT * FROM %1$s t WHERE t.k = 'k' || g) x$$),
    ('text: VALUES',                  $$SELECT v.s, t.v FROM (VALUES ('k1'), ('k1'), (''), ('a:b'), ('中文'), (NULL), ('zz')) v(s) LEFT JOIN %1$s t ON t.k = v.s$$),
    ('uuid: join',                    $$SELECT p.id, u.v FROM lc_ksrc.probe p JOIN %2$s u ON u.id = p.uk$$),
    ('uuid: left join',               $$SELECT p.id, u.v FROM lc_ksrc.probe p LEFT JOIN %2$s u ON u.id = p.uk$$),
    ('uuid: join on text::uuid',      $$SELECT p.id, u.v FROM lc_ksrc.probe p JOIN %2$s u ON u.id = p.ukt::uuid$$),
    ('uuid: join on uuid::text (scan)', $$SELECT p.id, u.v FROM lc_ksrc.probe p JOIN %2$s u ON u.id::text = p.ukt$$),
    ('composite: join on both',       $$SELECT p.id, o.item FROM lc_ksrc.probe p JOIN %3$s o ON o.order_id = p.order_id AND o.line_no = p.line_no$$),
    ('composite: left join on both',  $$SELECT p.id, o.item FROM lc_ksrc.probe p LEFT JOIN %3$s o ON o.order_id = p.order_id AND o.line_no = p.line_no$$),
    ('composite: bigint line_no',     $$SELECT p.id, o.item FROM lc_ksrc.probe p JOIN %3$s o ON o.order_id = p.order_id AND o.line_no = p.line_no8$$),
    ('composite: join and const',     $$SELECT p.id, o.item FROM lc_ksrc.probe p JOIN %3$s o ON o.order_id = p.order_id WHERE o.line_no = 1$$),
    ('composite: const and join',     $$SELECT p.id, o.item FROM lc_ksrc.probe p JOIN %3$s o ON o.line_no = p.line_no WHERE o.order_id = 7$$),
    ('composite: join on one (scan)', $$SELECT p.id, o.item FROM lc_ksrc.probe p JOIN %3$s o ON o.order_id = p.order_id$$),
    ('composite: two outer tables',   $$SELECT p.id, o.item FROM lc_ksrc.probe p JOIN lc_ksrc.probe q ON q.id = p.id + 1 JOIN %3$s o ON o.order_id = p.order_id AND o.line_no = q.line_no$$),
    ('composite: LATERAL',            $$SELECT g, x.* FROM generate_series(1, 12) g, LATERAL (SELECT * FROM %3$s o WHERE o.order_id = g AND o.line_no = g %% 5) x$$),
    ('composite: EXISTS',             $$SELECT p.id FROM lc_ksrc.probe p WHERE EXISTS (SELECT 1 FROM %3$s o WHERE o.order_id = p.order_id AND o.line_no = p.line_no)$$),
    ('(a, b, c): join on all',        $$SELECT p.id, m.v FROM lc_ksrc.probe p JOIN %4$s m ON m.a = p.a AND m.b = p.b AND m.c = p.c$$),
    ('(a, b, c): join, c as text',    $$SELECT p.id, m.v FROM lc_ksrc.probe p JOIN %4$s m ON m.a = p.a AND m.b = p.b AND m.c = p.ctext$$),
    ('(a, b, c): join on two (scan)', $$SELECT p.id, m.v FROM lc_ksrc.probe p JOIN %4$s m ON m.a = p.a AND m.b = p.b$$)
) s(shape, q), LATERAL lc_kdiff(q) d;
RESET enable_hashjoin;
RESET enable_mergejoin;
-- Without those settings the planner chooses; the results are the same.
SELECT shape, d.* FROM (VALUES
    ('text: join, any plan',          $$SELECT p.id, t.v FROM lc_ksrc.probe p JOIN %1$s t ON t.k = p.tk$$),
    ('uuid: join, any plan',          $$SELECT p.id, u.v FROM lc_ksrc.probe p JOIN %2$s u ON u.id = p.uk$$),
    ('composite: join, any plan',     $$SELECT p.id, o.item FROM lc_ksrc.probe p JOIN %3$s o ON o.order_id = p.order_id AND o.line_no = p.line_no$$),
    ('composite: all rows',           $$SELECT * FROM %3$s$$)
) s(shape, q), LATERAL lc_kdiff(q) d;

-- What the plans look like.
EXPLAIN (COSTS OFF) SELECT * FROM lc_kfdw.tk WHERE k = ANY('{k1,"",a:b}');
EXPLAIN (COSTS OFF) SELECT * FROM lc_kfdw.tk WHERE k IN ('k3', 'k4');
EXPLAIN (COSTS OFF) SELECT * FROM lc_kfdw.uk WHERE id = 'C4CA4238-A0B9-2382-0DCC-509A6F75849B';
EXPLAIN (COSTS OFF) SELECT * FROM lc_kfdw.ol WHERE line_no = 2 AND order_id = 3;
EXPLAIN (COSTS OFF) SELECT * FROM lc_kfdw.mx WHERE a = 1 AND b = 'x:y' AND c = 'a';
-- Part of a composite key: a full scan, the conditions evaluated on its rows.
EXPLAIN (COSTS OFF) SELECT * FROM lc_kfdw.ol WHERE order_id = 3;
EXPLAIN (COSTS OFF) SELECT * FROM lc_kfdw.ol WHERE order_id = ANY('{1,2}') AND line_no = 1;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
SELECT p.id, t.v FROM lc_ksrc.probe p JOIN lc_kfdw.tk t ON t.k = p.tk WHERE p.id < 5;
EXPLAIN (COSTS OFF)
SELECT p.id, u.v FROM lc_ksrc.probe p JOIN lc_kfdw.uk u ON u.id = p.uk WHERE p.id < 5;
EXPLAIN (COSTS OFF)
SELECT p.id, o.item FROM lc_ksrc.probe p JOIN lc_kfdw.ol o ON o.order_id = p.order_id AND o.line_no = p.line_no WHERE p.id < 5;
EXPLAIN (COSTS OFF)
SELECT p.id, o.item FROM lc_ksrc.probe p JOIN lc_kfdw.ol o ON o.order_id = p.order_id WHERE o.line_no = 1 AND p.id < 5;
EXPLAIN (COSTS OFF)
SELECT p.id, m.v FROM lc_ksrc.probe p JOIN lc_kfdw.mx m ON m.a = p.a AND m.b = p.b AND m.c = p.c WHERE p.id < 5;
EXPLAIN (COSTS OFF)
SELECT p.id, o.item FROM lc_ksrc.probe p JOIN lc_kfdw.ol o ON o.order_id = p.order_id WHERE p.id < 5;
-- Counted hits, misses and fills of parameterized composite lookups: probe rows 1 to 9 name
-- (1,1) (2,2) (3,3) (4,4) (5,0) (6,1) (7,2) (8,3) (9,4), of which (5,0) does not exist.
SELECT local_cache.flush('lc_ksrc.ol') >= 0 AS flushed;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT p.id, o.item FROM lc_ksrc.probe p JOIN lc_kfdw.ol o ON o.order_id = p.order_id AND o.line_no = p.line_no WHERE p.id < 10;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT p.id, o.item FROM lc_ksrc.probe p JOIN lc_kfdw.ol o ON o.order_id = p.order_id AND o.line_no = p.line_no WHERE p.id < 10;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- Foreign tables over lc_ksrc.ol with its columns in another order, and without one of the
-- key's columns (only full scans then).
CREATE FOREIGN TABLE lc_kfdw.ol_reordered (qty int, order_id bigint, item text, line_no int)
    SERVER local_cache OPTIONS (table 'lc_ksrc.ol');
CREATE FOREIGN TABLE lc_kfdw.ol_part (item text, order_id bigint) SERVER local_cache OPTIONS (table 'lc_ksrc.ol');
EXPLAIN (COSTS OFF) SELECT * FROM lc_kfdw.ol_reordered WHERE order_id = 3 AND line_no = 2;
SELECT * FROM lc_kfdw.ol_reordered WHERE order_id = 3 AND line_no = 2;
SELECT * FROM lc_kfdw.ol_reordered WHERE order_id = 3 AND line_no = 2;
EXPLAIN (COSTS OFF) SELECT * FROM lc_kfdw.ol_part WHERE order_id = 3;
SELECT * FROM lc_kfdw.ol_part WHERE order_id = 3 ORDER BY item;

-- Prepared statements with parameters for every key column: custom and generic plans.
PREPARE kfdw_tk(text) AS SELECT coalesce(array_agg(t::text), '{}') AS r FROM lc_kfdw.tk t WHERE k = $1;
PREPARE ksrc_tk(text) AS SELECT coalesce(array_agg(t::text), '{}') AS r FROM lc_ksrc.tk t WHERE k = $1;
PREPARE kfdw_uk(uuid[]) AS SELECT coalesce(array_agg(u::text ORDER BY u.v), '{}') AS r FROM lc_kfdw.uk u WHERE id = ANY($1);
PREPARE ksrc_uk(uuid[]) AS SELECT coalesce(array_agg(u::text ORDER BY u.v), '{}') AS r FROM lc_ksrc.uk u WHERE id = ANY($1);
PREPARE kfdw_ol(bigint, int) AS SELECT coalesce(array_agg(o::text), '{}') AS r FROM lc_kfdw.ol o WHERE order_id = $1 AND line_no = $2;
PREPARE ksrc_ol(bigint, int) AS SELECT coalesce(array_agg(o::text), '{}') AS r FROM lc_ksrc.ol o WHERE order_id = $1 AND line_no = $2;
PREPARE kfdw_mx(int, text, char(3)) AS SELECT coalesce(array_agg(m::text), '{}') AS r FROM lc_kfdw.mx m WHERE a = $1 AND b = $2 AND c = $3;
PREPARE ksrc_mx(int, text, char(3)) AS SELECT coalesce(array_agg(m::text), '{}') AS r FROM lc_ksrc.mx m WHERE a = $1 AND b = $2 AND c = $3;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE kfdw_ol(3, 2);
EXPLAIN (COSTS OFF) EXECUTE kfdw_mx(1, 'x', 'ab');
EXECUTE kfdw_tk('a:b') \gset fdw_
EXECUTE ksrc_tk('a:b') \gset src_
SELECT 'generic: text = $1' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE kfdw_tk('') \gset fdw_
EXECUTE ksrc_tk('') \gset src_
SELECT 'generic: text = empty' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE kfdw_uk(ARRAY[md5('5'), NULL, md5('5'), '00000000-0000-0000-0000-000000000000']::uuid[]) \gset fdw_
EXECUTE ksrc_uk(ARRAY[md5('5'), NULL, md5('5'), '00000000-0000-0000-0000-000000000000']::uuid[]) \gset src_
SELECT 'generic: uuid = ANY($1)' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE kfdw_ol(3, 2) \gset fdw_
EXECUTE ksrc_ol(3, 2) \gset src_
SELECT 'generic: ($1, $2)' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE kfdw_ol(3, NULL) \gset fdw_
EXECUTE ksrc_ol(3, NULL) \gset src_
SELECT 'generic: ($1, NULL)' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE kfdw_mx(1, 'x', 'ab ') \gset fdw_
EXECUTE ksrc_mx(1, 'x', 'ab ') \gset src_
SELECT 'generic: ($1, $2, $3)' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE kfdw_mx(1, 'x ', 'ab') \gset fdw_
EXECUTE ksrc_mx(1, 'x ', 'ab') \gset src_
SELECT 'generic: b with a blank' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
SET plan_cache_mode = force_custom_plan;
EXECUTE kfdw_ol(40, 4) \gset fdw_
EXECUTE ksrc_ol(40, 4) \gset src_
SELECT 'custom: ($1, $2)' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
EXECUTE kfdw_mx(2, '', '') \gset fdw_
EXECUTE ksrc_mx(2, '', '') \gset src_
SELECT 'custom: ($1, $2, $3)' AS shape, :'fdw_r' = :'src_r' AS same, :'fdw_r' AS fdw;
RESET plan_cache_mode;
DEALLOCATE kfdw_tk; DEALLOCATE ksrc_tk; DEALLOCATE kfdw_uk; DEALLOCATE ksrc_uk;
DEALLOCATE kfdw_ol; DEALLOCATE ksrc_ol; DEALLOCATE kfdw_mx; DEALLOCATE ksrc_mx;

-- Writes to the source tables (keys changed, rows deleted and inserted, a key cached as
-- absent inserted) are seen at once through lookups and joins on rows cached before.
CREATE TEMP TABLE lc_kqueries AS
SELECT * FROM (VALUES
    ('text lookups',      $$SELECT * FROM %1$s WHERE k = ANY('{k1,k2,k3,k5,k5x,k200,"",trail}')$$),
    ('text join',         $$SELECT p.id, t.v FROM lc_ksrc.probe p LEFT JOIN %1$s t ON t.k = p.tk$$),
    ('uuid lookups',      $$SELECT * FROM %2$s WHERE id = ANY(ARRAY[md5('1'), md5('2'), md5('200'), '00000000-0000-0000-0000-000000000000']::uuid[])$$),
    ('composite lookups', $$SELECT * FROM %3$s WHERE order_id = 3 AND line_no = 2 UNION ALL SELECT * FROM %3$s WHERE order_id = 3 AND line_no = 9 UNION ALL SELECT * FROM %3$s WHERE order_id = 41 AND line_no = 1$$),
    ('composite join',    $$SELECT p.id, o.item FROM lc_ksrc.probe p LEFT JOIN %3$s o ON o.order_id = p.order_id AND o.line_no = p.line_no$$),
    ('(a, b, c) lookups', $$SELECT * FROM %4$s WHERE a = 1 AND b = 'x' AND c = 'ab' UNION ALL SELECT * FROM %4$s WHERE a = 3 AND b = 'x' AND c = 'ab'$$)
) q(shape, q);
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT 'cached' AS step, shape, d.* FROM lc_kqueries, LATERAL lc_kdiff(q, flush => false) d;
UPDATE lc_ksrc.tk SET k = 'k5x', v = 'moved' WHERE k = 'k5';
UPDATE lc_ksrc.tk SET v = v || '!' WHERE k IN ('k1', '');
DELETE FROM lc_ksrc.tk WHERE k = 'trail';
INSERT INTO lc_ksrc.tk VALUES ('k200', 'new', 0);
UPDATE lc_ksrc.uk SET id = md5('200')::uuid WHERE id = md5('2')::uuid;
UPDATE lc_ksrc.uk SET v = 'zero!' WHERE id = '00000000-0000-0000-0000-000000000000';
UPDATE lc_ksrc.ol SET line_no = 9 WHERE order_id = 3 AND line_no = 2;
INSERT INTO lc_ksrc.ol VALUES (1, 'new order', 41, 0);
UPDATE lc_ksrc.ol SET item = item || '!' WHERE line_no = 1;
UPDATE lc_ksrc.mx SET a = 3 WHERE a = 1 AND b = 'x' AND c = 'ab';
SELECT 'after writes' AS step, shape, d.* FROM lc_kqueries, LATERAL lc_kdiff(q, flush => false) d;
-- and inside a transaction that writes them.
BEGIN;
UPDATE lc_ksrc.tk SET v = 'own' WHERE k = 'k2';
DELETE FROM lc_ksrc.ol WHERE order_id = 41;
UPDATE lc_ksrc.mx SET c = 'ab ' WHERE a = 3;
SELECT 'own writes' AS step, shape, d.* FROM lc_kqueries, LATERAL lc_kdiff(q, flush => false) d;
ROLLBACK;
SELECT 'after ROLLBACK' AS step, shape, d.* FROM lc_kqueries, LATERAL lc_kdiff(q, flush => false) d;
TRUNCATE lc_ksrc.ol;
SELECT 'after TRUNCATE' AS step, shape, d.* FROM lc_kqueries, LATERAL lc_kdiff(q, flush => false) d WHERE shape LIKE 'composite%';
RESET enable_hashjoin;
RESET enable_mergejoin;

SET client_min_messages = warning;
DROP SCHEMA lc_kfdw CASCADE;
DROP SCHEMA lc_ksrc CASCADE;
RESET client_min_messages;
DROP FUNCTION lc_kdiff(text, boolean, boolean);
DROP COLLATION lc_kfdw_ci;

DROP FUNCTION lc_diff(text, boolean, boolean), lc_compare(text, text, regclass[], boolean, boolean), lc_run(text, boolean), lc_paths(text), lc_delta(text[], text[]),
    lc_inv_diff(bigint[]), lc_plan(text);
SELECT relid FROM local_cache.tables WHERE relid::text LIKE 'lc_%';
