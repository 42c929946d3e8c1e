/*
 * settings.cpp — defines the core's settings. Sizes are fixed at server start
 * (PGC_POSTMASTER), so they can only be defined while shared_preload_libraries is processed.
 */
#include "extension/pg.h"

#include "extension/settings.h"

extern "C" {
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/memutils.h"
}

int local_cache_memory_mb = 128;
int local_cache_max_row_size = 8192;
bool local_cache_enabled = true;
bool local_cache_wal_invalidations = true;
int local_cache_fill_wait_ms = 10;
char *local_cache_debug_throw_at = nullptr;

namespace local_cache {

namespace {

/* The local_cache.* values the configuration gave before the library defined its settings
 * (PostgreSQL holds them as placeholders until then). Postmaster memory, read once. */
constexpr int MAX_CONFIGURED = 128;
struct ConfiguredValue {
	char *name;
	char *value;
};
ConfiguredValue configured[MAX_CONFIGURED];
int nconfigured = 0;

} // namespace

void remember_configured_settings(void)
{
	struct config_generic **variables = get_guc_variables();
	int count = GetNumConfigOptions();
	for (int i = 0; i < count && nconfigured < MAX_CONFIGURED; i++) {
		struct config_generic *setting = variables[i];
		if (!(setting->flags & GUC_CUSTOM_PLACEHOLDER) || strncmp(setting->name, "local_cache.", 12) != 0)
			continue;
		const char *value = *reinterpret_cast<struct config_string *>(setting)->variable;
		if (value == nullptr)
			continue;
		configured[nconfigured].name = MemoryContextStrdup(TopMemoryContext, setting->name);
		configured[nconfigured].value = MemoryContextStrdup(TopMemoryContext, value);
		nconfigured++;
	}
}

void refuse_invalid_settings(void)
{
	/* Defining a setting replaces a value it refuses with the default and a WARNING; the server
	 * refuses to start on it instead, as it does on a bad value of its own settings (an ERROR
	 * in the postmaster at start is FATAL). Names no setting has are MarkGUCPrefixReserved's. */
	for (int i = 0; i < nconfigured; i++)
		if (GetConfigOption(configured[i].name, true, false) != nullptr)
			(void) set_config_option(configured[i].name, configured[i].value, PGC_POSTMASTER, PGC_S_FILE,
									 GUC_ACTION_SET, false, ERROR, false);
}

void core_define_settings(void)
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
	DefineCustomBoolVariable("local_cache.wal_invalidations",
							 "Write the cache's invalidations to WAL for hot standbys.",
							 "Off: no local_cache WAL records are written, and standbys read "
							 "every row from their tables; needed to remove the library.",
							 &local_cache_wal_invalidations, true,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.fill_wait",
							"How long a miss waits for another session that is reading the same key.",
							"Under a stampede one session reads a missed key from its table and the "
							"others wait up to this long for its entry; 0 makes every miss read the table.",
							&local_cache_fill_wait_ms, 10, 0, 60000,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomStringVariable("local_cache.debug_throw_at",
							   "For tests: the entry point that throws a C++ exception (see boundary.h).",
							   NULL, &local_cache_debug_throw_at, "",
							   PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL, NULL, NULL, NULL);
}

} // namespace local_cache
