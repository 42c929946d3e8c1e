/*
 * row_reader.h — RowReader (commands/data_source.h) on PostgreSQL: the reads of the string,
 * hash and keyspace commands (GET/MGET/EXISTS rows, HGET/HMGET/HGETALL columns, SCAN and KEYS,
 * DBSIZE), through the shared lookup/fill path, as the connection's role; and which tables
 * read since the command layer last asked had their writes uncaptured (CLIENT TRACKING).
 * Its GET and MGET try the hit path first (hit_path.h). One per worker.
 */
#pragma once

#include "resp_server/commands/data_source.h"

#include <cstdint>
#include <string>
#include <vector>

namespace local_cache::resp {

class PgRowReader final : public RowReader {
public:
	PgRowReader();

	LookupResult get_rows(const Session &session, const RowKey *keys, size_t count, ValueSink &sink) override;
	LookupResult get_columns(const Session &session, const RowKey &key, const std::string_view *columns,
							 size_t count, ValueSink &sink) override;
	LookupResult get_all_columns(const Session &session, const RowKey &key, FieldSink &sink) override;
	LookupResult scan_keys(const Session &session, ScanPosition &position, size_t count,
						   std::string_view key_start, KeySink &sink) override;
	ScanCursorKey scan_cursor_key(const Session &session) override;
	uint64_t count_keys(const Session &session) override;
	void uncaptured_reads(std::vector<std::string> &prefixes, bool *every) override;
	void forget_uncaptured_reads() override;
};

} // namespace local_cache::resp
