/*
 * listener.cpp — listening sockets (listener.h): made and bound here, polled by the loop,
 * accepted with accept4.
 */
#include "resp_server/net/listener.h"

#include "resp_server/net/callback.h"
#include "resp_server/net/port_sharing.h"

#include <uv.h>

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace local_cache::resp {

namespace {

constexpr int kBacklog = 511;
/* Connections taken per wakeup, so that a flood of them leaves the loop's other work its turn. */
constexpr int kAcceptsPerWakeup = 64;

} // namespace

struct Listeners::Socket {
	uv_poll_t poll; /* poll.data points back here */
	int fd;
	Listeners *owner;

	static void readable(uv_poll_t *poll, int status, int)
	{
		Socket *socket = static_cast<Socket *>(poll->data);
		if (status < 0)
			return;
		socket->owner->accept_from(socket->fd);
	}
	static void closed(uv_handle_t *handle)
	{
		Socket *socket = static_cast<Socket *>(handle->data);
		::close(socket->fd);
		delete socket;
	}
};

Listeners::~Listeners()
{
	close();
}

void Listeners::accept_from(int listener)
{
	for (int accepted = 0; accepted < kAcceptsPerWakeup; accepted++) {
		int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* Out of descriptors or memory: the socket stays readable, so waiting for it would
			 * spin until they are freed. */
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				int error = errno;
				pause();
				events_.accept_failed(error);
			}
			return;
		}
		events_.accepted(fd);
		if (paused_ || sockets_.empty())
			return;
	}
}

bool Listeners::listen_on(const char *host, int port, const OurProcesses &our_processes)
{
	addrinfo hints;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	addrinfo *addresses = nullptr;
	char service[16];
	snprintf(service, sizeof(service), "%d", port);
	int rc = getaddrinfo(strcmp(host, "*") == 0 ? nullptr : host, service, &hints, &addresses);
	if (rc != 0) {
		events_.cannot_resolve(host, gai_strerror(rc));
		return false;
	}
	bool any = false;
	for (addrinfo *a = addresses; a != nullptr; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
		if (a->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		/* Bound but not listening yet, the socket takes no connections: another server's
		 * listener makes it step back before it could take that server's clients. */
		bool bound = bind(fd, a->ai_addr, a->ai_addrlen) == 0;
		if (bound && !only_ours_listen(a->ai_addr, our_processes)) {
			events_.port_taken(host, port);
			::close(fd);
			continue;
		}
		if (!bound || listen(fd, kBacklog) != 0) {
			events_.cannot_listen(host, port, strerror(errno));
			::close(fd);
			continue;
		}
		Socket *socket = new Socket;
		socket->fd = fd;
		socket->owner = this;
		socket->poll.data = socket;
		if (uv_poll_init(loop_.uv(), &socket->poll, fd) != 0) {
			::close(fd);
			delete socket;
			continue;
		}
		sockets_.push_back(socket);
		if (!paused_)
			uv_poll_start(&socket->poll, UV_READABLE, uv_callback<Socket::readable>);
		any = true;
	}
	freeaddrinfo(addresses);
	return any;
}

bool Listeners::open(const std::string &all, int port, const OurProcesses &our_processes)
{
	size_t start = 0;
	bool any = false;
	while (start <= all.size()) {
		size_t comma = all.find(',', start);
		std::string host = all.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
		host.erase(0, host.find_first_not_of(" \t"));
		host.erase(host.find_last_not_of(" \t") + 1);
		if (!host.empty())
			any = listen_on(host.c_str(), port, our_processes) || any;
		if (comma == std::string::npos)
			break;
		start = comma + 1;
	}
	return any;
}

void Listeners::pause()
{
	for (Socket *socket : sockets_)
		uv_poll_stop(&socket->poll);
	paused_ = true;
}

void Listeners::resume()
{
	if (!paused_)
		return;
	paused_ = false;
	for (Socket *socket : sockets_)
		uv_poll_start(&socket->poll, UV_READABLE, uv_callback<Socket::readable>);
}

void Listeners::close()
{
	for (Socket *socket : sockets_)
		uv_close(reinterpret_cast<uv_handle_t *>(&socket->poll), uv_callback<Socket::closed>);
	sockets_.clear();
}

} // namespace local_cache::resp
