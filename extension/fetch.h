/*
 * fetch.h — the one lookup/fill path under every read path (mget, mget_json, the FDW,
 * the RESP workers): serve keys from the cache where that is correct for the caller's
 * snapshot, read the rest from the table through its primary key, and fill the cache — with
 * the row, or, for a key that has none, with a negative entry saying so.
 */
#pragma once

#include "extension/pg.h"

extern "C" {
#include "lib/stringinfo.h"
#include "utils/snapshot.h"
}
#include "extension/cached_table.h"

namespace local_cache {

/* A row as the composite datum bytes of the table's row type, plus its JSON if cached. */
struct FetchedRow {
	const char *tuple;
	uint32 tuple_len;
	const char *json; /* nullptr: not rendered; render it from the tuple if needed */
	uint32 json_len;
};

/*
 * Called once per input position that has a row (missing and NULL keys get no call).
 * For cache hits it runs under a shard lock: copy what you need, do nothing else.
 */
using RowCallback = void (*)(void *context, int position, const FetchedRow &row);

/* What to fetch: keys of one table (key_is_null may be nullptr: no NULL keys), read with a
 * snapshot (the caller's active snapshot, or the executor's). */
struct FetchRequest {
	RelInfo *info;
	Snapshot snapshot;
	const KeyBytes *keys; /* canonical key bytes (primary_key.h) */
	const bool *key_is_null;
	int nkeys;

	FetchRequest(RelInfo *info_, Snapshot snapshot_, const KeyBytes *keys_, int nkeys_,
				 const bool *key_is_null_ = nullptr)
		: info(info_), snapshot(snapshot_), keys(keys_), key_is_null(key_is_null_), nkeys(nkeys_)
	{
	}
};

/* What one call did, for EXPLAIN ANALYZE (the store's counters are updated too). */
struct FetchCounts {
	uint64 hits;          /* every key answered from the cache ... */
	uint64 negative_hits; /* ... of them, those that have no row */
	uint64 misses;
	uint64 coalesced_misses; /* ... of them, those answered by another process's fill */
	uint64 fills;
	uint64 fill_rejections;
};

void fetch_rows(const FetchRequest &request, RowCallback callback, void *context,
				FetchCounts *counts = nullptr);

/*
 * The keys of the table's rows visible to `snapshot`, in key order, after `after` (from the
 * first when nullptr): at most `limit`, their bytes appended to `keys`, key i ending at
 * ends[i]; returns how many. Through the primary-key index, for SCAN. The table is locked by
 * the caller.
 */
int scan_primary_keys(RelInfo *info, Snapshot snapshot, const KeyBytes *after, StringInfo keys, uint32 *ends,
					  int limit);

/* row_to_json of a row given as composite datum bytes, appended to `out`. */
void render_row_json(const char *tuple, StringInfo out);

} // namespace local_cache
