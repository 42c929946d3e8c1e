/*
 * wal.h — invalidations in WAL, so hot standbys keep their own caches correct.
 */
#pragma once

#include "pg.h"

namespace local_cache {

/* A changed key, as written to WAL. */
struct WalKey {
	Oid relid;
	int64 key;
};

/* From _PG_init (shared_preload_libraries only): the custom resource manager. */
void wal_register_rmgr(void);

/*
 * Logs what invalidate_changes() just did on this server, so that a standby replaying the
 * WAL does the same before it replays the commit. No-op below wal_level = replica.
 */
void wal_log_invalidations(Oid dbid, const Oid *flushed, int nflushed, const WalKey *keys, int nkeys);

} // namespace local_cache
