/*
 * connection.cpp — one RESP connection: reading into its input buffer, running every complete
 * request in order, writing the replies, and closing. On a TLS port the bytes read go through
 * the connection's TLS session into the input buffer, and the replies through it into records
 * (tls_session.h): the rest is the same.
 *
 * The replies of one read go out in one write (a pipeline gets one write per batch): on a
 * ring connection a send queued in the worker's io_uring, submitted with the loop turn's wait;
 * on a libuv connection tried at once and handed to uv_write only for what the socket did not
 * take. Replies produced while such a write is in flight wait in a second buffer. A ring
 * connection's receive stays armed for its whole life; what arrives lands in a buffer of the
 * ring's pool and is copied into the connection's input, so an idle connection holds no
 * receive buffer in the kernel's name. A request whose table
 * another transaction has locked is not answered yet: the connection stops there and the
 * request runs again from the worker's retry timer, until it gets the lock or has waited
 * local_cache.resp_lock_timeout (then -BUSY). Meanwhile the worker serves its other
 * connections, and this one keeps its replies in request order.
 */
#include "extension/pg.h"

#include "extension/tracking_log.h"
#include "resp_server/protocol/buffers.h"
#include "resp_server/net/server.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/shared_state.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <new>
#include <optional>
#include <string>

namespace local_cache::resp {

namespace {

constexpr size_t READ_CHUNK = 16 * 1024;
/* The worker's io_uring: room for a turn's requests (a receive per connection stays armed and
 * takes no slot once submitted; a send per connection at most), and a pool of receive buffers
 * of READ_CHUNK, lent for the moment between a completion and its copy into the input. */
constexpr unsigned RING_ENTRIES = 1024;
constexpr unsigned RING_BUFFERS = 128;
/* One read of TLS records (a record carries up to 16 kB of plaintext). */
constexpr size_t TLS_READ_CHUNK = 64 * 1024;
/* How often a request waiting for a locked table tries again. */
constexpr uint64_t LOCK_RETRY_MS = 5;
const char *const CLIENT_MEMORY_EXCEEDED = "client buffers exceed local_cache.resp_client_memory";

void on_closed(uv_handle_t *handle)
{
	delete static_cast<Connection *>(handle->data);
}

void flush(Connection *c);

/* Keeps Server::client_memory the sum of every connection's buffer capacity. */
void account(Connection *c)
{
	size_t now = c->input.capacity() + c->pending.capacity() + c->writing.capacity() + c->sealed.capacity() +
		c->session.kept_memory();
	c->server->client_memory = c->server->client_memory - c->accounted_memory + now;
	c->accounted_memory = now;
}

size_t client_memory_limit()
{
	return size_t(local_cache_resp_client_memory) * 1024;
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
	while (server->client_memory + growth > client_memory_limit()) {
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

/* The write in flight has ended. */
void write_done(Connection *c)
{
	c->write_in_flight = false;
	c->writing.clear();
	if (c->writing.capacity() > kKeptBufferBytes) {
		c->writing.release();
		account(c);
	}
}

void on_written(uv_write_t *request, int status)
{
	Connection *c = static_cast<Connection *>(request->data);
	write_done(c);
	if (c->closing)
		return;
	if (status < 0) {
		close_connection(c);
		return;
	}
	flush(c);
}

uint64_t ring_tag(Connection *c, RingTag tag)
{
	return reinterpret_cast<uint64_t>(c) | tag;
}

/* Queues the send of what `writing` holds past `written`. */
void send_on_ring(Connection *c)
{
	c->server->ring->send(c->fd, c->writing.data() + c->written, c->writing.size() - c->written,
						  ring_tag(c, kRingSend));
	c->ring_requests++;
	c->write_in_flight = true;
}

/* A send completed with what the socket took, or failed. */
void on_sent(Connection *c, int32_t result)
{
	c->ring_requests--;
	if (c->closing)
		return;
	if (result < 0) {
		close_connection(c);
		return;
	}
	c->written += size_t(result);
	if (c->written < c->writing.size()) {
		send_on_ring(c);
		return;
	}
	write_done(c);
	flush(c);
}

/*
 * Sends the pending replies in one write; closes when the client asked to. On a ring connection
 * the send is queued for the loop turn's io_uring_enter. On a libuv connection the write is
 * tried here first: the replies of a read nearly always fit the socket buffer, and a uv_write
 * that completes at once still costs an epoll_ctl per reply (libuv re-arms the watcher when it
 * reports the completion). Only what the socket does not take now goes to uv_write.
 */
/* What goes to the socket: the pending replies, or on a TLS connection the records they and
 * the handshake became. Null: the session failed and the connection was closed. */
ReplyBuffer *outgoing(Connection *c)
{
	if (c->tls == nullptr)
		return &c->pending;
	if (!c->pending.empty()) {
		if (c->tls->send(c->pending.data(), c->pending.size()) != TlsSession::Status::Ok) {
			disconnect(c, c->tls->error().c_str());
			return nullptr;
		}
		c->pending.clear();
		if (c->pending.capacity() > kKeptBufferBytes)
			c->pending.release();
	}
	c->tls->take_output(c->sealed);
	return &c->sealed;
}

void flush(Connection *c)
{
	if (c->closing || c->write_in_flight)
		return;
	ReplyBuffer *out = outgoing(c);
	if (out == nullptr)
		return;
	if (!out->empty() && c->on_ring) {
		c->writing.swap(*out);
		c->written = 0;
		send_on_ring(c);
		return;
	}
	if (!out->empty()) {
		uv_stream_t *stream = reinterpret_cast<uv_stream_t *>(&c->handle);
		uv_buf_t buffer = uv_buf_init(const_cast<char *>(out->data()), unsigned(out->size()));
		int written = uv_try_write(stream, &buffer, 1);
		if (written < 0 && written != UV_EAGAIN) {
			close_connection(c);
			return;
		}
		size_t done = written > 0 ? size_t(written) : 0;
		if (done < out->size()) {
			c->writing.swap(*out);
			buffer = uv_buf_init(const_cast<char *>(c->writing.data()) + done, unsigned(c->writing.size() - done));
			c->write_request.data = c;
			if (uv_write(&c->write_request, stream, &buffer, 1, connection_callback<on_written>) < 0) {
				close_connection(c);
				return;
			}
			c->write_in_flight = true;
			return;
		}
		out->clear();
		if (out->capacity() > kKeptBufferBytes) {
			out->release();
			account(c);
		}
	}
	if (c->session.close_after_reply)
		close_connection(c);
}

/*
 * Room for the next read. The buffer grows with the bytes that have arrived, never with what a
 * request declares: for a large bulk argument it at most doubles what the connection has sent
 * so far, so a client that announces 64 MB and sends 25 bytes costs 16 kB. All connections of
 * the worker together stay within local_cache.resp_client_memory. False: no room, c must go (it
 * is not closed here: on_alloc may not close its own connection).
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

/*
 * libuv calls on_read right after this, with UV_ENOBUFS when the buffer is empty, through the
 * read callback it keeps in the handle: closing the connection here (which stops its reading
 * and clears that callback) would make libuv call a null pointer. So no room, or a failure here
 * (its guard does not close), only leaves the buffer empty, and on_read closes the connection.
 */
void on_alloc(uv_handle_t *handle, size_t, uv_buf_t *buffer)
{
	Connection *c = static_cast<Connection *>(handle->data);
	*buffer = uv_buf_init(nullptr, 0);
	if (c->tls != nullptr) {
		std::vector<char> &records = c->server->tls_read_buffer;
		if (records.size() < TLS_READ_CHUNK)
			records.resize(TLS_READ_CHUNK);
		*buffer = uv_buf_init(records.data(), unsigned(records.size()));
		return;
	}
	if (make_input_room(c))
		*buffer = uv_buf_init(c->input.data() + c->input_end, unsigned(c->input.size() - c->input_end));
	else
		c->input_refused = true;
}

void on_retry_timer(uv_timer_t *timer)
{
	retry_blocked(static_cast<Server *>(timer->data));
}

/* The connection's next request waits: for a lock, retried from the server's timer; or for the
 * reply of its write in a write worker, which runs it again when it comes (WritePool). */
void block(Connection *c)
{
	Server *server = c->server;
	if (c->blocked_since_ms == 0) {
		c->blocked_since_ms = now_ms();
		server->blocked.push_back(c);
	}
	if (server->write_pool->in_flight(c->session.id))
		return;
	if (!uv_is_active(reinterpret_cast<uv_handle_t *>(&server->retry_timer)))
		uv_timer_start(&server->retry_timer, uv_callback<on_retry_timer>, LOCK_RETRY_MS, LOCK_RETRY_MS);
}

void unblock(Connection *c)
{
	std::vector<Connection *> &blocked = c->server->blocked;
	blocked.erase(std::remove(blocked.begin(), blocked.end(), c), blocked.end());
	c->blocked_since_ms = 0;
}

bool lock_wait_expired(const Connection *c)
{
	return local_cache_resp_lock_timeout == 0 ||
		(c->blocked_since_ms != 0 && now_ms() - c->blocked_since_ms >= local_cache_resp_lock_timeout);
}

size_t unsent_bytes(const Connection *c)
{
	return c->pending.size() + c->sealed.size() + c->writing.size();
}

/* Parses and executes every complete request read so far, then writes the replies. */
void process_input(Connection *c)
{
	Server *server = c->server;
	uint64_t processed = 0; /* counted once: the counter is an atomic in shared memory */
	server->processor->start_of_input();
	while (!c->closing && !c->session.close_after_reply) {
		c->parser.set_authenticated(c->session.authenticated());
		ParseResult result = c->parser.parse(c->input.data() + c->input_start, c->input_end - c->input_start);
		if (result.status == ParseStatus::Request) {
			c->session.last_request_at_ms = c->last_active_ms;
			c->session.lock_wait_expired = lock_wait_expired(c);
			size_t reply_start = c->pending.size();
			tracking_log_set_writer(c->session.id);
			server->processor->execute(result.request, c->session, c->pending);
			tracking_log_set_writer(0);
			note_tracking_mode(c);
			note_login(c, reply_start);
			if (c->session.retry_later) {
				block(c);
				break;
			}
			/* Queued requests are input not run yet: bounded as the unprocessed input is. */
			if (c->session.multi.queued_bytes() > size_t(local_cache_resp_max_request_size)) {
				disconnect(c, "queued MULTI requests exceed local_cache.resp_max_request_size");
				break;
			}
			if (c->blocked_since_ms != 0)
				unblock(c);
			processed++;
			c->input_start += result.consumed;
			/* After every reply, not once per read: a pipeline read in one go must not pile up
			 * replies far beyond the limit before the check below closes the connection. */
			if (unsent_bytes(c) > size_t(local_cache_resp_output_buffer_limit))
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
	count(&server->counters->total_commands_processed, int64(processed));
	if (c->closing)
		return;
	if (unsent_bytes(c) > size_t(local_cache_resp_output_buffer_limit)) {
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
	/* A ring connection reads on; process_input runs nothing more of it. */
	if (c->session.close_after_reply && !c->on_ring)
		uv_read_stop(reinterpret_cast<uv_stream_t *>(&c->handle));
	flush(c);
}

/* The connection's handshake has just completed: what its certificate says, and the role it
 * acts as before AUTH (its certificate's, or local_cache.resp_role). */
void tls_established(Connection *c)
{
	c->session.tls_certificate_verified = c->tls->peer_verified();
	if (c->session.tls_certificate_verified)
		c->session.tls_common_name = c->tls->peer_common_name();
	c->session.role = c->server->logins->default_role(c->session);
	note_login(c, c->pending.size());
}

/* Records read from a TLS connection into its input; the handshake's replies go out with the
 * next flush. False: the connection was closed. */
bool decrypt(Connection *c, const char *records, size_t length)
{
	bool was_established = c->tls->handshake_done();
	TlsSession::Status status = c->tls->receive(records, length);
	for (size_t produced = 1; status == TlsSession::Status::Ok && produced > 0;) {
		if (!make_input_room(c)) {
			disconnect(c, CLIENT_MEMORY_EXCEEDED);
			return false;
		}
		status = c->tls->read_plaintext(c->input.data() + c->input_end, c->input.size() - c->input_end, &produced);
		c->input_end += produced;
	}
	if (status == TlsSession::Status::Failed) {
		/* An alert, if the session made one, is the only answer. */
		if (ReplyBuffer *out = outgoing(c); out != nullptr && !out->empty()) {
			uv_buf_t buffer = uv_buf_init(const_cast<char *>(out->data()), unsigned(out->size()));
			uv_try_write(reinterpret_cast<uv_stream_t *>(&c->handle), &buffer, 1);
		}
		if (was_established)
			disconnect(c, c->tls->error().c_str());
		else
			close_failed_handshake(c);
		return false;
	}
	if (status == TlsSession::Status::Closed) {
		close_connection(c);
		return false;
	}
	if (!was_established && c->tls->handshake_done())
		tls_established(c);
	return true;
}

/* Input arrived: run what it completes. */
void received(Connection *c)
{
	c->last_active_ms = now_ms();
	c->server->batching.count_read(uv_now(&c->server->loop), &c->read_in_ms);
	process_input(c);
}

void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *)
{
	Connection *c = static_cast<Connection *>(stream->data);
	if (nread < 0) {
		if (c->input_refused) /* UV_ENOBUFS: on_alloc found no room */
			disconnect(c, CLIENT_MEMORY_EXCEEDED);
		else
			close_connection(c);
		return;
	}
	if (nread == 0)
		return;
	if (c->tls != nullptr) {
		if (!decrypt(c, c->server->tls_read_buffer.data(), size_t(nread)))
			return;
	} else {
		c->input_end += size_t(nread);
	}
	received(c);
}

void start_receiving(Connection *c)
{
	c->server->ring->receive(c->fd, ring_tag(c, kRingReceive));
	c->ring_requests++;
	c->receiving = true;
}

/* Copies what a receive brought into c's input. False: no room, c was closed. */
bool take_input(Connection *c, const char *data, size_t length)
{
	/* A pool buffer holds READ_CHUNK, the room make_input_room makes. */
	if (!make_input_room(c)) {
		disconnect(c, CLIENT_MEMORY_EXCEEDED);
		return false;
	}
	memcpy(c->input.data() + c->input_end, data, length);
	c->input_end += length;
	return true;
}

/*
 * A receive completed: bytes in a pool buffer (given back at once), end of file, an error, or
 * -ENOBUFS when the pool was dry (the receive is armed again: its buffers have just come back).
 * A closed connection's receive ends with end of file (close_connection shuts the socket down).
 */
void on_received(Connection *c, const IoRing::Completion &done)
{
	IoRing &ring = *c->server->ring;
	if (!IoRing::more_follow(done)) {
		c->receiving = false;
		c->ring_requests--;
	}
	if (IoRing::has_buffer(done)) {
		bool taken;
		try {
			taken = !c->closing && take_input(c, ring.buffer_of(done), size_t(done.result));
		} catch (...) {
			ring.recycle(done);
			throw;
		}
		ring.recycle(done);
		if (!taken)
			return;
		received(c);
	} else if (c->closing) {
		return;
	} else if (done.result != -ENOBUFS) {
		close_connection(c);
		return;
	}
	if (!c->closing && !c->receiving)
		start_receiving(c);
}

std::string address_text(const sockaddr_storage &address)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (address.ss_family == AF_INET) {
		const sockaddr_in *in = reinterpret_cast<const sockaddr_in *>(&address);
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (address.ss_family == AF_INET6) {
		const sockaddr_in6 *in = reinterpret_cast<const sockaddr_in6 *>(&address);
		inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof(host));
		port = ntohs(in->sin6_port);
	}
	return std::string(host) + ":" + std::to_string(port);
}

/* Identity of the accepted connection, for CLIENT INFO / LIST and log lines. */
void describe_session(Connection *c)
{
	Server *server = c->server;
	c->last_active_ms = now_ms();
	c->session.id = (uint64_t(server->worker_number) << 40) |
		pg_atomic_add_fetch_u64(&server->counters->clients_issued, 1);
	server->connections_by_id[c->session.id] = c;
	c->session.connected_at_ms = c->last_active_ms;
	sockaddr_storage address;
	socklen_t length = sizeof(address);
	if (getpeername(c->fd, reinterpret_cast<sockaddr *>(&address), &length) == 0)
		c->session.peer_address = address_text(address);
	length = sizeof(address);
	if (getsockname(c->fd, reinterpret_cast<sockaddr *>(&address), &length) == 0)
		c->session.local_address = address_text(address);
	c->session.fd = c->fd;
	/* After the address: pg_hba.conf decides by it. A TLS connection's, after its handshake:
	 * its certificate may name the role, and no request can come before. */
	if (c->tls == nullptr)
		c->session.role = server->logins->default_role(c->session);
}

} // namespace

void log_callback_failure(Connection *c, const char *what) noexcept
{
	if (c == nullptr) {
		ereport(LOG, (errmsg("local_cache RESP: %s", what)));
		return;
	}
	disconnect(c, what);
}

void disconnect(Connection *c, const char *reason) noexcept
{
	DisconnectLog::Decision decision = c->server->disconnect_log.note(reason, now_ms());
	if (decision.log && decision.left_out > 0)
		ereport(LOG, (errmsg("local_cache RESP: closing client %s: %s (and %llu more in the last second)",
							 c->session.peer_address.c_str(), reason, (unsigned long long) decision.left_out)));
	else if (decision.log)
		ereport(LOG, (errmsg("local_cache RESP: closing client %s: %s", c->session.peer_address.c_str(), reason)));
	close_connection(c);
}

void log_left_out_disconnects(Server *server)
{
	server->disconnect_log.flush(now_ms(), [](const char *reason, uint64_t left_out) {
		ereport(LOG, (errmsg("local_cache RESP: closed %llu more clients in the last second: %s",
							 (unsigned long long) left_out, reason)));
	});
}

void open_ring(Server *server)
{
	std::unique_ptr<IoRing> ring = std::make_unique<IoRing>();
	int error = ring->open(RING_ENTRIES, RING_BUFFERS, unsigned(READ_CHUNK));
	if (error != 0) {
		ereport(LOG, (errmsg("local_cache RESP worker %d: io_uring not available (%s); serving through epoll",
							 server->worker_number, strerror(error))));
		return;
	}
	server->ring = std::move(ring);
}

void on_ring_completion(const IoRing::Completion &done)
{
	Connection *c = reinterpret_cast<Connection *>(done.user_data & ~kRingTagBits);
	guarded(c, [&] {
		if ((done.user_data & kRingTagBits) == kRingReceive)
			on_received(c, done);
		else
			on_sent(c, done.result);
	});
}

void reap_closed_connections(Server *server)
{
	for (Connection **link = &server->closed_on_ring; *link != nullptr;) {
		Connection *c = *link;
		if (c->ring_requests > 0) {
			link = &c->next;
			continue;
		}
		*link = c->next;
		close(c->fd);
		delete c;
	}
}

void accept_connection(Server *server, int fd)
{
	ParserLimits limits;
	limits.max_bulk_length = local_cache_resp_max_request_size;
	limits.max_query_buffer = size_t(local_cache_resp_max_request_size);
	Connection *c = new (std::nothrow) Connection(server, limits);
	if (c == nullptr) {
		refuse(server, fd);
		return;
	}
	c->fd = fd;
	c->on_ring = server->ring != nullptr;
	if (!c->on_ring) {
		uv_tcp_init(&server->loop, &c->handle);
		c->handle.data = c;
	}
	c->next = server->connections;
	if (c->next != nullptr)
		c->next->prev = c;
	server->connections = c;
	server->connections_here++;
	count(&server->counters->connected_clients, 1);
	count(&server->counters->total_connections_received, 1);
	if (!c->on_ring && uv_tcp_open(&c->handle, fd) != 0) {
		close(fd); /* the handle did not take it */
		close_connection(c);
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Not a second boundary: a failure here concerns this connection, which is closed, while the
	 * listener's callback goes on. */
	guarded(c, [&] {
		if (server->tls != nullptr) {
			c->tls = std::make_unique<TlsSession>(*server->tls);
			c->session.tls = true;
		}
		describe_session(c);
		if (!admit(c)) {
			refuse_connection(c);
			return;
		}
		if (c->on_ring)
			start_receiving(c);
		else
			uv_read_start(reinterpret_cast<uv_stream_t *>(&c->handle), uv_callback<on_alloc>,
						  connection_callback<on_read>);
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
	server->connections_here--;
	server->connections_by_id.erase(c->session.id);
	server->write_pool->forget(c->session.id);
	forget_tracking(c);
	forget_login(c);
	count(&server->counters->connected_clients, -1);
	server->logins->session_ended(c->session);
	server->client_memory -= c->accounted_memory;
	c->accounted_memory = 0;
	if (c->on_ring) {
		/* Ends its receive and any send in flight; the descriptor stays open (and its number
		 * unused by a new connection) until they have completed. */
		shutdown(c->fd, SHUT_RDWR);
		c->prev = nullptr;
		c->next = server->closed_on_ring;
		server->closed_on_ring = c;
	} else {
		uv_close(reinterpret_cast<uv_handle_t *>(&c->handle), uv_callback<on_closed>);
	}
}

void write_unrequested(Connection *c)
{
	if (unsent_bytes(c) > size_t(local_cache_resp_output_buffer_limit)) {
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
		guarded(c, [&] { process_input(c); });
}

void retry_blocked(Server *server)
{
	std::vector<Connection *> waiting;
	waiting.swap(server->blocked);
	/* One connection's failure closes it and the others still run. */
	for (Connection *c : waiting)
		if (!c->closing)
			guarded(c, [&] { process_input(c); });
	/* Connections closed meanwhile are still allocated: they go in their close callback. A
	 * connection that ran a request and blocked on the next one is listed already. */
	for (Connection *c : waiting)
		if (!c->closing && c->blocked_since_ms != 0 &&
			std::find(server->blocked.begin(), server->blocked.end(), c) == server->blocked.end())
			server->blocked.push_back(c);
	if (server->blocked.empty())
		uv_timer_stop(&server->retry_timer);
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
	uint64_t worker = id >> 40;
	if (worker != uint64_t(server_->worker_number))
		return worker < uint64_t(RESP_MAX_WORKERS) && worker_pid(int(worker)) != 0 &&
			(id & ((uint64_t(1) << 40) - 1)) <= worker_clients_issued(int(worker));
	for (Connection *c = server_->connections; c != nullptr; c = c->next) {
		if (c->session.id == id && !c->closing)
			return true;
	}
	return false;
}

} // namespace local_cache::resp
