/*
 * core.h — the core component's entry points, called by the module entry (local_cache.cpp)
 * while shared_preload_libraries is processed: settings, the WAL resource manager, cache
 * callbacks, hooks, and the shared segment.
 */
#pragma once

namespace local_cache {

void core_init(void);
void core_shmem_request(void);
void core_shmem_startup(void);

} // namespace local_cache
