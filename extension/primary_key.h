/*
 * primary_key.h — what names a cached row: the table's primary key, and the conversion between its
 * columns' values and the canonical key bytes the store keys rows by (key_bytes.h). The one
 * place that knows which primary keys the cache can use.
 */
#pragma once

#include "extension/pg.h"

extern "C" {
#include "access/attnum.h"
#include "access/htup.h"
#include "access/skey.h"
#include "access/tupdesc.h"
#include "lib/stringinfo.h"
#include "nodes/primnodes.h"
#include "utils/relcache.h"
}
#include "extension/key_bytes.h"

namespace local_cache {

struct PrimaryKey {
	Oid index; /* the primary key's index */
	KeyShape shape;
	int ncolumns;
	AttrNumber attnums[MAX_KEY_COLUMNS];
	Oid types[MAX_KEY_COLUMNS];       /* the columns' types */
	Oid index_types[MAX_KEY_COLUMNS]; /* the operator classes' input types (text for varchar) */
	Oid opfamilies[MAX_KEY_COLUMNS];
	RegProcedure eq_procs[MAX_KEY_COLUMNS];
	Oid collations[MAX_KEY_COLUMNS];
};

enum class KeyProblem { None, NoPrimaryKey, TooManyColumns, UnsupportedType, NondeterministicCollation };

/* The table's primary key, when the cache can key rows by it. */
KeyProblem primary_key_of(Relation rel, PrimaryKey *key);

/* Raises the error that explains `problem` for the table (enable() and reads). */
void report_key_problem(Relation rel, KeyProblem problem);

/* The kind of key column a type makes (a domain's base type decides), if the cache can use it. */
bool key_kind_of(Oid type, KeyKind *kind);

/*
 * How a value of `type` names keys of a column of kind `column`, when it can, as SQL's
 * `column = value` would: integers of any width name integer keys, the string types string
 * keys (character(n) without its trailing blanks, as its cast to text does; varchar on a
 * character(n) column too, which compares as character; text on a character(n) column as its
 * exact bytes, as text = text does), uuid uuid keys. Others name no key of the column (the
 * caller raises the error).
 */
bool value_kind_for(KeyKind column, Oid type, KeyKind *kind);

/*
 * Whether `column = value` under operator `opno` and `collation` names the key column's keys as
 * the cache keys them: the primary key's own equality (its btree family: bigint = integer works
 * too), under a collation whose equality is byte equality, with a value of a type that names the
 * column's keys (value_kind_for: not, for instance, `name`, which text's family compares with
 * text). The FDW's lookups and the capture's keys taken from a statement's WHERE clause.
 */
bool key_equality(const PrimaryKey &key, int column, Oid opno, Oid collation, Oid value_type);

/*
 * Which of a key's columns (`attnums`, in key order) `node` is: a Var of range table entry `varno`
 * of the query's own level, perhaps relabeled; -1 if none. The FDW's key conditions and the key a
 * statement's WHERE clause names.
 */
int key_column_of(Node *node, Index varno, const AttrNumber *attnums, int ncolumns);

/* The key's bytes from its columns' values (none NULL), read as `kinds` say (the key's own
 * shape, or value_kind_for's kinds), appended to `out`. */
void append_key_bytes(const KeyShape &kinds, const Datum *values, StringInfo out);

/* The key's bytes from a row of the table; false when a key column is NULL. */
bool append_row_key_bytes(const PrimaryKey &key, HeapTuple tuple, TupleDesc desc, StringInfo out);
/* The same from the key's columns alone (shape.ncolumns of attnums). */
bool append_row_key_bytes(const KeyShape &shape, const AttrNumber *attnums, HeapTuple tuple, TupleDesc desc,
						  StringInfo out);

/*
 * The columns' values from key bytes, for index probes and SQL; false when no value of the
 * key's types has these bytes (an integer out of the column's range, text that is not valid in
 * the database encoding): no row can have the key.
 */
bool key_values(const PrimaryKey &key, KeyBytes bytes, Datum *values);

/* Sorts keys' bytes (any fixed order: by length, then bytes) and removes duplicates; returns
 * how many are left. NULL keys must have been removed. */
int sort_distinct_keys(KeyBytes *keys, int count);
int compare_key_bytes(const KeyBytes &x, const KeyBytes &y);

/* Equality scan keys on every key column, for a probe of the primary key's index. */
void key_scan_keys(const PrimaryKey &key, const Datum *values, ScanKey scankeys);

/* Bytes for an integer key. */
inline KeyBytes int_key_bytes(const int64 *value)
{
	return KeyBytes{reinterpret_cast<const char *>(value), INT_KEY_BYTES};
}

} // namespace local_cache
