/*
 * host.h — what a worker's clients ask of the process that runs them, as small interfaces the
 * worker implements on PostgreSQL (worker.cpp): its settings, its log and counters
 * (ClientHost), the commits CLIENT TRACKING hears of (CommitFeed), the write workers
 * (WriteWorkers). So clients/ includes no PostgreSQL header, as commands/ reaches its data only
 * through commands/data_source.h.
 */
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace local_cache::resp {

/* The local_cache.resp_* settings the clients follow, as the worker last read them (at start and
 * at each reload). */
struct ClientLimits {
	size_t max_request_size = size_t(64) << 20;    /* resp_max_request_size */
	size_t output_buffer_limit = size_t(64) << 20; /* resp_output_buffer_limit */
	size_t client_memory = size_t(256) << 20;      /* resp_client_memory, in bytes */
	int64_t lock_timeout_ms = 1000;                /* resp_lock_timeout */
	int64_t idle_timeout_ms = 0;                   /* resp_timeout; 0: none */
	size_t max_clients = 10000;                    /* resp_max_clients */
	int64_t login_timeout_ms = 60000;              /* PostgreSQL's authentication_timeout */
	int batch_delay_us = 50;                       /* resp_batch_delay */
};

/* Where and how the worker listens (postmaster settings: read once). */
struct ListenSettings {
	std::string addresses; /* resp_listen_addresses */
	int port = 0;          /* resp_port */
	bool tls = false;      /* resp_tls: listen only once a TLS context is loaded */
};

/* This worker's counters, in shared memory (INFO sums every worker's). */
enum class ClientCounter {
	Connected,           /* connected_clients */
	LoggedIn,            /* those of them that have logged in (resp_max_clients bounds them) */
	ConnectionsReceived, /* total_connections_received */
	CommandsProcessed,   /* total_commands_processed */
	Rejected,            /* rejected_connections */
	BatchPauses,         /* batch_pauses */
};

class ClientHost {
public:
	virtual ~ClientHost() = default;
	/* One line for the server log, with PostgreSQL's DETAIL and HINT when given. */
	virtual void log(const char *line, const char *detail = nullptr, const char *hint = nullptr) noexcept = 0;
	/* The clock of Session::connected_at_ms and the clients' timeouts (milliseconds). */
	virtual int64_t now_ms() = 0;
	virtual void count(ClientCounter counter, int64_t delta) = 0;
	/* The most bytes one of the worker's connections has not been sent, every second (INFO's
	 * client_recent_max_output_buffer). */
	virtual void note_largest_output_buffer(uint64_t bytes) = 0;
	/* The next number for a client id of this worker (CLIENT ID is worker << 40 | number); never
	 * the same twice, also across restarts of the worker. */
	virtual uint64_t next_client_number() = 0;
	/* Logged-in connections of every worker (resp_max_clients). */
	virtual uint64_t logged_in_clients_total() = 0;
	/* This process and the server's other RESP workers: who may listen on the port beside it. */
	virtual std::vector<pid_t> our_workers() = 0;
	/* Whether client `id` of another worker may exist: that worker runs and has handed it out. */
	virtual bool remote_client_may_exist(uint64_t id) = 0;
	/* The connection whose request runs from now on (0: none): its writes are its own, for
	 * CLIENT TRACKING's NOLOOP. */
	virtual void running_request_of(uint64_t session_id) = 0;
};

/* A commit CLIENT TRACKING must hear of: a key, a table's keys, or everything. */
struct CommittedChange {
	/* Unlogged: this standby's primary stopped logging invalidations; nothing can be tracked. */
	enum class Kind { Key, Table, Everything, Unlogged };
	Kind kind;
	std::string name; /* Key: "<prefix>:<id>"; Table: the prefix */
	uint64_t writer;  /* Key: the RESP connection whose write it was (0: none) */
	uint32_t relid;   /* Key, Table: the table's OID */
};

/* Invalidations another worker relayed to a connection of this one. */
struct RelayedInvalidation {
	uint64_t target;
	std::string message;
};

/* The commits, as the worker's reader of the tracking log sees them (pg/tracking_feed.h). */
class CommitFeed {
public:
	virtual ~CommitFeed() = default;
	/* Before the loop waits: whether writers must signal the worker (there is nothing to collect
	 * now); after the wait, awake(). */
	virtual bool sleeping() = 0;
	virtual void awake() = 0;
	/* Records were written since the last collect. */
	virtual bool has_news() = 0;
	/* Records wait for their transaction's end: nothing wakes the worker for them. */
	virtual bool waiting() = 0;
	/* Changes reach the log (not on a standby whose primary stopped logging them). */
	virtual bool changes_logged() = 0;
	/* What became visible since the last call, and the relays for this worker's connections;
	 * without `names_wanted` changed keys and tables are only passed over. */
	virtual void collect(std::vector<CommittedChange> &changes, std::vector<RelayedInvalidation> &relays,
						 bool names_wanted) = 0;
	/* Whether `role` may learn of changes to the table's keys without having read them (BCAST). */
	virtual bool role_may_read(uint64_t role, uint32_t relid) = 0;
	/* Sends `message` to connection `target` of another worker; false when it could not. */
	virtual bool relay(uint64_t target, std::string_view message) = 0;
	/* Connections of this worker with CLIENT TRACKING on: writers signal only while some are. */
	virtual void count_trackers(int delta) = 0;
};

/* The server's write workers, as one RESP worker claims them (write_pool.h). */
class WriteWorkers {
public:
	virtual ~WriteWorkers() = default;
	virtual bool running(int number) = 0;
	/* One write at a time each: false when another RESP worker has it. */
	virtual bool claim(int number) = 0;
	virtual void release(int number) = 0;
	/* The address write worker `number` listens on. */
	virtual socklen_t address(int number, sockaddr_un *address) = 0;
};

} // namespace local_cache::resp
