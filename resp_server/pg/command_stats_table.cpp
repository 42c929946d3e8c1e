/*
 * command_stats_table.cpp — the shared table of RESP command statistics
 * (command_stats_table.h), its store and its SQL functions.
 *
 * Layout (ShmemInitStruct "local_cache RESP command statistics", only with local_cache.resp_port
 * set), all plain data, offsets computed the same in every process:
 *   CommandStatsTable    the sizes, how many entries are in use, when it was last reset
 *   uint32 index[]       open addressing over (role, command): an entry's number + 1, 0 free; a
 *                        power of two of at least twice the entries, so a probe always ends
 *   StatsEntry no_role[] one per command number (0: requests naming no command): the requests
 *                        made before a login, and those of pairs that found the table full
 *   StatsEntry entries[] local_cache.resp_stats_max pairs, claimed in order, freed only by a reset
 *
 * Locking: one LWLock (tranche "local_cache RESP stats") guards everything above:
 *   exclusive — a process folding its counts (adding, claiming entries), a reset;
 *   shared    — reading (INFO, LATENCY HISTOGRAM, the SQL functions).
 * Never taken per request: a RESP worker folds at most once a millisecond (worker.cpp), a write
 * worker after each write; a fold holds the lock for the few pairs its process counted.
 *
 * Full: a pair that finds no free entry counts in its command's no_role entry, so the totals of
 * INFO for members of pg_read_all_stats stay exact, and the pair's role sees nothing of it; the
 * first such fold after a start or a reset logs it, with a hint to raise the setting.
 */
#include "extension/pg.h"

#include "extension/boundary.h"
#include "extension/store.h"
#include "resp_server/pg/command_stats_table.h"
#include "resp_server/commands/command_table.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/transaction.h"

extern "C" {
#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include <cstring>

namespace local_cache {

namespace {

const char TRANCHE_NAME[] = "local_cache RESP stats";

struct StatsEntry {
	Oid role;       /* InvalidOid: no role (see the top of the file) */
	uint16 command; /* its number (commands/command_stats.h) */
	resp::CommandCounters counters;
};

struct CommandStatsTable {
	uint32 capacity;   /* entries: local_cache.resp_stats_max */
	uint32 used;       /* entries[0 .. used) are claimed */
	uint32 index_size; /* slots of index[] */
	uint32 commands;   /* no_role[] entries: resp::command_count() + 1 */
	bool full_logged;  /* a pair found the table full since the last reset, and it was logged */
	TimestampTz reset_at;
};

/* This process's view of the table: set at shared memory startup, inherited by every process. */
CommandStatsTable *table = nullptr;
LWLock *table_lock = nullptr;
uint32 *table_index = nullptr;
StatsEntry *no_role = nullptr;
StatsEntry *entries = nullptr;

uint32 index_size_for(uint32 capacity)
{
	uint32 size = 256;
	while (size < 2 * capacity)
		size *= 2;
	return size;
}

Size index_offset()
{
	return MAXALIGN(sizeof(CommandStatsTable));
}

Size no_role_offset(uint32 index_size)
{
	return index_offset() + MAXALIGN(sizeof(uint32) * index_size);
}

Size entries_offset(uint32 index_size, uint32 commands)
{
	return no_role_offset(index_size) + sizeof(StatsEntry) * commands;
}

Size table_size()
{
	uint32 capacity = uint32(local_cache_resp_stats_max);
	uint32 commands = uint32(resp::command_count() + 1);
	return entries_offset(index_size_for(capacity), commands) + sizeof(StatsEntry) * capacity;
}

void reset_locked()
{
	memset(table_index, 0, sizeof(uint32) * table->index_size);
	memset(entries, 0, sizeof(StatsEntry) * table->used);
	for (uint32 c = 0; c < table->commands; c++) {
		memset(&no_role[c], 0, sizeof(StatsEntry));
		no_role[c].command = uint16(c);
	}
	table->used = 0;
	table->full_logged = false;
	table->reset_at = GetCurrentTimestamp();
}

uint32 slot_of(Oid role, uint16 command)
{
	uint64 key = (uint64(role) << 16 | command) * UINT64CONST(0x9E3779B97F4A7C15);
	return uint32(key >> 32) & (table->index_size - 1);
}

/* The pair's entry; claimed if it has none and one is free; nullptr when the table is full.
 * Exclusive lock. */
StatsEntry *claim(Oid role, uint16 command)
{
	uint32 mask = table->index_size - 1;
	for (uint32 slot = slot_of(role, command);; slot = (slot + 1) & mask) {
		uint32 at = table_index[slot];
		if (at == 0) {
			if (table->used >= table->capacity)
				return nullptr;
			StatsEntry *entry = &entries[table->used];
			memset(entry, 0, sizeof(StatsEntry));
			entry->role = role;
			entry->command = command;
			table->used++;
			table_index[slot] = table->used;
			return entry;
		}
		StatsEntry *entry = &entries[at - 1];
		if (entry->role == role && entry->command == command)
			return entry;
	}
}

/* Adds what the recorder holds; true the first time since a reset that a pair found no entry. */
bool fold_locked(const resp::CommandStatsRecorder &recorder)
{
	bool newly_full = false;
	for (size_t i = 0; i < recorder.pending_count(); i++) {
		const resp::CommandStatsRecorder::Entry &pending = recorder.pending(i);
		uint16 command = pending.command < table->commands ? pending.command : 0;
		StatsEntry *entry = nullptr;
		if (pending.role != resp::CommandStatsRecorder::kNoRole) {
			entry = claim(Oid(pending.role), command);
			if (entry == nullptr && !table->full_logged) {
				table->full_logged = true;
				newly_full = true;
			}
		}
		if (entry == nullptr)
			entry = &no_role[command];
		entry->counters.add(pending.counters);
	}
	return newly_full;
}

/* Whether the caller of a SQL function sees the rows of `role`: its own, every role's (and those
 * without one) with the privileges of pg_read_all_stats, as pg_stat_statements decides. */
bool row_visible(Oid role, Oid me, bool all)
{
	return all || (OidIsValid(role) && role == me);
}

} // namespace

void command_stats_shmem_request(void)
{
	if (local_cache_resp_port == 0)
		return;
	RequestAddinShmemSpace(table_size());
	RequestNamedLWLockTranche(TRANCHE_NAME, 1);
}

void command_stats_shmem_startup(void)
{
	if (local_cache_resp_port == 0)
		return;
	bool found;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	char *memory = static_cast<char *>(ShmemInitStruct("local_cache RESP command statistics", table_size(), &found));
	uint32 capacity = uint32(local_cache_resp_stats_max);
	uint32 index_size = index_size_for(capacity);
	uint32 commands = uint32(resp::command_count() + 1);
	table = reinterpret_cast<CommandStatsTable *>(memory);
	table_index = reinterpret_cast<uint32 *>(memory + index_offset());
	no_role = reinterpret_cast<StatsEntry *>(memory + no_role_offset(index_size));
	entries = reinterpret_cast<StatsEntry *>(memory + entries_offset(index_size, commands));
	table_lock = &GetNamedLWLockTranche(TRANCHE_NAME)->lock;
	if (!found) {
		memset(memory, 0, table_size());
		table->capacity = capacity;
		table->index_size = index_size;
		table->commands = commands;
		reset_locked();
	}
	LWLockRelease(AddinShmemInitLock);
}

namespace resp {

void SharedCommandStats::fold(CommandStatsRecorder &recorder)
{
	if (table != nullptr) {
		PgError error;
		outside_transaction([&]() noexcept {
			LWLockAcquire(table_lock, LW_EXCLUSIVE);
			bool newly_full = fold_locked(recorder);
			LWLockRelease(table_lock);
			if (newly_full)
				ereport(LOG, (errmsg("local_cache RESP: the command statistics are full (%d role and command pairs): "
									 "the requests of further pairs are counted without their role",
									 local_cache_resp_stats_max),
							  errhint("Raise local_cache.resp_stats_max (a restart), or reset the statistics "
									  "with local_cache.resp_reset_stats().")));
		}, &error);
	}
	recorder.clear_pending();
}

void SharedCommandStats::read(std::optional<uint64_t> role, std::vector<CommandCounters> &totals)
{
	if (table == nullptr)
		return;
	PgError error;
	outside_transaction([&]() noexcept {
		LWLockAcquire(table_lock, LW_SHARED);
		if (!role) {
			for (uint32 c = 0; c < table->commands && c < totals.size(); c++)
				totals[c].add(no_role[c].counters);
		}
		for (uint32 i = 0; i < table->used; i++) {
			const StatsEntry &entry = entries[i];
			if ((!role || entry.role == Oid(*role)) && entry.command < totals.size())
				totals[entry.command].add(entry.counters);
		}
		LWLockRelease(table_lock);
	}, &error);
}

bool SharedCommandStats::may_reset(const Session &session)
{
	if (!session.role)
		return false;
	Oid role = Oid(session.role->id);
	bool may = false;
	PgError error;
	in_transaction([&]() noexcept {
		List *name = list_make2(makeString(pstrdup("local_cache")), makeString(pstrdup("resp_reset_stats")));
		Oid function = LookupFuncName(name, 0, NULL, true);
		may = OidIsValid(function) && pg_proc_aclcheck(function, role, ACL_EXECUTE) == ACLCHECK_OK;
	}, &error);
	return may;
}

void SharedCommandStats::reset()
{
	if (table == nullptr)
		return;
	PgError error;
	outside_transaction([&]() noexcept {
		LWLockAcquire(table_lock, LW_EXCLUSIVE);
		reset_locked();
		LWLockRelease(table_lock);
	}, &error);
}

} // namespace resp

/* ---- the SQL functions (sql/local_cache--1.4--1.5.sql) ---- */

namespace {

/* local_cache.resp_command_counters(): a row per (role, command) with calls, rejected or failed
 * calls, the caller's own role's, every role's with pg_read_all_stats. */
Datum resp_command_counters(PG_FUNCTION_ARGS)
{
	store_require_available();
	InitMaterializedSRF(fcinfo, 0);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	if (table == nullptr)
		return (Datum) 0;
	Oid me = GetUserId();
	bool all = has_privs_of_role(me, ROLE_PG_READ_ALL_STATS);
	LWLockAcquire(table_lock, LW_SHARED);
	for (uint32 i = 0; i < table->commands + table->used; i++) {
		const StatsEntry &entry = i < table->commands ? no_role[i] : entries[i - table->commands];
		const resp::CommandCounters &c = entry.counters;
		const resp::CommandSpec *command = resp::command_by_number(entry.command);
		if (command == nullptr || !c.listed() || !row_visible(entry.role, me, all))
			continue;
		Datum values[10];
		bool nulls[10] = {};
		values[0] = ObjectIdGetDatum(entry.role);
		nulls[0] = !OidIsValid(entry.role);
		values[1] = PointerGetDatum(cstring_to_text_with_len(command->full_name.data(), int(command->full_name.size())));
		values[2] = Int64GetDatum(int64(c.calls));
		values[3] = Int64GetDatum(int64(c.usec));
		values[4] = Float8GetDatum(c.calls == 0 ? 0.0 : double(c.usec) / double(c.calls));
		values[5] = Int64GetDatum(int64(c.rejected_calls));
		values[6] = Int64GetDatum(int64(c.failed_calls));
		values[7] = Float8GetDatum(double(c.latency.value_at_percentile(50)));
		values[8] = Float8GetDatum(double(c.latency.value_at_percentile(99)));
		values[9] = Float8GetDatum(double(c.latency.value_at_percentile(99.9)));
		for (int p = 7; p <= 9; p++)
			nulls[p] = c.calls == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(table_lock);
	return (Datum) 0;
}

/* local_cache.resp_error_counters(): a row per (role, error code) that was answered. */
Datum resp_error_counters(PG_FUNCTION_ARGS)
{
	store_require_available();
	InitMaterializedSRF(fcinfo, 0);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	if (table == nullptr)
		return (Datum) 0;
	Oid me = GetUserId();
	bool all = has_privs_of_role(me, ROLE_PG_READ_ALL_STATS);
	/* Summed per role: the entries of a role are its commands. At most one role per entry, and
	 * no entry is claimed while the lock is held. */
	LWLockAcquire(table_lock, LW_SHARED);
	uint32 used = table->used;
	uint64 *counts = static_cast<uint64 *>(palloc0(sizeof(uint64) * resp::kErrorCodeCount * (used + 1)));
	Oid *roles = static_cast<Oid *>(palloc0(sizeof(Oid) * (used + 1)));
	uint32 role_count = 1; /* roles[0]: no role */
	for (uint32 i = 0; i < table->commands + used; i++) {
		const StatsEntry &entry = i < table->commands ? no_role[i] : entries[i - table->commands];
		if (!row_visible(entry.role, me, all))
			continue;
		uint32 r = 0;
		if (OidIsValid(entry.role)) {
			for (r = 1; r < role_count && roles[r] != entry.role; r++)
				;
			if (r == role_count)
				roles[role_count++] = entry.role;
		}
		for (size_t code = 0; code < resp::kErrorCodeCount; code++)
			counts[r * resp::kErrorCodeCount + code] += entry.counters.errors[code];
	}
	LWLockRelease(table_lock);
	for (uint32 r = 0; r < role_count; r++) {
		for (size_t code = 0; code < resp::kErrorCodeCount; code++) {
			uint64 count = counts[r * resp::kErrorCodeCount + code];
			if (count == 0)
				continue;
			Datum values[3];
			bool nulls[3] = {};
			values[0] = ObjectIdGetDatum(roles[r]);
			nulls[0] = r == 0;
			values[1] = PointerGetDatum(
				cstring_to_text_with_len(resp::kErrorCodes[code].data(), int(resp::kErrorCodes[code].size())));
			values[2] = Int64GetDatum(int64(count));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}

/* local_cache.resp_reset_stats(): what CONFIG RESETSTAT does, for SQL (superuser, or whom it is
 * granted to: CONFIG RESETSTAT asks the same privilege). */
Datum resp_reset_stats(PG_FUNCTION_ARGS)
{
	store_require_available();
	if (table != nullptr) {
		LWLockAcquire(table_lock, LW_EXCLUSIVE);
		reset_locked();
		LWLockRelease(table_lock);
	}
	PG_RETURN_VOID();
}

} // namespace

} // namespace local_cache

LOCAL_CACHE_V1_FUNCTION(local_cache_resp_command_counters, local_cache::resp_command_counters)
LOCAL_CACHE_V1_FUNCTION(local_cache_resp_error_counters, local_cache::resp_error_counters)
LOCAL_CACHE_V1_FUNCTION(local_cache_resp_reset_stats, local_cache::resp_reset_stats)
