/*
 * transport_test.cpp — Boost.Test cases of the transport (resp_server/net/transport.h,
 * event_loop.h, listener.h) over socket pairs, every case through both backends (the io_uring,
 * libuv's streams) and the TLS cases over both: a request in and its reply out, a reply larger
 * than the socket takes at once, the peer closing, no room for input, an exception in the owner's
 * callback, close() with a write in flight (released later, never inside close), the TLS
 * handshake with and without a client certificate, plaintext on a TLS stream; the loop's timers,
 * watches and wakeup, the batching pause, and listening sockets.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/net/event_loop.h"
#include "resp_server/net/listener.h"
#include "resp_server/net/tls_session.h"
#include "resp_server/tests/tls_certificates.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace local_cache::resp;
using resp_test::certificates;
using resp_test::KeyAndCertificate;

namespace {

const char *backend_name(bool ring)
{
	return ring ? "io_uring" : "libuv";
}

/* A loop of the backend asked for. */
std::unique_ptr<EventLoop> make_loop(bool ring)
{
	auto loop = std::make_unique<EventLoop>();
	if (ring) {
		int error = loop->use_ring();
		/* The worker falls back to libuv where this fails; the tests need a kernel that allows
		 * it (Linux 6.1 or later, kernel.io_uring_disabled = 0, no seccomp filter refusing it). */
		BOOST_REQUIRE_MESSAGE(error == 0, "io_uring refused: " << strerror(error));
	}
	return loop;
}

/* The two ends of a connection: `ours` becomes the stream, `theirs` is the test's (non-blocking). */
struct Pair {
	int ours = -1, theirs = -1;
	Pair()
	{
		int fds[2];
		BOOST_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
		ours = fds[0];
		theirs = fds[1];
		fcntl(theirs, F_SETFL, O_NONBLOCK);
	}
	~Pair()
	{
		if (theirs >= 0)
			close(theirs);
	}
	void send(const std::string &bytes) const
	{
		BOOST_REQUIRE(::send(theirs, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size()));
	}
	/* What has arrived on the test's end, appended to `into`. */
	void receive(std::string &into) const
	{
		char chunk[65536];
		ssize_t n;
		while ((n = recv(theirs, chunk, sizeof(chunk), MSG_DONTWAIT)) > 0)
			into.append(chunk, size_t(n));
	}
};

/* A stream's owner that records what it hears and, like a client, sends what it has queued. */
struct Owner final : public StreamEvents {
	std::unique_ptr<Stream> stream;
	std::string input;
	std::vector<char> room = std::vector<char>(16 * 1024);
	bool give_room = true;
	bool throw_when_readable = false;
	ReplyBuffer outbox;
	int readables = 0, writables = 0, establishments = 0;
	std::optional<Ending> ending;
	std::string reason;
	bool closed = false, released_seen = false, event_after_close = false;

	ByteRange input_room() override
	{
		note();
		return give_room ? ByteRange{room.data(), room.size()} : ByteRange{};
	}
	void input_added(size_t length) override { input.append(room.data(), length); }
	void readable() override
	{
		note();
		readables++;
		if (throw_when_readable)
			throw std::runtime_error("the owner failed");
		flush();
	}
	void established() override { establishments++; }
	void writable() override
	{
		note();
		writables++;
		flush();
	}
	void ended(Ending how, const char *why) noexcept override
	{
		ending = how;
		reason = why != nullptr ? why : "";
		close();
	}
	void released() noexcept override
	{
		released_seen = true;
		stream.reset(); /* a stream may be deleted in its own last callback */
	}

	void queue(const std::string &bytes) { outbox.append(bytes); }
	void flush()
	{
		if (closed || stream->sending())
			return;
		if (stream->send(outbox).status == SendResult::Failed)
			close();
	}
	void close()
	{
		if (closed)
			return;
		closed = true;
		stream->close();
		BOOST_TEST(!released_seen); /* never from inside close() */
	}
	void note()
	{
		if (closed)
			event_after_close = true;
	}
};

/*
 * Runs the loop through `steps`: each waits for its condition, then acts, in order. Then
 * `finish` closes what the case opened, and the loop runs until everything has closed. A case
 * that does not get there in 5 s fails.
 */
struct Step {
	std::function<bool()> ready;
	std::function<void()> act;
};

struct Script final : public EventLoop::Turn {
	EventLoop &loop;
	std::vector<Step> steps;
	std::function<void()> finish;
	size_t at = 0;
	bool timed_out = false;
	Timer tick;
	Timer watchdog;

	Script(EventLoop &event_loop, std::vector<Step> all, std::function<void()> end)
		: loop(event_loop), steps(std::move(all)), finish(std::move(end)), tick(event_loop, [] {}),
		  watchdog(event_loop, [this] {
			  timed_out = true;
			  stop();
		  })
	{
		tick.start(1, 1); /* turns keep coming while a case polls its end of the pair */
		watchdog.start(5000, 0);
	}
	void before_blocking() override { advance(); }
	void after_turn() override { advance(); }
	void advance()
	{
		while (!loop.stopping() && at < steps.size() && steps[at].ready()) {
			steps[at].act();
			at++;
		}
		if (at == steps.size())
			stop();
	}
	void stop()
	{
		if (loop.stopping())
			return;
		finish();
		tick.close();
		watchdog.close();
		loop.stop();
	}
};

void run(EventLoop &loop, std::vector<Step> steps, std::function<void()> finish)
{
	Script script(loop, std::move(steps), std::move(finish));
	loop.run(script);
	BOOST_TEST(!script.timed_out, "stopped at step " << script.at << " of " << script.steps.size());
}

bool always()
{
	return true;
}

/* A TLS client on the test's end of the pair, driven a step at a time (non-blocking). */
struct TlsClient {
	SSL_CTX *context;
	SSL *ssl;
	TlsClient(int fd, const KeyAndCertificate *identity = nullptr)
	{
		context = SSL_CTX_new(TLS_client_method());
		X509_STORE_add_cert(SSL_CTX_get_cert_store(context), certificates().ca.certificate);
		SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
		if (identity != nullptr) {
			SSL_CTX_use_certificate(context, identity->certificate);
			SSL_CTX_use_PrivateKey(context, identity->key);
		}
		ssl = SSL_new(context);
		SSL_set_fd(ssl, fd);
		SSL_set_connect_state(ssl);
		SSL_set_tlsext_host_name(ssl, "localhost");
	}
	~TlsClient()
	{
		SSL_free(ssl);
		SSL_CTX_free(context);
	}
	bool connected()
	{
		ERR_clear_error();
		return SSL_do_handshake(ssl) == 1;
	}
	void write(const std::string &text)
	{
		BOOST_REQUIRE(SSL_write(ssl, text.data(), int(text.size())) == int(text.size()));
	}
	void read(std::string &into)
	{
		char chunk[4096];
		size_t n = 0;
		ERR_clear_error();
		while (SSL_read_ex(ssl, chunk, sizeof(chunk), &n) == 1)
			into.append(chunk, n);
		ERR_clear_error();
	}
};

std::shared_ptr<TlsContext> load(TlsClientAuth auth = TlsClientAuth::Optional)
{
	std::string error;
	std::shared_ptr<TlsContext> context = TlsContext::load(certificates().config(auth), &error);
	BOOST_TEST_REQUIRE(context != nullptr, error);
	return context;
}

/* The stream of `pair.ours` for `owner`, on `loop`, TLS over it when `tls` is given. */
void open(EventLoop &loop, Owner &owner, const Pair &pair, const TlsContext *tls = nullptr)
{
	owner.stream = loop.open_stream(pair.ours, owner, tls);
	BOOST_REQUIRE(owner.stream != nullptr);
	owner.stream->start_reading();
}

} // namespace

BOOST_AUTO_TEST_SUITE(transport)

BOOST_AUTO_TEST_CASE(a_request_comes_in_and_its_reply_goes_out)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			BOOST_TEST(loop->on_ring() == ring);
			Pair pair;
			Owner owner;
			open(*loop, owner, pair);
			BOOST_TEST(owner.stream->identity().fd == pair.ours);
			BOOST_TEST(owner.stream->tls() == nullptr);
			std::string reply;
			run(*loop,
				{{always, [&] { pair.send("*1\r\n$4\r\nPING\r\n"); }},
				 {[&] { return owner.input == "*1\r\n$4\r\nPING\r\n"; },
				  [&] {
					  owner.queue("+PONG\r\n");
					  owner.flush();
				  }},
				 {[&] {
					  pair.receive(reply);
					  return reply == "+PONG\r\n";
				  },
				  [] {}}},
				[&] { owner.close(); });
			BOOST_TEST(owner.readables >= 1);
			BOOST_TEST(!owner.ending.has_value());
			BOOST_TEST(owner.released_seen);
			BOOST_TEST(!owner.event_after_close);
		}
	}
}

BOOST_AUTO_TEST_CASE(a_reply_larger_than_the_socket_takes_goes_out_whole)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			Pair pair;
			int small = 4096;
			BOOST_REQUIRE(setsockopt(pair.ours, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
			Owner owner;
			open(*loop, owner, pair);
			std::string big(4 << 20, 'v');
			std::string received;
			SendResult first{SendResult::Sent};
			run(*loop,
				{{always,
				  [&] {
					  owner.queue(big);
					  first = owner.stream->send(owner.outbox);
					  BOOST_TEST(owner.outbox.empty());
					  BOOST_TEST(owner.stream->unsent() > 0u);
				  }},
				 {[&] {
					  pair.receive(received);
					  return received.size() == big.size();
				  },
				  [] {}}},
				[&] { owner.close(); });
			BOOST_TEST((first.status == SendResult::Pending));
			BOOST_TEST(owner.writables == 1);
			BOOST_TEST((received == big));
		}
	}
}

BOOST_AUTO_TEST_CASE(the_peer_closing_ends_the_stream)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			Pair pair;
			Owner owner;
			open(*loop, owner, pair);
			run(*loop,
				{{always,
				  [&] {
					  close(pair.theirs);
					  pair.theirs = -1;
				  }},
				 {[&] { return owner.released_seen; }, [] {}}},
				[&] { owner.close(); });
			BOOST_TEST((owner.ending == Ending::Closed));
			BOOST_TEST(!owner.event_after_close);
		}
	}
}

BOOST_AUTO_TEST_CASE(no_room_for_input_ends_the_stream)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			Pair pair;
			Owner owner;
			owner.give_room = false;
			open(*loop, owner, pair);
			run(*loop,
				{{always, [&] { pair.send("*1\r\n$4\r\nPING\r\n"); }}, {[&] { return owner.released_seen; }, [] {}}},
				[&] { owner.close(); });
			BOOST_TEST((owner.ending == Ending::NoRoom));
			BOOST_TEST(owner.readables == 0);
		}
	}
}

BOOST_AUTO_TEST_CASE(an_exception_in_the_owner_ends_its_stream_only)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			Pair failing_pair, other_pair;
			Owner failing, other;
			failing.throw_when_readable = true;
			open(*loop, failing, failing_pair);
			open(*loop, other, other_pair);
			std::string reply;
			run(*loop,
				{{always,
				  [&] {
					  failing_pair.send("x");
					  other_pair.send("y");
				  }},
				 {[&] { return failing.released_seen && other.input == "y"; },
				  [&] {
					  other.queue("z");
					  other.flush();
				  }},
				 {[&] {
					  other_pair.receive(reply);
					  return reply == "z";
				  },
				  [] {}}},
				[&] { other.close(); });
			BOOST_TEST((failing.ending == Ending::Failed));
			BOOST_TEST(failing.reason == "the owner failed");
			BOOST_TEST(!other.ending.has_value());
		}
	}
}

BOOST_AUTO_TEST_CASE(close_with_a_write_in_flight_releases_the_stream_later)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			Pair pair;
			int small = 4096;
			BOOST_REQUIRE(setsockopt(pair.ours, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
			Owner owner;
			open(*loop, owner, pair);
			run(*loop,
				{{always,
				  [&] {
					  owner.queue(std::string(1 << 20, 'v'));
					  owner.flush();
					  BOOST_TEST(owner.stream->sending());
				  }},
				 {always, [&] { owner.close(); }},
				 {[&] { return owner.released_seen; }, [] {}}},
				[] {});
			BOOST_TEST(owner.writables == 0);
			BOOST_TEST(!owner.ending.has_value());
			BOOST_TEST(!owner.event_after_close);
		}
	}
}

BOOST_AUTO_TEST_CASE(tls_carries_a_request_and_its_reply_over_either_backend)
{
	std::shared_ptr<TlsContext> context = load();
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			Pair pair;
			Owner owner;
			open(*loop, owner, pair, context.get());
			BOOST_REQUIRE(owner.stream->tls() != nullptr);
			TlsClient client(pair.theirs);
			std::string reply;
			run(*loop,
				{{[&] { return client.connected(); }, [&] { client.write("*1\r\n$4\r\nPING\r\n"); }},
				 {[&] { return owner.input == "*1\r\n$4\r\nPING\r\n"; },
				  [&] {
					  owner.queue("+PONG\r\n");
					  owner.flush();
				  }},
				 {[&] {
					  client.read(reply);
					  return reply == "+PONG\r\n";
				  },
				  [] {}}},
				[&] { owner.close(); });
			BOOST_TEST(owner.establishments == 1);
			BOOST_TEST(!owner.ending.has_value());
			BOOST_TEST(owner.released_seen);
		}
	}
}

BOOST_AUTO_TEST_CASE(tls_tells_the_peers_verified_certificate)
{
	std::shared_ptr<TlsContext> context = load(TlsClientAuth::Yes);
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			Pair pair;
			Owner owner;
			open(*loop, owner, pair, context.get());
			TlsClient client(pair.theirs, &certificates().client);
			bool verified = false;
			std::string name;
			run(*loop,
				/* TLS 1.3: the server checks the certificate after its Finished */
				{{[&] { return client.connected(); }, [&] { client.write("x"); }},
				 {[&] { return owner.establishments == 1 && owner.input == "x"; },
				  [&] {
					  verified = owner.stream->tls()->peer_verified();
					  name = owner.stream->tls()->peer_common_name();
				  }}},
				[&] { owner.close(); });
			BOOST_TEST(verified);
			BOOST_TEST(name == "alice");
		}
	}
}

BOOST_AUTO_TEST_CASE(plaintext_on_a_tls_stream_fails_its_handshake)
{
	std::shared_ptr<TlsContext> context = load();
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			Pair pair;
			Owner owner;
			open(*loop, owner, pair, context.get());
			std::string answer;
			run(*loop, {{always, [&] { pair.send("*1\r\n$4\r\nPING\r\n"); }}, {[&] { return owner.released_seen; }, [] {}}},
				[&] { owner.close(); });
			pair.receive(answer);
			BOOST_TEST((owner.ending == Ending::HandshakeFailed));
			BOOST_TEST(owner.reason.find("TLS handshake failed") != std::string::npos, owner.reason);
			BOOST_TEST(owner.input.empty());
			BOOST_TEST(answer.find("PONG") == std::string::npos);
		}
	}
}

BOOST_AUTO_TEST_CASE(the_loops_timers_watches_and_wakeup_fire)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			int timers = 0, micro = 0, watched = 0, woken = 0;
			Timer timer(*loop, [&] { timers++; });
			MicroTimer fine(*loop, [&] { micro++; });
			Wakeup wakeup(*loop, [&] { woken++; });
			int event = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			BOOST_REQUIRE(event >= 0);
			FdWatch watch;
			BOOST_REQUIRE(watch.open(*loop, event, [&] {
				uint64_t value;
				BOOST_TEST(read(event, &value, sizeof(value)) == ssize_t(sizeof(value)));
				watched++;
			}));
			run(*loop,
				{{always,
				  [&] {
					  timer.start(2, 0);
					  fine.arm(300);
					  wakeup.send();
					  uint64_t one = 1;
					  BOOST_TEST(write(event, &one, sizeof(one)) == ssize_t(sizeof(one)));
				  }},
				 {[&] { return timers == 1 && micro == 1 && watched == 1 && woken >= 1; }, [] {}}},
				[&] {
					timer.close();
					fine.close();
					wakeup.close();
					watch.close([event] { close(event); });
				});
			BOOST_TEST(timers == 1);
			BOOST_TEST(micro == 1);
		}
	}
}

BOOST_AUTO_TEST_CASE(a_pause_lasts_its_time)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			auto start = std::chrono::steady_clock::now();
			loop->pause(3000);
			auto waited = std::chrono::steady_clock::now() - start;
			BOOST_TEST(std::chrono::duration_cast<std::chrono::microseconds>(waited).count() >= 3000);
		}
	}
}

namespace {

struct Accepting final : public Listeners::Events {
	std::vector<int> fds;
	std::vector<std::string> failures;
	void accepted(int fd) override { fds.push_back(fd); }
	void accept_failed(int error) override { failures.push_back(strerror(error)); }
	void cannot_resolve(const char *host, const char *why) override
	{
		failures.push_back(std::string("resolve ") + host + ": " + why);
	}
	void cannot_listen(const char *host, int port, const char *why) override
	{
		failures.push_back(std::string("listen ") + host + ":" + std::to_string(port) + ": " + why);
	}
	void port_taken(const char *host, int port) override
	{
		failures.push_back(std::string("taken ") + host + ":" + std::to_string(port));
	}
};

/* A port nothing listens on now. */
int free_port()
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_in address = {};
	address.sin_family = AF_INET;
	address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	BOOST_REQUIRE(bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0);
	socklen_t length = sizeof(address);
	getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
	close(fd);
	return ntohs(address.sin_port);
}

} // namespace

BOOST_AUTO_TEST_CASE(listeners_hand_over_what_they_accept)
{
	for (bool ring : {false, true}) {
		BOOST_TEST_CONTEXT(backend_name(ring))
		{
			auto loop = make_loop(ring);
			Accepting events;
			Listeners listeners(*loop, events);
			int port = free_port();
			BOOST_REQUIRE(listeners.open(" 127.0.0.1 ", port, [] { return std::vector<pid_t>{getpid()}; }));
			BOOST_TEST(!listeners.empty());
			BOOST_TEST(events.failures.empty());
			/* A port another socket holds (without SO_REUSEPORT): no socket, one failure. */
			int blocker = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			sockaddr_in held = {};
			held.sin_family = AF_INET;
			held.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			BOOST_REQUIRE(bind(blocker, reinterpret_cast<sockaddr *>(&held), sizeof(held)) == 0);
			BOOST_REQUIRE(listen(blocker, 1) == 0);
			socklen_t held_length = sizeof(held);
			getsockname(blocker, reinterpret_cast<sockaddr *>(&held), &held_length);
			Accepting refused;
			Listeners elsewhere(*loop, refused);
			BOOST_TEST(!elsewhere.open("127.0.0.1", ntohs(held.sin_port), [] { return std::vector<pid_t>{getpid()}; }));
			BOOST_TEST(elsewhere.empty());
			BOOST_REQUIRE(refused.failures.size() == 1u);
			BOOST_TEST(refused.failures[0].find("listen 127.0.0.1:") == 0u, refused.failures[0]);
			close(blocker);
			int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			sockaddr_in address = {};
			address.sin_family = AF_INET;
			address.sin_port = htons(uint16_t(port));
			address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			BOOST_REQUIRE(connect(client, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0);
			Owner owner;
			std::string reply;
			run(*loop,
				{{[&] { return events.fds.size() == 1; },
				  [&] {
					  owner.stream = loop->open_stream(events.fds[0], owner, nullptr);
					  BOOST_REQUIRE(owner.stream != nullptr);
					  BOOST_TEST(owner.stream->identity().peer_address.rfind("127.0.0.1:", 0) == 0u);
					  BOOST_TEST(owner.stream->identity().local_address == "127.0.0.1:" + std::to_string(port));
					  owner.queue("+hello\r\n");
					  owner.flush();
				  }},
				 {[&] {
					  char chunk[64];
					  ssize_t n = recv(client, chunk, sizeof(chunk), MSG_DONTWAIT);
					  if (n > 0)
						  reply.append(chunk, size_t(n));
					  return reply == "+hello\r\n";
				  },
				  [] {}}},
				[&] {
					owner.close();
					listeners.close();
				});
			close(client);
		}
	}
}

BOOST_AUTO_TEST_SUITE_END()
