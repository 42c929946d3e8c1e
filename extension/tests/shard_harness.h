/*
 * shard_harness.h — what the shard_*_test.cpp files share to drive local_cache::Shard
 * (extension/shard.cpp) directly: a shard in plain memory (ShardMemory), rows whose bytes
 * derive from a seed (Row, make_row) and a lookup's view copied into one (row_of), the removal
 * log the observer records into (g_removals) and the fixture that empties it for every test
 * case (Fresh), and put/get/erase calls.
 *
 * A shard is plain memory, so each test formats a std::vector<uint64_t> (8-byte aligned)
 * and drives the shard directly. The removal observer is a plain function pointer, so it
 * records into one global log that every test case starts afresh (see Fresh below).
 */
#pragma once

#include <boost/test/unit_test.hpp>

#include "extension/shard.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <ostream>
#include <string>
#include <vector>

namespace local_cache {

inline std::ostream &operator<<(std::ostream &os, RemoveReason reason)
{
	switch (reason) {
	case RemoveReason::Evicted: return os << "Evicted";
	case RemoveReason::Invalidated: return os << "Invalidated";
	case RemoveReason::Replaced: return os << "Replaced";
	}
	return os << "RemoveReason(" << int(reason) << ")";
}

inline std::ostream &operator<<(std::ostream &os, InsertResult result)
{
	switch (result) {
	case InsertResult::Inserted: return os << "Inserted";
	case InsertResult::Stale: return os << "Stale";
	case InsertResult::TooBig: return os << "TooBig";
	}
	return os << "InsertResult(" << int(result) << ")";
}

inline std::ostream &operator<<(std::ostream &os, Optimistic found)
{
	switch (found) {
	case Optimistic::Hit: return os << "Hit";
	case Optimistic::Miss: return os << "Miss";
	case Optimistic::Retry: return os << "Retry";
	}
	return os << "Optimistic(" << int(found) << ")";
}

} // namespace local_cache

namespace shard_test {

using namespace local_cache;

/* ---------------------------------------------------------------- shard memory */

/* An 8-byte aligned block formatted as a shard. */
struct ShardMemory {
	std::vector<uint64_t> words;
	Shard *shard;

	explicit ShardMemory(size_t bytes) : words(bytes / 8), shard(nullptr)
	{
		shard = Shard::create(words.data(), bytes);
		BOOST_REQUIRE(shard != nullptr);
	}

	Shard &operator*() { return *shard; }
	Shard *operator->() { return shard; }
};

/* ---------------------------------------------------------------- rows */

inline uint64_t splitmix64(uint64_t &state)
{
	uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* `len` bytes determined by `seed` alone: two rows with different seeds differ. */
inline std::string pattern(uint64_t seed, uint32_t len)
{
	std::string bytes(len, '\0');
	uint64_t state = seed;
	uint64_t word = 0;
	for (uint32_t i = 0; i < len; ++i) {
		if (i % 8 == 0)
			word = splitmix64(state);
		bytes[i] = char(word >> (8 * (i % 8)));
	}
	return bytes;
}

/* What the tests insert and what a lookup copies back out. */
struct Row {
	std::string tuple;
	bool has_json = false;
	std::string json;
	uint32_t xmin = 0;
	uint16_t slot = 0;
	uint32_t tid_block = 0;
	uint16_t tid_offset = 0;

	/* In the ring under an integer key. */
	uint32_t bytes() const { return Shard::entry_bytes(8, tuple.size(), has_json ? json.size() : 0); }
};

inline bool operator==(const Row &a, const Row &b)
{
	return a.tuple == b.tuple && a.has_json == b.has_json && a.json == b.json &&
		a.xmin == b.xmin && a.slot == b.slot && a.tid_block == b.tid_block && a.tid_offset == b.tid_offset;
}

inline std::ostream &operator<<(std::ostream &os, const Row &row)
{
	os << "Row{tuple_len=" << row.tuple.size();
	if (row.has_json)
		os << " json_len=" << row.json.size();
	else
		os << " no json";
	return os << " xmin=" << row.xmin << " slot=" << row.slot << " tid=(" << row.tid_block << ","
			  << row.tid_offset << ")}";
}

inline std::ostream &operator<<(std::ostream &os, const std::optional<Row> &row)
{
	return row ? os << *row : os << "absent";
}

constexpr int no_json = -1;

/* A row whose content, xmin and slot all derive from `seed`. */
inline Row make_row(uint64_t seed, uint32_t tuple_len, int json_len = no_json,
					uint16_t slot = 0)
{
	Row row;
	row.tuple = pattern(seed, tuple_len);
	if (json_len != no_json) {
		row.has_json = true;
		row.json = pattern(~seed, uint32_t(json_len));
	}
	row.xmin = uint32_t(seed * 2654435761u);
	row.slot = slot;
	row.tid_block = uint32_t(seed * 40503u + 7);
	row.tid_offset = uint16_t(seed % 291 + 1);
	return row;
}

inline EntryPayload payload_of(const Row &row)
{
	EntryPayload payload;
	payload.slot = row.slot;
	payload.xmin = row.xmin;
	payload.tid_block = row.tid_block;
	payload.tid_offset = row.tid_offset;
	payload.tuple = row.tuple.data();
	payload.tuple_len = uint32_t(row.tuple.size());
	payload.json = row.has_json ? row.json.data() : nullptr;
	payload.json_len = uint32_t(row.json.size());
	return payload;
}

/* Key bytes that live as long as the test program: EntryKey does not own its bytes. */
inline KeyBytes interned(const std::string &bytes)
{
	static std::set<std::string> pool;
	const std::string &kept = *pool.insert(bytes).first;
	return KeyBytes{kept.data(), uint32_t(kept.size())};
}

/* An integer key's bytes: the int64's 8 bytes, as the store keys integer primary keys. */
inline EntryKey key_of(int64_t key, uint32_t relid = 10, uint32_t dbid = 1)
{
	return EntryKey{dbid, relid, interned(std::string(reinterpret_cast<const char *>(&key), sizeof key))};
}

/* A key of any other bytes (text, uuid and composite keys). */
inline EntryKey bytes_key(const std::string &bytes, uint32_t relid = 10, uint32_t dbid = 1)
{
	return EntryKey{dbid, relid, interned(bytes)};
}

/* ---------------------------------------------------------------- removal log */

struct Removal {
	uint16_t slot;
	uint32_t bytes;
	RemoveReason reason;
};

inline std::vector<Removal> g_removals;
inline uint64_t g_removed_bytes;

inline void record_removal(uint16_t slot, uint32_t bytes, RemoveReason reason)
{
	g_removals.push_back(Removal{slot, bytes, reason});
	g_removed_bytes += bytes;
}

inline size_t removals_with(RemoveReason reason)
{
	return size_t(std::count_if(g_removals.begin(), g_removals.end(),
								[&](const Removal &r) { return r.reason == reason; }));
}

/* Every test case starts with an empty removal log. */
struct Fresh {
	Fresh()
	{
		g_removals.clear();
		g_removed_bytes = 0;
	}
};

/* ---------------------------------------------------------------- shard calls */

inline InsertResult put(Shard &shard, const EntryKey &key, const Row &row)
{
	return shard.insert(key, hash_entry_key(key), shard.seq(), payload_of(row), record_removal);
}

/* What a lookup's view says, copied. */
inline Row row_of(const EntryView &view)
{
	Row row;
	row.tuple.assign(view.tuple, view.tuple_len);
	row.has_json = view.json != nullptr;
	if (row.has_json)
		row.json.assign(view.json, view.json_len);
	row.xmin = view.xmin;
	row.slot = view.slot;
	row.tid_block = view.tid_block;
	row.tid_offset = view.tid_offset;
	return row;
}

inline std::optional<Row> get(Shard &shard, const EntryKey &key, uint64_t hash)
{
	EntryView view;
	std::memset(&view, 0xAB, sizeof view);
	if (!shard.lookup(key, hash, &view))
		return std::nullopt;
	return row_of(view);
}

inline std::optional<Row> get(Shard &shard, const EntryKey &key)
{
	return get(shard, key, hash_entry_key(key));
}

inline bool erase(Shard &shard, const EntryKey &key)
{
	return shard.remove(key, hash_entry_key(key), shard.bucket_mask(), record_removal);
}

/* Equal-sized rows: tuple_len bytes and no JSON. */
constexpr uint32_t small_tuple = 200;

} // namespace shard_test
