/*
 * shard.cpp — the bucket index, ring allocation and CLOCK eviction of one cache shard.
 * Locking is the caller's (see shard.h); nothing here blocks, allocates or throws.
 */
#include "extension/shard.h"

#include <cstddef>
#include <cstring>
#include <new>

namespace local_cache {

namespace {

enum EntryKind : uint8_t { Live = 1, Dead = 2, Padding = 3 };

constexpr uint64_t align8(uint64_t n) { return (n + 7) & ~uint64_t(7); }

/* Whether `len` key bytes are equal; every integer key is 8 bytes, compared without a call. */
bool same_key_bytes(const char *mine, const char *theirs, uint32_t len)
{
	if (len == 8) {
		uint64_t a, b;
		std::memcpy(&a, mine, 8);
		std::memcpy(&b, theirs, 8);
		return a == b;
	}
	return std::memcmp(mine, theirs, len) == 0;
}

uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

} // namespace

/*
 * One ring record: this header, the key's bytes (padded to 8), the tuple, the JSON. A key
 * costs its own length only: an integer key takes 8 bytes, as before keys had any other type.
 * Padding records use only `bytes` and `kind`.
 */
struct Shard::Entry {
	uint32_t bytes;      /* whole record, a multiple of 8 */
	uint8_t kind;
	uint8_t referenced;  /* set by readers under the shared lock; atomic byte stores */
	uint8_t has_json;
	uint8_t unused;
	uint32_t next;       /* ring offset + 1 of the next entry in the bucket chain; 0 ends it */
	uint32_t hash32;
	uint32_t xmin;
	uint32_t tuple_len;
	uint32_t json_len;
	uint32_t dbid;
	uint32_t relid;
	uint16_t slot;
	uint16_t key_len;
	uint32_t tid_block;
	uint16_t tid_offset;
	uint16_t unused2;

	char *key() { return reinterpret_cast<char *>(this) + sizeof(Entry); }
	char *tuple() { return key() + align8(key_len); }
	char *json() { return tuple() + tuple_len; }
	bool has_key(const EntryKey &k)
	{
		return relid == k.relid && dbid == k.dbid && key_len == k.key.len &&
			same_key_bytes(key(), k.key.data, key_len);
	}
};

/* One multiply-xorshift round per 8 key bytes and one full mix at the end: every lookup hashes
 * its key (RESP MGET of 64 uuid keys spent 8% of a worker's time here with a full mix per word).
 * dbid and relid are read apart: the caller has just stored them apart, and one 8-byte load of
 * both stalls on store forwarding (half of this function's time in a profile). */
uint64_t hash_entry_key(const EntryKey &key)
{
	uint64_t hash = uint64_t(key.relid) * 0x9E3779B97F4A7C15ULL ^ uint64_t(key.dbid) * 0xC2B2AE3D27D4EB4FULL ^
		key.key.len;
	const char *bytes = key.key.data;
	uint32_t left = key.key.len;
	for (; left >= 8; left -= 8, bytes += 8) {
		uint64_t word;
		std::memcpy(&word, bytes, 8);
		hash = (hash ^ word) * 0xbf58476d1ce4e5b9ULL;
		hash ^= hash >> 29;
	}
	if (left > 0) {
		uint64_t word = 0;
		std::memcpy(&word, bytes, left);
		hash = (hash ^ word ^ (uint64_t(left) << 56)) * 0xbf58476d1ce4e5b9ULL;
		hash ^= hash >> 29;
	}
	return mix64(hash);
}

uint32_t Shard::entry_bytes(uint32_t key_len, uint32_t tuple_len, uint32_t json_len)
{
	static_assert(sizeof(Entry) % 8 == 0, "the entry header keeps the key and tuple 8-byte aligned");
	return uint32_t(align8(sizeof(Entry) + align8(key_len) + uint64_t(tuple_len) + json_len));
}

Shard *Shard::create(void *mem, size_t bytes)
{
	static_assert(offsetof(Shard, lock_space_) == 64 && sizeof(Shard) == 128, "the header is two cache lines");
	uint64_t header = align8(sizeof(Shard));
	if (bytes < header + 4096)
		return nullptr;
	uint64_t available = bytes - header;

	/* About one bucket per 256 ring bytes: chains stay short for rows of a few hundred bytes. */
	uint64_t buckets = 16;
	while (buckets * 2 * 260 <= available)
		buckets *= 2;
	uint64_t ring_offset = align8(header + buckets * sizeof(uint32_t));
	uint64_t ring = (bytes - ring_offset) & ~uint64_t(7);
	if (ring >= (uint64_t(1) << 32) - 8)
		return nullptr; /* links are 32-bit offsets */

	Shard *shard = new (mem) Shard;
	shard->seq_ = 0;
	std::memset(shard->lock_space_, 0, sizeof(shard->lock_space_));
	std::memset(shard->unused_, 0, sizeof(shard->unused_));
	shard->version_ = 0;
	shard->head_ = 0;
	shard->tail_ = 0;
	shard->live_entries_ = 0;
	shard->live_bytes_ = 0;
	shard->ring_bytes_ = ring;
	shard->ring_offset_ = ring_offset;
	shard->bucket_mask_ = uint32_t(buckets - 1);
	shard->max_entry_bytes_ = uint32_t((ring / 8) & ~uint64_t(7));
	std::memset(reinterpret_cast<char *>(shard) + header, 0, buckets * sizeof(uint32_t));
	return shard;
}

Shard::Entry *Shard::entry_at(uint64_t offset) const
{
	char *base = reinterpret_cast<char *>(const_cast<Shard *>(this));
	return reinterpret_cast<Entry *>(base + ring_offset_ + offset);
}

static uint32_t *buckets_of(const Shard *shard)
{
	char *base = reinterpret_cast<char *>(const_cast<Shard *>(shard));
	return reinterpret_cast<uint32_t *>(base + align8(sizeof(Shard)));
}

void Shard::prefetch(uint64_t hash, uint32_t bucket_mask, bool for_write) const
{
	const uint32_t *bucket = &buckets_of(this)[uint32_t(hash) & bucket_mask];
	if (for_write) {
		/* Not the header's lines: the lock's, taken at the commit, would be lost by then all the
		 * same, and the prefetch of a line another process holds stalled the statement. */
		__builtin_prefetch(bucket, 1);
	} else {
		__builtin_prefetch(this);
		__builtin_prefetch(bucket);
	}
}

void Shard::prefetch_entry(uint64_t hash) const
{
	uint32_t link = __atomic_load_n(&buckets_of(this)[uint32_t(hash) & bucket_mask_], __ATOMIC_RELAXED);
	if (link != 0)
		__builtin_prefetch(reinterpret_cast<const char *>(this) + ring_offset_ + (link - 1));
}

uint32_t *Shard::link_to(const EntryKey &key, uint32_t hash32, uint32_t bucket_mask) const
{
	uint32_t *link = &buckets_of(this)[hash32 & bucket_mask];
	while (*link != 0) {
		Entry *entry = entry_at(*link - 1);
		if (entry->hash32 == hash32 && entry->has_key(key))
			return link;
		link = &entry->next;
	}
	return nullptr;
}

uint32_t *Shard::link_to_offset(uint32_t hash32, uint64_t offset) const
{
	uint32_t *link = &buckets_of(this)[hash32 & bucket_mask_];
	while (*link != 0) {
		if (*link - 1 == offset)
			return link;
		link = &entry_at(*link - 1)->next;
	}
	return nullptr;
}

void Shard::add_live(int64_t entries, int64_t bytes)
{
	__atomic_store_n(&live_entries_, live_entries_ + entries, __ATOMIC_RELAXED);
	__atomic_store_n(&live_bytes_, live_bytes_ + bytes, __ATOMIC_RELAXED);
}

void Shard::unlink_and_kill(uint32_t *link, Entry *entry, RemoveReason reason,
							RemoveObserver observer)
{
	if (link != nullptr)
		*link = entry->next;
	entry->kind = Dead;
	add_live(-1, -int64_t(entry->bytes));
	if (observer != nullptr)
		observer(entry->slot, entry->bytes, reason);
}

bool Shard::lookup(const EntryKey &key, uint64_t hash, EntryView *out)
{
	uint32_t *link = link_to(key, uint32_t(hash), bucket_mask_);
	if (link == nullptr)
		return false;
	Entry *entry = entry_at(*link - 1);
	/* Check first: readers hitting one hot entry should not keep dirtying its cache line. */
	if (__atomic_load_n(&entry->referenced, __ATOMIC_RELAXED) == 0)
		__atomic_store_n(&entry->referenced, 1, __ATOMIC_RELAXED);
	out->tuple = entry->tuple();
	out->tuple_len = entry->tuple_len;
	out->json = entry->has_json ? entry->json() : nullptr;
	out->json_len = entry->json_len;
	out->xmin = entry->xmin;
	out->slot = entry->slot;
	out->tid_block = entry->tid_block;
	out->tid_offset = entry->tid_offset;
	return true;
}

/*
 * lookup() for a reader that holds no lock, so that a writer may be changing what it reads:
 * every field is loaded once, and every offset and length is checked against the ring before
 * it is used, so that whatever it reads it stays inside the shard and ends. What it returns
 * counts only if the version then shows no writer ran (lookup_optimistic).
 */
Optimistic Shard::find_unlocked(const EntryKey &key, uint32_t hash32, EntryView *out) const
{
	if (key.key.len > max_key_bytes)
		return Optimistic::Miss; /* never cached, as in lookup() */
	uint32_t link = __atomic_load_n(&buckets_of(this)[hash32 & bucket_mask_], __ATOMIC_RELAXED);
	for (int links = 0; link != 0; links++) {
		uint64_t offset = uint64_t(link) - 1;
		if (links == optimistic_chain_links || offset % 8 != 0 || offset + sizeof(Entry) > ring_bytes_)
			return Optimistic::Retry;
		Entry *entry = entry_at(offset);
		link = __atomic_load_n(&entry->next, __ATOMIC_RELAXED);
		if (__atomic_load_n(&entry->hash32, __ATOMIC_RELAXED) != hash32 ||
			__atomic_load_n(&entry->relid, __ATOMIC_RELAXED) != key.relid ||
			__atomic_load_n(&entry->dbid, __ATOMIC_RELAXED) != key.dbid ||
			__atomic_load_n(&entry->key_len, __ATOMIC_RELAXED) != key.key.len)
			continue;
		uint64_t bytes = __atomic_load_n(&entry->bytes, __ATOMIC_RELAXED);
		uint64_t tuple_len = __atomic_load_n(&entry->tuple_len, __ATOMIC_RELAXED);
		bool has_json = __atomic_load_n(&entry->has_json, __ATOMIC_RELAXED) != 0;
		uint64_t json_len = has_json ? __atomic_load_n(&entry->json_len, __ATOMIC_RELAXED) : 0;
		if (bytes > ring_bytes_ - offset || sizeof(Entry) + align8(key.key.len) + tuple_len + json_len > bytes)
			return Optimistic::Retry;
		if (!same_key_bytes(entry->key(), key.key.data, key.key.len))
			continue;
		/* The referenced bit is set under the lock only: lookup() sets it, and takes the hit. */
		if (__atomic_load_n(&entry->kind, __ATOMIC_RELAXED) != Live ||
			__atomic_load_n(&entry->referenced, __ATOMIC_RELAXED) == 0)
			return Optimistic::Retry;
		out->tuple = entry->key() + align8(key.key.len); /* not tuple(): key_len may change */
		out->tuple_len = uint32_t(tuple_len);
		out->json = has_json ? out->tuple + tuple_len : nullptr;
		out->json_len = uint32_t(json_len);
		out->xmin = __atomic_load_n(&entry->xmin, __ATOMIC_RELAXED);
		out->slot = __atomic_load_n(&entry->slot, __ATOMIC_RELAXED);
		out->tid_block = __atomic_load_n(&entry->tid_block, __ATOMIC_RELAXED);
		out->tid_offset = __atomic_load_n(&entry->tid_offset, __ATOMIC_RELAXED);
		return Optimistic::Hit;
	}
	return Optimistic::Miss;
}

/*
 * Frees the record at the tail, or moves it to the head if it was referenced.
 *
 * A move needs no free space. When the head is at least `bytes` from the ring's end, the
 * destination starts at the head, in free space, and ends no later than the record does
 * (a head behind the tail's offset has free space only up to the record), so memmove just
 * slides the record back over any overlap. When the head is closer to the ring's end, it
 * is past the tail's offset and the ring's end is free: it is padded and the move goes to
 * offset 0. (Requiring free space instead would evict every referenced record that the
 * tail reaches while the ring is full, such as the first one of each eviction batch.)
 */
void Shard::reclaim_tail(int *reinsertions_left, RemoveObserver observer)
{
	uint64_t tail_offset = tail_ % ring_bytes_;
	Entry *entry = entry_at(tail_offset);
	uint32_t bytes = entry->bytes;

	if (entry->kind == Live) {
		uint32_t *link = link_to_offset(entry->hash32, tail_offset);
		if (entry->referenced && *reinsertions_left > 0) {
			--*reinsertions_left;
			uint64_t head_offset = head_ % ring_bytes_;
			if (ring_bytes_ - head_offset < bytes) {
				Entry *pad = entry_at(head_offset);
				pad->bytes = uint32_t(ring_bytes_ - head_offset);
				pad->kind = Padding;
				head_ += ring_bytes_ - head_offset;
				head_offset = 0;
			}
			Entry *moved = entry_at(head_offset);
			std::memmove(static_cast<void *>(moved), entry, bytes);
			moved->referenced = 0;
			if (link != nullptr)
				*link = uint32_t(head_offset + 1);
			head_ += bytes;
		} else {
			unlink_and_kill(link, entry, RemoveReason::Evicted, observer);
		}
	}
	tail_ += bytes;
}

void Shard::make_room(uint32_t needed, RemoveObserver observer)
{
	int reinsertions_left = reinsertions_per_insert;
	/* Evict in batches, so that most insertions find room at once. */
	uint64_t batch = ring_bytes_ / 32;

	for (;;) {
		uint64_t free_bytes = ring_bytes_ - (head_ - tail_);
		uint64_t head_offset = head_ % ring_bytes_;
		uint64_t contiguous = ring_bytes_ - head_offset;

		if (contiguous < needed) {
			if (free_bytes >= contiguous) {
				/* The entry must not wrap: pad the ring's end and start over at offset 0. */
				Entry *pad = entry_at(head_offset);
				pad->bytes = uint32_t(contiguous);
				pad->kind = Padding;
				head_ += contiguous;
				continue;
			}
		} else if (free_bytes >= needed) {
			return;
		}

		uint64_t goal = needed + batch < ring_bytes_ ? needed + batch : ring_bytes_;
		while (head_ != tail_ && ring_bytes_ - (head_ - tail_) < goal)
			reclaim_tail(&reinsertions_left, observer);
	}
}

InsertResult Shard::insert(const EntryKey &key, uint64_t hash, uint64_t expected_seq,
						   const EntryPayload &payload, RemoveObserver observer)
{
	if (seq_ != expected_seq)
		return InsertResult::Stale;
	/* In 64 bits: entry_bytes() would wrap for lengths summing to near 4 GiB. */
	uint64_t wide_bytes = align8(sizeof(Entry) + align8(key.key.len) + uint64_t(payload.tuple_len) +
								 (payload.json ? payload.json_len : 0));
	if (wide_bytes > max_entry_bytes_ || key.key.len > max_key_bytes)
		return InsertResult::TooBig;
	uint32_t bytes = uint32_t(wide_bytes);

	uint32_t hash32 = uint32_t(hash);
	write_begin();
	if (uint32_t *link = link_to(key, hash32, bucket_mask_))
		unlink_and_kill(link, entry_at(*link - 1), RemoveReason::Replaced, observer);

	make_room(bytes, observer);

	uint64_t offset = head_ % ring_bytes_;
	Entry *entry = entry_at(offset);
	entry->bytes = bytes;
	entry->kind = Live;
	entry->referenced = 0;
	entry->slot = payload.slot;
	entry->hash32 = hash32;
	entry->xmin = payload.xmin;
	entry->tid_block = payload.tid_block;
	entry->tid_offset = payload.tid_offset;
	entry->unused2 = 0;
	entry->tuple_len = payload.tuple_len;
	entry->json_len = payload.json ? payload.json_len : 0;
	entry->has_json = payload.json != nullptr;
	entry->dbid = key.dbid;
	entry->relid = key.relid;
	entry->key_len = uint16_t(key.key.len);
	if (key.key.len > 0)
		std::memcpy(entry->key(), key.key.data, key.key.len);
	if (payload.tuple_len > 0) /* 0: a negative entry (the key has no row) */
		std::memcpy(entry->tuple(), payload.tuple, payload.tuple_len);
	if (payload.json != nullptr)
		std::memcpy(entry->json(), payload.json, payload.json_len);

	uint32_t *bucket = &buckets_of(this)[hash32 & bucket_mask_];
	entry->next = *bucket;
	*bucket = uint32_t(offset + 1);
	head_ += bytes;
	write_end();
	add_live(1, bytes);
	return InsertResult::Inserted;
}

bool Shard::remove(const EntryKey &key, uint64_t hash, uint32_t bucket_mask, RemoveObserver observer)
{
	/* Even when absent: a concurrent fill may hold the old row and must not insert it. Every
	 * insert() compares seq() under the lock the caller holds, so the order within is free: first,
	 * so that the bucket's line is fetched while the store waits for its own. */
	bump_seq();
	if (uint32_t *link = link_to(key, uint32_t(hash), bucket_mask)) {
		write_begin();
		unlink_and_kill(link, entry_at(*link - 1), RemoveReason::Invalidated, observer);
		write_end();
		return true;
	}
	return false;
}

uint64_t Shard::remove_table(uint32_t dbid, uint32_t relid, RemoveObserver observer)
{
	uint64_t removed = 0;
	write_begin();
	for (uint64_t position = tail_; position != head_;) {
		uint64_t offset = position % ring_bytes_;
		Entry *entry = entry_at(offset);
		position += entry->bytes;
		if (entry->kind != Live)
			continue;
		if ((dbid != 0 && entry->dbid != dbid) || (relid != 0 && entry->relid != relid))
			continue;
		unlink_and_kill(link_to_offset(entry->hash32, offset), entry,
						RemoveReason::Invalidated, observer);
		++removed;
	}
	write_end();
	bump_seq();
	return removed;
}

} // namespace local_cache
