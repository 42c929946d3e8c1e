/*
 * shard_eviction_test.cpp — Boost.Test cases of local_cache::Shard (extension/shard.cpp):
 * eviction of the oldest entries when the ring is full, and CLOCK's second chance, which copies
 * a referenced entry to the ring's head with its bit cleared instead of evicting it.
 */
#include "extension/tests/shard_harness.h"

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <vector>

using namespace shard_test;

namespace {

/* Inserts equal-sized rows key_of(first), key_of(first + 1), ... into a shard that has not
 * wrapped yet, leaving room for exactly one more; returns how many. */
int fill_without_eviction(Shard &shard, int64_t first)
{
	const uint32_t entry = Shard::entry_bytes(8, small_tuple, 0);
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
	const uint32_t entry = Shard::entry_bytes(8, small_tuple, 0);
	while (shard.ring_bytes() - shard.live_bytes() >= entry) {
		BOOST_REQUIRE(put(shard, key_of(next), make_row(next, small_tuple)) == InsertResult::Inserted);
		++next;
	}
	BOOST_REQUIRE(g_removals.empty());
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(shard, Fresh)

/* ================================================================ eviction */

BOOST_AUTO_TEST_CASE(unreferenced_entries_are_evicted_oldest_first)
{
	ShardMemory shard(64 << 10);
	const uint32_t entry = Shard::entry_bytes(8, small_tuple, 0);
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
	const uint32_t max_tuple = shard->max_entry_bytes() - Shard::entry_bytes(8, 0, 0);
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

BOOST_AUTO_TEST_SUITE_END()
