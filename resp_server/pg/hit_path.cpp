/*
 * hit_path.cpp — cache hits without a transaction (hit_path.h): what earlier transactions
 * learned, trusted while the catalog epoch they learned it at is current; PgCacheHits, and
 * serve_hits for the row reader's GET and MGET.
 */
#include "resp_server/pg/hit_path.h"

#include "extension/settings.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/transaction.h"

extern "C" {
#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/memutils.h"
}

#include <cstdlib>
#include <new>
#include <optional>
#include <type_traits>

namespace local_cache::resp {

namespace {

/* The catalog epoch at which the last transaction confirmed the prefix map and `readers`. */
uint64 learned_epoch = 0;

/* Tables a role was found to be allowed to read (relinfo_open passed) at learned_epoch. */
struct Reader {
	Oid relid;
	Oid role;
};
constexpr int kMaxReaders = 256;
Reader readers[kMaxReaders];
int nreaders = 0;
int next_reader = 0; /* the slot a new reader replaces when all are taken */

bool known_reader(Oid relid, Oid role)
{
	for (int r = 0; r < nreaders; r++)
		if (readers[r].relid == relid && readers[r].role == role)
			return true;
	return false;
}

/* Where hits are copied: memcpy only while the entry is read (under the shard lock, or validated
 * by its version), so nothing there can fail. Grown between attempts; given back when it grew
 * past a megabyte. */
char *hit_bytes = nullptr;
size_t hit_capacity = 0;

/* Where a key's bytes are made from its text (key_from_text), before its lookup; with more than
 * one key, each at its own offset (ResolvedKey). */
char *key_buffer = nullptr;
size_t key_buffer_capacity = 0;

/*
 * A key of a request of several, made before any is looked up, so that the shard headers and
 * buckets of all of them, then the first entries of those buckets, are prefetched first and their
 * cache misses overlap (one key alone keeps the plain path). Its
 * bytes are at `offset` of key_buffer, which may move while later keys are made.
 */
struct ResolvedKey {
	StoreKey key;
	size_t offset;
	bool present; /* false: a nil (no such key or table) */
};
ResolvedKey *resolved = nullptr;
size_t resolved_capacity = 0;

bool ensure_resolved(size_t count)
{
	if (count <= resolved_capacity)
		return true;
	auto *grown = static_cast<ResolvedKey *>(realloc(resolved, count * sizeof(ResolvedKey)));
	if (grown == nullptr)
		return false;
	resolved = grown;
	resolved_capacity = count;
	return true;
}

/* The key's bytes in the table, made in key_buffer at `at`; false when `id` names no key of it. */
bool key_bytes_for(const RelInfo *info, std::string_view id, size_t at, KeyBytes *out, bool *out_of_memory)
{
	size_t needed = at + key_bytes_bound(id.size());
	if (needed > key_buffer_capacity) {
		char *grown = static_cast<char *>(realloc(key_buffer, needed));
		if (grown == nullptr) {
			*out_of_memory = true;
			return false;
		}
		key_buffer = grown;
		key_buffer_capacity = needed;
	}
	return key_from_text(info->key.shape, id, key_buffer + at, out);
}

} // namespace

/* After a transaction begun at catalog epoch `epoch` read relids[0..count) as `role`. */
void learn_readers(uint64 epoch, Oid role, const Oid *relids, size_t count)
{
	if (epoch != learned_epoch) {
		nreaders = 0;
		learned_epoch = epoch;
	}
	for (size_t i = 0; i < count; i++) {
		if (!OidIsValid(relids[i]))
			continue;
		bool known = false;
		for (int r = 0; r < nreaders && !known; r++)
			known = readers[r].relid == relids[i] && readers[r].role == role;
		if (known)
			continue;
		if (nreaders < kMaxReaders) {
			readers[nreaders++] = {relids[i], role};
		} else {
			readers[next_reader] = {relids[i], role};
			next_reader = (next_reader + 1) % kMaxReaders;
		}
	}
}

namespace {

enum class HitsOutcome { AllHits, ShortOfRoom, NotAllHits };

/*
 * What both hit paths share: the checks that let a key be answered without a transaction, and
 * the lookups. key_at(i) gives key i (nullopt: it does not parse, a nil); out.row(i, json) and
 * out.nil(i) receive the answers in key order — row() while the entry is read, where it may only
 * copy into room it already has, returning false when it has not (ShortOfRoom: the caller makes
 * room and runs it again). The entry is read without the lock first (store_lookup_optimistic):
 * out.undo(out.mark()) takes back a key's answer when that read turns out not to count.
 * tables[i] receives the key's table, negative[i] whether it is a negative hit, for count_hits.
 * Flattened (every call in it inlined, across files too: the library is built with link-time
 * optimization): a request of many keys runs each step (the key's bytes, its hash, the prefetches,
 * the lookup, the reply's bytes) once per key, and their calls were a sizable part of MGET's CPU.
 */
template <typename KeyAt, typename Out>
__attribute__((flatten)) HitsOutcome look_up_hits(Oid role, size_t count, KeyAt &&key_at, Out &out,
												  TableSlotRef *tables, bool *negative)
{
	if (batch.active || !local_cache_enabled || RecoveryInProgress() || !prefixes_valid ||
		learned_epoch != store_catalog_epoch())
		return HitsOutcome::NotAllHits;
	if (key_buffer_capacity > (size_t(1) << 20)) {
		free(key_buffer);
		key_buffer = nullptr;
		key_buffer_capacity = 0;
	}
	if (resolved_capacity > 4096) {
		free(resolved);
		resolved = nullptr;
		resolved_capacity = 0;
	}
	TableSlotRef table{};
	bool short_of_room = false;
	/* Keys of one table usually come together: look the table up once for them. */
	std::string_view last_prefix;
	Oid relid = InvalidOid;
	RelInfo *info = nullptr;
	bool first = true;
	enum class Resolved { Key, Nil, Fail };
	/* Key i's store key, its bytes made at `at` of key_buffer (*used of them). */
	auto resolve = [&](size_t i, size_t at, StoreKey *out, size_t *used) {
		tables[i].slot = -1;
		negative[i] = false;
		std::optional<RowKey> key = key_at(i);
		if (key && (first || key->prefix != last_prefix)) {
			first = false;
			last_prefix = key->prefix;
			relid = relid_for_prefix(key->prefix);
			if (OidIsValid(relid)) {
				if (!known_reader(relid, role))
					return Resolved::Fail;
				info = relinfo_peek(relid);
				if (info == nullptr || !info->cacheable || !info->json_cacheable || !info->capture_settled ||
					!store_capture_unchanged(info->table))
					return Resolved::Fail;
				table = info->table;
			}
		}
		KeyBytes bytes;
		bool out_of_memory = false;
		if (!key || !OidIsValid(relid) || !key_bytes_for(info, key->id, at, &bytes, &out_of_memory))
			return out_of_memory ? Resolved::Fail : Resolved::Nil; /* no such key or table: a missing key */
		tables[i] = table;
		/* Made in place: assigned from a temporary, the StoreKey was copied with wider loads
		 * than the stores that had just written its hash (a store-forwarding stall per key). */
		static_assert(std::is_trivially_destructible_v<StoreKey>, "made over the old one without destroying it");
		::new (out) StoreKey(store_key(MyDatabaseId, relid, bytes));
		*used = bytes.len;
		return Resolved::Key;
	};
	auto look_up = [&](size_t i, const StoreKey &key) {
		/* Without the lock first: what the entry's copy wrote is taken back if it does not count. */
		typename Out::Mark mark = out.mark();
		bool short_before = short_of_room;
		auto visit = [&](const EntryView &view) {
			if (view.tuple_len == 0) {
				/* a negative entry: no row (its deleter committed: see fetch.cpp) */
				negative[i] = true;
				short_of_room |= !out.nil(i);
				return true;
			}
			if (view.json == nullptr)
				return false;
			short_of_room |= !out.row(i, view.json, view.json_len);
			return true;
		};
		auto undo = [&]() {
			out.undo(mark);
			negative[i] = false;
			short_of_room = short_before;
		};
		return store_lookup_optimistic(key, visit, undo);
	};
	if (count == 1 || !ensure_resolved(count)) {
		for (size_t i = 0; i < count; i++) {
			StoreKey key;
			size_t used;
			Resolved r = resolve(i, 0, &key, &used);
			if (r == Resolved::Fail)
				return HitsOutcome::NotAllHits;
			if (r == Resolved::Nil)
				short_of_room |= !out.nil(i);
			else if (!look_up(i, key))
				return HitsOutcome::NotAllHits;
		}
	} else {
		size_t at = 0;
		for (size_t i = 0; i < count; i++) {
			size_t used = 0;
			Resolved r = resolve(i, at, &resolved[i].key, &used);
			if (r == Resolved::Fail)
				return HitsOutcome::NotAllHits;
			resolved[i].present = r == Resolved::Key;
			resolved[i].offset = at;
			at += used;
			if (resolved[i].present)
				store_prefetch(resolved[i].key, Prefetch::Lookup);
		}
		for (size_t i = 0; i < count; i++)
			if (resolved[i].present)
				store_prefetch_entry(resolved[i].key);
		for (size_t i = 0; i < count; i++) {
			if (!resolved[i].present) {
				short_of_room |= !out.nil(i);
				continue;
			}
			resolved[i].key.key.key.data = key_buffer + resolved[i].offset;
			if (!look_up(i, resolved[i].key))
				return HitsOutcome::NotAllHits;
		}
	}
	return short_of_room ? HitsOutcome::ShortOfRoom : HitsOutcome::AllHits;
}

/* Hits copied into hit_bytes, found[i] pointing there (serve_hits). */
struct CopiedHits {
	Found *found;
	size_t used = 0;

	/* What undo() goes back to (found[i] is written again by the retry). */
	using Mark = size_t;
	Mark mark() const { return used; }
	void undo(Mark mark) { used = mark; }

	bool nil(size_t i)
	{
		found[i] = {nullptr, 0, false};
		return true;
	}
	bool row(size_t i, const char *json, uint32 length)
	{
		bool room = used + length <= hit_capacity;
		if (room)
			memcpy(hit_bytes + used, json, length);
		found[i] = {hit_bytes + used, length, false};
		used += length;
		return room;
	}
};

/* Hits encoded into the reply (reply_hits); `needed` bounds what the values take. */
struct RepliedHits {
	ReplyWriter &reply;
	size_t needed = 0;

	struct Mark {
		size_t size, needed;
	};
	Mark mark() const { return {reply.buffer().size(), needed}; }
	void undo(Mark mark)
	{
		reply.buffer().truncate(mark.size);
		needed = mark.needed;
	}

	bool nil(size_t)
	{
		needed += ReplyWriter::in_room_size(0);
		return reply.null_in_room();
	}
	bool row(size_t, const char *json, uint32 length)
	{
		needed += ReplyWriter::in_room_size(length);
		return reply.bulk_in_room(std::string_view(json, length));
	}
};

} // namespace

bool serve_hits(Oid role, const RowKey *keys, size_t count, Found *found, TableSlotRef *tables, bool *negative)
{
	if (hit_capacity > (size_t(1) << 20)) {
		free(hit_bytes);
		hit_bytes = nullptr;
		hit_capacity = 0;
	}
	auto key_at = [keys](size_t i) { return std::optional<RowKey>(keys[i]); };
	for (int attempt = 0; attempt < 2; attempt++) {
		CopiedHits copied{found};
		HitsOutcome outcome = look_up_hits(role, count, key_at, copied, tables, negative);
		if (outcome != HitsOutcome::ShortOfRoom)
			return outcome == HitsOutcome::AllHits;
		if (copied.used > size_t(local_cache_resp_output_buffer_limit))
			return false; /* the slow path answers the error */
		char *grown = static_cast<char *>(realloc(hit_bytes, copied.used));
		if (grown == nullptr)
			return false;
		hit_bytes = grown;
		hit_capacity = copied.used;
	}
	return false;
}

PgCacheHits::PgCacheHits()
{
	start_session_runtime();
}

bool PgCacheHits::reply_hits(const Session &session, const std::string_view *keys, size_t count, ReplyWriter &reply)
{
	Oid role = Oid(session.role->id);
	ReplyBuffer &buffer = reply.buffer();
	size_t start = buffer.size();
	auto key_at = [keys](size_t i) { return parse_row_key(keys[i]); };
	/* A GET or a short MGET keeps its bookkeeping on the stack: allocating it in results_context
	 * was about 4% of a pipelined GET's CPU. Plain data, so an ereport may unwind past it. */
	constexpr size_t kStackKeys = 64;
	static_assert(std::is_trivially_destructible_v<TableSlotRef>);
	TableSlotRef stack_tables[kStackKeys];
	bool stack_negative[kStackKeys];
	TableSlotRef *tables = count <= kStackKeys ? stack_tables : nullptr;
	bool *negative = count <= kStackKeys ? stack_negative : nullptr;
	for (int attempt = 0; attempt < 2; attempt++) {
		RepliedHits replied{reply};
		HitsOutcome outcome = HitsOutcome::NotAllHits;
		PgError error;
		bool ok = outside_transaction([&]() noexcept {
			if (tables == nullptr) {
				MemoryContextReset(results_context);
				tables = results_array<TableSlotRef>(count);
				negative = results_array<bool>(count);
			}
			outcome = look_up_hits(role, count, key_at, replied, tables, negative);
			if (outcome == HitsOutcome::AllHits)
				count_hits(tables, negative, count);
		}, &error);
		if (ok && outcome == HitsOutcome::AllHits)
			return true;
		buffer.truncate(start);
		if (!ok || outcome == HitsOutcome::NotAllHits ||
			replied.needed > size_t(local_cache_resp_output_buffer_limit))
			return false; /* the slow path answers (and the error for too large a reply) */
		buffer.reserve(replied.needed); /* outside any lock and the boundary: may throw */
	}
	return false;
}

/* Counts the hits serve_hits or reply_hits found, one addition per run of keys of the same
 * table; keys without a row (negative entries) count as negative hits too. */
void count_hits(const TableSlotRef *tables, const bool *negative_hit, size_t count)
{
	uint64 hits = 0, negative = 0;
	for (size_t i = 0; i < count; i++) {
		if (tables[i].slot < 0)
			continue;
		hits++;
		negative += negative_hit[i] ? 1 : 0;
		size_t next = i + 1;
		while (next < count && tables[next].slot < 0)
			next++;
		if (next == count || tables[next].slot != tables[i].slot) {
			store_count(tables[i], COUNTER_HITS, hits);
			store_count(tables[i], COUNTER_NEGATIVE_HITS, negative);
			hits = negative = 0;
		}
	}
}

} // namespace local_cache::resp
