/*
 * cluster.h — a replication group as one Redis Cluster shard: the topology interface the
 * CLUSTER, ROLE, READONLY and WAIT commands ask (implemented on PostgreSQL by pg/topology.cpp,
 * faked by tests/fake_cluster.h), Redis's key slot (CRC16 with hash tags), and the routing rule
 * the dispatcher applies before a request runs or is queued (cluster_redirect). No PostgreSQL
 * header. The design (node ids, announce, discovery, guarantees): docs/RESP.md, "Replication
 * groups as one Redis Cluster shard".
 */
#pragma once

#include "resp_server/commands/data_source.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace local_cache::resp {

class ReplyWriter;
struct CommandSpec;
struct Request;

/* Redis Cluster's slot count; the one shard owns all of them. */
constexpr int kClusterSlots = 16384;

/* Redis's HASH_SLOT: CRC16 (XMODEM) of the key, or of its hash tag (the bytes between the
 * first '{' and the first '}' after it, when not empty), modulo 16384. */
int key_slot(std::string_view key);

/* One node of the shard as clients should reach it: its announced RESP endpoint. */
struct ClusterNode {
	enum class Health { Online, Loading, Failed };
	std::string id; /* 40 hex digits, stable across restarts (docs/RESP.md) */
	std::string host;
	int port = 0;
	bool primary = false;
	bool myself = false;
	Health health = Health::Online;
	/* The WAL position (LSN) the node has: the primary's flushed WAL, a standby's replay. */
	uint64_t offset = 0;
};

/* What one node knows of its shard: the primary first when known, then the standbys. */
struct ClusterState {
	bool replica = false;           /* this node is a hot standby */
	std::vector<ClusterNode> nodes; /* this node among them (myself) */
	/* A standby: whether its WAL receiver streams from the primary (master_link_status). */
	bool primary_link_up = false;
	const ClusterNode *primary() const
	{
		for (const ClusterNode &node : nodes)
			if (node.primary)
				return &node;
		return nullptr;
	}
	const ClusterNode *me() const
	{
		for (const ClusterNode &node : nodes)
			if (node.myself)
				return &node;
		return nullptr;
	}
};

/*
 * What the cluster commands need from PostgreSQL. enabled() and replica() are asked before
 * every keyed request while cluster mode is on, so they only read settings and shared memory;
 * describe() may run a short transaction.
 */
class ClusterTopology {
public:
	/* local_cache.resp_cluster: CLUSTER and READONLY answer, standbys redirect. */
	virtual bool enabled() = 0;
	/* This node is a hot standby. */
	virtual bool replica() = 0;
	/* A standby: everything it replayed is WAL its WAL receiver got from the primary since the
	 * server started, so the primary's history has it. Until then the standby may show writes
	 * of its own that the primary never had — a crashed primary restarted as a standby before
	 * pg_rewind (as Patroni does) replays WAL the failover lost — so it serves no reads. */
	virtual bool replay_received() = 0;
	/* A standby's primary as clients reach it (its announced RESP endpoint); false when the
	 * standby does not know it (no WAL receiver). */
	virtual bool primary_endpoint(std::string *host, int *port) = 0;
	/* The whole shard as this node knows it. */
	virtual void describe(ClusterState &state) = 0;
	/* WAIT: the WAL position the session's writes so far are durable at, and how many
	 * standbys have replayed up to `position`. */
	virtual uint64_t wait_position(const Session &session) = 0;
	virtual int replicas_at(uint64_t position) = 0;

protected:
	~ClusterTopology() = default;
};

/*
 * Redis Cluster's routing on a standby in cluster mode: a command with keys that writes, or
 * that reads without READONLY or before the standby's replay is WAL received from the primary
 * (replay_received), answers -MOVED <slot of its first key> <primary host:port> (or -CLUSTERDOWN
 * when the primary is not known) and returns true; anything else (a primary, no cluster mode,
 * keyless commands, reads after READONLY) returns false and runs here. All slots
 * belong to the one shard, so multi-key commands are never refused for their slots.
 */
bool cluster_redirect(ClusterTopology *cluster, const CommandSpec &command, const Request &request,
					  const Session &session, ReplyWriter &reply, std::string &message);

} // namespace local_cache::resp
