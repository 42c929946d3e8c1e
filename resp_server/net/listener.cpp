/*
 * listener.cpp — the RESP worker's listening sockets, and the decision to accept or refuse a
 * new connection.
 *
 * Every worker opens its own socket on each address of local_cache.resp_listen_addresses with
 * SO_REUSEPORT, so the kernel spreads connections over the workers (libuv 1.44 has no flag for
 * it: the socket is made here and handed to uv_tcp_open). A bind failure is logged and retried
 * from the worker's timer. Past local_cache.resp_max_clients (counted across workers), or past
 * what the worker's open files limit allows, a connection is answered like Redis and closed —
 * never dropped without a reply.
 */
#include "extension/pg.h"

#include "resp_server/net/server.h"
#include "resp_server/pg/settings.h"
#include "resp_server/shared_state.h"

#include <netdb.h>
#include <sys/socket.h>

#include <new>
#include <string>

namespace local_cache::resp {

namespace {

constexpr int LISTEN_BACKLOG = 511;
constexpr int BIND_RETRY_SECONDS = 5;

void on_handle_closed(uv_handle_t *handle)
{
	delete reinterpret_cast<uv_tcp_t *>(handle);
}

void on_refusal_written(uv_write_t *request, int)
{
	uv_close(reinterpret_cast<uv_handle_t *>(request->handle), uv_callback<on_handle_closed>);
	delete request;
}

} // namespace

/* Over local_cache.resp_max_clients (or out of memory): answer like Redis, then close. A
 * connection the listener offers must always be accepted, or libuv stops offering any. */
void refuse(Server *server, uv_stream_t *listener)
{
	static char message[] = "-ERR max number of clients reached\r\n";
	uv_tcp_t *client = new (std::nothrow) uv_tcp_t;
	if (client == nullptr)
		return;
	uv_tcp_init(&server->loop, client);
	if (uv_accept(listener, reinterpret_cast<uv_stream_t *>(client)) != 0) {
		uv_close(reinterpret_cast<uv_handle_t *>(client), uv_callback<on_handle_closed>);
		return;
	}
	count(&server->counters->rejected_connections, 1);
	uv_write_t *request = new (std::nothrow) uv_write_t;
	if (request == nullptr) {
		uv_close(reinterpret_cast<uv_handle_t *>(client), uv_callback<on_handle_closed>);
		return;
	}
	uv_buf_t buffer = uv_buf_init(message, sizeof(message) - 1);
	if (uv_write(request, reinterpret_cast<uv_stream_t *>(client), &buffer, 1, uv_callback<on_refusal_written>) < 0) {
		delete request;
		uv_close(reinterpret_cast<uv_handle_t *>(client), uv_callback<on_handle_closed>);
	}
}

namespace {

void on_connection(uv_stream_t *listener, int status)
{
	Server *server = static_cast<Server *>(listener->data);
	if (status < 0 || server->shutting_down)
		return;
	/* Server-wide (all workers), and what this worker's open files limit allows. */
	if (connected_clients_total() >= uint64(local_cache_resp_max_clients) ||
		server->connections_here >= server->max_connections_here) {
		refuse(server, listener);
		return;
	}
	accept_connection(server, listener);
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
		if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
			ereport(LOG,
					(errmsg("local_cache RESP: could not listen on \"%s\" port %d: %m; retrying in %d s",
							host, local_cache_resp_port, BIND_RETRY_SECONDS)));
			close(fd);
			continue;
		}
		uv_tcp_t *listener = new uv_tcp_t;
		uv_tcp_init(&server->loop, listener);
		listener->data = server;
		if (uv_tcp_open(listener, fd) != 0 ||
			uv_listen(reinterpret_cast<uv_stream_t *>(listener), LISTEN_BACKLOG, uv_callback<on_connection>) != 0) {
			uv_close(reinterpret_cast<uv_handle_t *>(listener), uv_callback<on_handle_closed>);
			continue;
		}
		server->listeners.push_back(listener);
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
		ereport(LOG, (errmsg("local_cache RESP worker %d listening on \"%s\" port %d", server->worker_number,
							 local_cache_resp_listen_addresses, local_cache_resp_port)));
	else
		server->next_bind_attempt_ms = now_ms() + BIND_RETRY_SECONDS * 1000;
}

void stop_listening(Server *server)
{
	for (uv_tcp_t *listener : server->listeners)
		uv_close(reinterpret_cast<uv_handle_t *>(listener), uv_callback<on_handle_closed>);
	server->listeners.clear();
}

} // namespace local_cache::resp
