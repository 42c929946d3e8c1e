/*
 * settings.cpp — defines the RESP server's settings. The listening socket and the workers
 * are fixed at server start (PGC_POSTMASTER); the rest take effect at reload.
 */
#include "extension/pg.h"

#include "resp_server/pg/settings.h"

#include <algorithm>
#include <unistd.h>

#include <climits>

extern "C" {
#include "utils/guc.h"
}

int local_cache_resp_port = 0;
int local_cache_resp_workers = 0;
int local_cache_resp_write_workers = 2;
char *local_cache_resp_listen_addresses = nullptr;
char *local_cache_resp_database = nullptr;
char *local_cache_resp_role = nullptr;
int local_cache_resp_max_clients = 10000;
int local_cache_resp_timeout = 0;
int local_cache_resp_max_request_size = 64 * 1024 * 1024;
int local_cache_resp_output_buffer_limit = 64 * 1024 * 1024;
int local_cache_resp_lock_timeout = 1000;
int local_cache_resp_client_memory = 256 * 1024;
int local_cache_resp_batch_delay = 50;
int local_cache_resp_slowlog_log_slower_than = 10000;
int local_cache_resp_slowlog_max_len = 128;
int local_cache_resp_tracking_max_keys = 1000000;
int local_cache_resp_stats_max = 1000;
bool local_cache_resp_tls = false;
bool local_cache_resp_io_uring = true;
char *local_cache_resp_tls_cert_file = nullptr;
char *local_cache_resp_tls_key_file = nullptr;
char *local_cache_resp_tls_ca_file = nullptr;
int local_cache_resp_tls_auth_clients = RESP_TLS_AUTH_CLIENTS_OPTIONAL;
bool local_cache_resp_allow_plaintext = false;
bool local_cache_resp_cluster = false;
char *local_cache_resp_announce_host = nullptr;
int local_cache_resp_announce_port = 0;
char *local_cache_resp_cluster_primary = nullptr;

namespace local_cache {

namespace {

/* Redis's tls-auth-clients values. */
const config_enum_entry tls_auth_clients_options[] = {
	{"no", RESP_TLS_AUTH_CLIENTS_NO, false},
	{"optional", RESP_TLS_AUTH_CLIENTS_OPTIONAL, false},
	{"yes", RESP_TLS_AUTH_CLIENTS_YES, false},
	{NULL, 0, false},
};

} // namespace

int resp_worker_count(void)
{
	if (local_cache_resp_workers > 0)
		return local_cache_resp_workers;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	return int(std::clamp<long>(cores / 4, 1, RESP_MAX_WORKERS));
}

void resp_define_settings(void)
{
	DefineCustomIntVariable("local_cache.resp_port", "TCP port of the RESP (Redis protocol) server.",
							"0 turns the server off.", &local_cache_resp_port, 0, 0, 65535,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_workers", "Number of RESP server workers.",
							"Each runs its own event loop on the shared port; 0: one per four CPU cores, at least one.",
							&local_cache_resp_workers, 0, 0, RESP_MAX_WORKERS, PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_write_workers",
							"Number of RESP write workers: the processes that run RESP writes.",
							"A write runs the role's triggers, defaults and checks there, so the RESP workers' loops "
							"never wait for them; 0: writes run in the RESP workers.",
							&local_cache_resp_write_workers, 2, 0, RESP_MAX_WRITE_WORKERS, PGC_POSTMASTER, 0, NULL, NULL,
							NULL);
	DefineCustomStringVariable("local_cache.resp_listen_addresses",
							   "Comma-separated addresses the RESP server listens on.", NULL,
							   &local_cache_resp_listen_addresses, "127.0.0.1", PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("local_cache.resp_database", "Database the RESP server serves.", NULL,
							   &local_cache_resp_database, "postgres", PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("local_cache.resp_role",
							   "Role unauthenticated RESP clients act as; empty: AUTH is required.", NULL,
							   &local_cache_resp_role, "", PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_max_clients", "Maximum number of logged-in RESP connections.",
							"Each worker also holds at most this many connections that have not logged in yet.",
							&local_cache_resp_max_clients, 10000, 1, 1000000, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_timeout", "Close RESP connections idle this long.",
							"0 never closes idle connections.", &local_cache_resp_timeout, 0, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_max_request_size",
							"Largest RESP request argument, unprocessed input and queued MULTI requests of one connection.",
							"Larger requests are protocol errors, as with Redis's proto-max-bulk-len.",
							&local_cache_resp_max_request_size, 64 * 1024 * 1024, 1024, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_BYTE, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_output_buffer_limit",
							"Replies a RESP client may leave unread before it is disconnected.", NULL,
							&local_cache_resp_output_buffer_limit, 64 * 1024 * 1024, 1024, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_BYTE, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_client_memory",
							"Buffer memory all connections of one RESP worker may hold together.",
							"Input, queued MULTI requests and unwritten replies; past it the biggest connections are "
							"closed first, as with Redis's maxmemory-clients.",
							&local_cache_resp_client_memory, 256 * 1024, 1024, INT_MAX / 1024,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_lock_timeout",
							"How long a RESP command waits for a table another transaction has locked.",
							"Afterwards it answers -BUSY; the worker serves its other connections meanwhile.",
							&local_cache_resp_lock_timeout, 1000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	/* in microseconds, like commit_delay (GUC units stop at milliseconds) */
	DefineCustomIntVariable("local_cache.resp_batch_delay",
							"Microseconds a busy RESP worker pauses before it waits for the next requests.",
							"Only under the load of many clients; their requests arriving meanwhile are read "
							"together instead of each waking the worker. 0: never pause.",
							&local_cache_resp_batch_delay, 50, 0, 1000, PGC_SIGHUP, 0, NULL, NULL, NULL);
	/* Redis's slowlog-log-slower-than and slowlog-max-len, kept by each worker (SLOWLOG, LATENCY) */
	DefineCustomIntVariable("local_cache.resp_slowlog_log_slower_than",
							"Microseconds from which a RESP request enters its worker's slow log.",
							"As Redis's slowlog-log-slower-than: -1 logs nothing, 0 every request.",
							&local_cache_resp_slowlog_log_slower_than, 10000, -1, INT_MAX, PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_slowlog_max_len",
							"How many entries each RESP worker's slow log keeps.", NULL,
							&local_cache_resp_slowlog_max_len, 128, 0, 1000000, PGC_SIGHUP, 0, NULL, NULL, NULL);
	/* Redis's tracking-table-max-keys, per worker */
	DefineCustomIntVariable("local_cache.resp_tracking_max_keys",
							"How many keys each RESP worker's CLIENT TRACKING table holds.",
							"Past it, keys are evicted by sending their invalidation. 0: no limit.",
							&local_cache_resp_tracking_max_keys, 1000000, 0, INT_MAX, PGC_SIGHUP, 0, NULL, NULL,
							NULL);
	/* pg_stat_statements.max for INFO commandstats and local_cache.resp_commands */
	DefineCustomIntVariable("local_cache.resp_stats_max",
							"How many (role, command) pairs the RESP command statistics keep apart.",
							"Requests of further pairs are counted without their role; each pair takes about 2 kB "
							"of shared memory.",
							&local_cache_resp_stats_max, 1000, 100, 100000, PGC_POSTMASTER, 0, NULL, NULL, NULL);
	/* TLS as PostgreSQL serves it: its certificate files unless these name others (read again at
	 * reload, like ssl_cert_file), its ssl_min_protocol_version and ssl_ciphers. */
	DefineCustomBoolVariable("local_cache.resp_tls", "Serve the RESP port over TLS only.",
							 "Plaintext clients get no reply.", &local_cache_resp_tls, false, PGC_POSTMASTER, 0,
							 NULL, NULL, NULL);
	/* A switch for hosts whose policy forbids io_uring; where the kernel refuses it, the workers
	 * fall back by themselves. */
	DefineCustomBoolVariable("local_cache.resp_io_uring",
							 "Serve RESP connections, TLS or not, through io_uring when the kernel allows it.",
							 "Off, or where the kernel refuses it (before Linux 6.1, kernel.io_uring_disabled, a "
							 "seccomp filter): through epoll.",
							 &local_cache_resp_io_uring, true, PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("local_cache.resp_tls_cert_file", "RESP server certificate file.",
							   "Empty: PostgreSQL's ssl_cert_file.", &local_cache_resp_tls_cert_file, "",
							   PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("local_cache.resp_tls_key_file", "RESP server private key file.",
							   "Empty: PostgreSQL's ssl_key_file.", &local_cache_resp_tls_key_file, "",
							   PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("local_cache.resp_tls_ca_file",
							   "Certificate authorities that sign RESP client certificates.",
							   "Empty: PostgreSQL's ssl_ca_file.", &local_cache_resp_tls_ca_file, "",
							   PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("local_cache.resp_tls_auth_clients",
							 "Whether RESP clients must present a certificate signed by the CA.",
							 "As Redis's tls-auth-clients: no, optional (one presented must verify), yes.",
							 &local_cache_resp_tls_auth_clients, RESP_TLS_AUTH_CLIENTS_OPTIONAL,
							 tls_auth_clients_options, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("local_cache.resp_allow_plaintext",
							 "Let the RESP server listen without TLS on addresses beyond loopback.",
							 "Off: with local_cache.resp_tls off, a non-loopback listen address keeps the RESP "
							 "server from listening.", &local_cache_resp_allow_plaintext, false, PGC_POSTMASTER, 0,
							 NULL, NULL, NULL);
	/* The replication group as one Redis Cluster shard (resp_server/pg/topology.cpp). */
	DefineCustomBoolVariable("local_cache.resp_cluster",
							 "Answer as a node of a Redis Cluster shard: the primary and its hot standbys.",
							 "On: CLUSTER and READONLY answer, and a standby redirects writes and reads before "
							 "READONLY to the primary (-MOVED). Off: a standby serves reads and refuses writes.",
							 &local_cache_resp_cluster, false, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("local_cache.resp_announce_host",
							   "Host cluster clients reach this node's RESP port at (Redis's cluster-announce-ip).",
							   "Empty: the first of local_cache.resp_listen_addresses.",
							   &local_cache_resp_announce_host, "", PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("local_cache.resp_announce_port",
							"Port cluster clients reach this node's RESP port at (Redis's cluster-announce-port).",
							"0: local_cache.resp_port.", &local_cache_resp_announce_port, 0, 0, 65535,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("local_cache.resp_cluster_primary",
							   "On a standby: host:port of the primary's RESP port, as clients reach it.",
							   "Empty: the WAL receiver's primary host, and its PostgreSQL port moved by the "
							   "difference between this node's RESP port and PostgreSQL port.",
							   &local_cache_resp_cluster_primary, "", PGC_SIGHUP, 0, NULL, NULL, NULL);
}

} // namespace local_cache
