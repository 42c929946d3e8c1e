/*
 * write_target.h — the table a RESP write names, as the write statements (writes.cpp,
 * batches.cpp) need it: locked, its quoted name, its key columns and the key's values with
 * the SQL fragments that name them, its other writable columns, and the checks of client text.
 * All of it runs in a transaction, inside the error boundary (write_runner.h): errors are
 * ereport(ERROR)s.
 */
#pragma once

#include "extension/pg.h"

#include "extension/cached_table.h"
#include "resp_server/commands/data_source.h"

#include <string_view>

namespace local_cache::resp {

/* The table's writable columns other than the key: not dropped, not generated. */
struct Columns {
	int count;
	const char *const *names; /* unquoted */
	const Oid *types;
	const int32 *typmods;
	const Oid *input_functions; /* each type's, and the parameter it takes */
	const Oid *input_params;
	/* A value of the type may be bound as a parameter of its type, one row's or an array of
	 * them (MSET): a base, enum, range or multirange type with an array type, not json, jsonb or
	 * an array (set_statements.cpp says why). */
	const bool *bindable;
	bool identity_always; /* one of them is GENERATED ALWAYS AS IDENTITY */

	/* `text` read as SQL reads a quoted literal written to `column`: its type's input function
	 * with the column's typmod (char(3) and bit(3) refuse what does not fit, numeric(5,2) rounds,
	 * a domain checks its constraints), where an explicit CAST would cut. */
	Datum value(int column, char *text) const
	{
		return OidInputFunctionCall(input_functions[column], text, input_params[column], typmods[column]);
	}
};

/* The table a key names, for writing: locked (conditionally), an enabled table without
 * row-level security, with its key columns' names and the key's values. In a transaction, and
 * valid until its end (the names are kept for the worker's life, write_target.cpp). */
struct Target {
	RelInfo *info;
	const char *table;  /* quoted, schema-qualified */
	int nkey;
	const char *key_columns[MAX_KEY_COLUMNS]; /* quoted */
	const char *key_names[MAX_KEY_COLUMNS];   /* as named */
	Columns other_columns;                    /* its writable columns but the key */
	Datum key[MAX_KEY_COLUMNS];
	KeyBytes key_bytes; /* the same key, as the store and the capture trigger name it */
	bool valid_key; /* false: the id names no key of the table */

	/* Appends the key's types and values to the statement's parameters, from index `first`. */
	void add_parameters(Oid *types, Datum *values, int first) const
	{
		for (int c = 0; c < nkey; c++) {
			types[first + c] = info->key.types[c];
			values[first + c] = key[c];
		}
	}
	/* "t.a OPERATOR(pg_catalog.=) $2 AND ...": the key's row, its values parameters $first, ... */
	const char *condition(const char *alias, int first) const
	{
		StringInfoData out;
		initStringInfo(&out);
		for (int c = 0; c < nkey; c++)
			appendStringInfo(&out, "%s%s.%s OPERATOR(pg_catalog.=) $%d", c > 0 ? " AND " : "", alias, key_columns[c],
							 first + c);
		return out.data;
	}
	/* "a, b", each column prefixed by `alias`. */
	const char *columns(const char *alias = "") const
	{
		StringInfoData out;
		initStringInfo(&out);
		for (int c = 0; c < nkey; c++)
			appendStringInfo(&out, "%s%s%s", c > 0 ? ", " : "", alias, key_columns[c]);
		return out.data;
	}
	/* "$2, $3" */
	const char *parameters(int first) const
	{
		StringInfoData out;
		initStringInfo(&out);
		for (int c = 0; c < nkey; c++)
			appendStringInfo(&out, "%s$%d", c > 0 ? ", " : "", first + c);
		return out.data;
	}
};

/* A text from the client, as the server encoding requires it (what a SQL client's text meets
 * on its way in): ERROR 22021 for a byte sequence it does not allow, NUL included. */
void verify_text(std::string_view text);
void verify_key(const RowKey &key);

/* The table of the key's prefix, for writing; `require_key`: an id that is not a key's
 * canonical text is an error (else valid_key says it) — one that spells a key otherwise
 * (refuse_other_spelling) names its canonical text. */
Target write_target(const RowKey &key, bool require_key = true);

/* ERROR, naming the canonical text, when `key`'s id spells a key of the table but is not its
 * canonical text (items:01 for items:1); nothing for an id that spells no key. */
void refuse_other_spelling(const RelInfo *info, const RowKey &key);

/* The key column `name` is, or -1. */
int key_column_index(const Target &target, std::string_view name);

/* The index of `name` in target.other_columns, -1 if none; errors for a key column. */
int column_index(const Target &target, std::string_view name);

[[noreturn]] void no_such_column(const Target &target, std::string_view name);

/*
 * Whether a write to the table runs only PostgreSQL's own code, whatever the role: a plain table
 * without rules, whose triggers are all the cache's (local_cache's schema), and whose column
 * types, defaults, generated columns, CHECK constraints, index expressions, predicates and
 * operator families are built in and call no volatile function but nextval, random,
 * gen_random_uuid or clock_timestamp (no pg_sleep, no advisory lock). A foreign key or a
 * deferrable constraint is a trigger, so it says no. In a transaction: 1 yes, 0 no, -1 not known
 * (the table is locked: no wait, no error).
 */
signed char runs_only_builtin_code(Oid relid);

/* After a statement on the key's row (WHERE key = the key's, or an insert of it): the row is the
 * command's own if the statement wrote it (`processed`). Marked by the key the command named: a
 * BEFORE ROW trigger that changes the key column writes another row, which then counts as the
 * trigger's. */
void own_row(const Target &target, uint64 processed);

/* The keys of the target's table among `keys` (relids[i]: key i's table), one array per key
 * column in types/arrays; false when none names a key. Another spelling of a key is an error, as
 * for every write; an id that spells no key is left out. */
bool key_arrays(const Target &target, const RowKey *keys, const Oid *relids, size_t count, Oid *types,
				Datum *arrays);

} // namespace local_cache::resp
