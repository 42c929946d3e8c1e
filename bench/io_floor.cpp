/*
 * io_floor.cpp — the profile mode's I/O floor (issue 30): a server that does what a RESP worker
 * does for a request minus the command itself, so its CPU per request is the least any server
 * on this kernel pays for the same traffic. Same io_uring (resp_server/net/io_ring.h, same
 * sizes), same parser (resp_server/protocol/request_parser.h), same batching pause
 * (resp_server/net/batching.h, 50 µs, four pauses apart); every request other than INFO is
 * answered with the bytes of one reply file, which bench/driver_lib/profile.py fetches from the
 * RESP workers for the workload (so each send is as long as theirs). INFO answers
 * total_commands_processed, as the profile counts requests. One thread, one connection at a
 * time per socket; no keys, no shared memory, no PostgreSQL.
 *
 *   io_floor PORT REPLY_FILE     serves until SIGTERM; prints READY when listening
 */
#include "resp_server/net/batching.h"
#include "resp_server/net/io_ring.h"
#include "resp_server/protocol/request_parser.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <unordered_map>

using namespace local_cache::resp;

namespace {

/* As the worker's (resp_server/net/backends.h, RingBackend). */
constexpr unsigned kRingEntries = 1024;
constexpr unsigned kRingBuffers = 128;
constexpr unsigned kReadChunk = 16 * 1024;
constexpr int kBatchDelayUs = 50;
constexpr uint64_t kListenerTag = 0;

struct Connection {
	int fd = -1;
	RequestParser parser;
	std::string input;            /* unconsumed request bytes */
	std::string pending, sending; /* replies of this turn; the send in flight */
	size_t sent = 0;              /* of sending */
	bool receiving = false;
	uint64_t read_in_ms = BatchPolicy::kNever;
};

uint64_t now_ms()
{
	using namespace std::chrono;
	return uint64_t(duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count());
}

int listen_on(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sockaddr_in address{};
	address.sin_family = AF_INET;
	address.sin_port = htons(uint16_t(port));
	address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) != 0 || listen(fd, 511) != 0) {
		perror("io_floor: listen");
		return -1;
	}
	return fd;
}

class Floor {
public:
	explicit Floor(std::string reply) : reply_(std::move(reply)) {}

	int run(int listener)
	{
		if (int error = ring_.open(kRingEntries, kRingBuffers, kReadChunk); error != 0) {
			fprintf(stderr, "io_floor: io_uring refused: %s\n", strerror(error));
			return 1;
		}
		ring_.poll_readable(listener, kListenerTag);
		printf("READY\n");
		fflush(stdout);
		for (;;) {
			int rc = ring_.submit_and_wait(-1);
			if (rc != 0 && rc != -EINTR && rc != -ETIME) {
				fprintf(stderr, "io_floor: io_uring_enter: %s\n", strerror(-rc));
				return 1;
			}
			ring_.each_completion([&](const IoRing::Completion &done) { on_completion(listener, done); });
			send_replies();
			if (batching_.should_pause(now_ms(), kBatchDelayUs, BatchPolicy::kPausesApartInRing))
				ring_.submit_and_pause(kBatchDelayUs);
		}
	}

private:
	/* user_data: the connection's fd times two, plus one for a send; 0 the listener. */
	static uint64_t tag(int fd, bool send) { return uint64_t(fd) * 2 + 2 + (send ? 1 : 0); }

	void on_completion(int listener, const IoRing::Completion &done)
	{
		if (done.user_data == kListenerTag) {
			accept_all(listener);
			ring_.poll_readable(listener, kListenerTag);
			return;
		}
		int fd = int((done.user_data - 2) / 2);
		auto it = connections_.find(fd);
		if (it == connections_.end()) {
			if (IoRing::has_buffer(done))
				ring_.recycle(done);
			return;
		}
		Connection &c = *it->second;
		if ((done.user_data & 1) != 0)
			on_sent(c, done);
		else
			on_received(c, done);
	}

	void accept_all(int listener)
	{
		for (;;) {
			int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (fd < 0)
				return;
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			auto c = std::make_unique<Connection>();
			c->fd = fd;
			connections_[fd] = std::move(c);
			receive(*connections_[fd]);
		}
	}

	void receive(Connection &c)
	{
		ring_.receive(c.fd, tag(c.fd, false));
		c.receiving = true;
	}

	void on_received(Connection &c, const IoRing::Completion &done)
	{
		if (!IoRing::more_follow(done))
			c.receiving = false;
		if (IoRing::has_buffer(done)) {
			c.input.append(ring_.buffer_of(done), size_t(done.result));
			ring_.recycle(done);
			batching_.count_read(now_ms(), &c.read_in_ms);
			if (!answer(c)) {
				close_connection(c);
				return;
			}
		} else if (done.result != -ENOBUFS) {
			close_connection(c);
			return;
		}
		if (!c.receiving)
			receive(c);
	}

	/* Replies to every complete request in c's input; false on a protocol error. */
	bool answer(Connection &c)
	{
		size_t start = 0;
		for (;;) {
			ParseResult r = c.parser.parse(c.input.data() + start, c.input.size() - start);
			start += r.consumed;
			if (r.status == ParseStatus::Error)
				return false;
			if (r.status != ParseStatus::Request)
				break;
			served_++;
			std::string command = r.request.argc > 0 ? std::string(r.request[0]) : std::string();
			if (strcasecmp(command.c_str(), "INFO") == 0) {
				std::string info = "total_commands_processed:" + std::to_string(served_) + "\r\n";
				c.pending += "$" + std::to_string(info.size()) + "\r\n" + info + "\r\n";
			} else if (strcasecmp(command.c_str(), "CONFIG") == 0) {
				c.pending += "*0\r\n"; /* redis-benchmark asks at its start */
			} else {
				c.pending += reply_;
			}
		}
		c.input.erase(0, start);
		return true;
	}

	void send_replies()
	{
		for (auto &[fd, c] : connections_)
			if (c->sending.empty() && !c->pending.empty()) {
				c->sending.swap(c->pending);
				c->sent = 0;
				ring_.send(fd, c->sending.data(), c->sending.size(), tag(fd, true));
			}
	}

	void on_sent(Connection &c, const IoRing::Completion &done)
	{
		if (done.result < 0) {
			close_connection(c);
			return;
		}
		c.sent += size_t(done.result);
		if (c.sent < c.sending.size()) {
			ring_.send(c.fd, c.sending.data() + c.sent, c.sending.size() - c.sent, tag(c.fd, true));
			return;
		}
		c.sending.clear();
	}

	/* The shutdown ends the socket's receive; a completion that comes after finds no
	 * connection. A benchmark's connections close only at its end, so a reused fd number is
	 * not a worry. */
	void close_connection(Connection &c)
	{
		int fd = c.fd;
		shutdown(fd, SHUT_RDWR);
		close(fd);
		connections_.erase(fd);
	}

	IoRing ring_;
	BatchPolicy batching_;
	std::string reply_;
	uint64_t served_ = 0;
	std::unordered_map<int, std::unique_ptr<Connection>> connections_;
};

} // namespace

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: io_floor PORT REPLY_FILE\n");
		return 2;
	}
	std::ifstream file(argv[2], std::ios::binary);
	std::string reply((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
	if (!file || reply.empty()) {
		fprintf(stderr, "io_floor: cannot read a reply from %s\n", argv[2]);
		return 2;
	}
	int listener = listen_on(atoi(argv[1]));
	if (listener < 0)
		return 1;
	return Floor(std::move(reply)).run(listener);
}
