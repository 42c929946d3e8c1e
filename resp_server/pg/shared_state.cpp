/*
 * shared_state.cpp — the RESP server's shared memory ("local_cache RESP"): plain atomics, no
 * lock. Worker i owns slot i: its pid while it runs (so a restarted launcher does not start a
 * second copy) and its counters, which it alone writes. Write worker i owns its pid; a RESP
 * worker claims it for one write (compare-and-swap from 0 to its pid) and releases it. Per role, the RESP sessions of every
 * worker. Counters live as long as the server, so the sums INFO reports never go backwards when
 * a worker restarts; a worker's exit callback zeroes its connected (and logged-in) clients, whose
 * connections ended with it, and its largest output buffer. local_cache.resp_server_counters()
 * shows them to SQL. Each start of a worker or write
 * worker is noted (a restart when its number ran before): INFO's uptime_in_seconds counts from
 * the latest, so that a restart shows as Redis's does. The SCAN cursor secret: written once, at shared memory creation, then only read.
 */
#include "extension/pg.h"

#include "extension/boundary.h"
#include "extension/store.h"
#include "resp_server/pg/command_stats_table.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/shared_state.h"

extern "C" {
#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
}

namespace local_cache {

namespace {

/* A cache line per worker: each worker writes its own counters on every command. */
struct alignas(PG_CACHE_LINE_SIZE) WorkerSlot {
	pg_atomic_uint32 pid;
	pg_atomic_uint32 started; /* 1 once it ever ran */
	resp::WorkerCounters counters;
};

/* A role's RESP sessions; `role` is claimed once (0 -> role, compare-and-swap) and kept. */
struct RoleSessions {
	pg_atomic_uint32 role;
	pg_atomic_uint32 sessions;
};

/* A write worker (resp_server/write_worker.cpp): its pid while it runs, and the RESP worker that
 * has claimed it for one write (its pid; 0: idle), compare-and-swap only. */
struct WriteWorkerSlot {
	pg_atomic_uint32 pid;
	pg_atomic_uint32 claimed_by;
	pg_atomic_uint32 started; /* 1 once it ever ran */
};

struct RespSharedState {
	WorkerSlot workers[RESP_MAX_WORKERS];
	WriteWorkerSlot write_workers[RESP_MAX_WRITE_WORKERS];
	RoleSessions roles[resp::kMaxCountedRoles];
	pg_atomic_uint32 sessions; /* every role's: the RESP database's CONNECTION LIMIT counts them */
	pg_atomic_uint64 worker_restarts;   /* ServerCounters::worker_restarts */
	pg_atomic_uint64 last_worker_start; /* a TimestampTz */
	unsigned char scan_cursor_secret[resp::ScanCursorKey::kSecretBytes];
};

RespSharedState *shared = nullptr;

/* The role's counter; claimed if `claim` and the role has none yet; nullptr if none. */
RoleSessions *role_slot(Oid role, bool claim)
{
	for (int i = 0; i < resp::kMaxCountedRoles; i++) {
		RoleSessions *slot = &shared->roles[i];
		uint32 owner = pg_atomic_read_u32(&slot->role);
		if (owner == role)
			return slot;
		if (owner == 0) {
			if (!claim)
				return nullptr;
			uint32 expected = 0;
			if (pg_atomic_compare_exchange_u32(&slot->role, &expected, role) || expected == role)
				return slot;
		}
	}
	return nullptr;
}

void worker_ended(int, Datum number)
{
	WorkerSlot *slot = &shared->workers[DatumGetInt32(number)];
	pg_atomic_write_u64(&slot->counters.connected_clients, 0);
	pg_atomic_write_u64(&slot->counters.logged_in_clients, 0);
	pg_atomic_write_u64(&slot->counters.largest_output_buffer, 0);
	pg_atomic_write_u32(&slot->pid, 0);
}

/* A worker or write worker starts; `started` its slot's flag. */
void note_start(pg_atomic_uint32 *started)
{
	if (pg_atomic_exchange_u32(started, 1) != 0)
		pg_atomic_fetch_add_u64(&shared->worker_restarts, 1);
	pg_atomic_write_u64(&shared->last_worker_start, uint64(GetCurrentTimestamp()));
}

} // namespace

void resp_shmem_request(void)
{
	RequestAddinShmemSpace(sizeof(RespSharedState) + PG_CACHE_LINE_SIZE);
	command_stats_shmem_request();
}

void resp_shmem_startup(void)
{
	bool found;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	void *memory = ShmemInitStruct("local_cache RESP", sizeof(RespSharedState) + PG_CACHE_LINE_SIZE, &found);
	shared = reinterpret_cast<RespSharedState *>(TYPEALIGN(PG_CACHE_LINE_SIZE, memory));
	if (!found) {
		for (int i = 0; i < RESP_MAX_WORKERS; i++) {
			WorkerSlot *slot = &shared->workers[i];
			pg_atomic_init_u32(&slot->pid, 0);
			pg_atomic_init_u32(&slot->started, 0);
			pg_atomic_init_u64(&slot->counters.connected_clients, 0);
			pg_atomic_init_u64(&slot->counters.logged_in_clients, 0);
			pg_atomic_init_u64(&slot->counters.total_connections_received, 0);
			pg_atomic_init_u64(&slot->counters.total_commands_processed, 0);
			pg_atomic_init_u64(&slot->counters.rejected_connections, 0);
			pg_atomic_init_u64(&slot->counters.batch_pauses, 0);
			pg_atomic_init_u64(&slot->counters.clients_issued, 0);
			pg_atomic_init_u64(&slot->counters.largest_output_buffer, 0);
		}
		for (int i = 0; i < RESP_MAX_WRITE_WORKERS; i++) {
			pg_atomic_init_u32(&shared->write_workers[i].pid, 0);
			pg_atomic_init_u32(&shared->write_workers[i].claimed_by, 0);
			pg_atomic_init_u32(&shared->write_workers[i].started, 0);
		}
		for (int i = 0; i < resp::kMaxCountedRoles; i++) {
			pg_atomic_init_u32(&shared->roles[i].role, 0);
			pg_atomic_init_u32(&shared->roles[i].sessions, 0);
		}
		pg_atomic_init_u32(&shared->sessions, 0);
		pg_atomic_init_u64(&shared->worker_restarts, 0);
		pg_atomic_init_u64(&shared->last_worker_start, 0);
		if (!pg_strong_random(shared->scan_cursor_secret, sizeof(shared->scan_cursor_secret)))
			ereport(FATAL, (errmsg("local_cache: could not generate the RESP SCAN cursor secret")));
	}
	LWLockRelease(AddinShmemInitLock);
	command_stats_shmem_startup();
}

namespace resp {

WorkerCounters *worker_started(int number)
{
	WorkerSlot *slot = &shared->workers[number];
	pg_atomic_write_u32(&slot->pid, uint32(MyProcPid));
	note_start(&slot->started);
	on_shmem_exit(pg_entry<worker_ended>, Int32GetDatum(number));
	return &slot->counters;
}

namespace {

void write_worker_ended(int, Datum number)
{
	WriteWorkerSlot *slot = &shared->write_workers[DatumGetInt32(number)];
	pg_atomic_write_u32(&slot->claimed_by, 0);
	pg_atomic_write_u32(&slot->pid, 0);
}

} // namespace

void write_worker_started(int number)
{
	WriteWorkerSlot *slot = &shared->write_workers[number];
	/* A write the worker before this one had taken ended with it. */
	pg_atomic_write_u32(&slot->claimed_by, 0);
	pg_atomic_write_u32(&slot->pid, uint32(MyProcPid));
	note_start(&slot->started);
	on_shmem_exit(pg_entry<write_worker_ended>, Int32GetDatum(number));
}

pid_t write_worker_pid(int number)
{
	return pid_t(pg_atomic_read_u32(&shared->write_workers[number].pid));
}

bool claim_write_worker(int number)
{
	uint32 idle = 0;
	return pg_atomic_compare_exchange_u32(&shared->write_workers[number].claimed_by, &idle, uint32(MyProcPid));
}

void release_write_worker(int number, pid_t claimant)
{
	uint32 expected = uint32(claimant);
	pg_atomic_compare_exchange_u32(&shared->write_workers[number].claimed_by, &expected, 0);
}

bool is_resp_worker(pid_t pid)
{
	for (int i = 0; i < RESP_MAX_WORKERS; i++)
		if (pid != 0 && worker_pid(i) == pid)
			return true;
	return false;
}

pid_t worker_pid(int number)
{
	return pid_t(pg_atomic_read_u32(&shared->workers[number].pid));
}

uint64 worker_clients_issued(int number)
{
	return pg_atomic_read_u64(&shared->workers[number].counters.clients_issued);
}

ServerCounters server_counters(void)
{
	ServerCounters sum = {};
	for (int i = 0; i < RESP_MAX_WORKERS; i++) {
		WorkerCounters *c = &shared->workers[i].counters;
		sum.largest_output_buffer = Max(sum.largest_output_buffer, pg_atomic_read_u64(&c->largest_output_buffer));
		sum.connected_clients += pg_atomic_read_u64(&c->connected_clients);
		sum.total_connections_received += pg_atomic_read_u64(&c->total_connections_received);
		sum.total_commands_processed += pg_atomic_read_u64(&c->total_commands_processed);
		sum.rejected_connections += pg_atomic_read_u64(&c->rejected_connections);
		sum.batch_pauses += pg_atomic_read_u64(&c->batch_pauses);
	}
	sum.worker_restarts = pg_atomic_read_u64(&shared->worker_restarts);
	sum.last_worker_start = TimestampTz(pg_atomic_read_u64(&shared->last_worker_start));
	return sum;
}

void role_sessions_add(Oid role, int32 delta)
{
	pg_atomic_fetch_add_u32(&shared->sessions, delta);
	if (RoleSessions *slot = role_slot(role, delta > 0))
		pg_atomic_fetch_add_u32(&slot->sessions, delta);
}

uint32 role_sessions(Oid role)
{
	if (shared == nullptr)
		return 0;
	RoleSessions *slot = role_slot(role, false);
	return slot != nullptr ? pg_atomic_read_u32(&slot->sessions) : 0;
}

uint32 resp_sessions(void)
{
	return shared != nullptr ? pg_atomic_read_u32(&shared->sessions) : 0;
}

uint64 logged_in_clients_total(void)
{
	uint64 total = 0;
	for (int i = 0; i < RESP_MAX_WORKERS; i++)
		total += pg_atomic_read_u64(&shared->workers[i].counters.logged_in_clients);
	return total;
}

const unsigned char *scan_cursor_secret(void)
{
	return shared->scan_cursor_secret;
}

} // namespace resp

/* ---- the SQL function (sql/local_cache--1.4--1.5.sql: local_cache.resp_server) ---- */

namespace {

/* local_cache.resp_server_counters(): INFO's server counters, one row, for every role (as INFO
 * shows them to every RESP client). */
Datum resp_server_counters(PG_FUNCTION_ARGS)
{
	store_require_available();
	TupleDesc descriptor;
	if (get_call_result_type(fcinfo, nullptr, &descriptor) != TYPEFUNC_COMPOSITE)
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("function returning record called in context "
																		"that cannot accept type record")));
	resp::ServerCounters sum = {};
	if (shared != nullptr)
		sum = resp::server_counters();
	Datum values[7];
	bool nulls[7] = {};
	values[0] = Int64GetDatum(int64(sum.connected_clients));
	values[1] = Int64GetDatum(int64(sum.total_connections_received));
	values[2] = Int64GetDatum(int64(sum.total_commands_processed));
	values[3] = Int64GetDatum(int64(sum.rejected_connections));
	values[4] = Int64GetDatum(int64(sum.largest_output_buffer));
	values[5] = Int64GetDatum(int64(sum.worker_restarts));
	values[6] = TimestampTzGetDatum(sum.last_worker_start);
	nulls[6] = sum.last_worker_start == 0;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(descriptor), values, nulls)));
}

} // namespace

} // namespace local_cache

LOCAL_CACHE_V1_FUNCTION(local_cache_resp_server_counters, local_cache::resp_server_counters)
