/*
 * sql_functions.cpp — the SQL-callable functions: mget, mget_json, flush, statistics, and the
 * owner check of the registry writes.
 */
#include "extension/pg.h"

#include "extension/boundary.h"
#include "extension/fetch.h"
#include "extension/invalidation.h"
#include "extension/primary_key.h"
#include "extension/cached_table.h"
#include "extension/store.h"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/objectaddress.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"
}

using namespace local_cache;

namespace {

/* The keys argument of mget/mget_json, checked and made key bytes. */
struct Keys {
	KeyBytes *bytes;
	bool *nulls;
	int count;
};

/* Where a key's element is being converted, for the error's context. */
struct ElementPosition {
	RelInfo *info;
	int key;
	int column;
};

void element_error_context(void *arg)
{
	ElementPosition *at = static_cast<ElementPosition *>(arg);
	errcontext("key %d, column \"%s\" of the primary key of table \"%s\"", at->key + 1,
			   get_attname(at->info->relid, at->info->key.attnums[at->column], false), NameStr(at->info->relname));
}

/*
 * The keys argument: for a one-column key a one-dimensional array, for a composite key a
 * two-dimensional one with a row per key and an element per key column in key order. An
 * element of a type that names the column's keys as it is (value_kind_for: the key's type,
 * integers of any width, the string types) is used as it is; any other is converted by the
 * column's input function from its text form (so '{1,2}', which resolves to text[], names
 * integer keys). A NULL element makes its key NULL.
 */
Keys unpack_keys(RelInfo *info, ArrayType *array)
{
	Keys keys = {nullptr, nullptr, 0};
	const PrimaryKey &key = info->key;
	int ndim = ARR_NDIM(array);
	int expected_ndim = key.shape.composite() ? 2 : 1;
	if (ndim != 0 && ndim != expected_ndim)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("keys of table \"%s\" must be a %s array", NameStr(info->relname),
						expected_ndim == 1 ? "one-dimensional" : "two-dimensional"),
				 errdetail("The array has %d dimensions.", ndim),
				 key.shape.composite()
					 ? errhint("Its primary key has %d columns: pass one row of %d elements per key.", key.ncolumns,
							   key.ncolumns)
					 : 0));
	if (ndim == 2 && ARR_DIMS(array)[1] != key.ncolumns)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("keys of table \"%s\" must have %d elements each, one per primary key column",
						NameStr(info->relname), key.ncolumns),
				 errdetail("The keys have %d elements each.", ARR_DIMS(array)[1])));
	Oid element_type = ARR_ELEMTYPE(array);
	int16 typlen;
	bool typbyval;
	char typalign;
	get_typlenbyvalalign(element_type, &typlen, &typbyval, &typalign);
	Datum *elements;
	bool *element_nulls;
	int nelements;
	deconstruct_array(array, element_type, typlen, typbyval, typalign, &elements, &element_nulls, &nelements);

	KeyShape kinds;
	kinds.ncolumns = key.ncolumns;
	bool via_text[MAX_KEY_COLUMNS];
	Oid output_function = InvalidOid, input_functions[MAX_KEY_COLUMNS], input_params[MAX_KEY_COLUMNS];
	for (int c = 0; c < key.ncolumns; c++) {
		via_text[c] = !value_kind_for(key.shape.kinds[c], element_type, &kinds.kinds[c]);
		if (via_text[c]) {
			/* Integers through bigint's input: a value out of a smaller column's range is a
			 * missing key, as in a bigint[]. */
			kinds.kinds[c] = is_integer(key.shape.kinds[c]) ? KeyKind::Int8 : key.shape.kinds[c];
			bool varlena;
			getTypeOutputInfo(element_type, &output_function, &varlena);
			getTypeInputInfo(is_integer(key.shape.kinds[c]) ? INT8OID : key.types[c], &input_functions[c],
							 &input_params[c]);
		}
	}

	ElementPosition at = {info, 0, 0};
	ErrorContextCallback context;
	context.callback = element_error_context;
	context.arg = &at;
	context.previous = error_context_stack;
	error_context_stack = &context;

	keys.count = nelements / key.ncolumns;
	keys.bytes = static_cast<KeyBytes *>(palloc0(sizeof(KeyBytes) * (keys.count + 1)));
	keys.nulls = static_cast<bool *>(palloc0(sizeof(bool) * (keys.count + 1)));
	int *ends = static_cast<int *>(palloc(sizeof(int) * (keys.count + 1)));
	StringInfoData buffer;
	initStringInfo(&buffer);
	for (at.key = 0; at.key < keys.count; at.key++) {
		Datum values[MAX_KEY_COLUMNS];
		for (at.column = 0; at.column < key.ncolumns && !keys.nulls[at.key]; at.column++) {
			int e = at.key * key.ncolumns + at.column;
			keys.nulls[at.key] = element_nulls[e];
			if (keys.nulls[at.key] || !via_text[at.column])
				values[at.column] = elements[e];
			else
				values[at.column] = OidInputFunctionCall(input_functions[at.column],
														 OidOutputFunctionCall(output_function, elements[e]),
														 input_params[at.column], -1);
		}
		if (!keys.nulls[at.key])
			append_key_bytes(kinds, values, &buffer);
		ends[at.key] = buffer.len;
	}
	error_context_stack = context.previous;
	for (int i = 0, start = 0; i < keys.count; start = ends[i], i++)
		keys.bytes[i] = KeyBytes{buffer.data + start, uint32(ends[i] - start)};
	return keys;
}

FetchRequest make_request(RelInfo *info, const Keys &keys)
{
	return FetchRequest(info, GetActiveSnapshot(), keys.bytes, keys.count, keys.nulls);
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

static Datum mget(PG_FUNCTION_ARGS)
{
	throw_point("mget");
	RelInfo *info = relinfo_open(relation_argument(fcinfo));
	Keys keys = unpack_keys(info, PG_GETARG_ARRAYTYPE_P(1));
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
}
LOCAL_CACHE_V1_FUNCTION(local_cache_mget, mget)

/* The same contract as array_to_json(local_cache.mget(...)), byte for byte. */
static Datum mget_json(PG_FUNCTION_ARGS)
{
	RelInfo *info = relinfo_open(relation_argument(fcinfo));
	Keys keys = unpack_keys(info, PG_GETARG_ARRAYTYPE_P(1));

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
}
LOCAL_CACHE_V1_FUNCTION(local_cache_mget_json, mget_json)

static Datum flush_table(PG_FUNCTION_ARGS)
{
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
}
LOCAL_CACHE_V1_FUNCTION(local_cache_flush_table, flush_table)

static Datum flush_all(PG_FUNCTION_ARGS)
{
	store_require_available();
	PG_RETURN_INT64(int64(store_flush(InvalidOid, InvalidOid)));
}
LOCAL_CACHE_V1_FUNCTION(local_cache_flush_all, flush_all)

/* enable(): a table enabled without the shared segment could not be invalidated. */
static Datum check_preloaded(PG_FUNCTION_ARGS)
{
	store_require_available();
	PG_RETURN_VOID();
}
LOCAL_CACHE_V1_FUNCTION(local_cache_check_preloaded, check_preloaded)

/* enable(): the table's primary key is one the cache can key rows by (primary_key.cpp decides). */
static Datum check_primary_key(PG_FUNCTION_ARGS)
{
	Relation rel = relation_open(PG_GETARG_OID(0), AccessShareLock);
	PrimaryKey key;
	report_key_problem(rel, primary_key_of(rel, &key));
	relation_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}
LOCAL_CACHE_V1_FUNCTION(local_cache_check_primary_key, check_primary_key)

/*
 * For the extension's own SECURITY DEFINER functions (enable, disable, the sql_drop event
 * trigger): the table's capture starts or ends, so it is flushed at pre-commit with a capture
 * change, and standbys flush it too (invalidation_table_altered). Without the shared segment
 * there is nothing to flush: disable() must work then. Returns 0 (nothing is flushed yet).
 */
static Datum flush_oid(PG_FUNCTION_ARGS)
{
	if (store_available())
		invalidation_table_altered(PG_GETARG_OID(0));
	PG_RETURN_INT64(0);
}
LOCAL_CACHE_V1_FUNCTION(local_cache_flush_oid, flush_oid)

/*
 * _register and _unregister: the registry is written by SECURITY DEFINER functions (they run as
 * the extension's owner), and PostgreSQL does not tell such a function who called it. So the
 * check that the caller owns the table (or is a member of the owning role, or a superuser) is
 * made here, as the caller, before the write runs; nobody else may call the writes themselves.
 */
static void call_as_registry_owner(const char *signature, FunctionCallInfo fcinfo)
{
	Oid relid = PG_GETARG_OID(0);
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(get_rel_relkind(relid)), get_rel_name(relid));
	Oid write = DatumGetObjectId(DirectFunctionCall1(regprocedurein, CStringGetDatum(signature)));
	if (PG_NARGS() == 2)
		OidFunctionCall2(write, PG_GETARG_DATUM(0), PG_GETARG_DATUM(1));
	else
		OidFunctionCall1(write, PG_GETARG_DATUM(0));
}

static Datum register_table(PG_FUNCTION_ARGS)
{
	call_as_registry_owner("local_cache._register_as_owner(pg_catalog.regclass, pg_catalog.text)", fcinfo);
	PG_RETURN_VOID();
}
LOCAL_CACHE_V1_FUNCTION(local_cache_register, register_table)

static Datum unregister_table(PG_FUNCTION_ARGS)
{
	call_as_registry_owner("local_cache._unregister_as_owner(pg_catalog.regclass)", fcinfo);
	PG_RETURN_VOID();
}
LOCAL_CACHE_V1_FUNCTION(local_cache_unregister, unregister_table)

static Datum reset_stats(PG_FUNCTION_ARGS)
{
	store_require_available();
	store_reset_counters();
	PG_RETURN_VOID();
}
LOCAL_CACHE_V1_FUNCTION(local_cache_reset_stats, reset_stats)

/* The stats view's one-time filter: without the preloaded library it fails as every other
 * entry point does, also when no table is cached (then the counters are never read). */
static Datum require_preloaded(PG_FUNCTION_ARGS)
{
	store_require_available();
	PG_RETURN_BOOL(true);
}
LOCAL_CACHE_V1_FUNCTION(local_cache_require_preloaded, require_preloaded)

static Datum table_counters(PG_FUNCTION_ARGS)
{
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
}
LOCAL_CACHE_V1_FUNCTION(local_cache_table_counters, table_counters)

static Datum global_counters(PG_FUNCTION_ARGS)
{
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
}
LOCAL_CACHE_V1_FUNCTION(local_cache_global_counters, global_counters)
