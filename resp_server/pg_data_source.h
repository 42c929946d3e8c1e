/*
 * pg_data_source.h — the RESP commands' DataSource, implemented on PostgreSQL: rows through
 * the shared lookup/fill path, privileges, passwords, counters. Used by the RESP workers.
 */
#pragma once

#include "data_source.h"

#include <cstdint>

namespace local_cache::resp {

/* Counters the worker keeps for INFO. */
struct WorkerStats {
	uint64_t connected_clients = 0;
	uint64_t total_connections_received = 0;
	uint64_t total_commands_processed = 0;
	uint64_t rejected_connections = 0;
	int64_t started_at_ms = 0;
};

class PgDataSource final : public DataSource {
public:
	explicit PgDataSource(const WorkerStats &stats);

	LookupResult get_rows(const Session &session, const RowKey *keys, size_t count,
						  ValueSink &sink) override;
	LookupResult get_columns(const Session &session, const RowKey &key,
							 const std::string_view *columns, size_t count, ValueSink &sink) override;
	LookupResult get_all_columns(const Session &session, const RowKey &key, FieldSink &sink) override;
	std::optional<AuthenticatedRole> authenticate(std::optional<std::string_view> user,
												  std::string_view password) override;
	std::optional<AuthenticatedRole> default_role() override;
	uint64_t count_keys(const Session &session) override;
	void fill_info(InfoStats &stats) override;

	/* Settings changed (SIGHUP): look the default role up again. */
	void settings_changed();

private:
	const WorkerStats &stats_;
};

} // namespace local_cache::resp
