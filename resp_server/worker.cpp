/*
 * worker.cpp — a RESP worker's main: its signals, its libuv loop, and how the loop answers
 * PostgreSQL's interrupts.
 *
 * Started by the launcher (launcher.cpp), a worker connects to local_cache.resp_database and
 * runs one loop on its main thread (no libuv thread pool: PostgreSQL is only called from this
 * thread): its io_uring's (run_ring_loop), which runs libuv's loop when that has work, or
 * libuv's alone (server.h says when). Signals are PostgreSQL's own handlers (die,
 * procsignal_sigusr1_handler, SignalHandlerForConfigReload, and SIGUSR2 from a writer of the
 * tracking log), each followed by uv_async_send to wake the loop; before the loop blocks, at
 * every turn (libuv's prepare handle, or run_ring_loop itself):
 *   - SIGTERM (ProcDiePending): close the listeners and every connection, end the loop, exit;
 *   - SIGHUP: reload the settings;
 *   - commits in the tracking log: CLIENT TRACKING's invalidations (tracking_delivery.cpp; from
 *     here until the loop has waited, writers signal the worker);
 *   - CHECK_FOR_INTERRUPTS(): ProcSignalBarriers (DROP DATABASE, ALTER DATABASE SET
 *     TABLESPACE wait for every backend to absorb them), memory-context logging. A cancel
 *     (pg_cancel_backend) that arrives between commands has nothing to cancel: dropped.
 * After every turn (a check handle, or run_ring_loop) the loop may pause briefly under the load
 * of many clients (pause_for_batch, local_cache.resp_batch_delay). Before it blocks, the requests
 * counted for INFO's command statistics are folded into shared memory, at most once a
 * millisecond and within 10 ms (fold_stats); the pg_stat_activity row shows the command running
 * (PgActivity).
 * Inside a command (in_transaction(), pg/transaction.h) PostgreSQL's own waits (a lock
 * wait, a long scan) check interrupts themselves: SIGTERM ends the worker there with the
 * usual FATAL, a cancel or lock_timeout fails the command only. The wakeup handle stays
 * usable until it is closed; a late signal never reaches a closed handle.
 */
#include "extension/pg.h"

#include "extension/boundary.h"

#include "resp_server/auth/logins.h"
#include "resp_server/net/server.h"
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
#include "resp_server/pg/writes.h"

extern "C" {
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/procsignal.h"
#include "tcop/tcopprot.h"
#include "utils/timestamp.h"
}

#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include <cerrno>
#include <stdexcept>
#include <string>

namespace local_cache::resp {

namespace {

constexpr uint64_t TIMER_INTERVAL_MS = 1000;

/* The wakeup handle may be used: set after uv_async_init, cleared before it is closed. */
volatile sig_atomic_t wakeup_usable = false;
uv_async_t wakeup;

/* run_server's logins, whose pg_hba.conf rules a reload reads again. */
Authenticator *worker_logins = nullptr;

/* INFO's command statistics, shared by every process, and this worker's pg_stat_activity row. */
SharedCommandStats stats_store;
PgActivity activity;
/* A worker folds its counts into the shared statistics at most once a millisecond (a fold takes
 * the table's lock), and what a worker that went quiet still holds within kStatsFoldDelayMs: a
 * timer, armed at most that often, since under load its wakeups cost the requests CPU (armed
 * every millisecond, it measured about 4% more worker CPU per unpipelined GET in one A/B
 * sitting; docs/TECHNICAL.md, "Performance notes"). */
constexpr uint64_t kStatsFoldDelayMs = 10;
uv_timer_t stats_timer;
uint64_t last_fold_ms = 0;

void wake_loop()
{
	if (wakeup_usable)
		uv_async_send(&wakeup);
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

void shut_down(Server *server)
{
	if (server->shutting_down)
		return;
	server->shutting_down = true;
	stop_listening(server);
	while (server->connections != nullptr)
		close_connection(server->connections);
	server->write_pool->close();
	uv_close(reinterpret_cast<uv_handle_t *>(&server->timer), nullptr);
	uv_close(reinterpret_cast<uv_handle_t *>(&server->retry_timer), nullptr);
	uv_close(reinterpret_cast<uv_handle_t *>(&server->interrupts), nullptr);
	uv_close(reinterpret_cast<uv_handle_t *>(&server->batch_pause), nullptr);
	uv_close(reinterpret_cast<uv_handle_t *>(&server->postmaster_watch), nullptr);
	server->processor->fold_stats();
	uv_close(reinterpret_cast<uv_handle_t *>(&stats_timer), nullptr);
	stop_tracking_delivery(server);
	wakeup_usable = false;
	uv_close(reinterpret_cast<uv_handle_t *>(&wakeup), nullptr);
}

/* The settings the command layer keeps: SLOWLOG's and CLIENT TRACKING's. */
void configure_commands(CommandProcessor *processor)
{
	processor->configure_slowlog(SlowlogSettings{local_cache_resp_slowlog_log_slower_than,
												 size_t(local_cache_resp_slowlog_max_len)});
	processor->tracking().set_max_keys(size_t(local_cache_resp_tracking_max_keys));
}

/* Before the loop blocks, and after every wakeup: what PostgreSQL asked of this process. */
void process_interrupts(Server *server)
{
	if (server->shutting_down)
		return;
	if (ProcDiePending) {
		shut_down(server);
		return;
	}
	if (ConfigReloadPending) {
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
		load_tls_context(server);
		worker_logins->load_rules();
		forget_prefixes();
		configure_commands(server->processor);
	}
	if (InterruptPending) {
		QueryCancelPending = false;
		PgError error;
		if (!run_or_abort_transaction([]() noexcept { CHECK_FOR_INTERRUPTS(); }, &error))
			ereport(LOG, (errmsg("local_cache RESP worker %d: %s", server->worker_number, error.message)));
	}
}

/*
 * After each loop turn: a pause of local_cache.resp_batch_delay microseconds before the loop
 * blocks, when the load calls for it (batching.h says when and why). It does not first look
 * for requests already waiting: under that load they mostly are, so the look would cost a
 * system call per turn and spare few pauses. The pause is bounded (at most 1 ms) and a signal
 * ends it at once.
 * A worker with an io_uring pauses inside io_uring_enter, the turn's replies submitted in the
 * same call, not in nanosleep: as long a pause, but under many clients it serves more requests.
 * The measurements of both: docs/TECHNICAL.md, "Wakeups and local_cache.resp_batch_delay".
 */
void pause_for_batch(Server *server)
{
	IoRing *ring = server->ring.get();
	unsigned pauses_apart = ring != nullptr ? BatchPolicy::kPausesApartInRing : BatchPolicy::kPausesApartInSleep;
	if (server->shutting_down ||
		!server->batching.should_pause(uv_now(&server->loop), local_cache_resp_batch_delay, pauses_apart))
		return;
	if (ring != nullptr) {
		ring->submit_and_pause(local_cache_resp_batch_delay);
	} else {
		timespec pause = {0, long(local_cache_resp_batch_delay) * 1000};
		nanosleep(&pause, nullptr);
	}
	count(&server->counters->batch_pauses, 1);
}

void on_timer(uv_timer_t *timer)
{
	Server *server = static_cast<Server *>(timer->data);
	throw_point("resp_timer");
	int64_t now = now_ms();
	if (server->listeners.empty() && now >= server->next_bind_attempt_ms)
		start_listening(server);
	resume_accepting(server);
	if (local_cache_resp_timeout > 0) {
		int64_t limit = int64_t(local_cache_resp_timeout) * 1000;
		for (Connection *c = server->connections, *next; c != nullptr; c = next) {
			next = c->next;
			if (!c->write_in_flight && c->blocked_since_ms == 0 && now - c->last_active_ms > limit)
				close_connection(c);
		}
	}
	/* A login, its TLS handshake included, has as long as a PostgreSQL login. */
	close_unauthenticated(server);
	log_left_out_handshake_failures(server);
	log_left_out_disconnects(server);
	activity.check_waiting(!server->blocked.empty());
	/* Table and I/O statistics of the commands, as a backend reports them when idle. */
	pgstat_report_stat(false);
}

void on_stats_timer(uv_timer_t *timer);

/*
 * The requests counted since the last fold go to the shared statistics: now, unless a fold
 * happened this millisecond (a busy worker folds a thousand times a second at most, not per loop
 * turn); then the timer folds them at most kStatsFoldDelayMs later, so a worker that goes quiet
 * is never left holding counts.
 */
void fold_stats(Server *server)
{
	if (!server->processor->stats_pending())
		return;
	uint64_t now = uv_now(&server->loop);
	if (now != last_fold_ms) {
		last_fold_ms = now;
		server->processor->fold_stats();
	} else if (!uv_is_active(reinterpret_cast<uv_handle_t *>(&stats_timer))) {
		uv_timer_start(&stats_timer, uv_callback<on_stats_timer>, kStatsFoldDelayMs, 0);
	}
}

void on_stats_timer(uv_timer_t *timer)
{
	fold_stats(static_cast<Server *>(timer->data));
}

void on_wakeup(uv_async_t *handle)
{
	process_interrupts(static_cast<Server *>(handle->data));
}

void before_blocking(Server *server)
{
	process_interrupts(server);
	if (!server->shutting_down) {
		tracking_before_blocking(server);
		fold_stats(server);
	}
}

void after_turn(Server *server)
{
	tracking_after_wait(server);
	pause_for_batch(server);
}

void on_prepare(uv_prepare_t *handle)
{
	before_blocking(static_cast<Server *>(handle->data));
}

void on_check(uv_check_t *handle)
{
	after_turn(static_cast<Server *>(handle->data));
}

/*
 * The loop of a worker with an io_uring: each turn submits the sends the last one queued and
 * waits, in one io_uring_enter, for receives, sends, or libuv's epoll descriptor (polled through
 * the ring) to complete, or for libuv's next timer. libuv's loop runs, without blocking, only
 * when its descriptor was ready or a timer is due, so a busy turn makes that one system call.
 * It ends once shut_down has closed everything and the closed connections' last completions
 * have come.
 */
void run_ring_loop(Server *server)
{
	IoRing &ring = *server->ring;
	uv_loop_t *loop = &server->loop;
	bool libuv_ready = true;
	for (;;) {
		uv_update_time(loop);
		if (libuv_ready || uv_backend_timeout(loop) == 0) {
			uv_run(loop, UV_RUN_NOWAIT);
			/* Polled again only now: polled while libuv still had events to take, it would
			 * complete at once. */
			if (libuv_ready)
				ring.poll_readable(uv_backend_fd(loop), kRingLibuv);
			libuv_ready = false;
		}
		after_turn(server);
		reap_closed_connections(server);
		if (server->shutting_down && server->closed_on_ring == nullptr && !uv_loop_alive(loop))
			return;
		before_blocking(server);
		int rc = ring.submit_and_wait(uv_backend_timeout(loop));
		if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
			throw std::runtime_error(std::string("io_uring_enter failed: ") + strerror(-rc));
		ring.each_completion([&](const IoRing::Completion &done) {
			if (done.user_data == kRingLibuv)
				libuv_ready = true;
			else
				on_ring_completion(done);
		});
	}
}

void on_postmaster_death(uv_poll_t *, int, int)
{
	proc_exit(1);
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
	Server server;
	server.worker_number = worker_number;
	server.counters = counters;
	size_for_open_files(&server);
	/* The commands' data sources on PostgreSQL, one object per interface (commands/data_source.h). */
	PgRowReader rows;
	PgCacheHits hits;
	PgRowWriter writes;
	PgBatches batches;
	Authenticator logins;
	PgServerInfo server_info;
	worker_logins = &logins;
	CommandProcessor processor(DataSources(rows, hits, writes, batches, logins, server_info));
	WorkerClients clients(&server);
	processor.set_client_directory(&clients);
	PgClusterTopology topology;
	processor.set_cluster(&topology);
	TrackingFeed tracking_feed(worker_number);
	server.tracking_feed = &tracking_feed;
	configure_commands(&processor);
	processor.set_stats_store(&stats_store);
	processor.set_activity(&activity);
	WritePool write_pool(&server, local_cache_resp_write_workers);
	if (local_cache_resp_write_workers > 0)
		processor.set_write_offload(&write_pool);
	server.logins = &logins;
	server.processor = &processor;
	server.write_pool = &write_pool;

	uv_loop_init(&server.loop);
	uv_async_init(&server.loop, &wakeup, uv_callback<on_wakeup>);
	wakeup.data = &server;
	wakeup_usable = true;
	if (local_cache_resp_io_uring && !local_cache_resp_tls)
		open_ring(&server);
	/* run_ring_loop calls them itself */
	uv_prepare_init(&server.loop, &server.interrupts);
	server.interrupts.data = &server;
	uv_check_init(&server.loop, &server.batch_pause);
	server.batch_pause.data = &server;
	if (server.ring == nullptr) {
		uv_prepare_start(&server.interrupts, uv_callback<on_prepare>);
		uv_check_start(&server.batch_pause, uv_callback<on_check>);
	}
	/* nanosleep would round local_cache.resp_batch_delay up by the default 50 µs of slack */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	uv_timer_init(&server.loop, &server.timer);
	server.timer.data = &server;
	uv_timer_start(&server.timer, uv_callback<on_timer>, TIMER_INTERVAL_MS, TIMER_INTERVAL_MS);
	uv_timer_init(&server.loop, &server.retry_timer);
	server.retry_timer.data = &server;
	uv_timer_init(&server.loop, &stats_timer);
	stats_timer.data = &server;
	start_tracking_delivery(&server);
	uv_poll_init(&server.loop, &server.postmaster_watch, postmaster_alive_fds[POSTMASTER_FD_WATCH]);
	uv_poll_start(&server.postmaster_watch, UV_READABLE, uv_callback<on_postmaster_death>);

	load_tls_context(&server);
	start_listening(&server);
	process_interrupts(&server); /* a SIGTERM that came during start-up */
	if (server.ring != nullptr)
		run_ring_loop(&server);
	else
		uv_run(&server.loop, UV_RUN_DEFAULT);
	uv_loop_close(&server.loop);
}

} // namespace

int64_t now_ms()
{
	return GetCurrentTimestamp() / 1000;
}

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
