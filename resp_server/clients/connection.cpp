/*
 * connection.cpp — one RESP client: reading into its input buffer, running every complete
 * request in order, writing the replies, and closing. The bytes come and go through the
 * connection's Stream (net/transport.h), whichever backend carries them and whether TLS wraps
 * them: the rest is the same.
 *
 * The replies of one read go out in one write (a pipeline gets one write per batch); replies
 * produced while that write is in flight wait in `pending` until the stream is writable again.
 * A request whose table another transaction has locked is not answered yet: the connection stops
 * there and the request runs again from the worker's retry timer, until it gets the lock or has
 * waited local_cache.resp_lock_timeout (then -BUSY). Meanwhile the worker serves its other
 * connections, and this one keeps its replies in request order. Replies that may tell of writes
 * whose commit the worker has not made yet (a write group, resp_server/pg/transaction.h) wait
 * for it, at the end of the loop's turn.
 */
#include "resp_server/clients/server.h"

#include "resp_server/clients/write_pool.h"
#include "resp_server/protocol/buffers.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <new>

namespace local_cache::resp {

namespace {

/* Room kept for the next read: a read of the ring brings at most this much (its pool buffers). */
constexpr size_t READ_CHUNK = 16 * 1024;
/* How often a request waiting for a locked table tries again. */
constexpr uint64_t LOCK_RETRY_MS = 5;
const char *const CLIENT_MEMORY_EXCEEDED = "client buffers exceed local_cache.resp_client_memory";

void flush(Connection *c);

/* Keeps Server::client_memory the sum of every connection's buffer capacity. */
void account(Connection *c)
{
	size_t now = c->input.capacity() + c->pending.capacity() + c->stream->buffer_capacity() + c->session.kept_memory();
	c->server->client_memory = c->server->client_memory - c->accounted_memory + now;
	c->accounted_memory = now;
}

/*
 * Redis's client eviction (maxmemory-clients): while the worker's connections together would
 * hold more than local_cache.resp_client_memory once c grows by `growth` bytes, the biggest
 * other connection is closed, again and again. So a client holding much (a long MULTI queue,
 * unread replies) is what goes, never another client's ordinary request that happens to cross
 * the line. False: c is itself the biggest and must go; the caller closes it (make_room does).
 */
bool evict_for(Connection *c, size_t growth)
{
	Server *server = c->server;
	while (server->client_memory + growth > server->limits.client_memory) {
		Connection *biggest = c;
		size_t biggest_memory = c->accounted_memory + growth;
		for (Connection *other = server->connections; other != nullptr; other = other->next) {
			if (other->accounted_memory > biggest_memory) {
				biggest = other;
				biggest_memory = other->accounted_memory;
			}
		}
		if (biggest == c)
			return false;
		disconnect(biggest, "evicted, the biggest client while client buffers exceed local_cache.resp_client_memory");
	}
	return true;
}

/* evict_for, closing c when it is the one to go. False: c was closed. */
bool make_room(Connection *c, size_t growth)
{
	if (evict_for(c, growth))
		return true;
	disconnect(c, CLIENT_MEMORY_EXCEEDED);
	return false;
}

size_t unsent_bytes(const Connection *c)
{
	return c->pending.size() + c->stream->unsent();
}

/* Sends the pending replies in one write (the stream's backend says how); closes when the client
 * asked to and everything has gone. */
void flush(Connection *c)
{
	if (c->closing || c->awaits_commit || c->stream->sending())
		return;
	SendResult sent = c->stream->send(c->pending);
	if (sent.status == SendResult::Failed) {
		if (sent.reason != nullptr)
			disconnect(c, sent.reason);
		else
			close_connection(c);
		return;
	}
	account(c);
	if (sent.status == SendResult::Sent && c->session.close_after_reply)
		close_connection(c);
}

/*
 * Room for the next read. The buffer grows with the bytes that have arrived, never with what a
 * request declares: for a large bulk argument it at most doubles what the connection has sent
 * so far, so a client that announces 64 MB and sends 25 bytes costs 16 kB. All connections of
 * the worker together stay within local_cache.resp_client_memory. False: no room, c must go (it
 * is not closed here: the stream ends it, after asking).
 */
bool make_input_room(Connection *c)
{
	if (c->input_start == c->input_end) {
		c->input_start = c->input_end = 0;
	} else if (c->input_start > 0 && c->input.size() - c->input_end < READ_CHUNK) {
		memmove(c->input.data(), c->input.data() + c->input_start, c->input_end - c->input_start);
		c->input_end -= c->input_start;
		c->input_start = 0;
	}
	if (c->input.size() - c->input_end < READ_CHUNK) {
		size_t wanted = c->input_end + READ_CHUNK;
		size_t needed = c->parser.bytes_needed();
		if (needed > READ_CHUNK)
			wanted = c->input_end + std::min(needed, std::max(READ_CHUNK, c->input_end));
		if (!evict_for(c, wanted - c->input.size()))
			return false;
		c->input.resize(wanted);
		account(c);
	}
	return true;
}

/* The connection's next request waits: for a lock, retried from the server's timer; or for the
 * reply of its write in a write worker, which runs it again when it comes (WritePool). */
void block(Connection *c)
{
	Server *server = c->server;
	if (c->blocked_since_ms == 0) {
		c->blocked_since_ms = server->host.now_ms();
		server->blocked.push_back(c);
	}
	if (server->write_pool->in_flight(c->session.id))
		return;
	if (!server->retry_timer.active())
		server->retry_timer.start(LOCK_RETRY_MS, LOCK_RETRY_MS);
}

void unblock(Connection *c)
{
	std::vector<Connection *> &blocked = c->server->blocked;
	blocked.erase(std::remove(blocked.begin(), blocked.end(), c), blocked.end());
	c->blocked_since_ms = 0;
}

bool lock_wait_expired(const Connection *c)
{
	int64_t timeout = c->server->limits.lock_timeout_ms;
	return timeout == 0 || (c->blocked_since_ms != 0 && c->server->host.now_ms() - c->blocked_since_ms >= timeout);
}

/* c's commands wrote in a commit shared with other writes of this loop turn
 * (RowWriter::share_commit): its replies, which may tell of them, go out when the turn ends
 * (send_committed_replies), the commit made, even if a later command of c's made it (it may have
 * failed). */
void await_commit(Connection *c)
{
	if (c->awaits_commit)
		return;
	c->awaits_commit = true;
	c->server->awaiting_commit.push_back(c);
}

/* Parses and executes every complete request read so far, then writes the replies. */
void process_input(Connection *c)
{
	Server *server = c->server;
	const ClientLimits &limits = server->limits;
	uint64_t processed = 0; /* counted once: the counter is an atomic in shared memory */
	uint64_t shared_writes = server->processor->shared_writes();
	server->processor->start_of_input();
	while (!c->closing && !c->session.close_after_reply) {
		c->parser.set_authenticated(c->session.authenticated());
		ParseResult result = c->parser.parse(c->input.data() + c->input_start, c->input_end - c->input_start);
		if (result.status == ParseStatus::Request) {
			c->session.last_request_at_ms = c->last_active_ms;
			c->session.lock_wait_expired = lock_wait_expired(c);
			size_t reply_start = c->pending.size();
			server->host.running_request_of(c->session.id);
			server->processor->execute(result.request, c->session, c->pending);
			server->host.running_request_of(0);
			note_tracking_mode(c);
			note_login(c, reply_start);
			if (c->session.retry_later) {
				block(c);
				break;
			}
			/* Queued requests are input not run yet: bounded as the unprocessed input is. */
			if (c->session.multi.queued_bytes() > limits.max_request_size) {
				disconnect(c, "queued MULTI requests exceed local_cache.resp_max_request_size");
				break;
			}
			if (c->blocked_since_ms != 0)
				unblock(c);
			processed++;
			c->input_start += result.consumed;
			/* After every reply, not once per read: a pipeline read in one go must not pile up
			 * replies far beyond the limit before the check below closes the connection. */
			if (unsent_bytes(c) > limits.output_buffer_limit)
				break;
		} else if (result.status == ParseStatus::NeedMore) {
			c->input_start += result.consumed;
			if (c->parser.query_buffer_exceeded(c->input_end - c->input_start)) {
				disconnect(c, "query buffer limit exceeded");
				break;
			}
			break;
		} else {
			ReplyWriter(c->pending, c->session.protocol).error(c->parser.error());
			c->session.close_after_reply = true;
		}
	}
	server->host.count(ClientCounter::CommandsProcessed, int64_t(processed));
	if (c->closing)
		return;
	if (unsent_bytes(c) > limits.output_buffer_limit) {
		disconnect(c, "output buffer limit exceeded");
		return;
	}
	if (c->input_start == c->input_end && c->input.capacity() > kKeptBufferBytes) {
		std::vector<char>().swap(c->input);
		c->input_start = c->input_end = 0;
	}
	account(c);
	if (!make_room(c, 0))
		return;
	if (c->session.close_after_reply)
		c->stream->stop_reading();
	if (server->processor->shared_writes() != shared_writes) {
		await_commit(c);
		return;
	}
	flush(c);
}

/* Identity of the accepted connection, for CLIENT INFO / LIST and log lines. */
void describe_session(Connection *c)
{
	Server *server = c->server;
	c->last_active_ms = server->host.now_ms();
	c->session.id = (uint64_t(server->worker_number) << 40) | server->host.next_client_number();
	server->connections_by_id[c->session.id] = c;
	c->session.connected_at_ms = c->last_active_ms;
	const PeerIdentity &peer = c->stream->identity();
	c->session.peer_address = peer.peer_address;
	c->session.local_address = peer.local_address;
	c->session.fd = peer.fd;
	c->session.tls = c->stream->tls() != nullptr;
	/* After the address: pg_hba.conf decides by it. A TLS connection's, after its handshake:
	 * its certificate may name the role, and no request can come before. */
	if (!c->session.tls)
		c->session.role = server->logins->default_role(c->session);
}

void log_left_out_disconnects(Server *server)
{
	server->disconnect_log.flush(server->host.now_ms(), [server](const char *reason, uint64_t left_out) {
		log_line(server, "local_cache RESP: closed %llu more clients in the last second: %s",
				 (unsigned long long) left_out, reason);
	});
}

void log_left_out_handshake_failures(Server *server)
{
	server->handshake_failures.flush(server->host.now_ms(), [server](const char *address, uint64_t left_out) {
		if (address != nullptr)
			log_line(server, "local_cache RESP: %llu more failed TLS handshakes from %s in the last %d s",
					 (unsigned long long) left_out, address, int(HandshakeFailureLog::kWindowMs / 1000));
		else
			log_line(server,
					 "local_cache RESP: %llu more failed TLS handshakes in the last %d s from addresses past "
					 "the %zu followed",
					 (unsigned long long) left_out, int(HandshakeFailureLog::kWindowMs / 1000),
					 HandshakeFailureLog::kAddresses);
	});
}

} // namespace

/* ------------------------------------------------------------ what the stream tells a client */

ByteRange Connection::input_room()
{
	if (!make_input_room(this))
		return ByteRange{};
	return ByteRange{input.data() + input_end, input.size() - input_end};
}

void Connection::input_added(size_t length)
{
	input_end += length;
}

/* Input arrived: run what it completes. */
void Connection::readable()
{
	last_active_ms = server->host.now_ms();
	server->batching.count_read(server->loop.now_ms(), &read_in_ms);
	process_input(this);
}

/* The connection's handshake has just completed: what its certificate says, and the role it
 * acts as before AUTH (its certificate's, or local_cache.resp_role). */
void Connection::established()
{
	const TlsSession *tls = stream->tls();
	session.tls_certificate_verified = tls->peer_verified();
	if (session.tls_certificate_verified)
		session.tls_common_name = tls->peer_common_name();
	session.role = server->logins->default_role(session);
	note_login(this, pending.size());
}

void Connection::writable()
{
	account(this);
	flush(this);
}

void Connection::ended(Ending how, const char *reason) noexcept
{
	switch (how) {
	case Ending::Closed:
		close_connection(this);
		return;
	case Ending::NoRoom:
		disconnect(this, CLIENT_MEMORY_EXCEEDED);
		return;
	case Ending::Failed:
		disconnect(this, reason);
		return;
	case Ending::HandshakeFailed:
		close_failed_handshake(this, reason);
		return;
	}
}

void Connection::released() noexcept
{
	delete this;
}

/* ---------------------------------------------------------------------------- the server */

Server::Server(int worker, EventLoop &event_loop, ClientHost &client_host)
	: worker_number(worker), loop(event_loop), host(client_host), listeners(event_loop, *this),
	  retry_timer(event_loop, [this] { retry_blocked(this); })
{
}

void log_line(Server *server, const char *format, ...) noexcept
{
	char line[1024];
	va_list args;
	va_start(args, format);
	vsnprintf(line, sizeof(line), format, args);
	va_end(args);
	server->host.log(line);
}

void disconnect(Connection *c, const char *reason) noexcept
{
	Server *server = c->server;
	DisconnectLog::Decision decision = server->disconnect_log.note(reason, server->host.now_ms());
	if (decision.log && decision.left_out > 0)
		log_line(server, "local_cache RESP: closing client %s: %s (and %llu more in the last second)",
				 c->session.peer_address.c_str(), reason, (unsigned long long) decision.left_out);
	else if (decision.log)
		log_line(server, "local_cache RESP: closing client %s: %s", c->session.peer_address.c_str(), reason);
	close_connection(c);
}

void close_failed_handshake(Connection *c, const char *reason)
{
	Server *server = c->server;
	if (server->handshake_failures.note(c->session.peer_host(), server->host.now_ms()))
		log_line(server, "local_cache RESP: closing client %s: %s", c->session.peer_address.c_str(), reason);
	close_connection(c);
}

void accept_connection(Server *server, int fd)
{
	ParserLimits limits;
	limits.max_bulk_length = int64_t(server->limits.max_request_size);
	limits.max_query_buffer = server->limits.max_request_size;
	Connection *c = new (std::nothrow) Connection(server, limits);
	if (c == nullptr) {
		refuse(server, fd);
		return;
	}
	c->stream = server->loop.open_stream(fd, *c, server->tls.get());
	if (c->stream == nullptr) { /* the transport has closed fd */
		server->host.count(ClientCounter::ConnectionsReceived, 1);
		delete c;
		return;
	}
	c->next = server->connections;
	if (c->next != nullptr)
		c->next->prev = c;
	server->connections = c;
	server->connections_here++;
	server->host.count(ClientCounter::Connected, 1);
	server->host.count(ClientCounter::ConnectionsReceived, 1);
	/* Not a second boundary: a failure here concerns this connection, which is closed, while the
	 * listener's callback goes on. */
	guarded_for(c, [&] {
		describe_session(c);
		if (!admit(c)) {
			refuse_connection(c);
			return;
		}
		c->stream->start_reading();
	});
}

void close_connection(Connection *c)
{
	if (c->closing)
		return;
	c->closing = true;
	Server *server = c->server;
	if (c->prev != nullptr)
		c->prev->next = c->next;
	else
		server->connections = c->next;
	if (c->next != nullptr)
		c->next->prev = c->prev;
	if (c->blocked_since_ms != 0)
		unblock(c);
	if (c->awaits_commit) {
		std::vector<Connection *> &waiting = server->awaiting_commit;
		waiting.erase(std::remove(waiting.begin(), waiting.end(), c), waiting.end());
		c->awaits_commit = false;
	}
	server->connections_here--;
	server->connections_by_id.erase(c->session.id);
	server->write_pool->forget(c->session.id);
	forget_tracking(c);
	forget_login(c);
	server->host.count(ClientCounter::Connected, -1);
	server->logins->session_ended(c->session);
	server->client_memory -= c->accounted_memory;
	c->accounted_memory = 0;
	/* Deleted when the stream is released: a ring connection once its requests in flight have
	 * completed, a libuv one in its handle's close callback. */
	c->stream->close();
}

void write_unrequested(Connection *c)
{
	if (unsent_bytes(c) > c->server->limits.output_buffer_limit) {
		disconnect(c, "output buffer limit exceeded");
		return;
	}
	account(c);
	if (make_room(c, 0))
		flush(c);
}

void retry_connection(Connection *c)
{
	if (!c->closing && c->blocked_since_ms != 0)
		guarded_for(c, [&] { process_input(c); });
}

void send_committed_replies(Server *server)
{
	bool committed = server->processor->commit_writes();
	if (server->awaiting_commit.empty())
		return;
	std::vector<Connection *> waiting;
	waiting.swap(server->awaiting_commit);
	for (Connection *c : waiting) {
		c->awaits_commit = false;
		if (committed)
			flush(c);
		else
			disconnect(c, "the commit its writes shared failed (logged); whether they committed is not known");
	}
}

void retry_blocked(Server *server)
{
	std::vector<Connection *> waiting;
	waiting.swap(server->blocked);
	/* One connection's failure closes it and the others still run. */
	for (Connection *c : waiting)
		if (!c->closing)
			guarded_for(c, [&] { process_input(c); });
	/* Connections closed meanwhile are still allocated: they go when their stream is released. A
	 * connection that ran a request and blocked on the next one is listed already. */
	for (Connection *c : waiting)
		if (!c->closing && c->blocked_since_ms != 0 &&
			std::find(server->blocked.begin(), server->blocked.end(), c) == server->blocked.end())
			server->blocked.push_back(c);
	if (server->blocked.empty())
		server->retry_timer.stop();
}

/*
 * After each loop turn: a pause of local_cache.resp_batch_delay microseconds before the loop
 * blocks, when the load calls for it (batching.h says when and why). It does not first look
 * for requests already waiting: under that load they mostly are (4 turns in 5 measured), so
 * the look cost a system call per turn and saved a pause in few. The pause is bounded (at
 * most 1 ms) and a signal ends it at once. On the ring the pause is an io_uring_enter that also
 * submits the turn's replies (EventLoop::pause; docs/OPERATIONS.md, "Wakeups and
 * local_cache.resp_batch_delay", says what each costs).
 */
void pause_for_batch(Server *server)
{
	unsigned pauses_apart = BatchPolicy::pauses_apart(server->loop.on_ring(), server->listen.tls);
	int delay = server->limits.batch_delay_us;
	if (server->shutting_down || !server->batching.should_pause(server->loop.now_ms(), delay, pauses_apart))
		return;
	server->loop.pause(delay);
	server->host.count(ClientCounter::BatchPauses, 1);
}

void housekeeping(Server *server)
{
	int64_t now = server->host.now_ms();
	if (server->listeners.empty() && now >= server->next_bind_attempt_ms)
		start_listening(server);
	resume_accepting(server);
	if (server->limits.idle_timeout_ms > 0) {
		for (Connection *c = server->connections, *next; c != nullptr; c = next) {
			next = c->next;
			if (!c->stream->sending() && c->blocked_since_ms == 0 &&
				now - c->last_active_ms > server->limits.idle_timeout_ms)
				close_connection(c);
		}
	}
	/* A client that does not read its replies or pushes: CLIENT LIST's omem, and INFO's
	 * client_recent_max_output_buffer. */
	size_t largest = 0;
	for (Connection *c = server->connections; c != nullptr; c = c->next) {
		c->session.unsent_output = unsent_bytes(c);
		largest = std::max(largest, unsent_bytes(c));
	}
	server->host.note_largest_output_buffer(largest);
	/* A login, its TLS handshake included, has as long as a PostgreSQL login. */
	close_unauthenticated(server);
	log_left_out_handshake_failures(server);
	log_left_out_disconnects(server);
}

void close_clients(Server *server)
{
	server->shutting_down = true;
	stop_listening(server);
	while (server->connections != nullptr)
		close_connection(server->connections);
	server->write_pool->close();
	server->retry_timer.close();
	stop_tracking_delivery(server);
}

void WorkerClients::each_session(const std::function<void(const Session &)> &visit)
{
	for (Connection *c = server_->connections; c != nullptr; c = c->next)
		visit(c->session);
}

void WorkerClients::close_session(uint64_t id)
{
	for (Connection *c = server_->connections; c != nullptr; c = c->next) {
		if (c->session.id == id) {
			close_connection(c);
			return;
		}
	}
}

/* CLIENT TRACKING REDIRECT: an id carries its worker's number above bit 40 (describe_session);
 * another worker's connection is taken to exist while that worker runs (it cannot be asked). */
bool WorkerClients::client_exists(uint64_t id)
{
	if ((id >> 40) != uint64_t(server_->worker_number))
		return server_->host.remote_client_may_exist(id);
	for (Connection *c = server_->connections; c != nullptr; c = c->next) {
		if (c->session.id == id && !c->closing)
			return true;
	}
	return false;
}

} // namespace local_cache::resp
