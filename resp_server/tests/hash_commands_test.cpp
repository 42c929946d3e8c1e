/*
 * hash_commands_test.cpp — Boost.Test cases of the hash commands (resp_server/commands/hash_commands.cpp)
 * against a fake DataSource: HGET, HMGET, HGETALL and the commands that read the same columns
 * (HEXISTS, HSTRLEN, HKEYS, HVALS, HLEN) in RESP2 and RESP3.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/command_harness.h"

using resp_test::Connection;

BOOST_AUTO_TEST_SUITE(data_commands)

BOOST_AUTO_TEST_CASE(hash_commands)
{
	Connection c;
	BOOST_TEST(c.run({"HGET", "items:1", "value"}) == "$3\r\none\r\n");
	BOOST_TEST(c.run({"HGET", "items:1", "note"}) == "$-1\r\n"); /* NULL column */
	BOOST_TEST(c.run({"HGET", "items:1", "nosuchcolumn"}) == "$-1\r\n");
	BOOST_TEST(c.run({"HGET", "items:3", "value"}) == "$-1\r\n");
	BOOST_TEST(c.run({"HGET", "items:x", "value"}) == "$-1\r\n");
	BOOST_TEST(c.run({"HMGET", "items:2", "note", "missing", "id", "value"}) ==
			   "*4\r\n$6\r\nsecond\r\n$-1\r\n$1\r\n2\r\n$3\r\ntwo\r\n");
	BOOST_TEST(c.run({"HMGET", "items:99", "id", "value"}) == "*2\r\n$-1\r\n$-1\r\n");
	BOOST_TEST(c.run({"HMGET", "not-a-key", "id"}) == "*1\r\n$-1\r\n");

	/* HGETALL: RESP2 flat array, RESP3 map; NULL columns are absent fields. */
	BOOST_TEST(c.run({"HGETALL", "items:1"}) == "*4\r\n$2\r\nid\r\n$1\r\n1\r\n$5\r\nvalue\r\n$3\r\none\r\n");
	BOOST_TEST(c.run({"HGETALL", "items:3"}) == "*0\r\n");
	BOOST_TEST(c.run({"HGETALL", "items:01"}) == "*0\r\n");
	c.session.protocol = 3;
	BOOST_TEST(c.run({"HGETALL", "items:2"}) ==
			   "%3\r\n$2\r\nid\r\n$1\r\n2\r\n$5\r\nvalue\r\n$3\r\ntwo\r\n$4\r\nnote\r\n$6\r\nsecond\r\n");
	BOOST_TEST(c.run({"HGETALL", "items:3"}) == "%0\r\n");
	BOOST_TEST(c.run({"HMGET", "items:1", "note"}) == "*1\r\n_\r\n");
}

BOOST_AUTO_TEST_CASE(hash_introspection)
{
	Connection c;
	BOOST_TEST(c.run({"HEXISTS", "items:1", "value"}) == ":1\r\n");
	BOOST_TEST(c.run({"HEXISTS", "items:1", "note"}) == ":0\r\n"); /* NULL column */
	BOOST_TEST(c.run({"HEXISTS", "items:1", "nosuchcolumn"}) == ":0\r\n");
	BOOST_TEST(c.run({"HEXISTS", "items:3", "value"}) == ":0\r\n");
	BOOST_TEST(c.run({"HSTRLEN", "items:2", "note"}) == ":6\r\n");
	BOOST_TEST(c.run({"HSTRLEN", "items:1", "note"}) == ":0\r\n");
	BOOST_TEST(c.run({"HSTRLEN", "items:3", "id"}) == ":0\r\n");
	BOOST_TEST(c.run({"HKEYS", "items:2"}) == "*3\r\n$2\r\nid\r\n$5\r\nvalue\r\n$4\r\nnote\r\n");
	BOOST_TEST(c.run({"HVALS", "items:2"}) == "*3\r\n$1\r\n2\r\n$3\r\ntwo\r\n$6\r\nsecond\r\n");
	BOOST_TEST(c.run({"HKEYS", "items:3"}) == "*0\r\n");
	BOOST_TEST(c.run({"HVALS", "items:x"}) == "*0\r\n");
	BOOST_TEST(c.run({"HLEN", "items:1"}) == ":2\r\n");
	BOOST_TEST(c.run({"HLEN", "items:3"}) == ":0\r\n");
	const std::string noperm = "-NOPERM permission denied for table secret\r\n";
	for (const char *command : {"HKEYS", "HVALS", "HLEN"})
		BOOST_TEST(c.run({command, "secret:1"}) == noperm);
	BOOST_TEST(c.run({"HEXISTS", "secret:1", "id"}) == noperm);
	BOOST_TEST(c.run({"HSTRLEN", "secret:1", "id"}) == noperm);
}

BOOST_AUTO_TEST_SUITE_END()
