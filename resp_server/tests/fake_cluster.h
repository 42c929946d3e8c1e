/*
 * fake_cluster.h — a fake of the shard's topology (commands/cluster.h) for the cluster command
 * tests: a primary and two standbys, this node one of them, with settable positions.
 */
#pragma once

#include "resp_server/commands/cluster.h"

#include <string>

namespace resp_test {

using local_cache::resp::ClusterNode;
using local_cache::resp::ClusterState;

class FakeCluster final : public local_cache::resp::ClusterTopology {
public:
	bool on = true;
	bool standby = false;      /* this node is the first standby */
	bool primary_known = true; /* a standby knows its primary's endpoint */
	bool link_up = true;
	bool received = true; /* a standby's replay is WAL its primary sent */
	bool second_standby_down = false;
	uint64_t flushed = 5000;            /* the primary's WAL */
	uint64_t replayed[2] = {5000, 4000}; /* each standby's replay */

	bool enabled() override { return on; }
	bool replica() override { return standby; }
	bool replay_received() override { return received; }
	bool primary_endpoint(std::string *host, int *port) override
	{
		if (!primary_known)
			return false;
		*host = "10.0.0.1";
		*port = 6379;
		return true;
	}
	void describe(ClusterState &state) override
	{
		state = ClusterState();
		state.replica = standby;
		state.primary_link_up = link_up;
		if (primary_known)
			state.nodes.push_back(node("aaaa", "10.0.0.1", 6379, true, !standby, flushed));
		state.nodes.push_back(node("bbbb", "10.0.0.2", 6379, false, standby, replayed[0]));
		if (!standby) {
			ClusterNode second = node("cccc", "10.0.0.3", 6379, false, false, replayed[1]);
			if (second_standby_down)
				second.health = ClusterNode::Health::Failed;
			state.nodes.push_back(second);
		}
	}
	uint64_t wait_position(const local_cache::resp::Session &) override { return flushed; }
	int replicas_at(uint64_t position) override
	{
		return int(replayed[0] >= position) + int(!second_standby_down && replayed[1] >= position);
	}

private:
	static ClusterNode node(const char *letters, const char *host, int port, bool primary, bool myself,
							uint64_t offset)
	{
		ClusterNode n;
		n.id = std::string(letters) + std::string(36, '0');
		n.host = host;
		n.port = port;
		n.primary = primary;
		n.myself = myself;
		n.offset = offset;
		return n;
	}
};

} // namespace resp_test
