--
-- negative: a key without a row is answered from the cache too (a negative entry), exactly:
-- INSERT of the key, a key moved onto it and its own transaction's writes
-- all see the row; counters count negative hits.
--
\set SHOW_CONTEXT never

CREATE TABLE ng (id bigint PRIMARY KEY, v text);
INSERT INTO ng VALUES (1, 'one'), (5, 'five');
SELECT local_cache.enable('ng');
CREATE FUNCTION ng_counts(OUT hits bigint, OUT negative_hits bigint, OUT misses bigint, OUT fills bigint,
                          OUT entries bigint)
    LANGUAGE sql AS $$SELECT hits, negative_hits, misses, fills, entries FROM local_cache.stats
                       WHERE relation = 'ng'::regclass$$;

SELECT local_cache.flush('ng');
SELECT local_cache.reset_stats();
-- The first read of an absent key misses and fills a negative entry; the next one hits it.
SELECT local_cache.mget_json('ng', '{1,2}');
SELECT * FROM ng_counts();
SELECT local_cache.mget_json('ng', '{1,2}');
SELECT * FROM ng_counts();
SELECT array_to_json(local_cache.mget('ng', '{2,2}')) AS mget;

-- INSERT of the key invalidates the negative entry before its COMMIT returns.
INSERT INTO ng VALUES (2, 'two');
SELECT local_cache.mget_json('ng', '{2}');
-- Inside the inserting transaction, its own row.
BEGIN;
INSERT INTO ng VALUES (3, 'three');
SELECT local_cache.mget_json('ng', '{3}');
ROLLBACK;
SELECT local_cache.mget_json('ng', '{3}');
SELECT local_cache.mget_json('ng', '{3}');
-- A key moved onto an absent key.
UPDATE ng SET id = 3 WHERE id = 5;
SELECT local_cache.mget_json('ng', '{3,5}');
SELECT local_cache.mget_json('ng', '{3,5}');
-- DELETE: the key is absent from then on, for mget and the foreign table.
DELETE FROM ng WHERE id = 1;
SELECT local_cache.mget_json('ng', '{1}');
SELECT local_cache.mget_json('ng', '{1}');
CREATE FOREIGN TABLE ng_fdw (id bigint, v text) SERVER local_cache OPTIONS (table 'ng');
SELECT * FROM ng_fdw WHERE id IN (1, 2, 3, 4) ORDER BY id;
-- A prepared INSERT: prepared_xacts.sql.
-- TRUNCATE: every key absent.
TRUNCATE ng;
SELECT local_cache.mget_json('ng', '{2,3,4}');
SELECT local_cache.mget_json('ng', '{2,3,4}');
INSERT INTO ng VALUES (4, 'back');
SELECT local_cache.mget_json('ng', '{2,3,4}');
-- Every answer equals plain SQL.
SELECT lc_check('ng', '{1,2,3,4,5,6}');

DROP FOREIGN TABLE ng_fdw;
DROP FUNCTION ng_counts();
DROP TABLE ng;
