/* local_cache 1.2 -> 1.3: primary keys beyond integers - text, varchar, character, uuid, and
   composite keys of up to 8 such columns (and smallint, integer, bigint as before). */

\echo Use "ALTER EXTENSION local_cache UPDATE TO '1.3'" to load this file. \quit

/* The keys: for a one-column key a one-dimensional array of the key's type (or of one that
   casts to it implicitly: integers of any width, the string types), for a composite key a
   two-dimensional array with a row per key and an element per key column in key order; other
   elements are converted by the column's input function from their text form. anycompatible-
   array rather than a bigint[] overload beside an anyarray one: an untyped '{1,2}' or an
   untyped parameter resolves to text[] (and names integer keys through their text) instead of
   being ambiguous, so the calls written against bigint[] keep working unchanged. */
DROP FUNCTION local_cache.mget(regclass, bigint[]);
DROP FUNCTION local_cache.mget_json(regclass, bigint[]);

CREATE FUNCTION local_cache.mget(rel regclass, keys anycompatiblearray) RETURNS record[]
    AS 'MODULE_PATHNAME', 'local_cache_mget'
    LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;

CREATE FUNCTION local_cache.mget_json(rel regclass, keys anycompatiblearray) RETURNS json
    AS 'MODULE_PATHNAME', 'local_cache_mget_json'
    LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;
