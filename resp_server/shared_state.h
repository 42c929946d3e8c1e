/*
 * shared_state.h — what the RESP processes share: the connection count across workers (for
 * local_cache.resp_max_clients) and which workers run (for the launcher).
 */
#pragma once

#include "../extension/pg.h"

namespace local_cache::resp {

/* Adds delta to the connections of all workers; returns the new count. */
uint32 clients_add(int32 delta);

/* Worker `number` says it runs (its pid) and, through an exit callback, that it ended. */
void worker_started(int number);
/* The pid of worker `number` while it runs, else 0. */
pid_t worker_pid(int number);

} // namespace local_cache::resp
