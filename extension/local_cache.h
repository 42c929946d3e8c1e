/*
 * local_cache.h — settings shared by the extension's PostgreSQL-facing files.
 */
#pragma once

extern int local_cache_memory_mb;
extern int local_cache_max_row_size;
extern bool local_cache_enabled;
