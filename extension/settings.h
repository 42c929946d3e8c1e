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

/* From _PG_init, before any setting is defined and after all are: a local_cache.* value the
 * configuration gives that its setting refuses stops the server's start (FATAL), not the
 * default and a WARNING. */
void remember_configured_settings(void);
void refuse_invalid_settings(void);

} // namespace local_cache
