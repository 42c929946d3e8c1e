/*
 * shard_lookup_test.cpp — Boost.Test cases of local_cache::Shard (extension/shard.cpp): insert
 * and lookup, replacing an entry of the same key, and the key hash that picks shard and bucket.
 */
#include "extension/tests/shard_harness.h"

#include <set>
#include <string>
#include <vector>

using namespace shard_test;
using namespace std::string_literals;

BOOST_FIXTURE_TEST_SUITE(shard, Fresh)

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
	BOOST_TEST(view.tid_block == without_json.tid_block); /* the TID comes back as it went in */
	BOOST_TEST(view.tid_offset == without_json.tid_offset);
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
	BOOST_TEST(shard->live_bytes() == Shard::entry_bytes(8, 40, 0));
}

/* A negative entry (the key has no row): no tuple, no JSON, only the header and the xmin. */
BOOST_AUTO_TEST_CASE(entry_without_a_tuple)
{
	ShardMemory shard(64 << 10);
	EntryPayload payload = {3, 777, nullptr, 0, nullptr, 0};
	BOOST_TEST(shard->insert(key_of(9), hash_entry_key(key_of(9)), 0, payload, record_removal) ==
			   InsertResult::Inserted);
	EntryView seen{};
	BOOST_TEST(shard->lookup(key_of(9), hash_entry_key(key_of(9)), &seen));
	BOOST_TEST(seen.tuple_len == 0u);
	BOOST_TEST(seen.json == nullptr);
	BOOST_TEST(seen.xmin == 777u);
	BOOST_TEST(seen.slot == 3u);
	BOOST_TEST(shard->live_bytes() == Shard::entry_bytes(8, 0, 0));
	BOOST_TEST(Shard::entry_bytes(8, 0, 0) <= 64u); /* small: key and header */
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
	const EntryKey base = key_of(3, 2, 1);
	const std::vector<EntryKey> keys = {base, key_of(3, 2, 9), key_of(3, 9, 1), key_of(9, 2, 1), key_of(3, 1, 2)};

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
			BOOST_TEST(shard->remove(base, hash(base), shard->bucket_mask(), record_removal));
			BOOST_TEST(!get(*shard, base, hash(base)).has_value());
			for (size_t i = 1; i < keys.size(); ++i)
				BOOST_TEST(get(*shard, keys[i], hash(keys[i])).has_value());
			BOOST_TEST(g_removals.size() == 1u);
			g_removals.clear();
		}
	}
}

BOOST_AUTO_TEST_CASE(variable_length_keys_are_told_apart_by_every_byte_and_their_length)
{
	/* Text, uuid and composite keys: prefixes of each other, equal but for length or one
	 * byte, empty, embedded zero bytes, and one of 8 bytes that equals an integer key's. */
	int64_t one = 1;
	const std::vector<std::string> texts = {
		"", "a", "a\0"s, "ab", "ba", "abcdefgh", "abcdefgh\0"s, "abcdefghi",
		std::string(16, 'u'), std::string(300, 'x'), std::string(301, 'x'),
		std::string(reinterpret_cast<const char *>(&one), 8)};
	for (bool same_hash : {false, true}) {
		BOOST_TEST_CONTEXT("same_hash=" << same_hash)
		{
			ShardMemory shard(256 << 10);
			auto hash = [&](const EntryKey &k) { return same_hash ? 7 : hash_entry_key(k); };
			for (size_t i = 0; i < texts.size(); ++i) {
				EntryKey key = bytes_key(texts[i]);
				BOOST_TEST(shard->insert(key, hash(key), shard->seq(), payload_of(make_row(i, 24 + i)),
										 record_removal) == InsertResult::Inserted);
			}
			BOOST_TEST(shard->live_entries() == texts.size());
			uint64_t bytes = 0;
			for (size_t i = 0; i < texts.size(); ++i) {
				EntryKey key = bytes_key(texts[i]);
				BOOST_TEST(get(*shard, key, hash(key)) == make_row(i, 24 + i));
				bytes += Shard::entry_bytes(uint32_t(texts[i].size()), 24 + i, 0);
			}
			BOOST_TEST(shard->live_bytes() == bytes);
			/* The 8-byte text and the integer key 1 are the same bytes: the same entry. */
			BOOST_TEST(get(*shard, key_of(1), hash(key_of(1))) == make_row(texts.size() - 1, 24 + texts.size() - 1));
			BOOST_TEST(!get(*shard, bytes_key("abc"), hash(bytes_key("abc"))).has_value());
			BOOST_TEST(!get(*shard, bytes_key("a", 11), hash(bytes_key("a", 11))).has_value());

			EntryKey gone = bytes_key("abcdefgh");
			BOOST_TEST(shard->remove(gone, hash(gone), shard->bucket_mask(), record_removal));
			for (size_t i = 0; i < texts.size(); ++i) {
				EntryKey key = bytes_key(texts[i]);
				BOOST_TEST(get(*shard, key, hash(key)).has_value() == (texts[i] != "abcdefgh"));
			}
			g_removals.clear();
		}
	}
}

BOOST_AUTO_TEST_CASE(keys_longer_than_max_key_bytes_are_never_cached)
{
	ShardMemory shard(1 << 20);
	std::string longest(Shard::max_key_bytes, 'k');
	BOOST_TEST(put(*shard, bytes_key(longest), make_row(1, 10)) == InsertResult::Inserted);
	BOOST_TEST(get(*shard, bytes_key(longest)) == make_row(1, 10));
	std::string too_long(Shard::max_key_bytes + 1, 'k');
	BOOST_TEST(put(*shard, bytes_key(too_long), make_row(2, 10)) == InsertResult::TooBig);
	BOOST_TEST(!get(*shard, bytes_key(too_long)).has_value());
	/* Its first max_key_bytes bytes are another key. */
	BOOST_TEST(get(*shard, bytes_key(longest)) == make_row(1, 10));
	uint64_t seq = shard->seq();
	BOOST_TEST(!erase(*shard, bytes_key(too_long)));
	BOOST_TEST(shard->seq() > seq);
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

/* ================================================================ prefetching */

BOOST_AUTO_TEST_CASE(prefetching_changes_nothing_a_lookup_sees)
{
	/* The store prefetches with one bucket mask for all its shards, learned from one of them. */
	ShardMemory other(256 << 10);
	ShardMemory shard(256 << 10);
	BOOST_TEST(shard->bucket_mask() == other->bucket_mask());
	const uint32_t mask = other->bucket_mask();

	const Row row = make_row(1, 60, 20, 3);
	BOOST_TEST(put(*shard, key_of(1), row) == InsertResult::Inserted);
	BOOST_TEST(erase(*shard, key_of(2)) == false);
	for (int id : {1, 2, 3}) { /* present, removed (its bucket empty again), never there */
		const uint64_t hash = hash_entry_key(key_of(id));
		shard->prefetch(hash, mask, false);
		shard->prefetch(hash, mask, true);
		shard->prefetch_entry(hash);
	}
	BOOST_TEST(get(*shard, key_of(1)) == row);
	BOOST_TEST(!get(*shard, key_of(2)));
	BOOST_TEST(!get(*shard, key_of(3)));
	BOOST_TEST(shard->seq() == 1u); /* the one remove only */
	BOOST_TEST(shard->live_entries() == 1u);
}

/* ================================================================ hashing */

BOOST_AUTO_TEST_CASE(hash_is_deterministic_and_tells_fields_apart)
{
	const EntryKey key = key_of(3, 2, 1);
	const EntryKey copy = key;
	BOOST_TEST(hash_entry_key(key) == hash_entry_key(copy));
	BOOST_TEST(hash_entry_key(key) == hash_entry_key(key_of(3, 2, 1)));
	BOOST_TEST(hash_entry_key(key) != hash_entry_key(key_of(3, 2, 2)));
	BOOST_TEST(hash_entry_key(key) != hash_entry_key(key_of(3, 3, 1)));
	BOOST_TEST(hash_entry_key(key) != hash_entry_key(key_of(4, 2, 1)));
	BOOST_TEST(hash_entry_key(key) != hash_entry_key(key_of(3, 1, 2))); /* swapped ids */
	BOOST_TEST(hash_entry_key(key_of(0, 0, 0)) != 0u);
}

BOOST_AUTO_TEST_CASE(hash_spreads_sequential_keys_over_shards_and_buckets)
{
	const int n = 10000;
	std::vector<int> per_shard(64, 0);
	std::set<uint64_t> buckets, hashes;
	for (int64_t k = 0; k < n; ++k) {
		uint64_t hash = hash_entry_key(key_of(k, 16384, 5));
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

	/* So do keys of other lengths that differ in a few bytes only: uuids numbered in their last
	 * bytes, short text keys. */
	for (int kind = 0; kind < 2; kind++) {
		std::vector<int> per_shard_of_kind(64, 0);
		std::set<uint64_t> distinct;
		for (int k = 0; k < n; ++k) {
			std::string bytes = kind == 0 ? std::string(14, '\0') + char(k >> 8) + char(k) : "k" + std::to_string(k);
			uint64_t hash = hash_entry_key(bytes_key(bytes, 16384, 5));
			++per_shard_of_kind[hash >> 58];
			distinct.insert(hash);
		}
		BOOST_TEST(distinct.size() == size_t(n));
		for (int s = 0; s < 64; ++s)
			BOOST_TEST_CONTEXT("kind " << kind << " shard " << s)
			{
				BOOST_TEST(per_shard_of_kind[s] > n / 64 / 2);
				BOOST_TEST(per_shard_of_kind[s] < n / 64 * 2);
			}
	}

	/* Key 1 of many tables spreads too. */
	std::set<uint64_t> shards_of_tables;
	for (uint32_t relid = 16384; relid < 16384 + 2000; ++relid)
		shards_of_tables.insert(hash_entry_key(key_of(1, relid, 5)) >> 58);
	BOOST_TEST(shards_of_tables.size() == 64u);
}

BOOST_AUTO_TEST_SUITE_END()
