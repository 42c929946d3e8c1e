--
-- invalidation: every way of changing a cached row through SQL. In each case the cache
-- is warmed with mget first, the row is changed, and mget must equal plain SQL
-- (lc_check compares array_to_json(mget), mget_json and SQL; it says 'ok' or shows all).
--
\set SHOW_CONTEXT never

CREATE TABLE inv (id bigint PRIMARY KEY, name text NOT NULL, qty integer NOT NULL DEFAULT 0);
INSERT INTO inv SELECT i, 'name ' || i, i FROM generate_series(1, 10) i;
SELECT local_cache.enable('inv');

-- Warm.
SELECT local_cache.mget_json('inv', '{1,2,3,4,5,6,7,8,9,10,11,12}');
SELECT lc_check('inv', '{1,2,3,4,5,6,7,8,9,10,11,12}');
SELECT hits > 0 AS warm FROM local_cache.stats WHERE relation = 'inv'::regclass;

-- UPDATE.
UPDATE inv SET name = 'updated 1', qty = 100 WHERE id = 1;
SELECT local_cache.mget_json('inv', '{1}');
SELECT lc_check('inv', '{1,2}');
UPDATE inv SET qty = qty + 1 WHERE id IN (2, 3);
SELECT local_cache.mget_json('inv', '{2,3}');
SELECT lc_check('inv', '{1,2,3,4}');
-- An UPDATE that changes nothing is harmless.
UPDATE inv SET qty = qty WHERE id = 4;
SELECT lc_check('inv', '{4}');

-- UPDATE of the key column: the row moves from 5 to 50.
SELECT lc_check('inv', '{5,50}');
UPDATE inv SET id = 50 WHERE id = 5;
SELECT local_cache.mget_json('inv', '{5,50}');
SELECT lc_check('inv', '{5,50}');
-- and another row moves into the freed key 5.
SELECT lc_check('inv', '{5,6,50}');
UPDATE inv SET id = 5 WHERE id = 6;
SELECT local_cache.mget_json('inv', '{5,6,50}');
SELECT lc_check('inv', '{5,6,50}');

-- DELETE.
SELECT lc_check('inv', '{8}');
DELETE FROM inv WHERE id = 8;
SELECT local_cache.mget_json('inv', '{8}');
SELECT lc_check('inv', '{8,9}');

-- INSERT of a key that was missing (and asked for while missing).
SELECT local_cache.mget_json('inv', '{11,12}');
SELECT local_cache.mget_json('inv', '{11,12}');
INSERT INTO inv VALUES (11, 'inserted 11', 11);
SELECT local_cache.mget_json('inv', '{11,12}');
SELECT lc_check('inv', '{11,12}');
-- The deleted key comes back.
INSERT INTO inv VALUES (8, 'back 8', 8);
SELECT local_cache.mget_json('inv', '{8}');
SELECT lc_check('inv', '{8}');

-- INSERT ... ON CONFLICT DO UPDATE (existing key) and DO NOTHING.
SELECT lc_check('inv', '{9,12}');
INSERT INTO inv VALUES (9, 'upserted 9', 90), (12, 'upserted 12', 120)
    ON CONFLICT (id) DO UPDATE SET name = excluded.name, qty = excluded.qty;
SELECT local_cache.mget_json('inv', '{9,12}');
SELECT lc_check('inv', '{9,12}');
INSERT INTO inv VALUES (9, 'ignored', 0) ON CONFLICT DO NOTHING;
SELECT lc_check('inv', '{9}');

-- MERGE: update, delete and insert actions.
SELECT lc_check('inv', '{10,11,13}');
MERGE INTO inv t
USING (VALUES (10, 'merged 10'), (11, NULL), (13, 'merged 13')) AS s(id, name)
   ON t.id = s.id
 WHEN MATCHED AND s.name IS NULL THEN DELETE
 WHEN MATCHED THEN UPDATE SET name = s.name
 WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name);
SELECT local_cache.mget_json('inv', '{10,11,13}');
SELECT lc_check('inv', '{10,11,13}');

-- COPY FROM STDIN: new keys (asked for while missing) and nothing else.
SELECT local_cache.mget_json('inv', '{14,15}');
COPY inv (id, name, qty) FROM STDIN;
14	copied 14	14
15	copied 15	15
\.
SELECT local_cache.mget_json('inv', '{14,15}');
SELECT lc_check('inv', '{14,15}');

-- A writable CTE, an updatable view, a PL/pgSQL function, a cascading foreign key.
SELECT lc_check('inv', '{1,2,3,4}');
WITH u AS (UPDATE inv SET qty = -1 WHERE id = 1 RETURNING id)
SELECT count(*) AS updated FROM u;
CREATE VIEW inv_view AS SELECT * FROM inv;
UPDATE inv_view SET qty = -2 WHERE id = 2;
CREATE FUNCTION inv_bump(k bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE inv SET qty = qty + 1000 WHERE id = k;
END $$;
SELECT inv_bump(3);
SELECT local_cache.mget_json('inv', '{1,2,3}');
SELECT lc_check('inv', '{1,2,3,4}');
CREATE TABLE inv_parent (id bigint PRIMARY KEY);
INSERT INTO inv_parent VALUES (1), (2), (3), (4);
ALTER TABLE inv ADD COLUMN parent bigint REFERENCES inv_parent ON DELETE CASCADE ON UPDATE CASCADE;
UPDATE inv SET parent = id WHERE id <= 4;
SELECT lc_check('inv', '{1,2,3,4}');
UPDATE inv_parent SET id = 40 WHERE id = 4;
DELETE FROM inv_parent WHERE id = 3;
SELECT local_cache.mget_json('inv', '{3,4}');
SELECT lc_check('inv', '{1,2,3,4}');

-- A statement that changes a row and reads it in the same snapshot sees the old row,
-- like SQL does; the next statement sees the new one.
SELECT lc_check('inv', '{2}');
WITH u AS (UPDATE inv SET name = 'cte 2' WHERE id = 2 RETURNING id)
SELECT (SELECT count(*) FROM u) AS updated,
       local_cache.mget_json('inv', '{2}') AS mget,
       sql_mget('inv', '{2}') AS sql;
SELECT lc_check('inv', '{2}');

--
-- Transactions.
--
SELECT lc_check('inv', '{1,2,16}');
-- Own uncommitted changes are seen inside the transaction.
BEGIN;
UPDATE inv SET name = 'tx 1' WHERE id = 1;
INSERT INTO inv VALUES (16, 'tx 16', 16);
DELETE FROM inv WHERE id = 2;
SELECT local_cache.mget_json('inv', '{1,2,16}');
SELECT lc_check('inv', '{1,2,16}');
SELECT lc_check('inv', '{1,2,16}');
COMMIT;
SELECT local_cache.mget_json('inv', '{1,2,16}');
SELECT lc_check('inv', '{1,2,16}');

-- ROLLBACK: nothing of the aborted transaction is served afterwards, even though it
-- was read (and maybe cached) inside.
SELECT lc_check('inv', '{1,16,17}');
BEGIN;
UPDATE inv SET name = 'aborted 1' WHERE id = 1;
INSERT INTO inv VALUES (17, 'aborted 17', 17);
DELETE FROM inv WHERE id = 16;
SELECT local_cache.mget_json('inv', '{1,16,17}');
SELECT lc_check('inv', '{1,16,17}');
ROLLBACK;
SELECT local_cache.mget_json('inv', '{1,16,17}');
SELECT lc_check('inv', '{1,16,17}');
SELECT local_cache.mget_json('inv', '{1,16,17}');

-- A transaction that reads first (warm), then writes, then reads again.
BEGIN;
SELECT lc_check('inv', '{9}');
UPDATE inv SET name = 'read then write 9' WHERE id = 9;
SELECT local_cache.mget_json('inv', '{9}');
SELECT lc_check('inv', '{9}');
COMMIT;
SELECT lc_check('inv', '{9}');

-- Error-aborted transaction.
BEGIN;
UPDATE inv SET name = 'error 9' WHERE id = 9;
SELECT lc_check('inv', '{9}');
SELECT 1 / 0;
ROLLBACK;
SELECT local_cache.mget_json('inv', '{9}');
SELECT lc_check('inv', '{9}');

-- Savepoints: ROLLBACK TO shows the rolled-back state, RELEASE keeps the changes.
SELECT lc_check('inv', '{1,10,18}');
BEGIN;
UPDATE inv SET name = 'before savepoint 1' WHERE id = 1;
SAVEPOINT s1;
UPDATE inv SET name = 'in savepoint 1' WHERE id = 1;
INSERT INTO inv VALUES (18, 'in savepoint 18', 18);
DELETE FROM inv WHERE id = 10;
SELECT local_cache.mget_json('inv', '{1,10,18}');
SELECT lc_check('inv', '{1,10,18}');
ROLLBACK TO SAVEPOINT s1;
SELECT local_cache.mget_json('inv', '{1,10,18}');
SELECT lc_check('inv', '{1,10,18}');
SAVEPOINT s2;
UPDATE inv SET name = 'released 10' WHERE id = 10;
RELEASE SAVEPOINT s2;
SELECT local_cache.mget_json('inv', '{1,10,18}');
SELECT lc_check('inv', '{1,10,18}');
COMMIT;
SELECT local_cache.mget_json('inv', '{1,10,18}');
SELECT lc_check('inv', '{1,10,18}');
-- Savepoint rolled back inside a transaction that is committed after.
SELECT lc_check('inv', '{1}');
BEGIN;
SAVEPOINT s3;
UPDATE inv SET name = 'rolled back 1' WHERE id = 1;
SELECT lc_check('inv', '{1}');
ROLLBACK TO SAVEPOINT s3;
SELECT lc_check('inv', '{1}');
COMMIT;
SELECT local_cache.mget_json('inv', '{1}');
SELECT lc_check('inv', '{1}');

-- A PL/pgSQL exception block (a subtransaction) that writes and reads, then fails.
DO $$
BEGIN
    BEGIN
        UPDATE inv SET name = 'in exception block' WHERE id = 1;
        RAISE NOTICE 'inside: %', lc_check('inv', '{1}');
        RAISE NOTICE 'inside: %', local_cache.mget_json('inv', '{1}');
        RAISE EXCEPTION 'roll back the block';
    EXCEPTION WHEN raise_exception THEN
        NULL;
    END;
    RAISE NOTICE 'after: %', lc_check('inv', '{1}');
    RAISE NOTICE 'after: %', local_cache.mget_json('inv', '{1}');
END $$;
SELECT lc_check('inv', '{1}');

-- TRUNCATE.
SELECT lc_check('inv', '{1,2,3,9}');
TRUNCATE inv;
SELECT local_cache.mget_json('inv', '{1,2,3,9}');
SELECT lc_check('inv', '{1,2,3,9}');
INSERT INTO inv (id, name, qty) VALUES (1, 'after truncate 1', 1), (2, 'after truncate 2', 2);
SELECT local_cache.mget_json('inv', '{1,2,3}');
SELECT lc_check('inv', '{1,2,3}');
-- TRUNCATE rolled back: the rows are there again.
BEGIN;
TRUNCATE inv;
SELECT lc_check('inv', '{1,2}');
ROLLBACK;
SELECT local_cache.mget_json('inv', '{1,2}');
SELECT lc_check('inv', '{1,2}');
-- TRUNCATE and refill in one transaction.
BEGIN;
TRUNCATE inv;
INSERT INTO inv (id, name, qty) VALUES (1, 'refilled 1', 10);
SELECT lc_check('inv', '{1,2}');
COMMIT;
SELECT local_cache.mget_json('inv', '{1,2}');
SELECT lc_check('inv', '{1,2}');
INSERT INTO inv (id, name, qty) VALUES (2, 'two', 2), (3, 'three', 3);

-- session_replication_role = replica: the triggers still fire.
SELECT lc_check('inv', '{1,2,3}');
SET session_replication_role = replica;
UPDATE inv SET name = 'replica 1' WHERE id = 1;
DELETE FROM inv WHERE id = 2;
INSERT INTO inv VALUES (4, 'replica 4', 4);
SELECT local_cache.mget_json('inv', '{1,2,3,4}');
SELECT lc_check('inv', '{1,2,3,4}');
TRUNCATE inv;
SELECT lc_check('inv', '{1,2,3,4}');
RESET session_replication_role;
SELECT lc_check('inv', '{1,2,3,4}');
INSERT INTO inv (id, name, qty) VALUES (1, 'one', 1), (2, 'two', 2), (3, 'three', 3);
SELECT lc_check('inv', '{1,2,3,4}');

-- Two-phase commit: prepared_xacts.sql (it needs max_prepared_transactions > 0). The rows its
-- prepared transactions used to commit here, written directly, for what follows.
UPDATE inv SET name = 'prepared 1' WHERE id = 1;
DELETE FROM inv WHERE id = 2;
INSERT INTO inv VALUES (19, 'prepared 19', 19);
UPDATE inv SET name = 'prepared cold 3' WHERE id = 3;
SELECT lc_check('inv', '{1,2,3,19}');

-- A cursor keeps its snapshot, also after the transaction wrote the table.
SELECT lc_check('inv', '{1,2,3}');
BEGIN;
DECLARE c CURSOR FOR
    SELECT g, local_cache.mget_json('inv', ARRAY[g]) AS mget, sql_mget('inv', ARRAY[g]) AS sql
      FROM generate_series(1, 3) g;
FETCH 1 FROM c;
INSERT INTO inv VALUES (2, 'cursor 2', 2);
UPDATE inv SET name = 'cursor 3' WHERE id = 3;
FETCH 2 FROM c;
SELECT lc_check('inv', '{1,2,3}');
COMMIT;
SELECT local_cache.mget_json('inv', '{1,2,3}');
SELECT lc_check('inv', '{1,2,3}');

-- Writes while local_cache.enabled is off still invalidate.
SELECT lc_check('inv', '{1}');
SET local_cache.enabled = off;
UPDATE inv SET name = 'written while disabled 1' WHERE id = 1;
SELECT lc_check('inv', '{1}');
RESET local_cache.enabled;
SELECT local_cache.mget_json('inv', '{1}');
SELECT lc_check('inv', '{1}');

-- TRUNCATE of another table that cascades to the cached one.
SELECT lc_check('inv', '{1,3,19}');
TRUNCATE inv_parent CASCADE;
SELECT local_cache.mget_json('inv', '{1,3,19}');
SELECT lc_check('inv', '{1,3,19}');

-- One transaction that changes more than 100,000 keys of a table (past 10,000 it is flushed whole).
CREATE TABLE inv_many (id bigint PRIMARY KEY, v integer NOT NULL);
INSERT INTO inv_many SELECT i, 0 FROM generate_series(1, 100100) i;
SELECT local_cache.enable('inv_many');
SELECT lc_check('inv_many', '{1,2,50000,100000,100100,100101}');
UPDATE inv_many SET v = 1;
SELECT local_cache.mget_json('inv_many', '{1,2,50000,100000,100100,100101}');
SELECT lc_check('inv_many', '{1,2,50000,100000,100100,100101}');
BEGIN;
UPDATE inv_many SET v = 2 WHERE id > 100;
DELETE FROM inv_many WHERE id <= 100;
INSERT INTO inv_many SELECT i, 3 FROM generate_series(200001, 300010) i;
COMMIT;
SELECT local_cache.mget_json('inv_many', '{1,2,50000,100000,100100,100101,200001,300010}');
SELECT lc_check('inv_many', '{1,2,50000,100000,100100,100101,200001,300010}');
SELECT count(*) FILTER (WHERE r::text = 'null') AS missing, sum((r->>'v')::int) AS sum_v
  FROM json_array_elements(local_cache.mget_json('inv_many', ARRAY(SELECT generate_series(1, 100100)::bigint))) AS e(r);
DROP TABLE inv_many;

-- Past 10,000 rows written in a transaction the rest queue no trigger event (capture_keys): the
-- table is flushed at commit, also when the statement that crossed the line was rolled back.
CREATE TABLE inv_rows (id bigint PRIMARY KEY, v integer NOT NULL);
INSERT INTO inv_rows SELECT i, 0 FROM generate_series(1, 12000) i;
SELECT local_cache.enable('inv_rows');
SELECT lc_check('inv_rows', '{1,6000,6001,11999,12000}'), lc_check('inv_rows', '{1,6000,6001,11999,12000}');
BEGIN;
UPDATE inv_rows SET v = 1 WHERE id <= 6000;
SAVEPOINT s;
UPDATE inv_rows SET v = 2 WHERE id > 6000;
ROLLBACK TO s;
UPDATE inv_rows SET v = 3 WHERE id = 12000;
COMMIT;
SELECT lc_check('inv_rows', '{1,6000,6001,11999,12000}');
SELECT lc_check('inv_rows', '{1,6000,6001,11999,12000}');
UPDATE inv_rows SET v = 4;
SELECT (SELECT sum((r->>'v')::int) FROM json_array_elements(local_cache.mget_json('inv_rows',
          ARRAY(SELECT generate_series(1, 12000)::bigint))) AS e(r)) = 48000 AS all_rows_new;
-- Past the line the capture's row trigger is switched off for the rest of the statement, and for
-- the transaction's later statements, only for the events it is the table's one AFTER ROW trigger
-- of: another AFTER ROW trigger (here on UPDATE) still fires for every row.
CREATE TABLE inv_rows_seen (op text);
CREATE FUNCTION inv_rows_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO inv_rows_seen VALUES (TG_OP);
    RETURN NULL;
END $$;
CREATE TRIGGER inv_rows_count AFTER UPDATE ON inv_rows FOR EACH ROW EXECUTE FUNCTION inv_rows_count();
SELECT lc_check('inv_rows', '{1,3,4,11000,11001,12000}');
BEGIN;
UPDATE inv_rows SET v = 5;
UPDATE inv_rows SET v = 6 WHERE id <= 3;
DELETE FROM inv_rows WHERE id > 11000;
COMMIT;
SELECT op, count(*) FROM inv_rows_seen GROUP BY op;
SELECT lc_check('inv_rows', '{1,3,4,11000,11001,12000}');
SELECT count(*) FILTER (WHERE r::text = 'null') AS missing, sum((r->>'v')::int) AS sum_v
  FROM json_array_elements(local_cache.mget_json('inv_rows', ARRAY(SELECT generate_series(1, 12000)::bigint))) AS e(r);
DROP TABLE inv_rows, inv_rows_seen;
DROP FUNCTION inv_rows_count();

DROP FUNCTION inv_bump(bigint);
DROP VIEW inv_view;
DROP TABLE inv, inv_parent;

-- One transaction writing six tables and twenty keys of each, more than the capture keeps in its
-- small arrays (4 tables, 8 keys) before it spills into hash tables, with a savepoint rolled back
-- in the middle: every key written and kept is invalidated, the rolled-back ones are not needed.
CREATE TABLE inv_six_1 (id bigint PRIMARY KEY, v integer NOT NULL);
INSERT INTO inv_six_1 SELECT i, 0 FROM generate_series(1, 30) i;
CREATE TABLE inv_six_2 (LIKE inv_six_1 INCLUDING ALL);
CREATE TABLE inv_six_3 (LIKE inv_six_1 INCLUDING ALL);
CREATE TABLE inv_six_4 (LIKE inv_six_1 INCLUDING ALL);
CREATE TABLE inv_six_5 (LIKE inv_six_1 INCLUDING ALL);
CREATE TABLE inv_six_6 (LIKE inv_six_1 INCLUDING ALL);
SELECT count(local_cache.enable(format('inv_six_%s', t)::regclass)) FROM generate_series(1, 6) t;
INSERT INTO inv_six_2 SELECT * FROM inv_six_1;
INSERT INTO inv_six_3 SELECT * FROM inv_six_1;
INSERT INTO inv_six_4 SELECT * FROM inv_six_1;
INSERT INTO inv_six_5 SELECT * FROM inv_six_1;
INSERT INTO inv_six_6 SELECT * FROM inv_six_1;
SELECT t, lc_check(format('inv_six_%s', t)::regclass, ARRAY(SELECT generate_series(1, 30)::bigint))
  FROM generate_series(1, 6) t;
BEGIN;
UPDATE inv_six_1 SET v = 1 WHERE id = 1;
UPDATE inv_six_2 SET v = 1 WHERE id <= 3;
SAVEPOINT s;
UPDATE inv_six_3 SET v = 2 WHERE id <= 20;
UPDATE inv_six_1 SET v = 2 WHERE id <= 20;
ROLLBACK TO s;
UPDATE inv_six_3 SET v = 3 WHERE id > 10;
UPDATE inv_six_4 SET v = 4 WHERE id <= 20;
UPDATE inv_six_5 SET v = 5 WHERE id = 5;
UPDATE inv_six_6 SET v = 6 WHERE id <= 20;
DELETE FROM inv_six_6 WHERE id = 30;
SAVEPOINT t;
UPDATE inv_six_5 SET v = 7 WHERE id <= 20;
RELEASE t;
COMMIT;
SELECT t, lc_check(format('inv_six_%s', t)::regclass, ARRAY(SELECT generate_series(1, 30)::bigint)),
       (SELECT sum((r->>'v')::integer) FROM json_array_elements(local_cache.mget_json(format('inv_six_%s', t)::regclass,
          ARRAY(SELECT generate_series(1, 30)::bigint))) AS e(r)) AS cached_sum
  FROM generate_series(1, 6) t;
DROP TABLE inv_six_1, inv_six_2, inv_six_3, inv_six_4, inv_six_5, inv_six_6;
-- A transaction past the keys it keeps a hash table for afterwards (1,024): the table is dropped at
-- its end, and nothing may walk its entries after that (a backend crashed on it once: in a new
-- session, whose allocator hands a large table memory of its own that the drop gives back).
\c -
CREATE TABLE inv_many_keys (id bigint PRIMARY KEY, v integer NOT NULL);
SELECT local_cache.enable('inv_many_keys');
INSERT INTO inv_many_keys SELECT i, 0 FROM generate_series(1, 20000) i;
UPDATE inv_many_keys SET v = 1 WHERE id <= 5000;
SELECT lc_check('inv_many_keys', '{1,5000,5001,20000}');
UPDATE inv_many_keys SET v = 2 WHERE id <= 5000;
SELECT lc_check('inv_many_keys', '{1,5000,5001,20000}'), local_cache.mget_json('inv_many_keys', '{1}');
DROP TABLE inv_many_keys;
