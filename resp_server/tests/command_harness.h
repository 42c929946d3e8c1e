/*
 * command_harness.h — a client connection for the command tests: one CommandProcessor over the
 * fakes of fake_data.h and one Session, running a request given as strings and checking that the
 * reply is exactly one well-formed RESP value. Shared by the tests of the command layer.
 */
#pragma once

#include <boost/test/unit_test.hpp>

#include "resp_server/commands/command_table.h"
#include "resp_server/tests/fake_data.h"
#include "tools/lib/resp_reply.h"

#include <string>
#include <string_view>
#include <vector>

namespace resp_test {

/* Replies as the tools read them (tools/lib/resp_reply.h): one reader for tests and tools. */
using Value = tooling::Reply;
using tooling::read_all;
using tooling::read_one;

using Args = std::vector<std::string>;

/* One connection to a processor over the fakes. */
struct Connection {
	FakeData data;
	local_cache::resp::CommandProcessor processor{data.sources()};
	Session session;

	Connection()
	{
		session.id = 42;
		session.role = data.logins.default_role(session);
		session.peer_address = "127.0.0.1:50000";
		session.local_address = "127.0.0.1:6380";
		session.fd = 9;
		session.connected_at_ms = 1000;
		session.last_request_at_ms = 4500;
	}

	/* Runs one request; the reply must be exactly one well-formed RESP value, or nothing when
	 * the request is to run again later (Session::retry_later). */
	std::string run(const Args &args)
	{
		std::vector<std::string_view> views(args.begin(), args.end());
		local_cache::resp::ReplyBuffer out;
		processor.execute(local_cache::resp::Request{views.data(), views.size()}, session, out);
		std::string bytes(out.view());
		if (!(bytes.empty() && session.retry_later))
			BOOST_CHECK_NO_THROW(read_one(bytes));
		return bytes;
	}

	Value value(const Args &args) { return read_one(run(args)); }
};

} // namespace resp_test
