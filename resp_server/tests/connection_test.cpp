/*
 * connection_test.cpp — Boost.Test cases of a worker's clients (resp_server/clients/) served
 * end to end over socket pairs, through both backends of the transport, with the command layer
 * over the fakes of fake_data.h and fakes of what the clients ask of PostgreSQL (clients/host.h):
 * pipelined requests answered in order, QUIT closing after its reply, a login past
 * resp_max_clients refused with Redis's error, a client that sends more than
 * resp_max_request_size closed with a log line, and the replies of writes that share a commit
 * held until it is made.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/clients/server.h"
#include "resp_server/clients/write_pool.h"
#include "resp_server/tests/fake_data.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace local_cache::resp;

namespace {

/* The worker's side of PostgreSQL, in memory. */
struct FakeHost final : public ClientHost {
	std::vector<std::string> lines;
	int64_t counters[6] = {};
	uint64_t issued = 0;
	uint64_t largest_output_buffer = 0;

	void log(const char *line, const char *, const char *) noexcept override { lines.emplace_back(line); }
	int64_t now_ms() override
	{
		using namespace std::chrono;
		return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
	}
	void count(ClientCounter counter, int64_t delta) override { counters[int(counter)] += delta; }
	void note_largest_output_buffer(uint64_t bytes) override { largest_output_buffer = bytes; }
	uint64_t next_client_number() override { return ++issued; }
	uint64_t logged_in_clients_total() override { return uint64_t(counters[int(ClientCounter::LoggedIn)]); }
	std::vector<pid_t> our_workers() override { return {getpid()}; }
	bool remote_client_may_exist(uint64_t) override { return false; }
	void running_request_of(uint64_t) override {}
	int64_t counter(ClientCounter which) const { return counters[int(which)]; }
};

struct QuietFeed final : public CommitFeed {
	bool sleeping() override { return false; }
	void awake() override {}
	bool has_news() override { return false; }
	bool waiting() override { return false; }
	bool changes_logged() override { return true; }
	void collect(std::vector<CommittedChange> &, std::vector<RelayedInvalidation> &, bool) override {}
	bool role_may_read(uint64_t, uint32_t) override { return true; }
	bool relay(uint64_t, std::string_view) override { return false; }
	void count_trackers(int) override {}
};

/* No write worker runs: writes run in the worker, as with resp_write_workers = 0. */
struct NoWriteWorkers final : public WriteWorkers {
	bool running(int) override { return false; }
	bool claim(int) override { return false; }
	void release(int) override {}
	socklen_t address(int, sockaddr_un *) override { return 0; }
};

/* A worker's clients over the fakes, on a loop of the backend asked for. */
struct Worker final : public EventLoop::Turn {
	EventLoop loop;
	FakeHost host;
	resp_test::FakeData data;
	QuietFeed feed;
	NoWriteWorkers workers;
	std::unique_ptr<Server> server;
	std::unique_ptr<CommandProcessor> processor;
	std::unique_ptr<WorkerClients> clients;
	std::unique_ptr<WritePool> pool;
	/* The case: conditions and actions, in order (as transport_test.cpp's script). */
	std::vector<std::pair<std::function<bool()>, std::function<void()>>> steps;
	size_t at = 0;
	bool timed_out = false;
	std::unique_ptr<Timer> tick, watchdog;

	explicit Worker(bool ring)
	{
		if (ring) {
			int error = loop.use_ring();
			BOOST_REQUIRE_MESSAGE(error == 0, "io_uring refused: " << strerror(error));
		}
		server = std::make_unique<Server>(0, loop, host);
		server->max_connections_here = 100;
		processor = std::make_unique<CommandProcessor>(data.sources());
		clients = std::make_unique<WorkerClients>(server.get());
		processor->set_client_directory(clients.get());
		pool = std::make_unique<WritePool>(server.get(), workers, 0);
		processor->set_write_offload(pool.get());
		server->logins = &data.logins;
		server->processor = processor.get();
		server->write_pool = pool.get();
		server->feed = &feed;
		start_tracking_delivery(server.get());
	}

	/* One client: the test's end of a socket pair whose other end the worker serves. */
	int connect()
	{
		int fds[2];
		BOOST_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
		fcntl(fds[1], F_SETFL, O_NONBLOCK);
		accept_connection(server.get(), fds[0]);
		return fds[1];
	}

	void run()
	{
		tick = std::make_unique<Timer>(loop, [] {});
		tick->start(1, 1);
		watchdog = std::make_unique<Timer>(loop, [this] {
			timed_out = true;
			stop();
		});
		watchdog->start(5000, 0);
		loop.run(*this);
		BOOST_TEST(!timed_out, "stopped at step " << at << " of " << steps.size());
	}

	void before_blocking() override
	{
		send_committed_replies(server.get());
		advance();
		if (!server->shutting_down)
			tracking_before_blocking(server.get());
	}
	void after_turn() override
	{
		send_committed_replies(server.get());
		tracking_after_wait(server.get());
		pause_for_batch(server.get());
		advance();
	}
	void advance()
	{
		while (!loop.stopping() && at < steps.size() && steps[at].first()) {
			steps[at].second();
			at++;
		}
		if (at == steps.size())
			stop();
	}
	void stop()
	{
		if (loop.stopping())
			return;
		close_clients(server.get());
		tick->close();
		watchdog->close();
		loop.stop();
	}
};

/* What the peer has received so far (appended), and whether the worker has closed its end. */
bool receive(int fd, std::string &into)
{
	char chunk[65536];
	for (;;) {
		ssize_t n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
		if (n > 0)
			into.append(chunk, size_t(n));
		else
			return n == 0;
	}
}

bool always()
{
	return true;
}

} // namespace

BOOST_AUTO_TEST_SUITE(clients)

BOOST_AUTO_TEST_CASE(pipelined_requests_are_answered_in_order_over_either_backend)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT((ring ? "io_uring" : "libuv"))
		{
			Worker worker(ring);
			int client = worker.connect();
			std::string replies;
			worker.steps = {
				{always,
				 [&] {
					 std::string pipeline = "PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n*1\r\n$4\r\nPING\r\n";
					 send(client, pipeline.data(), pipeline.size(), 0);
				 }},
				{[&] {
					 receive(client, replies);
					 return replies.size() >= 19;
				 },
				 [] {}},
			};
			worker.run();
			BOOST_TEST(replies == "+PONG\r\n$2\r\nhi\r\n+PONG\r\n");
			BOOST_TEST(worker.host.counter(ClientCounter::CommandsProcessed) == 3);
			BOOST_TEST(worker.host.counter(ClientCounter::ConnectionsReceived) == 1);
			BOOST_TEST(worker.host.counter(ClientCounter::Connected) == 0); /* closed at the end */
			close(client);
		}
	}
}

BOOST_AUTO_TEST_CASE(quit_closes_the_connection_after_its_reply)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT((ring ? "io_uring" : "libuv"))
		{
			Worker worker(ring);
			int client = worker.connect();
			std::string replies;
			bool closed = false;
			worker.steps = {
				{always, [&] { send(client, "QUIT\r\nPING\r\n", 12, 0); }},
				{[&] { return (closed = receive(client, replies)); }, [] {}},
			};
			worker.run();
			BOOST_TEST(closed);
			BOOST_TEST(replies == "+OK\r\n");
			close(client);
		}
	}
}

BOOST_AUTO_TEST_CASE(a_login_past_max_clients_is_refused_with_redis_error)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT((ring ? "io_uring" : "libuv"))
		{
			Worker worker(ring);
			worker.server->limits.max_clients = 1;
			int first = worker.connect(); /* logs in at once as the default role */
			int second = worker.connect();
			std::string to_first, to_second;
			bool second_closed = false;
			worker.steps = {
				{always, [&] { send(first, "PING\r\n", 6, 0); }},
				{[&] {
					 receive(first, to_first);
					 second_closed = second_closed || receive(second, to_second);
					 return to_first == "+PONG\r\n" && second_closed;
				 },
				 [] {}},
			};
			worker.run();
			BOOST_TEST(to_second == "-ERR max number of clients reached\r\n");
			BOOST_TEST(worker.host.counter(ClientCounter::Rejected) == 1);
			close(first);
			close(second);
		}
	}
}

BOOST_AUTO_TEST_CASE(input_past_max_request_size_closes_the_client_with_a_log_line)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT((ring ? "io_uring" : "libuv"))
		{
			Worker worker(ring);
			worker.server->limits.max_request_size = 1024;
			int client = worker.connect();
			std::string replies;
			bool closed = false;
			std::string inline_request(4096, 'x'); /* no line end: input that never completes */
			worker.steps = {
				{always, [&] { send(client, inline_request.data(), inline_request.size(), 0); }},
				{[&] { return (closed = receive(client, replies)); }, [] {}},
			};
			worker.run();
			BOOST_TEST(closed);
			bool logged = false;
			for (const std::string &line : worker.host.lines)
				logged = logged || line.find("closing client") != std::string::npos;
			BOOST_TEST(logged);
			close(client);
		}
	}
}

/* INFO's client_recent_max_output_buffer (what the push-backlog alert reads): the worker's timer
 * reports the most bytes one connection has not read, and 0 once it has read them; CLIENT LIST
 * shows them as the connection's omem. */
BOOST_AUTO_TEST_CASE(the_timer_reports_the_largest_unread_output)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT((ring ? "io_uring" : "libuv"))
		{
			Worker worker(ring);
			int client = worker.connect();
			std::string argument(64 * 1024, 'x');
			std::string pipeline;
			for (int i = 0; i < 40; i++)
				pipeline += "*2\r\n$4\r\nECHO\r\n$" + std::to_string(argument.size()) + "\r\n" + argument + "\r\n";
			size_t sent = 0;
			uint64_t omem = 0;
			std::string replies;
			auto reported = [&] {
				housekeeping(worker.server.get());
				return worker.host.largest_output_buffer;
			};
			worker.steps = {
				{[&] {
					 ssize_t n = send(client, pipeline.data() + sent, pipeline.size() - sent, MSG_DONTWAIT);
					 sent += n > 0 ? size_t(n) : 0;
					 return sent == pipeline.size();
				 },
				 [] {}},
				{[&] { return reported() > (size_t(1) << 20); },
				 [&] {
					 worker.clients->each_session([&](const Session &session) { omem = session.unsent_output; });
				 }},
				{[&] {
					 receive(client, replies);
					 return replies.size() == 40 * (argument.size() + 10) && reported() == 0;
				 },
				 [] {}},
			};
			worker.run();
			BOOST_TEST(replies.size() == 40 * (argument.size() + 10));
			BOOST_TEST(omem > (uint64_t(1) << 20));
			close(client);
		}
	}
}

/* Writes the worker runs itself share a commit (RowWriter::share_commit): a pipeline's SETs make
 * one, no reply goes out before it, and a GET after them comes after it. */
BOOST_AUTO_TEST_CASE(replies_of_writes_that_share_a_commit_go_out_after_it)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT((ring ? "io_uring" : "libuv"))
		{
			Worker worker(ring);
			worker.data.writes.builtin_code_prefixes = {"items"};
			int client = worker.connect();
			std::string replies, before_commit;
			int commits_before_get = -1;
			worker.data.writes.on_commit = [&] {
				receive(client, before_commit);
				if (commits_before_get < 0)
					commits_before_get = worker.data.writes.commits;
			};
			worker.steps = {
				{always,
				 [&] {
					 auto set = [](char id) {
						 return std::string("*3\r\n$3\r\nSET\r\n$7\r\nitems:") + id + "\r\n$8\r\n{\"id\":" + id + "}\r\n";
					 };
					 std::string pipeline = set('5') + set('6') + "GET items:5\r\n" + set('7');
					 send(client, pipeline.data(), pipeline.size(), 0);
				 }},
				{[&] {
					 receive(client, replies);
					 return replies.size() >= 28;
				 },
				 [] {}},
			};
			worker.run();
			BOOST_TEST(replies == "+OK\r\n+OK\r\n$8\r\n{\"id\":5}\r\n+OK\r\n");
			BOOST_TEST(before_commit.empty());
			BOOST_TEST(commits_before_get == 1); /* the two SETs, committed before GET ran */
			BOOST_TEST(worker.data.writes.commits == 2);
			close(client);
		}
	}
}

BOOST_AUTO_TEST_CASE(a_failed_shared_commit_closes_the_connections_without_their_replies)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT((ring ? "io_uring" : "libuv"))
		{
			Worker worker(ring);
			worker.data.writes.builtin_code_prefixes = {"items"};
			worker.data.writes.fail_commits = true;
			int client = worker.connect();
			std::string replies;
			bool closed = false;
			worker.steps = {
				{always,
				 [&] {
					 /* GET makes the commit, which fails: SET's reply must not go out all the same. */
					 std::string pipeline = "PING\r\nSET items:5 {}\r\nGET items:5\r\n";
					 send(client, pipeline.data(), pipeline.size(), 0);
				 }},
				{[&] { return (closed = receive(client, replies)); }, [] {}},
			};
			worker.run();
			BOOST_TEST(closed);
			BOOST_TEST(replies.empty());
			bool logged = false;
			for (const std::string &line : worker.host.lines)
				logged = logged || line.find("the commit its writes shared failed") != std::string::npos;
			BOOST_TEST(logged);
			close(client);
		}
	}
}

BOOST_AUTO_TEST_SUITE_END()
