/*
 * set_statements.h — the statements of SET and MSET (set_statements.cpp says how they are
 * written), in the command's transaction, connected to SPI as the connection's role (run_write).
 * Errors are ereport(ERROR)s.
 */
#pragma once

#include "extension/pg.h"

#include "resp_server/commands/data_source.h"

#include <string_view>

namespace local_cache::resp {

/* One SET: the row `key` becomes the JSON object `value` (NX, XX, GET: `options`; the old row's
 * JSON in *old_value when it is not nullptr). Returns whether it was written. */
bool set_one(const RowKey &key, std::string_view value, const SetOptions &options, char **old_value);

/* An MSET of rows of one table whose values name the same columns, in one statement; false,
 * having written nothing, when it needs a statement per row (set_one). */
bool set_in_one_statement(const RowKey *keys, const std::string_view *values, size_t count);

} // namespace local_cache::resp
