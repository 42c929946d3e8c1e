/*
 * shard_invalidation_test.cpp — Boost.Test cases of local_cache::Shard (extension/shard.cpp):
 * removing a key and the sequence number that makes a concurrent fill's insert stale, and
 * removing a whole table, a database or everything, with the live counters after it.
 */
#include "extension/tests/shard_harness.h"

#include <optional>
#include <vector>

using namespace shard_test;

BOOST_FIXTURE_TEST_SUITE(shard, Fresh)

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

/* ================================================================ table removal */

BOOST_AUTO_TEST_CASE(remove_table_removes_one_table_one_database_or_everything)
{
	ShardMemory shard(256 << 10);
	auto fill_key = [](uint32_t db, uint32_t rel, int64_t k) { return key_of(k, rel, db); };
	auto seed_of = [](const EntryKey &k) {
		int64_t key;
		std::memcpy(&key, k.key.data, sizeof key);
		return uint64_t(k.dbid) * 1000000 + k.relid * 1000 + key;
	};
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
	BOOST_TEST(shard->live_bytes() == 10u * Shard::entry_bytes(8, 40, 0));

	seq = shard->seq();
	BOOST_TEST(shard->remove_table(0, 0, record_removal) == 10u); /* everything */
	BOOST_TEST(shard->seq() > seq);
	BOOST_TEST(present(1, 20) == 0);
	BOOST_TEST(shard->live_entries() == 0u);
	BOOST_TEST(shard->live_bytes() == 0u);
	BOOST_TEST(g_removals.size() == 40u);
	BOOST_TEST(removals_with(RemoveReason::Invalidated) == 40u);
	BOOST_TEST(g_removed_bytes == 40u * Shard::entry_bytes(8, 40, 0));

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

BOOST_AUTO_TEST_SUITE_END()
