/*
 * settings.h — the core's settings (local_cache.*), defined in settings.cpp and documented in
 * the README's configuration table. The RESP server's own settings are in resp_server/.
 */
#pragma once

extern int local_cache_memory_mb;
extern int local_cache_max_row_size;
extern bool local_cache_enabled;
extern bool local_cache_wal_invalidations;
extern int local_cache_fill_wait_ms;
extern char *local_cache_debug_throw_at;

namespace local_cache {

/* From core_init(): defines the settings above. */
void core_define_settings(void);

} // namespace local_cache
