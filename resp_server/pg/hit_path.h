/*
 * hit_path.h — GET, MGET and EXISTS answered from cache hits without a transaction (see
 * docs/RESP.md, "Cache hits without a transaction"): CacheHits (commands/data_source.h)
 * on PostgreSQL (PgCacheHits, one per worker), and the same lookups for the row reader's GET
 * and MGET, which try them first (serve_hits, learn_readers, count_hits; row_reader.cpp).
 */
#pragma once

#include "resp_server/pg/session_runtime.h"

#include "extension/store.h"
#include "resp_server/protocol/reply.h"

namespace local_cache::resp {

/* After a transaction begun at catalog epoch `epoch` read relids[0..count) as `role`. */
void learn_readers(uint64 epoch, Oid role, const Oid *relids, size_t count);

/*
 * Serves every key from the cache, without a transaction; false (nothing served) when a key
 * is not a hit or needs something only a transaction can check. found[i] points into memory
 * of its own, valid until the next call; tables[i] receives the key's table, negative[i]
 * whether the key's hit says it has no row. Inside outside_transaction (transaction.h).
 */
bool serve_hits(Oid role, const RowKey *keys, size_t count, Found *found, TableSlotRef *tables, bool *negative);

/*
 * GET and MGET's hits: serve_hits' lookups, each value encoded into the reply straight from
 * the shard (the one copy, into room reserved before, validated by the shard's write version
 * or under its lock), and the hits counted; keys are parsed here, and keys that do not parse
 * answer nil. False, with nothing written, as for serve_hits, and when PostgreSQL raised an
 * error (out of memory): the command's slow path (RowReader::get_rows) answers then. Runs its
 * PostgreSQL calls in outside_transaction itself, and grows the reply (which may throw
 * std::bad_alloc) between them. The command layer's one virtual call of a GET that hits.
 */
class PgCacheHits final : public CacheHits {
public:
	PgCacheHits();
	bool reply_hits(const Session &session, const std::string_view *keys, size_t count, ReplyWriter &reply) override;
};

/* Counts the hits either found (negative ones too), one addition per run of keys of the same
 * table. */
void count_hits(const TableSlotRef *tables, const bool *negative, size_t count);

} // namespace local_cache::resp
