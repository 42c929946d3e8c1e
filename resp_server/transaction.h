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

template <typename Body> bool in_transaction(Body &&body, PgError *error)
{
	static_assert(noexcept(body()), "the body of in_transaction must be noexcept");
	return run_or_abort_transaction([&]() noexcept {
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		body();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}, error);
}

} // namespace local_cache::resp
