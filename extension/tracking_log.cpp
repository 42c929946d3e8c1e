/*
 * tracking_log.cpp — the shared log of committed changes that CLIENT TRACKING reads
 * (tracking_log.h): a ring of records in shared memory ("local_cache tracking log").
 *
 * Positions are byte offsets that only grow; a record lives at position % LOG_BYTES and never
 * straddles the ring's end (a writer pads to the end first). `tail` is the oldest record still
 * whole: a writer that needs room moves it past the records it overwrites, and a reader whose
 * position fell behind it was lapped.
 */
#include "extension/tracking_log.h"

#include "extension/boundary.h"

extern "C" {
#include "access/transam.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

#include <signal.h>

namespace local_cache {

namespace {

/*
 * Small on purpose: readers lag by a millisecond (50 ms when idle), and every backend that
 * commits first-touches each page of the ring it writes (shared pages are not mapped into a
 * forked process until touched), a page fault each; a short-lived connection writing into an
 * 8 MB ring kept faulting, one of 1 MB has mapped it all after 256 pages.
 */
constexpr uint64 LOG_BYTES = 1024 * 1024;
/* A transaction whose records would take more than this logs its tables instead of its keys. */
constexpr uint64 MAX_TRANSACTION_BYTES = LOG_BYTES / 4;
static_assert(MAX_TRANSACTION_BYTES <= TRACKING_LOG_COPY_BYTES, "a reader's copy holds any record");
/* Past this many tables in such a transaction, it logs one change of every table instead. */
constexpr int MAX_FLUSHED_TABLES = 64;
const char *const TRANCHE_NAME = "local_cache tracking log";

constexpr uint8 KIND_PAD = 0;

struct RecordHeader {
	uint32 length; /* of the whole record, header included, a multiple of 8 */
	uint8 kind;
	uint8 unused[3];
	Oid dbid;
	Oid relid;
	TransactionId xid;
	uint32 nbytes;
	uint64 client;
};
static_assert(sizeof(RecordHeader) == 32, "records are 8-aligned");

uint32 record_length(uint32 nbytes)
{
	return uint32(TYPEALIGN(8, sizeof(RecordHeader) + nbytes));
}

/*
 * Shared state. `head` and `tail` change only under `lock` held exclusively (writers); readers
 * copy records under it in shared mode. `head` is also an atomic so readers can see without
 * the lock whether anything is new. `trackers`, `reader_pid` and `sleeping` are atomics.
 */
struct TrackingLogState {
	LWLock *lock;
	pg_atomic_uint64 head;
	uint64 tail;
	pg_atomic_uint32 trackers;
	pg_atomic_uint32 reader_pid[TRACKING_LOG_MAX_READERS];
	/* The reader is about to wait, or waits, for events: a writer signals it (once). */
	pg_atomic_uint32 sleeping[TRACKING_LOG_MAX_READERS];
	char data[LOG_BYTES];
};

TrackingLogState *state = nullptr;
uint64 current_writer = 0;

/* Lock held exclusively: frees room for `length` bytes at head, padding to the ring's end
 * when the record would straddle it. Returns where the record goes. */
char *reserve(uint32 length)
{
	uint64 head = pg_atomic_read_u64(&state->head);
	uint64 offset = head % LOG_BYTES;
	if (offset + length > LOG_BYTES) {
		uint64 pad = LOG_BYTES - offset;
		if (pad >= sizeof(RecordHeader)) {
			RecordHeader header = {};
			header.length = uint32(pad);
			header.kind = KIND_PAD;
			memcpy(state->data + offset, &header, sizeof(header));
		}
		head += pad;
	}
	uint64 end = head + length;
	while (end - state->tail > LOG_BYTES) {
		uint64 at = state->tail % LOG_BYTES;
		if (LOG_BYTES - at < sizeof(RecordHeader)) {
			state->tail += LOG_BYTES - at;
			continue;
		}
		RecordHeader header;
		memcpy(&header, state->data + at, sizeof(header));
		state->tail += header.length;
	}
	/* Readers look at head only after the record is whole: it moves in commit_record. */
	pg_atomic_write_u64(&state->head, head);
	return state->data + head % LOG_BYTES;
}

/* Lock held exclusively. */
void append(LoggedChangeKind kind, Oid dbid, Oid relid, TransactionId xid, uint64 client, const char *bytes,
			uint32 nbytes)
{
	uint32 length = record_length(nbytes);
	char *at = reserve(length);
	RecordHeader header = {};
	header.length = length;
	header.kind = uint8(kind);
	header.dbid = dbid;
	header.relid = relid;
	header.xid = xid;
	header.nbytes = nbytes;
	header.client = client;
	memcpy(at, &header, sizeof(header));
	if (nbytes > 0)
		memcpy(at + sizeof(header), bytes, nbytes);
	pg_write_barrier();
	pg_atomic_write_u64(&state->head, pg_atomic_read_u64(&state->head) + length);
}

/*
 * After the lock is released: SIGUSR2 to each reader that sleeps, once per sleep. A busy reader
 * looks at the head before it sleeps again (tracking_log_sleeping), so under load a commit sends
 * no signal at all; the barriers on both sides (head, then `sleeping`; `sleeping`, then head)
 * make sure one of the two sees the other.
 */
void wake_readers(void)
{
	pg_memory_barrier();
	for (int i = 0; i < TRACKING_LOG_MAX_READERS; i++) {
		pid_t pid = pid_t(pg_atomic_read_u32(&state->reader_pid[i]));
		if (pid != 0 && pg_atomic_read_u32(&state->sleeping[i]) != 0 &&
			pg_atomic_exchange_u32(&state->sleeping[i], 0) != 0)
			kill(pid, SIGUSR2);
	}
}

void reader_exited(int, Datum slot)
{
	pg_atomic_write_u32(&state->reader_pid[DatumGetInt32(slot)], 0);
}

/* Whether the transaction's records fit in MAX_TRANSACTION_BYTES. */
bool keys_fit(int nflushed, const WalKey *keys, int nkeys)
{
	uint64 bytes = uint64(nflushed) * record_length(0);
	for (int i = 0; i < nkeys && bytes <= MAX_TRANSACTION_BYTES; i++)
		bytes += record_length(keys[i].key.len);
	return bytes <= MAX_TRANSACTION_BYTES;
}

} // namespace

void tracking_log_request_shmem(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(TrackingLogState)));
	RequestNamedLWLockTranche(TRANCHE_NAME, 1);
}

void tracking_log_startup_shmem(void)
{
	bool found;
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	state = static_cast<TrackingLogState *>(ShmemInitStruct("local_cache tracking log", sizeof(TrackingLogState), &found));
	if (!found) {
		state->lock = &GetNamedLWLockTranche(TRANCHE_NAME)->lock;
		pg_atomic_init_u64(&state->head, 0);
		state->tail = 0;
		pg_atomic_init_u32(&state->trackers, 0);
		for (int i = 0; i < TRACKING_LOG_MAX_READERS; i++) {
			pg_atomic_init_u32(&state->reader_pid[i], 0);
			pg_atomic_init_u32(&state->sleeping[i], 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

void tracking_log_count_trackers(int delta)
{
	if (delta >= 0)
		pg_atomic_fetch_add_u32(&state->trackers, uint32(delta));
	else
		pg_atomic_fetch_sub_u32(&state->trackers, uint32(-delta));
	/* A connection that now tracks reads after this: a commit that found no tracker is visible
	 * to that read (tracking_log_changes reads the count after its commit became visible). */
	pg_memory_barrier();
}

uint64 tracking_log_set_writer(uint64 client)
{
	uint64 replaced = current_writer;
	current_writer = client;
	return replaced;
}

void tracking_log_changes(Oid dbid, const Oid *flushed, const bool *definition_changed, int nflushed,
						  const WalKey *keys, const bool *own, int nkeys, TransactionId xid)
{
	if (state == nullptr || (nflushed == 0 && nkeys == 0))
		return;
	/* A change visible already matters only to connections tracking now; one visible later
	 * (prepared, replayed) also to those that start tracking before it is. */
	pg_memory_barrier();
	if (!TransactionIdIsValid(xid) && pg_atomic_read_u32(&state->trackers) == 0)
		return;
	bool by_key = keys_fit(nflushed, keys, nkeys);
	LWLockAcquire(state->lock, LW_EXCLUSIVE);
	for (int i = 0; i < nflushed; i++)
		append(definition_changed[i] ? LoggedChangeKind::Definition : LoggedChangeKind::Table, dbid, flushed[i],
			   xid, 0, nullptr, 0);
	if (by_key) {
		for (int i = 0; i < nkeys; i++)
			append(LoggedChangeKind::Key, dbid, keys[i].relid, xid, own != nullptr && own[i] ? current_writer : 0,
				   keys[i].key.data, keys[i].key.len);
	} else {
		/* The keys' tables, each once while few; past that every table at once. */
		Oid tables[MAX_FLUSHED_TABLES];
		int ntables = 0;
		bool every_table = false;
		for (int i = 0; i < nkeys && !every_table; i++) {
			bool known = false;
			for (int t = 0; t < ntables && !known; t++)
				known = tables[t] == keys[i].relid;
			if (known)
				continue;
			if (ntables == MAX_FLUSHED_TABLES)
				every_table = true;
			else
				tables[ntables++] = keys[i].relid;
		}
		if (every_table)
			append(LoggedChangeKind::Definition, dbid, InvalidOid, xid, 0, nullptr, 0);
		else
			for (int t = 0; t < ntables; t++)
				append(LoggedChangeKind::Table, dbid, tables[t], xid, 0, nullptr, 0);
	}
	LWLockRelease(state->lock);
	wake_readers();
}

void tracking_log_unlogged(void)
{
	pg_memory_barrier();
	if (state == nullptr || pg_atomic_read_u32(&state->trackers) == 0)
		return;
	LWLockAcquire(state->lock, LW_EXCLUSIVE);
	append(LoggedChangeKind::Unlogged, InvalidOid, InvalidOid, InvalidTransactionId, 0, nullptr, 0);
	LWLockRelease(state->lock);
	wake_readers();
}

void tracking_log_resumed(void)
{
	if (state == nullptr)
		return;
	LWLockAcquire(state->lock, LW_EXCLUSIVE);
	append(LoggedChangeKind::Resumed, InvalidOid, InvalidOid, InvalidTransactionId, 0, nullptr, 0);
	LWLockRelease(state->lock);
	wake_readers();
}

void tracking_log_relay(uint64 client, const char *message, uint32 length)
{
	if (record_length(length) > MAX_TRANSACTION_BYTES)
		elog(ERROR, "local_cache: a tracking relay of %u bytes is too long", length);
	LWLockAcquire(state->lock, LW_EXCLUSIVE);
	append(LoggedChangeKind::Relay, InvalidOid, InvalidOid, InvalidTransactionId, client, message, length);
	LWLockRelease(state->lock);
	wake_readers();
}

uint64 tracking_log_attach_reader(int slot)
{
	Assert(slot >= 0 && slot < TRACKING_LOG_MAX_READERS);
	pg_atomic_write_u32(&state->sleeping[slot], 0);
	pg_atomic_write_u32(&state->reader_pid[slot], uint32(MyProcPid));
	on_shmem_exit(pg_entry<reader_exited>, Int32GetDatum(slot));
	return pg_atomic_read_u64(&state->head);
}

bool tracking_log_sleeping(int slot, uint64 position)
{
	pg_atomic_write_u32(&state->sleeping[slot], 1);
	pg_memory_barrier();
	return pg_atomic_read_u64(&state->head) != position;
}

void tracking_log_awake(int slot)
{
	pg_atomic_write_u32(&state->sleeping[slot], 0);
}

uint64 tracking_log_head(void)
{
	return pg_atomic_read_u64(&state->head);
}

size_t tracking_log_copy(uint64 *position, char *buffer, size_t capacity, bool *lapped)
{
	*lapped = false;
	size_t copied = 0;
	LWLockAcquire(state->lock, LW_SHARED);
	uint64 head = pg_atomic_read_u64(&state->head);
	uint64 at = *position;
	if (at < state->tail) {
		*lapped = true;
		at = state->tail;
	}
	while (at < head) {
		uint64 offset = at % LOG_BYTES;
		if (LOG_BYTES - offset < sizeof(RecordHeader)) {
			at += LOG_BYTES - offset;
			continue;
		}
		RecordHeader header;
		memcpy(&header, state->data + offset, sizeof(header));
		if (header.kind != KIND_PAD) {
			if (copied + header.length > capacity)
				break;
			memcpy(buffer + copied, state->data + offset, header.length);
			copied += header.length;
		}
		at += header.length;
	}
	LWLockRelease(state->lock);
	*position = at;
	return copied;
}

bool tracking_log_next(const char *buffer, size_t length, size_t *offset, LoggedChange *out)
{
	if (*offset + sizeof(RecordHeader) > length)
		return false;
	RecordHeader header;
	memcpy(&header, buffer + *offset, sizeof(header));
	out->kind = LoggedChangeKind(header.kind);
	out->dbid = header.dbid;
	out->relid = header.relid;
	out->xid = header.xid;
	out->client = header.client;
	out->bytes = KeyBytes{buffer + *offset + sizeof(header), header.nbytes};
	*offset += header.length;
	return true;
}

} // namespace local_cache
