/*
 * writes.cpp — the SQL of the RESP write commands: SET, MSET (their statements in
 * set_statements.cpp), DEL, HSET, HDEL, HINCRBY (PgRowWriter, writes.h), built on the table
 * their key names (write_target.h) and run through SPI as the connection's role (write_runner.h,
 * whose run_write is every command's prologue).
 *
 * A write is an ordinary statement on the table: the role's INSERT/UPDATE/DELETE privileges,
 * the table's constraints and triggers apply, values are read as SQL reads a literal for the
 * column (input function and typmod), every text is checked against the server encoding, and
 * nothing the statement's triggers change in the worker's session outlives it (run_for_role).
 * The capture triggers invalidate the cache at pre-commit as for any SQL write; the reply goes
 * out after COMMIT returned. The rows a command's statements wrote themselves are marked its own
 * (own_row), so that CLIENT TRACKING's NOLOOP skips only them: what a statement changes besides
 * (an ON DELETE CASCADE, a trigger's write) reaches the connection as anyone's change would.
 * Each call is a transaction of its own, part of EXEC's batch, or one subtransaction of the
 * worker's write group (transaction.h), whose commit comes before the reply goes out. A row or
 * table lock held by another transaction makes the statement fail after lock_timeout (1 ms in
 * the workers): the command answers Busy, and the server runs it again until
 * local_cache.resp_lock_timeout.
 */
#include "extension/pg.h"

#include "resp_server/pg/writes.h"
#include "resp_server/pg/session_runtime.h"
#include "resp_server/pg/set_statements.h"
#include "resp_server/pg/write_runner.h"
#include "resp_server/pg/write_target.h"

#include "extension/boundary.h"
#include "extension/invalidation.h"
#include "extension/primary_key.h"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "replication/syncrep.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <string>

namespace local_cache::resp {

namespace {

/* Set when MSETNX found a key present: the transaction is rolled back, the reply is 0. */
bool set_refused_present = false;

} // namespace

PgRowWriter::PgRowWriter()
{
	start_session_runtime();
}

LookupResult PgRowWriter::set_rows(const Session &session, const RowKey *keys, const std::string_view *values,
									size_t count, const SetOptions &options, SetOutcome &outcome)
{
	outcome = SetOutcome();
	char *old_value = nullptr;
	bool written = true;
	set_refused_present = false;
	LookupResult result = run_write(session, Access::Write, [&]() noexcept {
		if (count > 1 && options.condition == SetOptions::Condition::Always && set_in_one_statement(keys, values, count))
			return;
		for (size_t i = 0; i < count; i++) {
			if (set_one(keys[i], values[i], options, count == 1 ? &old_value : nullptr))
				continue;
			written = false;
			if (count > 1) { /* MSETNX: all or none */
				set_refused_present = true;
				ereport(ERROR, (errcode(ERRCODE_UNIQUE_VIOLATION), errmsg("a key exists")));
			}
		}
	});
	if (result.status != LookupResult::Status::Ok)
		return set_refused_present ? LookupResult::ok() : result;
	outcome.written = written;
	if (old_value != nullptr)
		outcome.old_value = std::string(old_value);
	return LookupResult::ok();
}

LookupResult PgRowWriter::delete_rows(const Session &session, const RowKey *keys, size_t count, int64_t *deleted)
{
	uint64 total = 0;
	LookupResult result = run_write(session, Access::Write, [&]() noexcept {
		Oid *relids = results_array<Oid>(count);
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
			/* unnest($1, $2) is ROWS FROM (unnest($1), unnest($2)) only while unqualified. The
			 * keys it returns are the rows it deleted, the command's own (own_row); a key it
			 * names but found no row for is not, whatever else changed it. RETURNING them needs
			 * SELECT on the key columns, which the WHERE needs already. */
			StringInfoData sql;
			initStringInfo(&sql);
			appendStringInfo(&sql, "DELETE FROM %s WHERE (%s) OPERATOR(pg_catalog.=) ANY (SELECT * FROM ROWS FROM (",
							 target.table, target.columns());
			for (int c = 0; c < target.nkey; c++)
				appendStringInfo(&sql, "%spg_catalog.unnest($%d)", c > 0 ? ", " : "", 1 + c);
			appendStringInfo(&sql, ")) RETURNING %s", target.columns());
			uint64 deleted = run(target.info->relid, sql.data, target.nkey, types, arrays);
			total += deleted;
			StringInfoData bytes;
			initStringInfo(&bytes);
			for (uint64 row = 0; row < deleted; row++) {
				Datum values[MAX_KEY_COLUMNS];
				for (int c = 0; c < target.nkey; c++) {
					bool isnull;
					values[c] = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1 + c, &isnull);
				}
				resetStringInfo(&bytes);
				append_key_bytes(target.info->key.shape, values, &bytes);
				invalidation_own_write(target.info->relid, KeyBytes{bytes.data, uint32(bytes.len)});
			}
		}
	});
	if (result.status == LookupResult::Status::Ok)
		*deleted = int64_t(total);
	return result;
}

LookupResult PgRowWriter::set_columns(const Session &session, const RowKey &key, const std::string_view *names,
									   const std::string_view *texts, size_t count, int64_t *added)
{
	bool inserted = false;
	int distinct = 0;
	LookupResult result = run_write(session, Access::Write, [&]() noexcept {
		Target target = write_target(key);
		const Columns &columns = target.other_columns;
		/* The last value of each column wins, as in Redis. */
		int *value_of = static_cast<int *>(palloc(sizeof(int) * (columns.count + 1)));
		for (int c = 0; c < columns.count; c++)
			value_of[c] = -1;
		for (size_t i = 0; i < count; i++) {
			verify_text(names[i]);
			verify_text(texts[i]);
			int column = column_index(target, names[i]);
			if (column < 0)
				no_such_column(target, names[i]);
			value_of[column] = int(i);
		}
		Oid *types = static_cast<Oid *>(palloc(sizeof(Oid) * (columns.count + MAX_KEY_COLUMNS + 1)));
		Datum *values = static_cast<Datum *>(palloc(sizeof(Datum) * (columns.count + MAX_KEY_COLUMNS + 1)));
		target.add_parameters(types, values, 0);
		StringInfoData list, args, updates, assignments;
		initStringInfo(&list);
		initStringInfo(&args);
		initStringInfo(&updates);
		initStringInfo(&assignments);
		int n = target.nkey;
		for (int c = 0; c < columns.count; c++) {
			if (value_of[c] < 0)
				continue;
			const std::string_view &text = texts[value_of[c]];
			types[n] = columns.types[c];
			values[n] = columns.value(c, pnstrdup(text.data(), text.size()));
			n++;
			const char *name = quote_identifier(columns.names[c]);
			appendStringInfo(&list, ", %s", name);
			appendStringInfo(&args, ", $%d", n);
			appendStringInfo(&updates, "%s%s = EXCLUDED.%s", updates.len > 0 ? ", " : "", name, name);
			appendStringInfo(&assignments, "%s%s = $%d", assignments.len > 0 ? ", " : "", name, n);
		}
		distinct = n - target.nkey;
		/* An existing row is updated exactly as UPDATE t SET c = 'v' WHERE key would: an
		 * INSERT ... ON CONFLICT checks its proposed row first, which fails on a NOT NULL
		 * column without a default that HSET does not name. Only a missing row is inserted. */
		StringInfoData sql;
		initStringInfo(&sql);
		appendStringInfo(&sql, "UPDATE %s t SET %s WHERE %s", target.table, assignments.data, target.condition("t", 1));
		if (uint64 updated = run(target.info->relid, sql.data, n, types, values); updated == 1) {
			own_row(target, updated);
			return;
		}
		resetStringInfo(&sql);
		appendStringInfo(&sql, "INSERT INTO %s AS t (%s%s) VALUES (%s%s) ON CONFLICT (%s) DO UPDATE SET %s "
							   "RETURNING (t.xmax OPERATOR(pg_catalog.=) 0)",
						 target.table, target.columns(), list.data, target.parameters(1), args.data,
						 target.columns(), updates.data);
		own_row(target, run(target.info->relid, sql.data, n, types, values));
		inserted = SPI_processed == 1 && strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") == 0;
	});
	if (result.status != LookupResult::Status::Ok)
		return result;
	*added = inserted ? distinct : 0;
	return LookupResult::ok();
}

LookupResult PgRowWriter::clear_columns(const Session &session, const RowKey &key, const std::string_view *names,
										 size_t count, int64_t *removed)
{
	uint64 cleared = 0;
	LookupResult result = run_write(session, Access::Write, [&]() noexcept {
		Target target = write_target(key);
		const Columns &columns = target.other_columns;
		bool *listed = static_cast<bool *>(palloc0(sizeof(bool) * (columns.count + 1)));
		for (size_t i = 0; i < count; i++) {
			verify_text(names[i]);
			int column = column_index(target, names[i]);
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
		own_row(target, run(target.info->relid, sql.data, target.nkey, types, values));
	});
	if (result.status != LookupResult::Status::Ok)
		return result;
	*removed = int64_t(cleared);
	return LookupResult::ok();
}

LookupResult PgRowWriter::increment_column(const Session &session, const RowKey &key, std::string_view name,
											std::string_view increment, std::string *result)
{
	char *text = nullptr;
	LookupResult status = run_write(session, Access::Write, [&]() noexcept {
		Target target = write_target(key);
		verify_text(name);
		verify_text(increment);
		const Columns &columns = target.other_columns;
		int column = column_index(target, name);
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
		uint64 updated = run(target.info->relid, sql.data, 1 + target.nkey, types, values);
		own_row(target, updated);
		if (updated == 0) {
			resetStringInfo(&sql);
			appendStringInfo(&sql, "INSERT INTO %s AS t (%s, %s) VALUES (%s, CAST($1 AS %s)) ON CONFLICT (%s) DO "
								   "UPDATE SET %s = %s RETURNING t.%s::pg_catalog.text",
							 target.table, target.columns(), quoted, target.parameters(2), type, target.columns(),
							 quoted, sum, quoted);
			own_row(target, run(target.info->relid, sql.data, 1 + target.nkey, types, values));
		}
		text = result_text(0);
	});
	if (status.status != LookupResult::Status::Ok)
		return status;
	result->assign(text != nullptr ? text : "");
	return LookupResult::ok();
}

/* On the worker's loop, outside a transaction: a transaction only the first time a table is
 * asked about after a relcache invalidation (the verdict is kept in the prefix map). A commit
 * that waits for a synchronous standby, or for its WAL to reach the disk (fsync on with
 * synchronous_commit on: a flush per write would hold every connection of the loop), would hold
 * the loop: then every write goes to a write worker. */
bool PgRowWriter::runs_only_builtin_code(std::string_view prefix)
{
	if ((SyncRepStandbyNames != nullptr && SyncRepStandbyNames[0] != '\0') ||
		(enableFsync && synchronous_commit > SYNCHRONOUS_COMMIT_OFF))
		return false;
	PrefixEntry *entry = prefixes_valid ? prefix_entry(prefix) : nullptr;
	if (entry != nullptr && entry->builtin_code_only >= 0)
		return entry->builtin_code_only == 1;
	signed char verdict = -1;
	PgError error;
	if (!in_transaction([&]() noexcept {
			load_prefixes();
			PrefixEntry *found = prefix_entry(prefix);
			if (found != nullptr && found->builtin_code_only < 0)
				found->builtin_code_only = resp::runs_only_builtin_code(found->relid);
			verdict = found != nullptr ? found->builtin_code_only : 0;
		}, &error))
		return false;
	return verdict == 1;
}

void PgRowWriter::share_commit(bool may_share)
{
	write_group.may_join = may_share;
	if (!may_share && write_group.open)
		(void) commit_write_group();
}

uint64_t PgRowWriter::shared_writes()
{
	return write_group.joined;
}

bool PgRowWriter::commit_writes()
{
	bool committed = commit_write_group() && !write_group.commit_failed;
	write_group.commit_failed = false;
	return committed;
}

} // namespace local_cache::resp
