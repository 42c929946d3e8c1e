/*
 * boundary.h — the one crossing point between C++ and PostgreSQL's error handling.
 *
 * PostgreSQL reports errors with longjmp, which skips C++ destructors; C++ exceptions
 * must never unwind into PostgreSQL frames. Every function PostgreSQL calls (V1 SQL
 * functions, callbacks, hooks, worker entry points) is registered as `pg_entry<f>` or
 * defined by one of the macros below, which run it through `cxx_boundary`: a C++ exception
 * becomes an ereport(ERROR) raised after the handler has finished, so no exception object
 * is live when the longjmp happens. Frames that an ereport(ERROR) may unwind hold only
 * trivially destructible objects.
 */
#pragma once

#include "extension/pg.h"

extern "C" {
#include "access/xact.h"
#include "utils/resowner.h"
}

#include <exception>
#include <stdexcept>

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

/*
 * The named wrapper of every function PostgreSQL calls: `pg_entry<impl>` is a function with
 * impl's signature that runs impl through cxx_boundary. Registrations name it visibly
 * (`planner_hook = pg_entry<plan_query>;`, `routine->BeginForeignScan = pg_entry<begin_scan>;`,
 * `RegisterXactCallback(pg_entry<xact_event>, NULL);`), and tools/check_tree.py's `boundary`
 * check fails on a registration that names anything else. impl is written as if no C++
 * exception existed; its frame follows the longjmp rule like any other.
 */
namespace detail {
template <typename Function, Function impl> struct PgEntry;
template <typename Result, typename... Args, Result (*impl)(Args...)> struct PgEntry<Result (*)(Args...), impl> {
	static Result call(Args... args)
	{
		return cxx_boundary([&]() -> Result { return impl(args...); });
	}
};
} // namespace detail

template <auto impl> inline constexpr auto pg_entry = &detail::PgEntry<decltype(impl), impl>::call;

/* A test's way into the boundary (local_cache.debug_throw_at): throws a C++ exception when the
 * setting names `point`, so a test can show what a caller of that entry point sees. */
void throw_point(const char *point);

} // namespace local_cache

/*
 * The functions PostgreSQL finds by name, defined as a call of pg_entry<impl> with C linkage:
 * SQL-callable functions (V1, trigger functions and FDW handlers included), background worker
 * mains (bgw_function_name), and _PG_init. The only places PG_FUNCTION_INFO_V1 is written.
 */
#define LOCAL_CACHE_V1_FUNCTION(name, impl)                                                            \
	extern "C" {                                                                                   \
	PG_FUNCTION_INFO_V1(name);                                                                     \
	}                                                                                              \
	extern "C" Datum name(PG_FUNCTION_ARGS)                                                        \
	{                                                                                              \
		return local_cache::pg_entry<impl>(fcinfo);                                                \
	}
#define LOCAL_CACHE_WORKER_MAIN(name, impl)                                                            \
	extern "C" PGDLLEXPORT void name(Datum main_arg);                                              \
	void name(Datum main_arg)                                                                      \
	{                                                                                              \
		local_cache::pg_entry<impl>(main_arg);                                                     \
	}
#define LOCAL_CACHE_MODULE_INIT(impl)                                                                  \
	extern "C" PGDLLEXPORT void _PG_init(void);                                                    \
	void _PG_init(void)                                                                            \
	{                                                                                              \
		local_cache::pg_entry<impl>();                                                             \
	}

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
