/*
 * keys.cpp — the primary keys the cache can use (one smallint, integer or bigint column) and
 * their values as the store's int64 keys.
 */
#include "keys.h"

extern "C" {
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace local_cache {

KeyProblem primary_key_of(Relation rel, PrimaryKey *key)
{
	list_free(RelationGetIndexList(rel));
	Oid index_oid = rel->rd_pkindex;
	if (!OidIsValid(index_oid))
		return KeyProblem::NoPrimaryKey;
	HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index_oid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for index %u", index_oid);
	Form_pg_index index = (Form_pg_index) GETSTRUCT(tuple);
	KeyProblem problem = KeyProblem::NotSingleColumn;
	if (index->indnkeyatts == 1 && index->indkey.values[0] > 0) {
		key->attnum = index->indkey.values[0];
		key->type = TupleDescAttr(RelationGetDescr(rel), key->attnum - 1)->atttypid;
		key->index = index_oid;
		bool isnull;
		oidvector *opclasses = (oidvector *) DatumGetPointer(
			SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indclass, &isnull));
		/* Primary keys are unique, so btree: the strategy number is btree's. */
		Oid eq = get_opfamily_member(get_opclass_family(opclasses->values[0]), key->type, key->type,
									 BTEqualStrategyNumber);
		problem = KeyProblem::UnsupportedType;
		if (OidIsValid(eq) && (key->type == INT8OID || key->type == INT4OID || key->type == INT2OID)) {
			key->eq_proc = get_opcode(eq);
			problem = KeyProblem::None;
		}
	}
	ReleaseSysCache(tuple);
	return problem;
}

void report_key_problem(Relation rel, KeyProblem problem)
{
	const char *hint = "local_cache needs a single-column bigint, integer or smallint primary key.";
	switch (problem) {
	case KeyProblem::None:
		return;
	case KeyProblem::NoPrimaryKey:
		ereport(ERROR, (errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						errmsg("table \"%s\" has no primary key", RelationGetRelationName(rel)), errhint("%s", hint)));
		break;
	case KeyProblem::NotSingleColumn:
		ereport(ERROR, (errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						errmsg("primary key of table \"%s\" is not a single column", RelationGetRelationName(rel)),
						errhint("%s", hint)));
		break;
	case KeyProblem::UnsupportedType:
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("primary key of table \"%s\" is not of type bigint, integer or smallint",
							   RelationGetRelationName(rel)),
						errhint("%s", hint)));
		break;
	}
}

int64 key_from_datum(Datum value, Oid type)
{
	switch (type) {
	case INT4OID: return DatumGetInt32(value);
	case INT2OID: return DatumGetInt16(value);
	default: return DatumGetInt64(value);
	}
}

bool key_fits(int64 key, Oid type)
{
	switch (type) {
	case INT4OID: return key >= PG_INT32_MIN && key <= PG_INT32_MAX;
	case INT2OID: return key >= PG_INT16_MIN && key <= PG_INT16_MAX;
	default: return true;
	}
}

Datum key_to_datum(int64 key, Oid type)
{
	switch (type) {
	case INT4OID: return Int32GetDatum(int32(key));
	case INT2OID: return Int16GetDatum(int16(key));
	default: return Int64GetDatum(key);
	}
}

} // namespace local_cache
