/*
 * invalidation.h — keeping the cache correct when cached tables are written.
 */
#pragma once

#include "extension/pg.h"

namespace local_cache {

void invalidation_register_callbacks(void);

/*
 * The transaction changed the table's definition or how its writes are captured (ALTER TABLE,
 * trigger DDL, enable/disable): flush its entries at pre-commit, with a capture change
 * (store_capture_begin) that makes every reader validate the triggers again once it has
 * committed, and read the table itself until then.
 */
void invalidation_table_altered(Oid relid);

/* Whether the current transaction has written the table (its reads then bypass the cache). */
bool invalidation_xact_wrote(Oid relid);

} // namespace local_cache
