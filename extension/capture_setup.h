/*
 * capture_setup.h — the capture triggers' per-statement set-up, done once per session.
 */
#pragma once

#include "extension/pg.h"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace local_cache {

/*
 * For the planner hook, before PostgreSQL plans `parse`: an UPDATE or DELETE of a cached table
 * whose rows keep their keys gets a junk column, local_cache.capture_row_key(<table>, <key
 * columns>), which records each row's key as the plan produces the row; its statements then run
 * without the capture's row trigger (capture_setup.cpp).
 */
void capture_setup_plan(Query *parse);

/* The ExecutorStart hook that gives statements the prepared set-up; _PG_init calls it once. */
void capture_setup_install_hook(void);

} // namespace local_cache
