/*
 * worker.cpp — a RESP worker's main: the one file that knows both PostgreSQL and the transport.
 * It composes the worker: the event loop and its backend (net/event_loop.h: io_uring unless
 * local_cache.resp_io_uring is off or the kernel refuses one, else libuv; TLS over either when
 * local_cache.resp_tls is on), the clients (clients/server.h) and what they ask of PostgreSQL
 * (clients/host.h: settings, log, counters, the tracking log, the write workers), the data
 * sources on PostgreSQL (pg/), and PostgreSQL's signals and interrupts.
 *
 * Started by the launcher (launcher.cpp), a worker connects to local_cache.resp_database and
 * runs one loop on its main thread (no libuv thread pool: PostgreSQL is only called from this
 * thread). Signals are PostgreSQL's own handlers (die, procsignal_sigusr1_handler,
 * SignalHandlerForConfigReload, and SIGUSR2 from a writer of the tracking log), each followed by
 * a wakeup of the loop; at the end of every turn and before the loop blocks, the commit the
 * turn's writes share and the replies held for it (pg/transaction.h, WriteGroup); before the
 * loop blocks, at every turn:
 *   - SIGTERM (ProcDiePending): close the listeners and every connection, end the loop, exit;
 *   - SIGHUP: reload the settings (and the TLS context);
 *   - commits in the tracking log: CLIENT TRACKING's invalidations (tracking_delivery.cpp; from
 *     here until the loop has waited, writers signal the worker);
 *   - CHECK_FOR_INTERRUPTS(): ProcSignalBarriers (DROP DATABASE, ALTER DATABASE SET
 *     TABLESPACE wait for every backend to absorb them), memory-context logging. A cancel
 *     (pg_cancel_backend) that arrives between commands has nothing to cancel: dropped.
 * After every turn the loop may pause briefly under the load of many clients (pause_for_batch,
 * local_cache.resp_batch_delay). Before it blocks, the requests counted for INFO's command
 * statistics are folded into shared memory, at most once a millisecond and within 10 ms
 * (fold_stats); the pg_stat_activity row shows the command running (PgActivity). Inside a command (in_transaction(), pg/transaction.h)
 * PostgreSQL's own waits (a lock wait, a long scan) check interrupts themselves: SIGTERM ends the
 * worker there with the usual FATAL, a cancel or lock_timeout fails the command only. The wakeup
 * stays usable until it is closed; a late signal never reaches a closed handle.
 */
#include "extension/pg.h"

#include "extension/boundary.h"
#include "extension/tracking_log.h"

#include "resp_server/auth/logins.h"
#include "resp_server/clients/server.h"
#include "resp_server/clients/write_pool.h"
#include "resp_server/pg/activity.h"
#include "resp_server/pg/batches.h"
#include "resp_server/pg/command_stats_table.h"
#include "resp_server/pg/hit_path.h"
#include "resp_server/pg/row_reader.h"
#include "resp_server/pg/server_info.h"
#include "resp_server/pg/session_runtime.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/shared_state.h"
#include "resp_server/pg/topology.h"
#include "resp_server/pg/tracking_feed.h"
#include "resp_server/pg/writes.h"

extern "C" {
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/procsignal.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
}

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace local_cache::resp {

namespace {

constexpr uint64_t TIMER_INTERVAL_MS = 1000;

/* The wakeup may be used: set once it is made, cleared before it is closed. */
volatile sig_atomic_t wakeup_usable = false;
Wakeup *wakeup = nullptr;

void wake_loop()
{
	if (wakeup_usable)
		wakeup->send();
}

void handle_sigterm(SIGNAL_ARGS)
{
	int save_errno = errno;
	die(postgres_signal_arg);
	wake_loop();
	errno = save_errno;
}

void handle_sigusr1(SIGNAL_ARGS)
{
	int save_errno = errno;
	procsignal_sigusr1_handler(postgres_signal_arg);
	wake_loop();
	errno = save_errno;
}

/* A writer committed changes to the tracking log (extension/tracking_log.h). */
void handle_sigusr2(SIGNAL_ARGS)
{
	int save_errno = errno;
	wake_loop();
	errno = save_errno;
}

void handle_sighup(SIGNAL_ARGS)
{
	int save_errno = errno;
	SignalHandlerForConfigReload(postgres_signal_arg);
	wake_loop();
	errno = save_errno;
}

/* A C++ exception in a loop callback that concerns no connection (net/callback.h). */
void log_callback_failure_line(const char *what) noexcept
{
	ereport(LOG, (errmsg("local_cache RESP: %s", what)));
}

/* ------------------------------------------------ what the clients ask of PostgreSQL (host.h) */

class PostgresHost final : public ClientHost {
public:
	explicit PostgresHost(WorkerCounters *counters) : counters_(counters) {}

	void log(const char *line, const char *detail, const char *hint) noexcept override
	{
		ereport(LOG, (errmsg("%s", line), detail != nullptr ? errdetail("%s", detail) : 0,
					  hint != nullptr ? errhint("%s", hint) : 0));
	}
	int64_t now_ms() override { return GetCurrentTimestamp() / 1000; }
	void count(ClientCounter counter, int64_t delta) override { resp::count(slot(counter), delta); }
	void note_largest_output_buffer(uint64_t bytes) override
	{
		pg_atomic_write_u64(&counters_->largest_output_buffer, bytes);
	}
	uint64_t next_client_number() override { return pg_atomic_add_fetch_u64(&counters_->clients_issued, 1); }
	uint64_t logged_in_clients_total() override { return resp::logged_in_clients_total(); }
	std::vector<pid_t> our_workers() override
	{
		std::vector<pid_t> pids{getpid()};
		for (int i = 0; i < RESP_MAX_WORKERS; i++)
			if (pid_t pid = worker_pid(i))
				pids.push_back(pid);
		return pids;
	}
	bool remote_client_may_exist(uint64_t id) override
	{
		uint64_t worker = id >> 40;
		return worker < uint64_t(RESP_MAX_WORKERS) && worker_pid(int(worker)) != 0 &&
			(id & ((uint64_t(1) << 40) - 1)) <= worker_clients_issued(int(worker));
	}
	void running_request_of(uint64_t session_id) override { tracking_log_set_writer(session_id); }

private:
	pg_atomic_uint64 *slot(ClientCounter counter)
	{
		switch (counter) {
		case ClientCounter::Connected:
			return &counters_->connected_clients;
		case ClientCounter::LoggedIn:
			return &counters_->logged_in_clients;
		case ClientCounter::ConnectionsReceived:
			return &counters_->total_connections_received;
		case ClientCounter::CommandsProcessed:
			return &counters_->total_commands_processed;
		case ClientCounter::Rejected:
			return &counters_->rejected_connections;
		case ClientCounter::BatchPauses:
			break;
		}
		return &counters_->batch_pauses;
	}

	WorkerCounters *counters_;
};

/* The worker's reader of the tracking log, as the clients see it. */
class PostgresCommitFeed final : public CommitFeed {
public:
	explicit PostgresCommitFeed(int worker_number) : feed_(worker_number) {}

	bool sleeping() override { return feed_.sleeping(); }
	void awake() override { feed_.awake(); }
	bool has_news() override { return feed_.has_news(); }
	bool waiting() override { return feed_.waiting(); }
	bool changes_logged() override { return TrackingFeed::changes_logged(); }
	void collect(std::vector<CommittedChange> &changes, std::vector<RelayedInvalidation> &relays,
				 bool names_wanted) override
	{
		collected_.clear();
		relayed_.clear();
		feed_.collect(collected_, relayed_, names_wanted);
		for (TrackedChange &change : collected_)
			changes.push_back(CommittedChange{kind_of(change.kind), std::move(change.name), change.writer,
											  uint32_t(change.relid)});
		for (TrackingRelay &relay : relayed_)
			relays.push_back(RelayedInvalidation{relay.target, std::move(relay.message)});
	}
	bool role_may_read(uint64_t role, uint32_t relid) override { return feed_.role_may_read(role, Oid(relid)); }
	bool relay(uint64_t target, std::string_view message) override { return feed_.relay(target, message); }
	void count_trackers(int delta) override { tracking_log_count_trackers(delta); }

private:
	static CommittedChange::Kind kind_of(TrackedChange::Kind kind)
	{
		switch (kind) {
		case TrackedChange::Kind::Key:
			return CommittedChange::Kind::Key;
		case TrackedChange::Kind::Table:
			return CommittedChange::Kind::Table;
		case TrackedChange::Kind::Everything:
			break;
		case TrackedChange::Kind::Unlogged:
			return CommittedChange::Kind::Unlogged;
		}
		return CommittedChange::Kind::Everything;
	}

	TrackingFeed feed_;
	std::vector<TrackedChange> collected_;
	std::vector<TrackingRelay> relayed_;
};

/* The write workers, as claimed in the RESP shared state. */
class PostgresWriteWorkers final : public WriteWorkers {
public:
	bool running(int number) override { return write_worker_pid(number) != 0; }
	bool claim(int number) override { return claim_write_worker(number); }
	void release(int number) override { release_write_worker(number, MyProcPid); }
	socklen_t address(int number, sockaddr_un *address) override
	{
		return write_worker_address(int(PostmasterPid), number, address);
	}
};

/* The settings the clients follow, as they are now. */
ClientLimits read_limits()
{
	ClientLimits limits;
	limits.max_request_size = size_t(local_cache_resp_max_request_size);
	limits.output_buffer_limit = size_t(local_cache_resp_output_buffer_limit);
	limits.client_memory = size_t(local_cache_resp_client_memory) * 1024;
	limits.lock_timeout_ms = local_cache_resp_lock_timeout;
	limits.idle_timeout_ms = int64_t(local_cache_resp_timeout) * 1000;
	limits.max_clients = size_t(local_cache_resp_max_clients);
	limits.login_timeout_ms = int64_t(AuthenticationTimeout) * 1000;
	limits.batch_delay_us = local_cache_resp_batch_delay;
	return limits;
}

/* ------------------------------------------------------------------------------- TLS */

/*
 * TLS on the worker's port (local_cache.resp_tls): the files are PostgreSQL's own (ssl_cert_file,
 * ssl_key_file, ssl_ca_file: relative to the data directory, the key held to PostgreSQL's
 * permission rule) unless local_cache.resp_tls_*_file name others, and so are the protocol range
 * (ssl_min/max_protocol_version, at least TLSv1.2) and ssl_ciphers. As the postmaster does with
 * its own, a reload builds a new context and a context that fails to load keeps the one before;
 * connections keep the context they began with.
 */
std::string setting(const char *own, const char *postgres_setting)
{
	if (own != nullptr && own[0] != '\0')
		return own;
	const char *value = GetConfigOption(postgres_setting, true, false);
	return value != nullptr ? value : "";
}

TlsConfig tls_config()
{
	TlsConfig config;
	config.cert_file = setting(local_cache_resp_tls_cert_file, "ssl_cert_file");
	config.key_file = setting(local_cache_resp_tls_key_file, "ssl_key_file");
	config.ca_file = setting(local_cache_resp_tls_ca_file, "ssl_ca_file");
	config.ciphers = setting(nullptr, "ssl_ciphers");
	/* PostgreSQL may allow TLS 1.0 and 1.1 for its own port; the RESP port starts at 1.2. */
	config.min_protocol = setting(nullptr, "ssl_min_protocol_version");
	if (tls_protocol_version(config.min_protocol) == 0)
		config.min_protocol = "TLSv1.2";
	config.max_protocol = setting(nullptr, "ssl_max_protocol_version");
	config.client_auth = local_cache_resp_tls_auth_clients == RESP_TLS_AUTH_CLIENTS_NO ? TlsClientAuth::No
					   : local_cache_resp_tls_auth_clients == RESP_TLS_AUTH_CLIENTS_YES ? TlsClientAuth::Yes
					   : TlsClientAuth::Optional;
	return config;
}

/* Loads (at start) or reloads the TLS context of a TLS port; false when it could not (logged;
 * a reload keeps the context before). True without TLS. */
bool load_tls_context(Server *server)
{
	if (!local_cache_resp_tls)
		return true;
	std::string error;
	std::shared_ptr<TlsContext> context = TlsContext::load(tls_config(), &error);
	if (context == nullptr) {
		ereport(LOG, (errmsg("local_cache RESP worker %d: %s; %s", server->worker_number, error.c_str(),
							 server->tls != nullptr ? "keeping the TLS settings loaded before"
													: "not listening until a reload loads them")));
		return false;
	}
	server->tls = std::move(context);
	return true;
}

/* ------------------------------------------------------------------------------ the loop */

/* The settings the command layer keeps: SLOWLOG's and CLIENT TRACKING's. */
void configure_commands(CommandProcessor *processor)
{
	processor->configure_slowlog(SlowlogSettings{local_cache_resp_slowlog_log_slower_than,
												 size_t(local_cache_resp_slowlog_max_len)});
	processor->tracking().set_max_keys(size_t(local_cache_resp_tracking_max_keys));
}

/* A worker's parts that its loop's turns and handles reach. */
struct Worker final : public EventLoop::Turn {
	Worker(EventLoop &event_loop, Server &clients, Authenticator &authenticator, CommandProcessor &commands);
	~Worker() { wakeup_usable = false; }

	EventLoop &loop;
	Server &server;
	Authenticator &logins; /* whose pg_hba.conf rules a reload reads again */
	CommandProcessor &processor;
	Wakeup woken;
	Timer timer; /* housekeeping, every second */
	FdWatch postmaster_watch;
	PgActivity activity; /* this worker's pg_stat_activity row */
	/* A worker folds its counts into the shared statistics at most once a millisecond (a fold
	 * takes the table's lock), and what a worker that went quiet still holds within
	 * kStatsFoldDelayMs: a timer, armed at most that often, since under load its wakeups cost
	 * the requests CPU (docs/OPERATIONS.md, "Performance notes"). */
	static constexpr uint64_t kStatsFoldDelayMs = 10;
	Timer stats_timer;
	uint64_t last_fold_ms = 0;
	/* Worker 0's: the primary publishes its standbys every housekeeping tick (topology.h). */
	PgClusterTopology *publishes_topology = nullptr;

	void before_blocking() override;
	void after_turn() override;
};

void shut_down(Worker *worker)
{
	Server *server = &worker->server;
	if (server->shutting_down)
		return;
	close_clients(server);
	worker->timer.close();
	worker->processor.fold_stats();
	worker->stats_timer.close();
	worker->postmaster_watch.close();
	wakeup_usable = false;
	worker->woken.close();
	worker->loop.stop();
}

/* Before the loop blocks, and after every wakeup: what PostgreSQL asked of this process. */
void process_interrupts(Worker *worker)
{
	Server *server = &worker->server;
	if (server->shutting_down)
		return;
	if (ProcDiePending) {
		shut_down(worker);
		return;
	}
	/* Neither runs inside a transaction, nor may an error of theirs abort the write group's. */
	if (ConfigReloadPending || InterruptPending)
		send_committed_replies(server);
	if (ConfigReloadPending) {
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
		server->limits = read_limits();
		load_tls_context(server);
		worker->logins.load_rules();
		forget_prefixes();
		configure_commands(&worker->processor);
	}
	if (InterruptPending) {
		QueryCancelPending = false;
		PgError error;
		if (!run_or_abort_transaction([]() noexcept { CHECK_FOR_INTERRUPTS(); }, &error))
			ereport(LOG, (errmsg("local_cache RESP worker %d: %s", server->worker_number, error.message)));
	}
}

/*
 * The requests counted since the last fold go to the shared statistics: now, unless a fold
 * happened this millisecond (a busy worker folds a thousand times a second at most, not per loop
 * turn); then the timer folds them at most kStatsFoldDelayMs later, so a worker that goes quiet
 * is never left holding counts.
 */
void fold_stats(Worker *worker)
{
	if (!worker->processor.stats_pending())
		return;
	uint64_t now = worker->loop.now_ms();
	if (now != worker->last_fold_ms) {
		worker->last_fold_ms = now;
		worker->processor.fold_stats();
	} else if (!worker->stats_timer.active()) {
		worker->stats_timer.start(Worker::kStatsFoldDelayMs, 0);
	}
}

void Worker::before_blocking()
{
	/* Libuv runs timers (the retry timer's requests) after the last turn's end. */
	send_committed_replies(&server);
	process_interrupts(this);
	if (!server.shutting_down) {
		tracking_before_blocking(&server);
		fold_stats(this);
	}
}

void Worker::after_turn()
{
	send_committed_replies(&server);
	tracking_after_wait(&server);
	pause_for_batch(&server);
}

void on_timer(Worker *worker)
{
	throw_point("resp_timer");
	/* Statistics are reported outside a transaction. */
	send_committed_replies(&worker->server);
	housekeeping(&worker->server);
	worker->activity.check_waiting(!worker->server.blocked.empty());
	if (worker->publishes_topology != nullptr)
		worker->publishes_topology->publish_members();
	/* Table and I/O statistics of the commands, as a backend reports them when idle. */
	pgstat_report_stat(false);
}

Worker::Worker(EventLoop &event_loop, Server &clients, Authenticator &authenticator, CommandProcessor &commands)
	: loop(event_loop), server(clients), logins(authenticator), processor(commands),
	  woken(event_loop, [this] { process_interrupts(this); }), timer(event_loop, [this] { on_timer(this); }),
	  stats_timer(event_loop, [this] { fold_stats(this); })
{
	processor.set_activity(&activity);
	wakeup = &woken;
	wakeup_usable = true;
	timer.start(TIMER_INTERVAL_MS, TIMER_INTERVAL_MS);
	postmaster_watch.open(event_loop, postmaster_alive_fds[POSTMASTER_FD_WATCH], [] { proc_exit(1); });
}

/*
 * Raises the open files limit to its maximum, as Redis does, and derives how many clients this
 * worker can hold: the limit less PostgreSQL's own files (max_files_per_process) and a margin
 * for listeners, libuv and the log. Beyond it a client is refused with an error instead of
 * being dropped by accept() failing.
 */
void size_for_open_files(Server *server)
{
	constexpr rlim_t kReserved = 64;
	rlimit limit;
	if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
		limit.rlim_cur = limit.rlim_max;
		setrlimit(RLIMIT_NOFILE, &limit);
	}
	rlim_t files = 1024;
	if (getrlimit(RLIMIT_NOFILE, &limit) == 0)
		files = limit.rlim_cur == RLIM_INFINITY ? rlim_t(1) << 20 : limit.rlim_cur;
	rlim_t reserved = rlim_t(max_files_per_process) + kReserved;
	server->max_connections_here = files > reserved ? size_t(files - reserved) : 0;
	ereport(LOG, (errmsg("local_cache RESP worker %d: open files limit %llu, room for %zu clients",
						 server->worker_number, (unsigned long long) files, server->max_connections_here)));
}

void run_server(int worker_number, WorkerCounters *counters)
{
	set_callback_failure_log(log_callback_failure_line);
	EventLoop loop;
	/* The backend: io_uring unless turned off or refused (then libuv's epoll); TLS or not. */
	if (local_cache_resp_io_uring) {
		int error = loop.use_ring();
		if (error != 0)
			ereport(LOG, (errmsg("local_cache RESP worker %d: io_uring not available (%s); serving through epoll",
								 worker_number, strerror(error))));
	}
	PostgresHost host(counters);
	Server server(worker_number, loop, host);
	server.limits = read_limits();
	server.listen = ListenSettings{local_cache_resp_listen_addresses, local_cache_resp_port, local_cache_resp_tls};
	size_for_open_files(&server);
	/* The commands' data sources on PostgreSQL, one object per interface (commands/data_source.h). */
	PgRowReader rows;
	PgCacheHits hits;
	PgRowWriter writes;
	PgBatches batches;
	Authenticator logins;
	PgServerInfo server_info;
	CommandProcessor processor(DataSources(rows, hits, writes, batches, logins, server_info));
	WorkerClients clients(&server);
	processor.set_client_directory(&clients);
	PgClusterTopology topology;
	processor.set_cluster(&topology);
	PostgresCommitFeed feed(worker_number);
	configure_commands(&processor);
	SharedCommandStats stats_store;
	processor.set_stats_store(&stats_store);
	PostgresWriteWorkers write_workers;
	WritePool write_pool(&server, write_workers, local_cache_resp_write_workers);
	if (local_cache_resp_write_workers > 0)
		processor.set_write_offload(&write_pool);
	server.logins = &logins;
	server.processor = &processor;
	server.write_pool = &write_pool;
	server.feed = &feed;

	Worker worker(loop, server, logins, processor);
	if (worker_number == 0)
		worker.publishes_topology = &topology;
	start_tracking_delivery(&server);
	load_tls_context(&server);
	start_listening(&server);
	process_interrupts(&worker); /* a SIGTERM that came during start-up */
	loop.run(worker);
}

} // namespace

/*
 * The worker's main, run through the boundary (LOCAL_CACHE_WORKER_MAIN): a C++ exception that
 * escapes the loop has unwound its objects and ends the worker with a logged ERROR (exit 1);
 * the launcher starts it again.
 */
void worker_main(Datum main_arg)
{
	int number = DatumGetInt32(main_arg);
	pqsignal(SIGTERM, handle_sigterm);
	pqsignal(SIGUSR1, handle_sigusr1);
	pqsignal(SIGHUP, handle_sighup);
	pqsignal(SIGUSR2, handle_sigusr2);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(local_cache_resp_database, NULL, 0);
	WorkerCounters *counters = worker_started(number);
	char name[NAMEDATALEN];
	snprintf(name, sizeof(name), "local_cache RESP worker %d", number);
	pgstat_report_appname(name);
	throw_point("resp_worker_main");
	run_server(number, counters);
	/* The launcher starts the worker again unless the server is shutting down. */
	proc_exit(0);
}

} // namespace local_cache::resp

LOCAL_CACHE_WORKER_MAIN(local_cache_resp_worker_main, local_cache::resp::worker_main)
