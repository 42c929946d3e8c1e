/*
 * wal.h — invalidations in WAL, so hot standbys keep their own caches correct, and the
 * setting local_cache.wal_invalidations that turns them off.
 */
#pragma once

#include "extension/pg.h"

#include "extension/shard.h"

namespace local_cache {

/* A changed key, as written to WAL. */
struct WalKey {
	Oid relid;
	KeyBytes key;
};

/* From core_init(): the custom resource manager. */
void wal_register_rmgr(void);
void wal_request_shmem(void);
void wal_startup_shmem(void);

/*
 * At a transaction's first write of a cached table: decides, for the whole transaction,
 * whether its invalidations go to WAL (local_cache.wal_invalidations). A transaction that
 * does not log them first makes sure standbys stop serving cached rows, and counts as an
 * unlogged writer until it ends (wal_xact_ended).
 */
void wal_xact_starts_writing(void);
void wal_xact_ended(void);

/*
 * Logs what invalidate_changes() just did on this server, so that a standby replaying the
 * WAL does the same before it replays the commit. Nothing below wal_level = replica, and
 * nothing for a transaction that does not log its invalidations.
 */
void wal_log_invalidations(Oid dbid, const Oid *flushed, int nflushed, const WalKey *keys, int nkeys);

/*
 * Whether this server may serve and fill cached rows: always on a primary; on a hot standby
 * only while its own local_cache.wal_invalidations is on and the primary's last word was
 * not that it stopped logging invalidations.
 */
bool wal_cache_trusted(void);

/*
 * Before a CHECKPOINT command: the switch record the setting calls for (STOP when off), so that
 * after "set off, CHECKPOINT" recovery from the checkpoint replays no local_cache record.
 */
void wal_before_checkpoint(void);

} // namespace local_cache
