/*
 * store.h — the shared-memory row cache: shards, their locks, and per-table counters.
 *
 * Every read path (SQL mget, the FDW, the RESP workers) and the invalidation code go
 * through these functions; nothing else touches the segment.
 */
#pragma once

#include "extension/pg.h"

extern "C" {
#include "datatype/timestamp.h"
#include "storage/lwlock.h"
}
#include "extension/shard.h"

namespace local_cache {

/* Counters kept per table (and summed for the server). */
enum Counter {
	COUNTER_HITS,
	COUNTER_MISSES,
	COUNTER_FILLS,
	COUNTER_FILL_REJECTIONS,
	COUNTER_EVICTIONS,
	COUNTER_INVALIDATIONS,
	COUNTER_NEGATIVE_HITS, /* hits of entries that say "no row with this key" (1.2's column) */
	COUNTER_COALESCED_MISSES, /* misses answered by another process's fill (1.2's column) */
	NUM_COUNTERS
};
/* The counters every version of the SQL functions returns, in this order; later ones follow
 * the sizes (entries, bytes ...) when the installed SQL version declares them. */
constexpr int NUM_COUNTERS_1_0 = COUNTER_NEGATIVE_HITS;

/*
 * A table's place in the counters array, valid while its generation is unchanged, and the
 * capture words under which the caller found the table's capture triggers intact.
 *
 * A capture word is (generation << 32) | xid. Its generation is odd from the pre-commit of a
 * transaction `xid` that changes how the table's writes are captured (ALTER TABLE, trigger DDL,
 * enable/disable) until that transaction has ended; every change makes it different. A reader
 * that validated the table's triggers under a word may use the cache only while the word is
 * unchanged (store_capture_unchanged), and fills check it under the shard lock. The global word
 * stands in for tables that could not get a slot.
 */
struct TableSlotRef {
	int slot; /* -1: none (the table is not cached) */
	uint32 generation;
	uint64 capture;
	uint64 global_capture;
};

/* A key located in the store: which shard, and its hash there. */
struct StoreKey {
	EntryKey key = {};
	uint64 hash = 0;
	int shard = 0;
};

/* shmem_request_hook / shmem_startup_hook halves. */
void store_request_shmem(void);
void store_startup_shmem(void);
bool store_available(void);
/* Raises a clear error when the library was not preloaded. */
void store_require_available(void);

/* The key's bytes must stay valid while the StoreKey is used. */
StoreKey store_key(Oid dbid, Oid relid, KeyBytes key);

/*
 * Looks the key up under its shard's shared lock and calls visit(view) while the lock is
 * held (visit copies what it needs and returns whether it used the entry).
 */
template <typename Visit> bool store_lookup(const StoreKey &key, Visit &&visit);

/*
 * store_lookup, first without the lock (Shard::lookup_optimistic): visit may then be given an
 * entry a writer is changing, so undo() must take back everything visit did; it is called when
 * the copy turns out not to count, before the key is looked up again under the lock.
 */
template <typename Visit, typename Undo>
bool store_lookup_optimistic(const StoreKey &key, Visit &&visit, Undo &&undo);

/* A fill reads the invalidation sequence of each key's shard before reading the table. */
uint64 store_fill_seq(const StoreKey &key);

enum class FillResult { Filled, Rejected, SlotLost };
FillResult store_fill(const StoreKey &key, uint64 seq, TableSlotRef table,
					  const EntryPayload &payload);

/*
 * One read of the table per missed key under a stampede. Before a process reads a missed key
 * from its table it claims the key; another that misses it meanwhile (Others) waits for the
 * claim to end, at most until `deadline`, and looks it up again instead of reading the table
 * too. NoRoom: no claim could be taken, read without one. A process ends all its claims with
 * store_end_fills() once its fills are done, also on error; at exit they end by themselves.
 * Waiting only after ending one's own claims keeps waits free of cycles.
 */
enum class FillClaim { Mine, Others, NoRoom };
FillClaim store_claim_fill(const StoreKey &key);
void store_end_fills(void);
/* Whether the key's claim ended by the deadline. */
bool store_wait_for_fill(const StoreKey &key, TimestampTz deadline);

/* Invalidation of one key (at pre-commit of a writing transaction). */
void store_invalidate(const StoreKey &key);
/* Removes one table's entries (relid 0: a whole database; dbid 0 too: everything). */
uint64 store_flush(Oid dbid, Oid relid);

/*
 * Finds or assigns the counters slot of a table, and reads its capture words; a word whose
 * transaction has ended is settled (made even) first. Returns whether both words are even:
 * otherwise a capture change is committing right now, and the caller must not use the cache.
 * The caller reads the catalog (with a fresh snapshot) only after this.
 */
bool store_attach_table(Oid dbid, Oid relid, TableSlotRef *table);
/*
 * Records the shape signature the table's entries are built under. When it differs from the
 * one recorded in the slot, its entries are flushed first: they were built for rows of
 * another shape (ALTER TABLE, rewrite, trigger changes).
 */
void store_set_signature(Oid dbid, Oid relid, TableSlotRef table, uint64 signature);
/* Whether the table's capture words are still those the caller validated its triggers under. */
bool store_capture_unchanged(const TableSlotRef &table);

/*
 * SERIALIZABLE transactions writing the table right now: begun by the first write of the
 * table in such a transaction (its BEFORE STATEMENT trigger, before any row is written, so
 * before SSI's conflict checks on them) and ended at its end (after its pre-commit or
 * pre-prepare invalidation). A SERIALIZABLE read serves the table from the cache only if,
 * after taking its predicate locks, it finds none (fetch.cpp has the argument).
 */
void store_serializable_writer_begin(Oid dbid, Oid relid);
void store_serializable_writer_end(Oid dbid, Oid relid);
bool store_serializable_writers(Oid dbid, Oid relid);

/*
 * The catalog epoch: advanced when a transaction that ran DDL (any utility statement that can
 * change catalogs: GRANT, REVOKE, ALTER, DROP, enable()'s triggers ...) commits, before its
 * COMMIT returns. What a process learned from the catalogs while the epoch was E still holds
 * while it is E, without processing invalidation messages: the RESP workers serve cache hits
 * on that ground without a transaction (resp_server/pg/hit_path.cpp).
 */
uint64 store_catalog_epoch(void);
void store_advance_catalog_epoch(void);
/*
 * At the pre-commit of transaction `xid`, which changes the table's capture, and at its end
 * (commit or abort; a prepared transaction's word is settled by the first reader after COMMIT
 * PREPARED). Changes of one table's capture are serialized by their table locks.
 */
void store_capture_begin(Oid dbid, Oid relid, TransactionId xid);
void store_capture_end(Oid dbid, Oid relid, TransactionId xid);
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

/*
 * Starts loading, without waiting, what a lookup of `key` reads first (its shard's header and
 * bucket), or the bucket store_invalidate(key) writes, so that the cache misses of many keys, or
 * of one key and the work before its use, overlap.
 */
enum class Prefetch { Lookup, Invalidation };
void store_prefetch(const StoreKey &key, Prefetch purpose);
/* After store_prefetch, once the bucket has had time to arrive: the first entry of its chain. */
void store_prefetch_entry(const StoreKey &key);

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

template <typename Visit, typename Undo>
bool store_lookup_optimistic(const StoreKey &key, Visit &&visit, Undo &&undo)
{
	bool visited = false, used = false;
	switch (store_shard(key.shard)->lookup_optimistic(key.key, key.hash, [&](const EntryView &view) {
		visited = true;
		used = visit(view);
	})) {
	case Optimistic::Hit:
		return used;
	case Optimistic::Miss:
		return false;
	case Optimistic::Retry:
		break;
	}
	if (visited)
		undo();
	return store_lookup(key, visit);
}

} // namespace local_cache
