/*
 * connection_commands_test.cpp — Boost.Test cases of the connection commands
 * (resp_server/commands/connection_commands.cpp) against a fake DataSource: the handshake real clients send
 * (HELLO, AUTH, CLIENT SETNAME/SETINFO/MAINT_NOTIFICATIONS), PING, ECHO, CLIENT INFO, SELECT,
 * RESET and QUIT.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/command_harness.h"
#include "resp_server/tests/fake_clients.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

using namespace local_cache::resp;
using resp_test::Connection;
using resp_test::Value;

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
	BOOST_TEST(*d.data.logins.last_auth_user == "(default)");
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
	BOOST_TEST(*c.data.logins.last_auth_user == "(default)");
	BOOST_TEST(c.session.role->name == "cache_reader");
	BOOST_TEST(c.run({"AUTH", "default", "reader-pw"}) == "+OK\r\n");
	BOOST_TEST(*c.data.logins.last_auth_user == "(default)");
	BOOST_TEST(c.run({"AUTH", "alice", "alice-pw"}) == "+OK\r\n");
	BOOST_TEST(*c.data.logins.last_auth_user == "alice");
	BOOST_TEST(c.session.role->id == 20u);
	/* A failed AUTH leaves the connection as it was. */
	BOOST_TEST(c.run({"AUTH", "alice", "nope"}) ==
			   "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	BOOST_TEST(c.session.role->name == "alice");
	BOOST_TEST(c.run({"AUTH", "a", "b", "c"}) == "-ERR syntax error\r\n");
	BOOST_TEST(c.run({"AUTH"}) == "-ERR wrong number of arguments for 'auth' command\r\n");

	/* Without a default role, AUTH <password> cannot succeed. */
	Connection none;
	none.data.logins.default_role_value.reset();
	none.session.role.reset();
	BOOST_TEST(none.run({"AUTH", "reader-pw"}) ==
			   "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	BOOST_TEST(!none.session.authenticated());
}

BOOST_AUTO_TEST_CASE(auth_while_the_password_is_being_checked)
{
	/* The check runs on another thread: until it is done, AUTH writes no reply and asks to be
	 * run again (the server keeps the connection's later requests behind it). */
	Connection c;
	c.session.role.reset();
	c.data.logins.pending_logins = 2;
	auto pending_run = [&](const resp_test::Args &args) {
		std::vector<std::string_view> views(args.begin(), args.end());
		local_cache::resp::ReplyBuffer out;
		c.processor.execute(local_cache::resp::Request{views.data(), views.size()}, c.session, out);
		return std::string(out.view());
	};
	BOOST_TEST(pending_run({"AUTH", "alice", "alice-pw"}) == "");
	BOOST_TEST(c.session.retry_later);
	BOOST_TEST(!c.session.authenticated());
	BOOST_TEST(pending_run({"HELLO", "3", "AUTH", "alice", "alice-pw"}) == "");
	BOOST_TEST(c.session.retry_later);
	BOOST_TEST(c.session.protocol == 2);
	BOOST_TEST(c.run({"AUTH", "alice", "alice-pw"}) == "+OK\r\n");
	BOOST_TEST(!c.session.retry_later);
	BOOST_TEST(c.session.role->name == "alice");
	BOOST_TEST(c.data.logins.authenticate_calls == 3);
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

	/* Accepted without effect (redis-cli and client libraries send them). */
	BOOST_TEST(c.run({"CLIENT", "NO-EVICT", "on"}) == "+OK\r\n");
	BOOST_TEST(c.run({"CLIENT", "NO-TOUCH", "OFF"}) == "+OK\r\n");
	BOOST_TEST(c.run({"CLIENT", "NO-TOUCH", "yes"}) == "-ERR syntax error\r\n");

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
						   "cmd=client|info user=cache_reader redir=-1 resp=2 lib-name=ioredis lib-ver= tls=no\n";
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
	none.data.logins.default_role_value.reset();
	none.session.role = resp_test::AuthenticatedRole{20, "alice"};
	BOOST_TEST(none.run({"RESET"}) == "+RESET\r\n");
	BOOST_TEST(!none.session.authenticated());
	BOOST_TEST(none.run({"RESET"}) == "+RESET\r\n");

	BOOST_TEST(c.run({"QUIT"}) == "+OK\r\n");
	BOOST_TEST(c.session.close_after_reply);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(client_list_and_kill)

using resp_test::Worker;

BOOST_AUTO_TEST_CASE(client_list)
{
	Worker w;
	w.c.data.server.stats_readers.insert(10); /* sees every role's connections */
	Value list = w.c.value({"CLIENT", "LIST"});
	std::string text = list.text;
	/* in id order: 7, 42 (this session), 50, 60 */
	size_t p7 = text.find("id=7 "), p42 = text.find("id=42 "), p50 = text.find("id=50 "), p60 = text.find("id=60 ");
	BOOST_TEST((p7 < p42 && p42 < p50 && p50 < p60 && p60 != std::string::npos));
	BOOST_TEST(text.find("id=42 addr=") != std::string::npos);
	BOOST_TEST(text.find("cmd=client|list") != std::string::npos);
	BOOST_TEST(text.find("user=alice") != std::string::npos);
	BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 4);
	std::string some = w.c.value({"CLIENT", "LIST", "ID", "50", "7"}).text;
	BOOST_TEST(some.find("id=42") == std::string::npos);
	BOOST_TEST(std::count(some.begin(), some.end(), '\n') == 2);
	BOOST_TEST(w.c.value({"CLIENT", "LIST", "TYPE", "pubsub"}).text.empty());
	BOOST_TEST(w.c.run({"CLIENT", "LIST", "TYPE", "bogus"}) == "-ERR Unknown client type 'bogus'\r\n");
	BOOST_TEST(w.c.run({"CLIENT", "LIST", "ID", "x"}) == "-ERR Invalid client ID\r\n");
	BOOST_TEST(w.c.run({"CLIENT", "LIST", "FOO"}) == "-ERR syntax error\r\n");
	/* Without a directory (a processor nobody gave one): only the caller. */
	Connection alone;
	std::string mine = alone.value({"CLIENT", "LIST"}).text;
	BOOST_TEST(std::count(mine.begin(), mine.end(), '\n') == 1);
}

/* Another role's connections are listed only to members of that role or of pg_read_all_stats,
 * as pg_stat_activity shows them; connections not authenticated only to the latter. */
BOOST_AUTO_TEST_CASE(client_list_of_other_roles)
{
	Worker w;
	Session anonymous;
	anonymous.id = 70;
	w.clients.others.push_back(anonymous);
	std::string text = w.c.value({"CLIENT", "LIST"}).text;
	BOOST_TEST(text.find("user=alice") == std::string::npos);
	BOOST_TEST(text.find("id=70 ") == std::string::npos);
	BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 3); /* 7, 42, 50: its own role's */
	BOOST_TEST(w.c.value({"CLIENT", "LIST", "ID", "60"}).text.empty());
	w.c.data.server.memberships.insert({10, 20});
	text = w.c.value({"CLIENT", "LIST"}).text;
	BOOST_TEST(text.find("id=60 ") != std::string::npos);
	BOOST_TEST(text.find("id=70 ") == std::string::npos);
	w.c.data.server.stats_readers.insert(10);
	text = w.c.value({"CLIENT", "LIST"}).text;
	BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 5);
}

BOOST_AUTO_TEST_CASE(client_kill)
{
	Worker w;
	/* Only connections of the caller's role; the caller itself skipped by default. */
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "USER", "cache_reader"}) == ":2\r\n");
	BOOST_TEST((w.clients.closed == std::vector<uint64_t>{7, 50}));
	w.clients.closed.clear();
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "ID", "60"}) == ":0\r\n"); /* another role's */
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "ID", "50"}) == ":1\r\n");
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "127.0.0.1:40007"}) == "+OK\r\n");
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "127.0.0.1:1"}) == "-ERR No such client\r\n");
	BOOST_TEST((w.clients.closed == std::vector<uint64_t>{50, 7}));
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "MAXAGE", "4"}) == ":1\r\n"); /* older than 4 s: 50 (5 s), not 7 */
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "ID", "0"}) == "-ERR client-id should be greater than 0\r\n");
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "ID"}) == "-ERR No such client\r\n"); /* an address, as in Redis */
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "ID", "5", "USER"}) == "-ERR syntax error\r\n");
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "SKIPME", "maybe"}) == "-ERR syntax error\r\n");
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "TYPE", "master"}) == ":0\r\n");
	BOOST_TEST(!w.c.session.close_after_reply);
	BOOST_TEST(w.c.run({"CLIENT", "KILL", "ID", "42", "SKIPME", "no"}) == ":1\r\n");
	BOOST_TEST(w.c.session.close_after_reply);
}

BOOST_AUTO_TEST_SUITE_END()
