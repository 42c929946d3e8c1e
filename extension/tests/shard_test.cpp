/*
 * shard_test.cpp — Boost.Test unit tests of local_cache::Shard (extension/shard.cpp).
 *
 * A shard is plain memory, so each test formats a std::vector<uint64_t> (8-byte aligned)
 * and drives the shard directly. The removal observer is a plain function pointer, so it
 * records into one global log that every test case starts afresh (see Fresh below).
 */
#define BOOST_TEST_MODULE shard
#include <boost/test/unit_test.hpp>

#include "shard.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace local_cache;

namespace local_cache {

std::ostream &operator<<(std::ostream &os, RemoveReason reason)
{
	switch (reason) {
	case RemoveReason::Evicted: return os << "Evicted";
	case RemoveReason::Invalidated: return os << "Invalidated";
	case RemoveReason::Replaced: return os << "Replaced";
	}
	return os << "RemoveReason(" << int(reason) << ")";
}

std::ostream &operator<<(std::ostream &os, InsertResult result)
{
	switch (result) {
	case InsertResult::Inserted: return os << "Inserted";
	case InsertResult::Stale: return os << "Stale";
	case InsertResult::TooBig: return os << "TooBig";
	}
	return os << "InsertResult(" << int(result) << ")";
}

} // namespace local_cache

namespace {

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

uint64_t splitmix64(uint64_t &state)
{
	uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* `len` bytes determined by `seed` alone: two rows with different seeds differ. */
std::string pattern(uint64_t seed, uint32_t len)
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

	uint32_t bytes() const { return Shard::entry_bytes(tuple.size(), has_json ? json.size() : 0); }
};

bool operator==(const Row &a, const Row &b)
{
	return a.tuple == b.tuple && a.has_json == b.has_json && a.json == b.json &&
		a.xmin == b.xmin && a.slot == b.slot;
}

std::ostream &operator<<(std::ostream &os, const Row &row)
{
	os << "Row{tuple_len=" << row.tuple.size();
	if (row.has_json)
		os << " json_len=" << row.json.size();
	else
		os << " no json";
	return os << " xmin=" << row.xmin << " slot=" << row.slot << "}";
}

std::ostream &operator<<(std::ostream &os, const std::optional<Row> &row)
{
	return row ? os << *row : os << "absent";
}

constexpr int no_json = -1;

/* A row whose content, xmin and slot all derive from `seed`. */
Row make_row(uint64_t seed, uint32_t tuple_len, int json_len = no_json, uint16_t slot = 0)
{
	Row row;
	row.tuple = pattern(seed, tuple_len);
	if (json_len != no_json) {
		row.has_json = true;
		row.json = pattern(~seed, uint32_t(json_len));
	}
	row.xmin = uint32_t(seed * 2654435761u);
	row.slot = slot;
	return row;
}

EntryPayload payload_of(const Row &row)
{
	EntryPayload payload;
	payload.slot = row.slot;
	payload.xmin = row.xmin;
	payload.tuple = row.tuple.data();
	payload.tuple_len = uint32_t(row.tuple.size());
	payload.json = row.has_json ? row.json.data() : nullptr;
	payload.json_len = uint32_t(row.json.size());
	return payload;
}

EntryKey key_of(int64_t key, uint32_t relid = 10, uint32_t dbid = 1)
{
	return EntryKey{dbid, relid, key};
}

/* ---------------------------------------------------------------- removal log */

struct Removal {
	uint16_t slot;
	uint32_t bytes;
	RemoveReason reason;
};

std::vector<Removal> g_removals;
uint64_t g_removed_bytes;

void record_removal(uint16_t slot, uint32_t bytes, RemoveReason reason)
{
	g_removals.push_back(Removal{slot, bytes, reason});
	g_removed_bytes += bytes;
}

size_t removals_with(RemoveReason reason)
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

InsertResult put(Shard &shard, const EntryKey &key, const Row &row)
{
	return shard.insert(key, hash_entry_key(key), shard.seq(), payload_of(row), record_removal);
}

std::optional<Row> get(Shard &shard, const EntryKey &key, uint64_t hash)
{
	EntryView view;
	std::memset(&view, 0xAB, sizeof view);
	if (!shard.lookup(key, hash, &view))
		return std::nullopt;
	Row row;
	row.tuple.assign(view.tuple, view.tuple_len);
	row.has_json = view.json != nullptr;
	if (row.has_json)
		row.json.assign(view.json, view.json_len);
	row.xmin = view.xmin;
	row.slot = view.slot;
	return row;
}

std::optional<Row> get(Shard &shard, const EntryKey &key)
{
	return get(shard, key, hash_entry_key(key));
}

bool erase(Shard &shard, const EntryKey &key)
{
	return shard.remove(key, hash_entry_key(key), record_removal);
}

/* Equal-sized rows: tuple_len bytes and no JSON. */
constexpr uint32_t small_tuple = 200;

} // namespace

BOOST_FIXTURE_TEST_SUITE(shard, Fresh)

/* ================================================================ creation */

BOOST_AUTO_TEST_CASE(create_rejects_too_small_memory)
{
	std::vector<uint64_t> words(8192 / 8);
	BOOST_TEST(Shard::create(words.data(), 0) == nullptr);
	BOOST_TEST(Shard::create(words.data(), sizeof(Shard)) == nullptr);
	BOOST_TEST(Shard::create(words.data(), 4096) == nullptr);
	BOOST_TEST(Shard::create(words.data(), 8192) != nullptr);
}

BOOST_AUTO_TEST_CASE(fresh_shard_is_empty_and_sized_sanely)
{
	for (size_t bytes : {size_t(8192), size_t(64) << 10, size_t(1) << 20, size_t(4) << 20}) {
		BOOST_TEST_CONTEXT("shard of " << bytes << " bytes")
		{
			/* Garbage in the block must not leak into the formatted shard. */
			std::vector<uint64_t> words(bytes / 8, ~uint64_t(0));
			Shard *shard = Shard::create(words.data(), bytes);
			BOOST_REQUIRE(shard != nullptr);

			BOOST_TEST(shard->seq() == 0u);
			BOOST_TEST(shard->live_entries() == 0u);
			BOOST_TEST(shard->live_bytes() == 0u);
			for (int64_t k = 0; k < 1000; ++k)
				BOOST_TEST(!get(*shard, key_of(k)).has_value());

			uint64_t ring = shard->ring_bytes();
			BOOST_TEST(ring % 8 == 0u);
			BOOST_TEST(ring <= bytes - sizeof(Shard));
			BOOST_TEST(ring >= bytes - bytes / 16 - 256); /* the bucket index is small */
			BOOST_TEST(shard->max_entry_bytes() == ((ring / 8) & ~uint64_t(7)));
			BOOST_TEST(shard->max_entry_bytes() > Shard::entry_bytes(0, 0));
			BOOST_TEST(shard->live_entries() == 0u); /* the lookups above changed nothing */
		}
	}
}

BOOST_AUTO_TEST_CASE(entry_bytes_is_header_plus_payload_rounded_to_8)
{
	uint32_t header = Shard::entry_bytes(0, 0);
	BOOST_TEST(header % 8 == 0u);
	BOOST_TEST(header >= sizeof(EntryKey));
	BOOST_TEST(Shard::entry_bytes(1, 0) == header + 8);
	BOOST_TEST(Shard::entry_bytes(8, 0) == header + 8);
	BOOST_TEST(Shard::entry_bytes(9, 0) == header + 16);
	BOOST_TEST(Shard::entry_bytes(5, 4) == header + 16);
	BOOST_TEST(Shard::entry_bytes(0, 8) == header + 8);
}

/* ================================================================ insert and lookup */

BOOST_AUTO_TEST_CASE(lookup_returns_exactly_what_was_inserted)
{
	ShardMemory shard(64 << 10);
	const Row with_json = make_row(1, 123, 45, 7);
	const Row without_json = make_row(2, 77, no_json, 65535);
	const Row empty_tuple_empty_json = make_row(3, 0, 0, 1);
	const Row empty_everything = make_row(4, 0, no_json, 0);

	BOOST_TEST(put(*shard, key_of(1), with_json) == InsertResult::Inserted);
	BOOST_TEST(put(*shard, key_of(2), without_json) == InsertResult::Inserted);
	BOOST_TEST(put(*shard, key_of(3), empty_tuple_empty_json) == InsertResult::Inserted);
	BOOST_TEST(put(*shard, key_of(4), empty_everything) == InsertResult::Inserted);

	BOOST_TEST(get(*shard, key_of(1)) == with_json);
	BOOST_TEST(get(*shard, key_of(2)) == without_json);
	BOOST_TEST(get(*shard, key_of(3)) == empty_tuple_empty_json);
	BOOST_TEST(get(*shard, key_of(4)) == empty_everything);

	/* The view itself: json is nullptr without JSON, non-null (length 0) with empty JSON. */
	EntryView view;
	BOOST_REQUIRE(shard->lookup(key_of(2), hash_entry_key(key_of(2)), &view));
	BOOST_TEST(view.json == nullptr);
	BOOST_TEST(view.json_len == 0u);
	BOOST_TEST(view.tuple_len == 77u);
	BOOST_TEST(view.xmin == without_json.xmin);
	BOOST_TEST(view.slot == 65535u);
	BOOST_REQUIRE(shard->lookup(key_of(3), hash_entry_key(key_of(3)), &view));
	BOOST_TEST(view.json != nullptr);
	BOOST_TEST(view.json_len == 0u);

	BOOST_TEST(shard->live_entries() == 4u);
	BOOST_TEST(shard->live_bytes() == with_json.bytes() + without_json.bytes() +
			   empty_tuple_empty_json.bytes() + empty_everything.bytes());
	BOOST_TEST(shard->seq() == 0u); /* inserts do not invalidate */
	BOOST_TEST(g_removals.empty());
}

BOOST_AUTO_TEST_CASE(json_length_is_ignored_without_json)
{
	ShardMemory shard(64 << 10);
	Row row = make_row(5, 40);
	EntryPayload payload = payload_of(row);
	payload.json_len = 1000000; /* no json pointer: must not be read or counted */
	BOOST_TEST(shard->insert(key_of(1), hash_entry_key(key_of(1)), 0, payload, record_removal) ==
			   InsertResult::Inserted);
	BOOST_TEST(get(*shard, key_of(1)) == row);
	BOOST_TEST(shard->live_bytes() == Shard::entry_bytes(40, 0));
}

BOOST_AUTO_TEST_CASE(lookup_of_absent_key_misses)
{
	ShardMemory shard(64 << 10);
	BOOST_TEST(!get(*shard, key_of(1)).has_value());
	BOOST_REQUIRE(put(*shard, key_of(1), make_row(1, 10)) == InsertResult::Inserted);
	BOOST_TEST(!get(*shard, key_of(2)).has_value());
	BOOST_TEST(!get(*shard, key_of(-1)).has_value());
	BOOST_TEST(get(*shard, key_of(1)).has_value());
}

BOOST_AUTO_TEST_CASE(keys_differing_in_one_field_are_distinct)
{
	const EntryKey base{1, 2, 3};
	const std::vector<EntryKey> keys = {base, {9, 2, 3}, {1, 9, 3}, {1, 2, 9}, {2, 1, 3}};

	/* With real hashes, and with every key forced into one hash (one bucket, equal hash32). */
	for (bool same_hash : {false, true}) {
		BOOST_TEST_CONTEXT("same_hash=" << same_hash)
		{
			ShardMemory shard(64 << 10);
			auto hash = [&](const EntryKey &k) { return same_hash ? 42 : hash_entry_key(k); };
			for (size_t i = 0; i < keys.size(); ++i) {
				Row row = make_row(100 + i, 16 + i, no_json, uint16_t(i));
				BOOST_TEST(shard->insert(keys[i], hash(keys[i]), shard->seq(), payload_of(row),
										 record_removal) == InsertResult::Inserted);
			}
			BOOST_TEST(shard->live_entries() == keys.size());
			for (size_t i = 0; i < keys.size(); ++i)
				BOOST_TEST(get(*shard, keys[i], hash(keys[i])) ==
						   make_row(100 + i, 16 + i, no_json, uint16_t(i)));

			/* Removing one leaves the others alone. */
			BOOST_TEST(shard->remove(base, hash(base), record_removal));
			BOOST_TEST(!get(*shard, base, hash(base)).has_value());
			for (size_t i = 1; i < keys.size(); ++i)
				BOOST_TEST(get(*shard, keys[i], hash(keys[i])).has_value());
			BOOST_TEST(g_removals.size() == 1u);
			g_removals.clear();
		}
	}
}

BOOST_AUTO_TEST_CASE(insert_of_existing_key_replaces_it)
{
	ShardMemory shard(64 << 10);
	const Row first = make_row(1, 300, 20, 3);
	const Row second = make_row(2, 50, no_json, 4);
	BOOST_REQUIRE(put(*shard, key_of(1), make_row(9, 10)) == InsertResult::Inserted);
	BOOST_REQUIRE(put(*shard, key_of(7), first) == InsertResult::Inserted);
	uint64_t entries = shard->live_entries();

	BOOST_TEST(put(*shard, key_of(7), second) == InsertResult::Inserted);

	BOOST_TEST(get(*shard, key_of(7)) == second);
	BOOST_TEST(shard->live_entries() == entries);
	BOOST_TEST(shard->live_bytes() == make_row(9, 10).bytes() + second.bytes());
	BOOST_REQUIRE(g_removals.size() == 1u);
	BOOST_TEST(g_removals[0].reason == RemoveReason::Replaced);
	BOOST_TEST(g_removals[0].slot == first.slot);
	BOOST_TEST(g_removals[0].bytes == first.bytes());
	BOOST_TEST(get(*shard, key_of(1)) == make_row(9, 10));
}

BOOST_AUTO_TEST_CASE(replacing_again_and_again_reclaims_the_dead_copies)
{
	/* Many times the ring's size goes through one key: the replaced copies are reclaimed
	 * as the tail passes them, silently (they were reported once, as Replaced). */
	ShardMemory shard(64 << 10);
	uint64_t inserted_bytes = 0;
	for (int i = 0; i < 2000; ++i) {
		const Row row = make_row(1000 + i, i % 500, i % 3 ? no_json : i % 100);
		BOOST_REQUIRE(put(*shard, key_of(7), row) == InsertResult::Inserted);
		inserted_bytes += row.bytes();
		BOOST_REQUIRE_EQUAL(shard->live_entries(), 1u);
		BOOST_REQUIRE_EQUAL(shard->live_bytes(), row.bytes());
	}
	BOOST_TEST(inserted_bytes > 4 * shard->ring_bytes());
	BOOST_TEST(get(*shard, key_of(7)) == make_row(2999, 1999 % 500, 1999 % 3 ? no_json : 99));
	BOOST_TEST(removals_with(RemoveReason::Replaced) == 1999u);
	BOOST_TEST(g_removals.size() == 1999u);
	BOOST_TEST(g_removed_bytes == inserted_bytes - shard->live_bytes());
}

/* ================================================================ invalidation */

BOOST_AUTO_TEST_CASE(remove_reports_found_and_always_advances_seq)
{
	ShardMemory shard(64 << 10);
	const Row row = make_row(1, 64, 8, 5);
	BOOST_REQUIRE(put(*shard, key_of(1), row) == InsertResult::Inserted);
	BOOST_REQUIRE(put(*shard, key_of(2), make_row(2, 64)) == InsertResult::Inserted);

	uint64_t seq = shard->seq();
	BOOST_TEST(!erase(*shard, key_of(3)));
	BOOST_TEST(shard->seq() > seq); /* absent: still advances */
	BOOST_TEST(g_removals.empty());

	seq = shard->seq();
	BOOST_TEST(erase(*shard, key_of(1)));
	BOOST_TEST(shard->seq() > seq);
	BOOST_TEST(!get(*shard, key_of(1)).has_value());
	BOOST_TEST(get(*shard, key_of(2)).has_value());
	BOOST_TEST(shard->live_entries() == 1u);
	BOOST_TEST(shard->live_bytes() == make_row(2, 64).bytes());
	BOOST_REQUIRE(g_removals.size() == 1u);
	BOOST_TEST(g_removals[0].reason == RemoveReason::Invalidated);
	BOOST_TEST(g_removals[0].slot == 5u);
	BOOST_TEST(g_removals[0].bytes == row.bytes());

	seq = shard->seq();
	BOOST_TEST(!erase(*shard, key_of(1))); /* already gone */
	BOOST_TEST(shard->seq() > seq);
	BOOST_TEST(g_removals.size() == 1u);
}

BOOST_AUTO_TEST_CASE(insert_with_stale_seq_inserts_nothing)
{
	ShardMemory shard(64 << 10);
	const Row old_row = make_row(1, 32);
	BOOST_REQUIRE(put(*shard, key_of(1), old_row) == InsertResult::Inserted);

	uint64_t read_seq = shard->seq(); /* a fill reads seq() ... */
	erase(*shard, key_of(99));        /* ... an invalidation happens (even of another key) ... */
	uint64_t entries = shard->live_entries(), bytes = shard->live_bytes();

	/* ... and the fill's insert, new key or existing key, is refused. */
	BOOST_TEST(shard->insert(key_of(2), hash_entry_key(key_of(2)), read_seq,
							 payload_of(make_row(2, 32)), record_removal) == InsertResult::Stale);
	BOOST_TEST(shard->insert(key_of(1), hash_entry_key(key_of(1)), read_seq,
							 payload_of(make_row(3, 32)), record_removal) == InsertResult::Stale);
	/* A value from the future is just as stale. */
	BOOST_TEST(shard->insert(key_of(2), hash_entry_key(key_of(2)), shard->seq() + 1,
							 payload_of(make_row(2, 32)), record_removal) == InsertResult::Stale);

	BOOST_TEST(!get(*shard, key_of(2)).has_value());
	BOOST_TEST(get(*shard, key_of(1)) == old_row);
	BOOST_TEST(shard->live_entries() == entries);
	BOOST_TEST(shard->live_bytes() == bytes);
	BOOST_TEST(g_removals.empty());

	/* With the current seq it goes in. */
	BOOST_TEST(put(*shard, key_of(2), make_row(2, 32)) == InsertResult::Inserted);
	BOOST_TEST(get(*shard, key_of(2)) == make_row(2, 32));
}

BOOST_AUTO_TEST_CASE(entries_over_max_entry_bytes_are_too_big)
{
	ShardMemory shard(64 << 10);
	const uint32_t max = shard->max_entry_bytes();
	const uint32_t header = Shard::entry_bytes(0, 0);
	const uint32_t largest_tuple = max - header;
	BOOST_REQUIRE(Shard::entry_bytes(largest_tuple, 0) == max);

	const Row largest = make_row(1, largest_tuple);
	BOOST_TEST(put(*shard, key_of(1), largest) == InsertResult::Inserted);
	BOOST_TEST(get(*shard, key_of(1)) == largest);

	BOOST_TEST(put(*shard, key_of(2), make_row(2, largest_tuple + 1)) == InsertResult::TooBig);
	/* JSON counts too. */
	BOOST_TEST(put(*shard, key_of(3), make_row(3, largest_tuple - 8, 9)) == InsertResult::TooBig);
	BOOST_TEST(put(*shard, key_of(4), make_row(4, largest_tuple - 8, 8)) == InsertResult::Inserted);

	/* A too-big replacement leaves the old entry alone. */
	BOOST_TEST(put(*shard, key_of(1), make_row(5, largest_tuple + 100)) == InsertResult::TooBig);
	BOOST_TEST(get(*shard, key_of(1)) == largest);

	BOOST_TEST(!get(*shard, key_of(2)).has_value());
	BOOST_TEST(!get(*shard, key_of(3)).has_value());
	BOOST_TEST(shard->live_entries() == 2u);
	BOOST_TEST(g_removals.empty());
}

BOOST_AUTO_TEST_CASE(huge_lengths_are_too_big_not_wrapped_around)
{
	/* Lengths whose sum with the header overflows 32 bits must not wrap to a small size. */
	ShardMemory shard(64 << 10);
	char bytes[16] = {};
	EntryPayload payload{0, 0, bytes, 0xFFFFFFF0u, nullptr, 0};
	BOOST_TEST(shard->insert(key_of(1), hash_entry_key(key_of(1)), 0, payload, record_removal) ==
			   InsertResult::TooBig);
	payload = EntryPayload{0, 0, bytes, 0x80000000u, bytes, 0x80000000u};
	BOOST_TEST(shard->insert(key_of(1), hash_entry_key(key_of(1)), 0, payload, record_removal) ==
			   InsertResult::TooBig);
	BOOST_TEST(shard->live_entries() == 0u);
}

BOOST_AUTO_TEST_CASE(remove_table_removes_one_table_one_database_or_everything)
{
	ShardMemory shard(256 << 10);
	auto fill_key = [](uint32_t db, uint32_t rel, int64_t k) { return EntryKey{db, rel, k}; };
	auto seed_of = [](const EntryKey &k) { return uint64_t(k.dbid) * 1000000 + k.relid * 1000 + k.key; };
	std::vector<EntryKey> all;
	for (uint32_t db : {1u, 2u})
		for (uint32_t rel : {10u, 20u})
			for (int64_t k = 0; k < 10; ++k)
				all.push_back(fill_key(db, rel, k));
	/* The same relid in another database, and keys equal across tables. */
	for (const EntryKey &k : all)
		BOOST_REQUIRE(put(*shard, k, make_row(seed_of(k), 40, no_json, uint16_t(k.relid))) ==
					  InsertResult::Inserted);

	auto present = [&](uint32_t db, uint32_t rel) {
		int n = 0;
		for (int64_t k = 0; k < 10; ++k) {
			EntryKey key = fill_key(db, rel, k);
			std::optional<Row> row = get(*shard, key);
			if (row) {
				BOOST_TEST(*row == make_row(seed_of(key), 40, no_json, uint16_t(rel)));
				++n;
			}
		}
		return n;
	};

	uint64_t seq = shard->seq();
	BOOST_TEST(shard->remove_table(1, 10, record_removal) == 10u);
	BOOST_TEST(shard->seq() > seq);
	BOOST_TEST(present(1, 10) == 0);
	BOOST_TEST(present(1, 20) == 10);
	BOOST_TEST(present(2, 10) == 10);
	BOOST_TEST(present(2, 20) == 10);
	BOOST_TEST(shard->live_entries() == 30u);
	BOOST_TEST(g_removals.size() == 10u);
	BOOST_TEST(removals_with(RemoveReason::Invalidated) == 10u);
	for (const Removal &r : g_removals)
		BOOST_TEST(r.slot == 10u);

	seq = shard->seq();
	BOOST_TEST(shard->remove_table(1, 10, record_removal) == 0u); /* nothing left: still bumps */
	BOOST_TEST(shard->seq() > seq);

	seq = shard->seq();
	BOOST_TEST(shard->remove_table(2, 0, record_removal) == 20u); /* a whole database */
	BOOST_TEST(shard->seq() > seq);
	BOOST_TEST(present(1, 20) == 10);
	BOOST_TEST(present(2, 10) == 0);
	BOOST_TEST(present(2, 20) == 0);
	BOOST_TEST(shard->live_entries() == 10u);
	BOOST_TEST(shard->live_bytes() == 10u * Shard::entry_bytes(40, 0));

	seq = shard->seq();
	BOOST_TEST(shard->remove_table(0, 0, record_removal) == 10u); /* everything */
	BOOST_TEST(shard->seq() > seq);
	BOOST_TEST(present(1, 20) == 0);
	BOOST_TEST(shard->live_entries() == 0u);
	BOOST_TEST(shard->live_bytes() == 0u);
	BOOST_TEST(g_removals.size() == 40u);
	BOOST_TEST(removals_with(RemoveReason::Invalidated) == 40u);
	BOOST_TEST(g_removed_bytes == 40u * Shard::entry_bytes(40, 0));

	/* The emptied shard works as before. */
	BOOST_TEST(put(*shard, fill_key(1, 10, 1), make_row(7, 40)) == InsertResult::Inserted);
	BOOST_TEST(get(*shard, fill_key(1, 10, 1)) == make_row(7, 40));
}

BOOST_AUTO_TEST_CASE(remove_table_skips_dead_and_replaced_entries)
{
	ShardMemory shard(64 << 10);
	for (int64_t k = 0; k < 20; ++k)
		BOOST_REQUIRE(put(*shard, key_of(k), make_row(k, 30)) == InsertResult::Inserted);
	for (int64_t k = 0; k < 20; k += 2)
		BOOST_REQUIRE(put(*shard, key_of(k), make_row(100 + k, 60)) == InsertResult::Inserted);
	for (int64_t k = 1; k < 20; k += 4)
		BOOST_REQUIRE(erase(*shard, key_of(k)));
	g_removals.clear();

	BOOST_TEST(shard->remove_table(1, 10, record_removal) == 15u);
	BOOST_TEST(g_removals.size() == 15u);
	BOOST_TEST(shard->live_entries() == 0u);
	BOOST_TEST(shard->live_bytes() == 0u);
}

/* ================================================================ eviction */

BOOST_AUTO_TEST_CASE(unreferenced_entries_are_evicted_oldest_first)
{
	ShardMemory shard(64 << 10);
	const uint32_t entry = Shard::entry_bytes(small_tuple, 0);
	const int inserts = 2000; /* about 8 times what the ring holds */
	uint64_t inserted_bytes = 0;

	/* No lookups here: they would set referenced bits. The slot names the insert. */
	for (int i = 0; i < inserts; ++i) {
		BOOST_REQUIRE(put(*shard, key_of(i), make_row(i, small_tuple, no_json, uint16_t(i))) ==
					  InsertResult::Inserted);
		inserted_bytes += entry;
		BOOST_REQUIRE(shard->live_bytes() <= shard->ring_bytes());
		BOOST_REQUIRE(shard->live_entries() == uint64_t(i + 1) - g_removals.size());
	}

	const size_t evicted = g_removals.size();
	BOOST_TEST(evicted > size_t(inserts) / 2);
	for (size_t i = 0; i < evicted; ++i) {
		BOOST_TEST_CONTEXT("removal " << i)
		{
			BOOST_TEST(g_removals[i].reason == RemoveReason::Evicted);
			BOOST_TEST(g_removals[i].slot == i); /* FIFO */
			BOOST_TEST(g_removals[i].bytes == entry);
		}
	}
	BOOST_TEST(g_removed_bytes == inserted_bytes - shard->live_bytes());
	BOOST_TEST(shard->live_entries() == inserts - evicted);
	BOOST_TEST(shard->live_bytes() == shard->live_entries() * entry);
	/* It is reasonably full: at most one eviction batch and padding short of the ring. */
	BOOST_TEST(shard->live_bytes() + shard->ring_bytes() / 32 + 2 * entry >= shard->ring_bytes());

	/* The survivors are exactly the newest inserts, intact. */
	for (int i = 0; i < inserts; ++i) {
		std::optional<Row> row = get(*shard, key_of(i));
		if (size_t(i) < evicted)
			BOOST_TEST(!row.has_value());
		else
			BOOST_TEST(row == make_row(i, small_tuple, no_json, uint16_t(i)));
	}
}

BOOST_AUTO_TEST_CASE(filling_far_beyond_capacity_keeps_the_newest_and_the_books)
{
	ShardMemory shard(64 << 10);
	std::mt19937_64 rng(7);
	const uint32_t max_tuple = shard->max_entry_bytes() - Shard::entry_bytes(0, 0);
	uint64_t inserted_bytes = 0;

	for (int i = 0; i < 5000; ++i) {
		const Row row = make_row(i, uint32_t(rng() % (max_tuple + 1)), no_json, uint16_t(i % 5));
		BOOST_REQUIRE(put(*shard, key_of(i), row) == InsertResult::Inserted);
		inserted_bytes += row.bytes();
		BOOST_REQUIRE(shard->live_bytes() <= shard->ring_bytes());
		BOOST_REQUIRE_EQUAL(g_removed_bytes, inserted_bytes - shard->live_bytes());
		/* The most recent insert is never what got evicted. */
		std::optional<Row> got = get(*shard, key_of(i));
		BOOST_REQUIRE(got.has_value());
		BOOST_REQUIRE(*got == row);
	}
	BOOST_TEST(g_removals.size() == 5000 - shard->live_entries());
	BOOST_TEST(removals_with(RemoveReason::Evicted) == g_removals.size());
}

/* ================================================================ CLOCK */

namespace {

/* Inserts equal-sized rows key_of(first), key_of(first + 1), ... into a shard that has not
 * wrapped yet, leaving room for exactly one more; returns how many. */
int fill_without_eviction(Shard &shard, int64_t first)
{
	const uint32_t entry = Shard::entry_bytes(small_tuple, 0);
	int n = 0;
	while (shard.live_bytes() + entry <= shard.ring_bytes() - entry) {
		BOOST_REQUIRE(put(shard, key_of(first + n), make_row(first + n, small_tuple)) ==
					  InsertResult::Inserted);
		++n;
	}
	BOOST_REQUIRE(g_removals.empty());
	return n;
}

/* Then inserts key_of(next++) while they fit: the ring has no room left for the next. */
void fill_last_gap(Shard &shard, int64_t &next)
{
	const uint32_t entry = Shard::entry_bytes(small_tuple, 0);
	while (shard.ring_bytes() - shard.live_bytes() >= entry) {
		BOOST_REQUIRE(put(shard, key_of(next), make_row(next, small_tuple)) == InsertResult::Inserted);
		++next;
	}
	BOOST_REQUIRE(g_removals.empty());
}

} // namespace

BOOST_AUTO_TEST_CASE(referenced_oldest_entry_gets_a_second_chance)
{
	ShardMemory shard(64 << 10);
	int64_t newest = fill_without_eviction(*shard, 0);
	fill_last_gap(*shard, newest); /* the ring is now full: no room to copy anything to */

	BOOST_REQUIRE(get(*shard, key_of(0)).has_value()); /* reference the oldest */
	BOOST_REQUIRE(put(*shard, key_of(newest), make_row(newest, small_tuple)) ==
				  InsertResult::Inserted);

	BOOST_TEST(!g_removals.empty());
	BOOST_TEST(get(*shard, key_of(0)) == make_row(0, small_tuple)); /* moved, intact */
	BOOST_TEST(!get(*shard, key_of(1)).has_value());                  /* evicted instead */
	BOOST_TEST(get(*shard, key_of(newest)) == make_row(newest, small_tuple));
}

BOOST_AUTO_TEST_CASE(second_chance_clears_the_referenced_bit)
{
	/* Key 0 (slot 1) is referenced, then moved by the insert of key `newer` (slot 2): it now
	 * sits just before `newer`. Without another lookup it must go before `newer` does. */
	const uint16_t moved_slot = 1, newer_slot = 2;
	ShardMemory shard(64 << 10);
	BOOST_REQUIRE(put(*shard, key_of(0), make_row(0, small_tuple, no_json, moved_slot)) ==
				  InsertResult::Inserted);
	int64_t next = 1 + fill_without_eviction(*shard, 1);
	BOOST_REQUIRE(get(*shard, key_of(0)).has_value());

	fill_last_gap(*shard, next);
	const int64_t newer = next++;
	BOOST_REQUIRE(put(*shard, key_of(newer), make_row(newer, small_tuple, no_json, newer_slot)) ==
				  InsertResult::Inserted);
	BOOST_REQUIRE(!g_removals.empty());
	/* Nothing with slot 1 or 2 has gone yet: key 0 was moved, not evicted. */
	for (const Removal &r : g_removals)
		BOOST_TEST(r.slot == 0u);

	/* Keep inserting, no lookups, until `newer` is evicted (one more lap at most). */
	const int64_t limit = 3 * next; /* next is about what the ring holds */
	while (std::none_of(g_removals.begin(), g_removals.end(),
						[&](const Removal &r) { return r.slot == newer_slot; })) {
		BOOST_REQUIRE(next < limit);
		BOOST_REQUIRE(put(*shard, key_of(next), make_row(next, small_tuple)) == InsertResult::Inserted);
		++next;
	}

	auto position_of = [&](uint16_t slot) {
		return std::find_if(g_removals.begin(), g_removals.end(),
							[&](const Removal &r) { return r.slot == slot; }) - g_removals.begin();
	};
	BOOST_TEST(position_of(moved_slot) < position_of(newer_slot));
	BOOST_TEST(!get(*shard, key_of(0)).has_value());
}

BOOST_AUTO_TEST_CASE(referenced_entries_survive_a_wave_that_evicts_their_peers)
{
	ShardMemory shard(512 << 10);
	const int n = fill_without_eviction(*shard, 0);

	/* Reference every tenth entry of the middle half: one insertion's batch of evictions
	 * meets far fewer of them than reinsertions_per_insert. */
	std::set<int64_t> referenced;
	for (int64_t k = n / 4; k < 3 * n / 4; ++k)
		if (k % 10 == 3) {
			BOOST_REQUIRE(get(*shard, key_of(k)).has_value());
			referenced.insert(k);
		}
	const size_t unreferenced = n - referenced.size();

	/* Insert new keys until as many entries have been evicted as were left unreferenced. */
	for (int64_t k = 1000000; g_removals.size() < unreferenced; ++k)
		BOOST_REQUIRE(put(*shard, key_of(k), make_row(k, small_tuple)) == InsertResult::Inserted);

	BOOST_TEST(removals_with(RemoveReason::Evicted) == g_removals.size());
	for (int64_t k = 0; k < n; ++k) {
		BOOST_TEST_CONTEXT("key " << k)
		{
			std::optional<Row> row = get(*shard, key_of(k));
			if (referenced.count(k))
				BOOST_TEST(row == make_row(k, small_tuple)); /* moved, data intact */
			else
				BOOST_TEST(!row.has_value());
		}
	}
}

BOOST_AUTO_TEST_CASE(entries_moved_again_and_again_stay_intact)
{
	/* Every entry is referenced all the time: entries are moved over and over, across
	 * the ring's end, and must come out intact every time. */
	ShardMemory shard(64 << 10);
	std::mt19937_64 rng(3);
	std::vector<Row> rows;
	std::vector<bool> gone;
	for (int64_t k = 0; k < 3000; ++k) {
		rows.push_back(make_row(k, uint32_t(rng() % 700), rng() % 2 ? int(rng() % 300) : no_json,
								uint16_t(k)));
		gone.push_back(false);
		BOOST_REQUIRE(put(*shard, key_of(k), rows.back()) == InsertResult::Inserted);
		for (int64_t j = std::max<int64_t>(0, k - 300); j <= k; ++j) {
			if (gone[j])
				continue;
			std::optional<Row> row = get(*shard, key_of(j));
			if (!row)
				gone[j] = true;
			else
				BOOST_REQUIRE(*row == rows[j]);
		}
		BOOST_REQUIRE(!gone[k]);
	}
}

/* ================================================================ wrap-around */

namespace {

/* A row of random size up to the shard's largest entry; sizes near the largest leave big
 * gaps at the ring's end. */
Row random_row(std::mt19937_64 &rng, Shard &shard, uint64_t seed, uint16_t slot)
{
	const uint32_t max_payload = shard.max_entry_bytes() - Shard::entry_bytes(0, 0);
	uint32_t total;
	switch (rng() % 3) {
	case 0: total = uint32_t(rng() % 65); break;
	case 1: total = uint32_t(rng() % 2001); break;
	default: total = max_payload / 2 + uint32_t(rng() % (max_payload / 2 + 1)); break;
	}
	if (rng() % 2 == 0)
		return make_row(seed, total, no_json, slot);
	uint32_t json = uint32_t(rng() % (total + 1));
	return make_row(seed, total - json, int(json), slot);
}

} // namespace

BOOST_AUTO_TEST_CASE(wrap_around_with_varied_sizes_keeps_entries_intact)
{
	ShardMemory shard(256 << 10);
	std::mt19937_64 rng(11);
	std::vector<Row> rows;
	std::vector<bool> gone;
	uint64_t inserted_bytes = 0;

	for (int64_t k = 0; k < 3000; ++k) {
		rows.push_back(random_row(rng, *shard, k, uint16_t(k % 7)));
		gone.push_back(false);
		BOOST_REQUIRE(put(*shard, key_of(k), rows.back()) == InsertResult::Inserted);
		inserted_bytes += rows.back().bytes();
		BOOST_REQUIRE(shard->live_bytes() <= shard->ring_bytes());
		BOOST_REQUIRE(get(*shard, key_of(k)) == rows.back());

		if (k % 20 != 0)
			continue;
		/* Every present entry is intact; the shard's counters add up to what is present;
		 * an entry once missing never comes back. */
		uint64_t entries = 0, bytes = 0;
		for (int64_t j = 0; j <= k; ++j) {
			std::optional<Row> row = get(*shard, key_of(j));
			if (!row) {
				gone[j] = true;
				continue;
			}
			BOOST_REQUIRE_MESSAGE(!gone[j], "key " << j << " came back");
			BOOST_REQUIRE_MESSAGE(*row == rows[j], "key " << j << " corrupted");
			++entries;
			bytes += rows[j].bytes();
		}
		BOOST_REQUIRE_EQUAL(entries, shard->live_entries());
		BOOST_REQUIRE_EQUAL(bytes, shard->live_bytes());
	}
	BOOST_TEST(g_removed_bytes == inserted_bytes - shard->live_bytes());
	BOOST_TEST(std::count(gone.begin(), gone.end(), true) > 2500);
}

BOOST_AUTO_TEST_CASE(wrap_around_without_lookups_stays_fifo)
{
	ShardMemory shard(256 << 10);
	std::mt19937_64 rng(12);
	std::vector<Row> rows;
	for (int64_t k = 0; k < 3000; ++k) {
		rows.push_back(random_row(rng, *shard, k, uint16_t(k)));
		BOOST_REQUIRE(put(*shard, key_of(k), rows.back()) == InsertResult::Inserted);
		BOOST_REQUIRE(shard->live_bytes() <= shard->ring_bytes());
	}
	const size_t evicted = g_removals.size();
	for (size_t i = 0; i < evicted; ++i) {
		BOOST_REQUIRE_EQUAL(g_removals[i].slot, i);
		BOOST_REQUIRE_EQUAL(g_removals[i].bytes, rows[i].bytes());
	}
	for (int64_t k = 0; k < 3000; ++k) {
		std::optional<Row> row = get(*shard, key_of(k));
		if (size_t(k) < evicted)
			BOOST_REQUIRE(!row.has_value());
		else
			BOOST_REQUIRE(row == rows[k]);
	}
	BOOST_TEST(shard->live_entries() == 3000 - evicted);
}

/* ================================================================ model */

BOOST_AUTO_TEST_CASE(randomized_operations_agree_with_a_model)
{
	ShardMemory shard(1 << 20);
	std::mt19937_64 rng(20240601);

	const uint32_t dbs[] = {1, 2};
	const uint32_t rels[] = {10, 11, 12};
	const size_t keys_per_table = 200, tables = 6, slots = 8;
	auto key_at = [&](size_t i) {
		return EntryKey{dbs[i / (3 * keys_per_table)], rels[i / keys_per_table % 3],
						int64_t(i % keys_per_table)};
	};

	/* What was last inserted per key, and whether it may still be there (false after a
	 * remove, a remove_table, or a lookup miss: eviction is for good). */
	struct Expected {
		bool maybe_present = false;
		Row row;
	};
	std::vector<Expected> model(tables * keys_per_table);
	std::vector<size_t> recent(64, 0);
	size_t recent_next = 0;

	uint64_t inserted_entries = 0, inserted_bytes = 0, version = 0;
	std::vector<uint64_t> inserted_by_slot(slots, 0);
	uint64_t hits = 0, removes_found = 0, stale = 0, tables_removed = 0;

	auto check_lookup = [&](size_t i, int op) {
		std::optional<Row> got = get(*shard, key_at(i));
		if (!got) {
			model[i].maybe_present = false;
			return;
		}
		if (!model[i].maybe_present)
			BOOST_FAIL("op " << op << ": key " << i << " found after removal or a miss");
		if (!(*got == model[i].row))
			BOOST_FAIL("op " << op << ": key " << i << " holds " << *got << ", expected "
							 << model[i].row);
		++hits;
	};

	for (int op = 0; op < 200000; ++op) {
		const uint64_t seq_before = shard->seq();
		const size_t removals_before = g_removals.size();
		const uint64_t r = rng() % 100000;
		const size_t i = rng() % model.size();

		if (r < 42000) { /* insert, now and then with a stale seq */
			Row row = make_row(++version, uint32_t(rng() % 2001),
							   rng() % 2 ? int(rng() % 501) : no_json, uint16_t(rng() % slots));
			if (r < 1000) {
				uint64_t wrong = seq_before == 0 || rng() % 2 ? seq_before + 1 : seq_before - 1;
				if (shard->insert(key_at(i), hash_entry_key(key_at(i)), wrong, payload_of(row),
								  record_removal) != InsertResult::Stale)
					BOOST_FAIL("op " << op << ": insert with a stale seq was not refused");
				if (g_removals.size() != removals_before)
					BOOST_FAIL("op " << op << ": refused insert removed something");
				++stale;
			} else {
				if (put(*shard, key_at(i), row) != InsertResult::Inserted)
					BOOST_FAIL("op " << op << ": insert failed");
				++inserted_entries;
				inserted_bytes += row.bytes();
				inserted_by_slot[row.slot] += row.bytes();
				model[i] = Expected{true, std::move(row)};
				recent[recent_next++ % recent.size()] = i;
			}
		} else if (r < 77000) { /* lookup of any key */
			check_lookup(i, op);
		} else if (r < 87000) { /* lookup of a recent insert: sets its referenced bit */
			check_lookup(recent[rng() % recent.size()], op);
		} else if (r < 96000) { /* remove */
			bool found = erase(*shard, key_at(i));
			if (found && !model[i].maybe_present)
				BOOST_FAIL("op " << op << ": remove found key " << i << " that should be gone");
			if (shard->seq() <= seq_before)
				BOOST_FAIL("op " << op << ": remove did not advance seq");
			model[i].maybe_present = false;
			removes_found += found;
		} else if (r < 96100) { /* remove_table: one table, a database, or everything */
			uint32_t dbid = dbs[rng() % 2], relid = rels[rng() % 3];
			if (r >= 96080)
				relid = 0;
			if (r >= 96095)
				dbid = 0;
			uint64_t could_be_present = 0;
			for (size_t j = 0; j < model.size(); ++j) {
				EntryKey k = key_at(j);
				if ((dbid == 0 || k.dbid == dbid) && (relid == 0 || k.relid == relid)) {
					could_be_present += model[j].maybe_present;
					model[j].maybe_present = false;
				}
			}
			uint64_t removed = shard->remove_table(dbid, relid, record_removal);
			if (removed > could_be_present)
				BOOST_FAIL("op " << op << ": remove_table removed " << removed << " > "
								 << could_be_present);
			if (shard->seq() <= seq_before)
				BOOST_FAIL("op " << op << ": remove_table did not advance seq");
			++tables_removed;
		} else {
			check_lookup(i, op);
		}

		if (shard->live_entries() != inserted_entries - g_removals.size() ||
			shard->live_bytes() != inserted_bytes - g_removed_bytes)
			BOOST_FAIL("op " << op << ": live counters disagree with the observer");
		if (shard->live_bytes() > shard->ring_bytes())
			BOOST_FAIL("op " << op << ": live_bytes exceeds the ring");
		if (r >= 42000 && r < 87000 && shard->seq() != seq_before)
			BOOST_FAIL("op " << op << ": a lookup changed seq");
	}

	/* At the end: what is present is what the model allows, and the books balance. */
	uint64_t entries = 0, bytes = 0;
	std::vector<uint64_t> live_by_slot(slots, 0), removed_by_slot(slots, 0);
	for (size_t i = 0; i < model.size(); ++i) {
		uint64_t hits_before = hits;
		check_lookup(i, -1);
		if (hits != hits_before) {
			++entries;
			bytes += model[i].row.bytes();
			live_by_slot[model[i].row.slot] += model[i].row.bytes();
		}
	}
	for (const Removal &removal : g_removals)
		removed_by_slot[removal.slot] += removal.bytes;

	BOOST_TEST(shard->live_entries() == entries);
	BOOST_TEST(shard->live_bytes() == bytes);
	for (size_t s = 0; s < slots; ++s)
		BOOST_TEST(inserted_by_slot[s] - removed_by_slot[s] == live_by_slot[s]);

	/* The run exercised what it claims to. */
	BOOST_TEST_MESSAGE("model: " << hits << " hits, " << removals_with(RemoveReason::Evicted)
								 << " evicted, " << removals_with(RemoveReason::Replaced)
								 << " replaced, " << removals_with(RemoveReason::Invalidated)
								 << " invalidated, " << removes_found << " removes found, "
								 << stale << " stale, " << tables_removed << " remove_table");
	BOOST_TEST(hits > 20000u);
	BOOST_TEST(removals_with(RemoveReason::Evicted) > 10000u);
	BOOST_TEST(removals_with(RemoveReason::Replaced) > 5000u);
	BOOST_TEST(removes_found > 1000u);
	BOOST_TEST(stale > 500u);
	BOOST_TEST(tables_removed > 50u);
}

/* ================================================================ hashing */

BOOST_AUTO_TEST_CASE(hash_is_deterministic_and_tells_fields_apart)
{
	const EntryKey key{1, 2, 3};
	const EntryKey copy = key;
	BOOST_TEST(hash_entry_key(key) == hash_entry_key(copy));
	BOOST_TEST(hash_entry_key(key) == hash_entry_key(EntryKey{1, 2, 3}));
	BOOST_TEST(hash_entry_key(key) != hash_entry_key(EntryKey{2, 2, 3}));
	BOOST_TEST(hash_entry_key(key) != hash_entry_key(EntryKey{1, 3, 3}));
	BOOST_TEST(hash_entry_key(key) != hash_entry_key(EntryKey{1, 2, 4}));
	BOOST_TEST(hash_entry_key(key) != hash_entry_key(EntryKey{2, 1, 3})); /* swapped ids */
	BOOST_TEST(hash_entry_key(EntryKey{0, 0, 0}) != 0u);
}

BOOST_AUTO_TEST_CASE(hash_spreads_sequential_keys_over_shards_and_buckets)
{
	const int n = 10000;
	std::vector<int> per_shard(64, 0);
	std::set<uint64_t> buckets, hashes;
	for (int64_t k = 0; k < n; ++k) {
		uint64_t hash = hash_entry_key(EntryKey{5, 16384, k});
		++per_shard[hash >> 58]; /* top 6 bits: 64 shards */
		buckets.insert(hash & 1023);
		hashes.insert(hash);
	}
	BOOST_TEST(hashes.size() == size_t(n));
	BOOST_TEST(buckets.size() >= 1000u);
	for (int s = 0; s < 64; ++s)
		BOOST_TEST_CONTEXT("shard " << s)
		{
			BOOST_TEST(per_shard[s] > n / 64 / 2);
			BOOST_TEST(per_shard[s] < n / 64 * 2);
		}

	/* Key 1 of many tables spreads too. */
	std::set<uint64_t> shards_of_tables;
	for (uint32_t relid = 16384; relid < 16384 + 2000; ++relid)
		shards_of_tables.insert(hash_entry_key(EntryKey{5, relid, 1}) >> 58);
	BOOST_TEST(shards_of_tables.size() == 64u);
}

BOOST_AUTO_TEST_SUITE_END()
