/*
 * pg_hits.h — GET, MGET and EXISTS answered from cache hits without a transaction (see
 * docs/TECHNICAL.md, "Cache hits without a transaction").
 */
#pragma once

#include "pg_tables.h"

#include "../extension/store.h"

namespace local_cache::resp {

/* After a transaction begun at catalog epoch `epoch` read relids[0..count) as `role`. */
void learn_readers(uint64 epoch, Oid role, const Oid *relids, size_t count);

/*
 * Serves every key from the cache, without a transaction; false (nothing served) when a key
 * is not a hit or needs something only a transaction can check. found[i] points into memory
 * of its own, valid until the next call; tables[i] receives the key's table.
 */
bool serve_hits(Oid role, const RowKey *keys, size_t count, Found *found, TableSlotRef *tables);

/* Counts the hits serve_hits found (negative ones too), one addition per run of keys of the
 * same table. */
void count_hits(const Found *found, const TableSlotRef *tables, size_t count);

} // namespace local_cache::resp
