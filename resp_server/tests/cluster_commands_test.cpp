/*
 * cluster_commands_test.cpp — Boost.Test cases of the cluster commands
 * (resp_server/commands/cluster_commands.cpp) over a fake topology: Redis's key slots (CRC16
 * and hash tags), the shapes of CLUSTER SLOTS, SHARDS, NODES, INFO, MYID and ROLE as cluster
 * clients read them, -MOVED for writes and for reads before READONLY on a standby (inside MULTI
 * too) and for every read while its replay is not WAL its primary sent, READONLY and READWRITE, WAIT's count and its waiting without holding the loop, and the
 * error of every cluster command when cluster mode is off.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/command_harness.h"
#include "resp_server/tests/fake_cluster.h"

#include <string>

using namespace local_cache::resp;
using resp_test::Connection;
using resp_test::FakeCluster;
using resp_test::Value;

namespace {

struct ClusterConnection : Connection {
	FakeCluster cluster;
	ClusterConnection() { processor.set_cluster(&cluster); }
};

/* A map's value by key (RESP2: key, value, key, value ...). */
const Value *field(const Value &map, std::string_view key)
{
	for (size_t i = 0; i + 1 < map.elements.size(); i += 2)
		if (map.elements[i].text == key)
			return &map.elements[i + 1];
	return nullptr;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_commands)

BOOST_AUTO_TEST_CASE(key_slots_are_redis_crc16_with_hash_tags)
{
	BOOST_TEST(key_slot("123456789") == 0x31C3);
	BOOST_TEST(key_slot("foo") == 12182);
	BOOST_TEST(key_slot("bar") == 5061);
	BOOST_TEST(key_slot("hello") == 866);
	BOOST_TEST(key_slot("") == 0);
	/* A hash tag: the bytes between the first { and the first } after it, if any. */
	BOOST_TEST(key_slot("{user1000}.following") == key_slot("user1000"));
	BOOST_TEST(key_slot("foo{bar}{zap}") == key_slot("bar"));
	BOOST_TEST(key_slot("foo{{bar}}zap") == key_slot("{bar"));
	BOOST_TEST(key_slot("foo{}{bar}") == key_slot("foo{}{bar}"));
	BOOST_TEST(key_slot("foo{}{bar}") != key_slot("bar"));
	BOOST_TEST(key_slot("foo{bar") != key_slot("bar"));

	ClusterConnection c;
	Value slot = c.value({"CLUSTER", "KEYSLOT", "{users}:1"});
	BOOST_TEST(slot.integer == key_slot("users"));
}

BOOST_AUTO_TEST_CASE(cluster_commands_refused_without_cluster_mode)
{
	ClusterConnection c;
	c.cluster.on = false;
	for (const char *sub : {"SLOTS", "SHARDS", "NODES", "MYID", "INFO"})
		BOOST_TEST(c.run({"CLUSTER", sub}) == "-ERR This instance has cluster support disabled\r\n");
	BOOST_TEST(c.run({"READONLY"}) == "-ERR This instance has cluster support disabled\r\n");
	/* A standby out of cluster mode serves reads as before, and refuses nothing here. */
	c.cluster.standby = true;
	BOOST_TEST(c.run({"GET", "users:1"}).rfind("-MOVED", 0) == std::string::npos);
	/* Without any topology (a write worker), the same. */
	Connection plain;
	BOOST_TEST(plain.run({"CLUSTER", "SLOTS"}) == "-ERR This instance has cluster support disabled\r\n");
	BOOST_TEST(plain.value({"WAIT", "1", "0"}).integer == 0);
}

BOOST_AUTO_TEST_CASE(cluster_slots_one_range_primary_first)
{
	ClusterConnection c;
	Value slots = c.value({"CLUSTER", "SLOTS"});
	BOOST_REQUIRE(slots.elements.size() == 1);
	const Value &range = slots.elements[0];
	BOOST_REQUIRE(range.elements.size() == 5);
	BOOST_TEST(range.elements[0].integer == 0);
	BOOST_TEST(range.elements[1].integer == 16383);
	BOOST_TEST(range.elements[2].elements[0].text == "10.0.0.1");
	BOOST_TEST(range.elements[2].elements[1].integer == 6379);
	BOOST_TEST(range.elements[2].elements[2].text.size() == 40u);
	BOOST_TEST(range.elements[3].elements[0].text == "10.0.0.2");
	BOOST_TEST(range.elements[4].elements[0].text == "10.0.0.3");
	/* A standby that is down is left out, as Redis leaves out failed replicas. */
	c.cluster.second_standby_down = true;
	BOOST_TEST(c.value({"CLUSTER", "SLOTS"}).elements[0].elements.size() == 4u);
}

BOOST_AUTO_TEST_CASE(cluster_shards_nodes_info_myid)
{
	ClusterConnection c;
	c.cluster.second_standby_down = true;
	Value shards = c.value({"CLUSTER", "SHARDS"});
	BOOST_REQUIRE(shards.elements.size() == 1);
	const Value *slots = field(shards.elements[0], "slots");
	BOOST_REQUIRE(slots != nullptr);
	BOOST_TEST(slots->elements[1].integer == 16383);
	const Value *nodes = field(shards.elements[0], "nodes");
	BOOST_REQUIRE(nodes != nullptr);
	BOOST_REQUIRE(nodes->elements.size() == 3);
	BOOST_TEST(field(nodes->elements[0], "role")->text == "master");
	BOOST_TEST(field(nodes->elements[0], "replication-offset")->integer == 5000);
	BOOST_TEST(field(nodes->elements[1], "role")->text == "replica");
	BOOST_TEST(field(nodes->elements[1], "health")->text == "online");
	BOOST_TEST(field(nodes->elements[2], "health")->text == "failed");

	std::string text = c.value({"CLUSTER", "NODES"}).text;
	BOOST_TEST(text.find("aaaa" + std::string(36, '0') + " 10.0.0.1:6379@0 myself,master - 0 0 1 connected 0-16383\n") == 0u);
	BOOST_TEST(text.find(" 10.0.0.2:6379@0 slave aaaa") != std::string::npos);
	BOOST_TEST(text.find(" 10.0.0.3:6379@0 slave,fail aaaa") != std::string::npos);
	BOOST_TEST(text.find("disconnected") != std::string::npos);

	std::string info = c.value({"CLUSTER", "INFO"}).text;
	BOOST_TEST(info.find("cluster_state:ok\r\n") != std::string::npos);
	BOOST_TEST(info.find("cluster_known_nodes:3\r\n") != std::string::npos);
	BOOST_TEST(c.value({"CLUSTER", "MYID"}).text == "aaaa" + std::string(36, '0'));

	/* A standby whose link to the primary is down: the shard is down from here. */
	c.cluster.standby = true;
	c.cluster.link_up = false;
	BOOST_TEST(c.value({"CLUSTER", "INFO"}).text.find("cluster_state:fail\r\n") != std::string::npos);
	BOOST_TEST(c.value({"CLUSTER", "MYID"}).text == "bbbb" + std::string(36, '0'));
}

BOOST_AUTO_TEST_CASE(role_and_info_replication)
{
	ClusterConnection c;
	Value role = c.value({"ROLE"});
	BOOST_REQUIRE(role.elements.size() == 3);
	BOOST_TEST(role.elements[0].text == "master");
	BOOST_TEST(role.elements[1].integer == 5000);
	BOOST_REQUIRE(role.elements[2].elements.size() == 2);
	BOOST_TEST(role.elements[2].elements[0].elements[1].text == "6379");
	BOOST_TEST(role.elements[2].elements[1].elements[2].text == "4000");
	std::string info = c.value({"INFO", "replication"}).text;
	BOOST_TEST(info.find("connected_slaves:2\r\n") != std::string::npos);
	BOOST_TEST(info.find("slave1:ip=10.0.0.3,port=6379,state=online,offset=4000,lag=0\r\n") != std::string::npos);
	BOOST_TEST(info.find("master_repl_offset:5000\r\n") != std::string::npos);

	/* Inside MULTI too; WAIT there answers at once, as Redis's does. */
	c.run({"MULTI"});
	c.run({"ROLE"});
	c.run({"WAIT", "2", "0"});
	Value exec = c.value({"EXEC"});
	BOOST_REQUIRE(exec.elements.size() == 2);
	BOOST_TEST(exec.elements[0].elements[0].text == "master");
	BOOST_TEST(exec.elements[1].integer == 1);

	c.cluster.standby = true;
	role = c.value({"ROLE"});
	BOOST_REQUIRE(role.elements.size() == 5);
	BOOST_TEST(role.elements[0].text == "slave");
	BOOST_TEST(role.elements[1].text == "10.0.0.1");
	BOOST_TEST(role.elements[2].integer == 6379);
	BOOST_TEST(role.elements[3].text == "connected");
	BOOST_TEST(role.elements[4].integer == 5000);
	info = c.value({"INFO", "replication"}).text;
	BOOST_TEST(info.find("role:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\nmaster_link_status:up\r\n") !=
			   std::string::npos);
	BOOST_TEST(info.find("slave_repl_offset:5000\r\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(standby_moves_writes_and_reads_before_readonly)
{
	ClusterConnection c;
	c.cluster.standby = true;
	std::string moved = "-MOVED " + std::to_string(key_slot("users:1")) + " 10.0.0.1:6379\r\n";
	BOOST_TEST(c.run({"SET", "users:1", "{}"}) == moved);
	BOOST_TEST(c.run({"HSET", "users:1", "name", "x"}) == moved);
	BOOST_TEST(c.run({"DEL", "users:1", "users:2"}) == moved);
	BOOST_TEST(c.run({"GET", "users:1"}) == moved);
	BOOST_TEST(c.run({"MGET", "users:1", "users:2"}) == moved);
	/* Keyless commands run here. */
	BOOST_TEST(c.run({"PING"}) == "+PONG\r\n");
	BOOST_TEST(c.value({"DBSIZE"}).type == ':');

	/* After READONLY, reads are served here (any slots: one shard); writes still move. */
	BOOST_TEST(c.run({"READONLY"}) == "+OK\r\n");
	BOOST_TEST(c.run({"GET", "users:1"}).rfind("-MOVED", 0) == std::string::npos);
	BOOST_TEST(c.value({"MGET", "users:1", "{x}users:2", "users:3"}).elements.size() == 3u);
	BOOST_TEST(c.run({"SET", "users:1", "{}"}) == moved);

	/* MULTI with a write: refused when queued, so EXEC aborts, as in Redis. */
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"GET", "users:1"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"SET", "users:1", "{}"}) == moved);
	BOOST_TEST(c.run({"EXEC"}).rfind("-EXECABORT", 0) == 0u);

	BOOST_TEST(c.run({"READWRITE"}) == "+OK\r\n");
	BOOST_TEST(c.run({"GET", "users:1"}) == moved);
	c.run({"READONLY"});
	BOOST_TEST(c.run({"RESET"}) == "+RESET\r\n");
	BOOST_TEST(c.run({"GET", "users:1"}) == moved);

	/* A standby whose replay its primary has not sent it (a crashed primary restarted as a
	 * standby, before pg_rewind): even READONLY reads move to the primary, until it has. */
	c.run({"READONLY"});
	c.cluster.received = false;
	BOOST_TEST(c.run({"GET", "users:1"}) == moved);
	BOOST_TEST(c.run({"MGET", "users:1", "users:2"}) == moved);
	BOOST_TEST(c.run({"PING"}) == "+PONG\r\n");
	c.cluster.received = true;
	BOOST_TEST(c.run({"GET", "users:1"}).rfind("-MOVED", 0) == std::string::npos);
	c.run({"READWRITE"});

	/* A standby that does not know its primary. */
	c.cluster.primary_known = false;
	BOOST_TEST(c.run({"GET", "users:1"}) == "-CLUSTERDOWN Hash slot not served\r\n");

	/* The primary serves everything, READONLY or not. */
	ClusterConnection primary;
	BOOST_TEST(primary.run({"GET", "users:1"}).rfind("-MOVED", 0) == std::string::npos);
}

BOOST_AUTO_TEST_CASE(wait_counts_replayed_standbys_and_waits_without_blocking)
{
	ClusterConnection c;
	BOOST_TEST(c.value({"WAIT", "1", "100"}).integer == 1);
	/* Not enough standbys yet: no reply, run again later, until they replay or time runs out. */
	BOOST_TEST(c.run({"WAIT", "2", "100"}).empty());
	BOOST_TEST(c.session.retry_later);
	c.data.db.clock_microseconds += 50 * 1000;
	BOOST_TEST(c.run({"WAIT", "2", "100"}).empty());
	c.cluster.replayed[1] = 5000;
	BOOST_TEST(c.value({"WAIT", "2", "100"}).integer == 2);
	BOOST_TEST(!c.session.waiting);

	/* The timeout: the count reached so far. */
	c.cluster.flushed = 6000;
	c.cluster.replayed[1] = 6000;
	BOOST_TEST(c.run({"WAIT", "2", "100"}).empty());
	c.data.db.clock_microseconds += 100 * 1000;
	BOOST_TEST(c.value({"WAIT", "2", "100"}).integer == 1);
	/* The position is taken once, when WAIT starts waiting: later writes do not extend it. */
	BOOST_TEST(c.run({"WAIT", "2", "0"}).empty());
	c.cluster.flushed = 9000;
	c.cluster.replayed[0] = 6000;
	BOOST_TEST(c.value({"WAIT", "2", "0"}).integer == 2);

	BOOST_TEST(c.run({"WAIT", "-1", "0"}).rfind("-ERR", 0) == 0u);
	BOOST_TEST(c.run({"WAIT", "1", "-5"}) == "-ERR timeout is negative\r\n");
	c.cluster.standby = true;
	BOOST_TEST(c.run({"WAIT", "1", "0"}).rfind("-ERR WAIT cannot be used with replica instances", 0) == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
