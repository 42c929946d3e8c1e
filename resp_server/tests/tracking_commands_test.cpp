/*
 * tracking_commands_test.cpp — Boost.Test cases of the client-side caching commands
 * (resp_server/commands/tracking_commands.cpp) and of what the dispatcher does for them
 * (command_table.cpp): CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO with Redis 7.2's
 * replies and errors, the reads that note their keys (and the failed ones that do not, EXEC's
 * when it commits), CLIENT CACHING's scope, SUBSCRIBE / UNSUBSCRIBE and RESP2's subscribed
 * mode, RESET, CLIENT LIST's fields and INFO's tracking sizes.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/command_harness.h"
#include "resp_server/tests/fake_clients.h"

#include <functional>
#include <string>
#include <vector>

using namespace local_cache::resp;
using resp_test::Args;
using resp_test::Connection;
using resp_test::Value;
using resp_test::Worker;

namespace {

/* Pub/Sub commands answer once per channel, and RESP3 pushes: their bytes, unchecked. */
std::string raw(Connection &c, const Args &args)
{
	std::vector<std::string_view> views(args.begin(), args.end());
	ReplyBuffer out;
	c.processor.execute(Request{views.data(), views.size()}, c.session, out);
	return std::string(out.view());
}

uint64_t tracked_items(Connection &c)
{
	return c.processor.tracking().stats().items;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tracking_commands)

BOOST_AUTO_TEST_CASE(tracking_on_off_getredir_trackinginfo)
{
	Worker w;
	Connection &c = w.c;
	BOOST_TEST(c.run({"CLIENT", "GETREDIR"}) == ":-1\r\n");
	BOOST_TEST(c.run({"CLIENT", "TRACKINGINFO"}) ==
			   "*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0\r\n");
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on"}) == "+OK\r\n");
	BOOST_TEST(c.session.tracking.on);
	BOOST_TEST(c.run({"CLIENT", "GETREDIR"}) == ":0\r\n");
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "ON", "REDIRECT", "7", "NOLOOP", "OPTIN"}) == "+OK\r\n");
	BOOST_TEST(c.run({"CLIENT", "GETREDIR"}) == ":7\r\n");
	BOOST_TEST(c.run({"CLIENT", "CACHING", "YES"}) == "+OK\r\n");
	c.session.protocol = 3;
	BOOST_TEST(c.run({"CLIENT", "TRACKINGINFO"}) ==
			   "%3\r\n$5\r\nflags\r\n~4\r\n$2\r\non\r\n$5\r\noptin\r\n$11\r\ncaching-yes\r\n$6\r\nnoloop\r\n"
			   "$8\r\nredirect\r\n:7\r\n$8\r\nprefixes\r\n*0\r\n");
	/* The flag covered CLIENT TRACKINGINFO (the next command): it is gone now. */
	BOOST_TEST(!c.session.tracking.caching_yes);

	/* The target went away: broken_redirect, and CLIENT LIST's R. */
	w.clients.others.clear();
	Value info = c.value({"CLIENT", "TRACKINGINFO"});
	BOOST_TEST(info.find("flags")->elements.back().text == "broken_redirect");
	BOOST_TEST(c.value({"CLIENT", "INFO"}).text.find(" flags=tR ") != std::string::npos);

	BOOST_TEST(c.run({"CLIENT", "TRACKING", "off"}) == "+OK\r\n");
	BOOST_TEST(!c.session.tracking.on);
	BOOST_TEST(!c.session.tracking.noloop);
	BOOST_TEST(c.run({"CLIENT", "GETREDIR"}) == ":-1\r\n");

	/* BCAST: the prefixes, sorted as Redis's tree lists them; BCAST alone is the prefix "". */
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "users:", "PREFIX", "items:"}) == "+OK\r\n");
	info = c.value({"CLIENT", "TRACKINGINFO"});
	BOOST_REQUIRE(info.find("prefixes")->elements.size() == 2u);
	BOOST_TEST(info.find("prefixes")->elements[0].text == "items:");
	BOOST_TEST(info.find("flags")->elements[1].text == "bcast");
	BOOST_TEST(c.processor.tracking().stats().prefixes == 2u);
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "lines:"}) == "+OK\r\n");
	BOOST_TEST(c.session.tracking.prefixes.size() == 3u);
	BOOST_TEST(c.processor.tracking().stats().prefixes == 3u);
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "off", "BCAST"}) == "+OK\r\n");
	BOOST_TEST(c.session.tracking.prefixes.empty());
	BOOST_TEST(c.processor.tracking().stats().prefixes == 0u);
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "BCAST"}) == "+OK\r\n");
	BOOST_TEST((c.session.tracking.prefixes == std::vector<std::string>{""}));
}

BOOST_AUTO_TEST_CASE(tracking_errors_as_redis_words_them)
{
	Worker w;
	Connection &c = w.c;
	auto error = [&](const Args &args) { return c.run(args); };
	BOOST_TEST(error({"CLIENT", "TRACKING"}) == "-ERR wrong number of arguments for 'client|tracking' command\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "maybe"}) == "-ERR syntax error\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "FOO"}) == "-ERR syntax error\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "REDIRECT"}) == "-ERR syntax error\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "PREFIX", "a"}) ==
			   "-ERR PREFIX option requires BCAST mode to be enabled\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "BCAST", "OPTIN"}) ==
			   "-ERR OPTIN and OPTOUT are not compatible with BCAST\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"}) ==
			   "-ERR You can't specify both OPTIN mode and OPTOUT mode\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "REDIRECT", "x"}) ==
			   "-ERR value is not an integer or out of range\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "REDIRECT", "999"}) ==
			   "-ERR The client ID you want redirect to does not exist\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "REDIRECT", "0"}) ==
			   "-ERR The client ID you want redirect to does not exist\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "REDIRECT", "7", "REDIRECT", "50"}) ==
			   "-ERR A client can only redirect to a single other client\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a"}) ==
			   "-ERR Prefix 'ab' overlaps with another provided prefix 'a'. Prefixes for a single client must "
			   "not overlap.\r\n");
	BOOST_TEST(!c.session.tracking.on);
	BOOST_TEST(c.processor.tracking().stats().prefixes == 0u);

	/* A target on this worker, on another running worker, and the connection itself (as Redis). */
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "REDIRECT", "50"}) == "+OK\r\n");
	w.clients.on_other_workers.insert(uint64_t(1) << 40);
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "REDIRECT", std::to_string(uint64_t(1) << 40)}) == "+OK\r\n");
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "REDIRECT", "42"}) == "+OK\r\n");

	/* Against the mode already on. */
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "BCAST"}) ==
			   "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then "
			   "re-enabling it with a different mode.\r\n");
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "OPTIN"}) == "+OK\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "OPTOUT"}) ==
			   "-ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then "
			   "re-enabling it with a different mode.\r\n");
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "off"}) == "+OK\r\n");
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "items:"}) == "+OK\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "items:1"}) ==
			   "-ERR Prefix 'items:1' overlaps with an existing prefix 'items:'. Prefixes for a single client "
			   "must not overlap.\r\n");
	BOOST_TEST(error({"CLIENT", "TRACKING", "on"}) ==
			   "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then "
			   "re-enabling it with a different mode.\r\n");
}

BOOST_AUTO_TEST_CASE(client_caching_modes_and_scope)
{
	Connection c;
	const std::string not_tracking = "-ERR CLIENT CACHING can be called only when the client is in tracking mode "
									 "with OPTIN or OPTOUT mode enabled\r\n";
	BOOST_TEST(c.run({"CLIENT", "CACHING", "YES"}) == not_tracking);
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on"}) == "+OK\r\n");
	BOOST_TEST(c.run({"CLIENT", "CACHING", "yes"}) ==
			   "-ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.\r\n");
	BOOST_TEST(c.run({"CLIENT", "CACHING", "no"}) ==
			   "-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.\r\n");
	BOOST_TEST(c.run({"CLIENT", "CACHING", "maybe"}) == "-ERR syntax error\r\n");
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "off"}) == "+OK\r\n");

	/* OPTIN: only the read right after CLIENT CACHING YES is tracked. */
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "OPTIN"}) == "+OK\r\n");
	c.run({"GET", "items:1"});
	BOOST_TEST(tracked_items(c) == 0u);
	BOOST_TEST(c.run({"CLIENT", "CACHING", "YES"}) == "+OK\r\n");
	c.run({"GET", "items:1"});
	c.run({"GET", "items:2"});
	BOOST_TEST(tracked_items(c) == 1u);
	/* ... or the whole MULTI ... EXEC that follows it. */
	BOOST_TEST(c.run({"CLIENT", "CACHING", "YES"}) == "+OK\r\n");
	c.run({"MULTI"});
	c.run({"GET", "items:2"});
	c.run({"HGET", "items:-7", "value"});
	BOOST_TEST(tracked_items(c) == 1u);
	c.run({"EXEC"});
	BOOST_TEST(tracked_items(c) == 3u);
	c.run({"GET", "items:404"});
	BOOST_TEST(tracked_items(c) == 3u);
	/* A refused request ends the scope too. */
	BOOST_TEST(c.run({"CLIENT", "CACHING", "YES"}) == "+OK\r\n");
	c.run({"NOSUCHCOMMAND"});
	c.run({"GET", "items:405"});
	BOOST_TEST(tracked_items(c) == 3u);
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "off"}) == "+OK\r\n");

	/* OPTOUT: every read but the one after CLIENT CACHING NO. */
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "OPTOUT"}) == "+OK\r\n");
	BOOST_TEST(c.run({"CLIENT", "CACHING", "NO"}) == "+OK\r\n");
	c.run({"GET", "users:1"});
	BOOST_TEST(tracked_items(c) == 3u);
	c.run({"GET", "users:1"});
	BOOST_TEST(tracked_items(c) == 4u);
}

BOOST_AUTO_TEST_CASE(every_read_notes_its_keys)
{
	Connection c;
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on"}) == "+OK\r\n");
	const std::vector<Args> reads = {
		{"GET", "items:1"},		   {"MGET", "items:2", "items:3"}, {"STRLEN", "r:1"},	{"EXISTS", "r:2", "r:3"},
		{"HGET", "r:4", "value"},  {"HMGET", "r:5", "id", "value"}, {"HGETALL", "r:6"},	{"HEXISTS", "r:7", "id"},
		{"HSTRLEN", "r:8", "id"},  {"HKEYS", "r:9"},				 {"HVALS", "r:10"},		{"HLEN", "r:11"},
		{"TYPE", "r:12"},		   {"TTL", "r:13"},				 {"PTTL", "r:14"},		{"MEMORY", "USAGE", "r:15"},
	};
	uint64_t expected = 0;
	for (const Args &request : reads) {
		BOOST_TEST_CONTEXT(request[0])
		{
			c.run(request);
			expected += request[0] == "MGET" || request[0] == "EXISTS" ? 2 : 1;
			BOOST_TEST(tracked_items(c) == expected);
		}
	}
	/* The last key of a read is the key, not an argument after it. */
	BOOST_TEST(c.processor.tracking().stats().keys == expected);

	/* Not reads, or reads of no key: nothing. GETSET writes (Redis does not track it either). */
	for (const Args &request : std::vector<Args>{{"SET", "items:5", "{\"id\":5}"},
												 {"GETSET", "items:6", "{\"id\":6}"},
												 {"DEL", "items:5"},
												 {"SCAN", "0"},
												 {"DBSIZE"},
												 {"PING"}}) {
		c.run(request);
		BOOST_TEST(tracked_items(c) == expected, request[0]);
	}

	/* A read that failed notes nothing: an error, or a table to wait for. */
	BOOST_TEST(c.run({"GET", "secret:1"}).rfind("-NOPERM", 0) == 0u);
	BOOST_TEST(c.run({"MGET", "items:1", "broken:1"}).rfind("-ERR", 0) == 0u);
	c.data.db.busy_prefixes.insert("busy");
	BOOST_TEST(c.run({"GET", "busy:1"}).empty());
	BOOST_TEST(c.session.retry_later);
	BOOST_TEST(tracked_items(c) == expected);

	/* Tracking off: nothing. */
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "off"}) == "+OK\r\n");
	c.run({"GET", "other:1"});
	BOOST_TEST(tracked_items(c) == expected);
}

BOOST_AUTO_TEST_CASE(exec_notes_its_reads_when_it_commits)
{
	Connection c;
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on"}) == "+OK\r\n");
	c.run({"MULTI"});
	c.run({"GET", "items:1"});
	c.run({"GET", "secret:1"}); /* answers its error in its place: not noted */
	BOOST_TEST(tracked_items(c) == 0u);
	Value replies = c.value({"EXEC"});
	BOOST_TEST(replies.elements.size() == 2u);
	BOOST_TEST(tracked_items(c) == 1u);

	/* Rolled back (a write failed): nothing read in it is noted. */
	c.run({"MULTI"});
	c.run({"GET", "items:2"});
	c.run({"SET", "nosuchtable:1", "{}"});
	BOOST_TEST(c.run({"EXEC"}).rfind("-EXECABORT", 0) == 0u);
	BOOST_TEST(tracked_items(c) == 1u);
}

BOOST_AUTO_TEST_CASE(subscribe_and_unsubscribe_replies)
{
	Connection c;
	BOOST_TEST(raw(c, {"SUBSCRIBE", "__redis__:invalidate", "news"}) ==
			   "*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n"
			   "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:2\r\n");
	BOOST_TEST(c.session.tracking.subscribed_invalidate);
	BOOST_TEST(raw(c, {"SUBSCRIBE", "news"}) == "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:2\r\n");
	BOOST_TEST(raw(c, {"PSUBSCRIBE", "n*"}) == "*3\r\n$10\r\npsubscribe\r\n$2\r\nn*\r\n:3\r\n");

	/* RESP2's subscribed mode: only Pub/Sub, PING, QUIT and RESET. */
	BOOST_TEST(c.run({"GET", "items:1"}) == "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / "
											"PING / QUIT / RESET are allowed in this context\r\n");
	BOOST_TEST(c.run({"CLIENT", "ID"}) == "-ERR Can't execute 'client|id': only (P|S)SUBSCRIBE / "
										  "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n");
	BOOST_TEST(c.run({"PING"}) == "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
	BOOST_TEST(c.run({"PING", "hi"}) == "*2\r\n$4\r\npong\r\n$2\r\nhi\r\n");

	BOOST_TEST(raw(c, {"UNSUBSCRIBE", "nothere", "__redis__:invalidate"}) ==
			   "*3\r\n$11\r\nunsubscribe\r\n$7\r\nnothere\r\n:3\r\n"
			   "*3\r\n$11\r\nunsubscribe\r\n$20\r\n__redis__:invalidate\r\n:2\r\n");
	BOOST_TEST(!c.session.tracking.subscribed_invalidate);
	BOOST_TEST(raw(c, {"PUNSUBSCRIBE"}) == "*3\r\n$12\r\npunsubscribe\r\n$2\r\nn*\r\n:1\r\n");
	BOOST_TEST(raw(c, {"UNSUBSCRIBE"}) == "*3\r\n$11\r\nunsubscribe\r\n$4\r\nnews\r\n:0\r\n");
	BOOST_TEST(raw(c, {"UNSUBSCRIBE"}) == "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n");
	BOOST_TEST(c.run({"PING"}) == "+PONG\r\n");
	BOOST_TEST(c.run({"GET", "items:3"}) == "$-1\r\n");

	/* RESP3: pushes, and every command still runs. */
	c.session.protocol = 3;
	BOOST_TEST(raw(c, {"SUBSCRIBE", "__redis__:invalidate"}) ==
			   ">3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n");
	BOOST_TEST(c.run({"GET", "items:3"}) == "_\r\n");
	BOOST_TEST(c.run({"PING"}) == "+PONG\r\n");
	BOOST_TEST(raw(c, {"PUNSUBSCRIBE"}) == ">3\r\n$12\r\npunsubscribe\r\n_\r\n:1\r\n");

	/* One reply per channel does not fit EXEC's array: refused when queued. */
	c.run({"MULTI"});
	BOOST_TEST(c.run({"SUBSCRIBE", "x"}) == "-ERR Command not allowed inside a transaction\r\n");
	BOOST_TEST(c.run({"EXEC"}).rfind("-EXECABORT", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(reset_stops_tracking_and_unsubscribes)
{
	Connection c;
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "BCAST", "NOLOOP"}) == "+OK\r\n");
	raw(c, {"SUBSCRIBE", "__redis__:invalidate"});
	BOOST_TEST(c.processor.tracking().stats().prefixes == 1u);
	BOOST_TEST(c.run({"RESET"}) == "+RESET\r\n");
	BOOST_TEST(!c.session.tracking.on);
	BOOST_TEST(!c.session.tracking.bcast);
	BOOST_TEST(!c.session.tracking.subscribed_invalidate);
	BOOST_TEST(c.session.channels.empty());
	BOOST_TEST(c.processor.tracking().stats().prefixes == 0u);
	/* The table forgot the connection: a change reaches nobody. */
	c.processor.tracking().key_changed("items:1", 0, [](uint64_t) { return true; });
	std::vector<Invalidation> none;
	c.processor.tracking().take_invalidations(none);
	BOOST_TEST(none.empty());
}

BOOST_AUTO_TEST_CASE(client_list_fields)
{
	Worker w;
	Connection &c = w.c;
	std::string line = c.value({"CLIENT", "INFO"}).text;
	BOOST_TEST(line.find(" flags=N db=0 sub=0 psub=0 ssub=0 ") != std::string::npos);
	BOOST_TEST(line.find(" redir=-1 ") != std::string::npos);
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", "7"}) == "+OK\r\n");
	c.session.protocol = 3; /* so that CLIENT INFO runs while subscribed */
	raw(c, {"SUBSCRIBE", "a", "b"});
	raw(c, {"PSUBSCRIBE", "c*"});
	w.clients.others[0].tracking.on = true; /* another connection, as CLIENT LIST shows it */
	w.clients.others[0].tracking.redirect = 50;
	line = c.value({"CLIENT", "LIST"}).text;
	BOOST_TEST(line.find("id=42 ") != std::string::npos);
	BOOST_TEST(line.find(" flags=PtB db=0 sub=2 psub=1 ssub=0 ") != std::string::npos);
	BOOST_TEST(line.find(" redir=7 ") != std::string::npos);
	BOOST_TEST(line.find(" flags=t db=0 sub=0 psub=0 ssub=0 ") != std::string::npos);
	BOOST_TEST(line.find(" redir=50 ") != std::string::npos);

	/* Redis's client types: a subscribed connection is of type pubsub, no longer normal. */
	std::string pubsub = c.value({"CLIENT", "LIST", "TYPE", "pubsub"}).text;
	BOOST_TEST(pubsub.find("id=42 ") != std::string::npos);
	BOOST_TEST(pubsub.find("id=7 ") == std::string::npos);
	std::string normal = c.value({"CLIENT", "LIST", "TYPE", "normal"}).text;
	BOOST_TEST(normal.find("id=42 ") == std::string::npos);
	BOOST_TEST(normal.find("id=7 ") != std::string::npos);
	BOOST_TEST(c.run({"CLIENT", "KILL", "TYPE", "pubsub", "SKIPME", "no"}) == ":1\r\n");
	BOOST_TEST(c.session.close_after_reply);
}

BOOST_AUTO_TEST_CASE(info_shows_the_tracking_sizes)
{
	Connection c;
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "on"}) == "+OK\r\n");
	c.run({"MGET", "items:1", "items:2"});
	std::string stats = c.value({"INFO", "stats"}).text;
	BOOST_TEST(stats.find("tracking_total_keys:2\r\n") != std::string::npos);
	BOOST_TEST(stats.find("tracking_total_items:2\r\n") != std::string::npos);
	BOOST_TEST(stats.find("tracking_total_prefixes:0\r\n") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
