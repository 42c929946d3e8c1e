/*
 * topology.cpp — the shard's topology on PostgreSQL (topology.h). Everything comes from
 * PostgreSQL itself, no registry:
 *   - a node's id: SHA-256 of the system identifier (shared by the whole replication group) and
 *     the node's announced endpoint (unique in the group, kept across restarts and promotion),
 *     as 40 hex digits;
 *   - its endpoint: local_cache.resp_announce_host/port, by default the first listen address and
 *     the RESP port;
 *   - the primary's standbys: pg_stat_replication, each standby's application_name (set in its
 *     primary_conninfo) being its endpoint "host:port" or "name@host:port" (an empty host: the
 *     standby's client_addr, or this host's for a Unix socket); one that is not streaming, or
 *     whose replay is more than a second behind (replay_lag), is loading ("lag");
 *   - a standby's siblings: local_cache.cluster_members, which the primary's first worker keeps
 *     equal to what it sees (publish_members, once a second) and WAL carries to every standby;
 *     a standby that left pg_stat_replication stays there as failed;
 *   - a standby's primary: local_cache.resp_cluster_primary, else the WAL receiver's host (this
 *     node's announced host for a Unix socket) and its PostgreSQL port shifted by this node's
 *     resp_port - port (nodes that keep the same distance between their two ports need nothing);
 *   - positions: the primary's flushed WAL, a standby's replay, the walsenders' apply positions;
 *   - whether a standby's replay is WAL its primary sent it (replay_received: it serves reads).
 */
#include "resp_server/pg/topology.h"

#include "resp_server/pg/settings.h"
#include "resp_server/pg/transaction.h"

#include <cstring>

#include <openssl/sha.h>

extern "C" {
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogrecovery.h"
#include "executor/spi.h"
#include "postmaster/postmaster.h"
#include "replication/walreceiver.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
}

namespace local_cache::resp {

namespace {

constexpr int kMaxStandbys = 64;

/* What the transaction's body copies out of pg_stat_replication (plain data). */
struct StandbyRow {
	char name[NAMEDATALEN];
	char address[64];
	bool streaming; /* and its replay at most a second behind */
	uint64 replay;
};

std::string announce_host()
{
	if (local_cache_resp_announce_host != nullptr && local_cache_resp_announce_host[0] != '\0')
		return local_cache_resp_announce_host;
	std::string addresses = local_cache_resp_listen_addresses != nullptr ? local_cache_resp_listen_addresses : "";
	std::string first = addresses.substr(0, addresses.find(','));
	size_t start = first.find_first_not_of(' ');
	size_t end = first.find_last_not_of(' ');
	first = start == std::string::npos ? "" : first.substr(start, end - start + 1);
	if (first.empty() || first == "*" || first == "0.0.0.0")
		return "127.0.0.1";
	if (first == "::")
		return "::1";
	return first;
}

int announce_port()
{
	return local_cache_resp_announce_port > 0 ? local_cache_resp_announce_port : local_cache_resp_port;
}

std::string node_id(uint64 system_id, const std::string &host, int port)
{
	std::string input(reinterpret_cast<const char *>(&system_id), sizeof(system_id));
	input.append(host).append(":").append(std::to_string(port));
	unsigned char digest[SHA256_DIGEST_LENGTH] = {};
	SHA256(reinterpret_cast<const unsigned char *>(input.data()), input.size(), digest);
	static const char hex[] = "0123456789abcdef";
	std::string id;
	for (int i = 0; i < 20; i++) {
		id += hex[digest[i] >> 4];
		id += hex[digest[i] & 15];
	}
	return id;
}

/* "host:port", "name@host:port" or "[v6]:port" into its parts; false when it is not one. */
bool parse_endpoint(std::string text, std::string *host, int *port)
{
	size_t at = text.rfind('@');
	if (at != std::string::npos)
		text = text.substr(at + 1);
	size_t colon = text.rfind(':');
	if (colon == std::string::npos || colon + 1 == text.size())
		return false;
	std::string digits = text.substr(colon + 1);
	if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos)
		return false;
	int value = std::stoi(digits);
	if (value <= 0 || value > 65535)
		return false;
	*host = text.substr(0, colon);
	if (host->size() >= 2 && host->front() == '[' && host->back() == ']')
		*host = host->substr(1, host->size() - 2);
	*port = value;
	return true;
}

/* A row of local_cache.cluster_members (plain data). */
struct MemberRow {
	char endpoint[NAMEDATALEN + 8];
	ClusterNode::Health health;
};

std::string_view health_text(ClusterNode::Health health)
{
	return health == ClusterNode::Health::Online ? "online" : health == ClusterNode::Health::Loading ? "loading" : "failed";
}

ClusterNode::Health health_of(const char *text)
{
	return strcmp(text, "online") == 0 ? ClusterNode::Health::Online
		: strcmp(text, "loading") == 0 ? ClusterNode::Health::Loading : ClusterNode::Health::Failed;
}

/* Inside a transaction: local_cache.cluster_members' rows (none when this database's
 * local_cache predates it), at most kMaxStandbys. */
int read_members(MemberRow *rows)
{
	int count = 0;
	SPI_connect();
	if (SPI_execute("SELECT pg_catalog.to_regclass('local_cache.cluster_members') IS NOT NULL", true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1) {
		bool null = false;
		bool exists = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &null));
		if (exists && SPI_execute("SELECT endpoint, health FROM local_cache.cluster_members ORDER BY endpoint", true,
								  kMaxStandbys) == SPI_OK_SELECT) {
			for (uint64 i = 0; i < SPI_processed && count < kMaxStandbys; i++) {
				char *endpoint = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
				char *health = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
				strlcpy(rows[count].endpoint, endpoint != nullptr ? endpoint : "", sizeof(rows[count].endpoint));
				rows[count].health = health_of(health != nullptr ? health : "");
				count++;
			}
		}
	}
	SPI_finish();
	return count;
}

struct ReceiverState {
	bool present = false;
	bool streaming = false;
	char host[NI_MAXHOST] = "";
	int port = 0;
	uint64 latest_end = 0;
};

ReceiverState read_receiver()
{
	ReceiverState state;
	PgError error;
	outside_transaction([&]() noexcept {
		if (WalRcv == nullptr)
			return;
		SpinLockAcquire(&WalRcv->mutex);
		state.present = WalRcv->walRcvState != WALRCV_STOPPED;
		state.streaming = WalRcv->walRcvState == WALRCV_STREAMING;
		strlcpy(state.host, WalRcv->sender_host, sizeof(state.host));
		state.port = WalRcv->sender_port;
		state.latest_end = WalRcv->latestWalEnd;
		SpinLockRelease(&WalRcv->mutex);
	}, &error);
	return state;
}

} // namespace

bool PgClusterTopology::enabled()
{
	return local_cache_resp_cluster;
}

bool PgClusterTopology::replica()
{
	bool in_recovery = false;
	PgError error;
	outside_transaction([&]() noexcept { in_recovery = RecoveryInProgress(); }, &error);
	return in_recovery;
}

/*
 * WalRcv->flushedUpto is where the WAL the receiver got from its primary ends; it starts, at the
 * first streaming request since the server started (or on a new timeline), at the start of the
 * segment streaming begins in, which is at or before the replay position. A primary accepts a
 * streaming request only at a point of its own history, and sends WAL of that history only, so
 * replay <= flushedUpto, once the primary has sent something (lastMsgReceiptTime: the one case
 * where flushedUpto is the replay position before any WAL came, a replay ending exactly at a
 * segment's start, needs the primary to have accepted the request), means the primary had
 * everything replayed here. A crashed primary that comes back as a standby of the new one replays
 * its own WAL first, past the new timeline's fork: its receiver streams at most up to the fork,
 * and the test stays false until pg_rewind (a restart, which starts the WAL receiver's state anew).
 */
bool PgClusterTopology::replay_received()
{
	bool received = false;
	PgError error;
	outside_transaction([&]() noexcept {
		if (WalRcv == nullptr)
			return;
		SpinLockAcquire(&WalRcv->mutex);
		XLogRecPtr start = WalRcv->receiveStart;
		XLogRecPtr flushed = WalRcv->flushedUpto;
		bool heard = WalRcv->lastMsgReceiptTime != 0;
		SpinLockRelease(&WalRcv->mutex);
		received = start != InvalidXLogRecPtr && heard && GetXLogReplayRecPtr(nullptr) <= flushed;
	}, &error);
	return received;
}

bool PgClusterTopology::primary_endpoint(std::string *host, int *port)
{
	if (local_cache_resp_cluster_primary != nullptr && local_cache_resp_cluster_primary[0] != '\0')
		return parse_endpoint(local_cache_resp_cluster_primary, host, port);
	ReceiverState receiver = read_receiver();
	if (receiver.port == 0)
		return false;
	*host = receiver.host[0] == '\0' || receiver.host[0] == '/' ? announce_host() : std::string(receiver.host);
	*port = receiver.port + (local_cache_resp_port - PostPortNumber);
	return *port > 0 && *port <= 65535;
}

namespace {

/* A member row's endpoint as a node: its id and health (false when it is not an endpoint). */
bool member_node(const MemberRow &row, uint64 system_id, ClusterNode *node)
{
	if (!parse_endpoint(row.endpoint, &node->host, &node->port))
		return false;
	node->id = node_id(system_id, node->host, node->port);
	node->health = row.health;
	return true;
}

} // namespace

void PgClusterTopology::describe(ClusterState &state)
{
	state = ClusterState();
	uint64 system_id = 0;
	uint64 my_position = 0;
	bool in_recovery = false;
	PgError error;
	outside_transaction([&]() noexcept {
		system_id = GetSystemIdentifier();
		in_recovery = RecoveryInProgress();
		my_position = in_recovery ? GetXLogReplayRecPtr(nullptr) : GetFlushRecPtr(nullptr);
	}, &error);
	state.replica = in_recovery;
	ClusterNode me;
	me.host = announce_host();
	me.port = announce_port();
	me.id = node_id(system_id, me.host, me.port);
	me.myself = true;
	me.primary = !in_recovery;
	me.offset = my_position;
	MemberRow members[kMaxStandbys];
	int member_count = -1;

	if (in_recovery) {
		ReceiverState receiver = read_receiver();
		state.primary_link_up = receiver.streaming;
		ClusterNode primary;
		bool primary_known = primary_endpoint(&primary.host, &primary.port);
		if (primary_known) {
			primary.id = node_id(system_id, primary.host, primary.port);
			primary.primary = true;
			primary.health = receiver.streaming ? ClusterNode::Health::Online : ClusterNode::Health::Failed;
			primary.offset = receiver.latest_end;
			state.nodes.push_back(primary);
		}
		in_transaction([&]() noexcept { member_count = read_members(members); }, &error);
		state.nodes.push_back(me);
		/* The siblings, as the primary last published them (their offsets are not known here). */
		for (int i = 0; i < member_count; i++) {
			ClusterNode sibling;
			if (member_node(members[i], system_id, &sibling) && sibling.id != me.id &&
				(!primary_known || sibling.id != primary.id))
				state.nodes.push_back(std::move(sibling));
		}
		return;
	}

	/* The primary: its standbys, as pg_stat_replication shows them to a superuser. */
	StandbyRow rows[kMaxStandbys];
	int count = 0;
	in_transaction([&]() noexcept {
		SPI_connect();
		if (SPI_execute("SELECT application_name, coalesce(pg_catalog.host(client_addr), ''), "
						"state OPERATOR(pg_catalog.=) 'streaming' AND "
						"coalesce(replay_lag OPERATOR(pg_catalog.<=) interval '1 second', true), replay_lsn "
						"FROM pg_catalog.pg_stat_replication ORDER BY application_name",
						true, kMaxStandbys) == SPI_OK_SELECT) {
			for (uint64 i = 0; i < SPI_processed && count < kMaxStandbys; i++) {
				HeapTuple tuple = SPI_tuptable->vals[i];
				TupleDesc desc = SPI_tuptable->tupdesc;
				StandbyRow &row = rows[count++];
				char *name = SPI_getvalue(tuple, desc, 1);
				char *address = SPI_getvalue(tuple, desc, 2);
				strlcpy(row.name, name != nullptr ? name : "", sizeof(row.name));
				strlcpy(row.address, address != nullptr ? address : "", sizeof(row.address));
				bool null = false;
				Datum streaming = SPI_getbinval(tuple, desc, 3, &null);
				row.streaming = !null && DatumGetBool(streaming);
				Datum replay = SPI_getbinval(tuple, desc, 4, &null);
				row.replay = null ? 0 : DatumGetLSN(replay);
			}
		}
		SPI_finish();
		member_count = read_members(members);
	}, &error);
	state.nodes.push_back(me);
	for (int i = 0; i < count; i++) {
		ClusterNode standby;
		if (!parse_endpoint(rows[i].name, &standby.host, &standby.port))
			continue; /* no endpoint in its application_name: clients could not reach it */
		if (standby.host.empty())
			standby.host = rows[i].address[0] != '\0' ? std::string(rows[i].address) : me.host;
		standby.id = node_id(system_id, standby.host, standby.port);
		standby.health = rows[i].streaming ? ClusterNode::Health::Online : ClusterNode::Health::Loading;
		standby.offset = rows[i].replay;
		bool listed = false;
		for (const ClusterNode &node : state.nodes)
			listed = listed || node.id == standby.id;
		if (!listed)
			state.nodes.push_back(std::move(standby));
	}
	/* Standbys published before and gone from pg_stat_replication: down, until they stream
	 * again. (This node itself when it was a standby before a promotion: not a standby.) */
	published_.clear();
	members_table_ = member_count >= 0;
	for (int i = 0; i < member_count; i++) {
		ClusterNode gone;
		if (!member_node(members[i], system_id, &gone))
			continue;
		published_.push_back(gone);
		bool listed = false;
		for (const ClusterNode &node : state.nodes)
			listed = listed || node.id == gone.id;
		if (!listed) {
			gone.health = ClusterNode::Health::Failed;
			state.nodes.push_back(std::move(gone));
		}
	}
}

void PgClusterTopology::publish_members()
{
	if (!enabled() || replica() || batch.active)
		return;
	ClusterState state;
	describe(state);
	if (!members_table_)
		return;
	/* The rows to write: standbys new to the table or whose health changed (plain data). */
	MemberRow changes[kMaxStandbys];
	int count = 0;
	for (const ClusterNode &node : state.nodes) {
		if (node.myself || count == kMaxStandbys)
			continue;
		bool same = false;
		for (const ClusterNode &row : published_)
			same = same || (row.id == node.id && row.health == node.health);
		if (same)
			continue;
		std::string endpoint = node.host.find(':') != std::string::npos ? "[" + node.host + "]" : node.host;
		endpoint.append(":").append(std::to_string(node.port));
		strlcpy(changes[count].endpoint, endpoint.c_str(), sizeof(changes[count].endpoint));
		changes[count++].health = node.health;
	}
	if (count == 0)
		return;
	const char *health[kMaxStandbys];
	for (int i = 0; i < count; i++)
		health[i] = health_text(changes[i].health).data();
	PgError error;
	in_transaction([&]() noexcept {
		SPI_connect();
		Oid types[2] = {TEXTOID, TEXTOID};
		for (int i = 0; i < count; i++) {
			Datum values[2] = {CStringGetTextDatum(changes[i].endpoint), CStringGetTextDatum(health[i])};
			SPI_execute_with_args("INSERT INTO local_cache.cluster_members AS m (endpoint, health) VALUES ($1, $2) "
								  "ON CONFLICT (endpoint) DO UPDATE SET health = excluded.health, changed_at = pg_catalog.now()",
								  2, types, values, nullptr, false, 0);
		}
		SPI_finish();
	}, &error);
}

uint64_t PgClusterTopology::wait_position(const Session &)
{
	/*
	 * Every write this connection was answered for committed before WAIT runs, so its commit
	 * record ends at or before the WAL inserted so far: the end of the last record inserted
	 * (the insert position, less the page header it points past when a record ended exactly at
	 * a page's end, as a replayed record's end never includes it). That WAL is flushed here, so
	 * that with synchronous_commit = off the walsenders need not wait for the walwriter.
	 */
	uint64 position = 0;
	PgError error;
	outside_transaction([&]() noexcept {
		if (RecoveryInProgress())
			return;
		XLogRecPtr end = GetXLogInsertRecPtr();
		if (XLogSegmentOffset(end, wal_segment_size) == SizeOfXLogLongPHD)
			end -= SizeOfXLogLongPHD;
		else if (end % XLOG_BLCKSZ == SizeOfXLogShortPHD)
			end -= SizeOfXLogShortPHD;
		XLogFlush(end);
		position = end;
	}, &error);
	return position;
}

int PgClusterTopology::replicas_at(uint64_t position)
{
	int count = 0;
	PgError error;
	outside_transaction([&]() noexcept {
		if (WalSndCtl == nullptr)
			return;
		for (int i = 0; i < max_wal_senders; i++) {
			WalSnd *sender = &WalSndCtl->walsnds[i];
			SpinLockAcquire(&sender->mutex);
			bool counted = sender->pid != 0 && sender->state == WALSNDSTATE_STREAMING && sender->apply >= position;
			SpinLockRelease(&sender->mutex);
			count += counted;
		}
	}, &error);
	return count;
}

} // namespace local_cache::resp
