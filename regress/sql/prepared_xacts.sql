--
-- prepared_xacts: two-phase commit. A prepared transaction's writes are not served (nor cached
-- as absent) until COMMIT PREPARED, and are never served after ROLLBACK PREPARED, for bigint and
-- uuid keys and negative entries. PREPARE TRANSACTION needs max_prepared_transactions > 0;
-- with PostgreSQL's default of 0 it fails, and prepared_xacts_1.out is the expected output
-- (as for PostgreSQL's own prepared_xacts test): `make installcheck` runs on the DBA's server.
--
\set SHOW_CONTEXT never

CREATE TABLE px (id bigint PRIMARY KEY, name text NOT NULL, qty integer NOT NULL DEFAULT 0);
INSERT INTO px SELECT i, 'name ' || i, i FROM generate_series(1, 10) i;
SELECT local_cache.enable('px');

-- COMMIT PREPARED: the new row is served afterwards, even if the old one was read
-- (and cached again) while the transaction was prepared.
SELECT lc_check('px', '{1,2,3,19}');
BEGIN;
UPDATE px SET name = 'prepared 1' WHERE id = 1;
DELETE FROM px WHERE id = 2;
INSERT INTO px VALUES (19, 'prepared 19', 19);
SELECT lc_check('px', '{1,2,19}');
PREPARE TRANSACTION 'regress_lc_px_commit';
SELECT local_cache.mget_json('px', '{1,2,19}');
SELECT lc_check('px', '{1,2,19}');
SELECT lc_check('px', '{1,2,19}');
COMMIT PREPARED 'regress_lc_px_commit';
SELECT local_cache.mget_json('px', '{1,2,19}');
SELECT lc_check('px', '{1,2,19}');
-- ROLLBACK PREPARED: the old rows (the writes in one statement this time).
SELECT lc_check('px', '{1,3,19,20}');
BEGIN;
WITH u AS (UPDATE px SET name = 'never 1' WHERE id = 1), d AS (DELETE FROM px WHERE id = 3)
INSERT INTO px VALUES (20, 'never 20', 20);
SELECT lc_check('px', '{1,3,19,20}');
PREPARE TRANSACTION 'regress_lc_px_rollback';
SELECT lc_check('px', '{1,3,19,20}');
ROLLBACK PREPARED 'regress_lc_px_rollback';
SELECT local_cache.mget_json('px', '{1,3,19,20}');
SELECT lc_check('px', '{1,3,19,20}');
-- Prepared with a cold cache, read while prepared, committed.
SELECT local_cache.flush('px') >= 0 AS flushed;
BEGIN;
UPDATE px SET name = 'prepared cold 3' WHERE id = 3;
PREPARE TRANSACTION 'regress_lc_px_cold';
SELECT lc_check('px', '{3}');
SELECT lc_check('px', '{3}');
COMMIT PREPARED 'regress_lc_px_cold';
SELECT local_cache.mget_json('px', '{3}');
SELECT lc_check('px', '{3}');
SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'regress_lc_px_%';

CREATE TABLE px_ng (id bigint PRIMARY KEY, v text);
INSERT INTO px_ng VALUES (1, 'one');
SELECT local_cache.enable('px_ng');
CREATE FUNCTION px_ng_counts(OUT negative_hits bigint, OUT fills bigint)
    LANGUAGE sql AS $$SELECT negative_hits, fills FROM local_cache.stats
                       WHERE relation = 'px_ng'::regclass$$;
-- A prepared INSERT: absent while prepared (and no negative entry filled for it), present
-- after COMMIT PREPARED.
BEGIN;
INSERT INTO px_ng VALUES (4, 'four');
PREPARE TRANSACTION 'regress_lc_px_negative';
SELECT local_cache.reset_stats();
SELECT local_cache.mget_json('px_ng', '{4}');
SELECT local_cache.mget_json('px_ng', '{4}');
SELECT negative_hits, fills FROM px_ng_counts();
COMMIT PREPARED 'regress_lc_px_negative';
SELECT local_cache.mget_json('px_ng', '{4}');
SELECT lc_check('px_ng', '{1,4}');

CREATE TABLE px_ku (id uuid PRIMARY KEY, v text NOT NULL, n int);
INSERT INTO px_ku VALUES ('11111111-1111-1111-1111-111111111111', 'one', 1),
    ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', 'a0ee..12', -3);
SELECT local_cache.enable('px_ku');
CREATE TEMP TABLE px_ku_keys AS
SELECT ARRAY['11111111-1111-1111-1111-111111111111', '22222222-2222-2222-2222-222222222222',
             'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', NULL]::uuid[] AS k;
-- A prepared transaction: its writes are not seen (and not cached as absent) until COMMIT
-- PREPARED.
SELECT lc_kcheck('px_ku', k) AS warm FROM px_ku_keys;
BEGIN;
INSERT INTO px_ku VALUES ('22222222-2222-2222-2222-222222222222', 'prepared insert', 60);
DELETE FROM px_ku WHERE id = '11111111-1111-1111-1111-111111111111';
PREPARE TRANSACTION 'regress_lc_px_uuid';
SELECT 'prepared' AS step, lc_kcheck('px_ku', k) FROM px_ku_keys;
SELECT 'prepared' AS step, lc_kcheck('px_ku', k) FROM px_ku_keys;
SELECT local_cache.mget_json('px_ku', '{22222222-2222-2222-2222-222222222222,11111111-1111-1111-1111-111111111111}');
COMMIT PREPARED 'regress_lc_px_uuid';
SELECT 'committed' AS step, lc_kcheck('px_ku', k) FROM px_ku_keys;
SELECT local_cache.mget_json('px_ku', '{22222222-2222-2222-2222-222222222222,11111111-1111-1111-1111-111111111111}');

SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'regress_lc_px_%';
DROP FUNCTION px_ng_counts();
DROP TABLE px, px_ng, px_ku;
