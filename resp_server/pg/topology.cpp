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
 *     standby's client_addr, or this host's for a Unix socket);
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
#include "utils/pg_lsn.h"
}

namespace local_cache::resp {

namespace {

constexpr int kMaxStandbys = 64;

/* What the transaction's body copies out of pg_stat_replication (plain data). */
struct StandbyRow {
	char name[NAMEDATALEN];
	char address[64];
	bool streaming;
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

	if (in_recovery) {
		ReceiverState receiver = read_receiver();
		state.primary_link_up = receiver.streaming;
		ClusterNode primary;
		if (primary_endpoint(&primary.host, &primary.port)) {
			primary.id = node_id(system_id, primary.host, primary.port);
			primary.primary = true;
			primary.health = receiver.streaming ? ClusterNode::Health::Online : ClusterNode::Health::Failed;
			primary.offset = receiver.latest_end;
			state.nodes.push_back(std::move(primary));
		}
		state.nodes.push_back(std::move(me));
		return;
	}

	/* The primary: its standbys, as pg_stat_replication shows them to a superuser. */
	StandbyRow rows[kMaxStandbys];
	int count = 0;
	in_transaction([&]() noexcept {
		SPI_connect();
		if (SPI_execute("SELECT application_name, coalesce(host(client_addr), ''), state = 'streaming', replay_lsn "
						"FROM pg_stat_replication ORDER BY application_name",
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
	}, &error);
	state.nodes.push_back(me);
	std::vector<std::string> present;
	for (int i = 0; i < count; i++) {
		ClusterNode standby;
		if (!parse_endpoint(rows[i].name, &standby.host, &standby.port))
			continue; /* no endpoint in its application_name: clients could not reach it */
		if (standby.host.empty())
			standby.host = rows[i].address[0] != '\0' ? std::string(rows[i].address) : me.host;
		standby.id = node_id(system_id, standby.host, standby.port);
		standby.health = rows[i].streaming ? ClusterNode::Health::Online : ClusterNode::Health::Loading;
		standby.offset = rows[i].replay;
		present.push_back(standby.id);
		bool known = false;
		for (ClusterNode &seen : seen_)
			if (seen.id == standby.id) {
				seen = standby;
				known = true;
			}
		if (!known && seen_.size() < size_t(kMaxStandbys))
			seen_.push_back(standby);
	}
	/* Standbys seen before and gone from pg_stat_replication: down, until they stream again. */
	for (ClusterNode &seen : seen_) {
		bool here = false;
		for (const std::string &id : present)
			here = here || id == seen.id;
		if (!here)
			seen.health = ClusterNode::Health::Failed;
		state.nodes.push_back(seen);
	}
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
