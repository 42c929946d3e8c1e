--
-- privileges: mget checks the caller's SELECT privilege like plain SQL does, whether the
-- rows are cached or not; only the owner enables or disables a table; the maintenance
-- functions without arguments are not for PUBLIC.
--
\set SHOW_CONTEXT never

CREATE ROLE regress_lc_reader;
CREATE ROLE regress_lc_other;
CREATE ROLE regress_lc_owner;

-- The rows are cached before any of the checks below.
SELECT local_cache.mget_json('items', '{1,2}');
SELECT lc_check('items', '{1,2}');

-- No privilege at all: the same error as plain SQL.
SET ROLE regress_lc_reader;
SELECT * FROM items WHERE id = 1;
SELECT local_cache.mget('items', '{1,2}');
SELECT local_cache.mget_json('items', '{1,2}');
SELECT local_cache.mget('items', '{}');
SELECT local_cache.mget('items', '{NULL}');
SELECT local_cache.mget('items', '{424242}');
RESET ROLE;

-- Column-level SELECT on only some of the columns: denied.
GRANT SELECT (id, name) ON items TO regress_lc_reader;
SET ROLE regress_lc_reader;
SELECT id, name FROM items WHERE id = 1;
SELECT * FROM items WHERE id = 1;
SELECT local_cache.mget('items', '{1,2}');
SELECT local_cache.mget_json('items', '{1,2}');
RESET ROLE;
REVOKE SELECT (id, name) ON items FROM regress_lc_reader;

-- GRANT SELECT: works, cached or not, with nothing else granted.
GRANT SELECT ON items TO regress_lc_reader;
SET ROLE regress_lc_reader;
SELECT array_to_json(local_cache.mget('items', '{1,2,1000}')) AS rows;
SELECT local_cache.mget_json('items', '{1,2,1000}');
SELECT lc_check('items', '{1,2,3,1000}');
RESET ROLE;
-- Column-level SELECT on every column works like SQL too.
REVOKE SELECT ON items FROM regress_lc_reader;
GRANT SELECT (id, name, price, in_stock, tags, attrs, updated_at) ON items TO regress_lc_reader;
SET ROLE regress_lc_reader;
SELECT count(*) FROM items WHERE id = 1;
SELECT lc_check('items', '{1,2}');
RESET ROLE;
REVOKE SELECT (id, name, price, in_stock, tags, attrs, updated_at) ON items FROM regress_lc_reader;

-- REVOKE: denied again, in the same session, in a later statement.
GRANT SELECT ON items TO regress_lc_reader;
SET ROLE regress_lc_reader;
SELECT local_cache.mget_json('items', '{1}');
RESET ROLE;
REVOKE SELECT ON items FROM regress_lc_reader;
SET ROLE regress_lc_reader;
SELECT local_cache.mget_json('items', '{1}');
SELECT local_cache.mget('items', '{1}');
RESET ROLE;
-- Through a role membership.
GRANT SELECT ON items TO regress_lc_other;
GRANT regress_lc_other TO regress_lc_reader;
SET ROLE regress_lc_reader;
SELECT local_cache.mget_json('items', '{2}');
RESET ROLE;
REVOKE regress_lc_other FROM regress_lc_reader;
SET ROLE regress_lc_reader;
SELECT local_cache.mget_json('items', '{2}');
RESET ROLE;
REVOKE SELECT ON items FROM regress_lc_other;

-- A SECURITY DEFINER function of a role that may read the table works for a caller
-- who may not, like SQL in that function; the caller alone is still denied afterwards.
GRANT SELECT ON items TO regress_lc_owner;
CREATE FUNCTION priv_definer_mget(keys bigint[]) RETURNS json
    LANGUAGE sql STABLE SECURITY DEFINER
    AS $$ SELECT local_cache.mget_json('public.items', keys) $$;
CREATE FUNCTION priv_definer_sql(keys bigint[]) RETURNS json
    LANGUAGE sql STABLE SECURITY DEFINER
    AS $$ SELECT json_agg(i ORDER BY i.id) FROM public.items i WHERE i.id = ANY (keys) $$;
ALTER FUNCTION priv_definer_mget(bigint[]) OWNER TO regress_lc_owner;
ALTER FUNCTION priv_definer_sql(bigint[]) OWNER TO regress_lc_owner;
SET ROLE regress_lc_reader;
SELECT priv_definer_sql('{1}') IS NOT NULL AS sql_works;
SELECT priv_definer_mget('{1}')::text = array_to_json(ARRAY[priv_definer_sql('{1}')->0])::text AS mget_works;
SELECT local_cache.mget_json('items', '{1}');
SELECT priv_definer_mget('{1}') IS NOT NULL AS mget_works;
SELECT local_cache.mget('items', '{1}');
RESET ROLE;
REVOKE SELECT ON items FROM regress_lc_owner;
SET ROLE regress_lc_reader;
SELECT priv_definer_sql('{1}');
SELECT priv_definer_mget('{1}');
RESET ROLE;
DROP FUNCTION priv_definer_mget(bigint[]), priv_definer_sql(bigint[]);

-- A superuser that stops being one.
CREATE ROLE regress_lc_super SUPERUSER;
SET ROLE regress_lc_super;
SELECT local_cache.mget_json('items', '{3}');
RESET ROLE;
ALTER ROLE regress_lc_super NOSUPERUSER;
SET ROLE regress_lc_super;
SELECT local_cache.mget_json('items', '{3}');
RESET ROLE;
DROP ROLE regress_lc_super;

-- Row-level security switched on after enable(): mget never shows rows that the
-- policies hide from plain SQL (an error is fine, hidden rows are not).
CREATE TABLE priv_rls (id bigint PRIMARY KEY, owner_name text NOT NULL, secret text);
INSERT INTO priv_rls VALUES (1, 'regress_lc_reader', 'mine'), (2, 'someone else', 'theirs');
SELECT local_cache.enable('priv_rls');
SELECT local_cache.mget_json('priv_rls', '{1,2}');
ALTER TABLE priv_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON priv_rls FOR SELECT USING (owner_name = current_user);
GRANT SELECT ON priv_rls TO regress_lc_reader;
SET ROLE regress_lc_reader;
SELECT id, secret FROM priv_rls ORDER BY id;
SELECT coalesce(local_cache.mget_json('priv_rls', '{1,2}')::text, 'null') LIKE '%theirs%' AS leaks_hidden_row;
RESET ROLE;
DROP TABLE priv_rls;

--
-- Only the owner enables or disables a table.
--
CREATE TABLE priv_owned (id bigint PRIMARY KEY, v text);
ALTER TABLE priv_owned OWNER TO regress_lc_owner;
INSERT INTO priv_owned VALUES (1, 'one');
SET ROLE regress_lc_other;
SELECT local_cache.enable('priv_owned');
RESET ROLE;
-- Even with the TRIGGER privilege (enough for CREATE TRIGGER), not the owner.
GRANT TRIGGER ON priv_owned TO regress_lc_other;
SET ROLE regress_lc_other;
SELECT local_cache.enable('priv_owned');
RESET ROLE;
SELECT count(*) AS registered FROM local_cache.tables WHERE relid = 'priv_owned'::regclass;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'priv_owned'::regclass;
-- The owner can (the owner is not a superuser).
SET ROLE regress_lc_owner;
SELECT local_cache.enable('priv_owned');
RESET ROLE;
SELECT relid, resp_prefix FROM local_cache.tables WHERE relid = 'priv_owned'::regclass;
SET ROLE regress_lc_other;
SELECT local_cache.disable('priv_owned');
-- Nor flush its entries.
SELECT local_cache.flush('priv_owned');
-- Nor around enable/disable, through the internal functions.
SELECT local_cache._unregister('priv_owned');
SELECT local_cache._flush_oid('priv_owned'::regclass);
RESET ROLE;
SELECT count(*) AS registered FROM local_cache.tables WHERE relid = 'priv_owned'::regclass;
-- Whatever a caller creates: a temporary "pg_trigger" that answers the registry writes' checks
-- (PostgreSQL searches pg_temp first unless a function's search_path names it) neither lets
-- another role unregister the table nor register its own under the table's prefix.
CREATE TABLE priv_taker (id bigint PRIMARY KEY, v text);
ALTER TABLE priv_taker OWNER TO regress_lc_other;
SET ROLE regress_lc_other;
CREATE TEMP TABLE pg_trigger (tgrelid oid, tgenabled "char", tgfoid oid);
SELECT local_cache._unregister('priv_owned');
SELECT local_cache._register('priv_owned', 'taken');
INSERT INTO pg_temp.pg_trigger SELECT 'priv_taker'::regclass, 'A', 'local_cache.capture_changes()'::regprocedure
  FROM generate_series(1, 3);
SELECT local_cache._register('priv_taker', 'priv_taker');
SELECT local_cache._register_as_owner('priv_taker', 'priv_taker');
SELECT local_cache._unregister_as_owner('priv_owned');
DROP TABLE pg_temp.pg_trigger;
RESET ROLE;
SELECT relid, resp_prefix FROM local_cache.tables WHERE relid IN ('priv_owned'::regclass, 'priv_taker'::regclass);
DROP TABLE priv_taker;
-- Every SECURITY DEFINER function of the extension pins its search_path.
SELECT p.oid::regprocedure AS definer_without_pinned_path FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'local_cache') AND p.prosecdef
   AND NOT coalesce(p.proconfig @> '{"search_path=pg_catalog, pg_temp"}', false);
SET ROLE regress_lc_owner;
SELECT local_cache.mget_json('priv_owned', '{1}');
SELECT local_cache.disable('priv_owned');
RESET ROLE;
SELECT count(*) AS registered FROM local_cache.tables WHERE relid = 'priv_owned'::regclass;
DROP TABLE priv_owned;

--
-- Maintenance functions without arguments: not executable by PUBLIC.
--
SELECT has_function_privilege('regress_lc_reader', 'local_cache.reset_stats()', 'EXECUTE') AS reset_stats,
       has_function_privilege('regress_lc_reader', 'local_cache.flush()', 'EXECUTE') AS flush_all,
       has_function_privilege('public', 'local_cache.reset_stats()', 'EXECUTE') AS reset_stats_public,
       has_function_privilege('public', 'local_cache.flush()', 'EXECUTE') AS flush_all_public,
       has_function_privilege('public', 'local_cache.resp_reset_stats()', 'EXECUTE') AS resp_reset_stats_public;
SET ROLE regress_lc_reader;
SELECT local_cache.reset_stats();
SELECT local_cache.flush();
SELECT local_cache.resp_reset_stats();
-- Statistics and the registry can be read.
SELECT count(*) > 0 AS has_rows FROM local_cache.tables;
SELECT memory_budget > 0 AS has_budget FROM local_cache.stats_global;
SELECT count(*) > 0 AS has_rows FROM local_cache.stats;
-- The RESP command statistics too: a role's own rows (it sent no RESP request).
SELECT count(*) AS resp_commands FROM local_cache.resp_commands;
SELECT count(*) AS resp_errors FROM local_cache.resp_errors;
-- and the RESP server's counters (one row), as INFO shows them to every RESP client.
SELECT count(*) AS resp_server, sum(rejected_connections) >= 0 AS counted FROM local_cache.resp_server;
-- local_cache.max_row_size is for superusers; local_cache.enabled for everyone.
SET local_cache.max_row_size = 100;
SET local_cache.enabled = off;
RESET local_cache.enabled;
RESET ROLE;

DROP OWNED BY regress_lc_reader, regress_lc_other, regress_lc_owner;
DROP ROLE regress_lc_reader, regress_lc_other, regress_lc_owner;
