/*
 * shard_model_test.cpp — Boost.Test case of local_cache::Shard (extension/shard.cpp) that runs
 * random inserts, lookups, removes and table removals against a model of what each key may
 * hold, checking every answer and that the live counters balance with the removal log.
 */
#include "extension/tests/shard_harness.h"

#include <optional>
#include <random>
#include <vector>

using namespace shard_test;

BOOST_FIXTURE_TEST_SUITE(shard, Fresh)

/* ================================================================ model */

BOOST_AUTO_TEST_CASE(randomized_operations_agree_with_a_model)
{
	ShardMemory shard(1 << 20);
	std::mt19937_64 rng(20240601);

	const uint32_t dbs[] = {1, 2};
	const uint32_t rels[] = {10, 11, 12};
	const size_t keys_per_table = 200, tables = 6, slots = 8;
	auto key_at = [&](size_t i) {
		return key_of(int64_t(i % keys_per_table), rels[i / keys_per_table % 3], dbs[i / (3 * keys_per_table)]);
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

BOOST_AUTO_TEST_SUITE_END()
