--
-- keys_text: tables keyed by text, varchar(n) and character(n). For every key, mget and
-- mget_json return exactly the row plain SQL finds by it (sql_kmget in setup.sql: the key
-- cast to the column's type, compared with the column's equality), cold and warm, after
-- every kind of write, DDL, and inside writing transactions. Keys with ':', the empty
-- string, multibyte UTF-8, trailing blanks (character(n)'s equality ignores them, text's
-- does not), and keys of kilobytes.
--
\set SHOW_CONTEXT never

--
-- text.
--
CREATE TABLE kt_text (k text PRIMARY KEY, v int NOT NULL, note text);
INSERT INTO kt_text VALUES
    ('a', 1, 'lower a'), ('A', 2, 'upper a'), ('b:c', 3, 'colon'), (':', 4, 'a colon only'),
    ('', 5, 'empty'), ('trail', 6, 'no blank'), ('trail  ', 7, 'two trailing blanks'),
    (' lead', 8, 'leading blank'), ('é', 9, 'two bytes'), ('中文', 10, 'three bytes each'),
    ('😀', 11, 'four bytes'), ('e' || U&'\0301', 12, 'e and a combining accent'),
    ('NULL', 13, 'the word NULL'), ('a,b', 14, 'comma'), ('{x}', 15, 'braces'),
    ('back\slash', 16, 'backslash'), ('quo"te', 17, 'double quote'), (E'tab\there', 18, 'tab'),
    (E'new\nline', 19, 'newline'), ('1', 20, 'a digit');
SELECT local_cache.enable('kt_text');
-- The keys read below: every row's, variants that name no row (other blanks, case, the
-- precomposed é beside the decomposed one), NULLs, duplicates, and keys written later.
CREATE TEMP TABLE kt_keys AS
SELECT ARRAY['a', 'A', 'b:c', ':', '', 'trail', 'trail  ', ' lead', 'é', '中文', '😀',
             'e' || U&'\0301', 'NULL', 'a,b', '{x}', 'back\slash', 'quo"te', E'tab\there',
             E'new\nline', '1',
             NULL, 'a', '', 'b:c', NULL,
             'trail ', 'trail   ', 'lead', 'b', 'B', 'b:', ':c', 'E', U&'\00e9', 'missing',
             'b:c:d', 'ë', 'late', 'own', 'upserted']::text[] AS k;

-- Cold (the first of lc_kcheck's three reads fills, the other two hit), then warm.
SELECT local_cache.flush('kt_text') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT lc_kcheck('kt_text', k) AS cold FROM kt_keys;
SELECT * FROM lc_kstats('kt_text');
SELECT lc_kcheck('kt_text', k) AS warm FROM kt_keys;
SELECT * FROM lc_kstats('kt_text');

-- What the rows are: input order, duplicates, NULL for NULL and missing keys.
SELECT local_cache.mget_json('kt_text', '{b:c,"",trail,"trail  ",NULL,missing,b:c,:,"trail "}');
SELECT array_to_json(local_cache.mget('kt_text', '{b:c,"",trail,"trail  ",NULL,missing,b:c,:,"trail "}')) AS rows;
SELECT u.ord, '[' || u.k || ']' AS k, u.v
  FROM (SELECT local_cache.mget('kt_text', '{"trail  ",trail,"trail ",NULL,""}') AS m OFFSET 0) s,
       ROWS FROM (unnest(s.m) AS (k text, v int, note text)) WITH ORDINALITY AS u(k, v, note, ord)
 ORDER BY u.ord;
-- An array element NULL is a NULL key; the string 'NULL', quoted, is a key.
SELECT local_cache.mget_json('kt_text', '{NULL,"NULL"}');
-- Multibyte keys (unaligned: psql's width of non-ASCII characters does not matter).
\pset format unaligned
SELECT local_cache.mget_json('kt_text', ARRAY['é', '中文', '😀', 'e' || U&'\0301', U&'\00e9']);
\pset format aligned
SELECT r->>'v' AS v, length(r->>'k') AS chars, octet_length(r->>'k') AS bytes
  FROM json_array_elements(local_cache.mget_json('kt_text', ARRAY['é', '中文', '😀', 'e' || U&'\0301', U&'\00e9'])) r;
-- Keys with characters arrays and JSON quote.
SELECT local_cache.mget_json('kt_text', ARRAY['a,b', '{x}', 'back\slash', 'quo"te', E'tab\there', E'new\nline']);

-- Empty, NULL and all-NULL arrays.
SELECT local_cache.mget_json('kt_text', '{}'), local_cache.mget('kt_text', '{}') AS mget,
       local_cache.mget_json('kt_text', NULL::text[]) IS NULL AS null_json,
       local_cache.mget('kt_text', NULL::text[]) IS NULL AS null_mget,
       local_cache.mget_json('kt_text', '{NULL,NULL}') AS all_null;

-- Elements of other types: varchar and name as they are, character(n) without its trailing
-- blanks (as its cast to text), others by their text form.
SELECT lc_kcheck('kt_text', k::varchar[]) AS as_varchar, lc_kcheck('kt_text', k::char(8)[]) AS as_char8,
       lc_kcheck('kt_text', k::name[]) AS as_name
  FROM kt_keys;
SELECT local_cache.mget_json('kt_text', ARRAY['trail  ', 'b:c']::char(8)[]) AS char8,
       local_cache.mget_json('kt_text', ARRAY['trail  ', 'b:c']::varchar[]) AS "varchar";
SELECT local_cache.mget_json('kt_text', ARRAY[1, 2]) AS ints, lc_kcheck('kt_text', ARRAY[1, 2]) AS ints_check,
       local_cache.mget_json('kt_text', ARRAY[1.0]) AS "numeric", lc_kcheck('kt_text', ARRAY[1.0]) AS numeric_check;
-- One-column key: a two-dimensional array is refused (SQLSTATE 2202E).
SELECT local_cache.mget('kt_text', '{{a,b}}');
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.mget_json('kt_text', ARRAY[['a'], ['b']]);
\echo :LAST_ERROR_SQLSTATE
-- Lower bounds other than 1: input order still.
SELECT local_cache.mget_json('kt_text', '[-2:0]={trail,missing,a}');
SELECT lc_kcheck('kt_text', '[-2:0]={trail,missing,a}'::text[]);

--
-- varchar(n).
--
CREATE TABLE kt_varchar (k varchar(8) PRIMARY KEY, v int NOT NULL);
INSERT INTO kt_varchar VALUES ('abc', 1), ('abc ', 2), ('', 3), ('x:y', 4), ('ü', 5), ('12345678', 6);
SELECT local_cache.enable('kt_varchar');
CREATE TEMP TABLE kv_keys AS
SELECT ARRAY['abc', 'abc ', 'abc  ', '', ' ', 'x:y', 'x', 'ü', 'u', '12345678', '123456789', NULL, 'abc',
             'abcdefghij', 'x:y:z']::text[] AS k;
SELECT local_cache.flush('kt_varchar') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT lc_kcheck('kt_varchar', k) AS cold FROM kv_keys;
SELECT * FROM lc_kstats('kt_varchar');
SELECT lc_kcheck('kt_varchar', k) AS warm, lc_kcheck('kt_varchar', k::varchar(3)[]) AS as_varchar3 FROM kv_keys;
-- A key longer than the column names no row: never truncated to the column's length.
SELECT local_cache.mget_json('kt_varchar', '{123456789,12345678,"abc ",abc,"abc  "}');

--
-- character(n): 'ab', 'ab ' and 'ab     ' are one key (bpchareq ignores trailing blanks);
-- leading blanks count. That is for keys of type character or varchar (which compare as
-- character); a text key compares as SQL's `k = key::text` does, text = text: the column
-- without its trailing blanks, the key with them ('ab   ' names no row).
--
CREATE TABLE kt_char (k char(5) PRIMARY KEY, v int NOT NULL);
INSERT INTO kt_char VALUES ('ab', 1), ('', 2), ('a:b', 3), ('é', 4), ('abcde', 5), (' x', 6);
-- The table's own equality: 'ab   ' is the key 'ab'.
INSERT INTO kt_char VALUES ('ab   ', 99);
SELECT local_cache.enable('kt_char');
CREATE TEMP TABLE kc_keys AS
SELECT ARRAY['ab', 'ab ', 'ab   ', 'ab          ', ' ab', 'a b', '', ' ', '     ', 'a:b', 'a:b  ', 'é', 'é    ',
             'abcde', 'abcdef', 'abcd', ' x', 'x', 'x ', NULL, 'ab', 'xy', 'xy  ']::text[] AS k;
SELECT local_cache.flush('kt_char') >= 0 AS flushed;
SELECT local_cache.reset_stats();
SELECT lc_kcheck('kt_char', k) AS cold FROM kc_keys;
SELECT * FROM lc_kstats('kt_char');
SELECT lc_kcheck('kt_char', k) AS warm, lc_kcheck('kt_char', k::char(10)[]) AS as_char10,
       lc_kcheck('kt_char', k::varchar[]) AS as_varchar
  FROM kc_keys;
SELECT local_cache.mget_json('kt_char', '{ab,"ab ","ab          "," ab",abcdef,"",x," x"}');
-- As char(n)[] and varchar[]: the same rows; as text[], 'ab   ' and ' x ' keep their blanks.
SELECT local_cache.mget_json('kt_char', ARRAY['ab   ', ' x ']::text[]) AS "text",
       local_cache.mget_json('kt_char', ARRAY['ab   ', ' x ']::char(2)[]) AS char2,
       local_cache.mget_json('kt_char', ARRAY['ab   ', ' x ']::varchar[]) AS "varchar";
-- text vs character: 'trail' and 'trail  ' are two rows of kt_text, one key of kt_char as
-- character keys, and one key and no row of kt_char as text keys.
INSERT INTO kt_char VALUES ('trail', 7);
SELECT local_cache.mget_json('kt_text', '{trail,"trail  "}') AS "text",
       local_cache.mget_json('kt_char', '{trail,"trail  "}'::char(8)[]) AS "character",
       local_cache.mget_json('kt_char', '{trail,"trail  "}') AS "character, text keys";
-- A key known absent (a negative entry) whose row is inserted with other trailing blanks.
SELECT local_cache.reset_stats();
SELECT local_cache.mget_json('kt_char', '{xy,"xy  "}'::char(5)[]), local_cache.mget_json('kt_char', '{xy}'::char(5)[]);
SELECT * FROM lc_kstats('kt_char');
INSERT INTO kt_char VALUES ('xy   ', 8);
SELECT local_cache.mget_json('kt_char', '{xy,"xy  ","xy   "}'::char(5)[]);
SELECT lc_kcheck('kt_char', k) AS after_insert FROM kc_keys;
-- A key changed only in trailing blanks is the same key: the row stays, its value changes.
UPDATE kt_char SET k = 'xy ', v = 9 WHERE k = 'xy';
SELECT local_cache.mget_json('kt_char', '{xy}');
SELECT lc_kcheck('kt_char', k) AS after_update FROM kc_keys;

--
-- A deterministic ICU collation: keys are equal exactly when their bytes are (the
-- precomposed and the decomposed ä are two keys).
--
CREATE COLLATION kt_icu_und (provider = icu, locale = 'und');
CREATE TABLE kt_icu (k text COLLATE kt_icu_und PRIMARY KEY, v int NOT NULL);
INSERT INTO kt_icu VALUES ('a', 1), ('A', 2), (U&'\00e4', 3), ('a' || U&'\0308', 4), ('ss', 5), (U&'\00df', 6);
SELECT local_cache.enable('kt_icu');
SELECT lc_kcheck('kt_icu', ARRAY['a', 'A', U&'\00e4', 'a' || U&'\0308', 'ss', U&'\00df', 'SS', U&'\00c4']) AS cold,
       lc_kcheck('kt_icu', ARRAY['a', 'A', U&'\00e4', 'a' || U&'\0308', 'ss', U&'\00df', 'SS', U&'\00c4']) AS warm;
SELECT r->>'v' AS v FROM json_array_elements(local_cache.mget_json('kt_icu',
    ARRAY['a', 'A', U&'\00e4', 'a' || U&'\0308', 'ss', U&'\00df', 'SS', U&'\00c4'])) r;

--
-- Keys of kilobytes: as long as the primary key's index takes (compressible keys are
-- compressed there). The cache may decline to keep a long key (the store keeps keys of
-- up to 64kB); every answer must still be right.
--
CREATE TABLE kt_long (k text PRIMARY KEY, v int NOT NULL);
INSERT INTO kt_long VALUES
    (repeat('k', 3000), 1), (repeat('k', 2999), 2), (repeat('L', 70000), 3),
    ((SELECT string_agg(md5(i::text), '') FROM generate_series(1, 80) i), 4),
    (repeat('m', 65535), 5), (repeat('m', 65536), 6), (repeat('k', 3000) || ':' || repeat('k', 10), 7);
SELECT local_cache.enable('kt_long');
CREATE TEMP TABLE kl_keys AS
SELECT ARRAY[repeat('k', 3000), repeat('k', 2999), repeat('k', 3001), repeat('L', 70000), repeat('L', 69999),
             (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 80) i),
             (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 79) i),
             repeat('m', 65535), repeat('m', 65536), repeat('m', 65537), repeat('k', 3000) || ':' || repeat('k', 10),
             repeat('k', 3000) || ':', NULL, repeat('k', 3000)] AS k;
SELECT local_cache.flush('kt_long') >= 0 AS flushed;
SELECT lc_kcheck('kt_long', k) AS cold, lc_kcheck('kt_long', k) AS warm FROM kl_keys;
SELECT ord, (r->>'v')::int AS v, length(r->>'k') AS key_length
  FROM kl_keys, json_array_elements(local_cache.mget_json('kt_long', k)) WITH ORDINALITY AS j(r, ord)
 ORDER BY ord;
UPDATE kt_long SET v = v + 10 WHERE v IN (1, 3, 5, 6);
SELECT lc_kcheck('kt_long', k) AS after_update FROM kl_keys;
DELETE FROM kt_long WHERE v IN (11, 2);
SELECT lc_kcheck('kt_long', k) AS after_delete FROM kl_keys;
INSERT INTO kt_long VALUES (repeat('k', 3000), 21), (repeat('k', 3001), 22);
SELECT lc_kcheck('kt_long', k) AS after_insert, lc_kcheck('kt_long', k) AS again FROM kl_keys;
SELECT ord, (r->>'v')::int AS v, length(r->>'k') AS key_length
  FROM kl_keys, json_array_elements(local_cache.mget_json('kt_long', k)) WITH ORDINALITY AS j(r, ord)
 ORDER BY ord;

--
-- Invalidation of text keys: every write is seen by the next read, cached rows and cached
-- absent keys alike.
--
SELECT lc_kcheck('kt_text', k) AS warm FROM kt_keys;
-- UPDATE of another column.
UPDATE kt_text SET v = v + 100, note = note || '!' WHERE k IN ('b:c', '', '中文', 'trail  ');
SELECT 'update of a column' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{b:c,"","trail  ",trail}');
-- UPDATE of the key: the old key is missing, the new one present.
UPDATE kt_text SET k = 'b:c:d' WHERE k = 'b:c';
SELECT 'update of the key' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{b:c,b:c:d}');
-- A key changed by its trailing blanks only is another key of text.
UPDATE kt_text SET k = 'trail ' WHERE k = 'trail';
SELECT 'update of trailing blanks' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{trail,"trail ","trail  "}');
-- to a multibyte key, and two keys swapped in one transaction.
UPDATE kt_text SET k = 'ë' WHERE k = 'é';
BEGIN;
UPDATE kt_text SET k = 'swap' WHERE k = 'a';
UPDATE kt_text SET k = 'a' WHERE k = 'A';
UPDATE kt_text SET k = 'A' WHERE k = 'swap';
COMMIT;
SELECT 'multibyte key, swapped keys' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{a,A,swap}');
-- DELETE, then INSERT of the same key.
DELETE FROM kt_text WHERE k IN (':', '');
SELECT 'delete' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{:,""}');
INSERT INTO kt_text VALUES (':', 40, 'colon again'), ('', 41, 'empty again');
SELECT 'insert again' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{:,""}');
-- INSERT of a key read (and cached) as absent.
SELECT local_cache.reset_stats();
SELECT local_cache.mget_json('kt_text', '{late}') AS first, local_cache.mget_json('kt_text', '{late}') AS second;
SELECT * FROM lc_kstats('kt_text');
INSERT INTO kt_text VALUES ('late', 42, 'inserted after a read');
SELECT local_cache.mget_json('kt_text', '{late}');
SELECT 'insert of an absent key' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
-- INSERT ... ON CONFLICT, both ways.
INSERT INTO kt_text VALUES ('upserted', 43, 'new'), ('late', 0, 'conflict')
    ON CONFLICT (k) DO UPDATE SET note = EXCLUDED.note;
SELECT local_cache.mget_json('kt_text', '{upserted,late}');
SELECT 'upsert' AS step, lc_kcheck('kt_text', k) FROM kt_keys;

-- Own writes: inside a transaction that wrote the table, its own rows; after ROLLBACK the
-- committed ones.
SELECT lc_kcheck('kt_text', k) AS warm FROM kt_keys;
BEGIN;
UPDATE kt_text SET note = 'own update' WHERE k = '中文';
DELETE FROM kt_text WHERE k = ':';
INSERT INTO kt_text VALUES ('own', 50, 'own insert');
UPDATE kt_text SET k = 'b' WHERE k = 'b:c:d';
SELECT 'own writes' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{own,:,b,b:c:d}');
SAVEPOINT s1;
DELETE FROM kt_text WHERE k = 'own';
SELECT 'own delete in a savepoint' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
ROLLBACK TO SAVEPOINT s1;
SELECT 'after ROLLBACK TO SAVEPOINT' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{own}');
ROLLBACK;
SELECT 'after ROLLBACK' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{own,:,b,b:c:d}');
-- The same, committed.
BEGIN;
INSERT INTO kt_text VALUES ('own', 51, 'committed insert');
UPDATE kt_text SET k = 'b' WHERE k = 'b:c:d';
SELECT 'own writes' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
COMMIT;
SELECT 'after COMMIT' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{own,b,b:c:d}');

--
-- DDL.
--
-- A new column (with a default) and a dropped one change the cached rows.
SELECT lc_kcheck('kt_text', k) AS warm FROM kt_keys;
ALTER TABLE kt_text ADD COLUMN extra int DEFAULT 7;
SELECT 'add column' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{b,own}');
ALTER TABLE kt_text DROP COLUMN note;
SELECT 'drop column' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{b,own}');
-- The key column from varchar(8) to varchar(12) and to text: the same keys; longer keys
-- can be inserted then.
SELECT lc_kcheck('kt_varchar', k) AS warm FROM kv_keys;
ALTER TABLE kt_varchar ALTER COLUMN k TYPE varchar(12);
SELECT 'varchar(12)' AS step, lc_kcheck('kt_varchar', k) FROM kv_keys;
ALTER TABLE kt_varchar ALTER COLUMN k TYPE text;
SELECT 'text' AS step, lc_kcheck('kt_varchar', k) FROM kv_keys;
SELECT local_cache.mget_json('kt_varchar', '{123456789,abcdefghij,abc}');
INSERT INTO kt_varchar VALUES ('123456789', 7), ('abcdefghij', 8);
UPDATE kt_varchar SET v = -v WHERE k = 'abc';
SELECT 'text, after writes' AS step, lc_kcheck('kt_varchar', k) FROM kv_keys;
SELECT local_cache.mget_json('kt_varchar', '{123456789,abcdefghij,abc}');
SELECT pg_typeof(k) FROM kt_varchar WHERE k = 'abc';
-- The key column from character(5) to text: trailing blanks count from then on.
SELECT lc_kcheck('kt_char', k) AS warm FROM kc_keys;
SELECT local_cache.mget_json('kt_char', '{ab,"ab   "}'::char(6)[]);
ALTER TABLE kt_char ALTER COLUMN k TYPE text;
SELECT 'character(5) to text' AS step, lc_kcheck('kt_char', k) FROM kc_keys;
SELECT local_cache.mget_json('kt_char', '{ab,"ab   "}');
-- and back to character(6): trailing blanks of character keys do not count again.
ALTER TABLE kt_char ALTER COLUMN k TYPE char(6);
SELECT 'text to character(6)' AS step, lc_kcheck('kt_char', k) FROM kc_keys;
SELECT local_cache.mget_json('kt_char', '{ab,"ab   "}'::char(6)[]);
-- A nondeterministic collation on the key column: reads refuse the table (its keys are not
-- named by their bytes any more); writes meanwhile are seen once it is deterministic again.
CREATE COLLATION kt_case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE kt_coll (k text PRIMARY KEY, v int NOT NULL);
INSERT INTO kt_coll VALUES ('a', 1), ('b', 2), ('c:d', 3);
SELECT local_cache.enable('kt_coll');
SELECT lc_kcheck('kt_coll', '{a,A,b,B,c:d,C:D}'::text[]) AS cold, lc_kcheck('kt_coll', '{a,A,b,B,c:d,C:D}'::text[]) AS warm;
ALTER TABLE kt_coll ALTER COLUMN k TYPE text COLLATE kt_case_insensitive;
SELECT local_cache.mget_json('kt_coll', '{a}');
SELECT local_cache.mget('kt_coll', '{a}');
\echo :LAST_ERROR_SQLSTATE
SELECT k, v FROM kt_coll WHERE k = 'B';
UPDATE kt_coll SET v = v + 1000 WHERE k = 'B';
UPDATE kt_coll SET k = 'C:D' WHERE k = 'c:d';
ALTER TABLE kt_coll ALTER COLUMN k TYPE text COLLATE "C";
SELECT local_cache.mget_json('kt_coll', '{a,A,b,B,c:d,C:D}');
SELECT lc_kcheck('kt_coll', '{a,A,b,B,c:d,C:D}'::text[]) AS collation_c,
       lc_kcheck('kt_coll', '{a,A,b,B,c:d,C:D}'::text[]) AS warm;
ALTER TABLE kt_coll ALTER COLUMN k TYPE text COLLATE "default";
SELECT lc_kcheck('kt_coll', '{a,A,b,B,c:d,C:D}'::text[]) AS collation_default;

-- The primary key moved to other columns: rows are named by the new key at once (a key of
-- the old column that is a key of the new one names another row now).
CREATE TABLE kt_pk (k text PRIMARY KEY, alt text NOT NULL UNIQUE, n int NOT NULL, v text);
INSERT INTO kt_pk VALUES ('r1', 'r2', 2, 'first'), ('r2', 'r1', 1, 'second'), ('r3', 'x', 3, 'third');
SELECT local_cache.enable('kt_pk');
SELECT lc_kcheck('kt_pk', '{r1,r2,r3,x,NULL}'::text[]) AS cold, lc_kcheck('kt_pk', '{r1,r2,r3,x,NULL}'::text[]) AS warm;
SELECT local_cache.mget_json('kt_pk', '{r1,r2,r3,x}');
BEGIN;
ALTER TABLE kt_pk DROP CONSTRAINT kt_pk_pkey;
ALTER TABLE kt_pk ADD PRIMARY KEY (alt);
-- read inside the transaction that moved it, too
SELECT local_cache.mget_json('kt_pk', '{r1,r2,r3,x}');
COMMIT;
SELECT local_cache.mget_json('kt_pk', '{r1,r2,r3,x}');
SELECT lc_kcheck('kt_pk', '{r1,r2,r3,x,NULL}'::text[]) AS moved, lc_kcheck('kt_pk', '{r1,r2,r3,x,NULL}'::text[]) AS warm;
-- to an integer column: the same text array names integer keys by their text (an element
-- that is no integer is an error that names it).
ALTER TABLE kt_pk DROP CONSTRAINT kt_pk_pkey, ADD PRIMARY KEY (n);
SELECT local_cache.mget_json('kt_pk', '{1,2,3}');
\set SHOW_CONTEXT errors
SELECT local_cache.mget_json('kt_pk', '{1,2,3,r1}');
\set SHOW_CONTEXT never
SELECT lc_kcheck('kt_pk', '{1,2,3,4,NULL}'::text[]) AS moved, lc_kcheck('kt_pk', ARRAY[3, 2, 1]) AS as_int;
-- to two columns: keys are rows of two elements from then on.
ALTER TABLE kt_pk DROP CONSTRAINT kt_pk_pkey, ADD PRIMARY KEY (k, alt);
SELECT local_cache.mget_json('kt_pk', '{r1,r2}');
\echo :LAST_ERROR_SQLSTATE
SELECT local_cache.mget_json('kt_pk', '{{r1,r2},{r2,r1},{r1,r1},{r3,x}}');
SELECT lc_kcheck('kt_pk', '{{r1,r2},{r2,r1},{r1,r1},{r3,x}}'::text[]) AS moved,
       lc_kcheck('kt_pk', '{{r1,r2},{r2,r1},{r1,r1},{r3,x}}'::text[]) AS warm;
UPDATE kt_pk SET alt = 'r3' WHERE k = 'r3';
SELECT local_cache.mget_json('kt_pk', '{{r3,x},{r3,r3}}');
-- and back to one text column.
ALTER TABLE kt_pk DROP CONSTRAINT kt_pk_pkey, ADD PRIMARY KEY (k);
SELECT local_cache.mget_json('kt_pk', '{r1,r2,r3,x}');
SELECT lc_kcheck('kt_pk', '{r1,r2,r3,x,NULL}'::text[]) AS moved_back;
-- A transaction that writes rows, moves the key, and writes again.
SELECT lc_kcheck('kt_pk', '{r1,r2,r3,x,NULL}'::text[]) AS warm;
BEGIN;
UPDATE kt_pk SET v = 'first, before the move' WHERE k = 'r1';
ALTER TABLE kt_pk DROP CONSTRAINT kt_pk_pkey, ADD PRIMARY KEY (alt);
UPDATE kt_pk SET v = 'second, after the move' WHERE alt = 'r1';
SELECT local_cache.mget_json('kt_pk', '{r1,r2,r3,x}');
COMMIT;
SELECT local_cache.mget_json('kt_pk', '{r1,r2,r3,x}');
SELECT lc_kcheck('kt_pk', '{r1,r2,r3,x,NULL}'::text[]) AS moved_in_a_transaction,
       lc_kcheck('kt_pk', '{r1,r2,r3,x,NULL}'::text[]) AS warm;

-- COPY into the table.
SELECT lc_kcheck('kt_text', k) AS warm FROM kt_keys;
COPY kt_text (k, v, extra) FROM STDIN;
missing	60	1
trail   	61	2
\.
COPY kt_text (k, v, extra) FROM STDIN;
lead	62	3
\.
SELECT 'copy' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{missing,"trail   ",lead}');

-- TRUNCATE: every key is absent, then present again once inserted.
SELECT lc_kcheck('kt_text', k) AS warm FROM kt_keys;
TRUNCATE kt_text;
SELECT 'truncate' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{b,own,"",:}');
INSERT INTO kt_text (k, v) VALUES ('b', 1), ('', 2), ('中文', 3);
SELECT 'insert after truncate' AS step, lc_kcheck('kt_text', k) FROM kt_keys;
SELECT local_cache.mget_json('kt_text', '{b,own,"",:}');

-- A text key of a character(n) column names exactly what `SELECT * FROM t WHERE id = key`
-- finds for a text key: text = text, the column without its trailing blanks, the key with
-- them. mget, mget_json and the foreign table, cold and then from the cache; varchar and
-- character keys compare as character (trailing blanks do not count).
CREATE TABLE kt_tb (id char(5) PRIMARY KEY, v int NOT NULL);
INSERT INTO kt_tb VALUES ('a', 1), ('b  c', 2);
SELECT local_cache.enable('kt_tb');
CREATE FOREIGN TABLE kt_tb_cache (id char(5), v int) SERVER local_cache OPTIONS (table 'public.kt_tb');
CREATE TEMP VIEW kt_tb_reads AS
SELECT quote_literal(k) AS key, (SELECT json_agg(t) FROM kt_tb t WHERE t.id = k) AS sql,
       local_cache.mget_json('kt_tb', ARRAY[k]) AS mget_json,
       array_to_json(local_cache.mget('kt_tb', ARRAY[k])) AS mget,
       (SELECT json_agg(c) FROM kt_tb_cache c WHERE c.id = k) AS fdw
  FROM unnest(ARRAY['a', 'a   ', 'b  c', 'b  c ', ' a', 'a    ']::text[]) AS k;
SELECT * FROM kt_tb_reads;
SELECT * FROM kt_tb_reads;
SELECT local_cache.mget_json('kt_tb', ARRAY['a   ']::varchar[]) AS "varchar",
       local_cache.mget_json('kt_tb', ARRAY['a   ']::char(4)[]) AS "character",
       (SELECT json_agg(t) FROM kt_tb t WHERE t.id = 'a   '::varchar) AS sql_varchar;
DROP VIEW kt_tb_reads;
DROP FOREIGN TABLE kt_tb_cache;

DROP TABLE kt_text, kt_varchar, kt_char, kt_icu, kt_long, kt_coll, kt_pk, kt_tb;
DROP COLLATION kt_icu_und;
DROP COLLATION kt_case_insensitive;
