/*
 * server.h — one RESP worker's clients, shared by the files of clients/:
 *
 *   listening.cpp   the listening sockets it asks of the transport; accepting and refusing
 *   admission.cpp   which connections are taken and kept, by whether they have logged in
 *   connection.cpp  one client: its input, running its requests, its replies, closing it;
 *                   client eviction, lock retries, the batching pause, the worker's timer
 *   tracking_delivery.cpp  CLIENT TRACKING's invalidations, from the commits to connections
 *   write_pool.cpp  the writes, sent to the write workers and their replies taken back
 *
 * A client is a Connection: a Session the command layer runs requests for, over a Stream of the
 * transport (net/transport.h), whatever carries its bytes (io_uring or libuv, TLS or not).
 * PostgreSQL is reached only through the interfaces of host.h and commands/data_source.h,
 * which the worker (worker.cpp) implements: no PostgreSQL header here, and no libuv.
 *
 * Everything runs on the worker's one thread. A Connection is created when the connection is
 * accepted, reachable meanwhile from the server's list, and deleted only when nothing can name
 * it any more: when its stream is released (StreamEvents::released, after close()).
 */
#pragma once

#include "resp_server/clients/disconnect_log.h"
#include "resp_server/clients/host.h"
#include "resp_server/commands/command_table.h"
#include "resp_server/net/batching.h"
#include "resp_server/net/callback.h"
#include "resp_server/net/event_loop.h"
#include "resp_server/net/listener.h"
#include "resp_server/net/tls_session.h"
#include "resp_server/net/transport.h"
#include "resp_server/protocol/request_parser.h"
#include "resp_server/protocol/reply.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace local_cache::resp {

struct Server;
class WritePool;

struct Connection final : public StreamEvents {
	Server *server;
	std::unique_ptr<Stream> stream;
	Session session;
	RequestParser parser;
	std::vector<char> input;
	size_t input_start = 0; /* first byte not yet consumed */
	size_t input_end = 0;   /* end of the bytes read */
	ReplyBuffer pending;    /* replies not yet handed to the stream */
	bool closing = false;
	/* In Server::awaiting_commit: pending holds replies sent once writes have committed. */
	bool awaits_commit = false;
	int64_t last_active_ms = 0;
	/* Capacity of input, pending, the stream's buffers and what MULTI/WATCH keep, as last added
	 * to Server::client_memory. */
	size_t accounted_memory = 0;
	/* When the request at input_start first found its table locked; 0: it did not. */
	int64_t blocked_since_ms = 0;
	uint64_t read_in_ms = BatchPolicy::kNever; /* for Server::batching */
	/* Counted in the tracking log's trackers (session.tracking.on, as last seen), and in
	 * Server::invalidation_subscribers (session.tracking.subscribed_invalidate). */
	bool counted_as_tracker = false;
	bool counted_as_subscriber = false;
	/* Logins (admission.cpp): counted in ClientCounter::LoggedIn (session.role, as last seen);
	 * or waiting for login since waiting_since_ms, in Server's list of those. */
	bool counted_as_logged_in = false;
	bool waiting_for_login = false;
	int64_t waiting_since_ms = 0;
	Connection *waiting_prev = nullptr;
	Connection *waiting_next = nullptr;
	/* In Server::connections. */
	Connection *prev = nullptr;
	Connection *next = nullptr;

	Connection(Server *owner, const ParserLimits &limits) : server(owner), parser(limits) {}

	/* StreamEvents (connection.cpp) */
	ByteRange input_room() override;
	void input_added(size_t length) override;
	void readable() override;
	void established() override;
	void writable() override;
	void ended(Ending how, const char *reason) noexcept override;
	void released() noexcept override;
};

/* How the worker learns of commits (tracking_delivery.cpp): a writer's signal, its own ticks
 * while commits keep coming, or rare ticks while it tracks nothing. */
enum class TrackingWake { Signal, Busy, Idle };

struct Server final : public Listeners::Events {
	Server(int worker, EventLoop &event_loop, ClientHost &client_host);

	int worker_number;
	EventLoop &loop;
	ClientHost &host;
	ClientLimits limits;
	ListenSettings listen;
	Listeners listeners;
	Timer retry_timer; /* runs while a request waits for a locked table */
	BatchPolicy batching;
	Connection *connections = nullptr;
	/* The same connections by CLIENT ID, for invalidations addressed to one. */
	std::unordered_map<uint64_t, Connection *> connections_by_id;
	std::vector<Connection *> blocked; /* connections whose next request waits for a lock */
	std::vector<Connection *> awaiting_commit; /* whose replies wait for writes' commit */
	size_t connections_here = 0;
	/* The connections not logged in yet, oldest first (admission.cpp). */
	Connection *waiting_oldest = nullptr;
	Connection *waiting_newest = nullptr;
	size_t waiting_here = 0;
	/* The most connections this worker can hold: its open files limit less PostgreSQL's files. */
	size_t max_connections_here = 0;
	/* Sum of every connection's buffer capacity, bounded by limits.client_memory. */
	size_t client_memory = 0;
	DisconnectLog disconnect_log; /* rate-limits the "closing client" lines */
	/* The TLS context of a TLS port (listen.tls); null: plaintext. Replaced at reload;
	 * connections keep the context they started with. */
	std::shared_ptr<TlsContext> tls;
	/* Rate-limits the lines of failed TLS handshakes, per client address (connection.cpp). */
	HandshakeFailureLog handshake_failures;
	Logins *logins = nullptr;
	CommandProcessor *processor = nullptr;
	WritePool *write_pool = nullptr; /* where the writes run (write_pool.h) */
	CommitFeed *feed = nullptr;
	/* Polling the commits (tracking_delivery.cpp), finer than libuv's milliseconds. */
	std::unique_ptr<MicroTimer> tracking_tick;
	TrackingWake tracking_wake = TrackingWake::Signal;
	/* The last collect read records and left some waiting for their transaction's end. */
	bool tracking_new_waits = false;
	/* Connections subscribed to __redis__:invalidate (REDIRECT targets over RESP2). */
	size_t invalidation_subscribers = 0;
	int64_t next_bind_attempt_ms = 0;
	bool shutting_down = false;

	/* Listeners::Events (listening.cpp) */
	void accepted(int fd) override;
	void accept_failed(int error) override;
	void cannot_resolve(const char *host, const char *why) override;
	void cannot_listen(const char *host, int port, const char *why) override;
	void port_taken(const char *host, int port) override;
};

/* A log line "local_cache RESP...", printf-style, through the host. */
void log_line(Server *server, const char *format, ...) noexcept __attribute__((format(printf, 2, 3)));

/* listening.cpp */
void start_listening(Server *server);
void stop_listening(Server *server);
/* After running out of descriptors: from the worker's timer. */
void resume_accepting(Server *server);
/* Answers an accepted connection -ERR max number of clients reached (counted as rejected). */
void send_refusal(Server *server, int fd);
/* send_refusal, then closes it. */
void refuse(Server *server, int fd);

/* connection.cpp */
/* Serves the accepted socket fd. */
void accept_connection(Server *server, int fd);
void close_connection(Connection *c);
/* Closes a connection for a reason worth a log line; the lines are rate-limited. `reason` is
 * only read during the call. */
void disconnect(Connection *c, const char *reason) noexcept;
/* Runs body for connection c; a C++ exception closes c with its message (disconnect), and the
 * caller goes on (one connection's failure does not end a loop over many). */
template <typename Body> void guarded_for(Connection *c, Body &&body) noexcept
{
	guarded(body, [c](const char *what) noexcept { disconnect(c, what); });
}
/* At the end of each loop turn, and before the loop blocks: commits the writes that wait for
 * their shared commit, then sends the replies held for it (or, if it failed, closes those
 * connections). */
void send_committed_replies(Server *server);
/* Runs the requests of blocked connections again (retry_timer). */
void retry_blocked(Server *server);
/* Runs one blocked connection's request again (its write's reply came, or a write worker is free). */
void retry_connection(Connection *c);
/* Writes what was added to c->pending outside a request (an invalidation), within the
 * connection's output limits. */
void write_unrequested(Connection *c);
/* A TLS handshake failed: closes the connection, with a log line unless its address has had its
 * share of lines in the window (HandshakeFailureLog). */
void close_failed_handshake(Connection *c, const char *reason);
/* After each loop turn: the batching pause, when the load calls for it (batching.h). */
void pause_for_batch(Server *server);
/* The worker's timer, every second: listening again after a failed bind, accepting again after
 * running out of descriptors, idle and login timeouts, the log lines rate limits left out, each
 * connection's unsent bytes (CLIENT LIST omem) and their largest (ClientHost). */
void housekeeping(Server *server);
/* Shutting down: closes the listeners, every connection, the write workers' links and the
 * tracking tick. */
void close_clients(Server *server);

/* admission.cpp: limits.max_clients for the connections that have logged in, a cap of their
 * own and authentication_timeout for the others (the rule is written there). */
/* At accept, once the session has its default role or none: false when it must be refused
 * (refuse_connection). May close the connection that has waited longest for login. */
bool admit(Connection *c);
/* Answers -ERR max number of clients reached and closes. */
void refuse_connection(Connection *c);
/* The worker's open files are all in use: closes its connection that has waited longest for
 * login; false if it has none. */
bool make_room_for_connection(Server *server);
/* After a request (whose reply starts at reply_start in c->pending) or a TLS handshake: the
 * session may have logged in, or (RESET) out. Past max_clients that reply is replaced by the
 * error, and the connection closes after it. */
void note_login(Connection *c, size_t reply_start);
/* At close. */
void forget_login(Connection *c);
/* From the worker's timer: closes the connections not logged in within authentication_timeout. */
void close_unauthenticated(Server *server);

/* tracking_delivery.cpp */
void start_tracking_delivery(Server *server);
void stop_tracking_delivery(Server *server);
/* Collects the commits and writes the invalidations. */
void deliver_invalidations(Server *server);
/* Before the loop waits: delivers what the log holds, and says whether writers must signal the
 * worker (they need not while it polls). After the wait: tracking_after_wait. */
void tracking_before_blocking(Server *server);
void tracking_after_wait(Server *server);
/* After each request: the tracking log counts the connection while CLIENT TRACKING is on, and
 * the invalidations the request caused (evictions past resp_tracking_max_keys) are sent. */
void note_tracking_mode(Connection *c);
/* At close. */
void forget_tracking(Connection *c);

/* The worker's connections as CLIENT LIST and CLIENT KILL see them. */
class WorkerClients final : public ClientDirectory {
public:
	explicit WorkerClients(Server *server) : server_(server) {}
	void each_session(const std::function<void(const Session &)> &visit) override;
	void close_session(uint64_t id) override;
	bool client_exists(uint64_t id) override;

private:
	Server *server_;
};

} // namespace local_cache::resp
