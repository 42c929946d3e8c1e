/*
 * core.cpp — initialises the core component: its settings, the "local_cache" WAL resource
 * manager, the session caches' invalidation callbacks, the transaction callback that
 * invalidates written keys, the planner, executor-start and utility hooks, the shared segment
 * and the tracking log.
 */
#include "extension/pg.h"

#include "extension/core.h"
#include "extension/capture_setup.h"
#include "extension/invalidation.h"
#include "extension/planner.h"
#include "extension/cached_table.h"
#include "extension/settings.h"
#include "extension/store.h"
#include "extension/tracking_log.h"
#include "extension/utility.h"
#include "extension/wal.h"

namespace local_cache {

void core_init(void)
{
	core_define_settings();
	wal_register_rmgr();
	utility_install_hook();
	relinfo_register_callbacks();
	invalidation_register_callbacks();
	planner_install_hook();
	capture_setup_install_hook();
}

void core_shmem_request(void)
{
	store_request_shmem();
	wal_request_shmem();
	tracking_log_request_shmem();
}

void core_shmem_startup(void)
{
	store_startup_shmem();
	wal_startup_shmem();
	tracking_log_startup_shmem();
}

} // namespace local_cache
