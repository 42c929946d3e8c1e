/*
 * registry.h — reading local_cache.tables, the registry of enabled tables (one row per table:
 * relid, resp_prefix, enabled_at), with the latest committed state, as the relcache reads
 * catalogs. Written only by the extension's SQL functions (enable, disable, the sql_drop
 * event trigger).
 */
#pragma once

#include "extension/pg.h"

namespace local_cache {

struct RegistryEntry {
	Oid relid;
	const char *resp_prefix; /* palloc'd in the caller's memory context */
};

/* Whether relid is enabled in the current database; its row into *entry when given. */
bool registry_lookup(Oid relid, RegistryEntry *entry = nullptr);

/*
 * Calls visit(entry) for every enabled table of the current database. Raises an error when
 * the extension is not installed.
 */
template <typename Visit> void registry_scan(Visit &&visit);

/* ---- inline part ---- */
struct RegistryScan;
RegistryScan *registry_begin_scan(void);
bool registry_next(RegistryScan *scan, RegistryEntry *entry);
void registry_end_scan(RegistryScan *scan);

template <typename Visit> void registry_scan(Visit &&visit)
{
	RegistryScan *scan = registry_begin_scan();
	RegistryEntry entry;
	while (registry_next(scan, &entry))
		visit(entry);
	registry_end_scan(scan);
}

} // namespace local_cache
