/*
 * monitor.h — what SLOWLOG and LATENCY report about the requests one worker ran: the slow log
 * (the newest local_cache.resp_slowlog_max_len requests that took at least
 * local_cache.resp_slowlog_log_slower_than microseconds, arguments cut as Redis cuts them), the
 * latency monitor's "command" event (the latest and the longest of those requests) and a latency
 * histogram per command. CommandProcessor::execute feeds it; the SLOWLOG and LATENCY handlers
 * (server_commands.cpp) read it. Each worker keeps its own, as each keeps its own connections. No
 * PostgreSQL header.
 *
 * Like the slow log's entries, the latency data says what a role does (which commands, how
 * often, when): a role sees its own, members of pg_read_all_stats every role's. So it is kept
 * twice: for every role together, and for each role apart (requests before a login only in the
 * first). Memory stays bounded: the roles kept apart are the kLatencyRoles that ran requests
 * most recently; a role that falls out loses its own data (every role's keeps its requests), and
 * a record holds at most one histogram per command of the table.
 */
#pragma once

#include "resp_server/commands/data_source.h"
#include "resp_server/protocol/request_parser.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
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

/* Histogram bucket i counts requests of at most 2^i microseconds (the last: all longer). */
constexpr size_t kLatencyBuckets = 36;

struct CommandHistogram {
	uint64_t calls = 0;
	std::array<uint64_t, kLatencyBuckets> counts{};
};

/* LATENCY LATEST's row for the event "command". */
struct LatencyEvent {
	int64_t latest_seconds = 0;
	int64_t latest_ms = 0;
	int64_t max_ms = 0;
};

/* The latency data of one role's requests, or of every role's. */
struct LatencyRecord {
	std::unordered_map<const CommandSpec *, CommandHistogram> histograms;
	std::optional<LatencyEvent> command_event;

	/* nullptr: the command never ran here. */
	const CommandHistogram *histogram(const CommandSpec &command) const;
};

class CommandMonitor {
public:
	/* Redis's limits on what an entry keeps (SLOWLOG_ENTRY_MAX_ARGC, SLOWLOG_ENTRY_MAX_STRING):
	 * past 32 arguments the 32nd says how many more there were; past 128 bytes an argument ends
	 * with how many more bytes it had. */
	static constexpr size_t kMaxArguments = 32;
	static constexpr size_t kMaxArgumentBytes = 128;
	static constexpr size_t kBuckets = kLatencyBuckets;
	/* The roles whose latency data is kept apart (see the top of the file). */
	static constexpr size_t kLatencyRoles = 64;
	using Histogram = CommandHistogram;

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
	/* The last request's command, role and histograms: a pipeline repeats one command of one
	 * role (map and list nodes never move). Null last_command_: nothing cached. */
	const CommandSpec *last_command_ = nullptr;
	std::optional<uint64_t> last_role_;
	Histogram *last_every_role_histogram_ = nullptr;
	LatencyRecord *last_role_latency_ = nullptr; /* null: no role */
	Histogram *last_role_histogram_ = nullptr;
};

} // namespace local_cache::resp
