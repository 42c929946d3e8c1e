/*
 * fetch.cpp — the lookup/fill path shared by every read path.
 *
 * A hit is served only if the cached row version is visible to the caller's snapshot
 * (its xmin committed before the snapshot); otherwise the key is read from the table.
 * The misses of one call are read through the primary key's index, a probe per distinct key,
 * with the caller's snapshot. A row read from the table is put into the cache only if
 *   - the cache may be used at all here (see use_cache),
 *   - no invalidation reached the key's shard since before its probe (sequence check), and
 *   - the version is settled: inserted by a committed transaction other than ours, and
 *     not deleted or updated by a transaction that is in progress or committed.
 * Together with invalidation at pre-commit this keeps every cached version the newest
 * committed one; docs/CONSISTENCY.md has the argument.
 *
 * SERIALIZABLE reads are served with the predicate locks SSI needs (serve_serializable).
 *
 * Under a stampede (many callers missing one key at once) one caller reads the key from the
 * table and the others wait, up to local_cache.fill_wait, to look it up again (store.h's
 * fill claims); they are counted as coalesced misses.
 */
#include "extension/fetch.h"

#include "extension/invalidation.h"
#include "extension/settings.h"
#include "extension/store.h"
#include "extension/wal.h"

extern "C" {
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

namespace local_cache {

namespace {

struct Miss {
	KeyBytes key;
	int position;
};

int compare_misses(const void *a, const void *b)
{
	const Miss *x = static_cast<const Miss *>(a);
	const Miss *y = static_cast<const Miss *>(b);
	if (int c = compare_key_bytes(x->key, y->key))
		return c;
	return x->position - y->position;
}

/* One distinct missed key: its run of positions in the sorted misses, its fill sequence. */
struct MissedKey {
	int first_miss;
	int nmisses;
	StoreKey store_key;
	uint64 fill_seq;
};

bool use_cache(const FetchRequest &request)
{
	return local_cache_enabled && request.info->cacheable && wal_cache_trusted() &&
		request.snapshot != nullptr && request.snapshot->snapshot_type == SNAPSHOT_MVCC &&
		/* The transaction's own writes are visible only in the table. */
		!invalidation_xact_wrote(request.info->relid);
}

bool xmin_visible(TransactionId xmin, Snapshot snapshot)
{
	if (!TransactionIdIsNormal(xmin) || TransactionIdPrecedes(xmin, snapshot->xmin))
		return true;
	return !XidInMVCCSnapshot(xmin, snapshot);
}

/* Caller holds the buffer's content lock. */
bool version_is_settled(HeapTupleHeader tuple)
{
	TransactionId xmin = HeapTupleHeaderGetXmin(tuple);
	if (TransactionIdIsNormal(xmin) && TransactionIdIsCurrentTransactionId(xmin))
		return false;
	uint16 infomask = tuple->t_infomask;
	if ((infomask & HEAP_XMAX_INVALID) || HEAP_XMAX_IS_LOCKED_ONLY(infomask))
		return true;
	TransactionId xmax = HeapTupleHeaderGetUpdateXid(tuple);
	if (!TransactionIdIsValid(xmax))
		return true;
	/* Deleted or updated, or about to be: only an aborted updater leaves it current. */
	if (TransactionIdIsCurrentTransactionId(xmax) || TransactionIdIsInProgress(xmax) ||
		TransactionIdDidCommit(xmax))
		return false;
	return true;
}

/*
 * Whether no row with the key can appear to a snapshot that the caller's could not see it in:
 * every version of a row with the key (SnapshotAny, through the key's index) must be dead to
 * everyone or deleted by a committed transaction — none live, none inserted or deleted by a
 * transaction in progress. The negative entry may then answer only snapshots that see every
 * one of those deleters committed, and it can name only one (*deleter, checked as a row's
 * xmin is). Xid order is not commit order, so the numerically newest deleter is no proxy for
 * the others; instead, a deleter older than the horizon (no snapshot that still exists, or is
 * taken later, was taken while it ran) is seen committed by every snapshot, and at most one
 * deleter may be newer: that one is *deleter (invalid if none). Two or more newer deleters,
 * and the absence is not settled.
 */
bool absence_settled(Relation heap, IndexScanDesc scan, TupleTableSlot *slot, ScanKey scankeys, int nscankeys,
					 TransactionId *deleter)
{
	index_rescan(scan, scankeys, nscankeys, NULL, 0);
	/* Before the scan: a snapshot taken after this has an xmin at or past the horizon. */
	TransactionId horizon = GetOldestNonRemovableTransactionId(heap);
	bool settled = slot->tts_ops == &TTSOpsBufferHeapTuple;
	*deleter = InvalidTransactionId;
	while (settled && index_getnext_slot(scan, ForwardScanDirection, slot)) {
		BufferHeapTupleTableSlot *buffered = reinterpret_cast<BufferHeapTupleTableSlot *>(slot);
		HeapTuple tuple = ExecFetchSlotHeapTuple(slot, false, NULL);
		LockBuffer(buffered->buffer, BUFFER_LOCK_SHARE);
		HTSV_Result state = HeapTupleSatisfiesVacuum(tuple, horizon, buffered->buffer);
		TransactionId xmax = HeapTupleHeaderGetUpdateXid(tuple->t_data);
		LockBuffer(buffered->buffer, BUFFER_LOCK_UNLOCK);
		if (state != HEAPTUPLE_DEAD && state != HEAPTUPLE_RECENTLY_DEAD)
			settled = false; /* live, or a transaction in progress inserts or deletes it */
		else if (!TransactionIdIsNormal(xmax) || TransactionIdPrecedes(xmax, horizon) ||
				 TransactionIdEquals(xmax, *deleter))
			continue; /* every snapshot sees it committed */
		else if (TransactionIdIsValid(*deleter))
			settled = false; /* a second recent deleter: no one xid stands for both */
		else
			*deleter = xmax;
	}
	return settled;
}

/* Enters the payload (a row, or a negative entry) for the missed key, and counts it. */
void fill(RelInfo *info, const MissedKey *missed, const EntryPayload &payload, FetchCounts *counts)
{
	switch (store_fill(missed->store_key, missed->fill_seq, info->table, payload)) {
	case FillResult::Filled:
		counts->fills++;
		break;
	case FillResult::SlotLost:
		relinfo_forget_slot(info);
		counts->fill_rejections++;
		break;
	case FillResult::Rejected:
		counts->fill_rejections++;
		break;
	}
}

/*
 * The misses of one call, read from the table one index probe per distinct key (which costs
 * what one scan of = ANY(keys) does: btree descends once per array element too, and composite
 * keys have no array form). Every version scan is opened on first use.
 */
struct TableReader {
	Relation heap;
	Relation index;
	int nscankeys;
	ScanKeyData scankeys[MAX_KEY_COLUMNS];
	IndexScanDesc visible = nullptr; /* the caller's snapshot */
	IndexScanDesc every_version = nullptr; /* SnapshotAny, for absence_settled */
	TupleTableSlot *slot;
	TupleTableSlot *version_slot = nullptr;

	TableReader(const RelInfo *info, Snapshot snapshot)
	{
		heap = table_open(info->relid, NoLock); /* locked by relinfo_open */
		index = index_open(info->key.index, AccessShareLock);
		nscankeys = info->key.ncolumns;
		visible = index_beginscan(heap, index, snapshot, nscankeys, 0);
		slot = table_slot_create(heap, NULL);
	}
	void close()
	{
		ExecDropSingleTupleTableSlot(slot);
		index_endscan(visible);
		if (every_version != nullptr) {
			ExecDropSingleTupleTableSlot(version_slot);
			index_endscan(every_version);
		}
		index_close(index, NoLock);
		table_close(heap, NoLock);
	}
	/* Probes the key: afterwards next_row() returns its visible row, if any. */
	void probe(const PrimaryKey &key, const Datum *values)
	{
		key_scan_keys(key, values, scankeys);
		index_rescan(visible, scankeys, nscankeys, NULL, 0);
	}
	bool next_row() { return index_getnext_slot(visible, ForwardScanDirection, slot); }
	bool absence_settled_for_probed(TransactionId *deleter)
	{
		if (every_version == nullptr) {
			every_version = index_beginscan(heap, index, SnapshotAny, nscankeys, 0);
			version_slot = table_slot_create(heap, NULL);
		}
		return absence_settled(heap, every_version, version_slot, scankeys, nscankeys, deleter);
	}
};

/* A key the caller's snapshot has no row for: a negative entry, if that is settled. */
void fill_absent(RelInfo *info, TableReader &reader, const MissedKey *missed, FetchCounts *counts)
{
	TransactionId deleter;
	if (!reader.absence_settled_for_probed(&deleter)) {
		counts->fill_rejections++;
		return;
	}
	EntryPayload payload = {0, deleter, nullptr, 0, nullptr, 0};
	fill(info, missed, payload, counts);
}

void fill_one(RelInfo *info, MissedKey *missed, TupleTableSlot *slot, HeapTuple tuple,
			  const FetchedRow &row, FetchCounts *counts)
{
	bool settled = false;
	if (row.tuple_len <= uint32(local_cache_max_row_size) && slot->tts_ops == &TTSOpsBufferHeapTuple) {
		Buffer buffer = reinterpret_cast<BufferHeapTupleTableSlot *>(slot)->buffer;
		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		settled = version_is_settled(tuple->t_data);
		LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	}
	if (!settled) {
		counts->fill_rejections++;
		return;
	}
	EntryPayload payload;
	payload.slot = 0; /* stamped by store_fill */
	payload.xmin = HeapTupleHeaderGetXmin(tuple->t_data);
	payload.tid_block = ItemPointerGetBlockNumberNoCheck(&tuple->t_self);
	payload.tid_offset = ItemPointerGetOffsetNumberNoCheck(&tuple->t_self);
	payload.tuple = row.tuple;
	payload.tuple_len = row.tuple_len;
	payload.json = row.json;
	payload.json_len = row.json_len;
	fill(info, missed, payload, counts);
}

/* Reads the missed keys from the table; fills the cache when `caching`. */
void read_misses(const FetchRequest &request, Miss *misses, int nmisses, bool caching,
				 RowCallback callback, void *context, FetchCounts *counts)
{
	RelInfo *info = request.info;
	qsort(misses, nmisses, sizeof(Miss), compare_misses);
	TableReader reader(info, request.snapshot);
	TupleDesc desc = RelationGetDescr(reader.heap);
	StringInfoData json;
	initStringInfo(&json);
	Datum values[MAX_KEY_COLUMNS];

	for (int i = 0; i < nmisses;) {
		MissedKey missed;
		missed.first_miss = i;
		missed.nmisses = 1;
		while (i + missed.nmisses < nmisses && compare_key_bytes(misses[i].key, misses[i + missed.nmisses].key) == 0)
			missed.nmisses++;
		i += missed.nmisses;
		if (caching) {
			/* Before the table is read: an invalidation from here on rejects the fill. */
			missed.store_key = store_key(MyDatabaseId, info->relid, misses[missed.first_miss].key);
			missed.fill_seq = store_fill_seq(missed.store_key);
		}
		/* Bytes no value of the key's types has (e.g. 2^40 for an integer column): no row. */
		if (!key_values(info->key, misses[missed.first_miss].key, values))
			continue;
		reader.probe(info->key, values);
		bool found = false;
		while (reader.next_row()) {
			found = true;
			HeapTuple tuple = ExecFetchSlotHeapTuple(reader.slot, false, NULL);
			HeapTupleHeader datum = DatumGetHeapTupleHeader(heap_copy_tuple_as_datum(tuple, desc));
			FetchedRow row = {reinterpret_cast<const char *>(datum), HeapTupleHeaderGetDatumLength(datum),
							  nullptr, 0};
			if (caching) {
				if (info->json_cacheable) {
					resetStringInfo(&json);
					render_row_json(row.tuple, &json);
					row.json = json.data;
					row.json_len = uint32(json.len);
				}
				fill_one(info, &missed, reader.slot, tuple, row, counts);
			}
			for (int m = 0; m < missed.nmisses; m++)
				callback(context, misses[missed.first_miss + m].position, row);
		}
		if (caching && !found)
			fill_absent(info, reader, &missed, counts);
		CHECK_FOR_INTERRUPTS();
	}
	reader.close();
}

/*
 * Serves the key at `position` from the cache if it has an entry the snapshot may use: a
 * row's entry needs its inserter visible to the snapshot; a negative entry the newest deleter
 * of the key's rows (see absence_settled).
 */
bool serve_from_cache(const FetchRequest &request, const StoreKey &key, int position, RowCallback callback,
					  void *context, bool *absent)
{
	Snapshot snapshot = request.snapshot;
	return store_lookup(key, [&](const EntryView &view) {
		if (!xmin_visible(view.xmin, snapshot))
			return false;
		*absent = view.tuple_len == 0;
		if (!*absent) {
			FetchedRow row = {view.tuple, view.tuple_len, view.json, view.json_len};
			callback(context, position, row);
		}
		return true;
	});
}

/*
 * The cache's part of a SERIALIZABLE read: serves the keys it may with the predicate locks
 * the equivalent index scan takes, or coarser ones, and returns the others as misses (read
 * from the table, where the index and heap access methods take SSI's locks and check its
 * conflicts themselves). In order:
 *   1. a predicate lock on the primary key's index (the whole index: an index scan locks the
 *      leaf page; any insertion of a key by a SERIALIZABLE writer from now on conflicts);
 *   2. each key looked up, its shard's invalidation sequence read first;
 *   3. for each row found, a predicate lock on the heap tuple it was read from (its TID);
 *   4. no SERIALIZABLE transaction may be writing the table now (store_serializable_writers);
 *   5. each key whose shard's sequence is unchanged is served, from the copy step 2 made.
 * A writer W of the table that SSI must see conflict with this read either writes after
 * step 1/3 (its own conflict check finds our locks), or wrote before: then it began before
 * step 4 and had not invalidated the key before step 2 (else the lookup found the key gone,
 * or a version this snapshot does not see). If it is still running at step 4, nothing is
 * served; if it ended before, its pre-commit invalidation fell between steps 2 and 5, and the
 * sequence changed. (An unchanged sequence also means the entry copied at step 2 is still the
 * key's newest committed version: only an invalidation makes it stale; a fill cannot replace
 * it by another version without the invalidation that made it stale.) So a served key is one no concurrent SERIALIZABLE writer touched unseen,
 * and the version the snapshot sees has no newer version a heap fetch would report.
 */
int serve_serializable(const FetchRequest &request, RowCallback callback, void *context, Miss *misses,
					   FetchCounts *counts)
{
	struct Candidate {
		int position;
		StoreKey key;
		uint64 seq;
		EntryView seen; /* its scalars only: the pointers die with the shard lock */
		int tuple_at;   /* the copies of its tuple and JSON (-1: none) in `copies` */
		int json_at;
	};
	RelInfo *info = request.info;
	Snapshot snapshot = request.snapshot;
	int nmisses = 0, ncandidates = 0;
	Candidate *candidates = static_cast<Candidate *>(palloc(sizeof(Candidate) * request.nkeys));
	StringInfoData copies;
	initStringInfo(&copies);
	/* Early: with a writer running, nothing would be served. */
	bool writers = store_serializable_writers(MyDatabaseId, info->relid);
	Relation heap = nullptr, index = nullptr;
	if (!writers) {
		heap = table_open(info->relid, NoLock); /* locked by relinfo_open */
		index = index_open(info->key.index, AccessShareLock);
		PredicateLockRelation(index, snapshot);
	}
	for (int i = 0; i < request.nkeys; i++) {
		if (request.key_is_null != nullptr && request.key_is_null[i])
			continue;
		Candidate *c = &candidates[ncandidates];
		c->position = i;
		c->key = store_key(MyDatabaseId, info->relid, request.keys[i]);
		if (!writers) {
			c->seq = store_fill_seq(c->key);
			bool found = store_lookup(c->key, [&](const EntryView &view) {
				/* A row without its TID cannot be locked: read it. */
				if (!xmin_visible(view.xmin, snapshot) || (view.tuple_len > 0 && view.tid_offset == 0))
					return false;
				c->seen = view;
				c->tuple_at = c->json_at = -1;
				if (view.tuple_len > 0) {
					c->tuple_at = copies.len;
					appendBinaryStringInfo(&copies, view.tuple, int(view.tuple_len));
				}
				if (view.json != nullptr) {
					c->json_at = copies.len;
					appendBinaryStringInfo(&copies, view.json, int(view.json_len));
				}
				return true;
			});
			if (found) {
				ncandidates++;
				continue;
			}
		}
		misses[nmisses++] = {request.keys[i], i};
	}
	for (int i = 0; i < ncandidates; i++) {
		if (candidates[i].seen.tuple_len == 0)
			continue; /* an absent key: the index's lock covers its insertion */
		ItemPointerData tid;
		ItemPointerSet(&tid, candidates[i].seen.tid_block, candidates[i].seen.tid_offset);
		PredicateLockTID(heap, &tid, snapshot, candidates[i].seen.xmin);
	}
	bool writing = ncandidates > 0 && store_serializable_writers(MyDatabaseId, info->relid);
	for (int i = 0; i < ncandidates; i++) {
		const Candidate &c = candidates[i];
		bool served = !writing && store_fill_seq(c.key) == c.seq;
		if (served && c.tuple_at >= 0) {
			FetchedRow row = {copies.data + c.tuple_at, c.seen.tuple_len,
							  c.json_at >= 0 ? copies.data + c.json_at : nullptr, c.seen.json_len};
			callback(context, c.position, row);
		}
		if (served) {
			counts->hits++;
			counts->negative_hits += c.seen.tuple_len == 0 ? 1 : 0;
		} else {
			misses[nmisses++] = {request.keys[c.position], c.position};
		}
	}
	if (heap != nullptr) {
		index_close(index, NoLock);
		table_close(heap, NoLock);
	}
	pfree(candidates);
	pfree(copies.data);
	return nmisses;
}

/*
 * read_misses for a caller that fills, one read per key under a stampede: keys another process
 * is reading from the table right now are left to it, waited for (up to local_cache.fill_wait,
 * after this call's own reads), and looked up again; what is still missing is read then.
 */
void read_misses_coalesced(const FetchRequest &request, Miss *misses, int nmisses, RowCallback callback,
						   void *context, FetchCounts *counts)
{
	Oid relid = request.info->relid;
	Miss *waiting = static_cast<Miss *>(palloc(sizeof(Miss) * nmisses));
	int nwaiting = 0;
	int nclaimed = 0;
	for (int i = 0; i < nmisses; i++) {
		if (store_claim_fill(store_key(MyDatabaseId, relid, misses[i].key)) == FillClaim::Others)
			waiting[nwaiting++] = misses[i];
		else
			misses[nclaimed++] = misses[i];
	}
	PG_TRY();
	{
		if (nclaimed > 0)
			read_misses(request, misses, nclaimed, true, callback, context, counts);
	}
	PG_FINALLY();
	{
		store_end_fills();
	}
	PG_END_TRY();
	if (nwaiting == 0)
		return;

	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), local_cache_fill_wait_ms);
	int nstill_missing = 0;
	for (int i = 0; i < nwaiting; i++) {
		StoreKey key = store_key(MyDatabaseId, relid, waiting[i].key);
		bool absent;
		if (store_wait_for_fill(key, deadline) &&
			serve_from_cache(request, key, waiting[i].position, callback, context, &absent)) {
			counts->coalesced_misses++;
			continue;
		}
		waiting[nstill_missing++] = waiting[i];
	}
	if (nstill_missing > 0)
		read_misses(request, waiting, nstill_missing, true, callback, context, counts);
}

} // namespace

void render_row_json(const char *tuple, StringInfo out)
{
	text *json = DatumGetTextPP(DirectFunctionCall1(row_to_json, PointerGetDatum(tuple)));
	appendBinaryStringInfo(out, VARDATA_ANY(json), VARSIZE_ANY_EXHDR(json));
}

void fetch_rows(const FetchRequest &request, RowCallback callback, void *context,
				FetchCounts *counts_out)
{
	FetchCounts counts = {0, 0, 0, 0, 0, 0};
	bool caching = use_cache(request);
	Oid dbid = MyDatabaseId;
	Oid relid = request.info->relid;
	Miss *misses = nullptr;
	int nmisses = 0;

	bool serializable = caching && IsolationIsSerializable();
	if (serializable) {
		misses = static_cast<Miss *>(palloc(sizeof(Miss) * Max(request.nkeys, 1)));
		nmisses = serve_serializable(request, callback, context, misses, &counts);
	}
	for (int i = 0; i < request.nkeys && !serializable; i++) {
		if (request.key_is_null != nullptr && request.key_is_null[i])
			continue;
		KeyBytes key = request.keys[i];
		if (caching) {
			bool absent = false;
			if (serve_from_cache(request, store_key(dbid, relid, key), i, callback, context, &absent)) {
				counts.hits++;
				counts.negative_hits += absent ? 1 : 0;
				continue;
			}
		}
		if (misses == nullptr)
			misses = static_cast<Miss *>(palloc(sizeof(Miss) * (request.nkeys - i)));
		misses[nmisses].key = key;
		misses[nmisses].position = i;
		nmisses++;
	}

	if (caching)
		counts.misses = nmisses;
	/* (SERIALIZABLE: a coalesced hit would need serve_serializable's steps again.) */
	if (nmisses > 0 && caching && local_cache_fill_wait_ms > 0 && !serializable)
		read_misses_coalesced(request, misses, nmisses, callback, context, &counts);
	else if (nmisses > 0)
		read_misses(request, misses, nmisses, caching, callback, context, &counts);

	TableSlotRef table = request.info->table;
	store_count(table, COUNTER_HITS, counts.hits);
	store_count(table, COUNTER_NEGATIVE_HITS, counts.negative_hits);
	store_count(table, COUNTER_MISSES, counts.misses);
	store_count(table, COUNTER_FILLS, counts.fills);
	store_count(table, COUNTER_FILL_REJECTIONS, counts.fill_rejections);
	store_count(table, COUNTER_COALESCED_MISSES, counts.coalesced_misses);
	if (counts_out != nullptr)
		*counts_out = counts;
}

int scan_primary_keys(RelInfo *info, Snapshot snapshot, const KeyBytes *after, StringInfo keys, uint32 *ends,
					  int limit)
{
	if (limit <= 0)
		return 0;
	const PrimaryKey &key = info->key;
	Datum values[MAX_KEY_COLUMNS];
	/* A cursor's key that no value of the key's types has any more (ALTER TYPE since): start
	 * over, as SCAN may return a key twice but never skip one. */
	bool has_after = after != nullptr && key_values(key, *after, values);
	Relation heap = table_open(info->relid, NoLock);
	Relation index = index_open(key.index, AccessShareLock);
	IndexScanDesc scan = index_beginscan(heap, index, snapshot, has_after ? 1 : 0, 0);
	/* (columns) > (after's values): one row comparison, which btree starts from (a plain
	 * comparison for one column). */
	ScanKeyData row_compare;
	bool composite = key.shape.composite();
	ScanKeyData *columns = static_cast<ScanKeyData *>(palloc(sizeof(ScanKeyData) * key.ncolumns));
	if (has_after) {
		for (int c = 0; c < key.ncolumns; c++) {
			/* A row comparison's members carry btree's 3-way comparison (nbtsearch.c reads them
			 * in insertion form); a plain scan key the > operator's function. */
			RegProcedure compare =
				composite ? get_opfamily_proc(key.opfamilies[c], key.index_types[c], key.index_types[c], BTORDER_PROC)
						  : get_opcode(get_opfamily_member(key.opfamilies[c], key.index_types[c], key.index_types[c],
														   BTGreaterStrategyNumber));
			int flags = composite ? SK_ROW_MEMBER | (c == key.ncolumns - 1 ? SK_ROW_END : 0) : 0;
			ScanKeyEntryInitialize(&columns[c], flags, AttrNumber(c + 1), BTGreaterStrategyNumber, key.index_types[c],
								   key.collations[c], compare, values[c]);
		}
		if (composite)
			ScanKeyEntryInitialize(&row_compare, SK_ROW_HEADER, 1, BTGreaterStrategyNumber, key.index_types[0],
								   key.collations[0], InvalidOid, PointerGetDatum(columns));
		else
			row_compare = columns[0];
	}
	index_rescan(scan, has_after ? &row_compare : NULL, has_after ? 1 : 0, NULL, 0);
	TupleTableSlot *slot = table_slot_create(heap, NULL);
	TupleDesc desc = RelationGetDescr(heap);
	int n = 0;
	while (n < limit && index_getnext_slot(scan, ForwardScanDirection, slot)) {
		HeapTuple tuple = ExecFetchSlotHeapTuple(slot, false, NULL);
		if (append_row_key_bytes(key, tuple, desc, keys))
			ends[n++] = uint32(keys->len);
		CHECK_FOR_INTERRUPTS();
	}
	ExecDropSingleTupleTableSlot(slot);
	index_endscan(scan);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	return n;
}

} // namespace local_cache
