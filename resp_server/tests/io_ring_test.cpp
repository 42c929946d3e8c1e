/*
 * io_ring_test.cpp — Boost.Test cases of IoRing (resp_server/net/io_ring.h) over socket pairs:
 * a receive stays armed across arrivals and lends pool buffers, ends at end of file and with
 * -ENOBUFS when the pool runs dry, sends report how much the socket took, a poll fires once,
 * shutting a socket down ends its receive (how a worker closes a connection), a wait with a
 * timeout returns -ETIME, and a pause lasts its time while what arrives is taken in.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/net/io_ring.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

using namespace local_cache::resp;

namespace {

constexpr unsigned kBufferSize = 4096;

struct Pair {
	int ours = -1, theirs = -1;
	Pair()
	{
		int fds[2];
		BOOST_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
		ours = fds[0];
		theirs = fds[1];
	}
	~Pair()
	{
		close(ours);
		if (theirs >= 0)
			close(theirs);
	}
};

struct Ring {
	IoRing ring;
	explicit Ring(unsigned buffers = 8)
	{
		int error = ring.open(64, buffers, kBufferSize);
		/* The worker falls back to epoll where this fails; the tests need a kernel that allows it
		 * (Linux 6.1 or later, kernel.io_uring_disabled = 0, no seccomp filter refusing it). */
		BOOST_REQUIRE_MESSAGE(error == 0, "io_uring refused: " << strerror(error));
	}
	/* Waits once and returns what completed. */
	std::vector<IoRing::Completion> wait(int timeout_ms = 2000)
	{
		std::vector<IoRing::Completion> done;
		int rc = ring.submit_and_wait(timeout_ms);
		BOOST_TEST((rc == 0 || rc == -ETIME));
		ring.each_completion([&](const IoRing::Completion &c) { done.push_back(c); });
		return done;
	}
};

} // namespace

BOOST_AUTO_TEST_SUITE(io_ring)

BOOST_AUTO_TEST_CASE(receive_stays_armed_and_lends_buffers)
{
	Ring r;
	Pair pair;
	r.ring.receive(pair.ours, 7);
	for (const std::string text : {"PING\r\n", "GET a\r\n"}) {
		BOOST_REQUIRE(write(pair.theirs, text.data(), text.size()) == ssize_t(text.size()));
		std::vector<IoRing::Completion> done = r.wait();
		BOOST_REQUIRE(done.size() == 1u);
		BOOST_TEST(done[0].user_data == 7u);
		BOOST_TEST(done[0].result == int(text.size()));
		BOOST_TEST(IoRing::more_follow(done[0]));
		BOOST_REQUIRE(IoRing::has_buffer(done[0]));
		BOOST_TEST(std::string(r.ring.buffer_of(done[0]), size_t(done[0].result)) == text);
		r.ring.recycle(done[0]);
	}
	close(pair.theirs);
	pair.theirs = -1;
	std::vector<IoRing::Completion> done = r.wait();
	BOOST_REQUIRE(done.size() == 1u);
	BOOST_TEST(done[0].result == 0);
	BOOST_TEST(!IoRing::more_follow(done[0]));
}

BOOST_AUTO_TEST_CASE(receive_ends_with_enobufs_when_the_pool_is_dry)
{
	Ring r(2);
	Pair first, second, third;
	for (Pair *p : {&first, &second, &third})
		r.ring.receive(p->ours, uint64_t(p->ours));
	r.ring.submit();
	/* Three arrivals, nothing recycled: two get the pool's buffers, one ends its receive. */
	for (Pair *p : {&first, &second, &third})
		BOOST_REQUIRE(write(p->theirs, "x", 1) == 1);
	std::vector<IoRing::Completion> done;
	for (int turn = 0; turn < 5 && done.size() < 3; turn++)
		for (const IoRing::Completion &c : r.wait(200))
			done.push_back(c);
	BOOST_REQUIRE(done.size() == 3u);
	int lent = 0, dry = 0;
	for (const IoRing::Completion &c : done) {
		if (c.result == -ENOBUFS) {
			dry++;
			BOOST_TEST(!IoRing::more_follow(c));
		} else if (c.result == 1 && IoRing::has_buffer(c)) {
			lent++;
		}
	}
	BOOST_TEST(lent == 2);
	BOOST_TEST(dry == 1);
}

BOOST_AUTO_TEST_CASE(send_reports_what_the_socket_took)
{
	Ring r;
	Pair pair;
	int small = 4096;
	BOOST_REQUIRE(setsockopt(pair.ours, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
	std::string reply(1 << 20, 'v');
	r.ring.send(pair.ours, reply.data(), reply.size(), 9);
	r.ring.submit();
	/* Read it all from the other end while the send goes on: short sends are the caller's to
	 * continue, so count what each completion took and send the rest. */
	size_t sent = 0, received = 0;
	std::vector<char> sink(65536);
	for (int turn = 0; turn < 10000 && received < reply.size(); turn++) {
		ssize_t n = recv(pair.theirs, sink.data(), sink.size(), MSG_DONTWAIT);
		if (n > 0)
			received += size_t(n);
		r.ring.submit_and_wait(0);
		r.ring.each_completion([&](const IoRing::Completion &c) {
			BOOST_REQUIRE(c.user_data == 9u);
			BOOST_REQUIRE(c.result > 0);
			sent += size_t(c.result);
			if (sent < reply.size())
				r.ring.send(pair.ours, reply.data() + sent, reply.size() - sent, 9);
		});
	}
	BOOST_TEST(sent == reply.size());
	BOOST_TEST(received == reply.size());
}

BOOST_AUTO_TEST_CASE(poll_fires_once)
{
	Ring r;
	int event = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	BOOST_REQUIRE(event >= 0);
	r.ring.poll_readable(event, 3);
	BOOST_TEST(r.wait(50).empty());
	uint64_t one = 1;
	BOOST_REQUIRE(write(event, &one, sizeof(one)) == ssize_t(sizeof(one)));
	std::vector<IoRing::Completion> done = r.wait();
	BOOST_REQUIRE(done.size() == 1u);
	BOOST_TEST(done[0].user_data == 3u);
	BOOST_TEST((done[0].result & POLLIN) != 0);
	BOOST_TEST(r.wait(50).empty()); /* one completion, though the eventfd stays readable */
	close(event);
}

BOOST_AUTO_TEST_CASE(shutdown_ends_a_receive)
{
	Ring r;
	Pair pair;
	r.ring.receive(pair.ours, 5);
	BOOST_TEST(r.wait(50).empty());
	BOOST_REQUIRE(shutdown(pair.ours, SHUT_RDWR) == 0);
	std::vector<IoRing::Completion> done = r.wait();
	BOOST_REQUIRE(done.size() == 1u);
	BOOST_TEST(done[0].user_data == 5u);
	BOOST_TEST(done[0].result == 0);
	BOOST_TEST(!IoRing::more_follow(done[0]));
}

BOOST_AUTO_TEST_CASE(wait_times_out)
{
	Ring r;
	BOOST_TEST(r.ring.submit_and_wait(20) == -ETIME);
}

BOOST_AUTO_TEST_CASE(a_pause_lasts_its_time_and_takes_in_arrivals)
{
	Ring r;
	Pair p;
	r.ring.receive(p.ours, 9);
	BOOST_REQUIRE(write(p.theirs, "GET", 3) == 3);
	auto start = std::chrono::steady_clock::now();
	int rc = r.ring.submit_and_pause(20000);
	BOOST_TEST((rc == 0 || rc == -ETIME));
	/* the arrival did not end it */
	auto waited = std::chrono::steady_clock::now() - start;
	BOOST_TEST(std::chrono::duration_cast<std::chrono::microseconds>(waited).count() >= 20000);
	std::vector<IoRing::Completion> done;
	r.ring.each_completion([&](const IoRing::Completion &c) { done.push_back(c); });
	BOOST_REQUIRE(done.size() == 1u);
	BOOST_TEST(done[0].user_data == 9u);
	BOOST_TEST(done[0].result == 3);
	r.ring.recycle(done[0]);
}

BOOST_AUTO_TEST_SUITE_END()
