/*
 * transaction.h — how the RESP workers call PostgreSQL: a short transaction of their own with
 * a fresh snapshot (so a reply never shows a row older than a COMMIT acknowledged before the
 * request arrived), inside run_or_abort_transaction: a PostgreSQL error aborts it and comes
 * back as a PgError, never a worker exit. The body is noexcept and holds only trivially
 * destructible objects (an error unwinds it with longjmp); it hands its results out through
 * plain data.
 */
#pragma once

#include "../extension/pg.h"

#include "../extension/boundary.h"

extern "C" {
#include "access/xact.h"
#include "utils/snapmgr.h"
}

namespace local_cache::resp {

/*
 * EXEC's batch (DataSource::begin_batch): while it is active, the bodies share one REPEATABLE
 * READ transaction, so they read from one snapshot; the first body starts it, end_batch()
 * commits it. An error aborts it: every later body of the batch fails with that error.
 */
struct Batch {
	bool active;
	bool started;
	bool failed;
	PgError error;
};
extern Batch batch;

template <typename Body> bool in_transaction(Body &&body, PgError *error)
{
	static_assert(noexcept(body()), "the body of in_transaction must be noexcept");
	if (!batch.active)
		return run_or_abort_transaction([&]() noexcept {
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();
			PushActiveSnapshot(GetTransactionSnapshot());
			body();
			PopActiveSnapshot();
			CommitTransactionCommand();
		}, error);
	if (batch.failed) {
		*error = batch.error;
		return false;
	}
	bool ok = run_or_abort_transaction([&]() noexcept {
		if (!batch.started) {
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();
			XactIsoLevel = XACT_REPEATABLE_READ;
			PushActiveSnapshot(GetTransactionSnapshot());
			batch.started = true;
		}
		body();
	}, error);
	if (!ok)
		batch = Batch{true, false, true, *error};
	return ok;
}

/* Ends the batch: commits its transaction, if it started one and no error aborted it. */
void end_batch();

} // namespace local_cache::resp
