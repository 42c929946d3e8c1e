/*
 * shared_state.h — what the RESP processes share in shared memory: each worker's counters (INFO
 * reports their sums, and local_cache.resp_max_clients limits their logged-in connections
 * together), which workers and write workers run (for the launcher), RESP sessions per role,
 * and the secret SCAN cursors are signed with; and its shared-memory hooks (resp_server/entry.h
 * hands them to the module entry). Every layer below the workers' mains may read it.
 */
#pragma once

#include "extension/pg.h"

#include "resp_server/commands/data_source.h"

extern "C" {
#include "datatype/timestamp.h"
#include "port/atomics.h"
}

namespace local_cache {

/* The RESP server's own shared state (shared_state.cpp). */
void resp_shmem_request(void);
void resp_shmem_startup(void);

} // namespace local_cache

namespace local_cache::resp {

/* One worker's counters: written by that worker only, read by all. */
struct WorkerCounters {
	pg_atomic_uint64 connected_clients;
	/* Those of connected_clients that have logged in (clients/admission.cpp). */
	pg_atomic_uint64 logged_in_clients;
	pg_atomic_uint64 total_connections_received;
	pg_atomic_uint64 total_commands_processed;
	pg_atomic_uint64 rejected_connections;
	pg_atomic_uint64 batch_pauses; /* local_cache.resp_batch_delay's pauses */
	/* Client ids handed out (CLIENT ID is worker << 40 | this count): kept across restarts of
	 * the worker, so an id is never given twice. */
	pg_atomic_uint64 clients_issued;
	/* The most bytes one of its connections had not been sent, at its last timer tick (every
	 * second): INFO's client_recent_max_output_buffer, a client that does not read its replies
	 * or CLIENT TRACKING pushes. Written (not added to) by the worker; zeroed when it ends. */
	pg_atomic_uint64 largest_output_buffer;
};

/* Worker `number` says it runs (its pid) and, through an exit callback, that it ended (its
 * connections end with it). Returns its counters. */
WorkerCounters *worker_started(int number);
/* The pid of worker `number` while it runs, else 0. */
pid_t worker_pid(int number);
/* Whether `pid` is one of this server's running RESP workers. */
bool is_resp_worker(pid_t pid);

/* Write workers (resp_server/write_worker.cpp): the one numbered `number` says it runs (an exit
 * callback says it ended); its pid while it runs, else 0. */
void write_worker_started(int number);
pid_t write_worker_pid(int number);
/* A RESP worker takes an idle write worker for one write (false: another has it) and gives it
 * back once the reply came or the write worker ended; `claimant` the pid that claimed it. */
bool claim_write_worker(int number);
void release_write_worker(int number, pid_t claimant);
/* How many client ids worker `number` has handed out (WorkerCounters::clients_issued). */
uint64 worker_clients_issued(int number);

/* The sums over every worker; largest_output_buffer the largest of theirs. */
struct ServerCounters {
	uint64 connected_clients;
	uint64 total_connections_received;
	uint64 total_commands_processed;
	uint64 rejected_connections;
	uint64 batch_pauses;
	uint64 largest_output_buffer;
	/* Starts of a RESP worker or write worker whose number had run before (since the server
	 * started), and when the latest worker or write worker started (0: none yet). */
	uint64 worker_restarts;
	TimestampTz last_worker_start;
};
ServerCounters server_counters(void);
/* What local_cache.resp_max_clients bounds: the connections that have logged in, every worker's. */
uint64 logged_in_clients_total(void);

/*
 * RESP sessions per role and in all, across workers, so that RESP and PostgreSQL logins honour
 * the role's and the RESP database's CONNECTION LIMIT together (auth/session_limits.h). A fixed
 * table: past kMaxCountedRoles distinct roles, sessions of further roles are not counted per
 * role (they are in all).
 */
constexpr int kMaxCountedRoles = 256;
void role_sessions_add(Oid role, int32 delta);
uint32 role_sessions(Oid role);
uint32 resp_sessions(void);

/* The secret SCAN cursors are signed with (scan_cursor.h): random, made when the server starts,
 * the same for every worker; ScanCursorKey::kSecretBytes of it. */
const unsigned char *scan_cursor_secret(void);

inline void count(pg_atomic_uint64 *counter, int64 delta)
{
	pg_atomic_fetch_add_u64(counter, delta);
}

} // namespace local_cache::resp
