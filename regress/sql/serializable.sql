--
-- serializable: SERIALIZABLE reads are served from the cache (the hit counter shows it), with
-- the same answers as plain SQL; the predicate locks they take are tested by the isolation
-- specs serializable_write_skew, serializable_read_only and serializable_gap.
--
CREATE TABLE sz (id bigint PRIMARY KEY, v text NOT NULL);
INSERT INTO sz SELECT g, 'row ' || g FROM generate_series(1, 64) g;
SELECT local_cache.enable('sz');
CREATE FOREIGN TABLE sz_fdw (id bigint, v text) SERVER local_cache OPTIONS (table 'public.sz');
CREATE TEMP TABLE sz_keys AS SELECT array_agg(g ORDER BY g) || ARRAY[1000, 1001]::bigint[] AS k
  FROM generate_series(1, 64) g;
CREATE FUNCTION sz_counts(OUT hits bigint, OUT negative_hits bigint, OUT misses bigint)
LANGUAGE sql AS $$ SELECT hits, negative_hits, misses FROM local_cache.stats WHERE relation = 'sz'::regclass $$;
-- Warm (READ COMMITTED): 64 rows and two negative entries.
SELECT lc_kcheck('sz', k) AS warm FROM sz_keys;
SELECT local_cache.reset_stats();

-- 66 keys through mget (twice) and mget_json (lc_check), and the foreign table: all from
-- memory, and what plain SQL returns.
SELECT k AS keys FROM sz_keys \gset
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT lc_kcheck('sz', k) AS serializable FROM sz_keys;
SELECT * FROM sz_counts();
SELECT (SELECT string_agg(f.id || '=' || f.v, ' ' ORDER BY f.id) FROM sz_fdw f WHERE id = ANY(:'keys'::bigint[])) =
       (SELECT string_agg(t.id || '=' || t.v, ' ' ORDER BY t.id) FROM sz t WHERE id = ANY(:'keys'::bigint[])) AS fdw_same;
SELECT * FROM sz_counts();
COMMIT;

-- READ ONLY DEFERRABLE (nothing concurrent: the snapshot is safe at once).
SELECT local_cache.reset_stats();
BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE;
SELECT lc_kcheck('sz', k) AS deferrable FROM sz_keys;
COMMIT;
SELECT * FROM sz_counts();

-- A SERIALIZABLE transaction that wrote the table reads it from the table (and sees its write).
SELECT local_cache.reset_stats();
BEGIN ISOLATION LEVEL SERIALIZABLE;
UPDATE sz SET v = 'changed' WHERE id = 3;
SELECT local_cache.mget_json('sz', '{3,4}');
SELECT * FROM sz_counts();
COMMIT;
-- After it: from memory again (key 3 refilled by the first read).
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT local_cache.mget_json('sz', '{3,4}');
SELECT local_cache.mget_json('sz', '{3,4}');
COMMIT;
SELECT * FROM sz_counts();

DROP FOREIGN TABLE sz_fdw;
DROP FUNCTION sz_counts();
DROP TABLE sz;
