/*
 * commands_test.cpp — Boost.Test cases of the command table and handlers
 * (resp_server/commands.cpp) against a fake DataSource: table integrity, lookup, Redis's
 * dispatch order and error texts, the data commands in RESP2 and RESP3, the connection
 * handshake commands real clients send (HELLO, AUTH, CLIENT, COMMAND DOCS, INFO, CONFIG GET),
 * and the row key format.
 */
#include <boost/test/unit_test.hpp>

#include "commands.h"
#include "fake_data_source.h"
#include "protocol.h"
#include "resp_reader.h"

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace local_cache::resp;
using namespace std::string_literals;
using resp_test::FakeDataSource;
using resp_test::Value;

namespace {

using Args = std::vector<std::string>;

/* One connection to a processor over a fake DataSource. */
struct Connection {
	FakeDataSource data;
	CommandProcessor processor{data};
	Session session;

	Connection()
	{
		session.id = 42;
		session.role = data.default_role();
		session.peer_address = "127.0.0.1:50000";
		session.local_address = "127.0.0.1:6380";
		session.fd = 9;
		session.connected_at_ms = 1000;
		session.last_request_at_ms = 4500;
	}

	/* Runs one request; the reply must be exactly one well-formed RESP value. */
	std::string run(const Args &args)
	{
		std::vector<std::string_view> views(args.begin(), args.end());
		ReplyBuffer out;
		processor.execute(Request{views.data(), views.size()}, session, out);
		std::string bytes(out.view());
		BOOST_CHECK_NO_THROW(resp_test::read_one(bytes));
		return bytes;
	}

	Value value(const Args &args) { return resp_test::read_one(run(args)); }
};

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
	BOOST_TEST(c.data.get_rows_calls == 0);
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

BOOST_AUTO_TEST_CASE(write_commands_are_refused)
{
	Connection c;
	const std::string refused = "-ERR local_cache is read-only: write to the table through SQL\r\n";
	size_t writes = 0;
	for (const CommandSpec *command : every_command()) {
		if (!(command->flags & CMD_WRITE))
			continue;
		writes++;
		BOOST_TEST(c.run(args_for(*command, minimal_argc(*command))) == refused, command->full_name);
	}
	BOOST_TEST(writes >= 20u);
	BOOST_TEST(c.run({"set", "items:1", "{}"}) == refused);
	BOOST_TEST(c.run({"HSET", "items:1", "value", "x"}) == refused);
	BOOST_TEST(c.run({"FLUSHDB"}) == refused);
	BOOST_TEST(c.run({"expire", "items:1", "10"}) == refused);
	BOOST_TEST(c.data.get_rows_calls == 0);
}

BOOST_AUTO_TEST_CASE(every_reply_is_one_value_in_both_protocols)
{
	/* Whatever a command answers, it answers exactly one well-formed value. */
	for (int protocol : {2, 3}) {
		Connection c;
		c.session.protocol = protocol;
		for (const CommandSpec *command : every_command()) {
			for (size_t extra = 0; extra < 3; extra++)
				c.run(args_for(*command, minimal_argc(*command) + extra));
		}
	}
}

BOOST_AUTO_TEST_CASE(exceptions_fail_the_command_only)
{
	Connection c;
	BOOST_TEST(c.run({"MGET", "items:1", "throws:1"}) ==
			   "-ERR internal error: could not read table \"throws\"\r\n");
	BOOST_TEST(c.run({"HGETALL", "throws:1"}) == "-ERR internal error: could not read table \"throws\"\r\n");
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

BOOST_AUTO_TEST_SUITE(row_keys)

BOOST_AUTO_TEST_CASE(key_format)
{
	auto key = parse_row_key("items:42");
	BOOST_REQUIRE(key.has_value());
	BOOST_TEST(key->prefix == "items");
	BOOST_TEST(key->id == 42);

	key = parse_row_key("my:name space:-9223372036854775808");
	BOOST_REQUIRE(key.has_value());
	BOOST_TEST(key->prefix == "my:name space");
	BOOST_TEST(key->id == INT64_MIN);

	const std::string binary = "\xff\x01\r\n:0"s;
	key = parse_row_key(binary);
	BOOST_REQUIRE(key.has_value());
	BOOST_TEST(key->prefix == "\xff\x01\r\n"s);
	BOOST_TEST(key->id == 0);

	const std::string with_nul = "a\0b:1"s;
	key = parse_row_key(with_nul);
	BOOST_REQUIRE(key.has_value());
	BOOST_TEST(key->prefix == "a\0b"s);

	for (const char *missing : {"items", "items:", ":1", "items:01", "items:-0", "items:+1", "items: 1",
								"items:1 ", "items:1.0", "items:9223372036854775808",
								"items:-9223372036854775809", "items:99999999999999999999", "items:1:",
								"items:0x1", "items:1e2", ""})
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
	BOOST_TEST(c.run({"GET", "odd:pre fix:7"}) == "$8\r\n{\"id\":7}\r\n");
	BOOST_TEST(c.run({"GET", "items:3"}) == "$-1\r\n");
	BOOST_TEST(c.run({"GET", "nosuchtable:1"}) == "$-1\r\n");
	int calls = c.data.get_rows_calls;
	/* A key that is not canonical is a missing key and never reaches the DataSource. */
	BOOST_TEST(c.run({"GET", "items:01"}) == "$-1\r\n");
	BOOST_TEST(c.run({"GET", "items"}) == "$-1\r\n");
	BOOST_TEST(c.data.get_rows_calls == calls);
	c.session.protocol = 3;
	BOOST_TEST(c.run({"GET", "items:3"}) == "_\r\n");
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
	/* One DataSource call with the four keys that parse, duplicates kept, in order. */
	BOOST_TEST(c.data.get_rows_calls == 1);
	std::vector<std::pair<std::string, int64_t>> expected = {
		{"items", 1}, {"items", 999}, {"items", 2}, {"items", 1}};
	BOOST_TEST((c.data.last_keys == expected));

	c.session.protocol = 3;
	BOOST_TEST(c.run({"MGET", "items:2", "x"}) == "*2\r\n$22\r\n{\"id\":2,\"value\":\"two\"}\r\n_\r\n");

	/* Keys across tables in one request. */
	Value mixed = c.value({"MGET", "odd:pre fix:7", "items:2"});
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
	/* A key of a forbidden table that does not parse is simply missing. */
	BOOST_TEST(c.run({"GET", "secret:01"}) == "$-1\r\n");
}

BOOST_AUTO_TEST_CASE(dbsize)
{
	Connection c;
	BOOST_TEST(c.run({"DBSIZE"}) == ":6\r\n");
	BOOST_TEST(c.run({"DBSIZE", "x"}) == "-ERR wrong number of arguments for 'dbsize' command\r\n");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(connection_commands)

BOOST_AUTO_TEST_CASE(ping_echo)
{
	Connection c;
	BOOST_TEST(c.run({"PING"}) == "+PONG\r\n");
	BOOST_TEST(c.run({"ping", "hello world"}) == "$11\r\nhello world\r\n");
	BOOST_TEST(c.run({"ECHO", "a\r\nb"}) == "$4\r\na\r\nb\r\n");
	BOOST_TEST(c.run({"ECHO"}) == "-ERR wrong number of arguments for 'echo' command\r\n");
}

BOOST_AUTO_TEST_CASE(hello)
{
	Connection c;
	Value two = c.value({"HELLO"});
	BOOST_TEST(two.type == '*');
	BOOST_REQUIRE(two.elements.size() == 14u);
	BOOST_TEST(two.find("server")->text == "redis");
	BOOST_TEST(two.find("version")->text == std::string(kRedisCompatibleVersion));
	BOOST_TEST(two.find("proto")->integer == 2);
	BOOST_TEST(two.find("id")->integer == 42);
	BOOST_TEST(two.find("mode")->text == "standalone");
	BOOST_TEST(two.find("role")->text == "master");
	BOOST_TEST(two.find("modules")->type == '*');
	BOOST_TEST(two.find("modules")->elements.empty());

	/* HELLO 3 answers in RESP3 already and switches the connection. */
	Value three = c.value({"HELLO", "3"});
	BOOST_TEST(three.type == '%');
	BOOST_TEST(three.find("proto")->integer == 3);
	BOOST_TEST(c.session.protocol == 3);
	BOOST_TEST(c.run({"GET", "items:3"}) == "_\r\n");
	BOOST_TEST(c.value({"HELLO", "2"}).type == '*');
	BOOST_TEST(c.session.protocol == 2);

	BOOST_TEST(c.run({"HELLO", "4"}) == "-NOPROTO unsupported protocol version\r\n");
	BOOST_TEST(c.run({"HELLO", "1"}) == "-NOPROTO unsupported protocol version\r\n");
	BOOST_TEST(c.run({"HELLO", "abc"}) == "-ERR Protocol version is not an integer or out of range\r\n");
	BOOST_TEST(c.run({"HELLO", "03"}) == "-ERR Protocol version is not an integer or out of range\r\n");
	BOOST_TEST(c.run({"HELLO", "3", "BOGUS"}) == "-ERR Syntax error in HELLO option 'BOGUS'\r\n");
	BOOST_TEST(c.run({"HELLO", "3", "AUTH", "alice"}) == "-ERR Syntax error in HELLO option 'AUTH'\r\n");
	BOOST_TEST(c.run({"HELLO", "3", "SETNAME", "bad name"}) ==
			   "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
	BOOST_TEST(c.session.protocol == 2); /* failed HELLOs change nothing */

	Value named = c.value({"hello", "3", "auth", "alice", "alice-pw", "setname", "worker-1"});
	BOOST_TEST(named.type == '%');
	BOOST_TEST(c.session.name == "worker-1");
	BOOST_REQUIRE(c.session.role.has_value());
	BOOST_TEST(c.session.role->name == "alice");

	BOOST_TEST(c.run({"HELLO", "3", "AUTH", "alice", "wrong"}) ==
			   "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	BOOST_TEST(c.session.role->name == "alice");

	/* node-redis and ioredis send the user "default" when only a password is configured. */
	Connection d;
	d.session.role.reset();
	BOOST_TEST(d.value({"HELLO", "3", "AUTH", "default", "reader-pw"}).type == '%');
	BOOST_TEST(*d.data.last_auth_user == "(default)");
	BOOST_TEST(d.session.role->name == "cache_reader");
}

BOOST_AUTO_TEST_CASE(hello_without_authentication)
{
	Connection c;
	c.session.role.reset();
	const std::string must_auth =
		"-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
		"<proto> AUTH <user> <pass> option can be used to authenticate the client and select the "
		"RESP protocol version at the same time\r\n";
	BOOST_TEST(c.run({"HELLO", "3"}) == must_auth);
	BOOST_TEST(c.run({"HELLO"}) == must_auth);
	BOOST_TEST(c.session.protocol == 2);
	BOOST_TEST(c.run({"HELLO", "3", "SETNAME", "x"}) == must_auth);
	BOOST_TEST(c.session.name.empty());
	BOOST_TEST(c.value({"HELLO", "3", "AUTH", "alice", "alice-pw"}).type == '%');
}

BOOST_AUTO_TEST_CASE(auth)
{
	Connection c;
	c.session.role.reset();
	BOOST_TEST(c.run({"AUTH", "reader-pw"}) == "+OK\r\n");
	BOOST_TEST(*c.data.last_auth_user == "(default)");
	BOOST_TEST(c.session.role->name == "cache_reader");
	BOOST_TEST(c.run({"AUTH", "default", "reader-pw"}) == "+OK\r\n");
	BOOST_TEST(*c.data.last_auth_user == "(default)");
	BOOST_TEST(c.run({"AUTH", "alice", "alice-pw"}) == "+OK\r\n");
	BOOST_TEST(*c.data.last_auth_user == "alice");
	BOOST_TEST(c.session.role->id == 20u);
	/* A failed AUTH leaves the connection as it was. */
	BOOST_TEST(c.run({"AUTH", "alice", "nope"}) ==
			   "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	BOOST_TEST(c.session.role->name == "alice");
	BOOST_TEST(c.run({"AUTH", "a", "b", "c"}) == "-ERR syntax error\r\n");
	BOOST_TEST(c.run({"AUTH"}) == "-ERR wrong number of arguments for 'auth' command\r\n");

	/* Without a default role, AUTH <password> cannot succeed. */
	Connection none;
	none.data.default_role_value.reset();
	none.session.role.reset();
	BOOST_TEST(none.run({"AUTH", "reader-pw"}) ==
			   "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	BOOST_TEST(!none.session.authenticated());
}

BOOST_AUTO_TEST_CASE(client_subcommands)
{
	Connection c;
	BOOST_TEST(c.run({"CLIENT", "GETNAME"}) == "$-1\r\n");
	BOOST_TEST(c.run({"CLIENT", "SETNAME", "my-app"}) == "+OK\r\n");
	BOOST_TEST(c.run({"client", "getname"}) == "$6\r\nmy-app\r\n");
	BOOST_TEST(c.run({"CLIENT", "SETNAME", "has space"}) ==
			   "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
	BOOST_TEST(c.run({"CLIENT", "SETNAME", "new\nline"}) ==
			   "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
	BOOST_TEST(c.run({"CLIENT", "SETNAME", ""}) == "+OK\r\n");
	BOOST_TEST(c.run({"CLIENT", "GETNAME"}) == "$-1\r\n");
	BOOST_TEST(c.run({"CLIENT", "ID"}) == ":42\r\n");

	/* What node-redis v4/v5 and ioredis pipeline at connect. */
	BOOST_TEST(c.run({"CLIENT", "SETINFO", "LIB-NAME", "node-redis"}) == "+OK\r\n");
	BOOST_TEST(c.run({"client", "setinfo", "lib-ver", "4.7.0"}) == "+OK\r\n");
	BOOST_TEST(c.session.lib_name == "node-redis");
	BOOST_TEST(c.session.lib_version == "4.7.0");
	BOOST_TEST(c.run({"CLIENT", "SETINFO", "LIB-NAME", "node-redis(tag)"}) == "+OK\r\n");
	BOOST_TEST(c.run({"CLIENT", "SETINFO", "lib-color", "x"}) == "-ERR Unrecognized option 'lib-color'\r\n");
	BOOST_TEST(c.run({"CLIENT", "SETINFO", "Lib-Name", "a b"}) ==
			   "-ERR Lib-Name cannot contain spaces, newlines or special characters.\r\n");

	/* node-redis v6 with RESP3 asks for maintenance notifications. */
	BOOST_TEST(c.run({"CLIENT", "MAINT_NOTIFICATIONS", "ON", "moving-endpoint-type", "internal-ip"}) ==
			   "+OK\r\n");
	BOOST_TEST(c.run({"CLIENT", "MAINT_NOTIFICATIONS", "off"}) == "+OK\r\n");
	BOOST_TEST(c.run({"CLIENT", "MAINT_NOTIFICATIONS", "maybe"}) == "-ERR syntax error\r\n");

	Value help = c.value({"CLIENT", "HELP"});
	BOOST_TEST(help.type == '*');
	BOOST_TEST(help.elements.size() >= 3u);
	BOOST_TEST(help.elements[0].text.rfind("CLIENT <subcommand>", 0) == 0);
}

BOOST_AUTO_TEST_CASE(client_info)
{
	Connection c;
	c.run({"CLIENT", "SETNAME", "app"});
	c.run({"CLIENT", "SETINFO", "LIB-NAME", "ioredis"});
	std::string expected = "id=42 addr=127.0.0.1:50000 laddr=127.0.0.1:6380 fd=9 name=app age=3 idle=0 "
						   "flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 "
						   "argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r "
						   "cmd=client|info user=cache_reader redir=-1 resp=2 lib-name=ioredis lib-ver=\n";
	Value two = c.value({"CLIENT", "INFO"});
	BOOST_TEST(two.type == '$');
	BOOST_TEST(two.text == expected);

	c.session.protocol = 3;
	Value three = c.value({"CLIENT", "INFO"});
	BOOST_TEST(three.type == '=');
	BOOST_TEST(three.verbatim_format == "txt");
	BOOST_TEST(three.text.find(" resp=3 ") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(select)
{
	Connection c;
	BOOST_TEST(c.run({"SELECT", "0"}) == "+OK\r\n");
	BOOST_TEST(c.run({"SELECT", "1"}) == "-ERR DB index is out of range\r\n");
	BOOST_TEST(c.run({"SELECT", "-1"}) == "-ERR DB index is out of range\r\n");
	BOOST_TEST(c.run({"SELECT", "abc"}) == "-ERR value is not an integer or out of range\r\n");
	BOOST_TEST(c.run({"SELECT", "00"}) == "-ERR value is not an integer or out of range\r\n");
	BOOST_TEST(c.run({"SELECT", "4294967296"}) == "-ERR value is not an integer or out of range\r\n");
}

BOOST_AUTO_TEST_CASE(reset_and_quit)
{
	Connection c;
	c.value({"HELLO", "3", "AUTH", "alice", "alice-pw", "SETNAME", "n"});
	c.run({"CLIENT", "SETINFO", "LIB-NAME", "lib"});
	BOOST_TEST(c.run({"RESET"}) == "+RESET\r\n");
	BOOST_TEST(c.session.protocol == 2);
	BOOST_TEST(c.session.name.empty());
	BOOST_TEST(c.session.role->name == "cache_reader");
	BOOST_TEST(c.session.lib_name == "lib");
	BOOST_TEST(!c.session.close_after_reply);

	/* RESET is allowed before authentication and returns to the default role (none here). */
	Connection none;
	none.data.default_role_value.reset();
	none.session.role = resp_test::AuthenticatedRole{20, "alice"};
	BOOST_TEST(none.run({"RESET"}) == "+RESET\r\n");
	BOOST_TEST(!none.session.authenticated());
	BOOST_TEST(none.run({"RESET"}) == "+RESET\r\n");

	BOOST_TEST(c.run({"QUIT"}) == "+OK\r\n");
	BOOST_TEST(c.session.close_after_reply);
}

BOOST_AUTO_TEST_SUITE_END()

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
	BOOST_TEST(c.value({"INFO", "everything"}).text == reply.text);

	/* An empty keyspace shows no db0 line, as in Redis. */
	c.data.key_count = 0;
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

	c.session.protocol = 3;
	BOOST_TEST(c.run({"CONFIG", "GET", "appendonly"}) == "%1\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");

	BOOST_TEST(c.run({"CONFIG", "SET", "save", ""}).rfind("-ERR CONFIG SET is not supported", 0) == 0);
	BOOST_TEST(c.value({"CONFIG", "HELP"}).elements.size() >= 3u);
}

BOOST_AUTO_TEST_CASE(glob)
{
	struct Case {
		const char *pattern;
		const char *text;
		bool nocase;
		bool match;
	};
	const Case cases[] = {
		{"*", "", false, true},
		{"*", "anything", false, true},
		{"", "", false, true},
		{"", "a", false, false},
		{"save", "save", false, true},
		{"SAVE", "save", true, true},
		{"SAVE", "save", false, false},
		{"s?ve", "save", false, true},
		{"s?ve", "sve", false, false},
		{"max*", "maxmemory-policy", false, true},
		{"*policy", "maxmemory-policy", false, true},
		{"*mem*", "maxmemory", false, true},
		{"*a*b", "aaab", false, true},
		{"*a*b", "aaa", false, false},
		{"a*b*c", "abbbc", false, true},
		{"[abc]ave", "save", false, false},
		{"[rs]ave", "save", false, true},
		{"[^s]ave", "save", false, false},
		{"[^x]ave", "save", false, true},
		{"[a-z]ave", "save", false, true},
		{"[z-a]ave", "save", false, true},
		{"[A-Z]AVE", "save", true, true},
		{"[A-Z]ave", "save", false, false},
		{"\\*", "*", false, true},
		{"\\*", "a", false, false},
		{"[\\]]", "]", false, true},
		{"a\\", "a\\", false, true},
		{"[abc", "a", false, true},
		{"**a", "ba", false, true},
	};
	for (const Case &c : cases)
		BOOST_TEST(glob_match(c.pattern, c.text, c.nocase) == c.match, c.pattern << " ~ " << c.text);

	/* Patterns built to explode a recursive matcher stay linear. */
	std::string pattern;
	for (int i = 0; i < 2000; i++)
		pattern += "*a";
	pattern += "b";
	std::string text(5000, 'a');
	auto start = std::chrono::steady_clock::now();
	BOOST_TEST(!glob_match(pattern, text, false));
	double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	BOOST_TEST(seconds < 2.0);
}

BOOST_AUTO_TEST_SUITE_END()
