/*
 * listening.cpp — the worker's listening sockets (net/listener.h), and the decision to accept or
 * refuse a new connection.
 *
 * A bind failure, or a port another server's process listens on already (net/port_sharing.h), is
 * logged and retried from the worker's timer. A TLS port listens once its
 * certificate and key have loaded. Past what the worker's open files limit allows, a new
 * connection takes the place of the one that has waited longest for login, if any, or is
 * answered like Redis and closed — never dropped without a reply. local_cache.resp_max_clients
 * counts the connections that have logged in (admission.cpp).
 */
#include "resp_server/clients/server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace local_cache::resp {

namespace {

constexpr int BIND_RETRY_SECONDS = 5;

} // namespace

/* A new socket's buffer takes the line whole, so nothing waits for the client. */
void send_refusal(Server *server, int fd)
{
	static const char message[] = "-ERR max number of clients reached\r\n";
	server->host.count(ClientCounter::Rejected, 1);
	(void) send(fd, message, sizeof(message) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Out of room (open files, memory): answer like Redis, then close. */
void refuse(Server *server, int fd)
{
	send_refusal(server, fd);
	close(fd);
}

void Server::accepted(int fd)
{
	if (shutting_down) {
		close(fd);
		return;
	}
	if (connections_here >= max_connections_here && !make_room_for_connection(this))
		refuse(this, fd);
	else
		accept_connection(this, fd);
}

void Server::accept_failed(int error)
{
	log_line(this, "local_cache RESP worker %d: could not accept a connection: %s; accepting again in a second",
			 worker_number, strerror(error));
}

void Server::cannot_resolve(const char *host_name, const char *why)
{
	log_line(this, "local_cache RESP: could not resolve \"%s\": %s", host_name, why);
}

void Server::cannot_listen(const char *host_name, int port, const char *why)
{
	log_line(this, "local_cache RESP: could not listen on \"%s\" port %d: %s; retrying in %d s", host_name, port,
			 why, BIND_RETRY_SECONDS);
}

void Server::port_taken(const char *host_name, int port)
{
	char line[512];
	snprintf(line, sizeof(line),
			 "local_cache RESP: could not listen on \"%s\" port %d: Address already in use; retrying in %d s",
			 host_name, port, BIND_RETRY_SECONDS);
	host.log(line, "Another process (another PostgreSQL server's RESP workers?) listens on that port.",
			 "Give each server its own local_cache.resp_port.");
}

void start_listening(Server *server)
{
	/* A TLS port listens once its certificate and key load (the worker logs why not). */
	if (server->listen.tls && server->tls == nullptr)
		return;
	if (server->listeners.open(server->listen.addresses, server->listen.port,
							   [server] { return server->host.our_workers(); }))
		log_line(server, "local_cache RESP worker %d listening on \"%s\" port %d, connections through %s",
				 server->worker_number, server->listen.addresses.c_str(), server->listen.port,
				 server->loop.on_ring() ? "io_uring" : "epoll");
	else
		server->next_bind_attempt_ms = server->host.now_ms() + BIND_RETRY_SECONDS * 1000;
}

void stop_listening(Server *server)
{
	server->listeners.close();
}

void resume_accepting(Server *server)
{
	server->listeners.resume();
}

} // namespace local_cache::resp
