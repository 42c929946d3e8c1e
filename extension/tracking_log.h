/*
 * tracking_log.h — the log of committed changes that the RESP workers' CLIENT TRACKING reads:
 * which keys and tables of cached tables changed, written once the change is visible.
 *
 * Writers: a committing transaction at XACT_EVENT_COMMIT (after it became visible), only while
 * some connection tracks; a PREPARE and a hot standby's replay of an INVALIDATE record always,
 * marked with the transaction's xid: that change becomes visible later (COMMIT PREPARED, the
 * replay of the commit record), so a reader holds such a record until the xid has ended and
 * drops it if it aborted (docs/RESP.md, "Client-side caching"). The RESP workers also relay
 * invalidations for a connection on another worker through it.
 *
 * Readers: each RESP worker, from its own position. A reader the writers lapped has lost
 * records and must treat every key as changed. Writers wake a reader that sleeps with SIGUSR2;
 * a busy one looks by itself before it sleeps (tracking_log_sleeping).
 */
#pragma once

#include "extension/pg.h"

#include "extension/wal.h"

namespace local_cache {

/* A reader's copy buffer holds at least this much: the longest record, so every copy advances. */
constexpr size_t TRACKING_LOG_COPY_BYTES = 1024 * 1024;

/* The most readers (RESP workers) the log wakes; worker numbers are their slots. */
constexpr int TRACKING_LOG_MAX_READERS = 64;

enum class LoggedChangeKind : uint8 {
	Key = 1,        /* one key of one table changed */
	Table = 2,      /* every row of the table may have changed (TRUNCATE, too many keys) */
	Definition = 3, /* the table's definition or capture changed (ALTER, enable(), disable()):
	                 * also keys of other prefixes may name rows now */
	Relay = 4,      /* a worker's message for connection `client` on another worker */
	Unlogged = 5,   /* a standby replayed STOP: commits change tables without records from now
	                 * until START, so nothing tracked can be kept */
	Resumed = 6,    /* a standby replayed START: every key may have changed, and a transaction
	                 * prepared before it may commit later without a record */
};

/* One record, as a reader sees it. `bytes` point into the reader's copy. */
struct LoggedChange {
	LoggedChangeKind kind;
	Oid dbid;
	Oid relid;
	TransactionId xid; /* valid: visible only once this transaction has committed */
	uint64 client;     /* Key: the RESP connection whose command wrote the row itself (0: none: SQL,
	                    * or a side effect of the command: a cascade, a trigger); Relay: the target */
	KeyBytes bytes;    /* Key: the key's bytes; Relay: the message */
};

void tracking_log_request_shmem(void);
void tracking_log_startup_shmem(void);

/* Connections tracking, over every worker; committing transactions log nothing while none does. */
void tracking_log_count_trackers(int delta);

/* For the RESP workers: the connection the transaction being run writes for (0: none), so that
 * a NOLOOP connection is not told of the keys its commands wrote (`own` below). Returns the one
 * it replaces. */
uint64 tracking_log_set_writer(uint64 client);

/*
 * What a transaction changed (the same lists it logs to WAL): at commit with xid invalid, at
 * PREPARE and by the standby's redo with the transaction's xid. `definition_changed[i]` tells
 * whether flushed[i] is a definition change; `own[i]` (own may be null: none) whether keys[i]
 * was written by the writer's command itself (invalidation_own_write), logged as the writer's.
 * Never raises an error (it runs after the commit): a transaction with more than the log can
 * hold logs its tables as flushed instead of its keys.
 */
void tracking_log_changes(Oid dbid, const Oid *flushed, const bool *definition_changed, int nflushed,
						  const WalKey *keys, const bool *own, int nkeys, TransactionId xid);

/* A standby's redo of STOP and of START (wal.cpp). Resumed is written even while nobody
 * tracks: a connection that tracks later must still hear of the prepared transactions. */
void tracking_log_unlogged(void);
void tracking_log_resumed(void);

/* A relay to connection `client`: `message` is the reader's own encoding. */
void tracking_log_relay(uint64 client, const char *message, uint32 length);

/* ---- readers ---- */

/* Registers the calling process as reader `slot` (woken by SIGUSR2) until it exits; returns
 * the position it starts reading at: the next record to be written. */
uint64 tracking_log_attach_reader(int slot);
/* Before the reader waits for events: from now on writers signal it. Returns whether records
 * were written past `position` (then read them instead of waiting). */
bool tracking_log_sleeping(int slot, uint64 position);
/* The reader is busy again: writers need not signal it (it looks before it sleeps). */
void tracking_log_awake(int slot);
/* The position of the next record to be written. */
uint64 tracking_log_head(void);

/*
 * Copies whole records from *position on into buffer (at most capacity bytes, at least
 * TRACKING_LOG_COPY_BYTES) and advances
 * *position past them. Returns the bytes copied; sets *lapped when records at *position were
 * overwritten before they were read (*position then moves to the oldest record kept).
 */
size_t tracking_log_copy(uint64 *position, char *buffer, size_t capacity, bool *lapped);
/* Reads the record at *offset of a copy, advancing the offset; false at the copy's end. */
bool tracking_log_next(const char *buffer, size_t length, size_t *offset, LoggedChange *out);

} // namespace local_cache
