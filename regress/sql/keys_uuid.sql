--
-- keys_uuid: tables keyed by uuid. For every key, mget and mget_json return exactly the row
-- plain SQL finds by it (sql_kmget in setup.sql), cold and warm, after every kind of write,
-- DDL, and inside writing transactions. Keys come as uuid[] or in any spelling uuid's input
-- function takes (upper case, braces, without dashes); a spelling that is no uuid is an error
-- that names the key.
--
\set SHOW_CONTEXT never

CREATE TABLE ku (id uuid PRIMARY KEY, v text NOT NULL, n int);
INSERT INTO ku VALUES
    ('00000000-0000-0000-0000-000000000000', 'zero', 0),
    ('ffffffff-ffff-ffff-ffff-ffffffffffff', 'all ones', -1),
    ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'a0ee..11', -2),
    ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', 'a0ee..12', -3),
    ('123e4567-e89b-12d3-a456-426614174000', 'version 1', -4);
INSERT INTO ku SELECT md5(i::text)::uuid, 'md5 ' || i, i FROM generate_series(1, 200) i;
SELECT local_cache.enable('ku');
-- Every row above but the md5 ones past 2, neighbours that name no row, NULLs, duplicates,
-- and keys written later.
CREATE TEMP TABLE ku_keys AS
SELECT ARRAY['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
             'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12',
             '123e4567-e89b-12d3-a456-426614174000', md5('1'), md5('2'),
             NULL, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', md5('1'), NULL,
             'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13', '00000000-0000-0000-0000-000000000001',
             'fffffffe-ffff-ffff-ffff-ffffffffffff', md5('201'),
             '11111111-1111-1111-1111-111111111111', '22222222-2222-2222-2222-222222222222',
             '33333333-3333-3333-3333-333333333333']::uuid[] AS k;

-- Cold (the first of lc_kcheck's three reads fills, the other two hit), then warm.
SELECT local_cache.flush('ku') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT lc_kcheck('ku', k) AS cold FROM ku_keys;
SELECT * FROM lc_kstats('ku');
SELECT lc_kcheck('ku', k) AS warm FROM ku_keys;
SELECT * FROM lc_kstats('ku');
-- The same keys as text[] and varchar[] (uuid's input function reads them).
SELECT lc_kcheck('ku', k::text[]) AS as_text, lc_kcheck('ku', k::varchar[]) AS as_varchar FROM ku_keys;

-- What the rows are: input order, duplicates, NULL for NULL and missing keys.
SELECT local_cache.mget_json('ku', '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12,NULL,00000000-0000-0000-0000-000000000000,a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13,a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12}');
SELECT array_to_json(local_cache.mget('ku', ARRAY['ffffffff-ffff-ffff-ffff-ffffffffffff', NULL,
                                                  '123e4567-e89b-12d3-a456-426614174000']::uuid[])) AS rows;
SELECT u.ord, u.id, u.v
  FROM (SELECT local_cache.mget('ku', ARRAY[md5('3'), NULL, md5('300'), md5('3')]::uuid[]) AS m OFFSET 0) s,
       ROWS FROM (unnest(s.m) AS (id uuid, v text, n int)) WITH ORDINALITY AS u(id, v, n, ord)
 ORDER BY u.ord;
-- Every spelling uuid's input takes names the same key.
CREATE TEMP TABLE ku_spellings AS
SELECT ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
             '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}', 'a0eebc999c0b4ef8bb6d6bb9bd380a11',
             'a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11', '{A0EEBC99-9C0B4EF8-BB6D6BB9-BD380A11}',
             'A0eEbC999c0B4eF8bB6d6Bb9Bd380A11'] AS k;
SELECT lc_kcheck('ku', k) AS as_text, lc_kcheck('ku', k::varchar(40)[]) AS as_varchar,
       lc_kcheck('ku', k::uuid[]) AS as_uuid
  FROM ku_spellings;
SELECT local_cache.mget_json('ku', k) FROM ku_spellings;
-- Empty, NULL and all-NULL arrays.
SELECT local_cache.mget_json('ku', '{}'), local_cache.mget('ku', '{}'::uuid[]) AS mget,
       local_cache.mget_json('ku', NULL::uuid[]) IS NULL AS null_json,
       local_cache.mget('ku', NULL::text[]) IS NULL AS null_mget,
       local_cache.mget_json('ku', ARRAY[NULL, NULL]::uuid[]) AS all_null;
-- Lower bounds other than 1: input order still.
SELECT local_cache.mget_json('ku', '[5:6]={ffffffff-ffff-ffff-ffff-ffffffffffff,00000000-0000-0000-0000-000000000000}');

-- A thousand keys (present, missing, NULL, repeated), cold and warm.
CREATE TEMP TABLE ku_many AS
SELECT ARRAY(SELECT CASE WHEN g % 7 = 0 THEN NULL ELSE md5((g % 250)::text)::uuid END
               FROM generate_series(1, 1000) g) AS k;
SELECT local_cache.flush('ku') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT lc_kcheck('ku', k) AS cold, lc_kcheck('ku', k) AS warm FROM ku_many;
SELECT * FROM lc_kstats('ku');
SELECT count(*) FILTER (WHERE r::text <> 'null') AS rows, count(*) AS keys
  FROM ku_many, json_array_elements(local_cache.mget_json('ku', k)) r;

--
-- Errors: what is no uuid, and arrays of the wrong shape.
--
\set SHOW_CONTEXT errors
SELECT local_cache.mget('ku', '{not-a-uuid}');
SELECT local_cache.mget_json('ku', ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', NULL, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1']);
SELECT local_cache.mget_json('ku', ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 ']);
SELECT local_cache.mget_json('ku', ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '']);
-- Elements of a type that is no uuid are read by their text form, which is no uuid.
SELECT local_cache.mget_json('ku', ARRAY[1, 2]);
SELECT local_cache.mget_json('ku', ARRAY[true]);
\set SHOW_CONTEXT never
SELECT local_cache.mget('ku', ARRAY[['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid]]);
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.mget_json('ku', '{{00000000-0000-0000-0000-000000000000,ffffffff-ffff-ffff-ffff-ffffffffffff}}');
\echo :LAST_ERROR_SQLSTATE

--
-- Invalidation: every write is seen by the next read, cached rows and cached absent keys
-- alike.
--
SELECT lc_kcheck('ku', k) AS warm FROM ku_keys;
-- UPDATE of other columns.
UPDATE ku SET v = v || ' updated', n = n + 1000
 WHERE id IN ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', md5('1')::uuid);
SELECT 'update of a column' AS step, lc_kcheck('ku', k) FROM ku_keys;
SELECT local_cache.mget_json('ku', ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', md5('1')]);
-- UPDATE of the key: the old key is missing, the new one present.
UPDATE ku SET id = '11111111-1111-1111-1111-111111111111' WHERE id = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12';
SELECT 'update of the key' AS step, lc_kcheck('ku', k) FROM ku_keys;
SELECT local_cache.mget_json('ku', '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12,11111111-1111-1111-1111-111111111111}');
-- Two keys swapped in one transaction.
BEGIN;
UPDATE ku SET id = '22222222-2222-2222-2222-222222222222' WHERE id = '00000000-0000-0000-0000-000000000000';
UPDATE ku SET id = '00000000-0000-0000-0000-000000000000' WHERE id = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
UPDATE ku SET id = 'ffffffff-ffff-ffff-ffff-ffffffffffff' WHERE id = '22222222-2222-2222-2222-222222222222';
COMMIT;
SELECT 'swapped keys' AS step, lc_kcheck('ku', k) FROM ku_keys;
SELECT local_cache.mget_json('ku', '{00000000-0000-0000-0000-000000000000,ffffffff-ffff-ffff-ffff-ffffffffffff,22222222-2222-2222-2222-222222222222}');
-- DELETE, then INSERT of the same key.
DELETE FROM ku WHERE id = '123e4567-e89b-12d3-a456-426614174000';
SELECT 'delete' AS step, lc_kcheck('ku', k) FROM ku_keys;
SELECT local_cache.mget_json('ku', '{123e4567-e89b-12d3-a456-426614174000}');
INSERT INTO ku VALUES ('123e4567-e89b-12d3-a456-426614174000', 'inserted again', 40);
SELECT 'insert again' AS step, lc_kcheck('ku', k) FROM ku_keys;
SELECT local_cache.mget_json('ku', '{123e4567-e89b-12d3-a456-426614174000}');
-- INSERT of a key read (and cached) as absent, read in another spelling.
SELECT local_cache.reset_stats();
SELECT local_cache.mget_json('ku', '{33333333-3333-3333-3333-333333333333}') AS first,
       local_cache.mget_json('ku', '{33333333333333333333333333333333}') AS second;
SELECT * FROM lc_kstats('ku');
INSERT INTO ku VALUES ('33333333-3333-3333-3333-333333333333', 'inserted after a read', 41);
SELECT local_cache.mget_json('ku', '{33333333333333333333333333333333}');
SELECT 'insert of an absent key' AS step, lc_kcheck('ku', k) FROM ku_keys;
-- INSERT ... ON CONFLICT, both ways.
INSERT INTO ku VALUES ('fffffffe-ffff-ffff-ffff-ffffffffffff', 'upserted', 42),
                      ('33333333-3333-3333-3333-333333333333', 'conflict', 0)
    ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
SELECT local_cache.mget_json('ku', '{fffffffe-ffff-ffff-ffff-ffffffffffff,33333333-3333-3333-3333-333333333333}');
SELECT 'upsert' AS step, lc_kcheck('ku', k) FROM ku_keys;

-- Own writes: inside a transaction that wrote the table, its own rows; after ROLLBACK the
-- committed ones.
SELECT lc_kcheck('ku', k) AS warm FROM ku_keys;
BEGIN;
UPDATE ku SET v = 'own update' WHERE id = md5('2')::uuid;
DELETE FROM ku WHERE id = '00000000-0000-0000-0000-000000000000';
INSERT INTO ku VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13', 'own insert', 50);
UPDATE ku SET id = '00000000-0000-0000-0000-000000000001' WHERE id = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
SELECT 'own writes' AS step, lc_kcheck('ku', k) FROM ku_keys;
SELECT local_cache.mget_json('ku', '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13,00000000-0000-0000-0000-000000000000,00000000-0000-0000-0000-000000000001,ffffffff-ffff-ffff-ffff-ffffffffffff}');
SAVEPOINT s1;
UPDATE ku SET v = 'in a savepoint' WHERE id = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13';
SELECT 'own update in a savepoint' AS step, lc_kcheck('ku', k) FROM ku_keys;
ROLLBACK TO SAVEPOINT s1;
SELECT 'after ROLLBACK TO SAVEPOINT' AS step, lc_kcheck('ku', k) FROM ku_keys;
ROLLBACK;
SELECT 'after ROLLBACK' AS step, lc_kcheck('ku', k) FROM ku_keys;
SELECT local_cache.mget_json('ku', '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13,00000000-0000-0000-0000-000000000000,00000000-0000-0000-0000-000000000001,ffffffff-ffff-ffff-ffff-ffffffffffff}');
BEGIN;
INSERT INTO ku VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13', 'committed insert', 51);
SELECT 'own writes' AS step, lc_kcheck('ku', k) FROM ku_keys;
COMMIT;
SELECT 'after COMMIT' AS step, lc_kcheck('ku', k) FROM ku_keys;
SELECT local_cache.mget_json('ku', '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13}');

-- A prepared transaction: prepared_xacts.sql. The rows it used to commit here, for what follows.
INSERT INTO ku VALUES ('22222222-2222-2222-2222-222222222222', 'prepared insert', 60);
DELETE FROM ku WHERE id = '11111111-1111-1111-1111-111111111111';
SELECT 'committed' AS step, lc_kcheck('ku', k) FROM ku_keys;

--
-- DDL.
--
-- A new column.
SELECT lc_kcheck('ku', k) AS warm FROM ku_keys;
ALTER TABLE ku ADD COLUMN extra text DEFAULT 'x';
SELECT 'add column' AS step, lc_kcheck('ku', k) FROM ku_keys;
SELECT local_cache.mget_json('ku', '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13}');
-- The key column from uuid to text: from then on a key is the text itself (the upper-case
-- spelling names no row), and back.
SELECT lc_kcheck('ku', k) AS warm FROM ku_spellings;
ALTER TABLE ku ALTER COLUMN id TYPE text USING id::text;
SELECT 'uuid to text' AS step, lc_kcheck('ku', k) AS as_text, lc_kcheck('ku', k::uuid[]) AS as_uuid FROM ku_spellings;
SELECT 'uuid to text' AS step, lc_kcheck('ku', k) AS as_uuid FROM ku_keys;
SELECT local_cache.mget_json('ku', k) FROM ku_spellings;
UPDATE ku SET id = upper(id) WHERE id = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11';
SELECT local_cache.mget_json('ku', k) FROM ku_spellings;
SELECT 'text, after update' AS step, lc_kcheck('ku', k) AS as_text FROM ku_spellings;
ALTER TABLE ku ALTER COLUMN id TYPE uuid USING id::uuid;
SELECT 'text to uuid' AS step, lc_kcheck('ku', k) AS as_text FROM ku_spellings;
SELECT 'text to uuid' AS step, lc_kcheck('ku', k) AS as_uuid FROM ku_keys;
SELECT local_cache.mget_json('ku', k) FROM ku_spellings;
-- The primary key moved to another uuid column, then to (id, n), then back.
CREATE TABLE ku_pk (id uuid PRIMARY KEY, alt uuid NOT NULL UNIQUE, n int NOT NULL, v text);
INSERT INTO ku_pk VALUES
    ('00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-00000000000b', 1, 'first'),
    ('00000000-0000-0000-0000-00000000000b', '00000000-0000-0000-0000-00000000000a', 2, 'second'),
    ('00000000-0000-0000-0000-00000000000c', '00000000-0000-0000-0000-00000000000d', 3, 'third');
SELECT local_cache.enable('ku_pk');
CREATE TEMP TABLE ku_pk_keys AS
SELECT '{00000000-0000-0000-0000-00000000000a,00000000-0000-0000-0000-00000000000b,00000000-0000-0000-0000-00000000000c,00000000-0000-0000-0000-00000000000d,NULL}'::uuid[] AS k;
SELECT lc_kcheck('ku_pk', k) AS cold, lc_kcheck('ku_pk', k) AS warm FROM ku_pk_keys;
SELECT r->>'v' AS v FROM ku_pk_keys, json_array_elements(local_cache.mget_json('ku_pk', k)) r;
ALTER TABLE ku_pk DROP CONSTRAINT ku_pk_pkey, ADD PRIMARY KEY (alt);
SELECT r->>'v' AS v FROM ku_pk_keys, json_array_elements(local_cache.mget_json('ku_pk', k)) r;
SELECT lc_kcheck('ku_pk', k) AS moved, lc_kcheck('ku_pk', k) AS warm FROM ku_pk_keys;
ALTER TABLE ku_pk DROP CONSTRAINT ku_pk_pkey, ADD PRIMARY KEY (id, n);
SELECT local_cache.mget_json('ku_pk', k) FROM ku_pk_keys;
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.mget_json('ku_pk', '{{00000000-0000-0000-0000-00000000000a,1},{00000000-0000-0000-0000-00000000000a,2},{00000000-0000-0000-0000-00000000000c,3}}');
SELECT lc_kcheck('ku_pk', '{{00000000-0000-0000-0000-00000000000a,1},{00000000-0000-0000-0000-00000000000a,2},{00000000-0000-0000-0000-00000000000c,3},{NULL,3}}'::text[]) AS composite;
ALTER TABLE ku_pk DROP CONSTRAINT ku_pk_pkey, ADD PRIMARY KEY (id);
SELECT r->>'v' AS v FROM ku_pk_keys, json_array_elements(local_cache.mget_json('ku_pk', k)) r;
SELECT lc_kcheck('ku_pk', k) AS moved_back FROM ku_pk_keys;

-- TRUNCATE: every key is absent, then present again once inserted.
SELECT lc_kcheck('ku', k) AS warm FROM ku_keys;
TRUNCATE ku;
SELECT 'truncate' AS step, lc_kcheck('ku', k) FROM ku_keys;
SELECT local_cache.mget_json('ku', ARRAY[md5('1'), md5('2')]);
INSERT INTO ku (id, v) VALUES (md5('2')::uuid, 'after truncate');
SELECT 'insert after truncate' AS step, lc_kcheck('ku', k) FROM ku_keys;
SELECT local_cache.mget_json('ku', ARRAY[md5('1'), md5('2')]);

DROP TABLE ku, ku_pk;
