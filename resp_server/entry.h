/*
 * entry.h — the RESP server's entry points, called by the module entry (local_cache.cpp) while
 * shared_preload_libraries is processed: its settings and launcher, its shared memory.
 */
#pragma once

#include "resp_server/pg/shared_state.h" /* resp_shmem_request, resp_shmem_startup */

namespace local_cache {

/* Defines the settings; registers the launcher when local_cache.resp_port is set (launcher.cpp). */
void resp_init(void);

} // namespace local_cache
