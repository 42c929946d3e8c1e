/*
 * invalidation.h — keeping the cache correct when cached tables are written.
 */
#pragma once

#include "pg.h"

namespace local_cache {

void invalidation_register_callbacks(void);

/* Flush the table's entries at pre-commit, and read it from the table until then. */
void invalidation_flush_at_commit(Oid relid);

/* Whether the current transaction has written the table (its reads then bypass the cache). */
bool invalidation_xact_wrote(Oid relid);

} // namespace local_cache
