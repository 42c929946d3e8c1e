/*
 * settings.h — the RESP server's settings (local_cache.resp_*), defined in settings.cpp and
 * documented in the README's configuration table.
 */
#pragma once

extern int local_cache_resp_port;
extern int local_cache_resp_workers;
extern int local_cache_resp_write_workers;
extern char *local_cache_resp_listen_addresses;
extern char *local_cache_resp_database;
extern char *local_cache_resp_role;
extern int local_cache_resp_max_clients;
extern int local_cache_resp_timeout;
extern int local_cache_resp_max_request_size;
extern int local_cache_resp_output_buffer_limit;
extern int local_cache_resp_lock_timeout;
extern int local_cache_resp_client_memory;
extern int local_cache_resp_batch_delay;
extern int local_cache_resp_slowlog_log_slower_than;
extern int local_cache_resp_slowlog_max_len;
extern int local_cache_resp_tracking_max_keys;
extern int local_cache_resp_stats_max;
extern bool local_cache_resp_tls;
extern bool local_cache_resp_io_uring;
extern char *local_cache_resp_tls_cert_file;
extern char *local_cache_resp_tls_key_file;
extern char *local_cache_resp_tls_ca_file;
extern int local_cache_resp_tls_auth_clients;
extern bool local_cache_resp_allow_plaintext;
extern bool local_cache_resp_cluster;
extern char *local_cache_resp_announce_host;
extern int local_cache_resp_announce_port;
extern char *local_cache_resp_cluster_primary;

/* local_cache.resp_tls_auth_clients */
enum { RESP_TLS_AUTH_CLIENTS_NO, RESP_TLS_AUTH_CLIENTS_OPTIONAL, RESP_TLS_AUTH_CLIENTS_YES };

namespace local_cache {

/* The most RESP workers there can be (local_cache.resp_workers' maximum). */
constexpr int RESP_MAX_WORKERS = 64;
/* The most RESP write workers (local_cache.resp_write_workers' maximum). */
constexpr int RESP_MAX_WRITE_WORKERS = 32;

void resp_define_settings(void);

/*
 * How many workers run: local_cache.resp_workers, or for 0 (the default) one per four CPU
 * cores, at least one. Each worker is a process with its own event loop, as redis-server is
 * one: on a small machine whose cores the clients share, a second loop costs CPU per request
 * (measured: docs/OPERATIONS.md, "Performance notes") rather than adding throughput.
 */
int resp_worker_count(void);

} // namespace local_cache
