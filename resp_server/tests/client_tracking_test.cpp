/*
 * client_tracking_test.cpp — Boost.Test cases of the CLIENT TRACKING table
 * (resp_server/commands/client_tracking.cpp), one per rule: default mode (tracked once per
 * connection, forgotten at its invalidation, re-tracked by a new read), OPTIN / OPTOUT with
 * CLIENT CACHING, NOLOOP, REDIRECT, BCAST and its prefixes (with the feed's readable rule),
 * connections that stopped tracking, table and full flushes, eviction past max_keys, batching,
 * and the sizes INFO shows; and a randomized run against a model of what each connection may
 * have cached (no committed change to it is ever left without its invalidation).
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/commands/client_tracking.h"
#include "resp_server/commands/data_source.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

using namespace local_cache::resp;

namespace {

const std::function<bool(uint64_t)> kEveryone = [](uint64_t) { return true; };

Session tracking_session(uint64_t id)
{
	Session s;
	s.id = id;
	s.tracking.on = true;
	return s;
}

void read(TrackingTable &table, const Session &s, std::vector<std::string_view> keys)
{
	table.note_read(s, keys.data(), keys.size());
}

std::vector<Invalidation> take(TrackingTable &table)
{
	std::vector<Invalidation> out;
	table.take_invalidations(out);
	return out;
}

std::set<std::string> keys_of(const Invalidation &invalidation)
{
	return std::set<std::string>(invalidation.keys.begin(), invalidation.keys.end());
}

uint64_t target_for(const Session &s)
{
	return s.tracking.redirect != 0 ? s.tracking.redirect : s.id;
}

const Invalidation *for_client(const std::vector<Invalidation> &all, uint64_t tracking_client)
{
	for (const Invalidation &invalidation : all)
		if (invalidation.tracking_client == tracking_client)
			return &invalidation;
	return nullptr;
}

} // namespace

BOOST_AUTO_TEST_SUITE(client_tracking)

BOOST_AUTO_TEST_CASE(default_mode_tracks_once_until_invalidated)
{
	TrackingTable table;
	Session a = tracking_session(1), b = tracking_session(2);
	table.session_started_tracking(a);
	table.session_started_tracking(b);
	read(table, a, {"items:1", "items:2", "items:404"});
	read(table, a, {"items:1"}); /* the same connection, the same key: one item */
	read(table, b, {"items:1"});
	TrackingStats stats = table.stats();
	BOOST_TEST(stats.keys == 3u);
	BOOST_TEST(stats.items == 4u);
	BOOST_TEST(stats.prefixes == 0u);

	table.key_changed("items:1", 0, kEveryone);
	table.key_changed("items:9", 0, kEveryone); /* read by nobody: nothing */
	std::vector<Invalidation> sent = take(table);
	BOOST_REQUIRE(sent.size() == 2u);
	for (const Invalidation &invalidation : sent) {
		BOOST_TEST(invalidation.target == invalidation.tracking_client);
		BOOST_TEST(!invalidation.flush_all);
		BOOST_TEST((keys_of(invalidation) == std::set<std::string>{"items:1"}));
	}
	BOOST_TEST(table.stats().keys == 2u);
	BOOST_TEST(table.stats().items == 2u);

	/* Forgotten: a second change sends nothing until the key is read again. */
	table.key_changed("items:1", 0, kEveryone);
	BOOST_TEST(take(table).empty());
	read(table, b, {"items:1"});
	table.key_changed("items:1", 0, kEveryone);
	sent = take(table);
	BOOST_REQUIRE(sent.size() == 1u);
	BOOST_TEST(sent[0].tracking_client == 2u);

	/* Keys that answered nil are tracked like any other. */
	table.key_changed("items:404", 0, kEveryone);
	sent = take(table);
	BOOST_REQUIRE(sent.size() == 1u);
	BOOST_TEST((keys_of(sent[0]) == std::set<std::string>{"items:404"}));
}

BOOST_AUTO_TEST_CASE(nothing_tracked_when_off_or_bcast)
{
	TrackingTable table;
	Session off;
	off.id = 3;
	read(table, off, {"items:1"});
	Session bcast = tracking_session(4);
	bcast.tracking.bcast = true;
	table.session_started_tracking(bcast);
	read(table, bcast, {"items:1"});
	BOOST_TEST(table.stats().keys == 0u);
}

BOOST_AUTO_TEST_CASE(optin_and_optout_follow_client_caching)
{
	TrackingTable table;
	Session in = tracking_session(1);
	in.tracking.optin = true;
	table.session_started_tracking(in);
	read(table, in, {"items:1"});
	BOOST_TEST(table.stats().keys == 0u);
	in.tracking.caching_yes = true;
	read(table, in, {"items:2"});
	BOOST_TEST(table.stats().keys == 1u);

	Session out = tracking_session(2);
	out.tracking.optout = true;
	table.session_started_tracking(out);
	out.tracking.caching_no = true;
	read(table, out, {"items:3"});
	BOOST_TEST(table.stats().keys == 1u);
	out.tracking.caching_no = false;
	read(table, out, {"items:4"});
	BOOST_TEST(table.stats().keys == 2u);

	table.key_changed("items:2", 0, kEveryone);
	table.key_changed("items:4", 0, kEveryone);
	std::vector<Invalidation> sent = take(table);
	BOOST_REQUIRE(sent.size() == 2u);
	BOOST_TEST((keys_of(*for_client(sent, 1)) == std::set<std::string>{"items:2"}));
	BOOST_TEST((keys_of(*for_client(sent, 2)) == std::set<std::string>{"items:4"}));
}

BOOST_AUTO_TEST_CASE(noloop_skips_the_writer_and_forgets_its_key)
{
	TrackingTable table;
	Session loop = tracking_session(1), noloop = tracking_session(2);
	noloop.tracking.noloop = true;
	table.session_started_tracking(loop);
	table.session_started_tracking(noloop);
	read(table, loop, {"items:1"});
	read(table, noloop, {"items:1"});

	/* Each writes the key: the one without NOLOOP hears of its own write, the other not. */
	table.key_changed("items:1", 2, kEveryone);
	std::vector<Invalidation> sent = take(table);
	BOOST_REQUIRE(sent.size() == 1u);
	BOOST_TEST(sent[0].tracking_client == 1u);
	BOOST_TEST(table.stats().keys == 0u); /* the writer must read it again, as in Redis */

	read(table, loop, {"items:1"});
	table.key_changed("items:1", 1, kEveryone);
	sent = take(table);
	BOOST_REQUIRE(sent.size() == 1u);
	BOOST_TEST(sent[0].tracking_client == 1u);

	/* BCAST honours NOLOOP too. */
	Session bcast = tracking_session(3);
	bcast.tracking.bcast = true;
	bcast.tracking.noloop = true;
	table.session_started_tracking(bcast);
	table.key_changed("users:7", 3, kEveryone);
	BOOST_TEST(take(table).empty());
	table.key_changed("users:7", 1, kEveryone);
	BOOST_TEST(take(table).size() == 1u);
}

BOOST_AUTO_TEST_CASE(redirect_targets_another_connection)
{
	TrackingTable table;
	Session a = tracking_session(1), b = tracking_session(2);
	a.tracking.redirect = 99;
	b.tracking.redirect = 99;
	table.session_started_tracking(a);
	table.session_started_tracking(b);
	read(table, a, {"items:1"});
	read(table, b, {"items:1", "items:2"});
	table.key_changed("items:1", 0, kEveryone);
	table.key_changed("items:2", 0, kEveryone);
	std::vector<Invalidation> sent = take(table);
	/* One per (target, tracking connection): the target learns whose keys they were. */
	BOOST_REQUIRE(sent.size() == 2u);
	for (const Invalidation &invalidation : sent)
		BOOST_TEST(invalidation.target == 99u);
	BOOST_TEST((keys_of(*for_client(sent, 1)) == std::set<std::string>{"items:1"}));
	BOOST_TEST((keys_of(*for_client(sent, 2)) == std::set<std::string>{"items:1", "items:2"}));
}

BOOST_AUTO_TEST_CASE(bcast_prefixes)
{
	TrackingTable table;
	Session items = tracking_session(1), every = tracking_session(2), users = tracking_session(3);
	items.tracking.bcast = every.tracking.bcast = users.tracking.bcast = true;
	items.tracking.prefixes = {"items:1", "lines:"};
	every.tracking.prefixes = {""};
	users.tracking.prefixes = {}; /* no PREFIX: every key */
	table.session_started_tracking(items);
	table.session_started_tracking(every);
	table.session_started_tracking(users);
	BOOST_TEST(table.stats().prefixes == 3u); /* "items:1", "lines:", "" */

	/* No read needed; prefixes match the whole key's name ("items:1" matches items:12). */
	table.key_changed("items:12", 0, kEveryone);
	table.key_changed("items:2", 0, kEveryone);
	table.key_changed("items:12", 0, kEveryone); /* twice in one batch: once */
	std::vector<Invalidation> sent = take(table);
	BOOST_REQUIRE(sent.size() == 3u);
	BOOST_TEST((keys_of(*for_client(sent, 1)) == std::set<std::string>{"items:12"}));
	BOOST_TEST(for_client(sent, 1)->keys.size() == 1u);
	BOOST_TEST((keys_of(*for_client(sent, 2)) == std::set<std::string>{"items:12", "items:2"}));
	BOOST_TEST((keys_of(*for_client(sent, 3)) == std::set<std::string>{"items:12", "items:2"}));

	/* BCAST keeps announcing: nothing is forgotten. */
	table.key_changed("items:12", 0, kEveryone);
	BOOST_TEST(take(table).size() == 3u);

	/* The feed's tenant rule: a connection whose role may not read the table hears nothing. */
	table.key_changed("lines:1", 0, [](uint64_t client) { return client != 1; });
	sent = take(table);
	BOOST_TEST(sent.size() == 2u);
	BOOST_TEST(for_client(sent, 1) == nullptr);

	table.session_stopped_tracking(2);
	table.session_stopped_tracking(3);
	BOOST_TEST(table.stats().prefixes == 2u);
	table.key_changed("items:2", 0, kEveryone);
	BOOST_TEST(take(table).empty());
}

BOOST_AUTO_TEST_CASE(stopped_or_closed_connections_are_skipped)
{
	TrackingTable table;
	Session a = tracking_session(1), b = tracking_session(2);
	table.session_started_tracking(a);
	table.session_started_tracking(b);
	read(table, a, {"items:1"});
	read(table, b, {"items:1"});
	table.session_stopped_tracking(1);
	table.key_changed("items:1", 0, kEveryone);
	std::vector<Invalidation> sent = take(table);
	BOOST_REQUIRE(sent.size() == 1u);
	BOOST_TEST(sent[0].tracking_client == 2u);

	/* Stopped connections are skipped by the flushes as well. */
	table.everything_flushed();
	sent = take(table);
	BOOST_REQUIRE(sent.size() == 1u);
	BOOST_TEST(sent[0].tracking_client == 2u);
	table.session_stopped_tracking(42); /* never tracked: nothing to do */
}

BOOST_AUTO_TEST_CASE(a_connection_now_in_bcast_ignores_its_old_reads)
{
	TrackingTable table;
	Session a = tracking_session(1);
	table.session_started_tracking(a);
	read(table, a, {"items:1"});
	table.session_stopped_tracking(1);
	a.tracking.bcast = true;
	a.tracking.prefixes = {"users:"};
	table.session_started_tracking(a);
	table.key_changed("items:1", 0, kEveryone);
	BOOST_TEST(take(table).empty());
	BOOST_TEST(table.stats().keys == 0u);
}

BOOST_AUTO_TEST_CASE(table_flushed_sends_null_to_those_tracking_the_table)
{
	TrackingTable table;
	Session a = tracking_session(1), b = tracking_session(2), bc = tracking_session(3), other = tracking_session(4);
	a.tracking.redirect = 77;
	bc.tracking.bcast = true;
	bc.tracking.prefixes = {"it"};
	other.tracking.bcast = true;
	other.tracking.prefixes = {"users:"};
	for (const Session *s : {&a, &b, &bc, &other})
		table.session_started_tracking(*s);
	read(table, a, {"items:1", "items:2", "users:1"});
	read(table, b, {"users:1", "itemsx:1"});
	table.key_changed("users:9", 0, kEveryone); /* a key, then the flush: the flush covers it */
	take(table); /* that key's invalidation is another test's */
	table.table_flushed("items");
	std::vector<Invalidation> sent = take(table);
	BOOST_REQUIRE(sent.size() == 2u);
	const Invalidation *to_a = for_client(sent, 1);
	BOOST_REQUIRE(to_a != nullptr);
	BOOST_TEST(to_a->flush_all);
	BOOST_TEST(to_a->target == 77u);
	BOOST_TEST(to_a->keys.empty());
	BOOST_TEST(for_client(sent, 3)->flush_all); /* "it" may name keys of items */
	/* The table's keys are forgotten; the others stay. */
	BOOST_TEST(table.stats().keys == 2u);
	table.key_changed("items:1", 0, kEveryone);
	BOOST_TEST(for_client(take(table), 1) == nullptr);
	table.key_changed("users:1", 0, kEveryone);
	BOOST_TEST(take(table).size() == 3u); /* a, b, and the BCAST users: */
}

BOOST_AUTO_TEST_CASE(a_flush_absorbs_the_keys_of_its_batch)
{
	TrackingTable table;
	Session a = tracking_session(1);
	table.session_started_tracking(a);
	read(table, a, {"items:1", "items:2"});
	table.key_changed("items:1", 0, kEveryone);
	table.everything_flushed();
	read(table, a, {"items:3"});
	table.key_changed("items:3", 0, kEveryone);
	std::vector<Invalidation> sent = take(table);
	BOOST_REQUIRE(sent.size() == 1u);
	BOOST_TEST(sent[0].flush_all);
	BOOST_TEST(sent[0].keys.empty());
	BOOST_TEST(table.stats().keys == 0u);
	BOOST_TEST(table.stats().items == 0u);
	BOOST_TEST(take(table).empty());
}

BOOST_AUTO_TEST_CASE(everything_flushed_reaches_every_tracking_connection)
{
	TrackingTable table;
	Session a = tracking_session(1), bc = tracking_session(2);
	bc.tracking.bcast = true;
	bc.tracking.redirect = 5;
	table.session_started_tracking(a);
	table.session_started_tracking(bc);
	table.everything_flushed(); /* a read nothing yet: it is told all the same, as by FLUSHALL */
	std::vector<Invalidation> sent = take(table);
	BOOST_REQUIRE(sent.size() == 2u);
	BOOST_TEST(for_client(sent, 1)->flush_all);
	BOOST_TEST(for_client(sent, 2)->flush_all);
	BOOST_TEST(for_client(sent, 2)->target == 5u);
}

BOOST_AUTO_TEST_CASE(eviction_past_max_keys_sends_invalidations)
{
	TrackingTable table(3);
	Session a = tracking_session(1), b = tracking_session(2);
	table.session_started_tracking(a);
	table.session_started_tracking(b);
	read(table, a, {"k:1", "k:2", "k:3"});
	read(table, b, {"k:1", "k:2", "k:3"});
	BOOST_TEST(table.stats().keys == 3u);
	BOOST_TEST(take(table).empty());

	read(table, a, {"k:4"});
	TrackingStats stats = table.stats();
	BOOST_TEST(stats.keys == 3u);
	std::vector<Invalidation> sent = take(table);
	BOOST_REQUIRE(sent.size() == 2u); /* the evicted key, to both its readers */
	std::string evicted = sent[0].keys.at(0);
	BOOST_TEST(evicted != "k:4"); /* never the key being read */
	BOOST_TEST((keys_of(sent[1]) == std::set<std::string>{evicted}));
	BOOST_TEST(stats.items == 5u);

	/* Lowering the bound evicts at the next read, down to the bound. */
	table.set_max_keys(1);
	read(table, a, {"k:4"});
	BOOST_TEST(table.stats().keys == 1u);
	size_t keys_sent = 0;
	for (const Invalidation &invalidation : take(table))
		keys_sent += invalidation.keys.size();
	BOOST_TEST(keys_sent >= 2u);

	/* 0: unbounded. */
	table.set_max_keys(0);
	for (int i = 0; i < 100; i++) {
		std::string key = "u:" + std::to_string(i);
		read(table, a, {key});
	}
	BOOST_TEST(table.stats().keys == 101u);
	BOOST_TEST(take(table).empty());
}

BOOST_AUTO_TEST_CASE(restarting_tracking_replaces_the_mode)
{
	TrackingTable table;
	Session a = tracking_session(1);
	a.tracking.bcast = true;
	a.tracking.prefixes = {"items:"};
	table.session_started_tracking(a);
	a.tracking.prefixes = {"items:", "users:"};
	a.tracking.noloop = true;
	table.session_started_tracking(a); /* CLIENT TRACKING ON again: added prefixes, new flags */
	BOOST_TEST(table.stats().prefixes == 2u);
	table.key_changed("users:1", 1, kEveryone);
	BOOST_TEST(take(table).empty());
	table.key_changed("users:1", 2, kEveryone);
	BOOST_TEST(take(table).size() == 1u);
	table.session_stopped_tracking(1);
	BOOST_TEST(table.stats().prefixes == 0u);
}

BOOST_AUTO_TEST_CASE(take_appends_and_empties)
{
	TrackingTable table;
	Session a = tracking_session(1);
	table.session_started_tracking(a);
	read(table, a, {"items:1"});
	table.key_changed("items:1", 0, kEveryone);
	std::vector<Invalidation> out(1, Invalidation{9, 9, true, {}});
	table.take_invalidations(out);
	BOOST_REQUIRE(out.size() == 2u);
	BOOST_TEST(out[1].tracking_client == 1u);
	read(table, a, {"items:1"});
	table.key_changed("items:1", 0, kEveryone);
	/* A new batch after a take: a new entry, not one appended to the taken one. */
	BOOST_TEST(take(table).size() == 1u);
}


/* ---- randomized: the table against a model of what each connection may have cached ---- */

namespace {

/* What a connection may hold in its cache: the keys it read since its last invalidation of
 * them. The promise: a committed change to one of them is always sent (or a flush). */
struct ModelClient {
	Session session;
	std::set<std::string> cached;   /* default mode: read and not invalidated since */
	std::set<std::string> ever_read;
	std::set<std::string> owed;     /* changed while cached: must be in the next batch */
	bool owed_flush = false;
};

uint64_t next_random(uint64_t &state)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

} // namespace

BOOST_AUTO_TEST_CASE(randomized_against_a_model)
{
	const std::vector<std::string> keys = {"a:1", "a:2", "ab:1", "b:1", "b:2", "c:1", "c:2", "d"};
	for (uint64_t seed = 1; seed <= 200; seed++) {
		uint64_t state = seed * 0x9e3779b97f4a7c15ull;
		auto pick = [&](uint64_t n) { return size_t(next_random(state) % n); };
		size_t max_keys = seed % 2 == 0 ? 0 : 2 + pick(6);
		TrackingTable table(max_keys);
		std::vector<ModelClient> clients(5);
		for (size_t i = 0; i < clients.size(); i++) {
			Session &s = clients[i].session;
			s.id = i + 1;
			s.tracking.redirect = i % 2 == 1 ? 100 + i : 0;
		}
		/* Connection 5 is BCAST on prefix "a" (a:1, a:2 and ab:1). */
		clients[4].session.tracking.bcast = true;
		clients[4].session.tracking.prefixes = {"a"};

		auto check_batch = [&]() {
			std::vector<Invalidation> sent;
			table.take_invalidations(sent);
			std::set<uint64_t> seen;
			for (const Invalidation &invalidation : sent) {
				BOOST_REQUIRE(invalidation.tracking_client >= 1);
				BOOST_REQUIRE(invalidation.tracking_client <= clients.size());
				ModelClient &m = clients[invalidation.tracking_client - 1];
				BOOST_TEST(seen.insert(invalidation.tracking_client).second, "one entry per connection");
				BOOST_TEST(invalidation.target == target_for(m.session));
				if (invalidation.flush_all) {
					BOOST_TEST(invalidation.keys.empty());
					m.cached.clear();
					m.owed.clear();
					m.owed_flush = false;
					continue;
				}
				std::set<std::string> got = keys_of(invalidation);
				BOOST_TEST(got.size() == invalidation.keys.size(), "a key once per batch");
				for (const std::string &key : got) {
					if (!m.session.tracking.bcast)
						BOOST_TEST(m.ever_read.count(key) == 1u, "a key the connection read");
					m.cached.erase(key);
					m.owed.erase(key);
				}
			}
			for (ModelClient &m : clients) {
				BOOST_TEST(m.owed.empty(), "seed " << seed << ": a change left without its invalidation");
				BOOST_TEST(!m.owed_flush, "seed " << seed << ": a flush left unsent");
				m.owed.clear();
				m.owed_flush = false;
			}
		};

		for (int step = 0; step < 300; step++) {
			ModelClient &m = clients[pick(clients.size())];
			TrackingMode &mode = m.session.tracking;
			switch (pick(10)) {
			case 0: /* CLIENT TRACKING ON / OFF, NOLOOP at random */
				if (mode.on) {
					table.session_stopped_tracking(m.session.id);
					mode.on = false;
					/* No longer told of anything: a client drops its cache when it stops. */
					m.cached.clear();
					m.owed.clear();
				} else {
					mode.on = true;
					mode.noloop = pick(2) == 0;
					mode.optin = !mode.bcast && pick(3) == 0;
					table.session_started_tracking(m.session);
				}
				break;
			case 1:
			case 2:
			case 3: { /* a read */
				std::vector<std::string_view> read_keys;
				for (size_t n = 1 + pick(3); n > 0; n--)
					read_keys.push_back(keys[pick(keys.size())]);
				mode.caching_yes = mode.optin && pick(2) == 0;
				table.note_read(m.session, read_keys.data(), read_keys.size());
				bool tracked = mode.on && !mode.bcast && (!mode.optin || mode.caching_yes);
				for (std::string_view key : read_keys) {
					m.ever_read.emplace(key);
					if (tracked)
						m.cached.emplace(key);
				}
				if (max_keys != 0)
					BOOST_TEST(table.stats().keys <= std::max<size_t>(max_keys, read_keys.size()));
				break;
			}
			case 4:
			case 5:
			case 6: { /* a commit changes a key, written by one of them or by SQL */
				const std::string &key = keys[pick(keys.size())];
				uint64_t writer = pick(3) == 0 ? 0 : 1 + pick(clients.size());
				table.key_changed(key, writer, kEveryone);
				for (ModelClient &other : clients) {
					const TrackingMode &o = other.session.tracking;
					bool skipped = o.noloop && writer == other.session.id;
					if (o.bcast && o.on && !skipped && key.compare(0, 1, "a") == 0)
						other.owed.insert(key);
					if (!o.bcast && other.cached.erase(key) && o.on && !skipped)
						other.owed.insert(key);
				}
				break;
			}
			case 7: { /* a table flushed */
				std::string table_prefix(1, char('a' + pick(3)));
				table.table_flushed(table_prefix);
				/* Each cached key of the table must go: by the flush, or by an invalidation of
				 * its own already in the batch (an eviction's). */
				for (ModelClient &other : clients) {
					if (!other.session.tracking.on)
						continue;
					for (const std::string &key : other.cached)
						if (key.compare(0, 2, table_prefix + ":") == 0)
							other.owed.insert(key);
					if (other.session.tracking.bcast && table_prefix == "a")
						other.owed_flush = true;
				}
				break;
			}
			case 8:
				if (pick(4) == 0) {
					table.everything_flushed();
					for (ModelClient &other : clients)
						other.owed_flush = other.session.tracking.on;
				}
				break;
			default:
				check_batch();
				break;
			}
		}
		check_batch();
	}
}

BOOST_AUTO_TEST_SUITE_END()
