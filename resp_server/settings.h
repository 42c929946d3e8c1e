/*
 * settings.h — the RESP server's settings (defined in worker.cpp, documented in the README).
 */
#pragma once

extern int local_cache_resp_port;
extern int local_cache_resp_workers;
extern char *local_cache_resp_listen_addresses;
extern char *local_cache_resp_database;
extern char *local_cache_resp_role;
extern int local_cache_resp_max_clients;
extern int local_cache_resp_timeout;
extern int local_cache_resp_max_request_size;
extern int local_cache_resp_output_buffer_limit;

namespace local_cache {

/* From _PG_init: define the settings, and register the workers when the port is set. */
void resp_define_settings(void);
void resp_register_workers(void);

} // namespace local_cache
