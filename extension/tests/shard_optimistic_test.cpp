/*
 * shard_optimistic_test.cpp — Boost.Test cases of Shard::lookup_optimistic (extension/shard.h):
 * that it answers what lookup() answers, asks for the lock whenever it cannot be sure, and,
 * under writers churning the shard in other threads, never hands out a value that was not
 * stored for the key, never reads outside the shard and never loops.
 */
#include "extension/tests/shard_harness.h"

#include <atomic>
#include <mutex>
#include <thread>

using namespace shard_test;

namespace {

/* What lookup_optimistic's visitor copied, as get() copies it. */
struct Seen {
	Optimistic found;
	std::optional<Row> row;
};

Seen get_optimistic(const Shard &shard, const EntryKey &key)
{
	Seen seen{Optimistic::Miss, std::nullopt};
	seen.found = shard.lookup_optimistic(key, hash_entry_key(key), [&](const EntryView &view) { seen.row = row_of(view); });
	return seen;
}

/* The removal observer runs in the middle of a write: what an unlocked reader meets there. */
Shard *g_observed_shard;
EntryKey g_observed_key;
std::vector<Optimistic> g_seen_mid_write;

void look_up_mid_write(uint16_t, uint32_t, RemoveReason)
{
	g_seen_mid_write.push_back(get_optimistic(*g_observed_shard, g_observed_key).found);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(shard_optimistic, Fresh)

BOOST_AUTO_TEST_CASE(finds_what_lookup_finds_once_referenced)
{
	ShardMemory shard(64 << 10);
	const Row rows[] = {make_row(1, 123, 45, 7), make_row(2, 77, no_json, 65535), make_row(3, 0, 0, 1),
						make_row(4, 0, no_json, 0)};
	for (int k = 0; k < 4; k++)
		BOOST_TEST(put(*shard, key_of(k), rows[k]) == InsertResult::Inserted);
	std::string text_key(300, 't');
	BOOST_TEST(put(*shard, bytes_key(text_key), rows[0]) == InsertResult::Inserted);

	for (int k = 0; k < 4; k++) {
		/* Not referenced yet: only lookup() may set the bit, so the lock is asked for. */
		BOOST_TEST(get_optimistic(*shard, key_of(k)).found == Optimistic::Retry);
		BOOST_TEST(get(*shard, key_of(k)) == rows[k]);
		Seen seen = get_optimistic(*shard, key_of(k));
		BOOST_TEST(seen.found == Optimistic::Hit);
		BOOST_TEST(seen.row == rows[k]);
	}
	BOOST_TEST(get_optimistic(*shard, bytes_key(text_key)).found == Optimistic::Retry);
	BOOST_TEST(get(*shard, bytes_key(text_key)) == rows[0]);
	BOOST_TEST(get_optimistic(*shard, bytes_key(text_key)).row == rows[0]);

	/* A replaced entry is a new, unreferenced one. */
	BOOST_TEST(put(*shard, key_of(1), rows[2]) == InsertResult::Inserted);
	BOOST_TEST(get_optimistic(*shard, key_of(1)).found == Optimistic::Retry);
	BOOST_TEST(get(*shard, key_of(1)) == rows[2]);
	BOOST_TEST(get_optimistic(*shard, key_of(1)).row == rows[2]);
}

BOOST_AUTO_TEST_CASE(misses_what_lookup_misses)
{
	ShardMemory shard(64 << 10);
	BOOST_TEST(get_optimistic(*shard, key_of(1)).found == Optimistic::Miss);
	BOOST_TEST(put(*shard, key_of(1), make_row(1, 50)) == InsertResult::Inserted);
	BOOST_TEST(get(*shard, key_of(1)).has_value());
	/* Same key bytes in another table or database, a key of another length, an absent key. */
	BOOST_TEST(get_optimistic(*shard, key_of(1, 11)).found == Optimistic::Miss);
	BOOST_TEST(get_optimistic(*shard, key_of(1, 10, 2)).found == Optimistic::Miss);
	BOOST_TEST(get_optimistic(*shard, bytes_key(std::string(7, '\1'))).found == Optimistic::Miss);
	BOOST_TEST(get_optimistic(*shard, key_of(2)).found == Optimistic::Miss);
	/* The same key under a hash of another bucket is not found either, as with lookup(). */
	EntryView view;
	BOOST_TEST(!shard->lookup(key_of(1), hash_entry_key(key_of(1)) + 1, &view));
	BOOST_TEST(shard->lookup_optimistic(key_of(1), hash_entry_key(key_of(1)) + 1, [](const EntryView &) {
		BOOST_FAIL("visited a miss");
	}) == Optimistic::Miss);

	BOOST_TEST(erase(*shard, key_of(1)));
	BOOST_TEST(get_optimistic(*shard, key_of(1)).found == Optimistic::Miss);
	BOOST_TEST(put(*shard, key_of(3), make_row(3, 50)) == InsertResult::Inserted);
	BOOST_TEST(shard->remove_table(1, 10, record_removal) == 1u);
	BOOST_TEST(get_optimistic(*shard, key_of(3)).found == Optimistic::Miss);
}

/* The observer is called from inside insert() and remove(), after the version went odd. */
BOOST_AUTO_TEST_CASE(retries_while_a_writer_is_at_work)
{
	ShardMemory shard(64 << 10);
	BOOST_TEST(put(*shard, key_of(1), make_row(1, 50)) == InsertResult::Inserted);
	BOOST_TEST(put(*shard, key_of(2), make_row(2, 50)) == InsertResult::Inserted);
	BOOST_TEST(get(*shard, key_of(2)).has_value());
	BOOST_TEST(get_optimistic(*shard, key_of(2)).found == Optimistic::Hit);

	g_observed_shard = shard.shard;
	g_observed_key = key_of(2); /* untouched by the writes below: a hit, were it not for them */
	g_seen_mid_write.clear();
	BOOST_TEST(shard->insert(key_of(1), hash_entry_key(key_of(1)), shard->seq(), payload_of(make_row(5, 50)),
							 look_up_mid_write) == InsertResult::Inserted); /* replaces */
	BOOST_TEST(shard->remove(key_of(1), hash_entry_key(key_of(1)), shard->bucket_mask(), look_up_mid_write));
	BOOST_TEST(put(*shard, key_of(3), make_row(3, 50)) == InsertResult::Inserted);
	BOOST_TEST(shard->remove_table(1, 10, look_up_mid_write) == 2u);
	BOOST_TEST(g_seen_mid_write == std::vector<Optimistic>(4, Optimistic::Retry), boost::test_tools::per_element());
}

/* A write between the first read of the version and the second: the copy does not count. */
BOOST_AUTO_TEST_CASE(retries_when_a_writer_ran_during_the_copy)
{
	ShardMemory shard(64 << 10);
	BOOST_TEST(put(*shard, key_of(1), make_row(1, 50)) == InsertResult::Inserted);
	BOOST_TEST(get(*shard, key_of(1)).has_value());
	bool visited = false;
	Optimistic found = shard->lookup_optimistic(key_of(1), hash_entry_key(key_of(1)), [&](const EntryView &) {
		visited = true;
		BOOST_TEST(put(*shard, key_of(2), make_row(2, 50)) == InsertResult::Inserted);
	});
	BOOST_TEST(visited);
	BOOST_TEST(found == Optimistic::Retry);
	BOOST_TEST(get_optimistic(*shard, key_of(1)).found == Optimistic::Hit);

	/* A miss that a write overtook is not a miss either. */
	Optimistic missed = shard->lookup_optimistic(key_of(9), hash_entry_key(key_of(9)), [](const EntryView &) {});
	BOOST_TEST(missed == Optimistic::Miss);
	/* An invalidation of an absent key writes nothing an unlocked reader reads. */
	BOOST_TEST(!erase(*shard, key_of(9)));
	BOOST_TEST(get_optimistic(*shard, key_of(1)).found == Optimistic::Hit);
}

/*
 * Writers churn a small shard (replacements, invalidations, flushes, and eviction on nearly
 * every insertion) under a mutex standing in for the shard lock, while readers look keys up
 * without it, falling back to the locked lookup as the RESP hit path does. Every value encodes
 * its key and a generation; every answer a reader accepts must be exactly the value stored for
 * that key at some generation already written.
 */
namespace {

constexpr int kKeys = 512;
constexpr int kWriters = 1;
constexpr int kReaders = 2;
constexpr int kWritesPerWriter = 400000;

std::atomic<uint64_t> g_written[kKeys]; /* highest generation written for each key */

/* The value of `key` at `generation`: lengths vary, so entries move and straddle each other. */
Row churn_row(uint64_t key, uint64_t generation)
{
	uint64_t seed = key << 32 | generation;
	uint32_t tuple_len = generation % 7 == 0 ? 0 : uint32_t(16 + (seed * 2654435761u) % 700);
	int json_len = generation % 5 == 0 ? no_json : int(16 + (seed * 40503u) % 900);
	Row row = make_row(seed, tuple_len, json_len, uint16_t(key));
	/* The first 16 bytes say whose value this is. */
	if (tuple_len >= 16) {
		std::memcpy(&row.tuple[0], &key, 8);
		std::memcpy(&row.tuple[8], &generation, 8);
	}
	row.xmin = uint32_t(generation);
	return row;
}

/* Checks a copied answer: Row{} when it is wrong. */
bool stored_value(uint64_t key, const Row &row)
{
	uint64_t generation = row.xmin;
	if (row.slot != key || generation == 0 || generation > g_written[key].load(std::memory_order_acquire))
		return false;
	return row == churn_row(key, generation);
}

} // namespace

BOOST_AUTO_TEST_CASE(unlocked_readers_under_churn_see_only_stored_values)
{
	ShardMemory shard(256 << 10); /* room for a few hundred of the rows: evictions never stop */
	std::mutex lock;
	for (auto &written : g_written)
		written.store(0);
	std::atomic<int> writers_left{kWriters};
	std::atomic<uint64_t> wrong{0}, optimistic_hits{0}, retries{0}, locked_hits{0};
	/* Made here: key_of() interns the key's bytes in a set no thread may insert into. */
	std::vector<EntryKey> keys;
	for (int key = 0; key < kKeys; key++)
		keys.push_back(key_of(key));

	auto writer = [&](uint64_t seed) {
		uint64_t state = seed;
		for (int i = 0; i < kWritesPerWriter; i++) {
			uint64_t r = splitmix64(state);
			uint64_t key = r % kKeys;
			std::lock_guard<std::mutex> guard(lock);
			if (r >> 60 == 0) {
				erase(*shard, keys[key]);
			} else if (r >> 50 == 0) {
				shard->remove_table(1, 10, record_removal);
			} else {
				uint64_t generation = g_written[key].load() + 1;
				g_written[key].store(generation, std::memory_order_release);
				put(*shard, keys[key], churn_row(key, generation));
			}
		}
		writers_left--;
	};
	auto reader = [&](uint64_t seed) {
		uint64_t state = seed;
		while (writers_left.load() > 0) {
			uint64_t key = splitmix64(state) % kKeys;
			Seen seen = get_optimistic(*shard, keys[key]);
			if (seen.found == Optimistic::Hit) {
				optimistic_hits++;
				wrong += !stored_value(key, *seen.row);
				continue;
			}
			if (seen.found == Optimistic::Miss)
				continue;
			retries++;
			std::lock_guard<std::mutex> guard(lock);
			std::optional<Row> row = get(*shard, keys[key]);
			if (row) {
				locked_hits++;
				wrong += !stored_value(key, *row);
			}
		}
	};
	std::vector<std::thread> threads;
	for (int w = 0; w < kWriters; w++)
		threads.emplace_back(writer, 1000 + w);
	for (int r = 0; r < kReaders; r++)
		threads.emplace_back(reader, 2000 + r);
	for (std::thread &thread : threads)
		thread.join();

	BOOST_TEST_MESSAGE("optimistic hits " << optimistic_hits.load() << ", retries " << retries.load()
					   << ", locked hits " << locked_hits.load());
	BOOST_TEST(wrong.load() == 0u);
	BOOST_TEST(optimistic_hits.load() > 0u);
	BOOST_TEST(locked_hits.load() > 0u);
	BOOST_TEST(removals_with(RemoveReason::Evicted) > 0u);
}

BOOST_AUTO_TEST_SUITE_END()
