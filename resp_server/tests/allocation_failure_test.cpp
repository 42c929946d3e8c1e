/*
 * allocation_failure_test.cpp — what the command runner (command_table.cpp's CommandProcessor)
 * does when a C++ allocation throws std::bad_alloc in the middle of a command: for every
 * allocation a command makes, a run where that one fails. The client gets exactly one reply
 * (the command's own, or an -ERR), execute() throws nothing, nothing leaks (the allocations
 * still live after the connection is gone are those before it), and nothing is left half
 * done: no EXEC batch left open, no MULTI queue out of step, and the next request is answered
 * as on a connection where nothing failed.
 *
 * This binary's operator new (and realloc, which the reply buffer grows with) is replaced by a
 * counting one that can be told to fail; it counts and fails on the test's thread only, and
 * does nothing else unless a test arms it.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/command_harness.h"

#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace {

thread_local long live_allocations = 0;  /* made and not freed, on this thread */
thread_local long allocations_made = 0;  /* ever, on this thread */
thread_local long failing_allocation = 0; /* > 0: the allocation that many from now throws */

void *allocate(std::size_t size)
{
	if (failing_allocation > 0 && --failing_allocation == 0)
		throw std::bad_alloc();
	void *block = std::malloc(size == 0 ? 1 : size);
	if (block == nullptr)
		throw std::bad_alloc();
	live_allocations++;
	allocations_made++;
	return block;
}

void release(void *block) noexcept
{
	if (block == nullptr)
		return;
	live_allocations--;
	std::free(block);
}

} // namespace

/* The reply buffer grows with realloc (protocol/reply.cpp): it fails here too, as a null. */
extern "C" void *__libc_realloc(void *block, std::size_t size);
extern "C" void *realloc(void *block, std::size_t size)
{
	if (failing_allocation > 0 && --failing_allocation == 0)
		return nullptr;
	allocations_made++;
	return __libc_realloc(block, size);
}

void *operator new(std::size_t size)
{
	return allocate(size);
}
void *operator new[](std::size_t size)
{
	return allocate(size);
}
void *operator new(std::size_t size, const std::nothrow_t &) noexcept
{
	try {
		return allocate(size);
	} catch (const std::bad_alloc &) {
		return nullptr;
	}
}
void *operator new[](std::size_t size, const std::nothrow_t &) noexcept
{
	try {
		return allocate(size);
	} catch (const std::bad_alloc &) {
		return nullptr;
	}
}
void operator delete(void *block) noexcept
{
	release(block);
}
void operator delete[](void *block) noexcept
{
	release(block);
}
void operator delete(void *block, std::size_t) noexcept
{
	release(block);
}
void operator delete[](void *block, std::size_t) noexcept
{
	release(block);
}

using local_cache::resp::ReplyBuffer;
using local_cache::resp::Request;
using local_cache::resp::SlowlogSettings;
using resp_test::Args;
using resp_test::Connection;

namespace {

/* A request to fail in, after `setup` (run without failures), and one to run after it. */
struct Case {
	std::vector<Args> setup;
	Args request;
	Args next = {"GET", "items:1"};
	/* When the request failed: what `next` answers then, if not what it answers after success. */
	std::string next_after_failure;
};

/* Runs `args` on the connection, allocation `failing` of execute() failing (0: none); true
 * unless execute() threw. *made: how many allocations it made. */
bool execute(Connection &c, const Args &args, ReplyBuffer &out, long failing = 0, long *made = nullptr)
{
	std::vector<std::string_view> views(args.begin(), args.end());
	long start = allocations_made;
	bool returned = true;
	failing_allocation = failing;
	try {
		c.processor.execute(Request{views.data(), views.size()}, c.session, out);
	} catch (...) {
		returned = false;
	}
	failing_allocation = 0;
	if (made != nullptr)
		*made = allocations_made - start;
	return returned;
}

void prepare(Connection &c, const Case &test)
{
	c.processor.configure_slowlog(SlowlogSettings{0, 128}); /* every request is logged */
	for (const Args &args : test.setup) {
		ReplyBuffer out;
		execute(c, args, out);
	}
}

/* What a run of the case where allocation `failing` (0: none) fails left behind. */
struct Outcome {
	bool threw = false;
	bool one_reply = false;      /* exactly one well-formed value */
	bool same_or_error = false;  /* the reply without failures, or an -ERR (-EXECABORT) */
	bool batch_closed = false;   /* no EXEC batch left open */
	bool queue_in_step = false;  /* MULTI's queue: as many argument ends as arguments */
	bool next_answered = false;  /* the next request answers as without failures */
	bool no_leak = false;
};

Outcome run_case(const Case &test, long failing, const std::string &expected, const std::string &expected_next)
{
	Outcome outcome;
	long before = live_allocations;
	{
		Connection c;
		prepare(c, test);
		ReplyBuffer out;
		outcome.threw = !execute(c, test.request, out, failing);
		std::string_view reply = out.view();
		try {
			resp_test::read_one(reply);
			outcome.one_reply = true;
		} catch (...) {
		}
		/* EXEC that writes answers a queued command's error by rolling back: -EXECABORT. */
		outcome.same_or_error = reply == expected || reply.substr(0, 5) == "-ERR " ||
			(test.request[0] == "EXEC" && reply.substr(0, 11) == "-EXECABORT ");
		outcome.batch_closed = !c.data.batches.in_batch;
		const auto &multi = c.session.multi;
		size_t arguments = 0;
		for (size_t argc : multi.argcs)
			arguments += argc;
		outcome.queue_in_step = multi.arg_ends.size() == arguments &&
			(multi.arg_ends.empty() ? multi.bytes.empty() : multi.arg_ends.back() == multi.bytes.size());
		bool failed = reply != expected;
		std::string_view answer = failed && !test.next_after_failure.empty() ? test.next_after_failure : expected_next;
		ReplyBuffer next;
		outcome.next_answered = execute(c, test.next, next) &&
			(next.view() == answer || (test.next[0] == "EXEC" && next.view().substr(0, 11) == "-EXECABORT "));
	}
	outcome.no_leak = live_allocations == before;
	return outcome;
}

void check_every_allocation(const Case &test)
{
	/* Once without failures: the replies to expect, how many allocations the request makes,
	 * and the worker-lifetime statics (the command index) made. */
	std::string expected, expected_next;
	long made = 0;
	{
		Connection c;
		prepare(c, test);
		ReplyBuffer out, next;
		execute(c, test.request, out, 0, &made);
		execute(c, test.next, next);
		expected.assign(out.view());
		expected_next.assign(next.view());
	}
	BOOST_TEST_REQUIRE(made > 0);
	for (long failing = 1; failing <= made; failing++) {
		Outcome o = run_case(test, failing, expected, expected_next);
		BOOST_TEST_CONTEXT(test.request[0] << ", allocation " << failing << " of " << made)
		{
			BOOST_TEST(!o.threw);
			BOOST_TEST(o.one_reply);
			BOOST_TEST(o.same_or_error);
			BOOST_TEST(o.batch_closed);
			BOOST_TEST(o.queue_in_step);
			BOOST_TEST(o.next_answered);
			BOOST_TEST(o.no_leak);
		}
	}
}

} // namespace

BOOST_AUTO_TEST_SUITE(allocation_failure)

BOOST_AUTO_TEST_CASE(reads)
{
	check_every_allocation({{}, {"MGET", "items:1", "items:2", "nosuch:1", "bad"}});
	check_every_allocation({{}, {"HGETALL", "items:2"}});
	check_every_allocation({{}, {"HMGET", "items:2", "value", "note", "nosuch"}});
	check_every_allocation({{}, {"SCAN", "0", "COUNT", "3"}});
}

BOOST_AUTO_TEST_CASE(writes)
{
	check_every_allocation({{}, {"SET", "items:9", "{\"id\":9}"}, {"GET", "items:1"}});
	check_every_allocation({{}, {"HSET", "items:1", "note", "x"}, {"PING"}});
	check_every_allocation({{}, {"WATCH", "items:1", "items:2"}, {"PING"}});
}

BOOST_AUTO_TEST_CASE(multi_and_exec)
{
	/* MULTI itself: answered OK (the transaction began) or -ERR (it did not). */
	check_every_allocation({{}, {"MULTI"}, {"PING"}, "+PONG\r\n"});
	/* Queueing: the queue stays in step; EXEC then runs or aborts it as a whole. */
	check_every_allocation({{{"MULTI"}, {"GET", "items:1"}}, {"SET", "items:9", "{}"}, {"EXEC"}});
	/* EXEC: the batch is always ended, and the transaction with it. */
	check_every_allocation({{{"WATCH", "items:2"}, {"MULTI"}, {"GET", "items:1"}, {"SET", "items:9", "{}"}},
							{"EXEC"},
							{"GET", "items:1"}});
}

BOOST_AUTO_TEST_CASE(server_and_connection)
{
	check_every_allocation({{}, {"INFO"}});
	check_every_allocation({{}, {"CLIENT", "LIST"}});
	check_every_allocation({{{"PING"}, {"ECHO", "x"}}, {"SLOWLOG", "GET"}});
	check_every_allocation({{}, {"HELLO", "2", "SETNAME", "app"}});
	check_every_allocation({{}, {"NOSUCHCOMMAND", "x"}});
}

BOOST_AUTO_TEST_SUITE_END()
