/*
 * worker.cpp — the RESP server: its settings, its background workers, and each worker's
 * libuv loop.
 *
 * Every worker connects to local_cache.resp_database, opens its own listening socket on the
 * same addresses and port (SO_REUSEPORT: the kernel spreads connections over the workers) and
 * runs one libuv loop on its main thread; PostgreSQL is only ever called from that thread
 * (no libuv thread pool). Per connection: bytes are read into an input buffer, every complete
 * request in it is parsed and executed in order, and the replies of one read go out in one
 * write. Signals only set flags and wake the loop with uv_async_send, which stays valid until
 * the loop is closed (a late SIGTERM must not reach a closed handle).
 */
#include "../extension/pg.h"

#include "../extension/store.h"
#include "commands.h"
#include "pg_data_source.h"
#include "protocol.h"
#include "reply.h"
#include "settings.h"

extern "C" {
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "utils/timestamp.h"
}

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <uv.h>

#include <cerrno>
#include <new>
#include <string>
#include <vector>

int local_cache_resp_port = 0;
int local_cache_resp_workers = 2;
char *local_cache_resp_listen_addresses = nullptr;
char *local_cache_resp_database = nullptr;
char *local_cache_resp_role = nullptr;
int local_cache_resp_max_clients = 10000;
int local_cache_resp_timeout = 0;
int local_cache_resp_max_request_size = 64 * 1024 * 1024;
int local_cache_resp_output_buffer_limit = 64 * 1024 * 1024;

extern "C" PGDLLEXPORT void local_cache_resp_worker_main(Datum main_arg);

namespace local_cache {

void resp_define_settings(void)
{
	DefineCustomIntVariable("local_cache.resp_port", "TCP port of the RESP (Redis protocol) server.",
							"0 turns the server off.", &local_cache_resp_port, 0, 0, 65535,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_workers", "Number of RESP server workers.",
							"Each runs its own event loop on the shared port.", &local_cache_resp_workers,
							2, 1, 64, PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("local_cache.resp_listen_addresses",
							   "Comma-separated addresses the RESP server listens on.", NULL,
							   &local_cache_resp_listen_addresses, "127.0.0.1", PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("local_cache.resp_database", "Database the RESP server serves.", NULL,
							   &local_cache_resp_database, "postgres", PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("local_cache.resp_role",
							   "Role unauthenticated RESP clients act as; empty: AUTH is required.", NULL,
							   &local_cache_resp_role, "", PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_max_clients", "Maximum number of RESP connections.", NULL,
							&local_cache_resp_max_clients, 10000, 1, 1000000, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_timeout", "Close RESP connections idle this long.",
							"0 never closes idle connections.", &local_cache_resp_timeout, 0, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_max_request_size",
							"Largest RESP request argument and unprocessed input of one connection.",
							"Larger requests are protocol errors, as with Redis's proto-max-bulk-len.",
							&local_cache_resp_max_request_size, 64 * 1024 * 1024, 1024, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_BYTE, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_output_buffer_limit",
							"Replies a RESP client may leave unread before it is disconnected.", NULL,
							&local_cache_resp_output_buffer_limit, 64 * 1024 * 1024, 1024, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_BYTE, NULL, NULL, NULL);
}

void resp_register_workers(void)
{
	if (local_cache_resp_port == 0)
		return;
	for (int i = 0; i < local_cache_resp_workers; i++) {
		BackgroundWorker worker;
		memset(&worker, 0, sizeof(worker));
		snprintf(worker.bgw_name, BGW_MAXLEN, "local_cache RESP worker %d", i);
		snprintf(worker.bgw_type, BGW_MAXLEN, "local_cache RESP worker");
		worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
		/* Hot standbys serve RESP too: their caches follow the primary through WAL. */
		worker.bgw_start_time = BgWorkerStart_ConsistentState;
		worker.bgw_restart_time = 5;
		snprintf(worker.bgw_library_name, BGW_MAXLEN, "local_cache");
		snprintf(worker.bgw_function_name, BGW_MAXLEN, "local_cache_resp_worker_main");
		worker.bgw_main_arg = Int32GetDatum(i);
		RegisterBackgroundWorker(&worker);
	}
}

} // namespace local_cache

namespace local_cache::resp {

namespace {

constexpr int LISTEN_BACKLOG = 511;
constexpr size_t READ_CHUNK = 16 * 1024;
constexpr uint64_t TIMER_INTERVAL_MS = 1000;
constexpr int BIND_RETRY_SECONDS = 5;
/* An idle connection keeps at most this much buffer memory. */
constexpr size_t KEEP_BUFFER_BYTES = 1024 * 1024;

volatile sig_atomic_t shutdown_requested = false;
/* The wakeup handle may be used: set after uv_async_init, cleared before it is closed. */
volatile sig_atomic_t wakeup_usable = false;
uv_async_t wakeup;

int64_t now_ms()
{
	return GetCurrentTimestamp() / 1000;
}

struct Server;

struct Connection {
	uv_tcp_t handle; /* handle.data points back here */
	Server *server;
	Session session;
	RequestParser parser;
	std::vector<char> input;
	size_t input_start = 0; /* first byte not yet consumed */
	size_t input_end = 0;   /* end of the bytes read */
	ReplyBuffer pending;    /* replies not yet handed to libuv */
	ReplyBuffer writing;    /* replies being written; kept until the write completes */
	uv_write_t write_request;
	bool write_in_flight = false;
	bool closing = false;
	int64_t last_active_ms = 0;
	Connection *prev = nullptr;
	Connection *next = nullptr;

	Connection(Server *owner, const ParserLimits &limits) : server(owner), parser(limits) {}
};

struct Server {
	int worker_number;
	uv_loop_t loop;
	std::vector<uv_tcp_t *> listeners;
	uv_timer_t timer;
	uv_poll_t postmaster_watch;
	Connection *connections = nullptr;
	WorkerStats stats;
	PgDataSource *data = nullptr;
	CommandProcessor *processor = nullptr;
	uint64_t next_client_number = 0;
	int64_t next_bind_attempt_ms = 0;
	bool shutting_down = false;
};

ParserLimits current_limits()
{
	ParserLimits limits;
	limits.max_bulk_length = local_cache_resp_max_request_size;
	limits.max_query_buffer = size_t(local_cache_resp_max_request_size);
	return limits;
}

void on_closed(uv_handle_t *handle)
{
	delete static_cast<Connection *>(handle->data);
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
	server->stats.connected_clients--;
	store_resp_clients_add(-1);
	uv_close(reinterpret_cast<uv_handle_t *>(&c->handle), on_closed);
}

void flush(Connection *c);

void on_written(uv_write_t *request, int status)
{
	Connection *c = static_cast<Connection *>(request->data);
	c->write_in_flight = false;
	c->writing.clear();
	if (c->writing.capacity() > KEEP_BUFFER_BYTES)
		c->writing.release();
	if (c->closing)
		return;
	if (status < 0) {
		close_connection(c);
		return;
	}
	flush(c);
}

/* Hands the pending replies to libuv in one write; closes when the client asked to. */
void flush(Connection *c)
{
	if (c->closing || c->write_in_flight)
		return;
	if (c->pending.empty()) {
		if (c->session.close_after_reply)
			close_connection(c);
		return;
	}
	c->writing.swap(c->pending);
	uv_buf_t buffer = uv_buf_init(const_cast<char *>(c->writing.data()), unsigned(c->writing.size()));
	c->write_request.data = c;
	if (uv_write(&c->write_request, reinterpret_cast<uv_stream_t *>(&c->handle), &buffer, 1, on_written) < 0) {
		close_connection(c);
		return;
	}
	c->write_in_flight = true;
}

void on_alloc(uv_handle_t *handle, size_t, uv_buf_t *buffer)
{
	Connection *c = static_cast<Connection *>(handle->data);
	if (c->input_start == c->input_end) {
		c->input_start = c->input_end = 0;
	} else if (c->input_start > 0 && c->input.size() - c->input_end < READ_CHUNK) {
		memmove(c->input.data(), c->input.data() + c->input_start, c->input_end - c->input_start);
		c->input_end -= c->input_start;
		c->input_start = 0;
	}
	size_t wanted = c->input_end + std::max(READ_CHUNK, c->parser.bytes_needed());
	if (c->input.size() < wanted)
		c->input.resize(wanted);
	*buffer = uv_buf_init(c->input.data() + c->input_end, unsigned(c->input.size() - c->input_end));
}

/* Parses and executes every complete request read so far, then writes the replies. */
void process_input(Connection *c)
{
	Server *server = c->server;
	while (!c->closing && !c->session.close_after_reply) {
		c->parser.set_authenticated(c->session.authenticated());
		ParseResult result = c->parser.parse(c->input.data() + c->input_start, c->input_end - c->input_start);
		if (result.status == ParseStatus::Request) {
			c->session.last_request_at_ms = c->last_active_ms;
			server->processor->execute(result.request, c->session, c->pending);
			server->stats.total_commands_processed++;
			c->input_start += result.consumed;
			/* After every reply, not once per read: a pipeline read in one go must not pile up
			 * replies far beyond the limit before the check below closes the connection. */
			if (c->pending.size() + c->writing.size() > size_t(local_cache_resp_output_buffer_limit))
				break;
		} else if (result.status == ParseStatus::NeedMore) {
			c->input_start += result.consumed;
			if (c->parser.query_buffer_exceeded(c->input_end - c->input_start)) {
				ereport(LOG, (errmsg("local_cache RESP: closing client %s: query buffer limit exceeded",
									 c->session.peer_address.c_str())));
				close_connection(c);
				return;
			}
			break;
		} else {
			ReplyWriter(c->pending, c->session.protocol).error(c->parser.error());
			c->session.close_after_reply = true;
		}
	}
	if (c->pending.size() + c->writing.size() > size_t(local_cache_resp_output_buffer_limit)) {
		ereport(LOG, (errmsg("local_cache RESP: closing client %s: output buffer limit exceeded",
							 c->session.peer_address.c_str())));
		close_connection(c);
		return;
	}
	if (c->session.close_after_reply)
		uv_read_stop(reinterpret_cast<uv_stream_t *>(&c->handle));
	flush(c);
}

void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *)
{
	Connection *c = static_cast<Connection *>(stream->data);
	if (nread < 0) {
		close_connection(c);
		return;
	}
	if (nread == 0)
		return;
	c->input_end += size_t(nread);
	c->last_active_ms = now_ms();
	try {
		process_input(c);
	} catch (const std::exception &e) {
		ereport(LOG, (errmsg("local_cache RESP: closing client %s: %s", c->session.peer_address.c_str(), e.what())));
		close_connection(c);
	}
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

void on_rejected_closed(uv_handle_t *handle)
{
	delete reinterpret_cast<uv_tcp_t *>(handle);
}

void on_rejected_written(uv_write_t *request, int)
{
	uv_close(reinterpret_cast<uv_handle_t *>(request->handle), on_rejected_closed);
	delete request;
}

/* Over local_cache.resp_max_clients: answer like Redis, then close. */
void reject(Server *server, uv_stream_t *listener)
{
	static char message[] = "-ERR max number of clients reached\r\n";
	uv_tcp_t *client = new uv_tcp_t;
	uv_tcp_init(&server->loop, client);
	if (uv_accept(listener, reinterpret_cast<uv_stream_t *>(client)) != 0) {
		uv_close(reinterpret_cast<uv_handle_t *>(client), on_rejected_closed);
		return;
	}
	server->stats.rejected_connections++;
	uv_write_t *request = new uv_write_t;
	uv_buf_t buffer = uv_buf_init(message, sizeof(message) - 1);
	if (uv_write(request, reinterpret_cast<uv_stream_t *>(client), &buffer, 1, on_rejected_written) < 0) {
		delete request;
		uv_close(reinterpret_cast<uv_handle_t *>(client), on_rejected_closed);
	}
}

void on_connection(uv_stream_t *listener, int status)
{
	Server *server = static_cast<Server *>(listener->data);
	if (status < 0 || server->shutting_down)
		return;
	if (store_resp_clients_add(1) > uint32(local_cache_resp_max_clients)) {
		store_resp_clients_add(-1);
		reject(server, listener);
		return;
	}
	Connection *c = new Connection(server, current_limits());
	uv_tcp_init(&server->loop, &c->handle);
	c->handle.data = c;
	c->prev = nullptr;
	c->next = server->connections;
	if (c->next != nullptr)
		c->next->prev = c;
	server->connections = c;
	server->stats.connected_clients++;
	server->stats.total_connections_received++;
	if (uv_accept(listener, reinterpret_cast<uv_stream_t *>(&c->handle)) != 0) {
		close_connection(c);
		return;
	}
	uv_tcp_nodelay(&c->handle, 1);
	c->last_active_ms = now_ms();
	c->session.id = (uint64_t(server->worker_number) << 40) | ++server->next_client_number;
	c->session.connected_at_ms = c->last_active_ms;
	c->session.role = server->data->default_role();
	sockaddr_storage address;
	int length = sizeof(address);
	if (uv_tcp_getpeername(&c->handle, reinterpret_cast<sockaddr *>(&address), &length) == 0)
		c->session.peer_address = address_text(address);
	length = sizeof(address);
	if (uv_tcp_getsockname(&c->handle, reinterpret_cast<sockaddr *>(&address), &length) == 0)
		c->session.local_address = address_text(address);
	uv_fileno(reinterpret_cast<uv_handle_t *>(&c->handle), &c->session.fd);
	uv_read_start(reinterpret_cast<uv_stream_t *>(&c->handle), on_alloc, on_read);
}

/* One listening socket per address, shared by the workers through SO_REUSEPORT. */
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
			uv_listen(reinterpret_cast<uv_stream_t *>(listener), LISTEN_BACKLOG, on_connection) != 0) {
			uv_close(reinterpret_cast<uv_handle_t *>(listener), on_rejected_closed);
			continue;
		}
		server->listeners.push_back(listener);
		any = true;
	}
	freeaddrinfo(addresses);
	return any;
}

void start_listening(Server *server)
{
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

void shut_down(Server *server)
{
	if (server->shutting_down)
		return;
	server->shutting_down = true;
	for (uv_tcp_t *listener : server->listeners)
		uv_close(reinterpret_cast<uv_handle_t *>(listener), on_rejected_closed);
	server->listeners.clear();
	while (server->connections != nullptr)
		close_connection(server->connections);
	uv_timer_stop(&server->timer);
	uv_close(reinterpret_cast<uv_handle_t *>(&server->timer), nullptr);
	uv_poll_stop(&server->postmaster_watch);
	uv_close(reinterpret_cast<uv_handle_t *>(&server->postmaster_watch), nullptr);
	wakeup_usable = false;
	uv_close(reinterpret_cast<uv_handle_t *>(&wakeup), nullptr);
}

void on_wakeup(uv_async_t *handle)
{
	Server *server = static_cast<Server *>(handle->data);
	if (shutdown_requested) {
		shut_down(server);
		return;
	}
	if (ConfigReloadPending) {
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
		server->data->settings_changed();
	}
}

void on_timer(uv_timer_t *timer)
{
	Server *server = static_cast<Server *>(timer->data);
	int64_t now = now_ms();
	if (server->listeners.empty() && now >= server->next_bind_attempt_ms)
		start_listening(server);
	if (local_cache_resp_timeout > 0) {
		int64_t limit = int64_t(local_cache_resp_timeout) * 1000;
		for (Connection *c = server->connections, *next; c != nullptr; c = next) {
			next = c->next;
			if (!c->write_in_flight && now - c->last_active_ms > limit)
				close_connection(c);
		}
	}
}

void on_postmaster_death(uv_poll_t *, int, int)
{
	proc_exit(1);
}

void handle_sigterm(SIGNAL_ARGS)
{
	int save_errno = errno;
	shutdown_requested = true;
	if (wakeup_usable)
		uv_async_send(&wakeup);
	errno = save_errno;
}

void handle_sighup(SIGNAL_ARGS)
{
	int save_errno = errno;
	ConfigReloadPending = true;
	if (wakeup_usable)
		uv_async_send(&wakeup);
	errno = save_errno;
}

void run_server(int worker_number)
{
	Server server;
	server.worker_number = worker_number;
	server.stats.started_at_ms = now_ms();
	PgDataSource data(server.stats);
	CommandProcessor processor(data);
	server.data = &data;
	server.processor = &processor;

	uv_loop_init(&server.loop);
	uv_async_init(&server.loop, &wakeup, on_wakeup);
	wakeup.data = &server;
	wakeup_usable = true;
	uv_timer_init(&server.loop, &server.timer);
	server.timer.data = &server;
	uv_timer_start(&server.timer, on_timer, TIMER_INTERVAL_MS, TIMER_INTERVAL_MS);
	uv_poll_init(&server.loop, &server.postmaster_watch, postmaster_alive_fds[POSTMASTER_FD_WATCH]);
	uv_poll_start(&server.postmaster_watch, UV_READABLE, on_postmaster_death);

	start_listening(&server);
	if (shutdown_requested)
		shut_down(&server);
	uv_run(&server.loop, UV_RUN_DEFAULT);
	uv_loop_close(&server.loop);
}

} // namespace

} // namespace local_cache::resp

void local_cache_resp_worker_main(Datum main_arg)
{
	pqsignal(SIGTERM, local_cache::resp::handle_sigterm);
	pqsignal(SIGHUP, local_cache::resp::handle_sighup);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(local_cache_resp_database, NULL, 0);
	pgstat_report_appname("local_cache RESP");
	char failure[256] = "";
	try {
		local_cache::resp::run_server(DatumGetInt32(main_arg));
	} catch (const std::exception &e) {
		strlcpy(failure, e.what(), sizeof(failure));
	}
	if (failure[0] != '\0')
		ereport(FATAL, (errmsg("local_cache RESP worker: %s", failure)));
	/* Exit status 1, as PostgreSQL's own workers after SIGTERM: 0 would unregister the worker
	 * for good, so a worker terminated alone (kill -TERM, pg_terminate_backend) would never
	 * come back, not even after a crash restart. During a shutdown nothing is restarted. */
	proc_exit(1);
}
