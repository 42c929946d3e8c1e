/*
 * listener.cpp — the RESP worker's listening sockets, and the decision to accept or refuse a
 * new connection.
 *
 * Every worker opens its own socket on each address of local_cache.resp_listen_addresses with
 * SO_REUSEPORT, so the kernel spreads connections over the workers (libuv 1.44 has no flag for
 * it: the socket is made here). libuv polls it and accept4 takes the connections, as plain
 * descriptors that either the worker's io_uring or a libuv handle serves. A bind failure is
 * logged and retried from the worker's timer. Past what the worker's open files limit allows, a
 * new connection takes the place of the one that has waited longest for login, if any, or is
 * answered like Redis and closed — never dropped without a reply. local_cache.resp_max_clients
 * counts the connections that have logged in (admission.cpp).
 */
#include "extension/pg.h"

#include "resp_server/net/port_sharing.h"
#include "resp_server/net/server.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/shared_state.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace local_cache::resp {

namespace {

constexpr int LISTEN_BACKLOG = 511;
constexpr int BIND_RETRY_SECONDS = 5;
/* Connections taken per wakeup, so that a flood of them leaves the loop's other work its turn. */
constexpr int ACCEPTS_PER_WAKEUP = 64;

void on_listener_closed(uv_handle_t *handle)
{
	Listener *listener = static_cast<Listener *>(handle->data);
	close(listener->fd);
	delete listener;
}

} // namespace

/* A new socket's buffer takes the line whole, so nothing waits for the client. */
void send_refusal(Server *server, int fd)
{
	static const char message[] = "-ERR max number of clients reached\r\n";
	count(&server->counters->rejected_connections, 1);
	(void) send(fd, message, sizeof(message) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Out of room (open files, memory): answer like Redis, then close. */
void refuse(Server *server, int fd)
{
	send_refusal(server, fd);
	close(fd);
}

namespace {

void pause_accepting(Server *server)
{
	for (Listener *listener : server->listeners)
		uv_poll_stop(&listener->poll);
	server->accepting_paused = true;
}

void on_listener_readable(uv_poll_t *poll, int status, int)
{
	Listener *listener = static_cast<Listener *>(poll->data);
	Server *server = listener->server;
	if (status < 0 || server->shutting_down)
		return;
	for (int accepted = 0; accepted < ACCEPTS_PER_WAKEUP; accepted++) {
		int fd = accept4(listener->fd, nullptr, nullptr, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* Out of descriptors or memory: the socket stays readable, so waiting for it would
			 * spin until they are freed. */
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				ereport(LOG, (errmsg("local_cache RESP worker %d: could not accept a connection: %m; "
									 "accepting again in a second",
									 server->worker_number)));
				pause_accepting(server);
			}
			return;
		}
		if (server->connections_here >= server->max_connections_here && !make_room_for_connection(server))
			refuse(server, fd);
		else
			accept_connection(server, fd);
	}
}

/* This process and this server's other RESP workers (a worker says it runs before it listens). */
std::vector<pid_t> this_servers_workers()
{
	std::vector<pid_t> pids{getpid()};
	for (int i = 0; i < RESP_MAX_WORKERS; i++)
		if (pid_t pid = worker_pid(i))
			pids.push_back(pid);
	return pids;
}

bool listen_on(Server *server, const char *host)
{
	addrinfo hints;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	addrinfo *addresses = nullptr;
	char port[16];
	snprintf(port, sizeof(port), "%d", local_cache_resp_port);
	int rc = getaddrinfo(strcmp(host, "*") == 0 ? nullptr : host, port, &hints, &addresses);
	if (rc != 0) {
		ereport(LOG, (errmsg("local_cache RESP: could not resolve \"%s\": %s", host, gai_strerror(rc))));
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
		if (bound && !only_ours_listen(a->ai_addr, this_servers_workers())) {
			ereport(LOG,
					(errmsg("local_cache RESP: could not listen on \"%s\" port %d: Address already in use; retrying in %d s",
							host, local_cache_resp_port, BIND_RETRY_SECONDS),
					 errdetail("Another process (another PostgreSQL server's RESP workers?) listens on that port."),
					 errhint("Give each server its own local_cache.resp_port.")));
			close(fd);
			continue;
		}
		if (!bound || listen(fd, LISTEN_BACKLOG) != 0) {
			ereport(LOG,
					(errmsg("local_cache RESP: could not listen on \"%s\" port %d: %m; retrying in %d s",
							host, local_cache_resp_port, BIND_RETRY_SECONDS)));
			close(fd);
			continue;
		}
		Listener *listener = new Listener;
		listener->fd = fd;
		listener->server = server;
		listener->poll.data = listener;
		if (uv_poll_init(&server->loop, &listener->poll, fd) != 0) {
			close(fd);
			delete listener;
			continue;
		}
		server->listeners.push_back(listener);
		if (!server->accepting_paused)
			uv_poll_start(&listener->poll, UV_READABLE, uv_callback<on_listener_readable>);
		any = true;
	}
	freeaddrinfo(addresses);
	return any;
}

} // namespace

void start_listening(Server *server)
{
	/* A TLS port listens once its certificate and key load (load_tls_context says why not). */
	if (local_cache_resp_tls && server->tls == nullptr)
		return;
	std::string all = local_cache_resp_listen_addresses;
	size_t start = 0;
	bool any = false;
	while (start <= all.size()) {
		size_t comma = all.find(',', start);
		std::string host = all.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
		host.erase(0, host.find_first_not_of(" \t"));
		host.erase(host.find_last_not_of(" \t") + 1);
		if (!host.empty())
			any = listen_on(server, host.c_str()) || any;
		if (comma == std::string::npos)
			break;
		start = comma + 1;
	}
	if (any)
		ereport(LOG, (errmsg("local_cache RESP worker %d listening on \"%s\" port %d, connections through %s",
							 server->worker_number, local_cache_resp_listen_addresses, local_cache_resp_port,
							 server->ring != nullptr ? "io_uring" : "epoll")));
	else
		server->next_bind_attempt_ms = now_ms() + BIND_RETRY_SECONDS * 1000;
}

void stop_listening(Server *server)
{
	for (Listener *listener : server->listeners)
		uv_close(reinterpret_cast<uv_handle_t *>(&listener->poll), uv_callback<on_listener_closed>);
	server->listeners.clear();
}

void resume_accepting(Server *server)
{
	if (!server->accepting_paused)
		return;
	server->accepting_paused = false;
	for (Listener *listener : server->listeners)
		uv_poll_start(&listener->poll, UV_READABLE, uv_callback<on_listener_readable>);
}

} // namespace local_cache::resp
