/*
 * monitor_test.cpp — Boost.Test cases of the slow log and the latency events
 * (resp_server/commands/monitor.cpp): which requests enter the slow log, how their arguments are cut
 * (as Redis cuts them), that passwords never do, its length, the latency events kept for each
 * role apart, within kLatencyRoles roles; and the command line pg_stat_activity shows.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/commands/command_table.h"
#include "resp_server/commands/monitor.h"

#include <string>
#include <string_view>
#include <vector>

using namespace local_cache::resp;

namespace {

const CommandSpec &spec(std::string_view name)
{
	const CommandSpec *command = find_command(name);
	BOOST_REQUIRE(command != nullptr);
	return *command;
}

struct Recorder {
	CommandMonitor monitor;
	Session session;

	Recorder(int64_t slower_than, size_t max_length)
	{
		monitor.configure(SlowlogSettings{slower_than, max_length});
		session.peer_address = "127.0.0.1:40000";
		session.name = "worker-7";
		session.role = AuthenticatedRole{10, "cache_reader"};
	}

	void run(const std::vector<std::string> &args, int64_t duration_us, int64_t started_us = 1764500000000000)
	{
		std::vector<std::string_view> views(args.begin(), args.end());
		monitor.record(spec(args[0]), Request{views.data(), views.size()}, session, started_us, duration_us);
	}
};

} // namespace

BOOST_AUTO_TEST_SUITE(monitor)

BOOST_AUTO_TEST_CASE(slow_requests_enter_the_slow_log_newest_first)
{
	Recorder r(1000, 128);
	r.run({"GET", "items:1"}, 999);
	r.run({"GET", "items:2"}, 1000, 1764500001000000);
	r.run({"MGET", "items:1", "items:3"}, 250000, 1764500002500000);
	const auto &log = r.monitor.slowlog();
	BOOST_REQUIRE(log.size() == 2u);
	BOOST_TEST(log[0].id == 1u);
	BOOST_TEST(log[0].timestamp_seconds == 1764500002);
	BOOST_TEST(log[0].duration_us == 250000);
	BOOST_TEST((log[0].arguments == std::vector<std::string>{"MGET", "items:1", "items:3"}));
	BOOST_TEST(log[0].peer_address == "127.0.0.1:40000");
	BOOST_TEST(log[0].client_name == "worker-7");
	BOOST_TEST(*log[0].role_id == 10u);
	BOOST_TEST(log[1].id == 0u);
	BOOST_TEST((log[1].arguments == std::vector<std::string>{"GET", "items:2"}));

	const std::optional<LatencyEvent> &event = r.monitor.every_role_latency().command_event;
	BOOST_REQUIRE(event.has_value());
	BOOST_TEST(event->latest_seconds == 1764500002);
	BOOST_TEST(event->latest_ms == 250);
	BOOST_TEST(event->max_ms == 250);
	r.run({"GET", "items:4"}, 5000);
	BOOST_TEST(event->latest_ms == 5);
	BOOST_TEST(event->max_ms == 250);
}

BOOST_AUTO_TEST_CASE(threshold_minus_one_logs_nothing_zero_everything)
{
	Recorder none(-1, 128);
	none.run({"GET", "items:1"}, 10000000);
	BOOST_TEST(none.monitor.slowlog().empty());
	BOOST_TEST(!none.monitor.every_role_latency().command_event.has_value());
	Recorder all(0, 128);
	all.run({"PING"}, 0);
	BOOST_TEST(all.monitor.slowlog().size() == 1u);
}

BOOST_AUTO_TEST_CASE(the_log_keeps_the_newest_max_length_entries)
{
	Recorder r(0, 3);
	for (int i = 0; i < 5; i++)
		r.run({"GET", "items:" + std::to_string(i)}, 10);
	BOOST_REQUIRE(r.monitor.slowlog().size() == 3u);
	BOOST_TEST(r.monitor.slowlog().front().id == 4u);
	BOOST_TEST(r.monitor.slowlog().back().id == 2u);
	/* A smaller length at reload drops the oldest at once. */
	r.monitor.configure(SlowlogSettings{0, 1});
	BOOST_REQUIRE(r.monitor.slowlog().size() == 1u);
	BOOST_TEST(r.monitor.slowlog().front().id == 4u);
	r.monitor.reset_slowlog();
	BOOST_TEST(r.monitor.slowlog().empty());
	/* Ids keep counting after a reset, as Redis's do. */
	r.run({"PING"}, 10);
	BOOST_TEST(r.monitor.slowlog().front().id == 5u);
}

BOOST_AUTO_TEST_CASE(arguments_are_cut_as_redis_cuts_them)
{
	Recorder r(0, 128);
	std::vector<std::string> args{"MGET"};
	for (int i = 1; i < 40; i++)
		args.push_back("k" + std::to_string(i));
	r.run(args, 10);
	const auto &many = r.monitor.slowlog().front().arguments;
	BOOST_REQUIRE(many.size() == 32u);
	BOOST_TEST(many[30] == "k30");
	BOOST_TEST(many[31] == "... (9 more arguments)");

	r.run({"GET", std::string(200, 'x')}, 10);
	const auto &long_one = r.monitor.slowlog().front().arguments;
	BOOST_REQUIRE(long_one.size() == 2u);
	BOOST_TEST(long_one[1] == std::string(128, 'x') + "... (72 more bytes)");
	r.run({"GET", std::string(128, 'y')}, 10);
	BOOST_TEST(r.monitor.slowlog().front().arguments[1] == std::string(128, 'y'));
}

BOOST_AUTO_TEST_CASE(passwords_never_enter_the_slow_log)
{
	Recorder r(0, 128);
	r.run({"AUTH", "alice", "secret"}, 10);
	BOOST_TEST((r.monitor.slowlog().front().arguments == std::vector<std::string>{"AUTH"}));
	r.run({"HELLO", "3", "AUTH", "alice", "secret"}, 10);
	BOOST_TEST((r.monitor.slowlog().front().arguments == std::vector<std::string>{"HELLO"}));
}

BOOST_AUTO_TEST_CASE(latency_is_kept_for_every_role_and_for_each_role_apart)
{
	Recorder r(1000, 128);
	r.run({"GET", "items:1"}, 5000);
	r.run({"GET", "items:1"}, 10);
	r.session.role = AuthenticatedRole{20, "alice"};
	r.run({"HLEN", "items:1"}, 7000);
	r.session.role.reset(); /* before a login: every role's data only */
	r.run({"PING"}, 3000);

	const LatencyRecord *reader = r.monitor.role_latency(10);
	const LatencyRecord *alice = r.monitor.role_latency(20);
	BOOST_REQUIRE(reader != nullptr);
	BOOST_REQUIRE(alice != nullptr);
	BOOST_TEST(reader->command_event->latest_ms == 5);
	BOOST_TEST(reader->command_event->max_ms == 5);
	BOOST_TEST(alice->command_event->max_ms == 7);
	const LatencyRecord &all = r.monitor.every_role_latency();
	BOOST_TEST(all.command_event->latest_ms == 3);
	BOOST_TEST(all.command_event->max_ms == 7);

	r.monitor.reset_latency();
	BOOST_TEST(!all.command_event.has_value());
	BOOST_TEST(!reader->command_event.has_value());
	BOOST_TEST(!alice->command_event.has_value());
}

BOOST_AUTO_TEST_CASE(the_roles_kept_apart_are_the_most_recent_ones)
{
	Recorder r(0, 1);
	/* Role 10 (the recorder's) first, then kLatencyRoles others: 10 falls out, the others stay. */
	r.run({"GET", "items:1"}, 1000);
	for (uint64_t role = 100; role < 100 + CommandMonitor::kLatencyRoles; role++) {
		r.session.role = AuthenticatedRole{role, "r" + std::to_string(role)};
		r.run({"GET", "items:1"}, 1000);
		/* 100 comes back each time: it stays the most recent but one. */
		r.session.role = AuthenticatedRole{100, "r100"};
		r.run({"GET", "items:1"}, 2000);
	}
	BOOST_TEST(r.monitor.role_latency(10) == nullptr);
	BOOST_REQUIRE(r.monitor.role_latency(100) != nullptr);
	BOOST_TEST(r.monitor.role_latency(100)->command_event->max_ms == 2);
	for (uint64_t role = 101; role < 100 + CommandMonitor::kLatencyRoles; role++)
		BOOST_TEST(r.monitor.role_latency(role) != nullptr);
	/* A role that fell out starts again from nothing; every role's events keep every request. */
	r.session.role = AuthenticatedRole{10, "cache_reader"};
	r.run({"GET", "items:1"}, 1000);
	BOOST_TEST(r.monitor.role_latency(10)->command_event->max_ms == 1);
	BOOST_TEST(r.monitor.every_role_latency().command_event->max_ms == 2);
}

namespace {

std::string activity(const std::vector<std::string> &args, size_t size = 4096)
{
	std::vector<std::string_view> views(args.begin(), args.end());
	std::vector<char> out(size, 'Z');
	size_t length = format_activity(spec(args[0]), Request{views.data(), views.size()}, out.data(), out.size());
	BOOST_TEST(out[length] == '\0');
	return std::string(out.data(), length);
}

} // namespace

BOOST_AUTO_TEST_CASE(the_command_line_pg_stat_activity_shows)
{
	BOOST_TEST(activity({"GET", "items:1"}) == "GET items:1");
	BOOST_TEST(activity({"SET", "items:7", R"({"value": "a b"})"}) == R"(SET items:7 "{\"value\": \"a b\"}")");
	BOOST_TEST(activity({"GET", std::string("k\xff\n\\", 4), ""}) == R"(GET "k\xff\n\\" "")");
	/* Passwords never. */
	BOOST_TEST(activity({"AUTH", "alice", "secret"}) == "AUTH");
	BOOST_TEST(activity({"HELLO", "3", "AUTH", "alice", "secret"}) == "HELLO");
	/* Cut as the slow log cuts arguments, and to the buffer, NUL included. */
	std::vector<std::string> many{"MGET"};
	for (int i = 1; i < 40; i++)
		many.push_back("k" + std::to_string(i));
	std::string cut = activity(many);
	BOOST_TEST(cut.rfind("MGET k1 k2 ", 0) == 0u);
	std::string_view tail = " k30 ... (9 more arguments)";
	BOOST_TEST(cut.substr(cut.size() - tail.size()) == tail);
	BOOST_TEST(activity({"GET", std::string(200, 'x')}) == "GET " + std::string(128, 'x') + "... (72 more bytes)");
	BOOST_TEST(activity({"GET", "items:1"}, 6) == "GET i");
	BOOST_TEST(activity({"SET", "k", "a b c"}, 10) == R"(SET k "a )");
	BOOST_TEST(activity({"GET", std::string(1000, 'x')}, 140) == "GET " + std::string(128, 'x') + "... (87");
	BOOST_TEST(activity({"GET", "items:1"}, 1).empty());
}

BOOST_AUTO_TEST_SUITE_END()
