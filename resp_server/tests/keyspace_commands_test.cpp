/*
 * keyspace_commands_test.cpp — Boost.Test cases of the key commands (resp_server/commands/keyspace_commands.cpp)
 * against a fake DataSource: SCAN and KEYS, TYPE, TTL, PTTL and MEMORY USAGE, as redis-cli
 * --scan, --bigkeys and --memkeys call them.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/command_harness.h"

#include <set>
#include <string>
#include <vector>

using resp_test::Connection;
using resp_test::Value;

namespace {

/* Runs SCAN to the end with these options; the keys in the order returned. */
std::vector<std::string> scan_all(Connection &c, std::vector<std::string> options, int *calls = nullptr)
{
	std::vector<std::string> keys;
	std::string cursor = "0";
	int n = 0;
	do {
		resp_test::Args args = {"SCAN", cursor};
		args.insert(args.end(), options.begin(), options.end());
		Value reply = c.value(args);
		BOOST_REQUIRE(reply.type == '*');
		BOOST_REQUIRE(reply.elements.size() == 2u);
		cursor = reply.elements[0].text;
		for (const Value &key : reply.elements[1].elements)
			keys.push_back(key.text);
		BOOST_REQUIRE(++n < 100);
	} while (cursor != "0");
	if (calls != nullptr)
		*calls = n;
	return keys;
}

} // namespace

BOOST_AUTO_TEST_SUITE(keyspace_commands)

BOOST_AUTO_TEST_CASE(scan)
{
	Connection c;
	/* Readable tables only (secret and broken are skipped), a table at a time. */
	const std::vector<std::string> all = {"items:-7", "items:1", "items:2", "items:9223372036854775807",
										  "odd:7"};
	int calls = 0;
	BOOST_TEST(scan_all(c, {}, &calls) == all);
	BOOST_TEST(calls == 1); /* COUNT 10 */
	BOOST_TEST(scan_all(c, {"COUNT", "1"}, &calls) == all);
	BOOST_TEST(calls >= 5);
	BOOST_TEST(scan_all(c, {"COUNT", "2", "MATCH", "items:*"}) ==
			   std::vector<std::string>({"items:-7", "items:1", "items:2", "items:9223372036854775807"}));
	BOOST_TEST(scan_all(c, {"MATCH", "*:?"}) == std::vector<std::string>({"items:1", "items:2", "odd:7"}));
	BOOST_TEST(scan_all(c, {"match", "nothing*"}).empty());
	BOOST_TEST(scan_all(c, {"TYPE", "string"}) == all);
	BOOST_TEST(scan_all(c, {"TYPE", "hash"}).empty());
	BOOST_TEST(scan_all(c, {"TYPE", "nosuchtype"}).empty());

	/* A cursor can be continued on another connection of the same server (here: the same
	 * DataSource), and again: a cursor stays valid after use. */
	Value first = c.value({"SCAN", "0", "COUNT", "2"});
	std::string cursor = first.elements[0].text;
	BOOST_TEST(cursor != "0");
	Value again = c.value({"SCAN", cursor, "COUNT", "2"});
	BOOST_TEST(c.value({"SCAN", cursor, "COUNT", "2"}).elements[1].elements.size() ==
			   again.elements[1].elements.size());

	BOOST_TEST(c.run({"SCAN", "x"}) == "-ERR invalid cursor\r\n");
	BOOST_TEST(c.run({"SCAN", "-1"}) == "-ERR invalid cursor\r\n");
	BOOST_TEST(c.run({"SCAN", "18446744073709551616"}) == "-ERR invalid cursor\r\n");
	BOOST_TEST(c.run({"SCAN", "77"}) == "-ERR invalid cursor\r\n"); /* never handed out */
	BOOST_TEST(c.value({"SCAN", "00", "COUNT", "10"}).elements[1].elements.size() == all.size());
	Connection fresh; /* no cursor handed out on it yet */
	BOOST_TEST(fresh.run({"SCAN", "18446744073709551615"}) == "-ERR invalid cursor\r\n");
	BOOST_TEST(c.run({"SCAN", "0", "COUNT"}) == "-ERR syntax error\r\n");
	BOOST_TEST(c.run({"SCAN", "0", "COUNT", "0"}) == "-ERR syntax error\r\n");
	BOOST_TEST(c.run({"SCAN", "0", "COUNT", "x"}) == "-ERR value is not an integer or out of range\r\n");
	BOOST_TEST(c.run({"SCAN", "0", "LIMIT", "1"}) == "-ERR syntax error\r\n");
	/* A huge COUNT is a hint: one call examines at most 10000 keys. */
	BOOST_TEST(c.value({"SCAN", "0", "COUNT", "9223372036854775807"}).elements[1].elements.size() == all.size());
}

/* Cursors carry their position: nothing another client does makes one invalid, and a cursor
 * works on any connection of the server, of the same role only. */
BOOST_AUTO_TEST_CASE(scan_cursors_are_stateless_and_signed)
{
	Connection c;
	const std::vector<std::string> all = {"items:-7", "items:1", "items:2", "items:9223372036854775807",
										  "odd:7"};
	std::string cursor = c.value({"SCAN", "0", "COUNT", "2"}).elements[0].text;
	BOOST_TEST(cursor.size() >= 66u);
	BOOST_TEST(cursor.find_first_not_of("0123456789") == std::string::npos);
	BOOST_TEST(cursor[0] != '0');
	/* 8,200 walks started meanwhile (the shared ring of 8,192 cursors forgot the first). */
	for (int i = 0; i < 8200; i++)
		c.run({"SCAN", "0", "COUNT", "1"});
	std::vector<std::string> keys = {"items:-7", "items:1"};
	while (cursor != "0") {
		Value reply = c.value({"SCAN", cursor, "COUNT", "2"});
		BOOST_REQUIRE(reply.type == '*');
		cursor = reply.elements[0].text;
		for (const Value &key : reply.elements[1].elements)
			keys.push_back(key.text);
	}
	BOOST_TEST(keys == all);

	/* Another connection of the same role goes on; one of another role, or of a restarted
	 * server, does not. */
	cursor = c.value({"SCAN", "0", "COUNT", "2"}).elements[0].text;
	Connection same_role;
	same_role.session.role = c.session.role;
	BOOST_TEST(same_role.value({"SCAN", cursor, "COUNT", "10"}).elements[1].elements.size() == 3u);
	Connection alice;
	alice.session.role = alice.data.logins.authenticate(alice.session, std::string_view("alice"), "alice-pw").role;
	BOOST_TEST(alice.run({"SCAN", cursor}) == "-ERR invalid cursor\r\n");
	Connection restarted;
	restarted.data.rows.secret_seed = 8;
	BOOST_TEST(restarted.run({"SCAN", cursor}) == "-ERR invalid cursor\r\n");

	/* Any change to a cursor makes it invalid: every digit, one at a time. */
	int accepted = 0;
	for (size_t i = 0; i < cursor.size(); i++) {
		std::string forged = cursor;
		forged[i] = forged[i] == '9' ? '0' : char(forged[i] + 1);
		accepted += c.run({"SCAN", forged}) != "-ERR invalid cursor\r\n";
	}
	BOOST_TEST(accepted == 0);
	BOOST_TEST(c.run({"SCAN", cursor + "00000"}) == "-ERR invalid cursor\r\n");
	BOOST_TEST(c.run({"SCAN", cursor.substr(0, cursor.size() - 5)}) == "-ERR invalid cursor\r\n");
	BOOST_TEST(c.run({"SCAN", "0" + cursor}) == "-ERR invalid cursor\r\n");
}

/* redis-cli keeps the cursor in an unsigned 64-bit integer (strtoull saturates) and node-redis
 * v4 in a JavaScript number: what they send back continues the walk of their connection. */
BOOST_AUTO_TEST_CASE(scan_cursors_of_clients_that_truncate_them)
{
	const std::vector<std::string> all = {"items:-7", "items:1", "items:2", "items:9223372036854775807",
										  "odd:7"};
	for (std::string truncated : {"18446744073709551615", "Infinity", "1.2345678901234567e+99", "1e+21"}) {
		Connection c;
		std::vector<std::string> keys;
		std::string cursor = "0";
		int calls = 0;
		do {
			Value reply = c.value({"SCAN", calls == 0 ? cursor : truncated, "COUNT", "2"});
			BOOST_REQUIRE(reply.type == '*');
			cursor = reply.elements[0].text;
			for (const Value &key : reply.elements[1].elements)
				keys.push_back(key.text);
			BOOST_REQUIRE(++calls < 10);
		} while (cursor != "0");
		BOOST_TEST(keys == all, truncated);
		/* Only on the connection that was given the cursor. */
		Connection other;
		BOOST_TEST(other.run({"SCAN", truncated}) == "-ERR invalid cursor\r\n");
	}
	Connection c;
	for (std::string text : {"1.5e+", "e+12", "1.2.3e+4", "1e-5", "Infinity1"})
		BOOST_TEST(c.run({"SCAN", text}) == "-ERR invalid cursor\r\n", text);
}

BOOST_AUTO_TEST_CASE(keys)
{
	Connection c;
	Value reply = c.value({"KEYS", "*"});
	BOOST_TEST(reply.elements.size() == 5u);
	reply = c.value({"KEYS", "items:[12]"});
	BOOST_REQUIRE(reply.elements.size() == 2u);
	BOOST_TEST(reply.elements[0].text == "items:1");
	BOOST_TEST(reply.elements[1].text == "items:2");
	BOOST_TEST(c.run({"KEYS", "secret:*"}) == "*0\r\n");
	for (int64_t id = 100; id < 100200; id++)
		c.data.db.tables["big"][id] = resp_test::FakeTables::Row{"{}", {}};
	BOOST_TEST(c.run({"KEYS", "*"}) == "-ERR KEYS would examine more than 100000 keys; use SCAN\r\n");
	BOOST_TEST(c.run({"KEYS", "items:*"}).rfind("*4\r\n", 0) == 0); /* big is not read */
}

BOOST_AUTO_TEST_CASE(type_and_ttl)
{
	Connection c;
	BOOST_TEST(c.run({"TYPE", "items:1"}) == "+string\r\n");
	BOOST_TEST(c.run({"TYPE", "items:3"}) == "+none\r\n");
	BOOST_TEST(c.run({"TYPE", "items:01"}) == "+none\r\n");
	BOOST_TEST(c.run({"TTL", "items:1"}) == ":-1\r\n");
	BOOST_TEST(c.run({"PTTL", "items:1"}) == ":-1\r\n");
	BOOST_TEST(c.run({"TTL", "items:3"}) == ":-2\r\n");
	BOOST_TEST(c.run({"PTTL", "nosuchtable:1"}) == ":-2\r\n");
	BOOST_TEST(c.run({"TYPE", "secret:1"}) == "-NOPERM permission denied for table secret\r\n");
	BOOST_TEST(c.run({"TTL", "items:1", "x"}) == "-ERR wrong number of arguments for 'ttl' command\r\n");
}

BOOST_AUTO_TEST_CASE(memory_usage)
{
	Connection c;
	/* the JSON (22 bytes), the key (7) and Redis's per-key overhead (56) */
	BOOST_TEST(c.run({"MEMORY", "USAGE", "items:1"}) == ":85\r\n");
	BOOST_TEST(c.run({"MEMORY", "USAGE", "items:1", "SAMPLES", "0"}) == ":85\r\n");
	BOOST_TEST(c.run({"MEMORY", "USAGE", "items:3"}) == "$-1\r\n");
	BOOST_TEST(c.run({"MEMORY", "USAGE", "items:1", "SAMPLES"}) == "-ERR syntax error\r\n");
	BOOST_TEST(c.run({"MEMORY", "USAGE", "items:1", "COUNT", "5"}) == "-ERR syntax error\r\n");
	BOOST_TEST(c.run({"MEMORY", "USAGE", "items:1", "SAMPLES", "-1"}) ==
			   "-ERR value is out of range, must be positive\r\n");
	BOOST_TEST(c.run({"MEMORY", "USAGE", "secret:1"}) == "-NOPERM permission denied for table secret\r\n");
	BOOST_TEST(c.run({"MEMORY", "DOCTOR"}).rfind("-ERR unknown subcommand 'DOCTOR'", 0) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
