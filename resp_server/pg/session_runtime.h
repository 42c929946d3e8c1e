/*
 * session_runtime.h — what the RESP worker's calls into PostgreSQL share (the data sources of
 * row_reader.cpp, hit_path.cpp, writes.cpp, batches.cpp and server_info.cpp): their setup, the
 * memory results are copied to, the prefix map, the reply budget, locking a table without
 * waiting, and how a PostgreSQL error becomes a reply. Worker-global state: one loop thread per
 * process.
 */
#pragma once

#include "extension/pg.h"

#include "extension/boundary.h"
#include "extension/cached_table.h"
#include "resp_server/commands/data_source.h"

#include <string_view>

namespace local_cache::resp {

/* One call's results; reset at the start of the next call. */
extern MemoryContext results_context;
/*
 * Once per process, before the first call (each data source's constructor calls it): creates
 * the memory contexts, registers the prefix map's invalidation, and sets what every call
 * relies on: lock_timeout, the bound for the lock waits lock_table() cannot avoid, and the
 * isolation level the cache serves (a server-wide SERIALIZABLE default would make every read
 * bypass it).
 */
void start_session_runtime();

/* resp_prefix → table, from local_cache.tables; reloaded after any relcache invalidation
 * (enable() and disable() create and drop triggers, which send one). */
struct PrefixEntry {
	const char *prefix;
	size_t length;
	Oid relid;
	/* Whether a write to the table runs only PostgreSQL's own code (runs_only_builtin_code,
	 * write_target.h): -1 not known yet; with the map, forgotten at a relcache invalidation. */
	signed char builtin_code_only;
};
/* The entry of `prefix`, or nullptr. */
PrefixEntry *prefix_entry(std::string_view prefix);
extern PrefixEntry *prefixes;
extern int nprefixes;
extern bool prefixes_valid;
/* In a transaction: the prefix map is current (the extension must be installed). */
void load_prefixes();
/* Settings changed (SIGHUP): the next call reads the prefix map again. */
void forget_prefixes();
Oid relid_for_prefix(std::string_view prefix);

/* The bytes of the key whose canonical text is `id` in the table (they point into `id` or
 * results_context); false when `id` is the text of no key of the table. */
bool key_of_id(const RelInfo *info, std::string_view id, KeyBytes *out);

/* A found row: its JSON (or, until rendered, its tuple), in results_context. */
struct Found {
	const char *bytes;
	uint32 length;
	bool is_tuple;
};

/*
 * The bytes of values one command may collect: local_cache.resp_output_buffer_limit. A reply
 * with more could not be sent anyway (the worker disconnects a client whose unsent replies
 * exceed the limit), and without a bound one request (MGET k k k ..., the same large row a
 * million times) makes the worker allocate the reply several times over, without limit.
 */
struct Budget {
	size_t left;
	bool exceeded;
};

Budget output_budget();
/* Under a shard lock: only notes that the budget is exhausted. */
bool budget_take(Budget *budget, size_t bytes);
/* Outside shard locks: the command fails with -ERR. */
void budget_check(const Budget *budget);
char *copy_to_results(const char *bytes, uint32 length);
/* Room for count (at least one) zeroed T in results_context. */
template <typename T> T *results_array(size_t count)
{
	return static_cast<T *>(MemoryContextAllocZero(results_context, sizeof(T) * (count + 1)));
}
/* After the transaction: hand what was found to the command. */
void deliver(const Found *found, size_t count, ValueSink &sink);

/* A PostgreSQL error as the reply the command gives. */
LookupResult failure(const PgError &error);

/* Locks the table for reading without waiting: another transaction's lock answers Busy. */
void lock_table(Oid relid);
/* lock_table, then relinfo_open as `role`. */
RelInfo *open_table(Oid relid, Oid role);

} // namespace local_cache::resp
