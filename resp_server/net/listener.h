/*
 * listener.h — a worker's listening sockets, and the connections they accept.
 *
 * Every worker opens its own socket on each address it is given with SO_REUSEPORT, so the kernel
 * spreads connections over the workers (libuv 1.44 has no flag for it: the socket is made here),
 * unless a process other than the server's own workers listens on that port already
 * (port_sharing.h): a second server of the same OS user fails to listen instead of joining the
 * group. The loop polls the socket and accept4 takes the connections, as plain descriptors its
 * owner serves (EventLoop::open_stream) or refuses. No PostgreSQL header.
 */
#pragma once

#include "resp_server/net/event_loop.h"
#include "resp_server/net/port_sharing.h"

#include <sys/types.h>

#include <string>
#include <vector>

namespace local_cache::resp {

class Listeners {
public:
	class Events {
	public:
		virtual ~Events() = default;
		/* A connection came: the owner serves or refuses fd, which is its own from now on. */
		virtual void accepted(int fd) = 0;
		/* accept4 failed for want of descriptors or memory (errno): the sockets stay readable, so
		 * accepting has paused until resume(). */
		virtual void accept_failed(int error) = 0;
		/* An address of open() could not be resolved, or listened on (its socket is not made). */
		virtual void cannot_resolve(const char *host, const char *why) = 0;
		virtual void cannot_listen(const char *host, int port, const char *why) = 0;
		/* Another process than `our_processes` (open()) listens on the port: no socket is made. */
		virtual void port_taken(const char *host, int port) = 0;
	};

	Listeners(EventLoop &loop, Events &events) : loop_(loop), events_(events) {}
	~Listeners();
	Listeners(const Listeners &) = delete;
	Listeners &operator=(const Listeners &) = delete;

	/* Listens on every address of `addresses` (comma-separated, blanks around each ignored; `*`:
	 * all) at `port`, where only `our_processes` listen already; whether any socket
	 * listens. */
	bool open(const std::string &addresses, int port, const OurProcesses &our_processes);
	bool empty() const { return sockets_.empty(); }
	/* Stops accepting (a failed accept), and starts again. */
	void pause();
	void resume();
	bool paused() const { return paused_; }
	/* Closes every socket. */
	void close();

	struct Socket;

private:
	bool listen_on(const char *host, int port, const OurProcesses &our_processes);
	void accept_from(int listener);

	EventLoop &loop_;
	Events &events_;
	std::vector<Socket *> sockets_;
	bool paused_ = false;
};

} // namespace local_cache::resp
