/*
 * tracking_feed.h — a RESP worker's reader of the tracking log (extension/tracking_log.h): what
 * committed, as CLIENT TRACKING's table takes it (key names, table prefixes), and the relays
 * other workers sent for this worker's connections.
 *
 * Exactness (docs/RESP.md, "Client-side caching"): a change is handed over only once it is
 * visible to a new read. Records marked with an xid (a PREPARE, a standby's replay) wait here
 * until that transaction has ended, and are dropped if it aborted. Records this worker cannot
 * have seen (it was lapped, or they were written before it started) become "everything
 * changed": at once, and again when each transaction that was running then commits, since one
 * of them may have been waiting behind a lost record.
 */
#pragma once

#include "extension/pg.h"

#include "extension/key_bytes.h"
#include "extension/tracking_log.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace local_cache::resp {

struct TrackedChange {
	/* Unlogged: this standby's primary stopped logging invalidations; nothing can be tracked. */
	enum class Kind { Key, Table, Everything, Unlogged };
	Kind kind;
	std::string name; /* Key: "<prefix>:<id>"; Table: the prefix */
	uint64_t writer;  /* Key: the RESP connection whose write it was (0: none) */
	Oid relid;        /* Key, Table */
};

struct TrackingRelay {
	uint64_t target;
	std::string message;
};

class TrackingFeed {
public:
	/* Attaches this worker as reader `worker_number`. */
	explicit TrackingFeed(int worker_number);

	/* Before the worker's loop waits: whether there is something to collect now (else a writer
	 * signals the worker when there is). After the wait, awake(). Records that wait for their
	 * transaction's end are collected again soon (waiting()): nothing wakes the worker for them. */
	bool sleeping();
	void awake();
	/* Whether records were written since the last collect. */
	bool has_news() const { return tracking_log_head() != position_; }
	bool waiting() const { return !pending_.empty() || !running_at_loss_.empty(); }

	/* Whether changes reach the log: not on a standby whose primary stopped logging them. */
	static bool changes_logged();

	/* What became visible since the last call, in log order, and the relays for this worker's
	 * connections. A PostgreSQL error (logged) reports "everything changed". Without
	 * `names_wanted` (no connection here tracks a key or a prefix) changed keys and tables are
	 * only passed over: naming them is most of a collect's work. */
	void collect(std::vector<TrackedChange> &changes, std::vector<TrackingRelay> &relays, bool names_wanted);

	/* Whether `role` may learn of changes to the table's keys without having read them (BCAST):
	 * SCAN's rule (relinfo_readable), remembered until the catalog epoch moves. */
	bool role_may_read(uint64_t role, Oid relid);

	/* Sends `message` to connection `target` on another worker. False when it could not be. */
	bool relay(uint64_t target, std::string_view message);

private:
	struct Pending {
		LoggedChangeKind kind;
		Oid relid;
		TransactionId xid;
		uint64_t writer;
		std::string key;
	};
	struct TableNames {
		bool known; /* the table has a prefix and its key shape was read */
		std::string prefix;
		KeyShape shape;
	};

	void lost_records(std::vector<TrackedChange> &changes);
	void resolve_pending(std::vector<TrackedChange> &changes);
	void hand_over(LoggedChangeKind kind, Oid relid, uint64_t writer, KeyBytes key,
				   std::vector<TrackedChange> &changes);
	const TableNames &names_of(Oid relid);
	void forget_catalog_if_moved();

	int worker_number_;
	uint64 position_;
	std::vector<char> copy_;
	std::vector<Pending> pending_;
	/* Transactions running when records were lost: each one's commit is "everything changed". */
	std::vector<TransactionId> running_at_loss_;
	uint64 catalog_epoch_ = 0;
	bool names_wanted_ = true;
	std::unordered_map<Oid, TableNames> tables_;
	TableNames busy_table_; /* names_of's answer for a table it could not read all of */
	std::unordered_map<uint64_t, bool> readable_; /* (role << 32 | relid) */
};

} // namespace local_cache::resp
