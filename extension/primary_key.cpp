/*
 * primary_key.cpp — the primary keys the cache can use (up to 8 columns of smallint, integer, bigint,
 * text, varchar, character or uuid, text-like ones under a deterministic collation) and their
 * values as the store's key bytes.
 */
#include "extension/primary_key.h"

extern "C" {
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/uuid.h"
}

namespace local_cache {

namespace {

const char *const KEY_HINT =
	"local_cache needs a primary key of at most 8 columns of type smallint, integer, bigint, text, "
	"varchar, character or uuid.";

/* One column's bytes: in the value itself, or (integers) in int_bytes. */
KeyBytes column_bytes(KeyKind kind, Datum value, int64 *int_bytes)
{
	switch (kind) {
	case KeyKind::Int2:
		*int_bytes = DatumGetInt16(value);
		return int_key_bytes(int_bytes);
	case KeyKind::Int4:
		*int_bytes = DatumGetInt32(value);
		return int_key_bytes(int_bytes);
	case KeyKind::Int8:
		*int_bytes = DatumGetInt64(value);
		return int_key_bytes(int_bytes);
	case KeyKind::Uuid:
		return KeyBytes{reinterpret_cast<const char *>(DatumGetUUIDP(value)->data), UUID_KEY_BYTES};
	case KeyKind::Text:
	case KeyKind::Bpchar: {
		struct varlena *text = pg_detoast_datum_packed(reinterpret_cast<struct varlena *>(DatumGetPointer(value)));
		const char *data = VARDATA_ANY(text);
		uint32 len = VARSIZE_ANY_EXHDR(text);
		return KeyBytes{data, kind == KeyKind::Bpchar ? without_trailing_blanks(data, len) : len};
	}
	}
	pg_unreachable();
}

bool column_value(KeyKind kind, KeyBytes bytes, Datum *value)
{
	switch (kind) {
	case KeyKind::Int2:
	case KeyKind::Int4:
	case KeyKind::Int8: {
		int64 v;
		if (bytes.len != INT_KEY_BYTES)
			return false;
		memcpy(&v, bytes.data, INT_KEY_BYTES);
		if (!integer_fits(v, kind))
			return false;
		*value = kind == KeyKind::Int2 ? Int16GetDatum(int16(v))
									   : kind == KeyKind::Int4 ? Int32GetDatum(int32(v)) : Int64GetDatum(v);
		return true;
	}
	case KeyKind::Uuid: {
		if (bytes.len != UUID_KEY_BYTES)
			return false;
		pg_uuid_t *uuid = static_cast<pg_uuid_t *>(palloc(sizeof(pg_uuid_t)));
		memcpy(uuid->data, bytes.data, UUID_KEY_BYTES);
		*value = UUIDPGetDatum(uuid);
		return true;
	}
	case KeyKind::Text:
	case KeyKind::Bpchar:
		/* No text value has a zero byte or an invalid character (RESP keys can), and no
		 * character(n) key ends in a blank (a text key with one names no such row). */
		if (memchr(bytes.data, '\0', bytes.len) != nullptr || !pg_verifymbstr(bytes.data, int(bytes.len), true) ||
			(kind == KeyKind::Bpchar && without_trailing_blanks(bytes.data, bytes.len) != bytes.len))
			return false;
		*value = PointerGetDatum(cstring_to_text_with_len(bytes.data, int(bytes.len)));
		return true;
	}
	return false;
}

} // namespace

bool key_kind_of(Oid type, KeyKind *kind)
{
	switch (getBaseType(type)) {
	case INT2OID: *kind = KeyKind::Int2; return true;
	case INT4OID: *kind = KeyKind::Int4; return true;
	case INT8OID: *kind = KeyKind::Int8; return true;
	case TEXTOID:
	case VARCHAROID: *kind = KeyKind::Text; return true;
	case BPCHAROID: *kind = KeyKind::Bpchar; return true;
	case UUIDOID: *kind = KeyKind::Uuid; return true;
	default: return false;
	}
}

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
	KeyProblem problem = KeyProblem::None;
	if (index->indnkeyatts > MAX_KEY_COLUMNS)
		problem = KeyProblem::TooManyColumns;
	bool isnull;
	oidvector *opclasses = (oidvector *) DatumGetPointer(
		SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indclass, &isnull));
	oidvector *collations = (oidvector *) DatumGetPointer(
		SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indcollation, &isnull));
	key->index = index_oid;
	key->ncolumns = index->indnkeyatts;
	key->shape.ncolumns = index->indnkeyatts;
	for (int c = 0; c < index->indnkeyatts && problem == KeyProblem::None; c++) {
		key->attnums[c] = index->indkey.values[c];
		key->types[c] = TupleDescAttr(RelationGetDescr(rel), key->attnums[c] - 1)->atttypid;
		key->index_types[c] = get_opclass_input_type(opclasses->values[c]);
		key->collations[c] = collations->values[c];
		key->opfamilies[c] = get_opclass_family(opclasses->values[c]);
		/* Primary keys are unique, so btree: the strategy number is btree's. */
		Oid eq = get_opfamily_member(key->opfamilies[c], key->index_types[c],
									 key->index_types[c], BTEqualStrategyNumber);
		if (key->attnums[c] <= 0 || !OidIsValid(eq) || !key_kind_of(key->types[c], &key->shape.kinds[c]))
			problem = KeyProblem::UnsupportedType;
		else if (OidIsValid(key->collations[c]) && !get_collation_isdeterministic(key->collations[c]))
			problem = KeyProblem::NondeterministicCollation;
		else
			key->eq_procs[c] = get_opcode(eq);
	}
	ReleaseSysCache(tuple);
	return problem;
}

void report_key_problem(Relation rel, KeyProblem problem)
{
	const char *name = RelationGetRelationName(rel);
	switch (problem) {
	case KeyProblem::None:
		return;
	case KeyProblem::NoPrimaryKey:
		ereport(ERROR, (errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						errmsg("table \"%s\" has no primary key", name), errhint("%s", KEY_HINT)));
		break;
	case KeyProblem::TooManyColumns:
		ereport(ERROR, (errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						errmsg("primary key of table \"%s\" has more than %d columns", name, MAX_KEY_COLUMNS),
						errhint("%s", KEY_HINT)));
		break;
	case KeyProblem::UnsupportedType:
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("primary key of table \"%s\" has a column of a type local_cache cannot key rows by",
							   name),
						errhint("%s", KEY_HINT)));
		break;
	case KeyProblem::NondeterministicCollation:
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("primary key of table \"%s\" has a column with a nondeterministic collation", name),
						errdetail("Under such a collation keys with different bytes can be equal."),
						errhint("Use a deterministic collation (such as \"C\" or the database default) for the "
								"primary key's columns.")));
		break;
	}
}

bool value_kind_for(KeyKind column, Oid type, KeyKind *kind)
{
	if (!key_kind_of(type, kind))
		return false;
	if (is_integer(column) || is_integer(*kind))
		return is_integer(column) && is_integer(*kind);
	if (column == KeyKind::Uuid || *kind == KeyKind::Uuid)
		return column == *kind;
	/*
	 * Strings, as SQL's `column = value` resolves: a character(n) value compares without its
	 * trailing blanks with any string column (the column's text, or both as character). With a
	 * character(n) column, varchar compares as character too; but text resolves to text =
	 * text (the column loses its blanks, the value keeps them), so a text value names the key
	 * of its exact bytes, and with trailing blanks no key at all (column_value).
	 */
	if (column == KeyKind::Bpchar && getBaseType(type) != TEXTOID)
		*kind = KeyKind::Bpchar;
	return true;
}

int key_column_of(Node *node, Index varno, const AttrNumber *attnums, int ncolumns)
{
	if (node != nullptr && IsA(node, RelabelType))
		node = reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(node)->arg);
	if (node == nullptr || !IsA(node, Var))
		return -1;
	Var *var = reinterpret_cast<Var *>(node);
	if (Index(var->varno) != varno || var->varlevelsup != 0)
		return -1;
	for (int c = 0; c < ncolumns; c++)
		if (var->varattno == attnums[c])
			return c;
	return -1;
}

bool key_equality(const PrimaryKey &key, int column, Oid opno, Oid collation, Oid value_type)
{
	KeyKind kind;
	return get_op_opfamily_strategy(opno, key.opfamilies[column]) == BTEqualStrategyNumber &&
		(!OidIsValid(collation) || get_collation_isdeterministic(collation)) &&
		value_kind_for(key.shape.kinds[column], value_type, &kind);
}

void append_key_bytes(const KeyShape &kinds, const Datum *values, StringInfo out)
{
	for (int c = 0; c < kinds.ncolumns; c++) {
		int64 int_bytes;
		KeyBytes bytes = column_bytes(kinds.kinds[c], values[c], &int_bytes);
		if (kinds.composite()) {
			char prefix[5];
			appendBinaryStringInfo(out, prefix, put_component_length(bytes.len, prefix));
		}
		appendBinaryStringInfo(out, bytes.data, int(bytes.len));
	}
}

int compare_key_bytes(const KeyBytes &x, const KeyBytes &y)
{
	if (x.len != y.len)
		return x.len < y.len ? -1 : 1;
	return x.len == 0 ? 0 : memcmp(x.data, y.data, x.len);
}

int sort_distinct_keys(KeyBytes *keys, int count)
{
	qsort(keys, count, sizeof(KeyBytes), [](const void *a, const void *b) {
		return compare_key_bytes(*static_cast<const KeyBytes *>(a), *static_cast<const KeyBytes *>(b));
	});
	int distinct = 0;
	for (int i = 0; i < count; i++)
		if (distinct == 0 || compare_key_bytes(keys[distinct - 1], keys[i]) != 0)
			keys[distinct++] = keys[i];
	return distinct;
}

bool append_row_key_bytes(const KeyShape &shape, const AttrNumber *attnums, HeapTuple tuple, TupleDesc desc,
						  StringInfo out)
{
	Datum values[MAX_KEY_COLUMNS];
	for (int c = 0; c < shape.ncolumns; c++) {
		bool isnull;
		values[c] = heap_getattr(tuple, attnums[c], desc, &isnull);
		if (isnull)
			return false;
	}
	append_key_bytes(shape, values, out);
	return true;
}

bool append_row_key_bytes(const PrimaryKey &key, HeapTuple tuple, TupleDesc desc, StringInfo out)
{
	return append_row_key_bytes(key.shape, key.attnums, tuple, desc, out);
}

bool key_values(const PrimaryKey &key, KeyBytes bytes, Datum *values)
{
	KeyBytes columns[MAX_KEY_COLUMNS];
	if (!split_key(key.shape, bytes, columns))
		return false;
	for (int c = 0; c < key.ncolumns; c++)
		if (!column_value(key.shape.kinds[c], columns[c], &values[c]))
			return false;
	return true;
}

void key_scan_keys(const PrimaryKey &key, const Datum *values, ScanKey scankeys)
{
	for (int c = 0; c < key.ncolumns; c++)
		ScanKeyEntryInitialize(&scankeys[c], 0, AttrNumber(c + 1), BTEqualStrategyNumber, key.index_types[c],
							   key.collations[c], key.eq_procs[c], values[c]);
}

} // namespace local_cache
