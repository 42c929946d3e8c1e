/*
 * shard_ring_test.cpp — Boost.Test cases of local_cache::Shard (extension/shard.cpp):
 * formatting a block as a shard and the sizes that follow (ring, largest entry, entry size),
 * entries too big for the ring, and wrap-around of the ring with entries of varied sizes.
 */
#include "extension/tests/shard_harness.h"

#include <algorithm>
#include <optional>
#include <random>
#include <vector>

using namespace shard_test;

namespace {

/* A row of random size up to the shard's largest entry; sizes near the largest leave big
 * gaps at the ring's end. */
Row random_row(std::mt19937_64 &rng, Shard &shard, uint64_t seed, uint16_t slot)
{
	const uint32_t max_payload = shard.max_entry_bytes() - Shard::entry_bytes(8, 0, 0);
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

BOOST_FIXTURE_TEST_SUITE(shard, Fresh)

/* ================================================================ creation and sizes */

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
			BOOST_TEST(shard->max_entry_bytes() > Shard::entry_bytes(8, 0, 0));
			BOOST_TEST(shard->live_entries() == 0u); /* the lookups above changed nothing */
		}
	}
}

BOOST_AUTO_TEST_CASE(entry_bytes_is_header_plus_payload_rounded_to_8)
{
	uint32_t header = Shard::entry_bytes(8, 0, 0);
	BOOST_TEST(header % 8 == 0u);
	/* An integer key's entry: a 48-byte header (with the row's TID, which SERIALIZABLE reads
	 * predicate-lock) and the key. */
	BOOST_TEST(header <= 56u);
	BOOST_TEST(Shard::entry_bytes(0, 0, 0) == header - 8);
	BOOST_TEST(Shard::entry_bytes(1, 0, 0) == header);
	BOOST_TEST(Shard::entry_bytes(16, 0, 0) == header + 8); /* a uuid */
	BOOST_TEST(Shard::entry_bytes(17, 3, 0) == header + 24);
	BOOST_TEST(Shard::entry_bytes(8, 1, 0) == header + 8);
	BOOST_TEST(Shard::entry_bytes(8, 8, 0) == header + 8);
	BOOST_TEST(Shard::entry_bytes(8, 9, 0) == header + 16);
	BOOST_TEST(Shard::entry_bytes(8, 5, 4) == header + 16);
	BOOST_TEST(Shard::entry_bytes(8, 0, 8) == header + 8);
}

BOOST_AUTO_TEST_CASE(entries_over_max_entry_bytes_are_too_big)
{
	ShardMemory shard(64 << 10);
	const uint32_t max = shard->max_entry_bytes();
	const uint32_t header = Shard::entry_bytes(8, 0, 0);
	const uint32_t largest_tuple = max - header;
	BOOST_REQUIRE(Shard::entry_bytes(8, largest_tuple, 0) == max);

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

/* ================================================================ wrap-around */

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

BOOST_AUTO_TEST_SUITE_END()
