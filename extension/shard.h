/*
 * shard.h — one shard of the row cache: a bucket index over a ring of entries.
 *
 * The cache is split into a fixed number of shards, each a self-contained block of
 * shared memory guarded by one lock that the caller holds (store.cpp owns the locks, and keeps
 * each in its shard's header: lock_space()):
 *
 *   lookup()              caller holds the shard lock in shared mode
 *   insert(), remove(),
 *   remove_table()        caller holds the shard lock in exclusive mode
 *   lookup_optimistic()   no lock: validated by the write version (below)
 *   seq(), live_*()       no lock: atomic reads
 *
 * The write version is a seqlock's counter beside the lock, not a lock: every insert, remove
 * and remove_table makes it odd before it writes a bucket link, an entry header or a ring byte
 * and even again after its last such write. A reader without the lock reads the version, the
 * entry, and the version again; when both are the same even number no writer ran in between,
 * so what it read is what a reader holding the shared lock would have read at that moment.
 * Such a reader writes nothing, not even the referenced bit (it only reads entries whose bit
 * is already set).
 *
 * Entries are appended at the ring's head and reclaimed at its tail. Eviction is CLOCK
 * expressed on a ring ("FIFO with reinsertion"): a locked reader sets an entry's referenced bit;
 * when the tail reaches a referenced entry it is copied to the head with the bit cleared
 * instead of being evicted (a bounded number of times per insertion). Invalidated and
 * replaced entries are unlinked at once and their bytes come back when the tail passes.
 *
 * The block holds plain data only and no pointers: links are ring offsets, so every
 * process can map the segment at any address. This file includes no PostgreSQL header,
 * so the unit tests exercise it alone.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace local_cache {

/* A key's canonical bytes (key_bytes.h says how a key becomes bytes); not owned. */
struct KeyBytes {
	const char *data;
	uint32_t len;
};

inline bool operator==(const KeyBytes &a, const KeyBytes &b)
{
	return a.len == b.len && (a.len == 0 || std::memcmp(a.data, b.data, a.len) == 0);
}

/* A row's name in the cache: its table, and its primary key's canonical bytes. */
struct EntryKey {
	uint32_t dbid;
	uint32_t relid;
	KeyBytes key;
};

inline bool operator==(const EntryKey &a, const EntryKey &b)
{
	return a.relid == b.relid && a.dbid == b.dbid && a.key == b.key;
}

/* 64-bit hash of a key; the high bits pick the shard, the low bits the bucket. */
uint64_t hash_entry_key(const EntryKey &key);

/* What a lookup copies out. The pointers are valid while the shard lock is held; those that
 * lookup_optimistic() gives point inside the shard, their bytes valid if it answers Hit. */
struct EntryView {
	const char *tuple;
	uint32_t tuple_len;
	const char *json; /* nullptr when the entry carries no JSON rendering */
	uint32_t json_len;
	uint32_t xmin;
	uint16_t slot;
	/* Where the row version was read from (its heap TID; 0/0 for a negative entry):
	 * SERIALIZABLE readers take the predicate lock a heap fetch of it would take. */
	uint32_t tid_block;
	uint16_t tid_offset;
};

enum class RemoveReason : uint8_t { Evicted, Invalidated, Replaced };

/* Told about every entry that leaves the shard, to keep per-table counters. */
using RemoveObserver = void (*)(uint16_t slot, uint32_t bytes, RemoveReason reason);

/* What lookup_optimistic() found: Retry when it could not tell, to ask lookup() under the lock. */
enum class Optimistic : uint8_t { Hit, Miss, Retry };

enum class InsertResult : uint8_t {
	Inserted,
	Stale,   /* an invalidation happened in this shard since the caller read seq() */
	TooBig   /* larger than max_entry_bytes(), or a key longer than max_key_bytes */
};

struct EntryPayload {
	uint16_t slot;
	uint32_t xmin;
	const char *tuple;
	uint32_t tuple_len;
	const char *json; /* may be nullptr */
	uint32_t json_len;
	uint32_t tid_block = 0; /* EntryView's */
	uint16_t tid_offset = 0;
};

class Shard {
public:
	/* Formats `bytes` bytes at `mem` (8-byte aligned) as an empty shard. */
	static Shard *create(void *mem, size_t bytes);

	bool lookup(const EntryKey &key, uint64_t hash, EntryView *out);

	/*
	 * lookup() without the lock, for a caller that can take back what visit(view) did. On a
	 * hit visit copies the entry out; the copy holds only if the answer is Hit: on Retry (a
	 * writer came by, or the entry's referenced bit is not yet set) it must be discarded and
	 * the key looked up under the lock. The view is checked to lie inside the shard, so visit
	 * reads no byte outside it even when a writer has changed the entry meanwhile.
	 */
	template <typename Visit>
	Optimistic lookup_optimistic(const EntryKey &key, uint64_t hash, Visit &&visit) const
	{
		uint64_t version = __atomic_load_n(&version_, __ATOMIC_ACQUIRE);
		if (version & 1)
			return Optimistic::Retry;
		EntryView view;
		Optimistic found = find_unlocked(key, uint32_t(hash), &view);
		if (found == Optimistic::Hit)
			visit(view);
		/* The reads above (visit's included) complete before the version is read again. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&version_, __ATOMIC_RELAXED) != version)
			return Optimistic::Retry;
		return found;
	}

	/*
	 * Inserts (or replaces) the entry unless an invalidation happened since the caller
	 * read seq(): a fill must call seq() before it reads the table and pass the value here.
	 */
	InsertResult insert(const EntryKey &key, uint64_t hash, uint64_t expected_seq,
						const EntryPayload &payload, RemoveObserver observer);

	/* The same for every shard created with the same size. */
	uint32_t bucket_mask() const { return bucket_mask_; }
	/*
	 * Starts loading the header and the bucket that a lookup of `hash` reads first (for a remove,
	 * for_write: the bucket only), waiting for neither: `bucket_mask` is bucket_mask(), known to
	 * the caller, so the header is not read to find the bucket. A lookup of many keys prefetches
	 * them all before it reads any: their cache misses overlap.
	 */
	void prefetch(uint64_t hash, uint32_t bucket_mask, bool for_write) const;
	/* After prefetch(), once the header and bucket have arrived: starts loading the first entry of
	 * the bucket's chain. The bucket is read without the lock, as a hint: a link a writer is
	 * changing only loads the wrong line. */
	void prefetch_entry(uint64_t hash) const;

	/* Invalidation: removes the key if present and always advances seq(). `bucket_mask` is
	 * bucket_mask(), known to the caller: the bucket is found without reading the header's first
	 * line, which a key not cached then never touches. */
	bool remove(const EntryKey &key, uint64_t hash, uint32_t bucket_mask, RemoveObserver observer);

	/* Where the caller keeps the shard's lock (store.cpp: an LWLock): in the header's line that
	 * seq() advances in, so that an invalidation of a key not cached, the commonest write, fetches
	 * that line and the bucket's, and no third. */
	static constexpr size_t lock_bytes = 32;
	void *lock_space() { return lock_space_; }

	/* Removes every entry of one table (relid 0: of every table of dbid; dbid 0: all). */
	uint64_t remove_table(uint32_t dbid, uint32_t relid, RemoveObserver observer);

	uint64_t seq() const { return __atomic_load_n(&seq_, __ATOMIC_ACQUIRE); }
	uint64_t live_entries() const { return __atomic_load_n(&live_entries_, __ATOMIC_RELAXED); }
	uint64_t live_bytes() const { return __atomic_load_n(&live_bytes_, __ATOMIC_RELAXED); }
	uint64_t ring_bytes() const { return ring_bytes_; }
	uint32_t max_entry_bytes() const { return max_entry_bytes_; }

	/* Bytes one entry occupies in the ring (header and key included). */
	static uint32_t entry_bytes(uint32_t key_len, uint32_t tuple_len, uint32_t json_len);

	/* Longer keys are never cached (lookups miss, insertions answer TooBig). */
	static constexpr uint32_t max_key_bytes = 65535;

	/* How many times one insertion may move a referenced entry instead of evicting it. */
	static constexpr int reinsertions_per_insert = 16;

	/* How many chain links lookup_optimistic() follows before it asks for the lock: a chain
	 * a writer is changing may be a cycle. Chains average under two links. */
	static constexpr int optimistic_chain_links = 64;

private:
	struct Entry;

	Entry *entry_at(uint64_t offset) const;
	uint32_t *link_to(const EntryKey &key, uint32_t hash32, uint32_t bucket_mask) const;
	uint32_t *link_to_offset(uint32_t hash32, uint64_t offset) const;
	void unlink_and_kill(uint32_t *link, Entry *entry, RemoveReason reason,
						 RemoveObserver observer);
	void make_room(uint32_t needed, RemoveObserver observer);
	void reclaim_tail(int *reinsertions_left, RemoveObserver observer);
	void bump_seq() { __atomic_store_n(&seq_, seq_ + 1, __ATOMIC_RELEASE); }
	Optimistic find_unlocked(const EntryKey &key, uint32_t hash32, EntryView *out) const;
	/* Odd while a writer changes the index or the ring (the stores after it stay after it). */
	void write_begin()
	{
		__atomic_store_n(&version_, version_ + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
	}
	void write_end() { __atomic_store_n(&version_, version_ + 1, __ATOMIC_RELEASE); }
	void add_live(int64_t entries, int64_t bytes);

	/* The header's first cache line (a shard starts at a line): what a lookup reads first, and
	 * what changes as entries come and go. */
	uint64_t version_; /* the write version: odd while a writer is at work */
	uint64_t ring_bytes_;
	uint64_t ring_offset_;  /* from this, to the first ring byte */
	uint32_t bucket_mask_;
	uint32_t max_entry_bytes_;
	uint64_t head_; /* monotonically growing ring positions; offset = position % ring */
	uint64_t tail_;
	uint64_t live_entries_;
	uint64_t live_bytes_;
	/* The second: the lock and seq_, which every invalidation writes, apart from what lock-free
	 * lookups read. */
	alignas(8) unsigned char lock_space_[lock_bytes];
	uint64_t seq_;
	uint64_t unused_[3];
	/* followed by uint32_t buckets[bucket_mask_ + 1], then the ring */
};

} // namespace local_cache
