/*
 * server_info.cpp — what INFO, CONFIG GET, CLIENT LIST and SLOWLOG learn from PostgreSQL
 * (PgServerInfo, server_info.h): counters and settings read into plain data inside the error
 * boundary, the reply's strings made after it; role privileges in a short transaction.
 */
#include "extension/pg.h"

#include "extension/store.h"
#include "resp_server/pg/server_info.h"
#include "resp_server/pg/session_runtime.h"
#include "resp_server/pg/settings.h"
#include "resp_server/pg/shared_state.h"
#include "resp_server/pg/transaction.h"

extern "C" {
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "replication/walreceiver.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/timestamp.h"
}

#include <netdb.h>

namespace local_cache::resp {

PgServerInfo::PgServerInfo()
{
	start_session_runtime();
}

bool PgServerInfo::sees_activity_of(const Session &session, uint64_t role)
{
	if (!session.role)
		return false;
	bool sees = false;
	Oid me = Oid(session.role->id);
	PgError error;
	in_transaction([&]() noexcept {
		sees = has_privs_of_role(me, ROLE_PG_READ_ALL_STATS) || (role != 0 && has_privs_of_role(me, Oid(role)));
	}, &error);
	return sees;
}

void PgServerInfo::fill_info(InfoStats &stats)
{
	/* Read in the boundary into plain data; the strings are made after it. */
	GlobalCounters global = {};
	ServerCounters counters = {};
	int64 uptime_us = 0;
	bool replica = false;
	uint64 primary_end = 0;
	uint64 replayed = 0;
	bool streaming = false;
	char host[NI_MAXHOST] = "";
	int port = 0;
	PgError error;
	if (!outside_transaction([&]() noexcept {
			store_global_counters(&global);
			counters = server_counters();
			uptime_us = GetCurrentTimestamp() - Max(PgStartTime, counters.last_worker_start);
			replica = RecoveryInProgress();
			if (replica) {
				replayed = GetXLogReplayRecPtr(nullptr);
				primary_end = replayed;
			} else {
				primary_end = GetXLogWriteRecPtr();
			}
			if (replica && WalRcv != nullptr) {
				SpinLockAcquire(&WalRcv->mutex);
				streaming = WalRcv->walRcvState == WALRCV_STREAMING;
				strlcpy(host, WalRcv->sender_host, sizeof(host));
				port = WalRcv->sender_port;
				primary_end = Max(primary_end, uint64(WalRcv->latestWalEnd));
				SpinLockRelease(&WalRcv->mutex);
			}
		}, &error))
		return; /* INFO shows zeros, as for what it does not know */
	stats.local_cache_version = LOCAL_CACHE_VERSION;
	stats.postgresql_version = PG_VERSION;
	stats.process_id = MyProcPid;
	stats.tcp_port = local_cache_resp_tls ? 0 : local_cache_resp_port;
	stats.tls_port = local_cache_resp_tls ? local_cache_resp_port : 0;
	if (local_cache_resp_tls)
		stats.tls_auth_clients = local_cache_resp_tls_auth_clients == RESP_TLS_AUTH_CLIENTS_NO ? "no"
			: local_cache_resp_tls_auth_clients == RESP_TLS_AUTH_CLIENTS_YES ? "yes" : "optional";
	stats.bind_addresses = local_cache_resp_listen_addresses;
	stats.uptime_seconds = uptime_us / USECS_PER_SEC;
	stats.idle_timeout_seconds = local_cache_resp_timeout;
	stats.connected_clients = counters.connected_clients;
	stats.max_clients = uint64_t(local_cache_resp_max_clients);
	stats.total_connections_received = counters.total_connections_received;
	stats.total_commands_processed = counters.total_commands_processed;
	stats.rejected_connections = counters.rejected_connections;
	stats.batch_pauses = counters.batch_pauses;
	stats.largest_output_buffer = counters.largest_output_buffer;
	stats.used_memory = global.bytes;
	stats.max_memory = global.memory_budget;
	stats.keyspace_hits = global.counters[COUNTER_HITS];
	stats.keyspace_misses = global.counters[COUNTER_MISSES];
	stats.evicted_keys = global.counters[COUNTER_EVICTIONS];
	stats.proto_max_bulk_len = uint64_t(local_cache_resp_max_request_size);
	stats.client_query_buffer_limit = uint64_t(local_cache_resp_max_request_size);
	stats.replica = replica;
	if (replica && WalRcv != nullptr) {
		stats.master_link_up = streaming;
		stats.master_host = host;
		stats.master_port = port;
	}
	stats.master_repl_offset = primary_end;
	stats.slave_repl_offset = replayed;
}

} // namespace local_cache::resp
