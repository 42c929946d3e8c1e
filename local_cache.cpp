/*
 * local_cache.cpp — the module entry: _PG_init and the shared-memory hooks.
 *
 * Everything happens once, in the postmaster, while shared_preload_libraries is processed:
 * each component defines its settings and registers what it needs (core: shared segment,
 * WAL resource manager, callbacks and hooks; RESP server: its settings, shared state and
 * launcher). The foreign data wrapper needs nothing at load time.
 *
 * Loaded any other way (LOAD, CREATE EXTENSION, a call to one of its functions in a server
 * that does not preload it), _PG_init does nothing: defining PGC_POSTMASTER settings then
 * would be FATAL for the session. Every entry point then raises a clean ERROR naming
 * shared_preload_libraries (store_require_available), as pg_stat_statements does.
 */
#include "extension/pg.h"

#include "extension/boundary.h"
#include "extension/core.h"
#include "extension/settings.h"
#include "resp_server/entry.h"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/guc.h"
}

extern "C" {
PG_MODULE_MAGIC;
}

namespace {

shmem_request_hook_type prev_shmem_request_hook = NULL;
shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void request_shmem(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	local_cache::core_shmem_request();
	local_cache::resp_shmem_request();
}

void startup_shmem(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	local_cache::core_shmem_startup();
	local_cache::resp_shmem_startup();
}

void init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	local_cache::remember_configured_settings();
	local_cache::core_init();
	local_cache::resp_init();
	MarkGUCPrefixReserved("local_cache");
	local_cache::refuse_invalid_settings();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = local_cache::pg_entry<request_shmem>;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = local_cache::pg_entry<startup_shmem>;
}

} // namespace

LOCAL_CACHE_MODULE_INIT(init)
