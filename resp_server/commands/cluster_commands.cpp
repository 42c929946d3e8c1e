/*
 * cluster_commands.cpp — a replication group as one Redis Cluster shard (cluster.h): CLUSTER
 * SHARDS, SLOTS, NODES, MYID, INFO, KEYSLOT; READONLY, READWRITE; ROLE; WAIT; the key slot and
 * the routing rule on standbys (-MOVED), as Redis Cluster words them.
 */
#include "resp_server/commands/command_context.h"

#include <charconv>

namespace local_cache::resp {

namespace {

constexpr std::string_view kClusterDisabled = "This instance has cluster support disabled";

/* Redis's crc16 (XMODEM: polynomial 0x1021, initial 0), bit by bit: keys are short. */
uint16_t crc16(std::string_view bytes)
{
	uint16_t crc = 0;
	for (unsigned char byte : bytes) {
		crc ^= uint16_t(byte) << 8;
		for (int bit = 0; bit < 8; bit++)
			crc = (crc & 0x8000) ? uint16_t((crc << 1) ^ 0x1021) : uint16_t(crc << 1);
	}
	return crc;
}

/* The cluster commands answer only in cluster mode; false after replying Redis's error. */
bool cluster_on(CommandContext &c)
{
	if (c.cluster != nullptr && c.cluster->enabled())
		return true;
	c.reply.error(kClusterDisabled);
	return false;
}

std::string_view health_name(ClusterNode::Health health)
{
	switch (health) {
		case ClusterNode::Health::Online:
			return "online";
		case ClusterNode::Health::Loading:
			return "loading";
		case ClusterNode::Health::Failed:
			return "failed";
	}
	return "failed";
}

bool parse_nonnegative(std::string_view text, int64_t *value)
{
	auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
	return error == std::errc() && end == text.data() + text.size() && *value >= 0;
}

/* CLUSTER SLOTS' node: ip, port, id, and the (empty) map of extra networking metadata. */
void reply_slots_node(CommandContext &c, const ClusterNode &node)
{
	c.reply.array(4);
	c.reply.bulk(node.host);
	c.reply.integer(node.port);
	c.reply.bulk(node.id);
	c.reply.map(0);
}

} // namespace

int key_slot(std::string_view key)
{
	size_t open = key.find('{');
	if (open != std::string_view::npos) {
		size_t close = key.find('}', open + 1);
		if (close != std::string_view::npos && close > open + 1)
			key = key.substr(open + 1, close - open - 1);
	}
	return crc16(key) & (kClusterSlots - 1);
}

bool cluster_redirect(ClusterTopology *cluster, const CommandSpec &command, const Request &request,
					  const Session &session, ReplyWriter &reply, std::string &message)
{
	if (cluster == nullptr || command.first_key <= 0 || size_t(command.first_key) >= request.argc)
		return false;
	bool writes = (command.flags & CMD_WRITE) != 0;
	if (!cluster->enabled() || !cluster->replica())
		return false;
	if (!writes && session.cluster_readonly && cluster->replay_received())
		return false;
	std::string host;
	int port = 0;
	int slot = key_slot(request[size_t(command.first_key)]);
	if (!cluster->primary_endpoint(&host, &port)) {
		reply.error_with_code("CLUSTERDOWN", "Hash slot not served");
		return true;
	}
	message.clear();
	append_number(message, slot);
	message.append(" ").append(host).append(":");
	append_number(message, port);
	reply.error_with_code("MOVED", message);
	return true;
}

void cluster_myid_command(CommandContext &c)
{
	if (!cluster_on(c))
		return;
	ClusterState state;
	c.cluster->describe(state);
	const ClusterNode *me = state.me();
	c.reply.bulk(me != nullptr ? std::string_view(me->id) : std::string_view());
}

void cluster_keyslot_command(CommandContext &c)
{
	if (!cluster_on(c))
		return;
	c.reply.integer(key_slot(c.arg(2)));
}

void cluster_info_command(CommandContext &c)
{
	if (!cluster_on(c))
		return;
	ClusterState state;
	c.cluster->describe(state);
	/* The slots are served while a primary is known (and a standby's link to it is up). */
	bool ok = state.primary() != nullptr && (!state.replica || state.primary_link_up);
	std::string &out = c.scratch.text;
	out.clear();
	out.append("cluster_enabled:1\r\ncluster_state:").append(ok ? "ok" : "fail").append("\r\n");
	out.append("cluster_slots_assigned:16384\r\ncluster_slots_ok:").append(ok ? "16384" : "0");
	out.append("\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:").append(ok ? "0" : "16384");
	out.append("\r\ncluster_known_nodes:");
	append_number(out, state.nodes.size());
	out.append("\r\ncluster_size:1\r\ncluster_current_epoch:1\r\ncluster_my_epoch:1\r\n");
	c.reply.verbatim(out);
}

/* CLUSTER SLOTS: one range, 0-16383: the primary, then the standbys that stream. */
void cluster_slots_command(CommandContext &c)
{
	if (!cluster_on(c))
		return;
	ClusterState state;
	c.cluster->describe(state);
	const ClusterNode *primary = state.primary();
	if (primary == nullptr) {
		c.reply.array(0);
		return;
	}
	size_t replicas = 0;
	for (const ClusterNode &node : state.nodes)
		replicas += !node.primary && node.health != ClusterNode::Health::Failed;
	c.reply.array(1);
	c.reply.array(3 + replicas);
	c.reply.integer(0);
	c.reply.integer(kClusterSlots - 1);
	reply_slots_node(c, *primary);
	for (const ClusterNode &node : state.nodes)
		if (!node.primary && node.health != ClusterNode::Health::Failed)
			reply_slots_node(c, node);
}

/* CLUSTER SHARDS: the one shard, its slots and every node with its role, offset and health. */
void cluster_shards_command(CommandContext &c)
{
	if (!cluster_on(c))
		return;
	ClusterState state;
	c.cluster->describe(state);
	c.reply.array(1);
	c.reply.map(2);
	c.reply.bulk("slots");
	c.reply.array(2);
	c.reply.integer(0);
	c.reply.integer(kClusterSlots - 1);
	c.reply.bulk("nodes");
	c.reply.array(state.nodes.size());
	for (const ClusterNode &node : state.nodes) {
		c.reply.map(7);
		c.reply.bulk("id");
		c.reply.bulk(node.id);
		c.reply.bulk("port");
		c.reply.integer(node.port);
		c.reply.bulk("ip");
		c.reply.bulk(node.host);
		c.reply.bulk("endpoint");
		c.reply.bulk(node.host);
		c.reply.bulk("role");
		c.reply.bulk(node.primary ? "master" : "replica");
		c.reply.bulk("replication-offset");
		c.reply.integer(int64_t(node.offset));
		c.reply.bulk("health");
		c.reply.bulk(health_name(node.health));
	}
}

/* CLUSTER NODES: Redis's line per node (id, ip:port@cport, flags, master, ping-sent,
 * pong-recv, config-epoch, link-state, slots); there is no cluster bus, so cport is 0. */
void cluster_nodes_command(CommandContext &c)
{
	if (!cluster_on(c))
		return;
	ClusterState state;
	c.cluster->describe(state);
	const ClusterNode *primary = state.primary();
	std::string &out = c.scratch.text;
	out.clear();
	for (const ClusterNode &node : state.nodes) {
		out.append(node.id).append(" ").append(node.host).append(":");
		append_number(out, node.port);
		out.append("@0 ");
		if (node.myself)
			out.append("myself,");
		out.append(node.primary ? "master" : "slave");
		if (node.health == ClusterNode::Health::Failed)
			out.append(",fail");
		else if (node.health == ClusterNode::Health::Loading)
			out.append(",lag");
		out.append(" ");
		out.append(node.primary || primary == nullptr ? std::string_view("-") : std::string_view(primary->id));
		out.append(" 0 0 1 ");
		out.append(node.health == ClusterNode::Health::Failed ? "disconnected" : "connected");
		if (node.primary)
			out.append(" 0-16383");
		out.append("\n");
	}
	c.reply.verbatim(out);
}

void readonly_command(CommandContext &c)
{
	if (!cluster_on(c))
		return;
	c.session.cluster_readonly = true;
	c.reply.ok();
}

void readwrite_command(CommandContext &c)
{
	if (!cluster_on(c))
		return;
	c.session.cluster_readonly = false;
	c.reply.ok();
}

/* ROLE, in or out of cluster mode: the primary's offset and standbys, or a standby's primary. */
void role_command(CommandContext &c)
{
	ClusterState state;
	if (c.cluster != nullptr)
		c.cluster->describe(state);
	const ClusterNode *me = state.me();
	uint64_t offset = me != nullptr ? me->offset : 0;
	std::string text;
	if (!state.replica) {
		size_t replicas = 0;
		for (const ClusterNode &node : state.nodes)
			replicas += !node.primary && node.health != ClusterNode::Health::Failed;
		c.reply.array(3);
		c.reply.bulk("master");
		c.reply.integer(int64_t(offset));
		c.reply.array(replicas);
		for (const ClusterNode &node : state.nodes) {
			if (node.primary || node.health == ClusterNode::Health::Failed)
				continue;
			c.reply.array(3);
			c.reply.bulk(node.host);
			text.clear();
			append_number(text, node.port);
			c.reply.bulk(text);
			text.clear();
			append_number(text, node.offset);
			c.reply.bulk(text);
		}
		return;
	}
	const ClusterNode *primary = state.primary();
	c.reply.array(5);
	c.reply.bulk("slave");
	c.reply.bulk(primary != nullptr ? std::string_view(primary->host) : std::string_view());
	c.reply.integer(primary != nullptr ? primary->port : 0);
	c.reply.bulk(state.primary_link_up ? "connected" : "connect");
	c.reply.integer(int64_t(offset));
}

void append_replication_info(CommandContext &c, std::string &out)
{
	ClusterState state;
	c.cluster->describe(state);
	const ClusterNode *me = state.me();
	uint64_t offset = me != nullptr ? me->offset : 0;
	auto field = [&](std::string_view name, std::string_view value) {
		out.append(name).append(":").append(value).append("\r\n");
	};
	auto number = [&](std::string_view name, uint64_t value) {
		out.append(name).append(":");
		append_number(out, value);
		out.append("\r\n");
	};
	if (state.replica) {
		field("role", "slave");
		const ClusterNode *primary = state.primary();
		/* Out of cluster mode, where the primary is shows only to members of pg_read_all_stats
		 * (as pg_stat_wal_receiver); in cluster mode CLUSTER NODES announces it to everyone. */
		if (primary != nullptr &&
			(c.cluster->enabled() || c.data.server.sees_activity_of(c.session, ServerInfo::kEveryRole))) {
			field("master_host", primary->host);
			number("master_port", uint64_t(primary->port));
		}
		field("master_link_status", state.primary_link_up ? "up" : "down");
		number("slave_read_repl_offset", offset);
		number("slave_repl_offset", offset);
		number("slave_read_only", 1);
		number("connected_slaves", 0);
		/* Where the primary's WAL ends, as it last said: less slave_repl_offset is how far this
		 * standby's cache lags behind (docs/MONITORING.md, "Alerts"). */
		number("master_repl_offset", primary != nullptr && primary->offset > offset ? primary->offset : offset);
		return;
	}
	field("role", "master");
	size_t replicas = 0;
	for (const ClusterNode &node : state.nodes)
		replicas += !node.primary && node.health != ClusterNode::Health::Failed;
	number("connected_slaves", replicas);
	size_t index = 0;
	for (const ClusterNode &node : state.nodes) {
		if (node.primary || node.health == ClusterNode::Health::Failed)
			continue;
		out.append("slave");
		append_number(out, index++);
		out.append(":ip=").append(node.host).append(",port=");
		append_number(out, node.port);
		out.append(",state=").append(node.health == ClusterNode::Health::Online ? "online" : "wait_bgsave");
		out.append(",offset=");
		append_number(out, node.offset);
		out.append(",lag=0\r\n");
	}
	number("master_repl_offset", offset);
}

/*
 * WAIT numreplicas timeout: how many standbys have replayed the connection's writes, once that
 * many have or after timeout ms (0: no limit). It never holds the loop: until then it asks to
 * run again (Session::retry_later), keeping what it waits for in the session.
 */
void wait_command(CommandContext &c)
{
	int64_t wanted = 0;
	int64_t timeout_ms = 0;
	if (!parse_nonnegative(c.arg(1), &wanted)) {
		c.reply.error("value is out of range, must be positive");
		return;
	}
	if (!parse_nonnegative(c.arg(2), &timeout_ms)) {
		c.reply.error(c.arg(2).size() > 0 && c.arg(2)[0] == '-' ? "timeout is negative"
																 : "timeout is not an integer or out of range");
		return;
	}
	if (c.cluster == nullptr) {
		c.reply.integer(0);
		return;
	}
	if (c.cluster->replica()) {
		c.reply.error("WAIT cannot be used with replica instances.");
		return;
	}
	int64_t now_us = c.data.server.now_microseconds();
	if (!c.session.waiting) {
		c.session.wait_position = c.cluster->wait_position(c.session);
		c.session.wait_deadline_us = timeout_ms > 0 ? now_us + timeout_ms * 1000 : 0;
	}
	int replayed = c.cluster->replicas_at(c.session.wait_position);
	/* Inside EXEC nothing may wait: answer what is true now, as Redis does. */
	bool done = replayed >= wanted || c.session.multi.active ||
		(c.session.wait_deadline_us != 0 && now_us >= c.session.wait_deadline_us);
	if (!done) {
		c.session.waiting = true;
		c.session.retry_later = true;
		return;
	}
	c.session.waiting = false;
	c.reply.integer(replayed);
}

} // namespace local_cache::resp
