/*
 * transaction.h — how the RESP workers call PostgreSQL: a short transaction of their own with
 * a fresh snapshot (so a reply never shows a row older than a COMMIT acknowledged before the
 * request arrived), inside run_or_abort_transaction: a PostgreSQL error aborts it and comes
 * back as a PgError, never a worker exit. The few calls a command makes outside a transaction
 * (the hit path, the results' memory) go through outside_transaction, the same boundary
 * without one. The body is noexcept and holds only trivially destructible objects (an error
 * unwinds it with longjmp); it hands its results out through plain data, and no C++ code that
 * may throw (std::bad_alloc) runs inside it: that runs between two bodies. The first call of a
 * command shows the command in pg_stat_activity (activity.h). The writes of several commands
 * may share one transaction (WriteGroup).
 */
#pragma once

#include "extension/pg.h"

#include "extension/boundary.h"
#include "resp_server/pg/activity.h"

extern "C" {
#include "access/xact.h"
#include "storage/lwlock.h"
#include "utils/snapmgr.h"
}

namespace local_cache::resp {

/*
 * EXEC's batch (Batches::begin_batch): while it is active, the bodies share one REPEATABLE
 * READ transaction, so they read from one snapshot and their writes commit together; the
 * first body starts it, end_batch() commits or rolls it back. Each body runs in a subtransaction of it: an error (NOPERM on one table) fails
 * that command only, and the later ones still read from the same snapshot.
 */
struct Batch {
	bool active;
	bool started;
};
extern Batch batch;

/*
 * The write group: on a RESP worker's loop, the writes of consecutive commands (a connection's
 * pipeline, and the connections read in the same loop turn) share one READ COMMITTED
 * transaction, each command's in a subtransaction of its own with a snapshot of its own, as the
 * statements of a SQL transaction block with a SAVEPOINT each: an error rolls back that command
 * only. A transaction and its commit cost a RESP SET more than its row does (docs/OPERATIONS.md).
 * The commands' replies wait for the commit (clients/connection.cpp). Only writes the worker runs
 * itself join (RowWriter::runs_only_builtin_code: no code of a role's, nothing that can fail at
 * commit), of one role, and not of a connection with CLIENT TRACKING on (NOLOOP names one writer
 * per commit, tracking_log_set_writer). Any other transaction of the worker's (in_transaction),
 * and a command that is not such a write (RowWriter::share_commit), commits the group first, so
 * every read sees the writes before it; outside_transaction leaves it open (it reads only shared
 * memory, and every write's standby check calls it).
 * A write that waits for a row lock fails after 1 ms as without the group (lock_timeout,
 * session_runtime.h) and runs again later, so the rows the group holds make nobody wait much
 * longer than its loop turn. Worker-global state: one loop thread per process.
 */
struct WriteGroup {
	bool may_join; /* the running command's writes may join (RowWriter::share_commit) */
	bool joining;  /* the next in_transaction is a write of the group (join_write_group) */
	bool open;     /* a transaction holds the group's writes */
	int writes;    /* subtransactions in it */
	uint64 joined; /* writes that joined a group, in the worker's life */
	Oid role;
	bool commit_failed; /* a group's commit failed since PgRowWriter::commit_writes last said */
};
extern WriteGroup write_group;
/* Subtransactions per group: each write that gets a transaction id takes a slot of the
 * process's subtransaction cache (PGPROC_MAX_CACHED_SUBXIDS, 64), past which every snapshot of the
 * server is marked overflowed and slower to use. */
constexpr int kMaxGroupWrites = 32;

/* Before a write of `role`'s: it joins the group if its command may share its commit (outside
 * EXEC's batch), after the group's commit if the group is another role's or full. */
void join_write_group(Oid role);
/* Commits the group's transaction, if open; false if the commit failed, or if something else
 * aborted the transaction (logged either way). */
bool commit_write_group();

template <typename Body> bool run_in_write_group(Body &&body, PgError *error)
{
	/* An error outside the group's writes aborted its transaction: commit_write_group says so. */
	if (write_group.open && !IsTransactionOrTransactionBlock())
		(void) commit_write_group();
	if (!write_group.open) {
		if (!run_or_abort_transaction([]() noexcept { StartTransactionCommand(); }, error))
			return false;
		write_group.open = true;
	}
	write_group.writes++;
	write_group.joined++;
	return run_in_subtransaction([&]() noexcept {
		SetCurrentStatementStartTimestamp();
		/* The writes before this one are visible to it, as an earlier statement's to a later one
		 * of a READ COMMITTED transaction, and so are those committed since. */
		CommandCounterIncrement();
		PushActiveSnapshot(GetTransactionSnapshot());
		body();
		PopActiveSnapshot();
	}, error);
}

template <typename Body> bool in_transaction(Body &&body, PgError *error)
{
	static_assert(noexcept(body()), "the body of in_transaction must be noexcept");
	if (activity_report_pending)
		report_activity();
	bool joins = write_group.joining;
	write_group.joining = false;
	if (joins)
		return run_in_write_group(body, error);
	if (write_group.open)
		(void) commit_write_group();
	if (!batch.active)
		return run_or_abort_transaction([&]() noexcept {
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();
			PushActiveSnapshot(GetTransactionSnapshot());
			body();
			PopActiveSnapshot();
			CommitTransactionCommand();
		}, error);
	if (!batch.started) {
		if (!run_or_abort_transaction([]() noexcept {
				SetCurrentStatementStartTimestamp();
				StartTransactionCommand();
				XactIsoLevel = XACT_REPEATABLE_READ;
				PushActiveSnapshot(GetTransactionSnapshot());
			}, error))
			return false;
		batch.started = true;
	}
	return run_in_subtransaction([&]() noexcept {
		/* Earlier commands' writes are visible to this one, as to the next statement of a
		 * SQL transaction. */
		CommandCounterIncrement();
		UpdateActiveSnapshotCommandId();
		body();
	}, error);
}

/*
 * A command's PostgreSQL calls outside a transaction (the hit path, resetting the memory of a
 * call's results), in the error boundary: an ERROR (out of memory) comes back as a PgError,
 * never a worker exit. Nothing is rolled back, so `body` may only allocate memory and read what
 * is cached or in shared memory: no transaction, no heavyweight lock, no buffer pin. An error
 * under a shard lock cannot happen (only memcpy runs there), but if one did the lock is released
 * as AbortTransaction would (the worker holds none between commands). Same rules for `body`
 * as in_transaction's; usable inside EXEC's batch too, whose transaction it leaves as it was.
 */
template <typename Body> bool outside_transaction(Body &&body, PgError *error)
{
	static_assert(noexcept(body()), "the body of outside_transaction must be noexcept");
	MemoryContext context = CurrentMemoryContext;
	volatile bool failed = false;
	PG_TRY();
	{
		body();
	}
	PG_CATCH();
	{
		failed = true; /* the error stays on PostgreSQL's error stack until take_error */
	}
	PG_END_TRY();
	if (failed) {
		take_error(context, error);
		LWLockReleaseAll();
	}
	return !failed;
}

/* Ends the batch: commits its transaction (false and the error if the commit failed), or
 * with !commit rolls it back. */
bool end_batch(bool commit, PgError *error);

} // namespace local_cache::resp
