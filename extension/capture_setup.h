/*
 * capture_setup.h — the capture triggers' per-statement set-up, done once per session.
 */
#pragma once

#include "extension/pg.h"

namespace local_cache {

/* The ExecutorStart hook that gives statements the prepared set-up; _PG_init calls it once. */
void capture_setup_install_hook(void);

} // namespace local_cache
