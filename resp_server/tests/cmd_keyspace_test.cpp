/*
 * cmd_keyspace_test.cpp — Boost.Test cases of the key commands (resp_server/cmd_keyspace.cpp)
 * against a fake DataSource: TYPE, TTL, PTTL and MEMORY USAGE, as redis-cli --bigkeys and
 * --memkeys call them.
 */
#include <boost/test/unit_test.hpp>

#include "command_harness.h"

using resp_test::Connection;

BOOST_AUTO_TEST_SUITE(keyspace_commands)

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
