/*
 * transaction.h — how the RESP workers call PostgreSQL: a short transaction of their own with
 * a fresh snapshot (so a reply never shows a row older than a COMMIT acknowledged before the
 * request arrived), inside run_or_abort_transaction: a PostgreSQL error aborts it and comes
 * back as a PgError, never a worker exit. The few calls a command makes outside a transaction
 * (the hit path, the results' memory) go through outside_transaction, the same boundary
 * without one. The body is noexcept and holds only trivially destructible objects (an error
 * unwinds it with longjmp); it hands its results out through plain data, and no C++ code that
 * may throw (std::bad_alloc) runs inside it: that runs between two bodies. The first call of a
 * command shows the command in pg_stat_activity (activity.h).
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

template <typename Body> bool in_transaction(Body &&body, PgError *error)
{
	static_assert(noexcept(body()), "the body of in_transaction must be noexcept");
	if (activity_report_pending)
		report_activity();
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
