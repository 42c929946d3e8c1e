/*
 * boundary.cpp — the PostgreSQL side of cxx_boundary (boundary.h): the error a C++
 * exception becomes, raised after the handler that caught it has finished.
 */
#include "extension/boundary.h"

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
