/*
 * disconnect_log_test.cpp — Boost.Test cases of DisconnectLog (resp_server/clients/disconnect_log.h):
 * one line a second per reason then a count, reasons kept after the caller's text is gone,
 * and a full table that still logs every disconnect; and of HandshakeFailureLog: a few lines per
 * address and window then one count, each address on its own, and the bound on addresses.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/clients/disconnect_log.h"

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

using Counts = std::vector<std::pair<std::string, uint64_t>>;

/* The lines a flush writes: (address, count), "" for the addresses not followed. */
Counts flushed(HandshakeFailureLog &log, int64_t now_ms)
{
	Counts lines;
	log.flush(now_ms, [&](const char *address, uint64_t count) { lines.emplace_back(address ? address : "", count); });
	return lines;
}

BOOST_AUTO_TEST_CASE(failed_handshakes_a_few_lines_per_address_then_one_count)
{
	HandshakeFailureLog log;
	int written = 0;
	for (int i = 0; i < 30; i++)
		written += log.note("10.0.0.7", 1000 + i) ? 1 : 0;
	BOOST_TEST(written == int(HandshakeFailureLog::kLinesPerAddress));
	/* Another address behind the same flood has lines of its own. */
	BOOST_TEST(log.note("10.0.0.8", 1100));
	BOOST_TEST(flushed(log, 1000 + HandshakeFailureLog::kWindowMs - 1).empty()); /* the window is not over */
	Counts lines = flushed(log, 1000 + HandshakeFailureLog::kWindowMs);
	BOOST_TEST_REQUIRE(lines.size() == 1u); /* 10.0.0.8 had nothing left out */
	BOOST_TEST(lines[0].first == "10.0.0.7");
	BOOST_TEST(lines[0].second == 30u - HandshakeFailureLog::kLinesPerAddress);
	/* The window is forgotten: the next failure starts a new one, with its lines. */
	BOOST_TEST(log.note("10.0.0.7", 20000));
	BOOST_TEST(flushed(log, 20000 + HandshakeFailureLog::kWindowMs).empty());
	BOOST_TEST(log.addresses_followed() == 0u);
}

BOOST_AUTO_TEST_CASE(failed_handshakes_of_addresses_past_the_bound_are_counted_together)
{
	HandshakeFailureLog log;
	for (size_t i = 0; i < HandshakeFailureLog::kAddresses; i++)
		BOOST_TEST(log.note("10.1." + std::to_string(i), 0));
	BOOST_TEST(log.addresses_followed() == HandshakeFailureLog::kAddresses);
	for (int i = 0; i < 50; i++)
		BOOST_TEST(!log.note("192.168.0." + std::to_string(i), 10));
	BOOST_TEST(log.addresses_followed() == HandshakeFailureLog::kAddresses);
	Counts lines = flushed(log, 10 + HandshakeFailureLog::kWindowMs);
	BOOST_TEST_REQUIRE(lines.size() == 1u);
	BOOST_TEST(lines[0].first == "");
	BOOST_TEST(lines[0].second == 50u);
	BOOST_TEST(log.addresses_followed() == 0u);
	BOOST_TEST(log.note("192.168.0.1", 10 + HandshakeFailureLog::kWindowMs)); /* room again */
}

BOOST_AUTO_TEST_SUITE_END()
