/*
 * command_table_test.cpp — Boost.Test cases of the command table and the dispatcher
 * (resp_server/commands/command_table.cpp) against a fake DataSource: table integrity, lookup, Redis's
 * dispatch order and error texts, refused writes, and one well-formed reply for every row.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/command_harness.h"
#include "resp_server/protocol/request_parser.h"

#include <chrono>
#include <set>
#include <string>
#include <vector>

using namespace local_cache::resp;
using namespace std::string_literals;
using resp_test::Args;
using resp_test::Connection;

namespace {

std::string lowercase(std::string_view text)
{
	std::string out(text);
	for (char &c : out)
		c = char(tolower(static_cast<unsigned char>(c)));
	return out;
}

std::string uppercase(std::string_view text)
{
	std::string out(text);
	for (char &c : out)
		c = char(toupper(static_cast<unsigned char>(c)));
	return out;
}

/* Arguments that satisfy a command's arity: the name(s) then "x" fillers. */
Args args_for(const CommandSpec &command, size_t argc)
{
	Args args;
	std::string_view full = command.full_name;
	size_t bar = full.find('|');
	if (bar == std::string_view::npos) {
		args.emplace_back(full);
	} else {
		args.emplace_back(full.substr(0, bar));
		args.emplace_back(full.substr(bar + 1));
	}
	while (args.size() < argc)
		args.emplace_back("x");
	args.resize(argc);
	return args;
}

size_t minimal_argc(const CommandSpec &command)
{
	return size_t(command.arity > 0 ? command.arity : -command.arity);
}

std::vector<const CommandSpec *> every_command()
{
	std::vector<const CommandSpec *> all;
	for (const CommandSpec &command : command_table()) {
		all.push_back(&command);
		for (size_t i = 0; i < command.subcommand_count; i++)
			all.push_back(&command.subcommands[i]);
	}
	return all;
}

} // namespace

BOOST_AUTO_TEST_SUITE(command_table_rows)

BOOST_AUTO_TEST_CASE(every_row_is_complete)
{
	std::set<std::string_view> names;
	for (const CommandSpec &command : command_table()) {
		BOOST_TEST_CONTEXT(command.full_name)
		{
			BOOST_TEST(!command.full_name.empty());
			BOOST_TEST(command.full_name.find('|') == std::string_view::npos);
			BOOST_TEST(lowercase(command.full_name) == command.full_name);
			BOOST_TEST(names.insert(command.full_name).second, "duplicate name");
			BOOST_TEST(command.arity != 0);
			BOOST_TEST(!command.summary.empty());
			BOOST_TEST(!command.since.empty());
			BOOST_TEST(!command.group.empty());
			BOOST_TEST(!command.complexity.empty());
			/* A container without a handler must need a subcommand. */
			BOOST_TEST((command.handler != nullptr || (command.is_container() && command.arity <= -2)));
			BOOST_TEST(!((command.flags & CMD_WRITE) && (command.flags & CMD_READONLY)));
			if (command.first_key == 0) {
				BOOST_TEST(command.last_key == 0);
				BOOST_TEST(command.key_step == 0);
			} else {
				BOOST_TEST(command.key_step > 0);
				BOOST_TEST((command.last_key == -1 || command.last_key >= command.first_key));
				BOOST_TEST((command.arity < 0 || command.arity > command.first_key));
			}
			for (size_t i = 0; i < command.subcommand_count; i++) {
				const CommandSpec &sub = command.subcommands[i];
				BOOST_TEST_CONTEXT(sub.full_name)
				{
					BOOST_TEST(sub.full_name == std::string(command.full_name) + "|" + std::string(sub.name()));
					BOOST_TEST(lowercase(sub.full_name) == sub.full_name);
					BOOST_TEST(sub.handler != nullptr);
					BOOST_TEST((sub.arity >= 2 || sub.arity <= -2));
					BOOST_TEST(!sub.summary.empty());
					BOOST_TEST(!sub.is_container());
					BOOST_TEST(find_subcommand(command, sub.name()) == &sub);
				}
			}
		}
	}
	for (const char *required : {"mget", "get", "exists", "hget", "hmget", "hgetall", "ping", "echo",
								 "hello", "auth", "client", "command", "info", "config", "dbsize",
								 "select", "reset", "quit"})
		BOOST_TEST(names.count(required) == 1u, required);
	for (const char *write : {"set", "del", "hset", "expire", "incr", "flushdb", "mset", "flushall"})
		BOOST_TEST((find_command(write) && (find_command(write)->flags & CMD_WRITE)), write);
}

BOOST_AUTO_TEST_CASE(lookup_is_case_insensitive)
{
	for (const CommandSpec *command : every_command()) {
		if (command->full_name.find('|') != std::string_view::npos)
			continue;
		BOOST_TEST(find_command(command->full_name) == command);
		BOOST_TEST(find_command(uppercase(command->full_name)) == command);
		std::string mixed(command->full_name);
		mixed[0] = char(toupper(mixed[0]));
		BOOST_TEST(find_command(mixed) == command);
	}
	const CommandSpec *client = find_command("CLIENT");
	BOOST_REQUIRE(client != nullptr);
	BOOST_TEST(find_subcommand(*client, "SetName") != nullptr);
	BOOST_TEST(find_subcommand(*client, "setname ") == nullptr);
	BOOST_TEST(find_command("") == nullptr);
	BOOST_TEST(find_command("gett") == nullptr);
	BOOST_TEST(find_command("ge") == nullptr);
	BOOST_TEST(find_command("get\0"s) == nullptr);
	BOOST_TEST(find_command(std::string(1 << 20, 'g')) == nullptr);
	BOOST_TEST(find_command("client|setname") == nullptr);
}

BOOST_AUTO_TEST_CASE(lookup_is_fast)
{
	/* No allocation and a few compares: a million lookups take well under a second. */
	const std::string names[] = {"GET", "mget", "Exists", "nosuchcommand", "HGETALL"};
	auto start = std::chrono::steady_clock::now();
	size_t found = 0;
	for (int i = 0; i < 1000000; i++)
		found += find_command(names[i % 5]) != nullptr;
	double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	BOOST_TEST(found == 800000u);
	BOOST_TEST(seconds < 1.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dispatch)

BOOST_AUTO_TEST_CASE(unknown_command_text)
{
	Connection c;
	BOOST_TEST(c.run({"FOO", "a", "b"}) ==
			   "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n");
	BOOST_TEST(c.run({"foo"}) == "-ERR unknown command 'foo', with args beginning with: \r\n");
	/* Arguments are shown up to 128 bytes in all; each is cut to what room is left. */
	std::string a100(100, 'a'), b50(50, 'b'), c10(10, 'c');
	BOOST_TEST(c.run({"x", a100, b50, c10}) ==
			   "-ERR unknown command 'x', with args beginning with: '" + a100 + "' '" +
				   std::string(25, 'b') + "' \r\n");
	std::string long_arg(300, 'z');
	BOOST_TEST(c.run({"x", long_arg, "more"}) ==
			   "-ERR unknown command 'x', with args beginning with: '" + std::string(128, 'z') + "' \r\n");
	/* The name is cut at 128 bytes; CR and LF become spaces; a NUL ends a shown argument. */
	std::string long_name(200, 'n');
	BOOST_TEST(c.run({long_name}) == "-ERR unknown command '" + std::string(128, 'n') +
										  "', with args beginning with: \r\n");
	BOOST_TEST(c.run({"a\r\nb", "c\nd"}) ==
			   "-ERR unknown command 'a  b', with args beginning with: 'c d' \r\n");
	BOOST_TEST(c.run({"bad", "x\0y"s}) == "-ERR unknown command 'bad', with args beginning with: 'x' \r\n");
	/* Existence is checked before authentication, as in Redis. */
	c.session.role.reset();
	BOOST_TEST(c.run({"FOO"}) == "-ERR unknown command 'FOO', with args beginning with: \r\n");
}

BOOST_AUTO_TEST_CASE(unknown_subcommand_text)
{
	Connection c;
	BOOST_TEST(c.run({"CLIENT", "foo"}) == "-ERR unknown subcommand 'foo'. Try CLIENT HELP.\r\n");
	BOOST_TEST(c.run({"client", "foo", "bar"}) == "-ERR unknown subcommand 'foo'. Try CLIENT HELP.\r\n");
	BOOST_TEST(c.run({"Config", "rewrite"}) == "-ERR unknown subcommand 'rewrite'. Try CONFIG HELP.\r\n");
	BOOST_TEST(c.run({"command", "getkeys", "get", "a"}) ==
			   "-ERR unknown subcommand 'getkeys'. Try COMMAND HELP.\r\n");
}

BOOST_AUTO_TEST_CASE(arity_text_and_rules)
{
	Connection c;
	BOOST_TEST(c.run({"GET"}) == "-ERR wrong number of arguments for 'get' command\r\n");
	BOOST_TEST(c.run({"GET", "a", "b"}) == "-ERR wrong number of arguments for 'get' command\r\n");
	BOOST_TEST(c.run({"MGET"}) == "-ERR wrong number of arguments for 'mget' command\r\n");
	BOOST_TEST(c.run({"CLIENT"}) == "-ERR wrong number of arguments for 'client' command\r\n");
	BOOST_TEST(c.run({"client", "SETNAME"}) ==
			   "-ERR wrong number of arguments for 'client|setname' command\r\n");
	BOOST_TEST(c.run({"CONFIG", "GET"}) == "-ERR wrong number of arguments for 'config|get' command\r\n");
	BOOST_TEST(c.run({"PING", "a", "b"}) == "-ERR wrong number of arguments for 'ping' command\r\n");

	/* For every row: one argument too few (and one too many for fixed arity) is refused with
	 * the row's full name. */
	for (const CommandSpec *command : every_command()) {
		BOOST_TEST_CONTEXT(command->full_name)
		{
			std::string expected = "-ERR wrong number of arguments for '" +
								   std::string(command->full_name) + "' command\r\n";
			size_t needed = minimal_argc(*command);
			bool is_subcommand = command->full_name.find('|') != std::string_view::npos;
			if (needed > (is_subcommand ? 2u : 1u))
				BOOST_TEST(c.run(args_for(*command, needed - 1)) == expected);
			if (command->arity > 0)
				BOOST_TEST(c.run(args_for(*command, needed + 1)) == expected);
		}
	}
}

BOOST_AUTO_TEST_CASE(authentication_required)
{
	Connection c;
	c.session.role.reset();
	const std::string noauth = "-NOAUTH Authentication required.\r\n";
	BOOST_TEST(c.run({"GET", "items:1"}) == noauth);
	BOOST_TEST(c.run({"MGET", "items:1"}) == noauth);
	BOOST_TEST(c.run({"PING"}) == noauth);
	BOOST_TEST(c.run({"CLIENT", "SETINFO", "LIB-NAME", "x"}) == noauth);
	BOOST_TEST(c.run({"INFO"}) == noauth);
	BOOST_TEST(c.run({"SET", "a", "b"}) == noauth);
	BOOST_TEST(c.data.rows.get_rows_calls == 0);
	/* Arity is checked before authentication. */
	BOOST_TEST(c.run({"GET"}) == "-ERR wrong number of arguments for 'get' command\r\n");
	/* no_auth commands run. */
	BOOST_TEST(c.run({"QUIT"}) == "+OK\r\n");
	BOOST_TEST(c.run({"AUTH", "wrong"}) ==
			   "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	BOOST_TEST(c.run({"AUTH", "alice", "alice-pw"}) == "+OK\r\n");
	BOOST_TEST(c.run({"GET", "items:1"}) == "$22\r\n{\"id\":1,\"value\":\"one\"}\r\n");

	/* Every row without no_auth answers NOAUTH to an unauthenticated connection. */
	Connection anonymous;
	anonymous.session.role.reset();
	for (const CommandSpec *command : every_command()) {
		if (command->flags & CMD_NO_AUTH || command->handler == nullptr)
			continue;
		BOOST_TEST(anonymous.run(args_for(*command, minimal_argc(*command))) == noauth,
				   command->full_name);
	}
}

BOOST_AUTO_TEST_CASE(unsupported_writes_are_refused)
{
	Connection c;
	const std::string refused =
		"-ERR not supported by local_cache: write rows with SET, MSET, DEL, HSET, HDEL, HINCRBY or SQL\r\n";
	size_t unsupported = 0;
	for (const CommandSpec *command : every_command()) {
		if (!(command->flags & CMD_UNSUPPORTED))
			continue;
		BOOST_TEST((command->flags & CMD_WRITE), command->full_name);
		unsupported++;
		BOOST_TEST(c.run(args_for(*command, minimal_argc(*command))) == refused, command->full_name);
	}
	BOOST_TEST(unsupported >= 20u);
	BOOST_TEST(c.run({"FLUSHDB"}) == refused);
	BOOST_TEST(c.run({"expire", "items:1", "10"}) == refused);
	BOOST_TEST(c.run({"INCR", "items:1"}) == refused);
	BOOST_TEST(c.data.rows.get_rows_calls == 0);
	BOOST_TEST(c.data.db.writes == 0);
}

BOOST_AUTO_TEST_CASE(every_reply_is_one_value_in_both_protocols)
{
	/* Whatever a command answers, it answers exactly one well-formed value (but Pub/Sub). */
	for (int protocol : {2, 3}) {
		Connection c;
		c.session.protocol = protocol;
		for (const CommandSpec *command : every_command()) {
			/* (P)SUBSCRIBE answers once per channel (tracking_commands_test.cpp). */
			if (command->flags & CMD_PUBSUB)
				continue;
			for (size_t extra = 0; extra < 3; extra++)
				c.run(args_for(*command, minimal_argc(*command) + extra));
		}
	}
}

BOOST_AUTO_TEST_CASE(failures_fail_the_command_only)
{
	/* A lookup that fails (a PostgreSQL error, as the boundary answers it) fails its command. */
	Connection c;
	BOOST_TEST(c.run({"MGET", "items:1", "broken:1"}) == "-ERR could not read table broken\r\n");
	BOOST_TEST(c.run({"HGETALL", "broken:1"}) == "-ERR could not read table broken\r\n");
	BOOST_TEST(c.run({"GET", "items:2"}) == "$22\r\n{\"id\":2,\"value\":\"two\"}\r\n");
}

BOOST_AUTO_TEST_CASE(pipeline_into_one_buffer)
{
	/* The server parses what one read brought and runs every request into one buffer. */
	Connection c;
	std::string input = "*2\r\n$3\r\nGET\r\n$7\r\nitems:1\r\nPING\r\nGET items:999\r\n"
						"*3\r\n$4\r\nMGET\r\n$7\r\nitems:2\r\n$3\r\nbad\r\nECHO \"a b\"\r\n";
	RequestParser parser;
	ReplyBuffer out;
	size_t start = 0;
	for (;;) {
		ParseResult result = parser.parse(input.data() + start, input.size() - start);
		if (result.status != ParseStatus::Request)
			break;
		c.processor.execute(result.request, c.session, out);
		start += result.consumed;
	}
	BOOST_TEST(start == input.size());
	BOOST_TEST(std::string(out.view()) == "$22\r\n{\"id\":1,\"value\":\"one\"}\r\n"
										  "+PONG\r\n"
										  "$-1\r\n"
										  "*2\r\n$22\r\n{\"id\":2,\"value\":\"two\"}\r\n$-1\r\n"
										  "$3\r\na b\r\n");
}

BOOST_AUTO_TEST_SUITE_END()
