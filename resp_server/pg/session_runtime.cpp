/*
 * session_runtime.cpp — what the RESP worker's calls into PostgreSQL share (see session_runtime.h), and
 * EXEC's batch transaction and the write group (transaction.h).
 */
#include "resp_server/pg/session_runtime.h"

#include "extension/registry.h"
#include "extension/tracking_log.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/transaction.h"

extern "C" {
#include "commands/extension.h"
#include "storage/lmgr.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "access/xact.h"
}

namespace local_cache::resp {

Batch batch = {false, false};

bool end_batch(bool commit, PgError *error)
{
	bool ok = true;
	/* Not in the transaction's memory: an error of the commit aborts it, and
	 * run_or_abort_transaction then switches back to the memory it was called in. */
	MemoryContextSwitchTo(TopMemoryContext);
	if (batch.started && commit) {
		ok = run_or_abort_transaction([]() noexcept {
			PopActiveSnapshot();
			CommitTransactionCommand();
		}, error);
	} else if (batch.started) {
		ok = run_or_abort_transaction([]() noexcept { AbortCurrentTransaction(); }, error);
	}
	batch = Batch{false, false};
	return ok;
}

WriteGroup write_group = {false, false, false, 0, 0, InvalidOid, false};

void join_write_group(Oid role)
{
	if (!write_group.may_join || batch.active)
		return;
	if (write_group.open && (write_group.role != role || write_group.writes >= kMaxGroupWrites))
		(void) commit_write_group();
	write_group.role = role;
	write_group.joining = true;
}

bool commit_write_group()
{
	if (!write_group.open)
		return true;
	int writes = write_group.writes;
	write_group.open = false;
	write_group.writes = 0;
	/* The commit is no one connection's: CLIENT TRACKING tells every tracker of its keys. */
	uint64 writer = tracking_log_set_writer(0);
	PgError error;
	bool ok = IsTransactionOrTransactionBlock();
	/* As in end_batch: not in the memory the failed commit would free. */
	MemoryContextSwitchTo(TopMemoryContext);
	if (ok)
		ok = run_or_abort_transaction([]() noexcept { CommitTransactionCommand(); }, &error);
	else
		strlcpy(error.message, "its transaction was aborted before", sizeof(error.message));
	tracking_log_set_writer(writer);
	if (!ok) {
		write_group.commit_failed = true;
		ereport(LOG, (errmsg("local_cache RESP worker: the commit of %d writes of role %u failed: %s", writes,
							 write_group.role, error.message)));
	}
	return ok;
}

namespace {

MemoryContext prefix_context = nullptr;

void registry_changed(Datum, Oid)
{
	prefixes_valid = false;
}

/* Whether the extension was missing when last looked at: logged once per change. */
bool extension_missing = false;

/* In a transaction: the registry exists, or the command fails with a clear error. */
void require_extension()
{
	bool missing = !OidIsValid(get_extension_oid("local_cache", true));
	if (missing != extension_missing)
		ereport(LOG, (errmsg(missing ? "local_cache RESP: extension local_cache is not installed in database \"%s\"; "
									   "data commands fail until it is"
									 : "local_cache RESP: extension local_cache is installed in database \"%s\"",
							 local_cache_resp_database)));
	extension_missing = missing;
	if (missing)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension local_cache is not installed in database \"%s\"", local_cache_resp_database)));
}

} // namespace

MemoryContext results_context = nullptr;

PrefixEntry *prefixes = nullptr;
int nprefixes = 0;
bool prefixes_valid = false;

void start_session_runtime()
{
	if (results_context != nullptr)
		return;
	results_context = AllocSetContextCreate(TopMemoryContext, "local_cache RESP results",
											ALLOCSET_DEFAULT_SIZES);
	prefix_context = AllocSetContextCreate(TopMemoryContext, "local_cache RESP prefixes",
										   ALLOCSET_SMALL_SIZES);
	CacheRegisterRelcacheCallback(pg_entry<registry_changed>, (Datum) 0);
	SetConfigOption("lock_timeout", "1", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
}

void forget_prefixes()
{
	prefixes_valid = false;
}

LookupResult failure(const PgError &error)
{
	if (error.sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE ||
		error.sqlerrcode == ERRCODE_FEATURE_NOT_SUPPORTED) /* row-level security */
		return LookupResult::no_permission(error.message);
	/* A cancel is one too: lock_timeout is 1 ms here, and a timeout that fires as the lock is
	 * granted leaves a cancel pending that the next lock wait reports as "user request"
	 * (a backend would drop it while reading its next command). Retrying is right for both. */
	if (error.sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE || error.sqlerrcode == ERRCODE_QUERY_CANCELED)
		return LookupResult::busy(error.message);
	return LookupResult::failed(error.message);
}

void load_prefixes()
{
	if (prefixes_valid)
		return;
	MemoryContextReset(prefix_context);
	prefixes = nullptr;
	nprefixes = 0;
	require_extension();
	int capacity = 16;
	prefixes = static_cast<PrefixEntry *>(MemoryContextAlloc(prefix_context, sizeof(PrefixEntry) * capacity));
	MemoryContext old = MemoryContextSwitchTo(prefix_context);
	registry_scan([&](const RegistryEntry &entry) {
		if (nprefixes == capacity) {
			capacity *= 2;
			prefixes = static_cast<PrefixEntry *>(repalloc(prefixes, sizeof(PrefixEntry) * capacity));
		}
		prefixes[nprefixes++] = {entry.resp_prefix, strlen(entry.resp_prefix), entry.relid, -1};
	});
	MemoryContextSwitchTo(old);
	prefixes_valid = true;
}

PrefixEntry *prefix_entry(std::string_view prefix)
{
	for (int i = 0; i < nprefixes; i++)
		if (prefixes[i].length == prefix.size() && memcmp(prefixes[i].prefix, prefix.data(), prefix.size()) == 0)
			return &prefixes[i];
	return nullptr;
}

Oid relid_for_prefix(std::string_view prefix)
{
	PrefixEntry *entry = prefix_entry(prefix);
	return entry != nullptr ? entry->relid : InvalidOid;
}



bool key_of_id(const RelInfo *info, std::string_view id, KeyBytes *out)
{
	char *buffer = static_cast<char *>(MemoryContextAlloc(results_context, key_bytes_bound(id.size())));
	return key_from_text(info->key.shape, id, buffer, out);
}

Budget output_budget()
{
	return Budget{size_t(local_cache_resp_output_buffer_limit), false};
}

bool budget_take(Budget *budget, size_t bytes)
{
	if (budget->exceeded || bytes > budget->left) {
		budget->exceeded = true;
		return false;
	}
	budget->left -= bytes;
	return true;
}

void budget_check(const Budget *budget)
{
	if (budget->exceeded)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("reply exceeds local_cache.resp_output_buffer_limit (%d bytes)",
							   local_cache_resp_output_buffer_limit)));
}

char *copy_to_results(const char *bytes, uint32 length)
{
	char *copy = static_cast<char *>(MemoryContextAlloc(results_context, length + 1));
	memcpy(copy, bytes, length);
	copy[length] = '\0';
	return copy;
}

void lock_table(Oid relid)
{
	if (!ConditionalLockRelationOid(relid, AccessShareLock)) {
		char *name = get_rel_name(relid);
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("table \"%s\" is locked by another transaction", name ? name : "?")));
	}
}

RelInfo *open_table(Oid relid, Oid role)
{
	lock_table(relid);
	return relinfo_open(relid, role);
}

void deliver(const Found *found, size_t count, ValueSink &sink)
{
	for (size_t i = 0; i < count; i++)
		if (found[i].bytes != nullptr)
			sink.value(i, std::string_view(found[i].bytes, found[i].length));
}

} // namespace local_cache::resp
