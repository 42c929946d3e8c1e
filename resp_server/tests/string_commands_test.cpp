/*
 * string_commands_test.cpp — Boost.Test cases of the string commands and the row key format
 * (resp_server/commands/string_commands.cpp) against a fake DataSource: GET, MGET, EXISTS and DBSIZE in
 * RESP2 and RESP3, and the lookup answers every data command shares (NOPERM, failures).
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/command_harness.h"

#include <string>
#include <utility>
#include <vector>

using namespace local_cache::resp;
using namespace std::string_literals;
using resp_test::Args;
using resp_test::Connection;
using resp_test::Value;

BOOST_AUTO_TEST_SUITE(row_keys)

BOOST_AUTO_TEST_CASE(key_format)
{
	/* Split at the first ':' (prefixes have none); the DataSource reads the id as a key of the
	 * prefix's table, so a text key may contain ':' and a non-canonical id is its business. */
	auto key = parse_row_key("items:42");
	BOOST_REQUIRE(key.has_value());
	BOOST_TEST(key->prefix == "items");
	BOOST_TEST(key->id == "42");

	key = parse_row_key("users:a:b\\:c");
	BOOST_REQUIRE(key.has_value());
	BOOST_TEST(key->prefix == "users");
	BOOST_TEST(key->id == "a:b\\:c");

	const std::string binary = "\xff\x01\r\n:\0"s;
	key = parse_row_key(binary);
	BOOST_REQUIRE(key.has_value());
	BOOST_TEST(key->prefix == "\xff\x01\r\n"s);
	BOOST_TEST(key->id == "\0"s);

	key = parse_row_key("items:");
	BOOST_REQUIRE(key.has_value());
	BOOST_TEST(key->id.empty());

	for (const char *missing : {"items", ":1", ""})
		BOOST_TEST(!parse_row_key(missing).has_value(), missing);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(data_commands)

BOOST_AUTO_TEST_CASE(get)
{
	Connection c;
	BOOST_TEST(c.run({"GET", "items:1"}) == "$22\r\n{\"id\":1,\"value\":\"one\"}\r\n");
	BOOST_TEST(c.run({"get", "items:-7"}) == "$28\r\n{\"id\":-7,\"value\":\"negative\"}\r\n");
	BOOST_TEST(c.run({"GET", "items:9223372036854775807"}) == "$26\r\n{\"id\":9223372036854775807}\r\n");
	BOOST_TEST(c.run({"GET", "odd:7"}) == "$8\r\n{\"id\":7}\r\n");
	BOOST_TEST(c.run({"GET", "items:3"}) == "$-1\r\n");
	BOOST_TEST(c.run({"GET", "nosuchtable:1"}) == "$-1\r\n");
	int calls = c.data.rows.get_rows_calls;
	/* A key without a prefix never reaches the DataSource; one whose id is not canonical for its
	 * table (the DataSource knows the key's type) is a missing key. */
	BOOST_TEST(c.run({"GET", "items"}) == "$-1\r\n");
	BOOST_TEST(c.data.rows.get_rows_calls == calls);
	BOOST_TEST(c.run({"GET", "items:01"}) == "$-1\r\n");
	c.session.protocol = 3;
	BOOST_TEST(c.run({"GET", "items:3"}) == "_\r\n");
}

/* The cache-hit path (DataSource::reply_hits) writes the same bytes as get_rows, and a request
 * it cannot answer whole leaves no trace in the reply. */
BOOST_AUTO_TEST_CASE(get_and_mget_answered_from_hits_reply_the_same)
{
	for (int protocol : {2, 3}) {
		Connection slow, fast;
		fast.data.hits.reply_from_hits = true;
		slow.session.protocol = fast.session.protocol = protocol;
		for (const Args &args : {Args{"MGET", "items:1", "items:01", "nokey", "nosuchtable:1", "items:2", "items:1"},
								 Args{"GET", "items:2"}, Args{"GET", "items:01"}, Args{"MGET", "nokey"}}) {
			BOOST_TEST(fast.run(args) == slow.run(args));
		}
		BOOST_TEST(fast.data.hits.reply_hits_answers == 4);
		BOOST_TEST(fast.data.rows.get_rows_calls == 0);
		/* items:999 has no row: the request goes to get_rows, and its reply is the only one. */
		for (const Args &args : {Args{"MGET", "items:1", "items:999"}, Args{"GET", "items:999"}})
			BOOST_TEST(fast.run(args) == slow.run(args));
		BOOST_TEST(fast.data.hits.reply_hits_answers == 4);
		BOOST_TEST(fast.data.rows.get_rows_calls == 2);
	}
}

BOOST_AUTO_TEST_CASE(mget)
{
	Connection c;
	BOOST_TEST(c.run({"MGET", "items:1", "items:999", "items:01", "nokey", "items:2", "items:1"}) ==
			   "*6\r\n"
			   "$22\r\n{\"id\":1,\"value\":\"one\"}\r\n"
			   "$-1\r\n$-1\r\n$-1\r\n"
			   "$22\r\n{\"id\":2,\"value\":\"two\"}\r\n"
			   "$22\r\n{\"id\":1,\"value\":\"one\"}\r\n");
	/* One DataSource call with the five keys that have a prefix, duplicates kept, in order. */
	BOOST_TEST(c.data.rows.get_rows_calls == 1);
	std::vector<std::pair<std::string, std::string>> expected = {
		{"items", "1"}, {"items", "999"}, {"items", "01"}, {"items", "2"}, {"items", "1"}};
	BOOST_TEST((c.data.rows.last_keys == expected));

	c.session.protocol = 3;
	BOOST_TEST(c.run({"MGET", "items:2", "x"}) == "*2\r\n$22\r\n{\"id\":2,\"value\":\"two\"}\r\n_\r\n");

	/* Keys across tables in one request. */
	Value mixed = c.value({"MGET", "odd:7", "items:2"});
	BOOST_REQUIRE(mixed.elements.size() == 2u);
	BOOST_TEST(mixed.elements[0].text == "{\"id\":7}");

	/* Many keys. */
	Args many = {"MGET"};
	for (int i = 0; i < 1000; i++)
		many.push_back("items:" + std::to_string(i % 3));
	Value big = c.value(many);
	BOOST_REQUIRE(big.elements.size() == 1000u);
	BOOST_TEST(big.elements[0].is_null);
	BOOST_TEST(big.elements[1].text == "{\"id\":1,\"value\":\"one\"}");
	BOOST_TEST(big.elements[2].text == "{\"id\":2,\"value\":\"two\"}");
	BOOST_TEST(big.elements[999].is_null);
}

BOOST_AUTO_TEST_CASE(exists)
{
	Connection c;
	BOOST_TEST(c.run({"EXISTS", "items:1"}) == ":1\r\n");
	BOOST_TEST(c.run({"EXISTS", "items:1", "items:1", "items:2", "items:5", "bad"}) == ":3\r\n");
	BOOST_TEST(c.run({"EXISTS", "nope"}) == ":0\r\n");
}

BOOST_AUTO_TEST_CASE(strlen)
{
	Connection c;
	BOOST_TEST(c.run({"STRLEN", "items:1"}) == ":22\r\n");
	BOOST_TEST(c.run({"STRLEN", "items:3"}) == ":0\r\n");
	BOOST_TEST(c.run({"STRLEN", "secret:1"}) == "-NOPERM permission denied for table secret\r\n");
}

/* Redis keeps a NUL inside a key: "items:1\0junk" is another key, not items:1. */
BOOST_AUTO_TEST_CASE(keys_with_nul)
{
	Connection c;
	BOOST_TEST(c.run({"GET", "items:1\0junk"s}) == "$-1\r\n");
	BOOST_TEST(c.run({"GET", "items\0junk:1"s}) == "$-1\r\n");
	BOOST_TEST(c.run({"EXISTS", "items:1\0"s, "items:1"}) == ":1\r\n");
}

BOOST_AUTO_TEST_CASE(permission_and_failure)
{
	Connection c;
	const std::string noperm = "-NOPERM permission denied for table secret\r\n";
	BOOST_TEST(c.run({"GET", "secret:1"}) == noperm);
	BOOST_TEST(c.run({"MGET", "items:1", "secret:1"}) == noperm);
	BOOST_TEST(c.run({"EXISTS", "secret:1"}) == noperm);
	BOOST_TEST(c.run({"HGET", "secret:1", "id"}) == noperm);
	BOOST_TEST(c.run({"HMGET", "secret:1", "id"}) == noperm);
	BOOST_TEST(c.run({"HGETALL", "secret:1"}) == noperm);
	BOOST_TEST(c.run({"GET", "broken:1"}) == "-ERR could not read table broken\r\n");
	/* The table is checked before the id is read: any key of a forbidden table is refused. */
	BOOST_TEST(c.run({"GET", "secret:01"}) == noperm);
}

BOOST_AUTO_TEST_CASE(dbsize)
{
	Connection c;
	BOOST_TEST(c.run({"DBSIZE"}) == ":6\r\n");
	BOOST_TEST(c.run({"DBSIZE", "x"}) == "-ERR wrong number of arguments for 'dbsize' command\r\n");
}

BOOST_AUTO_TEST_SUITE_END()
