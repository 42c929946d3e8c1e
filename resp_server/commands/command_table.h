/*
 * command_table.h — the command table (one row per command, Redis module style: name, arity,
 * flags, key positions, docs, handler) and the CommandProcessor that runs one parsed request
 * against it. No PostgreSQL header: data comes through the interfaces of data_source.h.
 *
 * CommandProcessor::execute checks, in Redis's order: unknown command or subcommand, arity,
 * authentication (NOAUTH unless the row is flagged no_auth), RESP2's subscribed mode, then inside
 * MULTI queues the request (refusing unsupported writes at once, which makes EXEC fail as Redis
 * does), else runs the row's handler, timed for SLOWLOG, LATENCY and INFO's command statistics
 * (monitor.h, command_stats.h: refusals count there too) and shown to pg_stat_activity while it
 * runs (CommandActivity); a read that succeeded notes its keys for CLIENT TRACKING
 * (client_tracking.h). Each request
 * appends exactly one reply to the output buffer, except one that finds a table locked while
 * it may still wait (Session::retry_later): it appends nothing and is run again later; and
 * (P)SUBSCRIBE / (P)UNSUBSCRIBE, which answer once per channel, as Redis does. A C++
 * allocation that fails (std::bad_alloc) fails the request with -ERR and leaves nothing half
 * done (tests/allocation_failure_test.cpp).
 */
#pragma once

#include "resp_server/commands/client_tracking.h"
#include "resp_server/commands/cluster.h"
#include "resp_server/commands/data_source.h"
#include "resp_server/commands/monitor.h"
#include "resp_server/protocol/request_parser.h"
#include "resp_server/protocol/reply.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace local_cache::resp {

/* The version HELLO and INFO report: the Redis release whose protocol and commands we follow. */
constexpr std::string_view kRedisCompatibleVersion = "7.2.0";

/* Why the write commands that have no meaning for rows (INCR, EXPIRE, LPUSH ...) fail. */
constexpr std::string_view kUnsupportedWriteError =
	"not supported by local_cache: write rows with SET, MSET, DEL, HSET, HDEL, HINCRBY or SQL";

enum CommandFlag : uint32_t {
	CMD_WRITE = 1u << 0,    /* modifies data */
	CMD_READONLY = 1u << 1, /* reads keys */
	CMD_FAST = 1u << 2,     /* O(1) or O(log N) */
	CMD_NO_AUTH = 1u << 3,  /* allowed before authentication */
	CMD_LOADING = 1u << 4,  /* allowed while loading (always true for us; reported for clients) */
	CMD_STALE = 1u << 5,    /* allowed on a stale replica (likewise) */
	CMD_ADMIN = 1u << 6,    /* administrative */
	CMD_NOT_QUEUED = 1u << 7, /* runs at once inside MULTI too (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET) */
	CMD_UNSUPPORTED = 1u << 8, /* a Redis write with no meaning for rows: always refused */
	CMD_PUBSUB = 1u << 9,   /* (P)SUBSCRIBE, (P)UNSUBSCRIBE: allowed in RESP2's subscribed mode */
};

struct CommandContext;
using CommandHandler = void (*)(CommandContext &context);

struct CommandSpec {
	/* Lowercase; "container|sub" for a subcommand, as Redis's fullname. */
	std::string_view full_name;
	/* Redis convention, counting the command name (and the subcommand's): n > 0 exactly n
	 * arguments, n < 0 at least -n. */
	int arity;
	uint32_t flags;
	/* Key positions for COMMAND INFO and cluster-aware clients: last_key -1 = the last
	 * argument; all zero when the command takes no key. */
	int first_key;
	int last_key;
	int key_step;
	/* COMMAND DOCS */
	std::string_view group;
	std::string_view since;
	std::string_view summary;
	std::string_view complexity;
	/* Runs the command; for a container (CLIENT, CONFIG, COMMAND), runs it without a
	 * subcommand, or is nullptr when arity forbids that. */
	CommandHandler handler;
	const CommandSpec *subcommands;
	size_t subcommand_count;

	/* The name without the container's: "setname" for "client|setname". */
	std::string_view name() const
	{
		size_t bar = full_name.find('|');
		return bar == std::string_view::npos ? full_name : full_name.substr(bar + 1);
	}
	bool is_container() const { return subcommand_count > 0; }
};

/* Every top-level row, in table order. */
struct CommandTable {
	const CommandSpec *rows;
	size_t count;
	const CommandSpec *begin() const { return rows; }
	const CommandSpec *end() const { return rows + count; }
};
CommandTable command_table();

/* Case-insensitive lookups without allocation; nullptr when unknown. */
const CommandSpec *find_command(std::string_view name);
const CommandSpec *find_subcommand(const CommandSpec &container, std::string_view name);

/* Redis's glob (stringmatchlen): * ? [abc] [^a-z] and \ escapes; linear time, no recursion. */
bool glob_match(std::string_view pattern, std::string_view text, bool ignore_case);

/* Runs requests for the connections of one worker (one loop thread): holds the data sources and
 * scratch buffers reused from request to request, so the hit path does not allocate. */
/*
 * Where a worker's writes run when not on its loop (resp_server/clients/write_pool.h): a write
 * command, or an EXEC whose queue writes, is handed over whole, so the role's triggers never
 * hold the loop that serves the other connections. Until its reply is there the request waits
 * (Session::retry_later: the connection's later requests wait behind it) and runs again, then
 * takes the reply.
 */
class WriteOffload {
public:
	enum class Status {
		RunHere, /* no write worker runs: the worker runs the command itself */
		Pending, /* handed over, or waiting for a free write worker */
		Done,    /* the reply was appended to `out` */
	};
	struct Outcome {
		Status status;
		int64_t duration_us = 0;               /* Done: how long the command ran */
		std::vector<std::string> tracked_keys; /* Done: the keys its reads noted for CLIENT TRACKING */
		std::vector<std::string> uncaptured_keys; /* Done: ... and those to tell of at once */
	};
	virtual Outcome run(const Request &request, const Session &session, ReplyBuffer &out) = 0;

protected:
	~WriteOffload() = default;
};

/* Whether the command runs where the worker's writes run (WriteOffload): a write, or an EXEC
 * whose queue holds one. */
bool runs_as_write(const CommandSpec &command, const Session &session);

/*
 * What a process shows of the command it runs (pg_stat_activity: resp_server/pg/activity.h). Told
 * of every command that runs here, so both calls must be cheap: the report itself is the
 * implementation's business (it waits until the command calls PostgreSQL). The request and the
 * session stay valid until command_ended.
 */
class CommandActivity {
public:
	virtual void command_started(const CommandSpec &command, const Request &request, const Session &session) noexcept = 0;
	/* The command ended; or, with will_run_again, it waits (a locked table) and its connection
	 * runs it again before anything else. */
	virtual void command_ended(bool will_run_again) noexcept = 0;

protected:
	~CommandActivity() = default;
};

class CommandProcessor {
public:
	CommandProcessor(const DataSources &data);
	~CommandProcessor();
	CommandProcessor(const CommandProcessor &) = delete;
	CommandProcessor &operator=(const CommandProcessor &) = delete;

	/* Appends the reply to `request` to `out`, in session.protocol (which HELLO may change).
	 * May set session.close_after_reply (QUIT). */
	void execute(const Request &request, Session &session, ReplyBuffer &out);

	/* The requests that follow were read in one go (a pipeline): each is timed from the end of
	 * the one before, so a request costs one clock read, not two (on a VM the clock is a
	 * paravirtual read, a tenth of a pipelined GET's CPU). Call before the first of them. */
	void start_of_input() { clock_carried_ = false; }

	/* The worker's connections, for CLIENT LIST and KILL; without it they see only the caller. */
	void set_client_directory(ClientDirectory *clients) { clients_ = clients; }

	/* The shard's topology (cluster.h); without it, CLUSTER and READONLY answer that cluster
	 * support is disabled, ROLE a primary alone, WAIT 0, and nothing is redirected. */
	void set_cluster(ClusterTopology *cluster) { cluster_ = cluster; }

	/* Where writes run (runs_as_write); without it, here. */
	void set_write_offload(WriteOffload *offload) { offload_ = offload; }

	/* SLOWLOG's threshold and length (the worker passes its settings at start and reload). */
	void configure_slowlog(const SlowlogSettings &settings) { monitor_.configure(settings); }

	/* Where INFO's command statistics are shared (command_stats.h); without it, nowhere. */
	void set_stats_store(CommandStatsStore *store) { monitor_.set_stats_store(store); }
	/* Whether requests were counted since the last fold_stats(), which adds them to the store:
	 * the worker folds at its loop's idle points. */
	bool stats_pending() const { return monitor_.stats().has_pending(); }
	void fold_stats() { monitor_.fold_stats(); }

	/* Who is told of the command running (pg_stat_activity); without it, nobody. */
	void set_activity(CommandActivity *activity) { activity_ = activity; }

	/* The worker's CLIENT TRACKING table: the commands fill it; the event layer feeds it the
	 * commits, takes its invalidations, and calls session_stopped_tracking when a connection
	 * closes. */
	TrackingTable &tracking() { return tracking_; }

	/* Writes run here share commits (RowWriter::share_commit): how many have joined one so far,
	 * whose replies wait for commit_writes() (false: a commit of such writes failed since the
	 * last call). */
	uint64_t shared_writes() { return data_.writes.shared_writes(); }
	bool commit_writes() { return data_.writes.commit_writes(); }

	struct Scratch;

private:
	void dispatch(const Request &request, Session &session, ReplyBuffer &out);
	/* A command runs_as_write through offload_, unless the worker runs it (runs_on_loop):
	 * whether it was (else it runs here). */
	bool offloaded(const CommandSpec &command, const Request &request, Session &session, ReplyBuffer &out);

	DataSources data_;
	ClientDirectory *clients_ = nullptr;
	ClusterTopology *cluster_ = nullptr;
	WriteOffload *offload_ = nullptr;
	CommandActivity *activity_ = nullptr;
	CommandMonitor monitor_;
	TrackingTable tracking_;
	std::unique_ptr<Scratch> scratch_;
	int64_t last_end_us_ = 0; /* when the last request ended, valid while clock_carried_ */
	bool clock_carried_ = false;
};

} // namespace local_cache::resp
