/*
 * core.cpp — initialises the core component: its settings, the "local_cache" WAL resource
 * manager, the session caches' invalidation callbacks, the transaction callback that
 * invalidates written keys, the planner and utility hooks, and the shared segment.
 */
#include "pg.h"

#include "core.h"
#include "invalidation.h"
#include "planner.h"
#include "relinfo.h"
#include "settings.h"
#include "store.h"
#include "utility.h"
#include "wal.h"

namespace local_cache {

void core_init(void)
{
	core_define_settings();
	wal_register_rmgr();
	utility_install_hook();
	relinfo_register_callbacks();
	invalidation_register_callbacks();
	planner_install_hook();
}

void core_shmem_request(void)
{
	store_request_shmem();
	wal_request_shmem();
}

void core_shmem_startup(void)
{
	store_startup_shmem();
	wal_startup_shmem();
}

} // namespace local_cache
