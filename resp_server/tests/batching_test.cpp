/*
 * batching_test.cpp — Boost.Test cases of BatchPolicy (resp_server/net/batching.h): a busy worker
 * pauses under the load of many clients, and never when the pause would hold up the requests
 * of few clients, a lone client, a light load, or right after an idle spell.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/net/batching.h"

#include <vector>

using namespace local_cache::resp;

namespace {

constexpr int kDelayUs = 50;

/* Millisecond `ms` of a worker's loop clock: `reads` reads, one per loop turn, going round
 * `marks` (one per connection). Returns after how many of those turns the policy paused. */
int run_millisecond(BatchPolicy &policy, uint64_t ms, int reads, std::vector<uint64_t> &marks,
					int delay_us = kDelayUs, unsigned pauses_apart = BatchPolicy::kPausesApartInRing)
{
	int pauses = 0;
	for (int i = 0; i < reads; i++) {
		policy.count_read(ms, &marks[size_t(i) % marks.size()]);
		pauses += policy.should_pause(ms, delay_us, pauses_apart);
	}
	return pauses;
}

std::vector<uint64_t> connections(int n)
{
	return std::vector<uint64_t>(size_t(n), BatchPolicy::kNever);
}

/* Ten milliseconds of `reads_per_ms` reads going round `clients` connections: the pauses. */
int pauses_in_ten_milliseconds(int clients, int reads_per_ms, int delay_us = kDelayUs,
							   unsigned pauses_apart = BatchPolicy::kPausesApartInRing)
{
	BatchPolicy policy;
	auto marks = connections(clients);
	int pauses = 0;
	for (uint64_t ms = 1000; ms < 1010; ms++)
		pauses += run_millisecond(policy, ms, reads_per_ms, marks, delay_us, pauses_apart);
	return pauses;
}

} // namespace

BOOST_AUTO_TEST_SUITE(batching)

BOOST_AUTO_TEST_CASE(many_busy_clients_pause_once_a_whole_millisecond_shows_it)
{
	BatchPolicy policy;
	auto marks = connections(64);
	BOOST_TEST(run_millisecond(policy, 1000, 120, marks) == 0); /* no history yet */
	BOOST_TEST(run_millisecond(policy, 1001, 120, marks) == 120);
	BOOST_TEST(run_millisecond(policy, 1002, 120, marks) == 120);
}

BOOST_AUTO_TEST_CASE(a_lone_client_never_waits)
{
	BOOST_TEST(pauses_in_ten_milliseconds(1, 40) == 0);
}

BOOST_AUTO_TEST_CASE(few_clients_sending_quickly_never_wait)
{
	/* 8 clients at 110 reads/ms: each sends every 73 µs, less than four pauses apart */
	BOOST_TEST(pauses_in_ten_milliseconds(8, 110) == 0);
}

BOOST_AUTO_TEST_CASE(many_clients_four_pauses_apart_wait_and_three_apart_do_not)
{
	/* 64 clients at 320 reads/ms: each sends every 200 µs, four 50 µs pauses */
	BOOST_TEST(pauses_in_ten_milliseconds(64, 320) > 0);
	/* at 430 reads/ms: 149 µs apart */
	BOOST_TEST(pauses_in_ten_milliseconds(64, 430) == 0);
}

BOOST_AUTO_TEST_CASE(a_worker_pausing_in_nanosleep_wants_eight_pauses_apart)
{
	constexpr unsigned kSleep = BatchPolicy::kPausesApartInSleep;
	/* 64 clients 200 µs apart: not in nanosleep */
	BOOST_TEST(pauses_in_ten_milliseconds(64, 320, kDelayUs, kSleep) == 0);
	/* 64 clients 530 µs apart (120 reads/ms) */
	BOOST_TEST(pauses_in_ten_milliseconds(64, 120, kDelayUs, kSleep) > 0);
}

BOOST_AUTO_TEST_CASE(a_light_load_never_waits)
{
	/* 10 reads/ms: fewer than one per 50 µs pause */
	BOOST_TEST(pauses_in_ten_milliseconds(64, 10) == 0);
}

BOOST_AUTO_TEST_CASE(no_delay_never_waits)
{
	BOOST_TEST(pauses_in_ten_milliseconds(64, 120, 0) == 0);
	BOOST_TEST(pauses_in_ten_milliseconds(64, 120) > 0);
}

BOOST_AUTO_TEST_CASE(an_idle_spell_forgets_the_load)
{
	BatchPolicy policy;
	auto marks = connections(64);
	run_millisecond(policy, 1000, 120, marks);
	BOOST_TEST(run_millisecond(policy, 1001, 120, marks) == 120);
	/* nothing read in 1002: the first busy millisecond after it has no history */
	BOOST_TEST(run_millisecond(policy, 1003, 120, marks) == 0);
	BOOST_TEST(run_millisecond(policy, 1004, 120, marks) == 120);
}

BOOST_AUTO_TEST_CASE(a_turn_without_reads_never_waits)
{
	BatchPolicy policy;
	auto marks = connections(64);
	run_millisecond(policy, 1000, 120, marks);
	run_millisecond(policy, 1001, 120, marks);
	BOOST_TEST(policy.should_pause(1001, kDelayUs, BatchPolicy::kPausesApartInRing) == false); /* e.g. a timer's turn */
	policy.count_read(1001, &marks[0]);
	BOOST_TEST(policy.should_pause(1001, kDelayUs, BatchPolicy::kPausesApartInRing) == true);
}

BOOST_AUTO_TEST_CASE(four_pauses_apart_on_a_plaintext_ring_eight_under_tls_or_epoll)
{
	BOOST_TEST(BatchPolicy::pauses_apart(true, false) == BatchPolicy::kPausesApartInRing);
	BOOST_TEST(BatchPolicy::pauses_apart(true, true) == BatchPolicy::kPausesApartInSleep);
	BOOST_TEST(BatchPolicy::pauses_apart(false, false) == BatchPolicy::kPausesApartInSleep);
	BOOST_TEST(BatchPolicy::pauses_apart(false, true) == BatchPolicy::kPausesApartInSleep);
}

BOOST_AUTO_TEST_SUITE_END()
