/*
 * boundary.h — the one crossing point between C++ and PostgreSQL's error handling.
 *
 * PostgreSQL reports errors with longjmp, which skips C++ destructors; C++ exceptions
 * must never unwind into PostgreSQL frames. Every function PostgreSQL calls (V1 SQL
 * functions, callbacks, hooks, worker entry points) runs its body through
 * `cxx_boundary`: a C++ exception becomes an ereport(ERROR) raised after the handler has
 * finished, so no exception object is live when the longjmp happens. Frames that an
 * ereport(ERROR) may unwind hold only trivially destructible objects.
 */
#pragma once

#include "extension/pg.h"

extern "C" {
#include "access/xact.h"
#include "utils/resowner.h"
}

#include <exception>

namespace local_cache {

[[noreturn]] void report_cxx_exception(const char *what);

template <typename Body>
inline auto cxx_boundary(Body &&body) -> decltype(body())
{
	char message[256];
	try {
		return body();
	} catch (const std::exception &e) {
		strlcpy(message, e.what(), sizeof(message));
	} catch (...) {
		strlcpy(message, "unknown C++ exception", sizeof(message));
	}
	report_cxx_exception(message);
}

} // namespace local_cache

namespace local_cache {

/* A PostgreSQL error caught by run_or_abort_transaction(), copied out of PostgreSQL's error state. */
struct PgError {
	int sqlerrcode;
	char message[512];
};

/*
 * The other direction, for code that calls PostgreSQL outside of a PostgreSQL-called frame
 * (the RESP workers' loop): runs `body`; an ereport(ERROR) inside it aborts the current
 * transaction, and the function returns false with a copy of the error. `body` must be a
 * noexcept callable holding only trivially destructible objects: the error unwinds it with
 * longjmp.
 */
/* Copies the error being handled into `error` and clears PostgreSQL's error state. */
void take_error(MemoryContext context, PgError *error);

template <typename Body> bool run_or_abort_transaction(Body &&body, PgError *error)
{
	static_assert(noexcept(body()), "the body of run_or_abort_transaction must be noexcept");
	MemoryContext context = CurrentMemoryContext;
	volatile bool ok = true;
	PG_TRY();
	{
		body();
	}
	PG_CATCH();
	{
		take_error(context, error);
		AbortCurrentTransaction();
		MemoryContextSwitchTo(context);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * The same inside a subtransaction of the current transaction, as PL/pgSQL runs a block with
 * an EXCEPTION clause: an error rolls back only what `body` did, and the transaction — with
 * its snapshot — goes on. Same rules for `body`.
 */
template <typename Body> bool run_in_subtransaction(Body &&body, PgError *error)
{
	static_assert(noexcept(body()), "the body of run_in_subtransaction must be noexcept");
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = true;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(context);
	PG_TRY();
	{
		body();
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		take_error(context, error);
		RollbackAndReleaseCurrentSubTransaction();
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;
	return ok;
}

} // namespace local_cache
