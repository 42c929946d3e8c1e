/*
 * write_target.cpp — the table a RESP write names (write_target.h): its name, key and columns
 * from the catalogs, and the checks of client text.
 */
#include "resp_server/pg/write_target.h"

#include "extension/primary_key.h"
#include "resp_server/pg/session_runtime.h"

#include "extension/boundary.h"
#include "extension/invalidation.h"

extern "C" {
#include "access/genam.h"
#include "access/relation.h"
#include "access/transam.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "nodes/nodeFuncs.h"
#include "storage/lmgr.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace local_cache::resp {

/* A text from the client, as the server encoding requires it (what a SQL client's text meets
 * on its way in): ERROR 22021 for a byte sequence it does not allow, NUL included. */
void verify_text(std::string_view text)
{
	pg_verify_mbstr(GetDatabaseEncoding(), text.data(), int(text.size()), false);
}

void verify_key(const RowKey &key)
{
	verify_text(key.prefix);
	verify_text(key.id);
}

namespace {

/* At most `limit` bytes of a text (whole characters: it is valid in the server encoding), and
 * whether it was cut, for an error message. */
int clipped(std::string_view text, int limit, const char **more)
{
	int len = pg_mbcliplen(text.data(), int(text.size()), limit);
	*more = size_t(len) < text.size() ? "..." : "";
	return len;
}

} // namespace

/*
 * A write names a row only by its key's canonical text, as a read does: that is the name SCAN,
 * KEYS and the CLIENT TRACKING pushes give the row, so a client is told about the name it used.
 * Writing the row through another spelling (items:01, an upper-case uuid, a character(n) key
 * with trailing blanks) would change it under a name no push carries. Taking that spelling as
 * a missing key, as a read does, would make the write a silent no-op; so it is refused, naming
 * the canonical text the client should use. A text that spells no key at all is left to the
 * caller (an invalid-key error, or nothing deleted).
 */
void refuse_other_spelling(const RelInfo *info, const RowKey &key)
{
	char *buffer = static_cast<char *>(palloc(key_bytes_bound(key.id.size())));
	std::string_view canonical;
	if (!canonical_spelling(info->key.shape, key.id, buffer, &canonical))
		return;
	const char *more_prefix, *more_id, *more_canonical;
	int prefix_len = clipped(key.prefix, 64, &more_prefix);
	int id_len = clipped(key.id, 128, &more_id);
	int canonical_len = clipped(canonical, 128, &more_canonical);
	ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("key \"%.*s%s:%.*s%s\" is not in canonical form; the row's key is \"%.*s%s:%.*s%s\"",
						   prefix_len, key.prefix.data(), more_prefix, id_len, key.id.data(), more_id,
						   prefix_len, key.prefix.data(), more_prefix, canonical_len, canonical.data(),
						   more_canonical)));
}

namespace {

/*
 * A table's names as the write statements spell them, by relid, built once instead of from the
 * catalogs on every write (with its columns' type lookups, about 4 µs of a one-row SET on the
 * loop): its quoted schema-qualified name, its key columns (quoted, and as named) and its other
 * writable columns with their types' facts. Built after the table is locked, which processes
 * pending invalidations; forgotten at a relcache invalidation of the table (ALTER TABLE, RENAME,
 * but also ANALYZE or CREATE INDEX CONCURRENTLY while a write runs) and at any schema change (a
 * schema's rename sends none for its tables). Rebuilt into new memory: the old memory goes to the
 * transaction's, since the Targets this transaction already has point into it (each has its own
 * copy of the Columns, so a rebuild changes none of them).
 */
struct TableNames {
	Oid relid; /* hash key */
	bool valid;
	MemoryContext memory;
	const char *table;
	const char *key_columns[MAX_KEY_COLUMNS];
	const char *key_names[MAX_KEY_COLUMNS];
	Columns columns;
};

HTAB *table_names = nullptr;

void forget_table_names(Datum, Oid relid)
{
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, table_names);
	while (TableNames *names = static_cast<TableNames *>(hash_seq_search(&status)))
		if (!OidIsValid(relid) || names->relid == relid)
			names->valid = false;
}

void forget_all_table_names(Datum, int, uint32)
{
	forget_table_names((Datum) 0, InvalidOid);
}

void build_table_names(const RelInfo *info, TableNames *names)
{
	MemoryContext old = MemoryContextSwitchTo(names->memory);
	Relation rel = relation_open(info->relid, NoLock);
	names->table = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											  RelationGetRelationName(rel));
	TupleDesc desc = RelationGetDescr(rel);
	for (int c = 0; c < info->key.ncolumns; c++) {
		names->key_names[c] = pstrdup(NameStr(TupleDescAttr(desc, info->key.attnums[c] - 1)->attname));
		names->key_columns[c] = quote_identifier(names->key_names[c]);
	}
	int most = desc->natts + 1;
	const char **column_names = static_cast<const char **>(palloc(sizeof(char *) * most));
	Oid *types = static_cast<Oid *>(palloc(sizeof(Oid) * most));
	int32 *typmods = static_cast<int32 *>(palloc(sizeof(int32) * most));
	Oid *input_functions = static_cast<Oid *>(palloc(sizeof(Oid) * most));
	Oid *input_params = static_cast<Oid *>(palloc(sizeof(Oid) * most));
	bool *bindable = static_cast<bool *>(palloc(sizeof(bool) * most));
	Columns columns = {0, column_names, types, typmods, input_functions, input_params, bindable, false};
	for (int i = 0; i < desc->natts; i++) {
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool key_column = false;
		for (int c = 0; c < info->key.ncolumns; c++)
			key_column |= info->key.attnums[c] == att->attnum;
		if (att->attisdropped || att->attgenerated || key_column)
			continue;
		Oid type = att->atttypid;
		column_names[columns.count] = pstrdup(NameStr(att->attname));
		types[columns.count] = type;
		typmods[columns.count] = att->atttypmod;
		getTypeInputInfo(type, &input_functions[columns.count], &input_params[columns.count]);
		char typtype = get_typtype(type);
		bindable[columns.count] = type != JSONOID && type != JSONBOID && !type_is_array(type) &&
			OidIsValid(get_array_type(type)) &&
			(typtype == TYPTYPE_BASE || typtype == TYPTYPE_ENUM || typtype == TYPTYPE_RANGE ||
			 typtype == TYPTYPE_MULTIRANGE);
		columns.identity_always |= att->attidentity == ATTRIBUTE_IDENTITY_ALWAYS;
		columns.count++;
	}
	names->columns = columns;
	relation_close(rel, NoLock);
	MemoryContextSwitchTo(old);
}

/* The names of the locked table `info` describes. */
const TableNames &names_of(const RelInfo *info)
{
	if (table_names == nullptr) {
		table_names = blob_hash_create("local_cache RESP write table names", sizeof(Oid), sizeof(TableNames),
									   TopMemoryContext);
		CacheRegisterRelcacheCallback(pg_entry<forget_table_names>, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, pg_entry<forget_all_table_names>, (Datum) 0);
	}
	bool found;
	TableNames *names = static_cast<TableNames *>(hash_search(table_names, &info->relid, HASH_ENTER, &found));
	if (found && names->valid)
		return *names;
	if (found)
		MemoryContextSetParent(names->memory, TopTransactionContext);
	names->valid = false;
	names->memory = AllocSetContextCreate(TopMemoryContext, "local_cache RESP write table names", ALLOCSET_SMALL_SIZES);
	build_table_names(info, names);
	names->valid = true;
	return *names;
}

} // namespace

/* The table of the key's prefix, for writing; `require_key`: an id that is not a key's
 * canonical text is an error (else valid_key says it). */
Target write_target(const RowKey &key, bool require_key)
{
	verify_key(key);
	load_prefixes();
	Oid relid = relid_for_prefix(key.prefix);
	if (!OidIsValid(relid))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("no enabled table has the RESP prefix \"%.*s\"", int(key.prefix.size()),
							   key.prefix.data())));
	lock_table(relid);
	RelInfo *info = relinfo_lookup(relid);
	const TableNames &names = names_of(info);
	Target target;
	target.info = info;
	target.table = names.table;
	target.nkey = info->key.ncolumns;
	for (int c = 0; c < target.nkey; c++) {
		target.key_columns[c] = names.key_columns[c];
		target.key_names[c] = names.key_names[c];
	}
	target.other_columns = names.columns;
	target.key_bytes = KeyBytes{};
	bool canonical = key_of_id(info, key.id, &target.key_bytes);
	if (!canonical && require_key)
		refuse_other_spelling(info, key);
	target.valid_key = canonical && key_values(info->key, target.key_bytes, target.key);
	if (!target.valid_key && require_key)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("invalid key '%.*s:%.*s': not a key of table %s", int(key.prefix.size()),
							   key.prefix.data(), int(Min(key.id.size(), 128)), key.id.data(), NameStr(info->relname))));
	return target;
}


/* The key column `name` is, or -1. */
int key_column_index(const Target &target, std::string_view name)
{
	for (int c = 0; c < target.nkey; c++)
		if (name == target.key_names[c])
			return c;
	return -1;
}

/* The index of `name` in target.other_columns, -1 if none; errors for a key column. */
int column_index(const Target &target, std::string_view name)
{
	const Columns &columns = target.other_columns;
	if (key_column_index(target, name) >= 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
						errmsg("column \"%.*s\" is the key: it is set by the key itself", int(name.size()),
							   name.data())));
	for (int i = 0; i < columns.count; i++)
		if (strlen(columns.names[i]) == name.size() && memcmp(columns.names[i], name.data(), name.size()) == 0)
			return i;
	return -1;
}

[[noreturn]] void no_such_column(const Target &target, std::string_view name)
{
	ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
					errmsg("column \"%.*s\" of table \"%s\" does not exist", int(name.size()), name.data(),
						   NameStr(target.info->relname))));
}

namespace {

/* What an expression of the table may call: a built-in function that is not volatile, or one of
 * the volatile ones a default commonly calls, none of which waits; or the cache's own. */
bool foreign_function(Oid function, void *context)
{
	Oid cache_schema = *static_cast<Oid *>(context);
	if (function >= FirstGenbkiObjectId)
		return get_func_namespace(function) != cache_schema;
	switch (function) {
	case F_NEXTVAL: case F_RANDOM: case F_GEN_RANDOM_UUID: case F_CLOCK_TIMESTAMP:
		return false;
	default:
		return func_volatile(function) == PROVOLATILE_VOLATILE;
	}
}

bool calls_foreign_code(Node *node, void *context)
{
	if (node == nullptr)
		return false;
	if (IsA(node, CoerceToDomain) || check_functions_in_node(node, pg_entry<foreign_function>, context))
		return true;
	return expression_tree_walker(node, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(pg_entry<calls_foreign_code>)), context);
}

bool foreign_expression(const char *text, Oid cache_schema)
{
	return text != nullptr && calls_foreign_code(static_cast<Node *>(stringToNode(text)), &cache_schema);
}

bool foreign_expressions(List *expressions, Oid cache_schema)
{
	return calls_foreign_code(reinterpret_cast<Node *>(expressions), &cache_schema);
}

bool table_runs_builtin_code(Relation rel, Oid cache_schema)
{
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rules != nullptr || rel->rd_rel->relrowsecurity)
		return false;
	if (TriggerDesc *triggers = rel->trigdesc)
		for (int i = 0; i < triggers->numtriggers; i++)
			if (get_func_namespace(triggers->triggers[i].tgfoid) != cache_schema ||
				foreign_expression(triggers->triggers[i].tgqual, cache_schema))
				return false;
	TupleDesc desc = RelationGetDescr(rel);
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped && TupleDescAttr(desc, i)->atttypid >= FirstGenbkiObjectId)
			return false;
	if (TupleConstr *constr = desc->constr) {
		for (int i = 0; i < constr->num_defval; i++)
			if (foreign_expression(constr->defval[i].adbin, cache_schema))
				return false;
		for (int i = 0; i < constr->num_check; i++)
			if (foreign_expression(constr->check[i].ccbin, cache_schema))
				return false;
	}
	List *indexes = RelationGetIndexList(rel);
	ListCell *cell;
	foreach (cell, indexes) {
		Relation index = index_open(lfirst_oid(cell), AccessShareLock);
		bool builtin = index->rd_rel->relam < FirstGenbkiObjectId &&
			!foreign_expressions(RelationGetIndexExpressions(index), cache_schema) &&
			!foreign_expressions(RelationGetIndexPredicate(index), cache_schema);
		for (int c = 0; builtin && c < IndexRelationGetNumberOfKeyAttributes(index); c++)
			builtin = index->rd_opfamily[c] < FirstGenbkiObjectId;
		index_close(index, AccessShareLock);
		if (!builtin)
			return false;
	}
	return true;
}

} // namespace

signed char runs_only_builtin_code(Oid relid)
{
	if (!ConditionalLockRelationOid(relid, AccessShareLock))
		return -1;
	Relation rel = relation_open(relid, NoLock);
	bool builtin = table_runs_builtin_code(rel, get_namespace_oid("local_cache", false));
	relation_close(rel, NoLock);
	return builtin ? 1 : 0;
}

/* After a statement on the key's row (WHERE key = the key's, or an insert of it): the row is the
 * command's own if the statement wrote it (`processed`). Marked by the key the command named: a
 * BEFORE ROW trigger that changes the key column writes another row, which then counts as the
 * trigger's. */
void own_row(const Target &target, uint64 processed)
{
	if (processed > 0)
		invalidation_own_write(target.info->relid, target.key_bytes);
}

/* The keys of the target's table among `keys`, one array per key column, for
 * (key columns) IN (SELECT * FROM unnest($1, $2 ...)); false when none names a key. Another
 * spelling of a key is an error, as for every write; an id that spells no key deletes nothing. */
bool key_arrays(const Target &target, const RowKey *keys, const Oid *relids, size_t count, Oid *types,
				Datum *arrays)
{
	const PrimaryKey &pk = target.info->key;
	Datum *elements = static_cast<Datum *>(palloc(sizeof(Datum) * (count * pk.ncolumns + 1)));
	int n = 0;
	for (size_t i = 0; i < count; i++) {
		if (relids[i] != target.info->relid)
			continue;
		KeyBytes bytes;
		if (!key_of_id(target.info, keys[i].id, &bytes))
			refuse_other_spelling(target.info, keys[i]);
		else if (key_values(pk, bytes, &elements[n * pk.ncolumns]))
			n++;
	}
	for (int c = 0; c < pk.ncolumns; c++) {
		Datum *column = static_cast<Datum *>(palloc(sizeof(Datum) * (n + 1)));
		for (int i = 0; i < n; i++)
			column[i] = elements[i * pk.ncolumns + c];
		int16 typlen;
		bool typbyval;
		char typalign;
		get_typlenbyvalalign(pk.types[c], &typlen, &typbyval, &typalign);
		types[c] = get_array_type(pk.types[c]);
		arrays[c] = PointerGetDatum(construct_array(column, n, pk.types[c], typlen, typbyval, typalign));
	}
	return n > 0;
}

} // namespace local_cache::resp
