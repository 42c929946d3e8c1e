/*
 * shared_state.cpp — the RESP server's shared memory ("local_cache RESP"): plain atomics, no
 * lock. `clients` counts the connections of every worker (each adds and removes its own);
 * `worker_pids[i]` is set by worker i when it starts and cleared by its exit callback, so a
 * launcher that restarts does not start a second copy of a worker that still runs.
 */
#include "../extension/pg.h"

#include "resp.h"
#include "settings.h"
#include "shared_state.h"

extern "C" {
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

namespace local_cache {

namespace {

struct RespSharedState {
	pg_atomic_uint32 clients;
	pg_atomic_uint32 worker_pids[RESP_MAX_WORKERS];
};

RespSharedState *shared = nullptr;

void clear_worker_pid(int, Datum number)
{
	pg_atomic_write_u32(&shared->worker_pids[DatumGetInt32(number)], 0);
}

} // namespace

void resp_shmem_request(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(RespSharedState)));
}

void resp_shmem_startup(void)
{
	bool found;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = static_cast<RespSharedState *>(ShmemInitStruct("local_cache RESP", sizeof(RespSharedState), &found));
	if (!found) {
		pg_atomic_init_u32(&shared->clients, 0);
		for (int i = 0; i < RESP_MAX_WORKERS; i++)
			pg_atomic_init_u32(&shared->worker_pids[i], 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

namespace resp {

uint32 clients_add(int32 delta)
{
	return pg_atomic_add_fetch_u32(&shared->clients, delta);
}

void worker_started(int number)
{
	pg_atomic_write_u32(&shared->worker_pids[number], uint32(MyProcPid));
	on_shmem_exit(clear_worker_pid, Int32GetDatum(number));
}

pid_t worker_pid(int number)
{
	return pid_t(pg_atomic_read_u32(&shared->worker_pids[number]));
}

} // namespace resp

} // namespace local_cache
