/*
 * admission.cpp — which connections a worker takes and keeps, by whether they have logged in.
 *
 * A connection has logged in once its session has a role (Session::role): local_cache.resp_role's
 * at once, its verified client certificate's (a `cert` line of pg_hba.conf) when its TLS handshake
 * completes, or the role of a successful AUTH or HELLO ... AUTH. The rule:
 *   - local_cache.resp_max_clients bounds the connections that have logged in, across workers
 *     (ClientCounter::LoggedIn). Past it a connection that logs in is answered
 *     "-ERR max number of clients reached" and closed: at accept when local_cache.resp_role logs
 *     it in, else instead of the reply to the request that logged it in.
 *   - Connections that have not logged in do not count against it: each worker holds at most
 *     local_cache.resp_max_clients of them (and what its open files leave), and to take one more
 *     it closes the one that has waited longest. So idle connections cannot lock a client out:
 *     a new one is always taken, and one that logs in at once is not the one that goes.
 *   - A connection that has not logged in within authentication_timeout of its accept (its TLS
 *     handshake included) is closed, as PostgreSQL closes a login that takes longer; so is one
 *     that RESET left without a role, that long after the RESET.
 * A worker keeps its connections waiting for login in one list, oldest first (Connection::
 * waiting_prev/next): the one to close for room is its head, and the timer stops at the first
 * one whose time is not up. Everything runs on the worker's thread; the counters are atomics in
 * shared memory (ClientHost::count), read without a lock, so resp_max_clients may be passed by
 * the logins of other workers at the same instant (as before, when it counted every connection).
 */
#include "resp_server/clients/server.h"

namespace local_cache::resp {

namespace {

const char *const kMaxClientsReached = "max number of clients reached";
const char *const kClosedForRoom = "waited longest for login while the worker holds local_cache.resp_max_clients "
								   "connections not logged in; closed to make room";
const char *const kClosedForDescriptors = "waited longest for login while the worker's open files are all in use; "
										  "closed to make room";

bool logged_in_clients_full(Server *server)
{
	return server->host.logged_in_clients_total() >= uint64_t(server->limits.max_clients);
}

void start_waiting(Connection *c)
{
	Server *server = c->server;
	c->waiting_for_login = true;
	c->waiting_since_ms = server->host.now_ms();
	c->waiting_prev = server->waiting_newest;
	c->waiting_next = nullptr;
	if (server->waiting_newest != nullptr)
		server->waiting_newest->waiting_next = c;
	else
		server->waiting_oldest = c;
	server->waiting_newest = c;
	server->waiting_here++;
}

void stop_waiting(Connection *c)
{
	Server *server = c->server;
	if (!c->waiting_for_login)
		return;
	if (c->waiting_prev != nullptr)
		c->waiting_prev->waiting_next = c->waiting_next;
	else
		server->waiting_oldest = c->waiting_next;
	if (c->waiting_next != nullptr)
		c->waiting_next->waiting_prev = c->waiting_prev;
	else
		server->waiting_newest = c->waiting_prev;
	c->waiting_prev = c->waiting_next = nullptr;
	c->waiting_for_login = false;
	server->waiting_here--;
}

void count_logged_in(Connection *c, bool logged_in)
{
	if (c->counted_as_logged_in == logged_in)
		return;
	c->counted_as_logged_in = logged_in;
	c->server->host.count(ClientCounter::LoggedIn, logged_in ? 1 : -1);
}

} // namespace

bool admit(Connection *c)
{
	if (c->session.authenticated()) {
		if (logged_in_clients_full(c->server))
			return false;
		count_logged_in(c, true);
		return true;
	}
	Server *server = c->server;
	while (server->waiting_here >= server->limits.max_clients && server->waiting_oldest != nullptr)
		disconnect(server->waiting_oldest, kClosedForRoom);
	start_waiting(c);
	return true;
}

void refuse_connection(Connection *c)
{
	send_refusal(c->server, c->stream->identity().fd);
	close_connection(c);
}

bool make_room_for_connection(Server *server)
{
	if (server->waiting_oldest == nullptr)
		return false;
	disconnect(server->waiting_oldest, kClosedForDescriptors);
	return true;
}

void note_login(Connection *c, size_t reply_start)
{
	bool logged_in = c->session.authenticated();
	if (logged_in == c->counted_as_logged_in || c->session.close_after_reply)
		return;
	if (!logged_in) { /* RESET, and no local_cache.resp_role */
		count_logged_in(c, false);
		start_waiting(c);
		return;
	}
	if (logged_in_clients_full(c->server)) {
		c->server->host.count(ClientCounter::Rejected, 1);
		c->pending.truncate(reply_start);
		ReplyWriter(c->pending, c->session.protocol).error(kMaxClientsReached);
		c->session.close_after_reply = true;
		return;
	}
	stop_waiting(c);
	count_logged_in(c, true);
}

void forget_login(Connection *c)
{
	stop_waiting(c);
	count_logged_in(c, false);
}

void close_unauthenticated(Server *server)
{
	int64_t limit_ms = server->limits.login_timeout_ms;
	int64_t now = server->host.now_ms();
	while (Connection *c = server->waiting_oldest) {
		if (now - c->waiting_since_ms <= limit_ms)
			return;
		if (c->stream->tls() != nullptr && !c->stream->tls()->handshake_done())
			disconnect(c, "TLS handshake not completed within authentication_timeout");
		else
			disconnect(c, "not logged in within authentication_timeout");
	}
}

} // namespace local_cache::resp
