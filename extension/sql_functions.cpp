/*
 * sql_functions.cpp — the SQL-callable functions: mget, mget_json, flush, statistics.
 */
#include "pg.h"

#include "boundary.h"
#include "fetch.h"
#include "invalidation.h"
#include "keys.h"
#include "relinfo.h"
#include "store.h"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"
}

extern "C" {
PG_FUNCTION_INFO_V1(local_cache_mget);
PG_FUNCTION_INFO_V1(local_cache_mget_json);
PG_FUNCTION_INFO_V1(local_cache_flush_table);
PG_FUNCTION_INFO_V1(local_cache_flush_all);
PG_FUNCTION_INFO_V1(local_cache_flush_oid);
PG_FUNCTION_INFO_V1(local_cache_reset_stats);
PG_FUNCTION_INFO_V1(local_cache_table_counters);
PG_FUNCTION_INFO_V1(local_cache_global_counters);
PG_FUNCTION_INFO_V1(local_cache_check_preloaded);
PG_FUNCTION_INFO_V1(local_cache_check_primary_key);
}

using namespace local_cache;

namespace {

/* The keys argument of mget/mget_json, checked and unpacked. */
struct Keys {
	int64 *values;
	bool *nulls;
	int count;
};

Keys unpack_keys(ArrayType *array)
{
	Keys keys = {nullptr, nullptr, 0};
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("keys must be a one-dimensional array"),
				 errdetail("The array has %d dimensions.", ARR_NDIM(array))));
	if (ARR_ELEMTYPE(array) != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("keys must be an array of bigint")));
	Datum *datums;
	deconstruct_array(array, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &datums, &keys.nulls, &keys.count);
	keys.values = static_cast<int64 *>(palloc(sizeof(int64) * (keys.count + 1)));
	for (int i = 0; i < keys.count; i++)
		keys.values[i] = keys.nulls[i] ? 0 : DatumGetInt64(datums[i]);
	return keys;
}

FetchRequest make_request(RelInfo *info, const Keys &keys)
{
	return FetchRequest(info, GetActiveSnapshot(), keys.values, keys.count, keys.nulls);
}

char *copy_bytes(const char *data, uint32 len)
{
	char *copy = static_cast<char *>(palloc(len));
	memcpy(copy, data, len);
	return copy;
}

/* mget: one composite datum per position. */
struct RowsResult {
	Datum *rows;
	bool *nulls;
};

void collect_row(void *context, int position, const FetchedRow &row)
{
	RowsResult *result = static_cast<RowsResult *>(context);
	result->rows[position] = PointerGetDatum(copy_bytes(row.tuple, row.tuple_len));
	result->nulls[position] = false;
}

/* mget_json: one JSON text per position, rendered after the scan where not cached. */
struct JsonPiece {
	const char *json;      /* rendered, or nullptr */
	uint32 json_len;
	const char *tuple;     /* to render from when json is nullptr; nullptr: no row */
};

void collect_json(void *context, int position, const FetchedRow &row)
{
	JsonPiece *piece = &static_cast<JsonPiece *>(context)[position];
	if (row.json != nullptr) {
		piece->json = copy_bytes(row.json, row.json_len);
		piece->json_len = row.json_len;
	} else {
		piece->tuple = copy_bytes(row.tuple, row.tuple_len);
	}
}

Oid relation_argument(FunctionCallInfo fcinfo)
{
	return PG_GETARG_OID(0);
}

} // namespace

extern "C" Datum local_cache_mget(PG_FUNCTION_ARGS)
{
	return cxx_boundary([&]() -> Datum {
		RelInfo *info = relinfo_open(relation_argument(fcinfo));
		Keys keys = unpack_keys(PG_GETARG_ARRAYTYPE_P(1));
		if (keys.count == 0)
			PG_RETURN_ARRAYTYPE_P(construct_empty_array(info->rowtype));

		RowsResult result;
		result.rows = static_cast<Datum *>(palloc0(sizeof(Datum) * keys.count));
		result.nulls = static_cast<bool *>(palloc(sizeof(bool) * keys.count));
		memset(result.nulls, true, sizeof(bool) * keys.count);
		fetch_rows(make_request(info, keys), collect_row, &result);

		int dims[1] = {keys.count};
		int lbs[1] = {1};
		PG_RETURN_ARRAYTYPE_P(construct_md_array(result.rows, result.nulls, 1, dims, lbs,
												 info->rowtype, -1, false, TYPALIGN_DOUBLE));
	});
}

/* The same contract as array_to_json(local_cache.mget(...)), byte for byte. */
extern "C" Datum local_cache_mget_json(PG_FUNCTION_ARGS)
{
	return cxx_boundary([&]() -> Datum {
		RelInfo *info = relinfo_open(relation_argument(fcinfo));
		Keys keys = unpack_keys(PG_GETARG_ARRAYTYPE_P(1));

		JsonPiece *pieces = static_cast<JsonPiece *>(palloc0(sizeof(JsonPiece) * (keys.count + 1)));
		fetch_rows(make_request(info, keys), collect_json, pieces);

		StringInfoData out;
		initStringInfo(&out);
		appendStringInfoChar(&out, '[');
		for (int i = 0; i < keys.count; i++) {
			if (i > 0)
				appendStringInfoChar(&out, ',');
			if (pieces[i].json != nullptr)
				appendBinaryStringInfo(&out, pieces[i].json, pieces[i].json_len);
			else if (pieces[i].tuple != nullptr)
				render_row_json(pieces[i].tuple, &out);
			else
				appendStringInfoString(&out, "null");
		}
		appendStringInfoChar(&out, ']');
		PG_RETURN_TEXT_P(cstring_to_text_with_len(out.data, out.len));
	});
}

extern "C" Datum local_cache_flush_table(PG_FUNCTION_ARGS)
{
	return cxx_boundary([&]() -> Datum {
		store_require_available();
		Oid relid = PG_GETARG_OID(0);
		char *name = get_rel_name(relid);
		if (name == nullptr)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("relation with OID %u does not exist", relid)));
		if (!pg_class_ownercheck(relid, GetUserId()))
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, name);
		PG_RETURN_INT64(int64(store_flush(MyDatabaseId, relid)));
	});
}

extern "C" Datum local_cache_flush_all(PG_FUNCTION_ARGS)
{
	return cxx_boundary([&]() -> Datum {
		store_require_available();
		PG_RETURN_INT64(int64(store_flush(InvalidOid, InvalidOid)));
	});
}

/* enable(): a table enabled without the shared segment could not be invalidated. */
extern "C" Datum local_cache_check_preloaded(PG_FUNCTION_ARGS)
{
	return cxx_boundary([&]() -> Datum {
		store_require_available();
		PG_RETURN_VOID();
	});
}

/* enable(): the table's primary key is one the cache can key rows by (keys.cpp decides). */
extern "C" Datum local_cache_check_primary_key(PG_FUNCTION_ARGS)
{
	return cxx_boundary([&]() -> Datum {
		Relation rel = relation_open(PG_GETARG_OID(0), AccessShareLock);
		PrimaryKey key;
		report_key_problem(rel, primary_key_of(rel, &key));
		relation_close(rel, AccessShareLock);
		PG_RETURN_VOID();
	});
}

/*
 * For the extension's own SECURITY DEFINER functions (enable, disable, the sql_drop event
 * trigger): the table's capture starts or ends, so it is flushed at pre-commit with a capture
 * change, and standbys flush it too (invalidation_table_altered). Without the shared segment
 * there is nothing to flush: disable() must work then. Returns 0 (nothing is flushed yet).
 */
extern "C" Datum local_cache_flush_oid(PG_FUNCTION_ARGS)
{
	return cxx_boundary([&]() -> Datum {
		if (store_available())
			invalidation_table_altered(PG_GETARG_OID(0));
		PG_RETURN_INT64(0);
	});
}

extern "C" Datum local_cache_reset_stats(PG_FUNCTION_ARGS)
{
	return cxx_boundary([&]() -> Datum {
		store_require_available();
		store_reset_counters();
		PG_RETURN_VOID();
	});
}

extern "C" Datum local_cache_table_counters(PG_FUNCTION_ARGS)
{
	return cxx_boundary([&]() -> Datum {
		store_require_available();
		InitMaterializedSRF(fcinfo, 0);
		ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

		int max = store_max_tables();
		TableCounters *tables = static_cast<TableCounters *>(palloc(sizeof(TableCounters) * max));
		int n = store_table_counters(tables, max);
		for (int i = 0; i < n; i++) {
			Datum values[2 + NUM_COUNTERS + 2];
			bool nulls[2 + NUM_COUNTERS + 2] = {};
			int col = 0;
			values[col++] = ObjectIdGetDatum(tables[i].dbid);
			values[col++] = ObjectIdGetDatum(tables[i].relid);
			for (int c = 0; c < NUM_COUNTERS_1_0; c++)
				values[col++] = Int64GetDatum(int64(tables[i].counters[c]));
			values[col++] = Int64GetDatum(int64(tables[i].entries));
			values[col++] = Int64GetDatum(int64(tables[i].bytes));
			/* Columns the installed SQL version may not declare yet come last. */
			for (int c = NUM_COUNTERS_1_0; c < NUM_COUNTERS && col < rsinfo->setDesc->natts; c++)
				values[col++] = Int64GetDatum(int64(tables[i].counters[c]));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		return (Datum) 0;
	});
}

extern "C" Datum local_cache_global_counters(PG_FUNCTION_ARGS)
{
	return cxx_boundary([&]() -> Datum {
		store_require_available();
		TupleDesc desc;
		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		GlobalCounters global;
		store_global_counters(&global);

		Datum values[NUM_COUNTERS + 4];
		bool nulls[NUM_COUNTERS + 4] = {};
		int col = 0;
		for (int c = 0; c < NUM_COUNTERS_1_0; c++)
			values[col++] = Int64GetDatum(int64(global.counters[c]));
		values[col++] = Int64GetDatum(int64(global.entries));
		values[col++] = Int64GetDatum(int64(global.bytes));
		values[col++] = Int64GetDatum(int64(global.memory_budget));
		values[col++] = Int32GetDatum(global.shards);
		for (int c = NUM_COUNTERS_1_0; c < NUM_COUNTERS && col < desc->natts; c++)
			values[col++] = Int64GetDatum(int64(global.counters[c]));
		return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
	});
}
