/*
 * writes.h — RowWriter (commands/data_source.h) on PostgreSQL: SET, MSET, DEL, HSET, HDEL and
 * HINCRBY as SQL statements on the key's table, run as the connection's role (writes.cpp says
 * how). One per worker and per write worker.
 */
#pragma once

#include "resp_server/commands/data_source.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace local_cache::resp {

class PgRowWriter final : public RowWriter {
public:
	PgRowWriter();

	LookupResult set_rows(const Session &session, const RowKey *keys, const std::string_view *values, size_t count,
						  const SetOptions &options, SetOutcome &outcome) override;
	LookupResult delete_rows(const Session &session, const RowKey *keys, size_t count, int64_t *deleted) override;
	LookupResult set_columns(const Session &session, const RowKey &key, const std::string_view *columns,
							 const std::string_view *values, size_t count, int64_t *added) override;
	LookupResult clear_columns(const Session &session, const RowKey &key, const std::string_view *columns,
							   size_t count, int64_t *removed) override;
	LookupResult increment_column(const Session &session, const RowKey &key, std::string_view column,
								  std::string_view increment, std::string *result) override;
	bool runs_only_builtin_code(std::string_view prefix) override;
	void share_commit(bool may_share) override;
	uint64_t shared_writes() override;
	bool commit_writes() override;
};

} // namespace local_cache::resp
