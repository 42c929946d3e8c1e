/*
 * batches.cpp — MULTI/EXEC and WATCH on PostgreSQL (PgBatches, batches.h): EXEC's batch
 * transaction begun and ended (transaction.h, session_runtime.cpp), WATCH's row versions and
 * EXEC's checks of them, as SQL statements run through write_runner.h as the connection's role.
 */
#include "extension/pg.h"

#include "resp_server/pg/batches.h"
#include "resp_server/pg/session_runtime.h"
#include "resp_server/pg/transaction.h"
#include "resp_server/pg/write_runner.h"
#include "resp_server/pg/write_target.h"

extern "C" {
#include "utils/acl.h"
#include "utils/snapmgr.h"
}

#include <string>

namespace local_cache::resp {

namespace {

/*
 * WATCH's row versions, and how EXEC checks them (Batches::WatchCheck). The version is
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
	const char *text = "absent";
	LookupResult result = run_write(session, Access::Read, [&]() noexcept {
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
	});
	if (result.status != LookupResult::Status::Ok)
		return result;
	version->assign(text);
	return LookupResult::ok();
}

} // namespace

PgBatches::PgBatches()
{
	start_session_runtime();
}

void PgBatches::begin_batch()
{
	batch = Batch{true, false};
}

LookupResult PgBatches::end_batch(bool commit)
{
	PgError error;
	if (!resp::end_batch(commit, &error))
		return failure(error);
	return LookupResult::ok();
}

LookupResult PgBatches::row_version(const Session &session, const RowKey &key, std::string *version)
{
	return version_of(session, key, VersionRead::Snapshot, version);
}

LookupResult PgBatches::check_versions(const Session &session, const RowKey *keys, const std::string *versions,
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
