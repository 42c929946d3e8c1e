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

#include "pg.h"

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
