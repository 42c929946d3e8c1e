/*
 * store.h — the shared-memory row cache: shards, their locks, and per-table counters.
 *
 * Every read path (SQL mget, the FDW, the RESP workers) and the invalidation code go
 * through these functions; nothing else touches the segment.
 */
#pragma once

#include "pg.h"
#include "shard.h"

namespace local_cache {

/* Counters kept per table (and summed for the server). */
enum Counter {
	COUNTER_HITS,
	COUNTER_MISSES,
	COUNTER_FILLS,
	COUNTER_FILL_REJECTIONS,
	COUNTER_EVICTIONS,
	COUNTER_INVALIDATIONS,
	NUM_COUNTERS
};

/* A table's place in the counters array, valid while its generation is unchanged. */
struct TableSlotRef {
	int slot; /* -1: none (the table is not cached) */
	uint32 generation;
};

/* A key located in the store: which shard, and its hash there. */
struct StoreKey {
	EntryKey key;
	uint64 hash;
	int shard;
};

/* shmem_request_hook / shmem_startup_hook halves. */
void store_request_shmem(void);
void store_startup_shmem(void);
bool store_available(void);
/* Raises a clear error when the library was not preloaded. */
void store_require_available(void);

StoreKey store_key(Oid dbid, Oid relid, int64 key);

/*
 * Looks the key up under its shard's shared lock and calls visit(view) while the lock is
 * held (visit copies what it needs and returns whether it used the entry).
 */
template <typename Visit> bool store_lookup(const StoreKey &key, Visit &&visit);

/* A fill reads the invalidation sequence of each key's shard before reading the table. */
uint64 store_fill_seq(const StoreKey &key);

enum class FillResult { Filled, Rejected, SlotLost };
FillResult store_fill(const StoreKey &key, uint64 seq, TableSlotRef table,
					  const EntryPayload &payload);

/* Invalidation of one key (at pre-commit of a writing transaction). */
void store_invalidate(const StoreKey &key);
/* Removes one table's entries (relid 0: a whole database; dbid 0 too: everything). */
uint64 store_flush(Oid dbid, Oid relid);

/*
 * Finds or assigns the counters slot of a table. When the table's shape signature differs
 * from the one recorded there, its entries are flushed first: they were built for rows of
 * another shape (ALTER TABLE, rewrite, triggers switched off and on).
 */
TableSlotRef store_attach_table(Oid dbid, Oid relid, uint64 signature);
void store_count(TableSlotRef table, Counter counter, uint64 n);
void store_reset_counters(void);

struct TableCounters {
	Oid dbid;
	Oid relid;
	uint64 counters[NUM_COUNTERS];
	uint64 entries;
	uint64 bytes;
};
/* Copies the counters of every slot in use; returns how many. */
int store_table_counters(TableCounters *out, int max);
int store_max_tables(void);

struct GlobalCounters {
	uint64 counters[NUM_COUNTERS];
	uint64 entries;
	uint64 bytes;
	uint64 memory_budget;
	int shards;
};
void store_global_counters(GlobalCounters *out);

/* ---- inline part of store_lookup ---- */
Shard *store_shard(int shard);
LWLock *store_shard_lock(int shard);

template <typename Visit> bool store_lookup(const StoreKey &key, Visit &&visit)
{
	EntryView view;
	bool used = false;
	LWLock *lock = store_shard_lock(key.shard);
	LWLockAcquire(lock, LW_SHARED);
	if (store_shard(key.shard)->lookup(key.key, key.hash, &view))
		used = visit(view);
	LWLockRelease(lock);
	return used;
}

} // namespace local_cache
