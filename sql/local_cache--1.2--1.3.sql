/* local_cache 1.2 -> 1.3: primary keys beyond integers - text, varchar, character, uuid, and
   composite keys of up to 8 such columns (and smallint, integer, bigint as before).

   mget and mget_json change their argument type, so they are dropped and created again; the new
   ones get the privileges the old ones had. A view (or SQL-body function) that calls the old ones
   cannot survive their DROP, and an overload kept for it would make untyped calls ambiguous in
   every database: the update stops with an error that names those objects and says what to do,
   as contrib's upgrades do when a signature changes (docs/SQL.md, "Upgrades"). */

\echo Use "ALTER EXTENSION local_cache UPDATE TO '1.3'" to load this file. \quit

DO $$
DECLARE
    users text;
BEGIN
    SELECT string_agg(DISTINCT CASE WHEN d.classid = 'pg_rewrite'::regclass
                                    THEN pg_describe_object('pg_class'::regclass, r.ev_class, 0)
                                    ELSE pg_describe_object(d.classid, d.objid, d.objsubid) END, ', ')
      INTO users
      FROM pg_catalog.pg_depend d
      LEFT JOIN pg_catalog.pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND r.oid = d.objid
     WHERE d.refclassid = 'pg_proc'::regclass AND d.deptype = 'n'
       AND d.refobjid IN ('local_cache.mget(regclass, bigint[])'::regprocedure,
                          'local_cache.mget_json(regclass, bigint[])'::regprocedure);
    IF users IS NOT NULL THEN
        RAISE EXCEPTION 'cannot update local_cache to 1.3: % calls local_cache.mget or mget_json with bigint[] keys', users
            USING ERRCODE = 'dependent_objects_still_exist',
                  DETAIL = 'Version 1.3 replaces mget(regclass, bigint[]) and mget_json(regclass, bigint[]) by functions taking an array of any key type; an object keeps the function it was created with.',
                  HINT = 'Save the definitions (pg_dump -s, or pg_get_viewdef), drop those objects, run ALTER EXTENSION local_cache UPDATE again and create them again from the same text: calls with bigint[] keys work unchanged.';
    END IF;
END $$;

-- Gives new_fn the privileges old_fn has (a DBA's GRANTs and REVOKEs), as GRANTs of the owner
-- (so that pg_shdepend knows the roles), then puts back old_fn's initial privileges, so that the
-- DBA's are not taken for the extension's and pg_dump keeps dumping them. Dropped at the end.
-- The same helper as 1.1->1.2's, created again: that script drops it, so no 1.2 catalog has it.
CREATE FUNCTION local_cache._copy_acl(old_fn regprocedure, new_fn regprocedure) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
    g record;
BEGIN
    IF (SELECT proacl FROM pg_proc WHERE oid = old_fn) IS NULL THEN
        RETURN;
    END IF;
    -- The first GRANT starts from the default (PUBLIC, then the owner): the entries keep their order.
    IF NOT has_function_privilege('public', old_fn, 'EXECUTE') THEN
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', new_fn);
    END IF;
    FOR g IN SELECT a.grantee, a.is_grantable FROM pg_proc p, aclexplode(p.proacl) a WHERE p.oid = old_fn LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s%s', new_fn,
                       CASE g.grantee WHEN 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END,
                       CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
    DELETE FROM pg_init_privs WHERE objoid = new_fn AND classoid = 'pg_proc'::regclass;
    INSERT INTO pg_init_privs
    SELECT new_fn, classoid, objsubid, privtype, initprivs
      FROM pg_init_privs WHERE objoid = old_fn AND classoid = 'pg_proc'::regclass;
END $$;

/* The keys: for a one-column key a one-dimensional array of the key's type (or of one that
   casts to it implicitly: integers of any width, the string types), for a composite key a
   two-dimensional array with a row per key and an element per key column in key order; other
   elements are converted by the column's input function from their text form. anycompatible-
   array rather than a bigint[] overload beside an anyarray one: an untyped '{1,2}' or an
   untyped parameter resolves to text[] (and names integer keys through their text) instead of
   being ambiguous, so the calls written against bigint[] keep working unchanged. */
CREATE FUNCTION local_cache.mget(rel regclass, keys anycompatiblearray) RETURNS record[]
    AS 'MODULE_PATHNAME', 'local_cache_mget'
    LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;

CREATE FUNCTION local_cache.mget_json(rel regclass, keys anycompatiblearray) RETURNS json
    AS 'MODULE_PATHNAME', 'local_cache_mget_json'
    LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;

SELECT local_cache._copy_acl('local_cache.mget(regclass, bigint[])', 'local_cache.mget(regclass, anycompatiblearray)'),
       local_cache._copy_acl('local_cache.mget_json(regclass, bigint[])', 'local_cache.mget_json(regclass, anycompatiblearray)');
DROP FUNCTION local_cache.mget(regclass, bigint[]);
DROP FUNCTION local_cache.mget_json(regclass, bigint[]);
DROP FUNCTION local_cache._copy_acl(regprocedure, regprocedure);
