/*
 * server.h — one RESP worker's event layer, shared by its files:
 *
 *   worker.cpp      the worker's main: signals, interrupts, the loop and its timers
 *   listener.cpp    the listening sockets; accepting and refusing connections
 *   admission.cpp   which connections are taken and kept, by whether they have logged in
 *   connection.cpp  one connection: reading, running requests, writing, closing
 *   tracking_delivery.cpp  CLIENT TRACKING's invalidations, from the tracking log to connections
 *   write_pool.cpp  the writes, sent to the write workers and their replies taken back
 *
 * Everything runs on the worker's one thread; PostgreSQL is only called from there. A plaintext
 * port's connections go through the worker's io_uring (io_ring.h) when the kernel allows one:
 * its loop (worker.cpp) waits in io_uring_enter and runs libuv's loop, which keeps the timers,
 * the signals' wakeup, the listeners and every other descriptor, when libuv's epoll descriptor
 * is ready or a timer is due. Otherwise (a TLS port, io_uring refused, or
 * local_cache.resp_io_uring off) connections are libuv handles and the worker runs libuv's loop.
 *
 * A Connection is created when the connection is accepted, reachable meanwhile from the
 * server's list, and deleted only when nothing can name it any more: a libuv connection in its
 * handle's close callback, a ring connection once the completions of its requests in flight
 * have come (reap_closed_connections, between loop turns). Every libuv callback is registered
 * through uv_callback<> or connection_callback<> (below), and every ring completion is handled
 * through guarded(), so no C++ exception crosses libuv's or the kernel's C frames.
 */
#pragma once

#include "resp_server/net/batching.h"
#include "resp_server/commands/command_table.h"
#include "resp_server/net/disconnect_log.h"
#include "resp_server/net/io_ring.h"
#include "resp_server/net/tls_session.h"
#include "resp_server/net/write_pool.h"
#include "resp_server/pg/tracking_feed.h"
#include "resp_server/protocol/request_parser.h"
#include "resp_server/protocol/reply.h"
#include "resp_server/pg/shared_state.h"

#include <uv.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace local_cache::resp {

struct Server;

struct Connection {
	int fd = -1;
	/* Its I/O goes through Server::ring; false: through `handle`. */
	bool on_ring = false;
	uv_tcp_t handle; /* libuv connections only; handle.data points back here */
	/* Ring connections: requests in the ring whose last completion has not come (its receive,
	 * its send); their completions name the connection, so it is deleted only at 0. */
	unsigned ring_requests = 0;
	bool receiving = false; /* ring: its receive is armed */
	size_t written = 0;     /* ring: bytes of `writing` the socket has taken */
	Server *server;
	Session session;
	RequestParser parser;
	std::vector<char> input;
	size_t input_start = 0; /* first byte not yet consumed */
	size_t input_end = 0;   /* end of the bytes read */
	ReplyBuffer pending;    /* replies not yet handed to libuv */
	ReplyBuffer writing;    /* replies being written; kept until the write completes */
	/* TLS connections: their session, and the records made of the pending replies (and of the
	 * handshake) not yet handed to libuv; `writing` then holds records. */
	std::unique_ptr<TlsSession> tls;
	ReplyBuffer sealed;
	uv_write_t write_request;
	bool write_in_flight = false;
	bool closing = false;
	bool input_refused = false; /* on_alloc had no room for a read: on_read closes the connection */
	int64_t last_active_ms = 0;
	/* Capacity of input, pending, writing and what MULTI/WATCH keep, as last added to
	 * Server::client_memory. */
	size_t accounted_memory = 0;
	/* When the request at input_start first found its table locked; 0: it did not. */
	int64_t blocked_since_ms = 0;
	uint64_t read_in_ms = BatchPolicy::kNever; /* for Server::batching */
	/* Counted in the tracking log's trackers (session.tracking.on, as last seen), and in
	 * Server::invalidation_subscribers (session.tracking.subscribed_invalidate). */
	bool counted_as_tracker = false;
	bool counted_as_subscriber = false;
	/* Logins (admission.cpp): counted in WorkerCounters::logged_in_clients (session.role, as
	 * last seen); or waiting for login since waiting_since_ms, in Server's list of those. */
	bool counted_as_logged_in = false;
	bool waiting_for_login = false;
	int64_t waiting_since_ms = 0;
	Connection *waiting_prev = nullptr;
	Connection *waiting_next = nullptr;
	/* In Server::connections; a closed ring connection's next, in Server::closed_on_ring. */
	Connection *prev = nullptr;
	Connection *next = nullptr;

	Connection(Server *owner, const ParserLimits &limits) : server(owner), parser(limits) {}
};

/* What a ring completion is for: the low bits of its user_data. A connection's completions
 * also carry the Connection's address (aligned, so its low bits are free). */
enum RingTag : uint64_t { kRingReceive = 1, kRingSend = 2, kRingLibuv = 3 };
constexpr uint64_t kRingTagBits = 3;

/* A listening socket: libuv polls it, accept4 takes its connections (listener.cpp). */
struct Listener {
	uv_poll_t poll; /* poll.data points back here */
	int fd;
	Server *server;
};

/* How the worker learns of commits in the tracking log (tracking_delivery.cpp): a writer's
 * signal, its own ticks while commits keep coming, or rare ticks while it tracks nothing. */
enum class TrackingWake { Signal, Busy, Idle };

struct Server {
	int worker_number;
	uv_loop_t loop;
	std::vector<Listener *> listeners;
	bool accepting_paused = false; /* out of descriptors: accepting again at the next timer tick */
	/* Null: connections are libuv handles. */
	std::unique_ptr<IoRing> ring;
	/* Ring connections closed, waiting for their requests' last completions; linked through
	 * Connection::next (close_connection may not allocate). */
	Connection *closed_on_ring = nullptr;
	uv_timer_t timer;        /* housekeeping, every second */
	uv_timer_t retry_timer;  /* runs while a request waits for a locked table */
	uv_prepare_t interrupts; /* before the loop blocks: interrupts, barriers, reloads */
	uv_check_t batch_pause;  /* after each loop turn: local_cache.resp_batch_delay */
	BatchPolicy batching;
	uv_poll_t postmaster_watch;
	Connection *connections = nullptr;
	/* The same connections by CLIENT ID, for invalidations addressed to one. */
	std::unordered_map<uint64_t, Connection *> connections_by_id;
	std::vector<Connection *> blocked; /* connections whose next request waits for a lock */
	WorkerCounters *counters = nullptr; /* this worker's, in shared memory (pg/shared_state.h) */
	size_t connections_here = 0;
	/* The connections not logged in yet, oldest first (admission.cpp). */
	Connection *waiting_oldest = nullptr;
	Connection *waiting_newest = nullptr;
	size_t waiting_here = 0;
	/* The most connections this worker can hold: its open files limit less PostgreSQL's files. */
	size_t max_connections_here = 0;
	/* Sum of every connection's buffer capacity, bounded by local_cache.resp_client_memory. */
	size_t client_memory = 0;
	DisconnectLog disconnect_log; /* rate-limits the "closing client" lines */
	/* The TLS context of a TLS port (local_cache.resp_tls); null: plaintext. Replaced at
	 * reload; connections keep the context they started with. */
	std::shared_ptr<TlsContext> tls;
	/* The ciphertext of one read of a TLS connection, before it is decrypted into the
	 * connection's input (libuv hands the read to on_read before it asks for the next buffer). */
	std::vector<char> tls_read_buffer;
	/* Rate-limits the lines of failed TLS handshakes, per client address (tls_server.cpp). */
	HandshakeFailureLog handshake_failures;
	Logins *logins = nullptr; /* the default role at accept, and the end of a session */
	CommandProcessor *processor = nullptr;
	WritePool *write_pool = nullptr; /* where the writes run (write_pool.h) */
	TrackingFeed *tracking_feed = nullptr;
	/* Polling the tracking log (tracking_delivery.cpp): a timerfd, for ticks finer than libuv's
	 * milliseconds. */
	int tracking_tick_fd = -1;
	uv_poll_t tracking_tick;
	TrackingWake tracking_wake = TrackingWake::Signal;
	/* The last collect read records and left some waiting for their transaction's end. */
	bool tracking_new_waits = false;
	/* Connections subscribed to __redis__:invalidate (REDIRECT targets over RESP2). */
	size_t invalidation_subscribers = 0;
	int64_t next_bind_attempt_ms = 0;
	bool shutting_down = false;
};

int64_t now_ms();

/*
 * The C++ side of every libuv callback. guarded() runs a body; a C++ exception is logged and
 * closes the connection it concerns (nullptr: none), after the handler has finished, and never
 * reaches libuv's C frames. It also keeps one connection's failure from ending a loop over
 * many (retry_blocked).
 */
void log_callback_failure(Connection *c, const char *what) noexcept;
template <typename Body> void guarded(Connection *c, Body &&body) noexcept
{
	char message[256];
	try {
		body();
		return;
	} catch (const std::exception &e) {
		strlcpy(message, e.what(), sizeof(message));
	} catch (...) {
		strlcpy(message, "unknown C++ exception", sizeof(message));
	}
	log_callback_failure(c, message);
}

/*
 * The named wrappers every libuv registration uses (tools/check_tree.py's `boundary` check
 * fails on any other): uv_callback<impl> is a noexcept function with impl's signature that
 * runs impl through guarded(); connection_callback<impl> also closes, on a failure, the
 * connection its first argument (a handle or request) belongs to through ->data. impl is
 * written as if no C++ exception existed.
 */
namespace detail {
template <typename Function, Function impl, bool closes_connection> struct UvCallback;
template <typename First, typename... Rest, void (*impl)(First *, Rest...), bool closes_connection>
struct UvCallback<void (*)(First *, Rest...), impl, closes_connection> {
	static void call(First *first, Rest... rest) noexcept
	{
		Connection *concerned = closes_connection ? static_cast<Connection *>(first->data) : nullptr;
		guarded(concerned, [&] { impl(first, rest...); });
	}
};
} // namespace detail

template <auto impl> inline constexpr auto uv_callback = &detail::UvCallback<decltype(impl), impl, false>::call;
template <auto impl>
inline constexpr auto connection_callback = &detail::UvCallback<decltype(impl), impl, true>::call;

/* listener.cpp */
void start_listening(Server *server);
void stop_listening(Server *server);
/* After running out of descriptors: from the worker's timer. */
void resume_accepting(Server *server);
/* Answers an accepted connection -ERR max number of clients reached (counted as rejected). */
void send_refusal(Server *server, int fd);
/* send_refusal, then closes it. */
void refuse(Server *server, int fd);

/* Closes a connection for a reason worth a log line; the lines are rate-limited. `reason` is
 * only read during the call. */
void disconnect(Connection *c, const char *reason) noexcept;
/* From the worker's timer: the disconnects the rate limit left out, as one line per reason. */
void log_left_out_disconnects(Server *server);

/* tls_server.cpp */
/* Loads (at start) or reloads the TLS context of a TLS port; false when it could not (logged;
 * a reload keeps the context before). True without TLS. */
bool load_tls_context(Server *server);
/* A handshake failed: closes the connection, with a log line unless its address has had its
 * share of lines in the window (HandshakeFailureLog). */
void close_failed_handshake(Connection *c);
/* From the worker's timer: one line per address for the failures the limit left out. */
void log_left_out_handshake_failures(Server *server);

/* admission.cpp: local_cache.resp_max_clients for the connections that have logged in, a cap
 * of their own and authentication_timeout for the others (the rule is written there). */
/* At accept, once the session has its default role or none: false when it must be refused
 * (refuse_connection). May close the connection that has waited longest for login. */
bool admit(Connection *c);
/* Answers -ERR max number of clients reached and closes. */
void refuse_connection(Connection *c);
/* The worker's open files are all in use: closes its connection that has waited longest for
 * login; false if it has none. */
bool make_room_for_connection(Server *server);
/* After a request (whose reply starts at reply_start in c->pending) or a TLS handshake: the
 * session may have logged in, or (RESET) out. Past resp_max_clients that reply is replaced by
 * the error, and the connection closes after it. */
void note_login(Connection *c, size_t reply_start);
/* At close. */
void forget_login(Connection *c);
/* From the worker's timer: closes the connections not logged in within authentication_timeout. */
void close_unauthenticated(Server *server);

/* connection.cpp */
/* Opens the worker's io_uring, unless the kernel refuses one (logged; connections then use
 * libuv). */
void open_ring(Server *server);
/* Serves the accepted socket fd. */
void accept_connection(Server *server, int fd);
/* A completion of a connection's ring request. */
void on_ring_completion(const IoRing::Completion &done);
/* Between loop turns: deletes the closed ring connections no completion will name again. */
void reap_closed_connections(Server *server);
void close_connection(Connection *c);
/* Runs the requests of blocked connections again (retry_timer). */
void retry_blocked(Server *server);
/* Runs one blocked connection's request again (its write's reply came, or a write worker is free). */
void retry_connection(Connection *c);
/* Writes what was added to c->pending outside a request (an invalidation), within the
 * connection's output limits. */
void write_unrequested(Connection *c);

/* tracking_delivery.cpp */
void start_tracking_delivery(Server *server);
void stop_tracking_delivery(Server *server);
/* Collects from the tracking log and writes the invalidations. */
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
