/*
 * launcher.cpp — the RESP server's launcher: one background worker, connected to no
 * database, that starts the RESP workers (worker.cpp) once local_cache.resp_database exists
 * and starts them again when they end.
 *
 * The workers are dynamic background workers that the postmaster never restarts by itself:
 * a worker that cannot connect (the database was dropped, or renamed) would otherwise be
 * restarted every few seconds, each time with a FATAL in the log. The launcher instead checks
 * pg_database (a shared catalog, readable without a database), logs once that it waits, and
 * starts the workers when the database is back — no server restart. It waits on its latch,
 * which the postmaster sets when one of its workers starts or stops (bgw_notify_pid), and
 * processes interrupts at every turn, so it answers barriers and SIGTERM at once.
 */
#include "extension/pg.h"

#include "extension/boundary.h"
#include "resp_server/auth/session_limits.h"
#include "resp_server/entry.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/shared_state.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

extern "C" {
#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
}

namespace local_cache {

namespace {

void init_worker(BackgroundWorker *worker, const char *name, const char *function)
{
	memset(worker, 0, sizeof(*worker));
	snprintf(worker->bgw_name, BGW_MAXLEN, "%s", name);
	snprintf(worker->bgw_type, BGW_MAXLEN, "%s", name);
	worker->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	/* Hot standbys serve RESP too: their caches follow the primary through WAL. */
	worker->bgw_start_time = BgWorkerStart_ConsistentState;
	snprintf(worker->bgw_library_name, BGW_MAXLEN, "local_cache");
	snprintf(worker->bgw_function_name, BGW_MAXLEN, "%s", function);
}

} // namespace

void resp_init(void)
{
	resp_define_settings();
	if (local_cache_resp_port == 0)
		return;
	BackgroundWorker launcher;
	init_worker(&launcher, "local_cache RESP launcher", "local_cache_resp_launcher_main");
	launcher.bgw_restart_time = 5;
	RegisterBackgroundWorker(&launcher);
	resp::install_session_limits_hook();

	/* The launcher, the workers and the write workers take background-worker slots that
	 * parallel query draws on too: with too few left, parallel queries launch fewer workers than
	 * planned and nothing says why, so say it here, once, at server start. */
	int resp_slots = 1 + resp_worker_count() + local_cache_resp_write_workers;
	int left = max_worker_processes - resp_slots;
	if (left < max_parallel_workers)
		ereport(WARNING,
				(errmsg("local_cache RESP: the launcher, %d workers and %d write workers take %d of "
						"max_worker_processes = %d background worker slots, leaving %d for max_parallel_workers = %d",
						resp_worker_count(), local_cache_resp_write_workers, resp_slots, max_worker_processes,
						left < 0 ? 0 : left, max_parallel_workers),
				 errhint("Raise max_worker_processes to %d, or lower local_cache.resp_workers or "
						 "local_cache.resp_write_workers.",
						 resp_slots + max_parallel_workers)));
}

namespace resp {

namespace {

/* A worker that ended is started again after this long, as the postmaster would. */
constexpr long RESTART_DELAY_MS = 5000;
/* How often the launcher looks for a missing database. */
constexpr long DATABASE_POLL_MS = 1000;
/* Otherwise it sleeps until a worker starts or stops, or this long. */
constexpr long IDLE_WAIT_MS = 60000;

struct WorkerSlot {
	BackgroundWorkerHandle *handle; /* nullptr: not started by this launcher, or ended */
	bool running;                   /* as last seen */
	TimestampTz next_start;
};

/* Whether a worker could connect to the database now. A heap scan of pg_database: without a
 * database, only the nailed relcache entries (pg_database's, not its indexes') are usable. */
bool database_connectable(const char *name)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	Relation rel = table_open(DatabaseRelationId, AccessShareLock);
	ScanKeyData key;
	ScanKeyInit(&key, Anum_pg_database_datname, BTEqualStrategyNumber, F_NAMEEQ, CStringGetDatum(name));
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
	HeapTuple tuple = systable_getnext(scan);
	bool connectable = false;
	if (HeapTupleIsValid(tuple)) {
		Form_pg_database database = (Form_pg_database) GETSTRUCT(tuple);
		connectable = database->datallowconn && !database_is_invalid_form(database);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return connectable;
}

/* The two kinds of process the launcher keeps running. */
struct WorkerKind {
	const char *name;     /* "local_cache RESP worker" */
	const char *function; /* its main */
	pid_t (*pid_of)(int number);
	int (*count)(void);
};

int write_worker_count(void)
{
	return local_cache_resp_write_workers;
}

const WorkerKind kRespWorkers = {"local_cache RESP worker", "local_cache_resp_worker_main", worker_pid,
								 resp_worker_count};
const WorkerKind kWriteWorkers = {"local_cache RESP write worker", "local_cache_resp_write_worker_main",
								  write_worker_pid, write_worker_count};

bool is_running(const WorkerKind &kind, WorkerSlot *slot, int number)
{
	if (slot->handle != nullptr) {
		pid_t pid;
		BgwHandleStatus status = GetBackgroundWorkerPid(slot->handle, &pid);
		if (status == BGWH_STARTED || status == BGWH_NOT_YET_STARTED)
			return true;
		pfree(slot->handle);
		slot->handle = nullptr;
	}
	/* One started by an earlier launcher that ended while its workers went on. */
	return kind.pid_of(number) != 0;
}

void start_worker(const WorkerKind &kind, WorkerSlot *slot, int number, bool *no_slot_logged)
{
	BackgroundWorker worker;
	char name[BGW_MAXLEN];
	snprintf(name, sizeof(name), "%s %d", kind.name, number);
	init_worker(&worker, name, kind.function);
	snprintf(worker.bgw_type, BGW_MAXLEN, "%s", kind.name);
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	worker.bgw_main_arg = Int32GetDatum(number);
	worker.bgw_notify_pid = MyProcPid;
	if (RegisterDynamicBackgroundWorker(&worker, &slot->handle)) {
		slot->running = true;
		*no_slot_logged = false;
		return;
	}
	slot->handle = nullptr;
	if (!*no_slot_logged)
		ereport(WARNING,
				(errmsg("local_cache RESP: could not start a worker: no free background worker slot"),
				 errhint("Raise max_worker_processes.")));
	*no_slot_logged = true;
}

/* Whether `address` is a loopback address. */
bool is_loopback(const sockaddr *address)
{
	if (address->sa_family == AF_INET)
		return (ntohl(reinterpret_cast<const sockaddr_in *>(address)->sin_addr.s_addr) >> 24) == 127;
	if (address->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6 *>(address)->sin6_addr);
	return false;
}

/*
 * Whether every address of the list is a loopback one, as resolved ("*" is every address). A
 * name that does not resolve is logged as such (the workers retry it) and listens nowhere, so it
 * counts as loopback: the message about TLS is for addresses that would be served.
 */
bool loopback_only(const char *addresses)
{
	std::string all = addresses;
	size_t start = 0;
	bool loopback = true;
	while (start <= all.size()) {
		size_t comma = all.find(',', start);
		std::string host = all.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
		host.erase(0, host.find_first_not_of(" \t"));
		host.erase(host.find_last_not_of(" \t") + 1);
		if (host == "*") {
			loopback = false;
		} else if (!host.empty()) {
			addrinfo hints = {};
			hints.ai_family = AF_UNSPEC;
			hints.ai_socktype = SOCK_STREAM;
			hints.ai_flags = AI_PASSIVE;
			addrinfo *resolved = nullptr;
			int rc = getaddrinfo(host.c_str(), nullptr, &hints, &resolved);
			if (rc != 0)
				ereport(LOG, (errmsg("local_cache RESP: could not resolve \"%s\": %s", host.c_str(), gai_strerror(rc)),
							  errhint("Check local_cache.resp_listen_addresses (\"%s\").", addresses)));
			for (addrinfo *a = resolved; a != nullptr; a = a->ai_next)
				loopback = loopback && is_loopback(a->ai_addr);
			if (resolved != nullptr)
				freeaddrinfo(resolved);
		}
		if (comma == std::string::npos)
			break;
		start = comma + 1;
	}
	return loopback;
}

/*
 * In the spirit of Redis's protected mode, which refuses unauthenticated clients from other
 * hosts: a warning when clients that never AUTH act as a role and the server listens beyond
 * loopback, or when that role is a superuser. At start and after each reload.
 */
void warn_about_exposure(bool loopback)
{
	if (local_cache_resp_role == nullptr || local_cache_resp_role[0] == '\0')
		return;
	if (!loopback)
		ereport(WARNING,
				(errmsg("local_cache RESP listens on \"%s\" and serves clients that do not AUTH as role \"%s\"",
						local_cache_resp_listen_addresses, local_cache_resp_role),
				 errdetail("Anyone who can reach port %d reads what that role may read.", local_cache_resp_port),
				 errhint("Set local_cache.resp_role = '' to require AUTH, or listen on loopback only.")));
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	Oid role = get_role_oid(local_cache_resp_role, true);
	bool superuser = OidIsValid(role) && superuser_arg(role);
	CommitTransactionCommand();
	if (!OidIsValid(role))
		ereport(WARNING,
				(errmsg("local_cache.resp_role \"%s\" names no role: RESP clients that do not AUTH are refused (NOAUTH)",
						local_cache_resp_role),
				 errhint("Create the role, or set local_cache.resp_role = '' to require AUTH.")));
	if (superuser)
		ereport(WARNING,
				(errmsg("local_cache.resp_role \"%s\" is a superuser: RESP clients that do not AUTH read every cached table",
						local_cache_resp_role),
				 errhint("Choose a role with SELECT on the tables RESP should serve.")));
}

/* Notes which workers of a kind run; whether one does not. */
bool note_running(const WorkerKind &kind, WorkerSlot *slots, TimestampTz now)
{
	bool any_stopped = false;
	for (int i = 0; i < kind.count(); i++) {
		bool running = is_running(kind, &slots[i], i);
		if (slots[i].running && !running)
			slots[i].next_start = TimestampTzPlusMilliseconds(now, RESTART_DELAY_MS);
		slots[i].running = running;
		any_stopped = any_stopped || !running;
	}
	return any_stopped;
}

/* Starts the workers of a kind that should run and may; lowers *wait to when the next may. */
void start_stopped(const WorkerKind &kind, WorkerSlot *slots, TimestampTz now, long *wait, bool *no_slot_logged)
{
	for (int i = 0; i < kind.count(); i++) {
		if (slots[i].running)
			continue;
		if (now >= slots[i].next_start)
			start_worker(kind, &slots[i], i, no_slot_logged);
		if (!slots[i].running) {
			long delay = TimestampDifferenceMilliseconds(now, slots[i].next_start);
			*wait = Min(*wait, Max(delay, DATABASE_POLL_MS));
		}
	}
}

/* One turn: start the workers and write workers that should run; returns how long to sleep. */
long start_missing_workers(WorkerSlot *slots, WorkerSlot *write_slots, bool *waiting_logged, bool *no_slot_logged)
{
	TimestampTz now = GetCurrentTimestamp();
	long wait = IDLE_WAIT_MS;
	bool workers_stopped = note_running(kRespWorkers, slots, now);
	bool write_workers_stopped = note_running(kWriteWorkers, write_slots, now);
	if (!workers_stopped && !write_workers_stopped)
		return wait;

	if (!database_connectable(local_cache_resp_database)) {
		if (!*waiting_logged)
			ereport(LOG, (errmsg("local_cache RESP: database \"%s\" does not exist or does not allow connections; "
								 "waiting for it", local_cache_resp_database)));
		*waiting_logged = true;
		return DATABASE_POLL_MS;
	}
	if (*waiting_logged)
		ereport(LOG, (errmsg("local_cache RESP: database \"%s\" is available; starting the workers",
							 local_cache_resp_database)));
	*waiting_logged = false;

	start_stopped(kRespWorkers, slots, now, &wait, no_slot_logged);
	start_stopped(kWriteWorkers, write_slots, now, &wait, no_slot_logged);
	return wait;
}

/* Run through the boundary (LOCAL_CACHE_WORKER_MAIN): a C++ exception ends the launcher with a
 * logged ERROR (exit 1), and the postmaster starts it again (bgw_restart_time). */
void launcher_main(Datum)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("local_cache RESP launcher");

	WorkerSlot slots[RESP_MAX_WORKERS] = {};
	WorkerSlot write_slots[RESP_MAX_WRITE_WORKERS] = {};
	bool waiting_logged = false;
	bool no_slot_logged = false;
	bool loopback = loopback_only(local_cache_resp_listen_addresses);
	warn_about_exposure(loopback);
	/* No plaintext beyond loopback by accident: passwords and rows would cross the network in
	 * the clear. The settings involved are fixed until a restart. */
	bool plaintext_refused = !local_cache_resp_tls && !local_cache_resp_allow_plaintext && !loopback;
	if (plaintext_refused)
		ereport(LOG, (errmsg("local_cache RESP: not listening on \"%s\": beyond loopback the RESP port requires TLS",
							 local_cache_resp_listen_addresses),
					  errhint("Set local_cache.resp_tls = on (it uses the server's certificate files), or "
							  "local_cache.resp_allow_plaintext = on to serve plaintext anyway.")));
	for (;;) {
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending) {
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			warn_about_exposure(loopback);
		}
		long wait = plaintext_refused ? IDLE_WAIT_MS : start_missing_workers(slots, write_slots, &waiting_logged, &no_slot_logged);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, wait, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

} // namespace

} // namespace resp

} // namespace local_cache

LOCAL_CACHE_WORKER_MAIN(local_cache_resp_launcher_main, local_cache::resp::launcher_main)
