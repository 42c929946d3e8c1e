/*
 * monitor.h — what SLOWLOG, LATENCY and INFO's command statistics report about the requests one
 * worker ran: the slow log (the newest local_cache.resp_slowlog_max_len requests that took at
 * least local_cache.resp_slowlog_log_slower_than microseconds, arguments cut as Redis cuts them),
 * the latency monitor's "command" event (the latest and the longest of those requests), and the
 * per-(role, command) counters and latency histograms on their way to the shared statistics
 * (command_stats.h: INFO commandstats, errorstats, latencystats and LATENCY HISTOGRAM read those,
 * summed over every worker). CommandProcessor::execute feeds it; the SLOWLOG, LATENCY and INFO
 * handlers (server_commands.cpp) read it. The slow log and the events are each worker's own, as
 * its connections are. No PostgreSQL header.
 *
 * Like the slow log's entries, the latency events say what a role does (which commands, how
 * often, when): a role sees its own, members of pg_read_all_stats every role's. So they are kept
 * twice: for every role together, and for each role apart (requests before a login only in the
 * first). Memory stays bounded: the roles kept apart are the kLatencyRoles that ran slow
 * requests most recently; a role that falls out loses its own events (every role's keeps its requests).
 */
#pragma once

#include "resp_server/commands/command_stats.h"
#include "resp_server/commands/data_source.h"
#include "resp_server/protocol/request_parser.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <string>
#include <vector>

namespace local_cache::resp {

struct CommandSpec;

struct SlowlogSettings {
	int64_t log_slower_than_us = 10000; /* < 0: log nothing; 0: every request */
	size_t max_length = 128;
};

/* One slow request, as SLOWLOG GET reports it. */
struct SlowlogEntry {
	uint64_t id = 0;
	int64_t timestamp_seconds = 0; /* when it started, Unix time */
	int64_t duration_us = 0;
	std::vector<std::string> arguments; /* cut: see CommandMonitor::kMaxArguments */
	std::string peer_address;
	std::string client_name;
	/* The role it ran as; none before authentication. Other roles' entries are shown only to
	 * those who may read every role's statistics (ServerInfo::sees_activity_of with kEveryRole). */
	std::optional<uint64_t> role_id;
};

/* LATENCY LATEST's row for the event "command". */
struct LatencyEvent {
	int64_t latest_seconds = 0;
	int64_t latest_ms = 0;
	int64_t max_ms = 0;
};

/* The latency events of one role's requests, or of every role's. */
struct LatencyRecord {
	std::optional<LatencyEvent> command_event;
};

class CommandMonitor {
public:
	/* Redis's limits on what an entry keeps (SLOWLOG_ENTRY_MAX_ARGC, SLOWLOG_ENTRY_MAX_STRING):
	 * past 32 arguments the 32nd says how many more there were; past 128 bytes an argument ends
	 * with how many more bytes it had. */
	static constexpr size_t kMaxArguments = 32;
	static constexpr size_t kMaxArgumentBytes = 128;
	/* The roles whose latency events are kept apart (see the top of the file). */
	static constexpr size_t kLatencyRoles = 64;

	void configure(const SlowlogSettings &settings);
	const SlowlogSettings &settings() const { return settings_; } /* CONFIG GET slowlog-* */

	/* A request ran `command` (not queued, not to be run again): it started at `started_us`
	 * (Unix time) and took `duration_us`. The arguments of AUTH and HELLO are never kept. */
	void record(const CommandSpec &command, const Request &request, const Session &session,
				int64_t started_us, int64_t duration_us);

	const std::deque<SlowlogEntry> &slowlog() const { return slowlog_; } /* newest first */
	void reset_slowlog() { slowlog_.clear(); }

	const LatencyRecord &every_role_latency() const { return every_role_; }
	/* nullptr: the role ran nothing here, or fell out of the roles kept apart. */
	const LatencyRecord *role_latency(uint64_t role) const;
	/* LATENCY RESET: every role's "command" event (the histograms stay, as in Redis). */
	void reset_latency();

	/* This process's counts of INFO's command statistics, and the store they are folded into
	 * (nullptr: none, INFO and LATENCY HISTOGRAM show no command statistics). */
	CommandStatsRecorder &stats() { return stats_; }
	const CommandStatsRecorder &stats() const { return stats_; }
	void set_stats_store(CommandStatsStore *store) { stats_store_ = store; }
	CommandStatsStore *stats_store() const { return stats_store_; }
	/* What this process counted, folded into the store now (INFO folds before it reads). */
	void fold_stats()
	{
		if (stats_store_ != nullptr && stats_.has_pending())
			stats_store_->fold(stats_);
	}

private:
	struct RoleLatency {
		uint64_t role;
		LatencyRecord latency;
	};

	/* The role's record, made the most recent; a new role takes the least recent one's place
	 * past kLatencyRoles. */
	LatencyRecord &latency_of(uint64_t role);
	void log_slow(const CommandSpec &command, const Request &request, const Session &session,
				  int64_t started_us, int64_t duration_us);

	SlowlogSettings settings_;
	std::deque<SlowlogEntry> slowlog_;
	uint64_t next_id_ = 0;
	LatencyRecord every_role_;
	std::list<RoleLatency> roles_; /* most recent first; list nodes never move */
	CommandStatsRecorder stats_;
	CommandStatsStore *stats_store_ = nullptr;
};

/*
 * The command line pg_stat_activity shows for a request (resp_server/pg/activity.h): its
 * arguments separated by spaces, cut as the slow log cuts them, an argument with a space, a
 * quote or a byte outside printable ASCII quoted with Redis's escapes ("a b", "\xff"); AUTH and
 * HELLO only by their name. Writes at most `size` - 1 bytes and a NUL into `out`; returns the
 * length. Allocates nothing.
 */
size_t format_activity(const CommandSpec &command, const Request &request, char *out, size_t size);

} // namespace local_cache::resp
