/*
 * invalidation.cpp — collects the keys a transaction writes and invalidates them at
 * pre-commit, before the commit becomes visible to anyone.
 *
 * The trigger local_cache.capture_changes() (BEFORE STATEMENT for INSERT/UPDATE/DELETE
 * to mark the table written, AFTER ROW for the keys, AFTER STATEMENT for TRUNCATE; all
 * enabled ALWAYS so logical replication apply fires them too) records changed keys in backend-local
 * hash tables (kept for the session, emptied at transaction end); in planned statements the
 * ExecutorStart hook marks the table instead of the statement trigger, and the row trigger's
 * prepared WHEN clause records the keys, as each row is written (invalidation_capture_row,
 * capture_setup.cpp), and no event is queued. At
 * XACT_EVENT_PRE_COMMIT (and PRE_PREPARE, so two-phase commits are covered whoever runs
 * COMMIT PREPARED) each key is removed from the store and its shard's invalidation
 * sequence advances; a table with too many changed keys, or a TRUNCATE, is flushed whole. Once
 * the commit is visible (XACT_EVENT_COMMIT) the same lists go to the tracking log for CLIENT
 * TRACKING; a PREPARE logs them at once, marked with its xid (tracking_log.h). The keys a RESP
 * command wrote itself are marked as its own there (invalidation_own_write), for NOLOOP.
 * Why that is enough, with the fill rules in fetch.cpp: docs/CONSISTENCY.md.
 */
#include "extension/invalidation.h"

#include "extension/boundary.h"
#include "extension/cached_table.h"
#include "extension/primary_key.h"
#include "extension/small_set.h"
#include "extension/store.h"
#include "extension/tracking_log.h"
#include "extension/wal.h"

extern "C" {
#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "common/hashfn.h"
#include "utils/hsearch.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace local_cache {

namespace {

/*
 * Past this many distinct changed keys of one table, or rows written (capture_keys), flushing it
 * whole is cheaper: recording a key and invalidating it at commit cost about 5 µs, four times what
 * PostgreSQL spends deleting a row (measured: docs/BENCHMARKS.md, "Bulk writes").
 */
constexpr int64 MAX_KEYS_PER_TABLE = 10000;

struct ChangedTable {
	Oid relid; /* hash key */
	bool flush_all;
	/* The transaction changed how the table's writes are captured (invalidation_table_altered);
	 * capture_began once store_capture_begin ran at pre-commit. */
	bool capture_changed;
	bool capture_began;
	bool keyed;     /* rows are named by key: the table has a key the cache can use */
	bool serializable_writer; /* counted in store_serializable_writer_begin */
	/* What naming its rows takes of its primary key (a copy of all of it would be four cache
	 * lines to touch per transaction, in a backend whose memory is mostly cold by its turn). */
	KeyShape key_shape;
	AttrNumber key_attnums[MAX_KEY_COLUMNS];
	int64 nkeys;
	int64 rows_queued; /* rows counted by capture_keys or invalidation_capture_row */
	ChangedTable *next_written; /* the list of the transaction's tables (tables_written) */
};

/* The hash key is the table and the bytes `key` points to (changed_key_hash/match). */
struct ChangedKey {
	Oid relid;
	KeyBytes key; /* in TopTransactionContext once entered */
	/* The list of keys first changed at one subtransaction nesting level (keys_at_level). */
	ChangedKey *next_at_level;
	ChangedTable *table; /* its entry in changed_tables */
	/* A RESP command wrote the row itself (invalidation_own_write); the list of keys that
	 * became so at one nesting level (own_at_level). */
	bool own;
	ChangedKey *next_own_at_level;
};

uint32 changed_key_hash(const void *entry, Size)
{
	const ChangedKey *changed = static_cast<const ChangedKey *>(entry);
	return hash_bytes(reinterpret_cast<const unsigned char *>(changed->key.data), int(changed->key.len)) ^
		murmurhash32(changed->relid);
}

int changed_key_match(const void *a, const void *b, Size)
{
	const ChangedKey *x = static_cast<const ChangedKey *>(a);
	const ChangedKey *y = static_cast<const ChangedKey *>(b);
	return x->relid == y->relid && x->key == y->key ? 0 : 1;
}

bool same_table(const ChangedTable &entry, const Oid &relid)
{
	return entry.relid == relid;
}

bool same_key(const ChangedKey &entry, const ChangedKey &probe)
{
	return entry.relid == probe.relid && entry.key == probe.key;
}

/*
 * Both are emptied at transaction end (their hash tables live for the session: creating two per
 * transaction cost a writer more than all the rest of the capture); the key bytes their entries
 * point to are in TopTransactionContext. `xact_writes`: they hold this transaction's. Their
 * entries are also linked in lists (tables_written, keys_at_level), which the commit walks.
 */
SmallSet<ChangedTable, Oid, 4, same_table> changed_tables;
SmallSet<ChangedKey, ChangedKey, 8, same_key> changed_keys;
bool xact_writes = false;
ChangedTable *tables_written = nullptr;
/* The last table written or asked for, an entry of changed_tables (until forget_changes). */
ChangedTable *last_table_asked = nullptr;
/* Past this many keys at transaction end the keys' table is dropped rather than emptied: a hash
 * table never shrinks, and a bulk write's would keep its memory for the session. */
constexpr long KEEP_KEYS_TABLE_UP_TO = 1024;

/* The primary key of each table written in the session, by relid, until a relcache invalidation
 * of the table (which every change of its key or its columns' types sends). */
struct KnownKey {
	Oid relid; /* hash key */
	bool keyed;
	PrimaryKey key;
};
HTAB *known_keys = nullptr;
/* The entry found last (most statements write the table the one before wrote). */
const KnownKey *last_known = nullptr;
/*
 * The keys by the nesting level of the (sub)transaction that first changed them: a subtransaction
 * that commits hands its keys to its parent, one that aborts forgets them (its changes never
 * become visible: nothing to invalidate, and CLIENT TRACKING must not tell of them). A key
 * changed again deeper stays where it is, at the outer level that keeps it changed. Every entry
 * of changed_keys is in one of these lists; at the top level's end all are in keys_at_level[1].
 */
ChangedKey **keys_at_level = nullptr; /* in TopMemoryContext, like own_at_level */
/* The same for the keys marked own: a subtransaction that aborts unmarks those it marked (its
 * write was undone; what changed the key before it, a trigger's write, stays and is told). */
ChangedKey **own_at_level = nullptr;
int levels_allocated = 0;
int deepest_level_used = 0; /* levels below it may be non-null */

/* What invalidate_changes() did, in TopTransactionContext, for the tracking log once the
 * commit is visible. */
struct Invalidated {
	Oid *flushed;
	bool *definition_changed;
	int nflushed;
	WalKey *keys;
	bool *own; /* keys[i] was written by the RESP command itself */
	int nkeys;
};
Invalidated invalidated = {};

/* Where a changed row's key bytes are made, before they are found new and copied. */
StringInfo key_buffer = nullptr;

HTAB *create_set(const char *name, Size keysize, Size entrysize, bool by_key_bytes)
{
	if (!by_key_bytes)
		return blob_hash_create(name, keysize, entrysize, TopMemoryContext);
	HASHCTL ctl;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = TopMemoryContext;
	ctl.hash = pg_entry<changed_key_hash>;
	ctl.match = pg_entry<changed_key_match>;
	return hash_create(name, 16, &ctl, HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
}

HTAB *create_tables_hash(void)
{
	return create_set("local_cache changed tables", sizeof(Oid), sizeof(ChangedTable), false);
}

HTAB *create_keys_hash(void)
{
	return create_set("local_cache changed keys", offsetof(ChangedKey, next_at_level), sizeof(ChangedKey), true);
}

ChangedTable *changed_table_entry(Oid relid, bool *found)
{
	if (!xact_writes) {
		wal_xact_starts_writing();
		xact_writes = true;
	}
	ChangedTable *table = changed_tables.enter(relid, found, create_tables_hash);
	if (!*found) {
		table->flush_all = false;
		table->capture_changed = false;
		table->capture_began = false;
		table->nkeys = 0;
		table->rows_queued = 0;
		table->keyed = false;
		table->serializable_writer = false;
		table->next_written = tables_written;
		tables_written = table;
	}
	last_table_asked = table;
	return table;
}

/* A relation's entry in known_keys is stale. */
void relcache_changed(Datum, Oid relid)
{
	if (known_keys == nullptr)
		return;
	last_known = nullptr;
	if (relid != InvalidOid) {
		hash_search(known_keys, &relid, HASH_REMOVE, NULL);
		return;
	}
	HASH_SEQ_STATUS status;
	hash_seq_init(&status, known_keys);
	while (KnownKey *known = static_cast<KnownKey *>(hash_seq_search(&status)))
		hash_search(known_keys, &known->relid, HASH_REMOVE, NULL);
}

const KnownKey *known_key_of(Relation rel)
{
	if (known_keys == nullptr)
		known_keys = relation_hash_create("local_cache written tables' keys", sizeof(KnownKey));
	Oid relid = RelationGetRelid(rel);
	if (last_known != nullptr && last_known->relid == relid)
		return last_known;
	KnownKey *known = static_cast<KnownKey *>(hash_search(known_keys, &relid, HASH_FIND, NULL));
	if (known != nullptr)
		return last_known = known;
	/* Entered only once built: primary_key_of may raise an error. */
	PrimaryKey key;
	bool keyed = primary_key_of(rel, &key) == KeyProblem::None;
	known = static_cast<KnownKey *>(hash_search(known_keys, &relid, HASH_ENTER, NULL));
	known->keyed = keyed;
	known->key = key;
	return last_known = known;
}

ChangedTable *changed_table(Relation rel)
{
	bool found;
	ChangedTable *table = changed_table_entry(RelationGetRelid(rel), &found);
	if (!found) {
		const KnownKey *known = known_key_of(rel);
		table->keyed = known->keyed;
		if (table->keyed) {
			table->key_shape = known->key.shape;
			memcpy(table->key_attnums, known->key.attnums, sizeof(AttrNumber) * known->key.shape.ncolumns);
		} else {
			table->flush_all = true; /* no usable key to name rows by: flush the table at commit */
		}
	}
	/* Before this statement writes a row: SERIALIZABLE reads of the table go to the table,
	 * with SSI's own checks, until this transaction ends. */
	if (!table->serializable_writer && IsolationIsSerializable()) {
		store_serializable_writer_begin(MyDatabaseId, table->relid);
		table->serializable_writer = true;
	}
	return table;
}

/* Makes room in keys_at_level and own_at_level for nesting level `level`. */
void allocate_level(int level)
{
	deepest_level_used = Max(deepest_level_used, level + 1);
	if (level < levels_allocated)
		return;
	int grown = Max(8, level * 2);
	ChangedKey ***lists[] = {&keys_at_level, &own_at_level};
	for (ChangedKey ***list : lists) {
		*list = static_cast<ChangedKey **>(
			*list == nullptr ? MemoryContextAlloc(TopMemoryContext, sizeof(ChangedKey *) * grown)
							 : repalloc(*list, sizeof(ChangedKey *) * grown));
		for (int i = levels_allocated; i < grown; i++)
			(*list)[i] = nullptr;
	}
	levels_allocated = grown;
}

/* A subtransaction that commits: its list of `lists` (linked through `next`) joins its parent's. */
void hand_to_parent(ChangedKey **lists, int level, ChangedKey *ChangedKey::*next)
{
	if (lists[level] == nullptr)
		return;
	ChangedKey *last = lists[level];
	while (last->*next != nullptr)
		last = last->*next;
	last->*next = lists[level - 1];
	lists[level - 1] = lists[level];
	lists[level] = nullptr;
}

/* key_buffer, emptied: where the key of the row being recorded is made. */
StringInfo empty_key_buffer(void)
{
	if (key_buffer == nullptr) {
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		key_buffer = makeStringInfo();
		MemoryContextSwitchTo(old);
	}
	resetStringInfo(key_buffer);
	return key_buffer;
}

/*
 * Records the key whose bytes key_buffer holds, as a key of `table` written; returns its entry.
 * `same_as`: the entry of the same statement's other row (an UPDATE's old row), whose key the new
 * row's mostly is; then no second lookup.
 */
ChangedKey *record_key_buffer(ChangedTable *table, ChangedKey *same_as)
{
	ChangedKey changed;
	changed.relid = table->relid;
	changed.key = KeyBytes{key_buffer->data, uint32(key_buffer->len)};
	if (same_as != nullptr && same_as->relid == changed.relid && same_as->key == changed.key)
		return same_as;
	/* Whatever can fail runs before the entry exists: each entry is in a level's list. */
	int level = GetCurrentTransactionNestLevel();
	allocate_level(level);
	char *bytes = static_cast<char *>(MemoryContextAlloc(TopTransactionContext, key_buffer->len + 1));
	bool found;
	ChangedKey *entry = changed_keys.enter(changed, &found, create_keys_hash);
	if (found) {
		pfree(bytes);
	} else {
		memcpy(bytes, key_buffer->data, key_buffer->len);
		entry->key.data = bytes;
		entry->table = table;
		entry->own = false;
		entry->next_own_at_level = nullptr;
		entry->next_at_level = keys_at_level[level];
		keys_at_level[level] = entry;
		if (++table->nkeys > MAX_KEYS_PER_TABLE)
			table->flush_all = true;
		/* The commit invalidates it: the cache miss of its bucket (with the shard lock's, most of
		 * what the invalidation costs) overlaps the rest of the statement instead. */
		if (store_available())
			store_prefetch(store_key(MyDatabaseId, table->relid, entry->key), Prefetch::Invalidation);
	}
	/* Keep the buffer small after a row with a long key. */
	if (key_buffer->maxlen > 64 * 1024) {
		pfree(key_buffer->data);
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		initStringInfo(key_buffer);
		MemoryContextSwitchTo(old);
	}
	return entry;
}

/* Records the key of a written row; returns its entry (null: the row has no key to record). */
ChangedKey *record_key(ChangedTable *table, HeapTuple tuple, TupleDesc desc, ChangedKey *same_as = nullptr)
{
	if (table->flush_all || tuple == nullptr)
		return nullptr;
	if (!append_row_key_bytes(table->key_shape, table->key_attnums, tuple, desc, empty_key_buffer()))
		return nullptr;
	return record_key_buffer(table, same_as);
}

/*
 * Runs before the commit (or PREPARE) is visible: no reader may see the old rows after.
 * Logged to WAL too, ahead of the commit record, for hot standbys.
 */
void invalidate_changes(void)
{
	if (!xact_writes || !store_available())
		return;
	long ntables = changed_tables.count_bound();
	long nkeys = changed_keys.count_bound();
	Oid *flushed = static_cast<Oid *>(MemoryContextAlloc(TopTransactionContext, sizeof(Oid) * (ntables + 1)));
	bool *definition_changed =
		static_cast<bool *>(MemoryContextAlloc(TopTransactionContext, sizeof(bool) * (ntables + 1)));
	WalKey *keys = static_cast<WalKey *>(MemoryContextAlloc(TopTransactionContext, sizeof(WalKey) * (nkeys + 1)));
	bool *own = static_cast<bool *>(MemoryContextAlloc(TopTransactionContext, sizeof(bool) * (nkeys + 1)));
	int nflushed = 0;
	int ninvalidated = 0;

	TransactionId xid = GetTopTransactionIdIfAny();
	for (ChangedTable *table = tables_written; table != nullptr; table = table->next_written) {
		if (!table->flush_all)
			continue;
		/* Before the flush: a reader's fill that passes the flush's shard afterwards must
		 * see the change begun (store_fill). */
		if (table->capture_changed && TransactionIdIsValid(xid)) {
			store_capture_begin(MyDatabaseId, table->relid, xid);
			table->capture_began = true;
		}
		store_flush(MyDatabaseId, table->relid);
		definition_changed[nflushed] = table->capture_changed;
		flushed[nflushed++] = table->relid;
	}
	/* All at the top level now (keys_at_level[1]); any level is walked all the same. */
	for (int level = 0; level < deepest_level_used && level < levels_allocated; level++)
		for (ChangedKey *changed = keys_at_level[level]; changed != nullptr; changed = changed->next_at_level) {
			if (changed->table->flush_all)
				continue;
			store_invalidate(store_key(MyDatabaseId, changed->relid, changed->key));
			own[ninvalidated] = changed->own;
			keys[ninvalidated++] = {changed->relid, changed->key};
		}
	wal_log_invalidations(MyDatabaseId, flushed, nflushed, keys, ninvalidated);
	invalidated = {flushed, definition_changed, nflushed, keys, own, ninvalidated};
}

/* `xid` valid: at PREPARE, visible only once COMMIT PREPARED has run. */
void log_for_tracking(TransactionId xid)
{
	tracking_log_changes(MyDatabaseId, invalidated.flushed, invalidated.definition_changed, invalidated.nflushed,
						 invalidated.keys, invalidated.own, invalidated.nkeys, xid);
}

void end_capture_changes(void)
{
	if (!xact_writes || !store_available())
		return;
	TransactionId xid = GetTopTransactionIdIfAny();
	for (ChangedTable *table = tables_written; table != nullptr; table = table->next_written)
		if (table->capture_began)
			store_capture_end(MyDatabaseId, table->relid, xid);
}

/* After the pre-commit (or pre-prepare) invalidation, or at abort. */
void end_serializable_writes(void)
{
	if (!xact_writes || !store_available())
		return;
	for (ChangedTable *table = tables_written; table != nullptr; table = table->next_written)
		if (table->serializable_writer)
			store_serializable_writer_end(MyDatabaseId, table->relid);
}

/* Empties the session's sets for the next transaction (the key bytes go with its memory). */
void forget_changes(void)
{
	if (!xact_writes)
		return;
	xact_writes = false;
	last_table_asked = nullptr;
	if (changed_keys.nhashed > KEEP_KEYS_TABLE_UP_TO) {
		hash_destroy(changed_keys.hashed);
		changed_keys.hashed = nullptr;
		changed_keys.nhashed = 0;
	}
	for (int i = 0; i < deepest_level_used && i < levels_allocated; i++) {
		/* Only hashed entries need removing (none once the hash table is dropped above). */
		for (ChangedKey *changed = keys_at_level[i], *next; changed != nullptr && changed_keys.nhashed > 0;
			 changed = next) {
			next = changed->next_at_level;
			if (!changed_keys.in_slots(changed))
				changed_keys.remove(changed);
		}
		keys_at_level[i] = nullptr;
		own_at_level[i] = nullptr;
	}
	changed_keys.used = 0;
	deepest_level_used = 0;
	for (ChangedTable *table = tables_written, *next; table != nullptr; table = next) {
		next = table->next_written;
		if (!changed_tables.in_slots(table))
			changed_tables.remove(table);
	}
	changed_tables.used = 0;
	tables_written = nullptr;
}

void subxact_event(SubXactEvent event, SubTransactionId, SubTransactionId, void *)
{
	int level = GetCurrentTransactionNestLevel();
	if (!xact_writes || level >= levels_allocated)
		return;
	if (event == SUBXACT_EVENT_COMMIT_SUB) {
		hand_to_parent(keys_at_level, level, &ChangedKey::next_at_level);
		hand_to_parent(own_at_level, level, &ChangedKey::next_own_at_level);
	} else if (event == SUBXACT_EVENT_ABORT_SUB) {
		/* Before the keys go: a key first changed here may be marked here too. */
		for (ChangedKey *changed = own_at_level[level]; changed != nullptr; changed = changed->next_own_at_level)
			changed->own = false;
		own_at_level[level] = nullptr;
		for (ChangedKey *changed = keys_at_level[level], *next; changed != nullptr; changed = next) {
			next = changed->next_at_level;
			changed->table->nkeys--;
			changed_keys.remove(changed);
		}
		keys_at_level[level] = nullptr;
	}
}

void xact_event(XactEvent event, void *)
{
	switch (event) {
	case XACT_EVENT_PRE_COMMIT:
	case XACT_EVENT_PARALLEL_PRE_COMMIT:
		if (xact_writes)
			throw_point("capture_commit");
		invalidate_changes();
		break;
	case XACT_EVENT_PRE_PREPARE:
		invalidate_changes();
		if (TransactionIdIsValid(GetTopTransactionIdIfAny()))
			log_for_tracking(GetTopTransactionIdIfAny());
		break;
	case XACT_EVENT_COMMIT:
		/* Visible now (ProcArrayEndTransaction ran): a reader told of it reads the new rows. */
		log_for_tracking(InvalidTransactionId);
		/* fall through */
	case XACT_EVENT_ABORT:
		/* The change is visible (or undone): readers may validate the triggers again. */
		end_capture_changes();
		/* fall through */
	case XACT_EVENT_PARALLEL_COMMIT:
	case XACT_EVENT_PARALLEL_ABORT:
	case XACT_EVENT_PREPARE:
		end_serializable_writes();
		/* The key bytes go with TopTransactionContext. A prepared transaction's capture
		 * change stays begun; the first reader after COMMIT PREPARED settles it. */
		forget_changes();
		invalidated = {};
		wal_xact_ended();
		break;
	}
}

} // namespace

void invalidation_register_callbacks(void)
{
	RegisterXactCallback(pg_entry<xact_event>, NULL);
	RegisterSubXactCallback(pg_entry<subxact_event>, NULL);
	CacheRegisterRelcacheCallback(pg_entry<relcache_changed>, (Datum) 0);
}

void invalidation_table_altered(Oid relid)
{
	bool found;
	ChangedTable *table = changed_table_entry(relid, &found);
	table->flush_all = true;
	table->capture_changed = true;
}

namespace {

/* The table as the transaction marked it written (invalidation_statement_writes), or null: nothing
 * did (logical replication's apply), and the row's AFTER ROW event records its key. */
ChangedTable *table_written(Oid relid)
{
	if (!xact_writes)
		return nullptr;
	ChangedTable *table = last_table_asked;
	if (table == nullptr || table->relid != relid) {
		table = changed_tables.find(relid);
		if (table == nullptr)
			return nullptr;
		last_table_asked = table;
	}
	return table;
}

/* Counts a written row; false once the table is to be flushed whole at commit. */
bool row_keys_needed(ChangedTable *table)
{
	if (!table->flush_all && ++table->rows_queued > MAX_KEYS_PER_TABLE)
		table->flush_all = true;
	return !table->flush_all;
}

ChangedKey *record_slot_key(ChangedTable *table, TupleTableSlot *row, ChangedKey *same_as = nullptr)
{
	if (row == nullptr)
		return nullptr;
	bool copied;
	HeapTuple tuple = ExecFetchSlotHeapTuple(row, false, &copied);
	ChangedKey *entry = record_key(table, tuple, row->tts_tupleDescriptor, same_as);
	if (copied)
		heap_freetuple(tuple);
	return entry;
}

} // namespace

bool invalidation_row_captured(Oid relid)
{
	ChangedTable *table = table_written(relid);
	return table == nullptr || row_keys_needed(table);
}

RowCapture invalidation_capture_row(Oid relid, TupleTableSlot *old_row, TupleTableSlot *new_row)
{
	ChangedTable *table = table_written(relid);
	if (table == nullptr)
		return RowCapture::QueueEvent;
	if (!row_keys_needed(table))
		return RowCapture::TableFlushed;
	record_slot_key(table, new_row, record_slot_key(table, old_row));
	/* Past the key limit now (record_key): the statement's next rows need nothing either. */
	return table->flush_all ? RowCapture::TableFlushed : RowCapture::Recorded;
}

const PrimaryKey *invalidation_row_key(Relation rel)
{
	const KnownKey *known = known_key_of(rel);
	return known->keyed ? &known->key : nullptr;
}

bool invalidation_capture_key(Oid relid, const Datum *values, const Oid *types, int ncolumns)
{
	ChangedTable *table = table_written(relid);
	if (table == nullptr)
		return false;
	if (!row_keys_needed(table))
		return true;
	if (ncolumns != table->key_shape.ncolumns)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("table \"%s\" has a key of %d column(s), not %d", get_rel_name(relid),
							   table->key_shape.ncolumns, ncolumns)));
	KeyShape kinds;
	kinds.ncolumns = ncolumns;
	for (int c = 0; c < ncolumns; c++)
		if (!value_kind_for(table->key_shape.kinds[c], types[c], &kinds.kinds[c]))
			ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
							errmsg("a value of type %s cannot name keys of column %d of table \"%s\"",
								   format_type_be(types[c]), c + 1, get_rel_name(relid))));
	append_key_bytes(kinds, values, empty_key_buffer());
	record_key_buffer(table, nullptr);
	return true;
}

void invalidation_statement_writes(Relation rel)
{
	store_require_available();
	changed_table(rel);
}

bool invalidation_flush_at_commit(Oid relid)
{
	ChangedTable *table = table_written(relid);
	if (table == nullptr)
		return false;
	table->flush_all = true;
	return true;
}

bool invalidation_table_flushed(Oid relid)
{
	ChangedTable *table = table_written(relid);
	return table != nullptr && table->flush_all;
}

bool invalidation_xact_wrote(Oid relid)
{
	return xact_writes && changed_tables.find(relid) != nullptr;
}

void invalidation_own_write(Oid relid, KeyBytes key)
{
	if (!xact_writes)
		return;
	ChangedKey probe;
	probe.relid = relid;
	probe.key = key;
	ChangedKey *entry = changed_keys.find(probe);
	/* Listed once, at the level that first marked it: an inner one that aborts leaves it. */
	if (entry == nullptr || entry->own)
		return;
	int level = GetCurrentTransactionNestLevel();
	allocate_level(level);
	entry->own = true;
	entry->next_own_at_level = own_at_level[level];
	own_at_level[level] = entry;
}

} // namespace local_cache

using namespace local_cache;

static Datum capture_changes(PG_FUNCTION_ARGS)
{
	/* Without the shared segment no invalidation could reach standbys: refuse the write. */
	store_require_available();
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("local_cache.capture_changes() must be called as a trigger")));
	TriggerData *trigger = reinterpret_cast<TriggerData *>(fcinfo->context);
	bool for_row = TRIGGER_FIRED_FOR_ROW(trigger->tg_event);
	if (TRIGGER_FIRED_AFTER(trigger->tg_event) != for_row && !TRIGGER_FIRED_BY_TRUNCATE(trigger->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("local_cache.capture_changes() must be a BEFORE STATEMENT, AFTER ROW or TRUNCATE trigger")));

	/*
	 * BEFORE STATEMENT (where capture_setup.cpp did not do it at ExecutorStart: COPY): the
	 * statement is about to write; from now on this transaction reads the table itself (its own
	 * writes may be visible to it before the AFTER ROW triggers run, e.g. to volatile functions in
	 * RETURNING).
	 */
	ChangedTable *table = changed_table(trigger->tg_relation);
	TupleDesc desc = RelationGetDescr(trigger->tg_relation);
	if (!TRIGGER_FIRED_AFTER(trigger->tg_event))
		return PointerGetDatum(NULL);
	if (TRIGGER_FIRED_BY_TRUNCATE(trigger->tg_event)) {
		table->flush_all = true;
	} else {
		/* INSERT: the new row; DELETE: the old one; UPDATE: both, the key may change. */
		ChangedKey *old_key = record_key(table, trigger->tg_trigtuple, desc);
		if (TRIGGER_FIRED_BY_UPDATE(trigger->tg_event))
			record_key(table, trigger->tg_newtuple, desc, old_key);
	}
	return PointerGetDatum(NULL);
}
LOCAL_CACHE_V1_FUNCTION(local_cache_capture_changes, capture_changes)

/*
 * The row trigger's WHEN clause (enable() since 1.5), evaluated as each row is written, before the
 * statement's AFTER ROW events run: see invalidation_row_captured.
 */
static Datum capture_keys(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(invalidation_row_captured(PG_GETARG_OID(0)));
}
LOCAL_CACHE_V1_FUNCTION(local_cache_capture_keys, capture_keys)

/*
 * The key a plan's UPDATE or DELETE computes for each row it is about to write (capture_setup.cpp
 * adds the call to plans whose rows' keys cannot change): the table's key columns, in order.
 * Returns true, for a junk column nobody reads.
 */
struct RowKeyArguments {
	int ncolumns;
	Oid types[MAX_KEY_COLUMNS];
};

/* The key columns' types of the call, read from its expression once (kept in fn_extra). */
static const RowKeyArguments &row_key_arguments(FunctionCallInfo fcinfo)
{
	FmgrInfo *call = fcinfo->flinfo;
	if (call->fn_extra != nullptr)
		return *static_cast<const RowKeyArguments *>(call->fn_extra);
	int ncolumns = PG_NARGS() - 1;
	if (get_fn_expr_variadic(call) || ncolumns < 1 || ncolumns > MAX_KEY_COLUMNS)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("local_cache.capture_row_key() takes the table and its key's columns, one argument each")));
	RowKeyArguments *arguments = static_cast<RowKeyArguments *>(MemoryContextAlloc(call->fn_mcxt, sizeof(RowKeyArguments)));
	arguments->ncolumns = ncolumns;
	for (int c = 0; c < ncolumns; c++) {
		arguments->types[c] = get_fn_expr_argtype(call, c + 1);
		if (!OidIsValid(arguments->types[c]))
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("local_cache.capture_row_key() cannot tell its arguments' types")));
	}
	call->fn_extra = arguments;
	return *arguments;
}

static Datum capture_row_key(PG_FUNCTION_ARGS)
{
	const RowKeyArguments &arguments = row_key_arguments(fcinfo);
	Datum values[MAX_KEY_COLUMNS];
	for (int c = 0; c < arguments.ncolumns; c++) {
		if (PG_ARGISNULL(c + 1))
			PG_RETURN_BOOL(true); /* a key with a NULL names no row */
		values[c] = PG_GETARG_DATUM(c + 1);
	}
	if (!PG_ARGISNULL(0))
		invalidation_capture_key(PG_GETARG_OID(0), values, arguments.types, arguments.ncolumns);
	PG_RETURN_BOOL(true);
}
LOCAL_CACHE_V1_FUNCTION(local_cache_capture_row_key, capture_row_key)

/* Called by the ALTER TABLE event trigger: the transaction may have changed what rows look
 * like or written rows while the capture trigger was disabled. */
static Datum flush_at_commit(PG_FUNCTION_ARGS)
{
	store_require_available();
	invalidation_table_altered(PG_GETARG_OID(0));
	PG_RETURN_VOID();
}
LOCAL_CACHE_V1_FUNCTION(local_cache_flush_at_commit, flush_at_commit)
