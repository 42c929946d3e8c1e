/*
 * client_tracking_test.cpp — Boost.Test cases of the CLIENT TRACKING table
 * (resp_server/commands/client_tracking.cpp), one per rule: default mode (tracked once per
 * connection, forgotten at its invalidation, re-tracked by a new read), OPTIN / OPTOUT with
 * CLIENT CACHING, NOLOOP, REDIRECT, BCAST and its prefixes (with the feed's readable rule),
 * connections that stopped tracking, table and full flushes, eviction past max_keys, batching,
 * and the sizes INFO shows.
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

BOOST_AUTO_TEST_SUITE_END()
