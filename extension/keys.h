/*
 * keys.h — what names a cached row: the table's primary key, and the conversion between the
 * key column's values and the int64 the store keys rows by. The one place that knows which
 * primary keys the cache can use.
 */
#pragma once

#include "pg.h"

extern "C" {
#include "access/attnum.h"
#include "utils/relcache.h"
}

namespace local_cache {

struct PrimaryKey {
	AttrNumber attnum;
	Oid type;             /* INT8OID, INT4OID or INT2OID */
	Oid index;            /* the primary key's index */
	RegProcedure eq_proc; /* the equality of the index's operator class */
};

enum class KeyProblem { None, NoPrimaryKey, NotSingleColumn, UnsupportedType };

/* The table's primary key, when the cache can key rows by it. */
KeyProblem primary_key_of(Relation rel, PrimaryKey *key);

/* Raises the error that explains `problem` for the table (enable() and reads). */
void report_key_problem(Relation rel, KeyProblem problem);

int64 key_from_datum(Datum value, Oid type);
/* Whether the key can be a value of the column's type at all. */
bool key_fits(int64 key, Oid type);
Datum key_to_datum(int64 key, Oid type);

} // namespace local_cache
