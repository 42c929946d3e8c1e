/*
 * writes.cpp — what the RESP write commands do in PostgreSQL: SET, MSET, DEL, HSET, HDEL,
 * HINCRBY and WATCH's row versions, as SQL statements run through SPI as the connection's role.
 *
 * A write is an ordinary statement on the table: the role's INSERT/UPDATE/DELETE privileges,
 * the table's constraints and triggers apply, values are read as SQL reads a literal for the
 * column (input function and typmod), every text is checked against the server encoding, and
 * nothing the statement's triggers change in the worker's session outlives it (run_for_role).
 * The capture triggers invalidate the cache at pre-commit as for any SQL write; the reply goes out after COMMIT returned. Each call is a
 * transaction of its own, or part of EXEC's batch (transaction.h). A row or table lock held by
 * another transaction makes the statement fail after lock_timeout (1 ms in the workers): the
 * command answers Busy, and the server runs it again until local_cache.resp_lock_timeout.
 */
#include "resp_server/pg/pg_data_source.h"
#include "resp_server/pg/session_runtime.h"
#include "resp_server/pg/transaction.h"

#include "extension/primary_key.h"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xlog.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_type.h"
#include "commands/prepare.h"
#include "commands/sequence.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace local_cache::resp {

namespace {

/* Set when MSETNX found a key present: the transaction is rolled back, the reply is 0. */
bool set_refused_present = false;

/* A write's error: the message and its SQLSTATE, as the write commands answer it. */
LookupResult write_failure(const PgError &error)
{
	LookupResult result = failure(error);
	if (result.status == LookupResult::Status::Failed)
		result.message += std::string(" (SQLSTATE ") + unpack_sql_state(error.sqlerrcode) + ")";
	return result;
}

/* The table a key names, for writing: locked (conditionally), an enabled table without
 * row-level security, with its key columns' names and the key's values. In a transaction. */
struct Target {
	RelInfo *info;
	const char *table;  /* quoted, schema-qualified */
	int nkey;
	const char *key_columns[MAX_KEY_COLUMNS]; /* quoted */
	Datum key[MAX_KEY_COLUMNS];
	bool valid_key; /* false: the id names no key of the table */

	bool is_key_column(AttrNumber attnum) const
	{
		for (int c = 0; c < nkey; c++)
			if (info->key.attnums[c] == attnum)
				return true;
		return false;
	}
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
void verify_text(std::string_view text)
{
	pg_verify_mbstr(GetDatabaseEncoding(), text.data(), int(text.size()), false);
}

void verify_key(const RowKey &key)
{
	verify_text(key.prefix);
	verify_text(key.id);
}

/* The table of the key's prefix, for writing; `require_key`: a non-canonical id is an error
 * (else valid_key says it). */
Target write_target(const RowKey &key, bool require_key = true)
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
	Target target;
	target.info = info;
	target.table = quote_qualified_identifier(get_namespace_name(info->relnamespace), NameStr(info->relname));
	target.nkey = info->key.ncolumns;
	for (int c = 0; c < target.nkey; c++)
		target.key_columns[c] = quote_identifier(get_attname(relid, info->key.attnums[c], false));
	KeyBytes bytes;
	target.valid_key = key_of_id(info, key.id, &bytes) && key_values(info->key, bytes, target.key);
	if (!target.valid_key && require_key)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("invalid key '%.*s:%.*s': not a key of table %s", int(key.prefix.size()),
							   key.prefix.data(), int(Min(key.id.size(), 128)), key.id.data(), NameStr(info->relname))));
	return target;
}

/* The table's writable columns other than the key: not dropped, not generated. */
struct Columns {
	int count;
	const char **names; /* unquoted */
	Oid *types;
	int32 *typmods;
};

Columns other_columns(const Target &target)
{
	Relation rel = relation_open(target.info->relid, NoLock);
	TupleDesc desc = RelationGetDescr(rel);
	Columns columns = {0, static_cast<const char **>(palloc(sizeof(char *) * (desc->natts + 1))),
					   static_cast<Oid *>(palloc(sizeof(Oid) * (desc->natts + 1))),
					   static_cast<int32 *>(palloc(sizeof(int32) * (desc->natts + 1)))};
	for (int i = 0; i < desc->natts; i++) {
		Form_pg_attribute att = TupleDescAttr(desc, i);
		if (att->attisdropped || att->attgenerated || target.is_key_column(att->attnum))
			continue;
		columns.names[columns.count] = pstrdup(NameStr(att->attname));
		columns.types[columns.count] = att->atttypid;
		columns.typmods[columns.count] = att->atttypmod;
		columns.count++;
	}
	relation_close(rel, NoLock);
	return columns;
}

/* The key column `name` is, or -1. */
int key_column_index(const Target &target, std::string_view name)
{
	for (int c = 0; c < target.nkey; c++)
		if (name == get_attname(target.info->relid, target.info->key.attnums[c], false))
			return c;
	return -1;
}

/* The index of `name` in columns, -1 if none; errors for a key column. */
int column_index(const Target &target, const Columns &columns, std::string_view name)
{
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

/*
 * Runs `body` for the connection's role the way PostgreSQL runs code on another role's behalf
 * (REFRESH MATERIALIZED VIEW, VACUUM's index functions), so that nothing one role's triggers do
 * reaches another role's commands: in a transaction (transaction.h), connected to SPI, with the
 * role as the user id inside a security-restricted operation (no temporary objects, LISTEN,
 * cursors WITH HOLD or SET ROLE), and a GUC nest level rolled back after the body — a trigger's
 * set_config(..., false) of search_path, default_transaction_read_only, TimeZone or DateStyle
 * ends with the command. What a trigger can leave outside the GUCs (prepared statements,
 * session advisory locks, sequences' currval) is discarded after the transaction, committed or
 * not. So every command starts from the server's configured settings, as a new session would:
 * the table's own triggers run with the configured search_path ("$user" is the role), as
 * they do for that role's SQL, while the statements below name every function, operator and
 * type with its schema and so mean the same under any search_path.
 */
template <typename Body> bool run_for_role(const Session &session, Body &&body, PgError *error)
{
	bool ok = in_transaction([&]() noexcept {
		Oid saved_user;
		int saved_context;
		GetUserIdAndSecContext(&saved_user, &saved_context);
		SetUserIdAndSecContext(Oid(session.role->id),
							   saved_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
		int nest_level = NewGUCNestLevel();
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		body();
		SPI_finish();
		AtEOXact_GUC(false, nest_level);
		SetUserIdAndSecContext(saved_user, saved_context);
	}, error);
	PgError ignored;
	(void) run_or_abort_transaction([]() noexcept {
		DropAllPreparedStatements();
		LockReleaseSession(USER_LOCKMETHOD);
		ResetSequenceCaches();
	}, &ignored);
	return ok;
}

/*
 * The plans of the statements the writes run, by their text, parameter types and table. Kept
 * for the worker's life, at most kMaxPlans of them. The plan cache replans a statement after
 * DDL on the relations it reads, but not one that names the table only as a type
 * (json_populate_record(NULL::t, ...)), and never changes the parameter types it was prepared
 * with: so the plans of a table are dropped when it has a relcache invalidation (ALTER, DROP,
 * and a new table of the same name is another relid), and its parameter types are part of the
 * key (ALTER TYPE of a key column).
 */
struct KeptPlan {
	uint64 hash;   /* hash key: of the text, the types and the table */
	char *sql;     /* in TopMemoryContext, as are types */
	Oid relid;     /* the table it writes; InvalidOid: none */
	int nargs;
	Oid *types;
	SPIPlanPtr plan;
	bool stale;    /* its table had an invalidation: freed at the next run() */
};
constexpr long kMaxPlans = 1024;
HTAB *kept_plans = nullptr;

/* A relcache callback may run while a kept plan executes: it only marks plans stale. */
void mark_plans_stale(Datum, Oid relid)
{
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, kept_plans);
	while (KeptPlan *kept = static_cast<KeptPlan *>(hash_seq_search(&status)))
		kept->stale |= !OidIsValid(relid) || kept->relid == relid;
}

void free_stale_plans()
{
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, kept_plans);
	while (KeptPlan *kept = static_cast<KeptPlan *>(hash_seq_search(&status))) {
		if (!kept->stale)
			continue;
		SPI_freeplan(kept->plan);
		pfree(kept->sql);
		pfree(kept->types);
		hash_search(kept_plans, &kept->hash, HASH_REMOVE, nullptr);
	}
}

/* Runs `sql`, a statement on the table `relid` (InvalidOid: on none), with the arguments
 * (through a kept plan); the number of rows it processed. */
uint64 run(Oid relid, const char *sql, int nargs, Oid *types, Datum *values)
{
	if (kept_plans == nullptr) {
		HASHCTL ctl;
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(uint64);
		ctl.entrysize = sizeof(KeptPlan);
		ctl.hcxt = TopMemoryContext;
		kept_plans = hash_create("local_cache RESP write plans", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		CacheRegisterRelcacheCallback(pg_entry<mark_plans_stale>, (Datum) 0);
	}
	free_stale_plans();
	uint64 hash = hash_bytes_extended(reinterpret_cast<const unsigned char *>(sql), int(strlen(sql)), relid);
	hash = hash_bytes_extended(reinterpret_cast<const unsigned char *>(types), int(sizeof(Oid) * nargs), hash);
	KeptPlan *kept = static_cast<KeptPlan *>(hash_search(kept_plans, &hash, HASH_FIND, nullptr));
	if (kept == nullptr && hash_get_num_entries(kept_plans) < kMaxPlans) {
		SPIPlanPtr plan = SPI_prepare(sql, nargs, types);
		if (plan == nullptr)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		kept = static_cast<KeptPlan *>(hash_search(kept_plans, &hash, HASH_ENTER, nullptr));
		kept->sql = MemoryContextStrdup(TopMemoryContext, sql);
		kept->relid = relid;
		kept->nargs = nargs;
		kept->types = static_cast<Oid *>(MemoryContextAlloc(TopMemoryContext, sizeof(Oid) * (nargs + 1)));
		memcpy(kept->types, types, sizeof(Oid) * nargs);
		kept->plan = plan;
		kept->stale = false;
	}
	bool same = kept != nullptr && strcmp(kept->sql, sql) == 0 && kept->relid == relid && kept->nargs == nargs &&
		memcmp(kept->types, types, sizeof(Oid) * nargs) == 0;
	int rc = same ? SPI_execute_plan(kept->plan, values, nullptr, false, 0)
				  : SPI_execute_with_args(sql, nargs, types, values, nullptr, false, 0);
	if (rc < 0)
		elog(ERROR, "SPI failed: %s", SPI_result_code_string(rc));
	return SPI_processed;
}

/* The text of column 1 of row `row` of the last result, in results_context; nullptr if NULL. */
char *result_text(uint64 row)
{
	char *text = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1);
	return text != nullptr ? copy_to_results(text, uint32(strlen(text))) : nullptr;
}

/* One SET: the row `key` becomes the JSON object `value`. Returns whether it was written. */
bool set_one(const RowKey &key, std::string_view value, const SetOptions &options, char **old_value)
{
	verify_text(value);
	Target target = write_target(key);
	Columns columns = other_columns(target);
	/* $1 the JSON, $2 ... the key's columns. */
	Oid types[1 + MAX_KEY_COLUMNS] = {TEXTOID};
	Datum values[1 + MAX_KEY_COLUMNS] = {PointerGetDatum(cstring_to_text_with_len(value.data(), int(value.size())))};
	target.add_parameters(types, values, 1);
	int nparams = 1 + target.nkey;

	/* An object, whose members are columns; key columns, if there, must be the key's. */
	bool *present = static_cast<bool *>(palloc0(sizeof(bool) * (columns.count + 1)));
	uint64 members = run(InvalidOid, "SELECT s.kind, k FROM (SELECT pg_catalog.json_typeof($1::pg_catalog.json) AS kind) s "
						 "LEFT JOIN LATERAL pg_catalog.json_object_keys(CASE WHEN s.kind OPERATOR(pg_catalog.=) 'object' "
						 "THEN $1::pg_catalog.json END) k ON true",
						 1, types, values);
	if (members == 0 || strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "object") != 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("the value must be a JSON object")));
	StringInfoData differs;
	initStringInfo(&differs);
	for (uint64 i = 0; i < members; i++) {
		char *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		if (name == nullptr) /* {} */
			continue;
		if (int c = key_column_index(target, name); c >= 0) {
			appendStringInfo(&differs, "%s(r.%s IS NULL OR NOT r.%s OPERATOR(pg_catalog.=) $%d)",
							 differs.len > 0 ? " OR " : "", target.key_columns[c], target.key_columns[c], 2 + c);
			continue;
		}
		int column = column_index(target, columns, name);
		if (column < 0)
			no_such_column(target, name);
		present[column] = true;
	}
	StringInfoData sql;
	initStringInfo(&sql);
	if (differs.len > 0) {
		appendStringInfo(&sql, "SELECT %s FROM pg_catalog.json_populate_record(NULL::%s, $1::pg_catalog.json) r", differs.data,
						 target.table);
		if (run(target.info->relid, sql.data, nparams, types, values) == 1 &&
			strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") == 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("the object's key column %s differs from the key", target.columns())));
	}

	if (options.get_old) {
		resetStringInfo(&sql);
		appendStringInfo(&sql, "SELECT pg_catalog.row_to_json(t)::pg_catalog.text FROM %s t WHERE %s FOR UPDATE", target.table,
						 target.condition("t", 2));
		*old_value = run(target.info->relid, sql.data, nparams, types, values) == 1 ? result_text(0) : nullptr;
	}

	resetStringInfo(&sql);
	if (options.condition == SetOptions::Condition::IfPresent) {
		/* XX: only an existing row; absent columns go back to their DEFAULT. */
		appendStringInfo(&sql, "UPDATE %s t SET ", target.table);
		for (int i = 0; i < columns.count; i++)
			appendStringInfo(&sql, "%s%s = %s%s", i > 0 ? ", " : "", quote_identifier(columns.names[i]),
							 present[i] ? "r." : "DEFAULT", present[i] ? quote_identifier(columns.names[i]) : "");
		if (columns.count == 0)
			appendStringInfo(&sql, "%s = t.%s", target.key_columns[0], target.key_columns[0]);
		appendStringInfo(&sql, " FROM pg_catalog.json_populate_record(NULL::%s, $1::pg_catalog.json) r WHERE %s", target.table,
						 target.condition("t", 2));
		return run(target.info->relid, sql.data, nparams, types, values) == 1;
	}
	/* An INSERT of the present columns (the others take their DEFAULT), which on a conflict
	 * becomes an UPDATE to exactly that new row — unless NX. */
	appendStringInfo(&sql, "INSERT INTO %s AS t (%s", target.table, target.columns());
	for (int i = 0; i < columns.count; i++)
		if (present[i])
			appendStringInfo(&sql, ", %s", quote_identifier(columns.names[i]));
	appendStringInfo(&sql, ") SELECT %s", target.parameters(2));
	for (int i = 0; i < columns.count; i++)
		if (present[i])
			appendStringInfo(&sql, ", r.%s", quote_identifier(columns.names[i]));
	appendStringInfo(&sql, " FROM pg_catalog.json_populate_record(NULL::%s, $1::pg_catalog.json) r ON CONFLICT (%s) DO ", target.table,
					 target.columns());
	if (options.condition == SetOptions::Condition::IfAbsent || columns.count == 0) {
		appendStringInfoString(&sql, "NOTHING");
	} else {
		appendStringInfoString(&sql, "UPDATE SET (");
		for (int i = 0; i < columns.count; i++)
			appendStringInfo(&sql, "%s%s", i > 0 ? ", " : "", quote_identifier(columns.names[i]));
		appendStringInfoString(&sql, ") = ROW(");
		for (int i = 0; i < columns.count; i++)
			appendStringInfo(&sql, "%sEXCLUDED.%s", i > 0 ? ", " : "", quote_identifier(columns.names[i]));
		appendStringInfoString(&sql, ")");
	}
	return run(target.info->relid, sql.data, nparams, types, values) == 1 || options.condition == SetOptions::Condition::Always;
}

/* The keys of the target's table among `keys`, one array per key column, for
 * (key columns) IN (SELECT * FROM unnest($1, $2 ...)); false when none names a key. */
bool key_arrays(const Target &target, const RowKey *keys, const Oid *relids, size_t count, Oid *types,
				Datum *arrays)
{
	const PrimaryKey &pk = target.info->key;
	Datum *elements = static_cast<Datum *>(palloc(sizeof(Datum) * (count * pk.ncolumns + 1)));
	int n = 0;
	for (size_t i = 0; i < count; i++) {
		KeyBytes bytes;
		if (relids[i] == target.info->relid && key_of_id(target.info, keys[i].id, &bytes) &&
			key_values(pk, bytes, &elements[n * pk.ncolumns]))
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

} // namespace

LookupResult PgDataSource::set_rows(const Session &session, const RowKey *keys, const std::string_view *values,
									size_t count, const SetOptions &options, SetOutcome &outcome)
{
	if (RecoveryInProgress())
		return LookupResult::read_only();
	MemoryContextReset(results_context);
	outcome = SetOutcome();
	char *old_value = nullptr;
	bool written = true;
	set_refused_present = false;
	PgError error;
	bool ok = run_for_role(session, [&]() {
		for (size_t i = 0; i < count; i++) {
			if (set_one(keys[i], values[i], options, count == 1 ? &old_value : nullptr))
				continue;
			written = false;
			if (count > 1) { /* MSETNX: all or none */
				set_refused_present = true;
				ereport(ERROR, (errcode(ERRCODE_UNIQUE_VIOLATION), errmsg("a key exists")));
			}
		}
	}, &error);
	if (!ok && set_refused_present) {
		outcome.written = false;
		return LookupResult::ok();
	}
	if (!ok)
		return write_failure(error);
	outcome.written = written;
	if (old_value != nullptr)
		outcome.old_value = std::string(old_value);
	return LookupResult::ok();
}

LookupResult PgDataSource::delete_rows(const Session &session, const RowKey *keys, size_t count, int64_t *deleted)
{
	if (RecoveryInProgress())
		return LookupResult::read_only();
	MemoryContextReset(results_context);
	Oid *relids = static_cast<Oid *>(MemoryContextAllocZero(results_context, sizeof(Oid) * (count + 1)));
	uint64 total = 0;
	PgError error;
	bool ok = run_for_role(session, [&]() {
		load_prefixes();
		for (size_t i = 0; i < count; i++) {
			verify_key(keys[i]);
			relids[i] = relid_for_prefix(keys[i].prefix);
		}
		for (size_t i = 0; i < count; i++) {
			bool first = OidIsValid(relids[i]);
			for (size_t j = 0; j < i && first; j++)
				first = relids[j] != relids[i];
			if (!first)
				continue;
			Target target = write_target(keys[i], false);
			Oid types[MAX_KEY_COLUMNS];
			Datum arrays[MAX_KEY_COLUMNS];
			if (!key_arrays(target, keys, relids, count, types, arrays))
				continue;
			/* unnest($1, $2) is ROWS FROM (unnest($1), unnest($2)) only while unqualified. */
			StringInfoData sql;
			initStringInfo(&sql);
			appendStringInfo(&sql, "DELETE FROM %s WHERE (%s) OPERATOR(pg_catalog.=) ANY (SELECT * FROM ROWS FROM (",
							 target.table, target.columns());
			for (int c = 0; c < target.nkey; c++)
				appendStringInfo(&sql, "%spg_catalog.unnest($%d)", c > 0 ? ", " : "", 1 + c);
			appendStringInfoString(&sql, "))");
			total += run(target.info->relid, sql.data, target.nkey, types, arrays);
		}
	}, &error);
	if (!ok)
		return write_failure(error);
	*deleted = int64_t(total);
	return LookupResult::ok();
}

LookupResult PgDataSource::set_columns(const Session &session, const RowKey &key, const std::string_view *names,
									   const std::string_view *texts, size_t count, int64_t *added)
{
	if (RecoveryInProgress())
		return LookupResult::read_only();
	MemoryContextReset(results_context);
	bool inserted = false;
	int distinct = 0;
	PgError error;
	bool ok = run_for_role(session, [&]() {
		Target target = write_target(key);
		Columns columns = other_columns(target);
		/* The last value of each column wins, as in Redis. */
		int *value_of = static_cast<int *>(palloc(sizeof(int) * (columns.count + 1)));
		for (int c = 0; c < columns.count; c++)
			value_of[c] = -1;
		for (size_t i = 0; i < count; i++) {
			verify_text(names[i]);
			verify_text(texts[i]);
			int column = column_index(target, columns, names[i]);
			if (column < 0)
				no_such_column(target, names[i]);
			value_of[column] = int(i);
		}
		Oid *types = static_cast<Oid *>(palloc(sizeof(Oid) * (columns.count + MAX_KEY_COLUMNS + 1)));
		Datum *values = static_cast<Datum *>(palloc(sizeof(Datum) * (columns.count + MAX_KEY_COLUMNS + 1)));
		target.add_parameters(types, values, 0);
		StringInfoData list, args, updates;
		initStringInfo(&list);
		initStringInfo(&args);
		initStringInfo(&updates);
		int n = target.nkey;
		for (int c = 0; c < columns.count; c++) {
			if (value_of[c] < 0)
				continue;
			/* As SQL reads a quoted literal for the column: its type's input function with
			 * the column's typmod (char(3) and bit(3) refuse what does not fit, numeric(5,2)
			 * rounds, a domain checks its constraints); an explicit CAST would truncate. */
			const std::string_view &text = texts[value_of[c]];
			Oid input_function, io_parameter;
			getTypeInputInfo(columns.types[c], &input_function, &io_parameter);
			types[n] = columns.types[c];
			values[n] = OidInputFunctionCall(input_function, pnstrdup(text.data(), text.size()), io_parameter,
											 columns.typmods[c]);
			n++;
			const char *name = quote_identifier(columns.names[c]);
			appendStringInfo(&list, ", %s", name);
			appendStringInfo(&args, ", $%d", n);
			appendStringInfo(&updates, "%s%s = EXCLUDED.%s", updates.len > 0 ? ", " : "", name, name);
		}
		distinct = n - target.nkey;
		StringInfoData sql;
		initStringInfo(&sql);
		appendStringInfo(&sql, "INSERT INTO %s AS t (%s%s) VALUES (%s%s) ON CONFLICT (%s) DO UPDATE SET %s "
							   "RETURNING (t.xmax OPERATOR(pg_catalog.=) 0)",
						 target.table, target.columns(), list.data, target.parameters(1), args.data,
						 target.columns(), updates.data);
		run(target.info->relid, sql.data, n, types, values);
		inserted = SPI_processed == 1 && strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") == 0;
	}, &error);
	if (!ok)
		return write_failure(error);
	*added = inserted ? distinct : 0;
	return LookupResult::ok();
}

LookupResult PgDataSource::clear_columns(const Session &session, const RowKey &key, const std::string_view *names,
										 size_t count, int64_t *removed)
{
	if (RecoveryInProgress())
		return LookupResult::read_only();
	MemoryContextReset(results_context);
	uint64 cleared = 0;
	PgError error;
	bool ok = run_for_role(session, [&]() {
		Target target = write_target(key);
		Columns columns = other_columns(target);
		bool *listed = static_cast<bool *>(palloc0(sizeof(bool) * (columns.count + 1)));
		for (size_t i = 0; i < count; i++) {
			verify_text(names[i]);
			int column = column_index(target, columns, names[i]);
			if (column >= 0) /* an unknown field is simply not there, as in Redis */
				listed[column] = true;
		}
		StringInfoData counted, sets;
		initStringInfo(&counted);
		initStringInfo(&sets);
		for (int c = 0; c < columns.count; c++) {
			if (!listed[c])
				continue;
			const char *name = quote_identifier(columns.names[c]);
			appendStringInfo(&counted, " OPERATOR(pg_catalog.+) (%s IS NOT NULL)::pg_catalog.int4", name);
			appendStringInfo(&sets, "%s%s = NULL", sets.len > 0 ? ", " : "", name);
		}
		if (sets.len == 0)
			return;
		StringInfoData sql;
		initStringInfo(&sql);
		appendStringInfo(&sql, "SELECT 0%s FROM %s t WHERE %s FOR UPDATE", counted.data, target.table,
						 target.condition("t", 1));
		Oid types[MAX_KEY_COLUMNS];
		Datum values[MAX_KEY_COLUMNS];
		target.add_parameters(types, values, 0);
		if (run(target.info->relid, sql.data, target.nkey, types, values) == 0)
			return;
		cleared = uint64(atoi(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)));
		resetStringInfo(&sql);
		appendStringInfo(&sql, "UPDATE %s t SET %s WHERE %s", target.table, sets.data, target.condition("t", 1));
		run(target.info->relid, sql.data, target.nkey, types, values);
	}, &error);
	if (!ok)
		return write_failure(error);
	*removed = int64_t(cleared);
	return LookupResult::ok();
}

LookupResult PgDataSource::increment_column(const Session &session, const RowKey &key, std::string_view name,
											std::string_view increment, std::string *result)
{
	if (RecoveryInProgress())
		return LookupResult::read_only();
	MemoryContextReset(results_context);
	char *text = nullptr;
	PgError error;
	bool ok = run_for_role(session, [&]() {
		Target target = write_target(key);
		verify_text(name);
		verify_text(increment);
		Columns columns = other_columns(target);
		int column = column_index(target, columns, name);
		if (column < 0)
			no_such_column(target, name);
		switch (columns.types[column]) {
		case INT2OID: case INT4OID: case INT8OID: case NUMERICOID: case FLOAT4OID: case FLOAT8OID:
			break;
		default:
			ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
							errmsg("column \"%s\" is not a number column", columns.names[column])));
		}
		const char *quoted = quote_identifier(columns.names[column]);
		const char *type = format_type_be_qualified(columns.types[column]);
		/* $1 the increment, $2 ... the key's columns. As SQL's UPDATE t SET c = c + '1.5' of an
		 * existing row: the sum is what must fit the column, not the increment; a missing row
		 * is inserted with the increment as its value. */
		const char *sum = psprintf("COALESCE(t.%s, 0) OPERATOR(pg_catalog.+) CAST($1 AS %s)", quoted, type);
		StringInfoData sql;
		initStringInfo(&sql);
		appendStringInfo(&sql, "UPDATE %s t SET %s = %s WHERE %s RETURNING t.%s::pg_catalog.text", target.table,
						 quoted, sum, target.condition("t", 2), quoted);
		Oid types[1 + MAX_KEY_COLUMNS] = {TEXTOID};
		Datum values[1 + MAX_KEY_COLUMNS] = {
			PointerGetDatum(cstring_to_text_with_len(increment.data(), int(increment.size())))};
		target.add_parameters(types, values, 1);
		if (run(target.info->relid, sql.data, 1 + target.nkey, types, values) == 0) {
			resetStringInfo(&sql);
			appendStringInfo(&sql, "INSERT INTO %s AS t (%s, %s) VALUES (%s, CAST($1 AS %s)) ON CONFLICT (%s) DO "
								   "UPDATE SET %s = %s RETURNING t.%s::pg_catalog.text",
							 target.table, target.columns(), quoted, target.parameters(2), type, target.columns(),
							 quoted, sum, quoted);
			run(target.info->relid, sql.data, 1 + target.nkey, types, values);
		}
		text = result_text(0);
	}, &error);
	if (!ok)
		return write_failure(error);
	result->assign(text != nullptr ? text : "");
	return LookupResult::ok();
}

namespace {

/*
 * WATCH's row versions, and how EXEC checks them (DataSource::WatchCheck). The version is
 * "xmin:ctid", which every UPDATE, DELETE and INSERT of the row changes.
 *
 * EXEC's batch is one REPEATABLE READ transaction whose snapshot is taken by its first check,
 * after the EXEC request arrived: a change committed before that is seen there, and EXEC
 * answers nil. A batch of reads needs nothing more: it reads nothing but that snapshot. A
 * batch that writes must also not commit over a change committed while it ran:
 *   - rows the role may lock (UPDATE on the table or a column: what SELECT ... FOR UPDATE
 *     needs) are locked FOR UPDATE by the first check; no other transaction can change them
 *     until the batch ends, and one that changed them after the snapshot makes the lock fail
 *     with a serialization failure, which counts as a change;
 *   - the others (SELECT only: "WATCH what you read, write elsewhere") are read without a lock,
 *     and after the batch's writes every watched row is read again in the latest snapshot
 *     (GetLatestSnapshot), with the command id of the first check so that the batch's own
 *     writes stay invisible: any change committed by another transaction before that last
 *     check makes EXEC answer nil. Left: a transaction that commits between that check and the
 *     batch's commit, which runs no statement of the batch; it is ordered after EXEC, as a
 *     concurrent writer is ordered after a SQL REPEATABLE READ transaction that read the row.
 */
enum class VersionRead {
	Snapshot, /* in the transaction's snapshot */
	Lock,     /* in the transaction's snapshot, locked FOR UPDATE if the role may lock it */
	Latest,   /* in the latest snapshot, as of command watch_command_id of this transaction */
};

/* The command id of EXEC's first check: the batch's writes come after it. */
CommandId watch_command_id = InvalidCommandId;

bool may_lock_rows(Oid relid, Oid role)
{
	return pg_class_aclcheck(relid, role, ACL_UPDATE) == ACLCHECK_OK ||
		pg_attribute_aclcheck_all(relid, role, ACL_UPDATE, ACLMASK_ANY) == ACLCHECK_OK;
}

/* The row's version for WATCH: "xmin:ctid", "absent", or "no table". */
LookupResult version_of(const Session &session, const RowKey &key, VersionRead how, std::string *version)
{
	MemoryContextReset(results_context);
	const char *text = "absent";
	PgError error;
	bool ok = run_for_role(session, [&]() {
		if (how != VersionRead::Latest)
			watch_command_id = GetCurrentCommandId(false);
		load_prefixes();
		if (!OidIsValid(relid_for_prefix(key.prefix))) {
			text = "no table";
			return;
		}
		Target target = write_target(key, false);
		if (!target.valid_key)
			return; /* no row has it */
		bool lock = how == VersionRead::Lock && may_lock_rows(target.info->relid, Oid(session.role->id));
		StringInfoData sql;
		initStringInfo(&sql);
		appendStringInfo(&sql, "SELECT t.xmin::pg_catalog.text OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) "
						 "t.ctid::pg_catalog.text FROM %s t WHERE %s%s",
						 target.table, target.condition("t", 1), lock ? " FOR UPDATE" : "");
		Oid types[MAX_KEY_COLUMNS];
		Datum values[MAX_KEY_COLUMNS];
		target.add_parameters(types, values, 0);
		uint64 rows;
		if (how == VersionRead::Latest) {
			/* A read-only statement runs in the active snapshot as it is. */
			PushCopiedSnapshot(GetLatestSnapshot());
			GetActiveSnapshot()->curcid = watch_command_id;
			int rc = SPI_execute_with_args(sql.data, target.nkey, types, values, nullptr, true, 0);
			PopActiveSnapshot();
			if (rc < 0)
				elog(ERROR, "SPI failed: %s", SPI_result_code_string(rc));
			rows = SPI_processed;
		} else {
			rows = run(target.info->relid, sql.data, target.nkey, types, values);
		}
		if (rows == 1)
			text = result_text(0);
	}, &error);
	if (!ok)
		return write_failure(error);
	version->assign(text);
	return LookupResult::ok();
}

} // namespace

LookupResult PgDataSource::row_version(const Session &session, const RowKey &key, std::string *version)
{
	return version_of(session, key, VersionRead::Snapshot, version);
}

LookupResult PgDataSource::check_versions(const Session &session, const RowKey *keys, const std::string *versions,
										  size_t count, WatchCheck when, bool *unchanged)
{
	VersionRead how = when == WatchCheck::Reads		   ? VersionRead::Snapshot
		: when == WatchCheck::BeforeWrites ? VersionRead::Lock
										   : VersionRead::Latest;
	*unchanged = true;
	for (size_t i = 0; i < count && *unchanged; i++) {
		/* A row changed since the batch's snapshot cannot be locked (serialization failure):
		 * it changed. */
		std::string now;
		LookupResult result = version_of(session, keys[i], how, &now);
		if (result.status == LookupResult::Status::Failed && result.message.find("(SQLSTATE 40001)") != std::string::npos)
			*unchanged = false;
		else if (result.status != LookupResult::Status::Ok)
			return result;
		else
			*unchanged = now == versions[i];
	}
	return LookupResult::ok();
}

} // namespace local_cache::resp
