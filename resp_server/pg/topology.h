/*
 * topology.h — the shard's topology on PostgreSQL (commands/cluster.h's ClusterTopology): this
 * node's id and announced endpoint, the primary's standbys from pg_stat_replication, a standby's
 * primary from its WAL receiver (and whether its replay came from it), its siblings from
 * local_cache.cluster_members (which the primary publishes), WAIT's positions from the
 * walsenders. The rules (ids, announce, discovery): docs/RESP.md, "Replication groups as one
 * Redis Cluster shard".
 */
#pragma once

#include "resp_server/commands/cluster.h"

#include <string>
#include <vector>

namespace local_cache::resp {

class PgClusterTopology final : public ClusterTopology {
public:
	bool enabled() override;
	bool replica() override;
	bool replay_received() override;
	bool primary_endpoint(std::string *host, int *port) override;
	void describe(ClusterState &state) override;
	uint64_t wait_position(const Session &session) override;
	int replicas_at(uint64_t position) override;
	/* On the primary: local_cache.cluster_members made to list the standbys with the health
	 * describe() gives them, writing only what changed (the housekeeping timer calls it). */
	void publish_members();

private:
	/* The primary's describe(): local_cache.cluster_members' rows, and whether the table is
	 * there (a database whose local_cache predates it). */
	std::vector<ClusterNode> published_;
	bool members_table_ = false;
};

} // namespace local_cache::resp
