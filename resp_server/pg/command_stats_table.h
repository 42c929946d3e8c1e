/*
 * command_stats_table.h — the RESP command statistics every process shares
 * (commands/command_stats.h says what they count): a fixed table in shared memory, created when
 * local_cache.resp_port is set, of local_cache.resp_stats_max (role, command) pairs; the
 * CommandStatsStore the RESP workers and write workers fold their counts into and INFO reads; the
 * SQL functions behind local_cache.resp_commands, resp_errors and resp_reset_stats(). Its locking
 * protocol is at the top of command_stats_table.cpp.
 */
#pragma once

#include "resp_server/commands/command_stats.h"

namespace local_cache {

/* Called by resp_shmem_request / resp_shmem_startup (shared_state.cpp). */
void command_stats_shmem_request(void);
void command_stats_shmem_startup(void);

} // namespace local_cache

namespace local_cache::resp {

/* The store on the shared table; one per process, stateless. */
class SharedCommandStats final : public CommandStatsStore {
public:
	void fold(CommandStatsRecorder &recorder) override;
	void read(std::optional<uint64_t> role, std::vector<CommandCounters> &totals) override;
	bool may_reset(const Session &session) override;
	void reset() override;
};

} // namespace local_cache::resp
