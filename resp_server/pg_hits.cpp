/*
 * pg_hits.cpp — cache hits without a transaction (pg_hits.h): what earlier transactions
 * learned, trusted while the catalog epoch they learned it at is current.
 */
#include "pg_hits.h"

#include "../extension/settings.h"
#include "settings.h"
#include "transaction.h"

extern "C" {
#include "access/xlog.h"
#include "miscadmin.h"
}

#include <cstdlib>

namespace local_cache::resp {

namespace {

/* The catalog epoch at which the last transaction confirmed the prefix map and `readers`. */
uint64 learned_epoch = 0;

/* Tables a role was found to be allowed to read (relinfo_open passed) at learned_epoch. */
struct Reader {
	Oid relid;
	Oid role;
};
constexpr int kMaxReaders = 256;
Reader readers[kMaxReaders];
int nreaders = 0;
int next_reader = 0; /* the slot a new reader replaces when all are taken */

bool known_reader(Oid relid, Oid role)
{
	for (int r = 0; r < nreaders; r++)
		if (readers[r].relid == relid && readers[r].role == role)
			return true;
	return false;
}

/* Where hits are copied: memcpy only under the shard lock, so nothing there can fail. Grown
 * between attempts; given back when it grew past a megabyte. */
char *hit_bytes = nullptr;
size_t hit_capacity = 0;

} // namespace

/* After a transaction begun at catalog epoch `epoch` read relids[0..count) as `role`. */
void learn_readers(uint64 epoch, Oid role, const Oid *relids, size_t count)
{
	if (epoch != learned_epoch) {
		nreaders = 0;
		learned_epoch = epoch;
	}
	for (size_t i = 0; i < count; i++) {
		if (!OidIsValid(relids[i]))
			continue;
		bool known = false;
		for (int r = 0; r < nreaders && !known; r++)
			known = readers[r].relid == relids[i] && readers[r].role == role;
		if (known)
			continue;
		if (nreaders < kMaxReaders) {
			readers[nreaders++] = {relids[i], role};
		} else {
			readers[next_reader] = {relids[i], role};
			next_reader = (next_reader + 1) % kMaxReaders;
		}
	}
}

/*
 * Serves every key from the cache, without a transaction; false (nothing served) when a key
 * is not a hit or needs something only a transaction can check. found[i] points into
 * hit_bytes; tables[i] receives the key's table for the hit counters.
 */
bool serve_hits(Oid role, const RowKey *keys, size_t count, Found *found, TableSlotRef *tables)
{
	if (batch.active || !local_cache_enabled || RecoveryInProgress() || !prefixes_valid ||
		learned_epoch != store_catalog_epoch())
		return false;
	if (hit_capacity > (size_t(1) << 20)) {
		free(hit_bytes);
		hit_bytes = nullptr;
		hit_capacity = 0;
	}
	TableSlotRef table{};
	for (int attempt = 0; attempt < 2; attempt++) {
		size_t used = 0;
		bool short_of_room = false;
		/* Keys of one table usually come together: look the table up once for them. */
		std::string_view last_prefix;
		Oid relid = InvalidOid;
		bool first = true;
		for (size_t i = 0; i < count; i++) {
			found[i] = {nullptr, 0, false};
			tables[i].slot = -1;
			if (first || keys[i].prefix != last_prefix) {
				first = false;
				last_prefix = keys[i].prefix;
				relid = relid_for_prefix(keys[i].prefix);
				if (OidIsValid(relid)) {
					if (!known_reader(relid, role))
						return false;
					RelInfo *info = relinfo_peek(relid);
					if (info == nullptr || !info->cacheable || !info->json_cacheable || !info->capture_settled ||
						!store_capture_unchanged(info->table))
						return false;
					table = info->table;
				}
			}
			if (!OidIsValid(relid))
				continue; /* no such table: a missing key */
			tables[i] = table;
			bool hit = store_lookup(store_key(MyDatabaseId, relid, keys[i].id), [&](const EntryView &view) {
				if (view.tuple_len == 0)
					return true; /* a negative entry: no row (its deleter committed: see fetch.cpp) */
				if (view.json == nullptr)
					return false;
				if (used + view.json_len <= hit_capacity)
					memcpy(hit_bytes + used, view.json, view.json_len);
				else
					short_of_room = true;
				found[i] = {hit_bytes + used, view.json_len, false};
				used += view.json_len;
				return true;
			});
			if (!hit)
				return false;
		}
		if (!short_of_room)
			return true;
		if (used > size_t(local_cache_resp_output_buffer_limit))
			return false; /* the slow path answers the error */
		char *grown = static_cast<char *>(realloc(hit_bytes, used));
		if (grown == nullptr)
			return false;
		hit_bytes = grown;
		hit_capacity = used;
	}
	return false;
}

/* Counts the hits serve_hits found, one addition per run of keys of the same table; keys
 * without a row (negative entries) count as negative hits too. */
void count_hits(const Found *found, const TableSlotRef *tables, size_t count)
{
	uint64 hits = 0, negative = 0;
	for (size_t i = 0; i < count; i++) {
		if (tables[i].slot < 0)
			continue;
		hits++;
		negative += found[i].bytes == nullptr ? 1 : 0;
		size_t next = i + 1;
		while (next < count && tables[next].slot < 0)
			next++;
		if (next == count || tables[next].slot != tables[i].slot) {
			store_count(tables[i], COUNTER_HITS, hits);
			store_count(tables[i], COUNTER_NEGATIVE_HITS, negative);
			hits = negative = 0;
		}
	}
}

} // namespace local_cache::resp
