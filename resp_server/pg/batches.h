/*
 * batches.h — Batches (commands/data_source.h) on PostgreSQL: EXEC's batch transaction
 * (transaction.h) begun and ended, WATCH's row versions and EXEC's checks of them
 * (batches.cpp says how). One per worker and per write worker.
 */
#pragma once

#include "resp_server/commands/data_source.h"

#include <string>

namespace local_cache::resp {

class PgBatches final : public Batches {
public:
	PgBatches();

	LookupResult row_version(const Session &session, const RowKey &key, std::string *version) override;
	void begin_batch() override;
	LookupResult end_batch(bool commit) override;
	LookupResult check_versions(const Session &session, const RowKey *keys, const std::string *versions,
								size_t count, WatchCheck when, bool *unchanged) override;
};

} // namespace local_cache::resp
