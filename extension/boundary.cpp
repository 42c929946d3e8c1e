/*
 * boundary.cpp — the PostgreSQL side of cxx_boundary (boundary.h): the error a C++
 * exception becomes, raised after the handler that caught it has finished; the tests' throw point.
 */
#include "extension/boundary.h"
#include "extension/settings.h"

#include <string>

void local_cache::report_cxx_exception(const char *what)
{
	ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("local_cache: %s", what)));
}

void local_cache::take_error(MemoryContext context, PgError *error)
{
	MemoryContextSwitchTo(context);
	ErrorData *data = CopyErrorData();
	FlushErrorState();
	error->sqlerrcode = data->sqlerrcode;
	strlcpy(error->message, data->message ? data->message : "unknown error", sizeof(error->message));
	FreeErrorData(data);
}

void local_cache::throw_point(const char *point)
{
	if (local_cache_debug_throw_at != nullptr && strcmp(local_cache_debug_throw_at, point) == 0)
		throw std::runtime_error(std::string("exception thrown at ") + point + " (local_cache.debug_throw_at)");
}
