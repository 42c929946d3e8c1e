/*
 * server_commands_test.cpp — Boost.Test cases of the server commands (resp_server/commands/server_commands.cpp)
 * against a fake DataSource: COMMAND COUNT/LIST/INFO, COMMAND DOCS as redis-cli reads it,
 * INFO as ioredis reads it, CONFIG GET/SET/HELP, and SLOWLOG and LATENCY as Redis answers them
 * (and prometheus-redis-exporter reads them), with other roles' entries shown only to roles
 * with pg_read_all_stats's privileges.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/command_harness.h"

#include <map>
#include <set>
#include <string>

using namespace local_cache::resp;
using resp_test::Connection;
using resp_test::Value;

namespace {

/* What redis-cli asserts about COMMAND DOCS (redis-cli.c cliInitCommandHelpEntry). */
void check_docs_entry_like_redis_cli(const Value &docs)
{
	BOOST_REQUIRE(docs.is_aggregate());
	BOOST_REQUIRE(docs.elements.size() % 2 == 0);
	for (size_t j = 0; j < docs.elements.size(); j += 2) {
		const Value &key = docs.elements[j];
		const Value &value = docs.elements[j + 1];
		BOOST_TEST(key.type == '$');
		if (key.text == "summary" || key.text == "since" || key.text == "group")
			BOOST_TEST(value.type == '$');
		else if (key.text == "arguments")
			BOOST_TEST(value.type == '*');
		else if (key.text == "subcommands") {
			BOOST_REQUIRE(value.is_aggregate());
			for (size_t i = 0; i < value.elements.size(); i += 2) {
				BOOST_TEST(value.elements[i].type == '$');
				check_docs_entry_like_redis_cli(value.elements[i + 1]);
			}
		}
	}
}

/* ioredis's parsing of INFO: "name:value" lines. */
std::map<std::string, std::string> info_fields(const std::string &info)
{
	std::map<std::string, std::string> fields;
	size_t start = 0;
	while (start < info.size()) {
		size_t end = info.find("\r\n", start);
		if (end == std::string::npos)
			end = info.size();
		std::string line = info.substr(start, end - start);
		size_t colon = line.find(':');
		if (!line.empty() && line[0] != '#' && colon != std::string::npos)
			fields[line.substr(0, colon)] = line.substr(colon + 1);
		start = end + 2;
	}
	return fields;
}

} // namespace

BOOST_AUTO_TEST_SUITE(server_commands)

BOOST_AUTO_TEST_CASE(command_count_list_info)
{
	Connection c;
	size_t rows = command_table().count;
	BOOST_TEST(c.run({"COMMAND", "COUNT"}) == ":" + std::to_string(rows) + "\r\n");

	Value all = c.value({"COMMAND"});
	BOOST_TEST(all.elements.size() == rows);
	BOOST_TEST(c.value({"COMMAND", "INFO"}).elements.size() == rows);

	Value info = c.value({"COMMAND", "INFO", "get", "NOSUCH", "mget", "client|setname"});
	BOOST_REQUIRE(info.elements.size() == 4u);
	const Value &get = info.elements[0];
	BOOST_REQUIRE(get.elements.size() == 10u);
	BOOST_TEST(get.elements[0].text == "get");
	BOOST_TEST(get.elements[1].integer == 2);
	std::set<std::string> flags;
	for (const Value &flag : get.elements[2].elements) {
		BOOST_TEST(flag.type == '+');
		flags.insert(flag.text);
	}
	BOOST_TEST(flags.count("readonly") == 1u);
	BOOST_TEST(flags.count("fast") == 1u);
	BOOST_TEST(get.elements[3].integer == 1);
	BOOST_TEST(get.elements[4].integer == 1);
	BOOST_TEST(get.elements[5].integer == 1);
	BOOST_TEST(info.elements[1].is_null);
	BOOST_TEST(info.elements[2].elements[4].integer == -1); /* mget: keys to the end */
	BOOST_TEST(info.elements[3].elements[0].text == "client|setname");
	BOOST_TEST(info.elements[3].elements[1].integer == 3);

	/* Containers list their subcommands as the tenth element. */
	Value client = c.value({"COMMAND", "INFO", "client"}).elements[0];
	BOOST_TEST(client.elements[9].elements.size() == find_command("client")->subcommand_count);

	Value list = c.value({"COMMAND", "LIST"});
	std::set<std::string> names;
	for (const Value &name : list.elements)
		names.insert(name.text);
	BOOST_TEST(names.count("get") == 1u);
	BOOST_TEST(names.count("client|setinfo") == 1u);

	c.session.protocol = 3;
	Value three = c.value({"COMMAND", "INFO", "get"});
	BOOST_TEST(three.elements[0].elements[2].type == '~'); /* flags are a set in RESP3 */
}

BOOST_AUTO_TEST_CASE(command_docs_as_redis_cli_reads_them)
{
	for (int protocol : {2, 3}) {
		Connection c;
		c.session.protocol = protocol;
		Value docs = c.value({"COMMAND", "DOCS"});
		BOOST_TEST(docs.type == (protocol == 3 ? '%' : '*'));
		BOOST_REQUIRE(docs.elements.size() == 2 * command_table().count);
		for (size_t i = 0; i < docs.elements.size(); i += 2) {
			BOOST_TEST(docs.elements[i].type == '$');
			check_docs_entry_like_redis_cli(docs.elements[i + 1]);
		}
		const Value *get = docs.find("get");
		BOOST_REQUIRE(get != nullptr);
		BOOST_TEST(get->find("summary")->text.find("JSON") != std::string::npos);
		BOOST_TEST(get->find("group")->text == "string");
		const Value *client = docs.find("client");
		BOOST_REQUIRE(client != nullptr);
		BOOST_REQUIRE(client->find("subcommands") != nullptr);
		BOOST_TEST(client->find("subcommands")->find("client|setinfo") != nullptr);

		Value some = c.value({"COMMAND", "DOCS", "GET", "nosuch", "client|id"});
		BOOST_REQUIRE(some.elements.size() == 4u);
		BOOST_TEST(some.elements[0].text == "get");
		BOOST_TEST(some.elements[2].text == "client|id");
	}
}

BOOST_AUTO_TEST_CASE(info)
{
	Connection c;
	Value reply = c.value({"INFO"});
	BOOST_TEST(reply.type == '$');
	/* ioredis's ready check. */
	BOOST_TEST(reply.text.find("\r\nloading:0\r\n") != std::string::npos);
	auto fields = info_fields(reply.text);
	BOOST_TEST(fields["redis_version"] == std::string(kRedisCompatibleVersion));
	BOOST_TEST(fields["local_cache_version"] == "1.0");
	BOOST_TEST(fields["process_id"] == "4242");
	BOOST_TEST(fields["tcp_port"] == "6380");
	BOOST_TEST(fields["uptime_in_days"] == "2");
	BOOST_TEST(fields["connected_clients"] == "3");
	BOOST_TEST(fields["maxclients"] == "10000");
	BOOST_TEST(fields["client_recent_max_output_buffer"] == "0");
	BOOST_TEST(fields["used_memory"] == "3670016");
	BOOST_TEST(fields["used_memory_human"] == "3.50M");
	BOOST_TEST(fields["maxmemory_human"] == "128.00M");
	BOOST_TEST(fields["keyspace_hits"] == "11");
	BOOST_TEST(fields["keyspace_misses"] == "5");
	BOOST_TEST(fields["evicted_keys"] == "2");
	BOOST_TEST(fields["total_commands_processed"] == "99");
	BOOST_TEST(fields["role"] == "master");
	BOOST_TEST(fields["db0"] == "keys=6,expires=0,avg_ttl=0");
	BOOST_TEST(reply.text.rfind("# Server\r\n", 0) == 0);
	BOOST_TEST(reply.text.find("\r\n\r\n# Clients\r\n") != std::string::npos);
	BOOST_TEST(reply.text.substr(reply.text.size() - 2) == "\r\n");

	/* Sections, case-insensitive, several at once; unknown ones add nothing. */
	Value server = c.value({"INFO", "SERVER"});
	BOOST_TEST(server.text.find("# Server") == 0u);
	BOOST_TEST(server.text.find("# Clients") == std::string::npos);
	Value two = c.value({"info", "stats", "keyspace"});
	BOOST_TEST(two.text.rfind("# Stats\r\n", 0) == 0);
	BOOST_TEST(two.text.find("# Keyspace\r\ndb0:keys=6") != std::string::npos);
	BOOST_TEST(c.value({"INFO", "nosuchsection"}).text.empty());
	BOOST_TEST(c.value({"INFO", "default"}).text == reply.text);

	/* On a standby, where the primary is only to members of pg_read_all_stats. */
	c.data.server.info.master_repl_offset = 9000;
	BOOST_TEST(info_fields(c.value({"INFO", "replication"}).text)["master_repl_offset"] == "9000");
	BOOST_TEST(info_fields(c.value({"INFO", "replication"}).text).count("slave_repl_offset") == 0u);
	c.data.server.info.replica = true;
	c.data.server.info.master_host = "primary.example";
	c.data.server.info.master_port = 5432;
	c.data.server.info.slave_repl_offset = 7000;
	fields = info_fields(c.value({"INFO", "replication"}).text);
	BOOST_TEST(fields["role"] == "slave");
	/* The alerts' standby lag (docs/MONITORING.md): the primary's WAL end less what was replayed. */
	BOOST_TEST(fields["master_repl_offset"] == "9000");
	BOOST_TEST(fields["slave_repl_offset"] == "7000");
	BOOST_TEST(fields.count("master_host") == 0u);
	BOOST_TEST(fields.count("master_port") == 0u);
	c.data.server.stats_readers.insert(c.session.role->id);
	fields = info_fields(c.value({"INFO", "replication"}).text);
	BOOST_TEST(fields["master_host"] == "primary.example");
	BOOST_TEST(fields["master_port"] == "5432");
	c.data.server.info.replica = false;

	/* An empty keyspace shows no db0 line, as in Redis. */
	c.data.rows.key_count = 0;
	BOOST_TEST(c.value({"INFO", "keyspace"}).text == "# Keyspace\r\n");

	/* RESP3: a verbatim string, as Redis 7 sends it (redis-cli accepts both). */
	c.session.protocol = 3;
	Value three = c.value({"INFO", "server"});
	BOOST_TEST(three.type == '=');
	BOOST_TEST(three.verbatim_format == "txt");
	BOOST_TEST(three.text == server.text);
}

BOOST_AUTO_TEST_CASE(config_get)
{
	Connection c;
	/* What redis-benchmark asks at start. */
	BOOST_TEST(c.run({"CONFIG", "GET", "save"}) == "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
	BOOST_TEST(c.run({"CONFIG", "GET", "appendonly"}) == "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
	BOOST_TEST(c.run({"config", "get", "SAVE"}) == "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
	BOOST_TEST(c.run({"CONFIG", "GET", "nosuchparameter"}) == "*0\r\n");

	Value maxes = c.value({"CONFIG", "GET", "max*"});
	BOOST_TEST(maxes.find("maxclients")->text == "10000");
	BOOST_TEST(maxes.find("maxmemory")->text == "134217728");
	BOOST_TEST(maxes.find("maxmemory-policy") != nullptr);
	BOOST_TEST(maxes.find("save") == nullptr);

	/* Several patterns; a parameter matched twice is listed once. */
	Value several = c.value({"CONFIG", "GET", "save", "s?ve", "appendonly", "port"});
	BOOST_TEST(several.elements.size() == 6u);
	BOOST_TEST(several.find("port")->text == "6380");

	Value all = c.value({"CONFIG", "GET", "*"});
	BOOST_TEST(all.elements.size() >= 20u);
	BOOST_TEST(all.find("proto-max-bulk-len")->text == "536870912");
	BOOST_TEST(all.find("databases")->text == "1");
	c.processor.configure_slowlog(SlowlogSettings{-1, 5});
	Value slowlog = c.value({"CONFIG", "GET", "slowlog-*"});
	BOOST_TEST(slowlog.find("slowlog-log-slower-than")->text == "-1");
	BOOST_TEST(slowlog.find("slowlog-max-len")->text == "5");

	c.session.protocol = 3;
	BOOST_TEST(c.run({"CONFIG", "GET", "appendonly"}) == "%1\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");

	BOOST_TEST(c.run({"CONFIG", "SET", "save", ""}).rfind("-ERR CONFIG SET is not supported", 0) == 0);
	BOOST_TEST(c.value({"CONFIG", "HELP"}).elements.size() >= 3u);
}

BOOST_AUTO_TEST_CASE(time)
{
	Connection c;
	Value reply = c.value({"TIME"});
	BOOST_REQUIRE(reply.type == '*');
	BOOST_REQUIRE(reply.elements.size() == 2u);
	int64_t seconds = std::stoll(reply.elements[0].text);
	int64_t micros = std::stoll(reply.elements[1].text);
	BOOST_TEST(seconds == 1764500000);
	BOOST_TEST(micros == 123456);
}

/* A connection whose GETs take `cost_us` (the fake's clock moves while it looks rows up). */
struct SlowConnection : Connection {
	explicit SlowConnection(int64_t cost_us)
	{
		data.rows.get_rows_cost_us = cost_us;
		processor.configure_slowlog(SlowlogSettings{10000, 128});
	}
};

BOOST_AUTO_TEST_CASE(slowlog_get_len_reset)
{
	SlowConnection c(25000);
	c.run({"GET", "items:1"});
	c.data.rows.get_rows_cost_us = 10;
	c.run({"GET", "items:2"}); /* fast: not logged */
	BOOST_TEST(c.run({"SLOWLOG", "LEN"}) == ":1\r\n");
	Value entries = c.value({"SLOWLOG", "GET"});
	BOOST_REQUIRE(entries.type == '*');
	BOOST_REQUIRE(entries.elements.size() == 1u);
	const Value &entry = entries.elements[0];
	BOOST_REQUIRE(entry.elements.size() == 6u);
	BOOST_TEST(entry.elements[0].integer == 0);
	BOOST_TEST(entry.elements[1].integer == 1764500000);
	BOOST_TEST(entry.elements[2].integer == 25000);
	BOOST_REQUIRE(entry.elements[3].elements.size() == 2u);
	BOOST_TEST(entry.elements[3].elements[0].text == "GET");
	BOOST_TEST(entry.elements[3].elements[1].text == "items:1");
	BOOST_TEST(entry.elements[4].text == "127.0.0.1:50000");
	BOOST_TEST(entry.elements[5].text == "");
	BOOST_TEST(c.run({"SLOWLOG", "GET", "0"}) == "*0\r\n");
	BOOST_TEST(c.run({"SLOWLOG", "GET", "x"}) == "-ERR count should be greater than or equal to -1\r\n");
	BOOST_TEST(c.run({"SLOWLOG", "GET", "-2"}) == "-ERR count should be greater than or equal to -1\r\n");
	c.data.rows.get_rows_cost_us = 25000;
	c.run({"GET", "items:3"});
	BOOST_TEST(c.value({"SLOWLOG", "GET", "-1"}).elements.size() == 2u);
	Value newest = c.value({"SLOWLOG", "GET", "1"});
	BOOST_REQUIRE(newest.elements.size() == 1u);
	BOOST_TEST(newest.elements[0].elements[3].elements[1].text == "items:3");

	/* RESET forgets every role's requests: for roles with pg_read_all_stats's privileges. */
	BOOST_TEST(c.run({"SLOWLOG", "RESET"}).rfind("-NOPERM ", 0) == 0);
	BOOST_TEST(c.run({"SLOWLOG", "LEN"}) == ":2\r\n");
	c.data.server.stats_readers.insert(10);
	BOOST_TEST(c.run({"SLOWLOG", "RESET"}) == "+OK\r\n");
	BOOST_TEST(c.run({"SLOWLOG", "LEN"}) == ":0\r\n");
	BOOST_TEST(c.value({"SLOWLOG", "HELP"}).elements.size() > 4u);
}

BOOST_AUTO_TEST_CASE(slowlog_shows_other_roles_entries_only_to_all_stats_readers)
{
	SlowConnection c(25000);
	c.session.role = AuthenticatedRole{20, "alice"};
	c.run({"GET", "items:1"});
	c.session.role = AuthenticatedRole{10, "cache_reader"};
	c.run({"GET", "items:2"});
	Value own = c.value({"SLOWLOG", "GET"});
	BOOST_REQUIRE(own.elements.size() == 1u);
	BOOST_TEST(own.elements[0].elements[3].elements[1].text == "items:2");
	BOOST_TEST(c.run({"SLOWLOG", "LEN"}) == ":1\r\n");
	c.data.server.stats_readers.insert(10);
	BOOST_TEST(c.value({"SLOWLOG", "GET"}).elements.size() == 2u);
	BOOST_TEST(c.run({"SLOWLOG", "LEN"}) == ":2\r\n");
}

BOOST_AUTO_TEST_CASE(latency_shows_other_roles_requests_only_to_all_stats_readers)
{
	SlowConnection c(25000);
	c.session.role = AuthenticatedRole{20, "alice"};
	c.run({"GET", "items:1"});
	c.session.role = AuthenticatedRole{10, "cache_reader"};
	c.data.rows.get_rows_cost_us = 10;
	c.run({"MGET", "items:1"});
	/* The calls to LATENCY are requests too: each one after the first shows the one before. */
	BOOST_TEST(c.run({"LATENCY", "LATEST"}) == "*0\r\n");
	Value own = c.value({"LATENCY", "HISTOGRAM"});
	BOOST_TEST(own.find("get") == nullptr);
	BOOST_TEST(own.find("mget") != nullptr);
	BOOST_TEST(own.find("latency|latest") != nullptr);
	BOOST_TEST(c.run({"LATENCY", "HISTOGRAM", "get"}) == "*0\r\n");

	c.session.role = AuthenticatedRole{20, "alice"};
	BOOST_TEST(c.value({"LATENCY", "LATEST"}).elements.size() == 1u);
	BOOST_TEST(c.value({"LATENCY", "HISTOGRAM", "get", "mget"}).find("mget") == nullptr);

	c.session.role.reset();
	BOOST_TEST(c.run({"LATENCY", "LATEST"}).rfind("-NOAUTH ", 0) == 0);

	c.session.role = AuthenticatedRole{10, "cache_reader"};
	c.data.server.stats_readers.insert(10);
	BOOST_TEST(c.value({"LATENCY", "LATEST"}).elements.size() == 1u);
	Value all = c.value({"LATENCY", "HISTOGRAM", "get", "mget"});
	BOOST_TEST(all.find("get") != nullptr);
	BOOST_TEST(all.find("mget") != nullptr);
}

BOOST_AUTO_TEST_CASE(latency_latest_histogram_reset)
{
	SlowConnection c(25000);
	BOOST_TEST(c.run({"LATENCY", "LATEST"}) == "*0\r\n");
	c.run({"GET", "items:1"});
	Value latest = c.value({"LATENCY", "LATEST"});
	BOOST_REQUIRE(latest.elements.size() == 1u);
	BOOST_REQUIRE(latest.elements[0].elements.size() == 4u);
	BOOST_TEST(latest.elements[0].elements[0].text == "command");
	BOOST_TEST(latest.elements[0].elements[1].integer == 1764500000);
	BOOST_TEST(latest.elements[0].elements[2].integer == 25);
	BOOST_TEST(latest.elements[0].elements[3].integer == 25);

	c.run({"CLIENT", "ID"});
	/* As prometheus-redis-exporter reads it: name, then calls and histogram_usec (bucket,
	 * cumulative count ...), for every command that ran. */
	Value all = c.value({"LATENCY", "HISTOGRAM"});
	BOOST_REQUIRE(all.type == '*');
	const Value *get = all.find("get");
	BOOST_REQUIRE(get != nullptr);
	BOOST_TEST(get->find("calls")->integer == 1);
	const Value *buckets = get->find("histogram_usec");
	BOOST_REQUIRE(buckets != nullptr);
	BOOST_REQUIRE(buckets->elements.size() == 2u * 16u); /* 1 µs .. 32768 µs */
	BOOST_TEST(buckets->elements[0].integer == 1);
	BOOST_TEST(buckets->elements[1].integer == 0);
	BOOST_TEST(buckets->elements[30].integer == 32768);
	BOOST_TEST(buckets->elements[31].integer == 1);
	BOOST_TEST(all.find("client|id") != nullptr);
	BOOST_TEST(all.find("latency|latest") != nullptr);

	Value named = c.value({"LATENCY", "HISTOGRAM", "GET", "client|id", "nosuch", "mget"});
	BOOST_TEST(named.elements.size() == 4u);
	c.run({"HELLO", "3"});
	BOOST_TEST(c.value({"LATENCY", "HISTOGRAM", "get"}).type == '%');

	BOOST_TEST(c.run({"LATENCY", "RESET"}).rfind("-NOPERM ", 0) == 0);
	c.data.server.stats_readers.insert(10);
	BOOST_TEST(c.run({"LATENCY", "RESET", "other"}) == ":0\r\n");
	BOOST_TEST(c.run({"LATENCY", "RESET"}) == ":1\r\n");
	BOOST_TEST(c.run({"LATENCY", "LATEST"}) == "*0\r\n");
	BOOST_TEST(c.value({"LATENCY", "HELP"}).elements.size() > 4u);
}

BOOST_AUTO_TEST_SUITE_END()
