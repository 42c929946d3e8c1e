/*
 * resp.h — the RESP server component's entry points, called by the module entry
 * (local_cache.cpp) while shared_preload_libraries is processed.
 */
#pragma once

namespace local_cache {

/* Defines the settings; registers the launcher when local_cache.resp_port is set (launcher.cpp). */
void resp_init(void);
/* The RESP server's own shared state (shared_state.cpp). */
void resp_shmem_request(void);
void resp_shmem_startup(void);

} // namespace local_cache
