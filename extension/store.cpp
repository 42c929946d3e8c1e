/*
 * store.cpp — the shared segment: its layout, its locks, and per-table counters.
 *
 * Layout (one ShmemInitStruct of exactly local_cache.memory bytes, allocated once at
 * postmaster start and never grown):
 *
 *   StoreControl   sizes, retired counters, table slots
 *   shards[0..N)   equal blocks, each a local_cache::Shard (index + ring, see shard.h)
 *
 * Locking:
 *   - shard i is guarded by its own LWLock of the "local_cache" tranche, kept in the shard's
 *     header beside its invalidation sequence (Shard::lock_space): shared to look up, exclusive
 *     to fill, invalidate, flush or evict. A read takes one shard lock per key, in shared mode,
 *     and holds no other lock meanwhile.
 *   - the tranche's one lock of its own (slots_lock) guards slot identity (dbid, relid,
 *     signature, last_attach) and assignment. Order: slots_lock before shard locks, never the
 *     other way.
 *   - counters, TableSlot::state, the capture words and the serializable writers' counts
 *     are atomics, updated without locks (a capture word only by compare-and-swap).
 *   - each shard's fills in flight (FillClaims) have a spinlock of their own, never held
 *     while taking another lock.
 */
#include "extension/store.h"

#include "extension/boundary.h"
#include "extension/settings.h"

extern "C" {
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"
}

namespace local_cache {

namespace {

constexpr int NUM_SHARDS = 64;
constexpr int MAX_TABLES = 1024;
const char *const TRANCHE_NAME = "local_cache";

/* Per-table counters. Identity is protected by slots_lock; the rest are atomics. */
struct TableSlot {
	Oid dbid;              /* InvalidOid: free */
	Oid relid;
	uint64 signature;      /* shape of the rows the entries were built from */
	uint64 last_attach;    /* for choosing a slot to reuse */
	/*
	 * generation << 32 | entries. An entry is counted here from insertion to removal; the
	 * slot is only reassigned (generation + 1) when it counts no entry, so an entry's slot
	 * number always names the table it belongs to.
	 */
	pg_atomic_uint64 state;
	pg_atomic_uint64 bytes;
	pg_atomic_uint64 counters[NUM_COUNTERS];
	/* See TableSlotRef in store.h. A slot is not reassigned while its word is odd. */
	pg_atomic_uint64 capture;
};

/*
 * The keys of one shard that some process is reading from its table right now (a miss it
 * will fill), so that others missing them wait for the entry instead of reading too.
 * Protected by mutex; a claim's end is broadcast on `ended`.
 */
constexpr int CLAIMS_PER_SHARD = 8;
/* A claim names its key by table and hash: keys whose hashes collide share claims, which costs
 * a waiter at most one bounded wait before it reads the table itself. */
struct ClaimedKey {
	uint32 dbid;
	uint32 relid;
	uint64 hash;

	explicit ClaimedKey(const StoreKey &key = StoreKey())
		: dbid(key.key.dbid), relid(key.key.relid), hash(key.hash) {}
	bool operator==(const ClaimedKey &other) const
	{
		return hash == other.hash && relid == other.relid && dbid == other.dbid;
	}
};
struct FillClaims {
	slock_t mutex;
	ConditionVariable ended;
	struct {
		ClaimedKey key;
		int pid; /* 0: free */
	} claims[CLAIMS_PER_SHARD];
};

struct StoreControl {
	LWLock *slots_lock;
	uint64 memory_budget;
	uint64 shard_bytes;
	uint64 shards_offset;   /* from the segment start */
	uint64 attach_clock;    /* protected by slots_lock */
	pg_atomic_uint64 retired[NUM_COUNTERS]; /* counters of slots since reassigned */
	pg_atomic_uint64 global_capture;        /* capture changes of tables without a slot */
	pg_atomic_uint64 catalog_epoch;         /* see store_catalog_epoch() */
	/* Entries evicted, and when the last "cache is full" line was logged with how many had
	 * been by then (note_evictions; atomics, no lock). */
	pg_atomic_uint64 evictions;
	pg_atomic_uint64 evictions_logged_at; /* seconds since the epoch */
	pg_atomic_uint64 evictions_logged;
	/* SERIALIZABLE transactions writing a table now, by a hash of the table (a collision
	 * only makes more reads go to the table): see store_serializable_writer_begin(). */
	pg_atomic_uint32 serializable_writers[MAX_TABLES];
	TableSlot slots[MAX_TABLES];
	FillClaims fill_claims[NUM_SHARDS];
};

StoreControl *control = nullptr;
char *segment = nullptr;
/* This process's copy of the shards' geometry, fixed once the segment is made: finding a key's
 * shard and bucket then reads no shared line (store_prefetch's loads would wait for them). */
char *first_shard = nullptr;
uint64 shard_bytes = 0;
uint32 bucket_mask = 0;

uint64 segment_bytes() { return uint64(local_cache_memory_mb) * 1024 * 1024; }

uint64 entries_of(uint64 state) { return state & 0xffffffffu; }
uint32 generation_of(uint64 state) { return uint32(state >> 32); }

bool capture_changing(uint64 word) { return (word >> 32) & 1; }
TransactionId capture_xid(uint64 word) { return TransactionId(word & 0xffffffffu); }
uint64 capture_word(uint64 generation, TransactionId xid) { return (generation << 32) | xid; }

/* Reads a capture word; a change whose transaction has ended is settled first. */
uint64 read_capture(pg_atomic_uint64 *word)
{
	uint64 seen = pg_atomic_read_u64(word);
	while (capture_changing(seen) && !TransactionIdIsInProgress(capture_xid(seen))) {
		if (pg_atomic_compare_exchange_u64(word, &seen, capture_word((seen >> 32) + 1, InvalidTransactionId)))
			return pg_atomic_read_u64(word);
	}
	return seen;
}

/* Odd generation, naming xid (from even: the next one; from odd: two on, so it differs). */
void begin_capture_change(pg_atomic_uint64 *word, TransactionId xid)
{
	uint64 seen = pg_atomic_read_u64(word);
	while (!pg_atomic_compare_exchange_u64(word, &seen,
										  capture_word((seen >> 32) + (capture_changing(seen) ? 2 : 1), xid)))
		;
}

/* Even again, unless another change took the word meanwhile. */
void end_capture_change(pg_atomic_uint64 *word, TransactionId xid)
{
	uint64 seen = pg_atomic_read_u64(word);
	while (capture_changing(seen) && capture_xid(seen) == xid &&
		   !pg_atomic_compare_exchange_u64(word, &seen, capture_word((seen >> 32) + 1, InvalidTransactionId)))
		;
}

/* A fill of this process evicted entries: note_evictions() runs once the shard lock is free. */
bool evicted_here = false;

/* Every entry that leaves a shard is accounted to its table here. */
void on_entry_removed(uint16_t slot_index, uint32_t bytes, RemoveReason reason)
{
	TableSlot *slot = &control->slots[slot_index];
	pg_atomic_fetch_sub_u64(&slot->state, 1);
	pg_atomic_fetch_sub_u64(&slot->bytes, bytes);
	if (reason == RemoveReason::Evicted) {
		pg_atomic_fetch_add_u64(&slot->counters[COUNTER_EVICTIONS], 1);
		pg_atomic_fetch_add_u64(&control->evictions, 1);
		evicted_here = true;
	}
	else if (reason == RemoveReason::Invalidated)
		pg_atomic_fetch_add_u64(&slot->counters[COUNTER_INVALIDATIONS], 1);
}

uint64 flush_locked_shards(Oid dbid, Oid relid)
{
	uint64 removed = 0;
	for (int i = 0; i < NUM_SHARDS; i++) {
		LWLock *lock = store_shard_lock(i);
		LWLockAcquire(lock, LW_EXCLUSIVE);
		removed += store_shard(i)->remove_table(dbid, relid, on_entry_removed);
		LWLockRelease(lock);
	}
	return removed;
}

/* Moves a slot's counters into the retired totals and frees it. slots_lock held. */
void retire_slot(TableSlot *slot)
{
	for (int c = 0; c < NUM_COUNTERS; c++)
		pg_atomic_fetch_add_u64(&control->retired[c],
								pg_atomic_exchange_u64(&slot->counters[c], 0));
	pg_atomic_write_u64(&slot->bytes, 0);
	slot->dbid = InvalidOid;
	slot->relid = InvalidOid;
	slot->signature = 0;
}

/* A free slot, or the least recently attached one that counts no entry. slots_lock held. */
int claim_slot(void)
{
	int best = -1;
	for (int i = 0; i < MAX_TABLES; i++) {
		TableSlot *slot = &control->slots[i];
		if (slot->dbid == InvalidOid)
			return i;
		if (entries_of(pg_atomic_read_u64(&slot->state)) == 0 &&
			!capture_changing(pg_atomic_read_u64(&slot->capture)) &&
			(best < 0 || slot->last_attach < control->slots[best].last_attach))
			best = i;
	}
	if (best < 0)
		return -1;
	/* Bump the generation unless an entry arrived meanwhile (fills only need shard locks). */
	TableSlot *slot = &control->slots[best];
	uint64 state = pg_atomic_read_u64(&slot->state);
	if (entries_of(state) != 0 ||
		!pg_atomic_compare_exchange_u64(&slot->state, &state,
										uint64(generation_of(state) + 1) << 32))
		return -1;
	retire_slot(slot);
	return best;
}

} // namespace

Shard *store_shard(int shard)
{
	return reinterpret_cast<Shard *>(first_shard + uint64(shard) * shard_bytes);
}

static_assert(sizeof(LWLock) <= Shard::lock_bytes && alignof(LWLock) <= 8, "a shard's header holds its lock");

LWLock *store_shard_lock(int shard)
{
	return static_cast<LWLock *>(store_shard(shard)->lock_space());
}

void store_prefetch(const StoreKey &key, Prefetch purpose)
{
	const Shard *shard = store_shard(key.shard);
	shard->prefetch(key.hash, bucket_mask, purpose == Prefetch::Invalidation);
}

void store_prefetch_entry(const StoreKey &key)
{
	store_shard(key.shard)->prefetch_entry(key.hash);
}

void store_request_shmem(void)
{
	RequestAddinShmemSpace(segment_bytes());
	RequestNamedLWLockTranche(TRANCHE_NAME, 1);
}

void store_startup_shmem(void)
{
	bool found;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	segment = static_cast<char *>(ShmemInitStruct("local_cache", segment_bytes(), &found));
	control = reinterpret_cast<StoreControl *>(segment);
	LWLock *slots_lock = &GetNamedLWLockTranche(TRANCHE_NAME)->lock;
	if (!found) {
		memset(static_cast<void *>(control), 0, sizeof(StoreControl)); /* atomics initialized below */
		control->slots_lock = slots_lock;
		control->memory_budget = segment_bytes();
		control->shards_offset = TYPEALIGN(PG_CACHE_LINE_SIZE, sizeof(StoreControl));
		control->shard_bytes = TYPEALIGN_DOWN(PG_CACHE_LINE_SIZE,
											  (segment_bytes() - control->shards_offset) / NUM_SHARDS);
		for (int c = 0; c < NUM_COUNTERS; c++)
			pg_atomic_init_u64(&control->retired[c], 0);
		for (int i = 0; i < MAX_TABLES; i++) {
			TableSlot *slot = &control->slots[i];
			pg_atomic_init_u64(&slot->state, 0);
			pg_atomic_init_u64(&slot->bytes, 0);
			pg_atomic_init_u64(&slot->capture, 0);
			for (int c = 0; c < NUM_COUNTERS; c++)
				pg_atomic_init_u64(&slot->counters[c], 0);
		}
		pg_atomic_init_u64(&control->global_capture, 0);
		pg_atomic_init_u64(&control->catalog_epoch, 1);
		pg_atomic_init_u64(&control->evictions, 0);
		pg_atomic_init_u64(&control->evictions_logged_at, 0);
		pg_atomic_init_u64(&control->evictions_logged, 0);
		for (int i = 0; i < MAX_TABLES; i++)
			pg_atomic_init_u32(&control->serializable_writers[i], 0);
		for (int i = 0; i < NUM_SHARDS; i++) {
			SpinLockInit(&control->fill_claims[i].mutex);
			ConditionVariableInit(&control->fill_claims[i].ended);
		}
	}
	first_shard = segment + control->shards_offset;
	shard_bytes = control->shard_bytes;
	if (!found)
		for (int i = 0; i < NUM_SHARDS; i++) {
			if (Shard::create(store_shard(i), shard_bytes) == nullptr)
				elog(FATAL, "local_cache: local_cache.memory is too small for %d shards", NUM_SHARDS);
			LWLockInitialize(store_shard_lock(i), slots_lock->tranche); /* the tranche's name */
		}
	bucket_mask = store_shard(0)->bucket_mask();
	LWLockRelease(AddinShmemInitLock);
}

bool store_available(void)
{
	return control != nullptr;
}

void store_require_available(void)
{
	if (control == nullptr)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("local_cache must be loaded via shared_preload_libraries"),
				 errhint("Add local_cache to shared_preload_libraries in postgresql.conf and restart the server.")));
}

StoreKey store_key(Oid dbid, Oid relid, KeyBytes key)
{
	StoreKey result;
	result.key.dbid = dbid;
	result.key.relid = relid;
	result.key.key = key;
	result.hash = hash_entry_key(result.key);
	/* The top bits pick the shard; the shard uses the low bits for its buckets. */
	result.shard = int(result.hash >> 58) % NUM_SHARDS;
	return result;
}

uint64 store_fill_seq(const StoreKey &key)
{
	return store_shard(key.shard)->seq();
}

/*
 * A cache too small for its rows evicts on every fill and serves fewer hits, which nothing
 * else would tell: one LOG line a minute at most while it lasts, from whichever process
 * evicted (the first to claim the minute).
 */
constexpr uint64 EVICTION_LOG_INTERVAL_S = 60;

void note_evictions(void)
{
	evicted_here = false;
	uint64 now = uint64(time(nullptr));
	uint64 last = pg_atomic_read_u64(&control->evictions_logged_at);
	if (now < last + EVICTION_LOG_INTERVAL_S ||
		!pg_atomic_compare_exchange_u64(&control->evictions_logged_at, &last, now))
		return;
	uint64 total = pg_atomic_read_u64(&control->evictions);
	uint64 before = pg_atomic_exchange_u64(&control->evictions_logged, total);
	ereport(LOG,
			(errmsg("local_cache: the cache is full: %llu entries evicted since %s",
					(unsigned long long) (total - before), last == 0 ? "the server started" : "the last such message"),
			 errdetail("Rows that no longer fit are read from their tables again, and fewer reads hit."),
			 errhint("Raise local_cache.memory (now %d MB), or cache fewer or smaller tables.", local_cache_memory_mb)));
}

FillResult store_fill(const StoreKey &key, uint64 seq, TableSlotRef table,
					  const EntryPayload &payload)
{
	TableSlot *slot = &control->slots[table.slot];
	LWLock *lock = store_shard_lock(key.shard);
	FillResult result = FillResult::Rejected;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	/* A capture change that began since the caller validated the triggers: its flush may have
	 * passed this shard already, so the row must not enter. */
	if (!store_capture_unchanged(table)) {
		LWLockRelease(lock);
		return FillResult::Rejected;
	}
	/* Count the entry in its slot first, unless the slot was given to another table. */
	uint64 state = pg_atomic_read_u64(&slot->state);
	bool counted = false;
	while (generation_of(state) == table.generation) {
		if (pg_atomic_compare_exchange_u64(&slot->state, &state, state + 1)) {
			counted = true;
			break;
		}
	}
	if (!counted) {
		result = FillResult::SlotLost;
	} else {
		EntryPayload stamped = payload;
		stamped.slot = uint16_t(table.slot);
		InsertResult inserted = store_shard(key.shard)->insert(key.key, key.hash, seq, stamped,
															  on_entry_removed);
		if (inserted == InsertResult::Inserted) {
			pg_atomic_fetch_add_u64(&slot->bytes,
									Shard::entry_bytes(key.key.key.len, payload.tuple_len,
													   payload.json ? payload.json_len : 0));
			result = FillResult::Filled;
		} else {
			pg_atomic_fetch_sub_u64(&slot->state, 1);
		}
	}
	LWLockRelease(lock);
	if (evicted_here)
		note_evictions();
	return result;
}

namespace {

/* This process's claims, ended together by store_end_fills(). */
constexpr int MAX_HELD_CLAIMS = 64;
struct HeldClaim {
	int shard;
	ClaimedKey key;
};
HeldClaim held_claims[MAX_HELD_CLAIMS];
int num_held_claims = 0;

/* The pid that claims the key, or 0. Caller holds the mutex. */
int claimant(const FillClaims *fills, const ClaimedKey &key)
{
	for (const auto &claim : fills->claims)
		if (claim.pid != 0 && claim.key == key)
			return claim.pid;
	return 0;
}

void end_fills_at_exit(int, Datum)
{
	store_end_fills();
}

} // namespace

FillClaim store_claim_fill(const StoreKey &key)
{
	static bool exit_callback_registered = false;
	if (!exit_callback_registered) {
		before_shmem_exit(pg_entry<end_fills_at_exit>, (Datum) 0);
		exit_callback_registered = true;
	}
	FillClaims *fills = &control->fill_claims[key.shard];
	FillClaim result = FillClaim::NoRoom;
	SpinLockAcquire(&fills->mutex);
	ClaimedKey claimed(key);
	int pid = claimant(fills, claimed);
	if (pid == MyProcPid)
		result = FillClaim::Mine;
	else if (pid != 0)
		result = FillClaim::Others;
	else if (num_held_claims < MAX_HELD_CLAIMS) {
		for (auto &claim : fills->claims) {
			if (claim.pid == 0) {
				claim.key = claimed;
				claim.pid = MyProcPid;
				held_claims[num_held_claims++] = {key.shard, claimed};
				result = FillClaim::Mine;
				break;
			}
		}
	}
	SpinLockRelease(&fills->mutex);
	return result;
}

void store_end_fills(void)
{
	for (int i = 0; i < num_held_claims; i++) {
		FillClaims *fills = &control->fill_claims[held_claims[i].shard];
		SpinLockAcquire(&fills->mutex);
		for (auto &claim : fills->claims)
			if (claim.pid == MyProcPid && claim.key == held_claims[i].key)
				claim.pid = 0;
		SpinLockRelease(&fills->mutex);
		ConditionVariableBroadcast(&fills->ended);
	}
	num_held_claims = 0;
}

bool store_wait_for_fill(const StoreKey &key, TimestampTz deadline)
{
	FillClaims *fills = &control->fill_claims[key.shard];
	bool ended;
	ConditionVariablePrepareToSleep(&fills->ended);
	for (;;) {
		SpinLockAcquire(&fills->mutex);
		int pid = claimant(fills, ClaimedKey(key));
		SpinLockRelease(&fills->mutex);
		ended = pid == 0 || pid == MyProcPid;
		long left_ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (ended || left_ms <= 0)
			break;
		ConditionVariableTimedSleep(&fills->ended, left_ms, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return ended;
}

void store_invalidate(const StoreKey &key)
{
	LWLock *lock = store_shard_lock(key.shard);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	store_shard(key.shard)->remove(key.key, key.hash, bucket_mask, on_entry_removed);
	LWLockRelease(lock);
}

uint64 store_flush(Oid dbid, Oid relid)
{
	return flush_locked_shards(dbid, relid);
}

namespace {

/* The slot of a table, or -1. slots_lock held. */
int find_slot(Oid dbid, Oid relid)
{
	for (int i = 0; i < MAX_TABLES; i++)
		if (control->slots[i].dbid == dbid && control->slots[i].relid == relid)
			return i;
	return -1;
}

/* The slot of a table, assigned if it has none; -1 if every slot is busy. slots_lock held
 * exclusively. A new slot's signature is unknown (0): nothing was built under it. */
int find_or_claim_slot(Oid dbid, Oid relid)
{
	int found = find_slot(dbid, relid);
	if (found < 0) {
		found = claim_slot();
		if (found >= 0) {
			control->slots[found].dbid = dbid;
			control->slots[found].relid = relid;
		}
	}
	return found;
}

} // namespace

bool store_attach_table(Oid dbid, Oid relid, TableSlotRef *table)
{
	table->slot = -1;
	table->generation = 0;
	LWLockAcquire(control->slots_lock, LW_EXCLUSIVE);
	int found = find_or_claim_slot(dbid, relid);
	if (found >= 0) {
		TableSlot *slot = &control->slots[found];
		slot->last_attach = ++control->attach_clock;
		table->slot = found;
		table->generation = generation_of(pg_atomic_read_u64(&slot->state));
	}
	LWLockRelease(control->slots_lock);
	table->global_capture = read_capture(&control->global_capture);
	table->capture = found >= 0 ? read_capture(&control->slots[found].capture) : 0;
	return !capture_changing(table->capture) && !capture_changing(table->global_capture);
}

void store_set_signature(Oid dbid, Oid relid, TableSlotRef table, uint64 signature)
{
	if (table.slot < 0)
		return;
	LWLockAcquire(control->slots_lock, LW_EXCLUSIVE);
	TableSlot *slot = &control->slots[table.slot];
	if (slot->dbid == dbid && slot->relid == relid && slot->signature != signature) {
		flush_locked_shards(dbid, relid);
		slot->signature = signature;
	}
	LWLockRelease(control->slots_lock);
}

pg_atomic_uint32 *serializable_writers_of(Oid dbid, Oid relid)
{
	return &control->serializable_writers[(uint64(dbid) * 0x9E3779B97F4A7C15ULL ^ relid) % MAX_TABLES];
}

void store_serializable_writer_begin(Oid dbid, Oid relid)
{
	pg_atomic_fetch_add_u32(serializable_writers_of(dbid, relid), 1); /* a full barrier */
}

void store_serializable_writer_end(Oid dbid, Oid relid)
{
	pg_atomic_fetch_sub_u32(serializable_writers_of(dbid, relid), 1);
}

bool store_serializable_writers(Oid dbid, Oid relid)
{
	pg_memory_barrier(); /* the caller's predicate locks before this read */
	return pg_atomic_read_u32(serializable_writers_of(dbid, relid)) != 0;
}

uint64 store_catalog_epoch(void)
{
	return pg_atomic_read_u64(&control->catalog_epoch);
}

void store_advance_catalog_epoch(void)
{
	pg_atomic_fetch_add_u64(&control->catalog_epoch, 1);
}

bool store_capture_unchanged(const TableSlotRef &table)
{
	return pg_atomic_read_u64(&control->global_capture) == table.global_capture &&
		(table.slot < 0 || pg_atomic_read_u64(&control->slots[table.slot].capture) == table.capture);
}

void store_capture_begin(Oid dbid, Oid relid, TransactionId xid)
{
	LWLockAcquire(control->slots_lock, LW_EXCLUSIVE);
	int found = find_or_claim_slot(dbid, relid);
	begin_capture_change(found >= 0 ? &control->slots[found].capture : &control->global_capture, xid);
	LWLockRelease(control->slots_lock);
}

void store_capture_end(Oid dbid, Oid relid, TransactionId xid)
{
	LWLockAcquire(control->slots_lock, LW_SHARED);
	int found = find_slot(dbid, relid);
	end_capture_change(found >= 0 ? &control->slots[found].capture : &control->global_capture, xid);
	/* A change that fell back on the global word while the table had no slot. */
	end_capture_change(&control->global_capture, xid);
	LWLockRelease(control->slots_lock);
}

void store_count(TableSlotRef table, Counter counter, uint64 n)
{
	if (n == 0 || table.slot < 0)
		return;
	TableSlot *slot = &control->slots[table.slot];
	if (generation_of(pg_atomic_read_u64(&slot->state)) == table.generation)
		pg_atomic_fetch_add_u64(&slot->counters[counter], n);
}

void store_reset_counters(void)
{
	for (int c = 0; c < NUM_COUNTERS; c++)
		pg_atomic_write_u64(&control->retired[c], 0);
	for (int i = 0; i < MAX_TABLES; i++)
		for (int c = 0; c < NUM_COUNTERS; c++)
			pg_atomic_write_u64(&control->slots[i].counters[c], 0);
}

int store_max_tables(void)
{
	return MAX_TABLES;
}

int store_table_counters(TableCounters *out, int max)
{
	int n = 0;
	LWLockAcquire(control->slots_lock, LW_SHARED);
	for (int i = 0; i < MAX_TABLES && n < max; i++) {
		TableSlot *slot = &control->slots[i];
		if (slot->dbid == InvalidOid)
			continue;
		out[n].dbid = slot->dbid;
		out[n].relid = slot->relid;
		for (int c = 0; c < NUM_COUNTERS; c++)
			out[n].counters[c] = pg_atomic_read_u64(&slot->counters[c]);
		out[n].entries = entries_of(pg_atomic_read_u64(&slot->state));
		out[n].bytes = pg_atomic_read_u64(&slot->bytes);
		n++;
	}
	LWLockRelease(control->slots_lock);
	return n;
}

void store_global_counters(GlobalCounters *out)
{
	memset(out, 0, sizeof(*out));
	for (int c = 0; c < NUM_COUNTERS; c++)
		out->counters[c] = pg_atomic_read_u64(&control->retired[c]);
	for (int i = 0; i < MAX_TABLES; i++)
		for (int c = 0; c < NUM_COUNTERS; c++)
			out->counters[c] += pg_atomic_read_u64(&control->slots[i].counters[c]);
	for (int i = 0; i < NUM_SHARDS; i++) {
		out->entries += store_shard(i)->live_entries();
		out->bytes += store_shard(i)->live_bytes();
	}
	out->memory_budget = control->memory_budget;
	out->shards = NUM_SHARDS;
}

} // namespace local_cache
