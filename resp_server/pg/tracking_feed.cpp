/*
 * tracking_feed.cpp — reads the tracking log for one RESP worker (tracking_feed.h): turns the
 * records into key names and table prefixes, holds those whose transaction has not ended, and
 * notices what it lost.
 */
#include "resp_server/pg/tracking_feed.h"

#include "extension/cached_table.h"
#include "extension/primary_key.h"
#include "extension/wal.h"
#include "resp_server/pg/session_runtime.h"
#include "resp_server/pg/transaction.h"

extern "C" {
#include "access/subtrans.h"
#include "access/transam.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace local_cache::resp {

namespace {

enum class XidStatus : uint8 { Running, Committed, Aborted };

void log_feed_error(const PgError &error)
{
	ereport(LOG, (errmsg("local_cache RESP: reading the tracking log: %s; every tracked key counts as changed",
						 error.message)));
}

} // namespace

TrackingFeed::TrackingFeed(int worker_number) : worker_number_(worker_number), position_(0)
{
	copy_.resize(TRACKING_LOG_COPY_BYTES);
	/* Records written before this worker started were read by nobody here: the transactions
	 * running now may have some that become visible later. */
	std::vector<TrackedChange> none;
	PgError error;
	if (!outside_transaction([&]() noexcept { position_ = tracking_log_attach_reader(worker_number_); }, &error))
		log_feed_error(error);
	lost_records(none);
}

bool TrackingFeed::sleeping()
{
	return tracking_log_sleeping(worker_number_, position_);
}

void TrackingFeed::awake()
{
	tracking_log_awake(worker_number_);
}

void TrackingFeed::lost_records(std::vector<TrackedChange> &changes)
{
	changes.push_back(TrackedChange{TrackedChange::Kind::Everything, {}, 0, InvalidOid});
	size_t capacity = size_t(GetMaxSnapshotXidCount() + GetMaxSnapshotSubxidCount());
	std::vector<TransactionId> running(capacity);
	TransactionId *xids = running.data();
	int count = 0;
	PgError error;
	bool read = in_transaction([&]() noexcept {
		Snapshot snapshot = GetLatestSnapshot();
		/* A standby's snapshot lists every running xid as a subtransaction's: any may have
		 * replayed records. On a primary only a prepared transaction logs before it is
		 * visible; its xid belongs to no backend. */
		bool standby = RecoveryInProgress();
		for (uint32 i = 0; i < snapshot->xcnt; i++)
			if (standby || BackendXidGetPid(snapshot->xip[i]) == 0)
				xids[count++] = snapshot->xip[i];
		for (int32 i = 0; i < snapshot->subxcnt && standby; i++)
			xids[count++] = snapshot->subxip[i];
		/* A snapshot leaves out the xids from its xmax on (the latest completed one + 1), which
		 * it takes as running without listing them: a transaction prepared after every other
		 * one ended is such an xid. They are few: none of them has ended. */
		TransactionId next = ReadNextTransactionId();
		for (TransactionId xid = snapshot->xmax; TransactionIdPrecedes(xid, next) && size_t(count) < capacity;) {
			if (TransactionIdIsInProgress(xid) &&
				(standby || (SubTransGetTopmostTransaction(xid) == xid && BackendXidGetPid(xid) == 0)))
				xids[count++] = xid;
			TransactionIdAdvance(xid);
		}
	}, &error);
	if (!read) {
		log_feed_error(error);
		return;
	}
	running.resize(size_t(count));
	running_at_loss_.insert(running_at_loss_.end(), running.begin(), running.end());
}

void TrackingFeed::forget_catalog_if_moved()
{
	uint64 epoch = store_catalog_epoch();
	if (epoch == catalog_epoch_)
		return;
	catalog_epoch_ = epoch;
	tables_.clear();
	readable_.clear();
}

const TrackingFeed::TableNames &TrackingFeed::names_of(Oid relid)
{
	auto known = tables_.find(relid);
	if (known != tables_.end())
		return known->second;
	struct {
		const char *prefix;
		size_t prefix_length;
		bool shape_read;
		KeyShape shape;
	} found = {nullptr, 0, false, {}};
	PgError error;
	bool read = in_transaction([&]() noexcept {
		load_prefixes();
		for (int i = 0; i < nprefixes; i++)
			if (prefixes[i].relid == relid) {
				found.prefix = prefixes[i].prefix;
				found.prefix_length = prefixes[i].length;
			}
		/* An ALTER TABLE holding the table is committing a definition change, which says
		 * "everything changed" anyway: do not wait for it. */
		if (found.prefix == nullptr || !ConditionalLockRelationOid(relid, AccessShareLock))
			return;
		Relation rel = RelationIdGetRelation(relid);
		if (rel == nullptr)
			return;
		PrimaryKey key;
		if (primary_key_of(rel, &key) == KeyProblem::None) {
			found.shape = key.shape;
			found.shape_read = true;
		}
		RelationClose(rel);
	}, &error);
	if (!read)
		log_feed_error(error);
	TableNames names{found.shape_read, found.prefix ? std::string(found.prefix, found.prefix_length) : std::string(),
					 found.shape};
	/* Remembered only once complete: a table busy now is asked again next time. */
	if (found.shape_read)
		return tables_[relid] = std::move(names);
	busy_table_ = std::move(names);
	return busy_table_;
}

void TrackingFeed::hand_over(LoggedChangeKind kind, Oid relid, uint64_t writer, KeyBytes key,
							 std::vector<TrackedChange> &changes)
{
	if (kind == LoggedChangeKind::Definition || !OidIsValid(relid)) {
		tables_.clear();
		changes.push_back(TrackedChange{TrackedChange::Kind::Everything, {}, 0, InvalidOid});
		return;
	}
	if (!names_wanted_)
		return;
	const TableNames &names = names_of(relid);
	if (names.prefix.empty())
		return; /* not a cached table now: no key names its rows */
	std::string name;
	if (kind == LoggedChangeKind::Key && names.known) {
		name.reserve(names.prefix.size() + 1 + key.len * 2);
		name.append(names.prefix).append(1, ':');
		if (append_key_text(names.shape, key, name)) {
			changes.push_back(TrackedChange{TrackedChange::Kind::Key, std::move(name), writer, relid});
			return;
		}
	}
	changes.push_back(TrackedChange{TrackedChange::Kind::Table, names.prefix, 0, relid});
}

void TrackingFeed::resolve_pending(std::vector<TrackedChange> &changes)
{
	if (!waiting())
		return;
	std::vector<XidStatus> status(pending_.size() + running_at_loss_.size());
	std::vector<TransactionId> xids;
	xids.reserve(status.size());
	for (const Pending &p : pending_)
		xids.push_back(p.xid);
	xids.insert(xids.end(), running_at_loss_.begin(), running_at_loss_.end());
	const TransactionId *xid = xids.data();
	XidStatus *out = status.data();
	size_t count = xids.size();
	PgError error;
	bool read = outside_transaction([&]() noexcept {
		for (size_t i = 0; i < count; i++)
			out[i] = TransactionIdIsInProgress(xid[i])	? XidStatus::Running
					 : TransactionIdDidCommit(xid[i]) ? XidStatus::Committed
													  : XidStatus::Aborted;
	}, &error);
	if (!read) {
		log_feed_error(error);
		pending_.clear();
		running_at_loss_.clear();
		changes.push_back(TrackedChange{TrackedChange::Kind::Everything, {}, 0, InvalidOid});
		return;
	}
	size_t npending = pending_.size();
	size_t kept = 0;
	for (size_t i = 0; i < npending; i++) {
		Pending &p = pending_[i];
		if (status[i] == XidStatus::Committed)
			hand_over(p.kind, p.relid, p.writer, KeyBytes{p.key.data(), uint32(p.key.size())}, changes);
		else if (status[i] == XidStatus::Running && kept++ != i)
			pending_[kept - 1] = std::move(p);
	}
	pending_.resize(kept);
	kept = 0;
	bool lost_committed = false;
	for (size_t i = 0; i < running_at_loss_.size(); i++) {
		XidStatus s = status[npending + i];
		lost_committed = lost_committed || s == XidStatus::Committed;
		if (s == XidStatus::Running)
			running_at_loss_[kept++] = running_at_loss_[i];
	}
	running_at_loss_.resize(kept);
	if (lost_committed)
		changes.push_back(TrackedChange{TrackedChange::Kind::Everything, {}, 0, InvalidOid});
}

void TrackingFeed::collect(std::vector<TrackedChange> &changes, std::vector<TrackingRelay> &relays, bool names_wanted)
{
	names_wanted_ = names_wanted;
	forget_catalog_if_moved();
	for (;;) {
		size_t copied = 0;
		bool lapped = false;
		char *buffer = copy_.data();
		PgError error;
		if (!outside_transaction([&]() noexcept { copied = tracking_log_copy(&position_, buffer, TRACKING_LOG_COPY_BYTES, &lapped); },
								 &error)) {
			log_feed_error(error);
			changes.push_back(TrackedChange{TrackedChange::Kind::Everything, {}, 0, InvalidOid});
			break;
		}
		if (lapped)
			lost_records(changes);
		size_t offset = 0;
		LoggedChange change;
		while (tracking_log_next(buffer, copied, &offset, &change)) {
			if (change.kind == LoggedChangeKind::Relay) {
				if (int(change.client >> 40) == worker_number_)
					relays.push_back(TrackingRelay{change.client, std::string(change.bytes.data, change.bytes.len)});
				continue;
			}
			if (change.kind == LoggedChangeKind::Unlogged) {
				changes.push_back(TrackedChange{TrackedChange::Kind::Unlogged, {}, 0, InvalidOid});
				continue;
			}
			if (change.kind == LoggedChangeKind::Resumed) {
				/* As if records were lost: the transactions running now are watched to their end. */
				lost_records(changes);
				continue;
			}
			if (OidIsValid(change.dbid) && change.dbid != MyDatabaseId)
				continue;
			if (TransactionIdIsValid(change.xid))
				pending_.push_back(Pending{change.kind, change.relid, change.xid, change.client,
										   std::string(change.bytes.data, change.bytes.len)});
			else
				hand_over(change.kind, change.relid, change.client, change.bytes, changes);
		}
		if (copied == 0 || position_ >= tracking_log_head())
			break;
	}
	resolve_pending(changes);
}

bool TrackingFeed::changes_logged()
{
	return wal_cache_trusted();
}

bool TrackingFeed::role_may_read(uint64_t role, Oid relid)
{
	forget_catalog_if_moved();
	uint64_t key = (role << 32) | relid;
	auto known = readable_.find(key);
	if (known != readable_.end())
		return known->second;
	bool readable = false;
	PgError error;
	if (!in_transaction([&]() noexcept { readable = relinfo_readable(relid, Oid(role)); }, &error))
		return false;
	readable_[key] = readable;
	return readable;
}

bool TrackingFeed::relay(uint64_t target, std::string_view message)
{
	const char *bytes = message.data();
	uint32 length = uint32(message.size());
	PgError error;
	if (!outside_transaction([&]() noexcept { tracking_log_relay(target, bytes, length); }, &error)) {
		log_feed_error(error);
		return false;
	}
	return true;
}

} // namespace local_cache::resp
