/*
 * disconnect_log_test.cpp — Boost.Test cases of DisconnectLog (resp_server/net/disconnect_log.h):
 * one line a second per reason then a count, reasons kept after the caller's text is gone,
 * and a full table that still logs every disconnect.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/net/disconnect_log.h"

#include <memory>
#include <string>
#include <vector>

using namespace local_cache::resp;

BOOST_AUTO_TEST_SUITE(disconnect_log)

BOOST_AUTO_TEST_CASE(one_line_a_second_per_reason_then_a_count)
{
	auto log = std::make_unique<DisconnectLog>();
	BOOST_TEST(log->note("query buffer limit exceeded", 1000).log);
	for (int i = 0; i < 5; i++)
		BOOST_TEST(!log->note("query buffer limit exceeded", 1100 + i).log);
	BOOST_TEST(log->note("output buffer limit exceeded", 1200).log); /* another reason: its own line */
	DisconnectLog::Decision later = log->note("query buffer limit exceeded", 2000);
	BOOST_TEST(later.log);
	BOOST_TEST(later.left_out == 5u);
}

BOOST_AUTO_TEST_CASE(the_timer_writes_the_counts_left_out)
{
	auto log = std::make_unique<DisconnectLog>();
	log->note("a", 0);
	log->note("a", 10);
	log->note("a", 20);
	std::vector<std::pair<std::string, uint64_t>> lines;
	auto emit = [&](const char *reason, uint64_t count) { lines.emplace_back(reason, count); };
	log->flush(500, emit);
	BOOST_TEST(lines.empty()); /* the second is not over */
	log->flush(1000, emit);
	BOOST_TEST_REQUIRE(lines.size() == 1u);
	BOOST_TEST(lines[0].first == "a");
	BOOST_TEST(lines[0].second == 2u);
	log->flush(3000, emit);
	BOOST_TEST(lines.size() == 1u); /* counted once */
}

/* The reason may be an exception's what(): the table keeps a copy, never the pointer. */
BOOST_AUTO_TEST_CASE(a_reason_outlives_the_callers_text)
{
	auto log = std::make_unique<DisconnectLog>();
	{
		auto text = std::make_unique<std::string>("std::bad_alloc in a callback");
		log->note(text->c_str(), 0);
		(*text)[0] = 'X'; /* what a freed and reused buffer would read as */
	}
	BOOST_TEST(!log->note("std::bad_alloc in a callback", 10).log); /* the same reason, rate-limited */
	std::string seen;
	log->flush(1000, [&](const char *reason, uint64_t) { seen = reason; });
	BOOST_TEST(seen == "std::bad_alloc in a callback");
}

BOOST_AUTO_TEST_CASE(long_reasons_are_followed_by_their_start)
{
	auto log = std::make_unique<DisconnectLog>();
	std::string long_reason(1000, 'r');
	BOOST_TEST(log->note(long_reason.c_str(), 0).log);
	BOOST_TEST(!log->note(long_reason.c_str(), 10).log);
	std::string seen;
	log->flush(1000, [&](const char *reason, uint64_t) { seen = reason; });
	BOOST_TEST(seen == std::string(DisconnectLog::kReasonBytes - 1, 'r'));
}

BOOST_AUTO_TEST_CASE(past_the_table_every_disconnect_is_logged)
{
	auto log = std::make_unique<DisconnectLog>();
	for (size_t i = 0; i < DisconnectLog::kReasons; i++)
		BOOST_TEST(log->note(("reason " + std::to_string(i)).c_str(), 0).log);
	for (int i = 0; i < 3; i++)
		BOOST_TEST(log->note("one reason too many", 0).log);
}

BOOST_AUTO_TEST_SUITE_END()
