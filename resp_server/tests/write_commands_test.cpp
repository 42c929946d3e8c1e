/*
 * write_commands_test.cpp — Boost.Test cases of the write commands (SET, SETNX, GETSET, MSET,
 * MSETNX in string_commands.cpp; DEL, UNLINK in keyspace_commands.cpp; HSET, HMSET, HDEL, HINCRBY,
 * HINCRBYFLOAT in hash_commands.cpp) against a fake DataSource: options, replies, argument errors.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/command_harness.h"

#include <string>

using resp_test::Connection;

BOOST_AUTO_TEST_SUITE(write_commands)

BOOST_AUTO_TEST_CASE(set)
{
	Connection c;
	BOOST_TEST(c.run({"SET", "items:5", "{\"id\":5}"}) == "+OK\r\n");
	BOOST_TEST(c.run({"GET", "items:5"}) == "$8\r\n{\"id\":5}\r\n");
	BOOST_TEST(c.run({"SET", "items:5", "{\"id\":5,\"v\":1}", "NX"}) == "$-1\r\n");
	BOOST_TEST(c.run({"SET", "items:6", "{}", "XX"}) == "$-1\r\n");
	BOOST_TEST(c.run({"SET", "items:5", "{\"v\":2}", "xx", "GET"}) == "$8\r\n{\"id\":5}\r\n");
	BOOST_TEST(c.run({"SET", "items:6", "{}", "GET"}) == "$-1\r\n");
	BOOST_TEST(c.run({"SET", "items:6", "{}", "NX", "XX"}) == "-ERR syntax error\r\n");
	BOOST_TEST(c.run({"SET", "items:6", "{}", "GET", "GET"}) == "-ERR syntax error\r\n");
	BOOST_TEST(c.run({"SET", "items:6", "{}", "EX", "10"}) == "-ERR rows do not expire: EX is not supported\r\n");
	BOOST_TEST(c.run({"SET", "items:6", "{}", "keepttl"}) == "-ERR rows do not expire: KEEPTTL is not supported\r\n");
	BOOST_TEST(c.run({"SET", "items:6", "{}", "EX"}) == "-ERR syntax error\r\n");
	BOOST_TEST(c.run({"SET", "items:01", "{}"}) == "-ERR invalid key 'items:01': not a key of table items (SQLSTATE 22023)\r\n");
	BOOST_TEST(c.run({"SET", "nosuch:1", "{}"}) == "-ERR no enabled table has the RESP prefix \"nosuch\" (SQLSTATE 42P01)\r\n");
	BOOST_TEST(c.run({"SET", "secret:1", "{}"}) == "-NOPERM permission denied for table secret\r\n");
	BOOST_TEST(c.run({"SETNX", "items:7", "{}"}) == ":1\r\n");
	BOOST_TEST(c.run({"SETNX", "items:7", "{}"}) == ":0\r\n");
	BOOST_TEST(c.run({"GETSET", "items:7", "{\"a\":1}"}) == "$2\r\n{}\r\n");
	c.data.writes.replica = true;
	BOOST_TEST(c.run({"SET", "items:5", "{}"}) == "-READONLY You can't write against a read only replica.\r\n");
}

BOOST_AUTO_TEST_CASE(mset)
{
	Connection c;
	BOOST_TEST(c.run({"MSET", "items:5", "{}", "items:6", "{}"}) == "+OK\r\n");
	BOOST_TEST(c.run({"EXISTS", "items:5", "items:6"}) == ":2\r\n");
	BOOST_TEST(c.run({"MSETNX", "items:6", "{}", "items:8", "{}"}) == ":0\r\n");
	BOOST_TEST(c.run({"EXISTS", "items:8"}) == ":0\r\n"); /* all or none */
	BOOST_TEST(c.run({"MSETNX", "items:8", "{}", "items:9", "{}"}) == ":1\r\n");
	BOOST_TEST(c.run({"MSET", "items:5", "{}", "items:6"}) == "-ERR wrong number of arguments for 'mset' command\r\n");
	BOOST_TEST(c.run({"MSET", "items:5", "{}", "bad", "{}"}) == "-ERR invalid key 'bad': a row's key is <prefix>:<id>\r\n");
}

BOOST_AUTO_TEST_CASE(del)
{
	Connection c;
	BOOST_TEST(c.run({"DEL", "items:1", "items:1", "items:3", "nosuch:1", "bad"}) == ":1\r\n");
	BOOST_TEST(c.run({"UNLINK", "items:2"}) == ":1\r\n");
	BOOST_TEST(c.run({"EXISTS", "items:1", "items:2"}) == ":0\r\n");
	BOOST_TEST(c.run({"DEL", "bad"}) == ":0\r\n");
}

BOOST_AUTO_TEST_CASE(hashes)
{
	Connection c;
	BOOST_TEST(c.run({"HSET", "items:1", "value", "uno"}) == ":0\r\n"); /* an existing row */
	BOOST_TEST(c.run({"HGET", "items:1", "value"}) == "$3\r\nuno\r\n");
	BOOST_TEST(c.run({"HSET", "items:9", "value", "nine", "note", "n"}) == ":2\r\n"); /* inserted */
	BOOST_TEST(c.run({"HMSET", "items:9", "value", "nueve"}) == "+OK\r\n");
	BOOST_TEST(c.run({"HSET", "items:9", "value"}) == "-ERR wrong number of arguments for 'hset' command\r\n");
	BOOST_TEST(c.run({"HDEL", "items:2", "note", "nosuch"}) == ":1\r\n");
	BOOST_TEST(c.run({"HGET", "items:2", "note"}) == "$-1\r\n");
	BOOST_TEST(c.run({"HINCRBY", "items:2", "n", "5"}) == ":5\r\n");
	BOOST_TEST(c.run({"HINCRBY", "items:2", "n", "-2"}) == ":3\r\n");
	BOOST_TEST(c.run({"HINCRBY", "items:2", "n", "1.5"}) == "-ERR value is not an integer or out of range\r\n");
	BOOST_TEST(c.run({"HINCRBYFLOAT", "items:2", "n", "0.5"}) == "$3\r\n3.5\r\n");
	BOOST_TEST(c.run({"HINCRBYFLOAT", "items:2", "n", "abc"}) == "-ERR value is not a valid float\r\n");
	BOOST_TEST(c.run({"HINCRBYFLOAT", "items:2", "n", "inf"}) == "-ERR value is not a valid float\r\n");
	BOOST_TEST(c.run({"HSET", "bad", "a", "b"}) == "-ERR invalid key 'bad': a row's key is <prefix>:<id>\r\n");
}

BOOST_AUTO_TEST_SUITE_END()
