/*
 * local_cache.cpp — module entry: settings, shared memory hooks and callbacks.
 *
 * _PG_init does everything once, in the postmaster, when the library is listed in
 * shared_preload_libraries; loaded any other way it only defines the settings, and the
 * SQL functions explain that the server must preload it.
 */
#include "pg.h"

#include "boundary.h"
#include "invalidation.h"
#include "local_cache.h"
#include "planner.h"
#include "../resp_server/settings.h"
#include "relinfo.h"
#include "store.h"
#include "wal.h"

extern "C" {
PG_MODULE_MAGIC;
void _PG_init(void);
}

int local_cache_memory_mb = 128;
int local_cache_max_row_size = 8192;
bool local_cache_enabled = true;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void local_cache_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	local_cache::store_request_shmem();
}

static void local_cache_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	local_cache::store_startup_shmem();
}

void local_cache::report_cxx_exception(const char *what)
{
	ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("local_cache: %s", what)));
}

void _PG_init(void)
{
	DefineCustomIntVariable("local_cache.memory",
							"Size of the shared row cache.",
							"Allocated once at server start; when full, the cache evicts.",
							&local_cache_memory_mb, 128, 8, 65536,
							PGC_POSTMASTER, GUC_UNIT_MB, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.max_row_size",
							"Largest row (flattened tuple) the cache stores.",
							"Larger rows are read from the table every time.",
							&local_cache_max_row_size, 8192, 0, 64 * 1024 * 1024,
							PGC_SUSET, GUC_UNIT_BYTE, NULL, NULL, NULL);
	DefineCustomBoolVariable("local_cache.enabled",
							 "Serve reads from the cache; off reads every row from its table.",
							 NULL, &local_cache_enabled, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	local_cache::resp_define_settings();
	MarkGUCPrefixReserved("local_cache");

	if (!process_shared_preload_libraries_in_progress)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = local_cache_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = local_cache_shmem_startup;

	local_cache::wal_register_rmgr();
	local_cache::relinfo_register_callbacks();
	local_cache::invalidation_register_callbacks();
	local_cache::planner_install_hook();
	local_cache::resp_register_workers();
}
