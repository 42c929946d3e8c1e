/*
 * wal.cpp — the "local_cache" custom WAL resource manager (id 128, RM_EXPERIMENTAL_ID; see
 * https://wiki.postgresql.org/wiki/CustomWALResourceManagers before shipping another id), and
 * the setting local_cache.wal_invalidations.
 *
 * Record types:
 *   INVALIDATE  a database, tables to flush and keys to invalidate. The primary writes it at
 *               pre-commit (and pre-prepare) of every transaction that wrote cached tables, so it
 *               precedes the commit record; a hot standby's startup process replays it by
 *               invalidating its own cache the same way, before the commit becomes visible to
 *               standby readers (docs/CONSISTENCY.md, "Replicas").
 *   STOP        from here on, commits may change cached tables without INVALIDATE records: the
 *               standby flushes its cache and stops serving from it.
 *   START       every write is logged again: the standby flushes and serves from its cache.
 *
 * With local_cache.wal_invalidations off the primary writes no INVALIDATE records, so the
 * library can be removed after a CHECKPOINT (crash recovery then replays no local_cache
 * record). The protocol that keeps standbys exact across the switch, in shared state
 * (WalState, below):
 *   - a transaction decides at its first write of a cached table whether it logs; one that
 *     does not counts itself in `unlogged_writers` until it ends, and before its first write
 *     makes sure the last record written said STOP;
 *   - START is written (by a logging writer at pre-commit, or before a CHECKPOINT command) only
 *     while no unlogged writer exists, under the exclusive lock that unlogged writers take in
 *     shared mode to read `logged` after counting themselves. So every change of an unlogged
 *     writer lies between a STOP and the next START; a standby flushes at START, and afterwards
 *     the rows an unlogged writer that prepared but has not committed touched are not settled,
 *     so they are not filled.
 */
#include "extension/wal.h"

#include "extension/boundary.h"
#include "extension/key_bytes.h"
#include "extension/settings.h"
#include "extension/store.h"
#include "extension/tracking_log.h"

extern "C" {
#include "access/transam.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
}

namespace local_cache {

namespace {

constexpr RmgrId RM_LOCAL_CACHE_ID = RM_EXPERIMENTAL_ID;
/* INVALIDATE of library versions before key bytes: integer keys only; replayed still. */
constexpr uint8 XLOG_LOCAL_CACHE_INVALIDATE_INT64 = 0x10;
constexpr uint8 XLOG_LOCAL_CACHE_INVALIDATE = 0x40;
constexpr uint8 XLOG_LOCAL_CACHE_STOP = 0x20;
constexpr uint8 XLOG_LOCAL_CACHE_START = 0x30;
/* Keys per record: keeps records far below any size limit. */
constexpr int KEYS_PER_RECORD = 8192;
constexpr size_t RECORD_KEY_BYTES = 1024 * 1024;
const char *const TRANCHE_NAME = "local_cache wal";

/* What the last STOP or START record written by this primary said. */
enum class Logged : uint32 { Unknown, Started, Stopped };

/*
 * Shared state. `logged` changes only under `lock` held exclusively, with the STOP or START
 * record it reflects; unlogged writers read it under `lock` in shared mode after counting
 * themselves in `unlogged_writers` (an atomic). `standby_stopped` is written only by the
 * startup process replaying STOP and START, and read by any reader (an atomic).
 */
struct WalState {
	LWLock *lock;
	Logged logged;
	pg_atomic_uint32 unlogged_writers;
	pg_atomic_uint32 standby_stopped;
};

WalState *state = nullptr;

/* The current transaction's decision (wal_xact_starts_writing); reset when it ends. */
enum class XactLogging { Undecided, Logs, Unlogged };
XactLogging xact_logging = XactLogging::Undecided;

/*
 * Followed by Oid flushed[nflushed], then nkeys keys, each (Oid relid, uint32 length, the
 * key's bytes), unaligned. XLOG_LOCAL_CACHE_INVALIDATE_INT64 has (Oid relid, int64 key) pairs.
 */
struct InvalidateRecord {
	Oid dbid;
	uint32 nflushed;
	uint32 nkeys;
};

uint8 record_type(XLogReaderState *reader)
{
	return XLogRecGetInfo(reader) & XLR_RMGR_INFO_MASK;
}

bool is_invalidate(uint8 type)
{
	return type == XLOG_LOCAL_CACHE_INVALIDATE || type == XLOG_LOCAL_CACHE_INVALIDATE_INT64;
}

/* An INVALIDATE record, read: its flushed tables, then its keys one at a time. */
class InvalidateReader {
public:
	explicit InvalidateReader(XLogReaderState *reader)
		: data_(XLogRecGetData(reader)), int64_keys_(record_type(reader) == XLOG_LOCAL_CACHE_INVALIDATE_INT64)
	{
		memcpy(&header, data_, sizeof(header));
		at_ = sizeof(header) + sizeof(Oid) * header.nflushed;
	}
	Oid flushed(uint32 i) const
	{
		Oid relid;
		memcpy(&relid, data_ + sizeof(header) + sizeof(Oid) * i, sizeof(Oid));
		return relid;
	}
	/* The next key: its bytes are valid while the record is. */
	void next_key(Oid *relid, KeyBytes *key)
	{
		memcpy(relid, data_ + at_, sizeof(Oid));
		if (int64_keys_) {
			/* The int64 followed the Oid at its 8-byte alignment. */
			at_ += 8;
			*key = KeyBytes{data_ + at_, INT_KEY_BYTES};
			at_ += INT_KEY_BYTES;
			return;
		}
		at_ += sizeof(Oid);
		uint32 len;
		memcpy(&len, data_ + at_, sizeof(len));
		at_ += sizeof(len);
		*key = KeyBytes{data_ + at_, len};
		at_ += len;
	}

	InvalidateRecord header;

private:
	const char *data_;
	bool int64_keys_;
	size_t at_;
};

void redo_invalidate(XLogReaderState *reader)
{
	InvalidateReader record(reader);
	Oid dbid = record.header.dbid;
	/* A flushed table may have had its capture changed (the record does not say): standby
	 * readers validate its triggers again once the transaction's commit has been replayed. */
	TransactionId xid = XLogRecGetXid(reader);
	for (uint32 i = 0; i < record.header.nflushed; i++) {
		if (TransactionIdIsValid(xid))
			store_capture_begin(dbid, record.flushed(i), xid);
		store_flush(dbid, record.flushed(i));
	}
	WalKey *keys = static_cast<WalKey *>(palloc(sizeof(WalKey) * (record.header.nkeys + 1)));
	for (uint32 i = 0; i < record.header.nkeys; i++) {
		record.next_key(&keys[i].relid, &keys[i].key);
		store_invalidate(store_key(dbid, keys[i].relid, keys[i].key));
	}
	/* For CLIENT TRACKING on this standby, once the commit is replayed. The record does not say
	 * which flushes were definition changes: each counts as one. */
	{
		Oid *flushed = static_cast<Oid *>(palloc(sizeof(Oid) * (record.header.nflushed + 1)));
		bool *definition_changed = static_cast<bool *>(palloc(sizeof(bool) * (record.header.nflushed + 1)));
		for (uint32 i = 0; i < record.header.nflushed; i++) {
			flushed[i] = record.flushed(i);
			definition_changed[i] = true;
		}
		tracking_log_changes(dbid, flushed, definition_changed, int(record.header.nflushed), keys, nullptr,
							 int(record.header.nkeys), xid);
		pfree(flushed);
		pfree(definition_changed);
	}
	pfree(keys);
}

void redo(XLogReaderState *reader)
{
	if (!store_available())
		return;
	switch (record_type(reader)) {
	case XLOG_LOCAL_CACHE_INVALIDATE:
	case XLOG_LOCAL_CACHE_INVALIDATE_INT64:
		redo_invalidate(reader);
		break;
	case XLOG_LOCAL_CACHE_STOP:
		/* Stop first: a fill that began earlier is rejected by the flush's new sequence. */
		pg_atomic_write_u32(&state->standby_stopped, 1);
		store_flush(InvalidOid, InvalidOid);
		tracking_log_unlogged();
		break;
	case XLOG_LOCAL_CACHE_START:
		store_flush(InvalidOid, InvalidOid);
		pg_atomic_write_u32(&state->standby_stopped, 0);
		/* Commits between STOP and START logged nothing: every tracked key may have changed,
		 * and a transaction prepared in between commits later without a record. */
		tracking_log_resumed();
		break;
	default:
		elog(PANIC, "local_cache redo: unknown record type %u", record_type(reader));
	}
}

void describe(StringInfo out, XLogReaderState *reader)
{
	if (!is_invalidate(record_type(reader)))
		return;
	InvalidateReader record(reader);
	appendStringInfo(out, "db %u; flush %u tables; invalidate %u keys", record.header.dbid, record.header.nflushed,
					 record.header.nkeys);
	for (uint32 i = 0; i < record.header.nflushed && i < 8; i++)
		appendStringInfo(out, "%s%u", i == 0 ? ": flush " : ", ", record.flushed(i));
	for (uint32 i = 0; i < record.header.nkeys && i < 8; i++) {
		Oid relid;
		KeyBytes key;
		record.next_key(&relid, &key);
		appendStringInfo(out, "%s%u/", i == 0 ? ": keys " : ", ", relid);
		/* The bytes in hex (an integer key's in host order): the record knows no types. */
		for (uint32 b = 0; b < key.len && b < 32; b++)
			appendStringInfo(out, "%02x", static_cast<unsigned char>(key.data[b]));
		if (key.len > 32)
			appendStringInfoString(out, "...");
	}
	if (record.header.nkeys > 8)
		appendStringInfoString(out, ", ...");
}

const char *identify(uint8 info)
{
	switch (info & XLR_RMGR_INFO_MASK) {
	case XLOG_LOCAL_CACHE_INVALIDATE:
	case XLOG_LOCAL_CACHE_INVALIDATE_INT64: return "INVALIDATE";
	case XLOG_LOCAL_CACHE_STOP: return "STOP";
	case XLOG_LOCAL_CACHE_START: return "START";
	default: return nullptr;
	}
}

RmgrData rmgr = {
	"local_cache", pg_entry<redo>, pg_entry<describe>, pg_entry<identify>, nullptr, nullptr, nullptr, nullptr,
};

void log_invalidate(Oid dbid, const Oid *flushed, int nflushed, const WalKey *keys, int nkeys)
{
	InvalidateRecord header = {dbid, uint32(nflushed), uint32(nkeys)};
	size_t size = sizeof(header) + sizeof(Oid) * nflushed;
	for (int i = 0; i < nkeys; i++)
		size += sizeof(Oid) + sizeof(uint32) + keys[i].key.len;
	/* A commit's one or few keys go together on the stack: no allocation, no cold lines. */
	char on_stack[256];
	char *data = size <= sizeof(on_stack) ? on_stack : static_cast<char *>(palloc(size));
	char *at = data;
	auto put = [&at](const void *bytes, size_t len) {
		if (len > 0)
			memcpy(at, bytes, len);
		at += len;
	};
	put(&header, sizeof(header));
	put(flushed, sizeof(Oid) * nflushed);
	for (int i = 0; i < nkeys; i++) {
		put(&keys[i].relid, sizeof(Oid));
		put(&keys[i].key.len, sizeof(uint32));
		put(keys[i].key.data, keys[i].key.len);
	}
	Assert(size_t(at - data) == size);
	XLogBeginInsert();
	XLogRegisterData(data, uint32(size));
	XLogInsert(RM_LOCAL_CACHE_ID, XLOG_LOCAL_CACHE_INVALIDATE);
	if (data != on_stack)
		pfree(data);
}

/* Lock held exclusively. */
void log_switch(Logged to)
{
	static char none = 0;
	XLogBeginInsert();
	XLogRegisterData(&none, 1);
	XLogInsert(RM_LOCAL_CACHE_ID, to == Logged::Stopped ? XLOG_LOCAL_CACHE_STOP : XLOG_LOCAL_CACHE_START);
	state->logged = to;
}

/* A STOP record, unless the last record said so already. */
void ensure_stopped(void)
{
	LWLockAcquire(state->lock, LW_SHARED);
	bool stopped = state->logged == Logged::Stopped;
	LWLockRelease(state->lock);
	if (stopped)
		return;
	LWLockAcquire(state->lock, LW_EXCLUSIVE);
	if (state->logged != Logged::Stopped)
		log_switch(Logged::Stopped);
	LWLockRelease(state->lock);
}

/* A START record, unless the last record said so already or an unlogged writer is still busy. */
void try_start(void)
{
	if (state->logged == Logged::Started) /* a hint; rechecked under the lock */
		return;
	LWLockAcquire(state->lock, LW_EXCLUSIVE);
	if (state->logged != Logged::Started && pg_atomic_read_u32(&state->unlogged_writers) == 0)
		log_switch(Logged::Started);
	LWLockRelease(state->lock);
}

bool logging_possible(void)
{
	return state != nullptr && XLogStandbyInfoActive() && !RecoveryInProgress();
}

} // namespace

void wal_register_rmgr(void)
{
	RegisterCustomRmgr(RM_LOCAL_CACHE_ID, &rmgr);
}

void wal_before_checkpoint(void)
{
	if (!logging_possible())
		return;
	if (local_cache_wal_invalidations)
		try_start();
	else
		ensure_stopped();
}

void wal_request_shmem(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(WalState)));
	RequestNamedLWLockTranche(TRANCHE_NAME, 1);
}

void wal_startup_shmem(void)
{
	bool found;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	state = static_cast<WalState *>(ShmemInitStruct("local_cache wal", sizeof(WalState), &found));
	if (!found) {
		state->lock = &GetNamedLWLockTranche(TRANCHE_NAME)->lock;
		state->logged = Logged::Unknown;
		pg_atomic_init_u32(&state->unlogged_writers, 0);
		/* A standby trusts the primary's stream from its start only if told so here too. */
		pg_atomic_init_u32(&state->standby_stopped, local_cache_wal_invalidations ? 0 : 1);
	}
	LWLockRelease(AddinShmemInitLock);
}

void wal_xact_starts_writing(void)
{
	if (xact_logging != XactLogging::Undecided || !logging_possible())
		return;
	if (local_cache_wal_invalidations) {
		xact_logging = XactLogging::Logs;
		return;
	}
	pg_atomic_fetch_add_u32(&state->unlogged_writers, 1);
	xact_logging = XactLogging::Unlogged;
	ensure_stopped();
}

void wal_xact_ended(void)
{
	if (xact_logging == XactLogging::Unlogged)
		pg_atomic_fetch_sub_u32(&state->unlogged_writers, 1);
	xact_logging = XactLogging::Undecided;
}

void wal_log_invalidations(Oid dbid, const Oid *flushed, int nflushed, const WalKey *keys, int nkeys)
{
	if (xact_logging != XactLogging::Logs || !XLogStandbyInfoActive() || (nflushed == 0 && nkeys == 0))
		return;
	try_start();
	/* Records of at most KEYS_PER_RECORD keys and about RECORD_KEY_BYTES of their bytes (text
	 * keys can be long); the flushed tables go with the first. */
	int done = 0;
	do {
		int n = 0;
		size_t bytes = 0;
		while (done + n < nkeys && n < KEYS_PER_RECORD && (n == 0 || bytes < RECORD_KEY_BYTES))
			bytes += keys[done + n++].key.len;
		log_invalidate(dbid, done == 0 ? flushed : nullptr, done == 0 ? nflushed : 0, keys + done, n);
		done += n;
	} while (done < nkeys);
}

bool wal_cache_trusted(void)
{
	if (!RecoveryInProgress())
		return true;
	return local_cache_wal_invalidations && pg_atomic_read_u32(&state->standby_stopped) == 0;
}

} // namespace local_cache
