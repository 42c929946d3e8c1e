/*
 * write_runner.cpp — how a RESP write runs (write_runner.h): its errors, the session state
 * discarded after it, and the plans of its statements kept for the worker's life.
 */
#include "resp_server/pg/write_runner.h"

extern "C" {
#include "commands/prepare.h"
#include "commands/sequence.h"
#include "common/hashfn.h"
#include "storage/lock.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
}

#include <string>

namespace local_cache::resp {

/* A write's error: the message and its SQLSTATE, as the write commands answer it. */
LookupResult write_failure(const PgError &error)
{
	LookupResult result = failure(error);
	if (result.status == LookupResult::Status::Failed)
		result.message += std::string(" (SQLSTATE ") + unpack_sql_state(error.sqlerrcode) + ")";
	return result;
}

void discard_session_leftovers()
{
	PgError ignored;
	(void) run_or_abort_transaction([]() noexcept {
		DropAllPreparedStatements();
		LockReleaseSession(USER_LOCKMETHOD);
		ResetSequenceCaches();
	}, &ignored);
}

bool on_standby(PgError *error)
{
	bool standby = false;
	error->sqlerrcode = 0;
	if (!outside_transaction([&]() noexcept { standby = RecoveryInProgress(); }, error))
		return true;
	return standby;
}

namespace {

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

} // namespace

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

char *result_text(uint64 row)
{
	char *text = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1);
	return text != nullptr ? copy_to_results(text, uint32(strlen(text))) : nullptr;
}

} // namespace local_cache::resp
