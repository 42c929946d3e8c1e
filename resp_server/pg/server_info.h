/*
 * server_info.h — ServerInfo (commands/data_source.h) on PostgreSQL: what INFO and CONFIG GET
 * report (the cache's and every worker's counters, the settings, a standby's primary), and
 * whose activity a role may see (pg_read_all_stats, role membership) for CLIENT LIST, INFO
 * replication and SLOWLOG. One per worker.
 */
#pragma once

#include "resp_server/commands/data_source.h"

#include <cstdint>

namespace local_cache::resp {

class PgServerInfo final : public ServerInfo {
public:
	PgServerInfo();

	bool sees_activity_of(const Session &session, uint64_t role) override;
	void fill_info(InfoStats &stats) override;
};

} // namespace local_cache::resp
