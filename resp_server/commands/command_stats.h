/*
 * command_stats.h — what INFO commandstats, errorstats and latencystats, LATENCY HISTOGRAM and
 * the SQL views local_cache.resp_commands and resp_errors report: per role and command, the
 * calls, their microseconds, the requests refused before they ran (rejected) and those that ran
 * and answered an error (failed), the error replies by their code, and a latency histogram.
 * No PostgreSQL header.
 *
 * Each process that runs commands (a RESP worker, a write worker) counts its own requests in a
 * CommandStatsRecorder: no lock, no shared-memory write, and no allocation once it has seen the
 * (role, command) pair. At its loop's idle points, at most once a millisecond (worker.cpp), it
 * folds what it counted into the CommandStatsStore every process shares
 * (resp_server/pg/command_stats_table.h on PostgreSQL; the tests fake it), which INFO and the SQL
 * views read: a worker's requests show there within 10 ms, and at once in its
 * own INFO, which folds first.
 *
 * What counts, as Redis 7.2 counts it: a request that runs counts one call (and its
 * microseconds) in its command's entry, and a failed call if it answered an error; EXEC counts
 * as one call and each command it ran as one call of its own; a request queued by MULTI counts
 * when EXEC runs it, one that waits for a lock or a write worker when it is answered. A request
 * refused before it ran (wrong number of arguments, NOAUTH, not allowed in RESP2's subscribed
 * mode or inside MULTI, a cluster-mode redirection -MOVED) counts a rejected call of the command
 * it named; one naming no command
 * (unknown command or subcommand) counts only in errorstats. Every error reply counts in
 * errorstats under its code, the reply's first word (ERR for a reply without one of the codes
 * this server answers).
 */
#pragma once

#include "resp_server/commands/data_source.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace local_cache::resp {

struct CommandSpec;

/*
 * A latency histogram in microseconds, log-linear as HdrHistogram's: exact from 0 to 8 µs, then
 * 8 buckets per power of two up to 2^32 µs (71 minutes; anything longer counts in the last
 * bucket). A bucket holds (lower, upper], so every power of two is a bucket's upper bound and
 * LATENCY HISTOGRAM's power-of-two buckets are sums of these. A percentile is reported as its
 * bucket's upper bound: at most 12.5% above the true value. Plain data (shared memory holds it).
 */
struct LatencyHistogram {
	static constexpr size_t kExact = 9; /* 0 .. 8 µs */
	static constexpr size_t kPerOctave = 8;
	static constexpr unsigned kFirstOctave = 3; /* (8, 16] */
	static constexpr unsigned kLastOctave = 31; /* (2^31, 2^32] */
	static constexpr size_t kBuckets = kExact + (kLastOctave - kFirstOctave + 1) * kPerOctave;
	/* The powers of two LATENCY HISTOGRAM reports: 1 µs .. 2^32 µs. */
	static constexpr size_t kPowers = kLastOctave + 2;

	uint64_t counts[kBuckets];

	static size_t bucket_of(int64_t usec);
	/* The largest duration the bucket holds. */
	static uint64_t upper_bound(size_t bucket);
	void add(int64_t usec) { counts[bucket_of(usec)]++; }
	uint64_t total() const;
	/* The value at `percentile` (0 < percentile <= 100) as HdrHistogram answers it: the upper
	 * bound of the bucket where the count of values up to it reaches percentile% of all (at
	 * least one value); 0 when empty. */
	uint64_t value_at_percentile(double percentile) const;
	/* LATENCY HISTOGRAM: out[i] counts the values of at most 2^i µs, i < kPowers. */
	void cumulative_powers_of_two(uint64_t (&out)[kPowers]) const;
};

/* The error codes errorstats counts, in the order Redis lists them (sorted). Every error this
 * server answers starts with one of them. */
constexpr std::string_view kErrorCodes[] = {"BUSY",   "CLUSTERDOWN", "ERR",     "EXECABORT", "MOVED",
											"NOAUTH", "NOPERM",      "NOPROTO", "READONLY",  "WRONGPASS"};
constexpr size_t kErrorCodeCount = sizeof(kErrorCodes) / sizeof(kErrorCodes[0]);
/* ERR's index: what a reply without one of the codes counts as. */
constexpr size_t kErrCode = 2;
static_assert(kErrorCodes[kErrCode] == "ERR");
/* The code of an error reply ("-NOAUTH Authentication required.\r\n": NOAUTH): its first word,
 * at most 32 bytes, as Redis takes it; ERR when that is none of kErrorCodes. */
size_t error_code_of(std::string_view reply);

/* The counters of one (role, command) pair, or sums of them. Plain data. */
struct CommandCounters {
	uint64_t calls;
	uint64_t usec;
	uint64_t rejected_calls;
	uint64_t failed_calls;
	uint64_t errors[kErrorCodeCount]; /* error replies by code, rejected and failed ones alike */
	LatencyHistogram latency;         /* of the calls */

	void add(const CommandCounters &other);
	/* Whether INFO commandstats lists it (as Redis: anything called, rejected or failed). */
	bool listed() const { return calls != 0 || rejected_calls != 0 || failed_calls != 0; }
};

/* Command numbers: 1 .. command_count() in table order, each container before its subcommands;
 * 0 for requests that name no command. The same in every process of one build, so shared memory
 * and the SQL views can name commands by number. */
size_t command_count();
uint16_t command_number(const CommandSpec &command);
const CommandSpec *command_by_number(size_t number); /* nullptr for 0 or beyond command_count() */

/* What one process counted since it last folded (see the top of the file). */
class CommandStatsRecorder {
public:
	/* The role of requests made before a login (and, in the shared table, of pairs that found it
	 * full). Role ids are PostgreSQL role Oids, never 0. */
	static constexpr uint64_t kNoRole = 0;

	struct Entry {
		uint64_t role;
		uint16_t command; /* its number */
		CommandCounters counters;
	};

	/* A request of `role` ran `command` for `usec` microseconds and answered `reply` (only its
	 * first bytes are read: an error counts as a failed call). Never throws: when a new pair
	 * finds no memory, the request is not counted. */
	void executed(const CommandSpec &command, uint64_t role, int64_t usec, std::string_view reply) noexcept
	{
		bool failed = !reply.empty() && reply[0] == '-';
		executed(command, role, usec, failed, failed ? error_code_of(reply) : 0);
	}
	/* The same, told whether it failed and with which code (an index of kErrorCodes). */
	void executed(const CommandSpec &command, uint64_t role, int64_t usec, bool failed, size_t error_code) noexcept
	{
		/* A pipeline repeats one command of one role: the last pair's entry, with no lookup. */
		if (has_last_ && last_.role == role && last_.command == &command)
			count_call(entries_[last_entry_].counters, usec, failed, error_code);
		else
			executed_by_lookup(command, role, usec, failed, error_code);
	}
	/* A request of `role` naming `command` (nullptr: no command) was refused with `reply`. */
	void rejected(const CommandSpec *command, uint64_t role, std::string_view reply) noexcept;

	/* The pairs counted since clear_pending(), each once. */
	bool has_pending() const { return !pending_.empty(); }
	size_t pending_count() const { return pending_.size(); }
	const Entry &pending(size_t i) const { return entries_[pending_[i]]; }
	/* After a fold: counts from zero again. Keeps the pairs seen (no allocation next time), up to
	 * kKeptPairs of them. */
	void clear_pending();

	static constexpr size_t kKeptPairs = 256;

private:
	Entry *entry_of(const CommandSpec *command, uint64_t role);
	void executed_by_lookup(const CommandSpec &command, uint64_t role, int64_t usec, bool failed,
							size_t error_code) noexcept;
	static void count_call(CommandCounters &c, int64_t usec, bool failed, size_t error_code)
	{
		if (usec < 0) /* the clock went back */
			usec = 0;
		c.calls++;
		c.usec += uint64_t(usec);
		c.latency.add(usec);
		if (failed) {
			c.failed_calls++;
			c.errors[error_code < kErrorCodeCount ? error_code : kErrCode]++;
		}
	}

	struct Key {
		uint64_t role;
		const CommandSpec *command;
		bool operator==(const Key &other) const { return role == other.role && command == other.command; }
	};
	struct KeyHash {
		size_t operator()(const Key &key) const
		{
			return std::hash<uint64_t>()(key.role * 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(key.command));
		}
	};
	std::vector<Entry> entries_;
	std::unordered_map<Key, uint32_t, KeyHash> index_;
	std::vector<uint32_t> pending_;  /* entries_ with counts, in the order first counted */
	std::vector<bool> is_pending_;   /* by entry */
	/* The last pair counted: a pipeline repeats one command of one role. */
	Key last_{0, nullptr};
	uint32_t last_entry_ = 0;
	bool has_last_ = false;
};

/*
 * The statistics every process shares (resp_server/pg/command_stats_table.h). Calls come from the
 * process's loop thread; failures are not reported (statistics are lost, requests never fail).
 */
class CommandStatsStore {
public:
	/* Adds what `recorder` counted and empties it (clear_pending). */
	virtual void fold(CommandStatsRecorder &recorder) = 0;
	/* Adds into totals[n] (totals has command_count() + 1 elements) the counters of command
	 * number n of role `role`, or of every role and of the requests made before a login when
	 * `role` is empty. */
	virtual void read(std::optional<uint64_t> role, std::vector<CommandCounters> &totals) = 0;
	/* CONFIG RESETSTAT forgets every role's statistics: whether the session's role may (what
	 * SELECT local_cache.resp_reset_stats() needs, EXECUTE on it). */
	virtual bool may_reset(const Session &session) = 0;
	virtual void reset() = 0;

protected:
	~CommandStatsStore() = default;
};

/* The INFO sections, from the sums `read` gave, as Redis 7.2 writes them:
 *   cmdstat_get:calls=3,usec=12,usec_per_call=4.00,rejected_calls=0,failed_calls=1
 *   errorstat_ERR:count=2
 *   latency_percentiles_usec_get:p50=4.000,p99=9.000,p99.9=9.000
 * (subcommands named as client|list). Each appends its lines, without the section's title. */
void append_commandstats(std::string &out, const std::vector<CommandCounters> &totals);
void append_errorstats(std::string &out, const std::vector<CommandCounters> &totals);
void append_latencystats(std::string &out, const std::vector<CommandCounters> &totals);

} // namespace local_cache::resp
