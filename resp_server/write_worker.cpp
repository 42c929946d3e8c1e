/*
 * write_worker.cpp — a RESP write worker's main: the process that runs RESP writes (a write
 * command, or an EXEC that writes) for this server's RESP workers, so that the role's
 * triggers, defaults and checks run here and never hold a RESP worker's loop
 * (clients/write_pool.h says how a write comes and goes).
 *
 * Started by the launcher (launcher.cpp), local_cache.resp_write_workers of them, each connected
 * to local_cache.resp_database. It listens on its abstract Unix socket, takes connections from
 * this server's RESP workers only (SO_PEERCRED: a RESP worker's pid), and runs one write at a
 * time (a RESP worker claims it first, claim_write_worker): the job's request, in a session
 * made of what the job carries, through the same CommandProcessor and data sources a RESP worker
 * uses — as the role, with its settings and statement_timeout (pg/write_runner.h). A write that
 * finds a table locked runs again here until local_cache.resp_lock_timeout, as a RESP worker
 * would retry it. Its commit is marked as the connection's (tracking_log_set_writer), so CLIENT
 * TRACKING's NOLOOP still knows it. Its pg_stat_activity row shows the write it runs, as the
 * role (pg/activity.h), and INFO's command statistics count it here, folded after each write.
 * Between jobs it waits on its latch and its sockets:
 * SIGTERM ends it, SIGHUP reloads the settings, the postmaster's death ends it.
 */
#include "extension/pg.h"

#include "extension/boundary.h"
#include "extension/tracking_log.h"
#include "resp_server/auth/logins.h"
#include "resp_server/commands/write_job.h"
#include "resp_server/clients/write_pool.h"
#include "resp_server/pg/activity.h"
#include "resp_server/pg/batches.h"
#include "resp_server/pg/command_stats_table.h"
#include "resp_server/pg/hit_path.h"
#include "resp_server/pg/row_reader.h"
#include "resp_server/pg/server_info.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/shared_state.h"
#include "resp_server/pg/writes.h"

extern "C" {
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
}

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <vector>

namespace local_cache::resp {

namespace {

/* A RESP worker's connection. */
struct Peer {
	int fd;
	pid_t pid;
	std::string input;
};

/* Between two runs of a write that found a table locked. */
constexpr long kLockRetryMs = 5;

int listen_socket(int number)
{
	sockaddr_un address;
	socklen_t length = write_worker_address(int(PostmasterPid), number, &address);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&address), length) != 0 || listen(fd, RESP_MAX_WORKERS) != 0)
		ereport(FATAL, (errmsg("local_cache RESP write worker %d could not listen on its socket: %m", number)));
	return fd;
}

/* A connection from a process that is not one of this server's RESP workers is closed. */
void accept_peer(int listener, std::vector<Peer> &peers)
{
	int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	ucred credentials;
	socklen_t length = sizeof(credentials);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0 || credentials.uid != geteuid() ||
		!is_resp_worker(credentials.pid)) {
		close(fd);
		return;
	}
	peers.push_back(Peer{fd, credentials.pid, std::string()});
}

/* Runs one job and returns its reply frame. */
std::string run_job(CommandProcessor &processor, WriteJob &job)
{
	ReplyBuffer out;
	TimestampTz started = GetCurrentTimestamp();
	TimestampTz blocked_since = 0;
	for (;;) {
		TimestampTz now = GetCurrentTimestamp();
		job.session.lock_wait_expired = local_cache_resp_lock_timeout == 0 ||
			(blocked_since != 0 && TimestampDifferenceExceeds(blocked_since, now, local_cache_resp_lock_timeout));
		tracking_log_set_writer(job.session.id);
		processor.execute(job.request(), job.session, out);
		tracking_log_set_writer(0);
		if (!job.session.retry_later)
			break;
		if (blocked_since == 0)
			blocked_since = now;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, kLockRetryMs, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	WriteReply reply;
	reply.reply = out.view();
	reply.duration_us = GetCurrentTimestamp() - started;
	reply.tracked_keys = processor.tracking().take_noted_keys();
	reply.uncaptured_keys = processor.tracking().take_uncaptured_keys();
	std::string frame;
	encode_write_reply(reply, frame);
	return frame;
}

/* Reads what the peer sent and runs each complete job; false when the peer is gone. */
bool serve_peer(CommandProcessor &processor, Peer &peer)
{
	if (!receive_available(peer.fd, peer.input))
		return false;
	while (std::optional<size_t> size = complete_write_frame(peer.input)) {
		WriteJob job;
		if (!decode_write_job(std::string_view(peer.input).substr(kWriteFrameHeader, *size - kWriteFrameHeader), &job)) {
			ereport(LOG, (errmsg("local_cache RESP write worker: a malformed job from process %d", int(peer.pid))));
			return false;
		}
		std::string reply = run_job(processor, job);
		peer.input.erase(0, *size);
		if (!send_frame(peer.fd, reply, -1))
			return false;
	}
	return true;
}

void serve(int number)
{
	PgRowReader rows;
	PgCacheHits hits;
	PgRowWriter writes;
	PgBatches batches;
	Authenticator logins;
	PgServerInfo server_info;
	CommandProcessor processor(DataSources(rows, hits, writes, batches, logins, server_info));
	SharedCommandStats stats;
	PgActivity activity;
	processor.set_stats_store(&stats);
	processor.set_activity(&activity);
	int listener = listen_socket(number);
	std::vector<Peer> peers;
	ereport(LOG, (errmsg("local_cache RESP write worker %d ready", number)));
	/* Made again only when the peers change: a write costs one wait, not a new epoll set. */
	WaitEventSet *events = nullptr;
	for (;;) {
		if (events == nullptr) {
			events = CreateWaitEventSet(TopMemoryContext, int(3 + peers.size()));
			AddWaitEventToSet(events, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, nullptr);
			AddWaitEventToSet(events, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, nullptr, nullptr);
			AddWaitEventToSet(events, WL_SOCKET_READABLE, listener, nullptr, nullptr);
			for (size_t i = 0; i < peers.size(); i++)
				AddWaitEventToSet(events, WL_SOCKET_READABLE, peers[i].fd, nullptr, reinterpret_cast<void *>(i + 1));
		}
		WaitEvent ready[RESP_MAX_WORKERS + 3];
		int count = WaitEventSetWait(events, -1, ready, lengthof(ready), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending) {
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		std::vector<size_t> gone;
		for (int e = 0; e < count; e++) {
			if (!(ready[e].events & WL_SOCKET_READABLE))
				continue;
			if (ready[e].fd == listener) {
				size_t before = peers.size();
				accept_peer(listener, peers);
				if (peers.size() != before) {
					FreeWaitEventSet(events);
					events = nullptr;
				}
				continue;
			}
			size_t i = reinterpret_cast<size_t>(ready[e].user_data) - 1;
			if (!serve_peer(processor, peers[i]))
				gone.push_back(i);
			processor.fold_stats();
		}
		if (!gone.empty() && events != nullptr) {
			FreeWaitEventSet(events);
			events = nullptr;
		}
		/* Last first, so the indexes of the others stay right. */
		for (auto i = gone.rbegin(); i != gone.rend(); ++i) {
			close(peers[*i].fd);
			/* A RESP worker that ended while it had claimed this write worker frees it. */
			release_write_worker(number, peers[*i].pid);
			peers.erase(peers.begin() + long(*i));
		}
		pgstat_report_stat(false);
	}
}

} // namespace

/* Run through the boundary (LOCAL_CACHE_WORKER_MAIN): a C++ exception ends the write worker with
 * a logged ERROR; the launcher starts it again. */
void write_worker_main(Datum main_arg)
{
	int number = DatumGetInt32(main_arg);
	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(local_cache_resp_database, NULL, 0);
	write_worker_started(number);
	char name[NAMEDATALEN];
	snprintf(name, sizeof(name), "local_cache RESP write worker %d", number);
	pgstat_report_appname(name);
	serve(number);
}

} // namespace local_cache::resp

LOCAL_CACHE_WORKER_MAIN(local_cache_resp_write_worker_main, local_cache::resp::write_worker_main)
