/*
 * write_offload_test.cpp — the write workers' side of the command layer: a job's frame carries
 * the request and what of the session a write reads, byte for byte (and a damaged frame is
 * refused at every cut), a reply's frame likewise, and CommandProcessor hands writes and
 * writing EXECs to its WriteOffload — the connection waiting until the reply is there, the keys
 * an offloaded EXEC's reads noted for CLIENT TRACKING then tracked for it — while reads, EXECs
 * of reads and writes whose tables run only PostgreSQL's own code run where they are.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/commands/write_job.h"
#include "resp_server/tests/command_harness.h"

#include <string>
#include <vector>

using namespace local_cache::resp;
using resp_test::Connection;

namespace {

/* A WriteOffload that answers Pending until told the reply, and keeps the requests it saw. */
struct FakeOffload final : WriteOffload {
	std::vector<std::string> seen; /* each request's first two arguments */
	std::string reply;             /* empty: still pending */
	std::vector<std::string> tracked_keys;
	bool run_here = false;
	Outcome run(const Request &request, const Session &, ReplyBuffer &out) override
	{
		seen.push_back(std::string(request[0]) + (request.argc > 1 ? " " + std::string(request[1]) : ""));
		if (run_here)
			return Outcome{Status::RunHere, 0};
		if (reply.empty())
			return Outcome{Status::Pending, 0};
		out.append(reply);
		return Outcome{Status::Done, 1234, tracked_keys};
	}
};

std::string job_frame(const std::vector<std::string> &args, const Session &session)
{
	std::vector<std::string_view> views(args.begin(), args.end());
	std::string frame;
	encode_write_job(Request{views.data(), views.size()}, session, frame);
	return frame;
}

} // namespace

BOOST_AUTO_TEST_SUITE(write_offload)

BOOST_AUTO_TEST_CASE(a_job_frame_carries_the_request_and_the_session)
{
	Connection c;
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"SET", "items:1", "{\"value\":\"x\"}"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"GET", "items:2"}) == "+QUEUED\r\n");
	c.session.watched = {{"items:1", "v1"}, {"items:3", std::string("\0\1", 2)}};
	c.session.protocol = 3;
	c.session.tracking.on = c.session.tracking.optin = c.session.tracking.caching_yes = true;
	std::string frame = "junk before" + job_frame({"EXEC"}, c.session);
	std::string_view bytes = std::string_view(frame).substr(11);
	BOOST_TEST(complete_write_frame(bytes).value_or(0) == bytes.size());
	BOOST_TEST(!complete_write_frame(bytes.substr(0, bytes.size() - 1)).has_value());

	WriteJob job;
	BOOST_TEST(decode_write_job(bytes.substr(kWriteFrameHeader), &job));
	BOOST_TEST(job.session.id == c.session.id);
	BOOST_TEST(job.session.role->id == c.session.role->id);
	BOOST_TEST(job.session.role->name == c.session.role->name);
	BOOST_TEST(job.session.protocol == 3);
	BOOST_TEST(job.argv.size() == 1u);
	BOOST_TEST(job.argv[0] == "EXEC");
	BOOST_TEST(job.session.multi.active);
	BOOST_TEST(job.session.multi.bytes == c.session.multi.bytes);
	BOOST_TEST(job.session.multi.arg_ends == c.session.multi.arg_ends);
	BOOST_TEST(job.session.multi.argcs == c.session.multi.argcs);
	BOOST_TEST(job.session.watched == c.session.watched);
	BOOST_TEST(job.session.tracking.on);
	BOOST_TEST(job.session.tracking.optin);
	BOOST_TEST(job.session.tracking.caching_yes);
	BOOST_TEST(!job.session.tracking.optout);
	BOOST_TEST(!job.session.tracking.bcast);
	BOOST_TEST(!job.session.tracking.caching_no);
}

BOOST_AUTO_TEST_CASE(a_damaged_frame_is_refused_at_every_cut)
{
	Connection c;
	std::string frame = job_frame({"HSET", "items:1", "value", "x"}, c.session);
	std::string_view payload = std::string_view(frame).substr(kWriteFrameHeader);
	for (size_t cut = 0; cut < payload.size(); cut++) {
		WriteJob job;
		BOOST_TEST(!decode_write_job(payload.substr(0, cut), &job), "cut at " << cut);
	}
	std::string longer(payload);
	longer.push_back('x');
	WriteJob job;
	BOOST_TEST(!decode_write_job(longer, &job));
	std::string flipped(payload);
	flipped[24 + c.session.role->name.size()] = 9; /* the protocol: 2 or 3 only */
	BOOST_TEST(!decode_write_job(flipped, &job));
}

BOOST_AUTO_TEST_CASE(a_reply_frame_round_trips)
{
	std::string frame;
	encode_write_reply(WriteReply{"+OK\r\n", 987, {"items:1", "items:2"}, {"loaded:7"}}, frame);
	BOOST_TEST(complete_write_frame(frame).value_or(0) == frame.size());
	WriteReply reply;
	BOOST_TEST(decode_write_reply(std::string_view(frame).substr(kWriteFrameHeader), &reply));
	BOOST_TEST(reply.reply == "+OK\r\n");
	BOOST_TEST(reply.duration_us == 987);
	BOOST_TEST((reply.tracked_keys == std::vector<std::string>{"items:1", "items:2"}));
	BOOST_TEST((reply.uncaptured_keys == std::vector<std::string>{"loaded:7"}));
	for (size_t cut = 0; cut < frame.size() - kWriteFrameHeader; cut++)
		BOOST_TEST(!decode_write_reply(std::string_view(frame).substr(kWriteFrameHeader, cut), &reply), "cut at " << cut);
}

BOOST_AUTO_TEST_CASE(a_decoded_job_runs_as_it_would_have_run_on_the_connection)
{
	Connection here, there;
	std::string frame = job_frame({"SET", "items:7", "{\"value\":\"seven\"}"}, here.session);
	WriteJob job;
	BOOST_TEST(decode_write_job(std::string_view(frame).substr(kWriteFrameHeader), &job));
	ReplyBuffer out;
	there.processor.execute(job.request(), job.session, out);
	BOOST_TEST(std::string(out.view()) == here.run({"SET", "items:8", "{\"value\":\"eight\"}"}));
}

BOOST_AUTO_TEST_CASE(writes_wait_for_their_reply_and_reads_run_here)
{
	Connection c;
	FakeOffload offload;
	c.processor.set_write_offload(&offload);
	BOOST_TEST(c.run({"SET", "items:1", "{\"value\":\"x\"}"}) == "");
	BOOST_TEST(c.session.retry_later);
	BOOST_TEST(c.run({"SET", "items:1", "{\"value\":\"x\"}"}) == ""); /* run again: still pending */
	offload.reply = "+OK\r\n";
	BOOST_TEST(c.run({"SET", "items:1", "{\"value\":\"x\"}"}) == "+OK\r\n");
	BOOST_TEST(!c.session.retry_later);
	BOOST_TEST(c.run({"GET", "items:2"}) == "$22\r\n{\"id\":2,\"value\":\"two\"}\r\n");
	BOOST_TEST(c.run({"DEL", "items:3"}) == "+OK\r\n");
	BOOST_TEST(c.run({"HSET", "items:3", "value", "x"}) == "+OK\r\n");
	BOOST_TEST((offload.seen == std::vector<std::string>{"SET items:1", "SET items:1", "SET items:1", "DEL items:3",
														  "HSET items:3"}));
	BOOST_TEST(c.data.db.writes == 0); /* nothing was written here */
}

BOOST_AUTO_TEST_CASE(a_write_of_tables_that_run_only_builtin_code_runs_here)
{
	Connection c;
	FakeOffload offload;
	offload.reply = "+OK\r\n";
	c.processor.set_write_offload(&offload);
	c.data.writes.builtin_code_prefixes = {"items"};
	BOOST_TEST(c.run({"SET", "items:1", "{\"value\":\"x\"}"}) == "+OK\r\n");
	BOOST_TEST(c.run({"HSET", "items:2", "value", "y"}) == ":0\r\n");
	BOOST_TEST(c.run({"DEL", "items:3"}) == ":0\r\n");
	BOOST_TEST(offload.seen.empty()); /* all three ran here */
	BOOST_TEST(c.data.db.writes > 0);
	/* One key of another table, or no key at all: the whole command goes. */
	BOOST_TEST(c.run({"MSET", "items:1", "{}", "other:1", "{}"}) == "+OK\r\n");
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"SET", "items:1", "{}"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "+OK\r\n");
	BOOST_TEST((offload.seen == std::vector<std::string>{"MSET items:1", "EXEC"}));
}

BOOST_AUTO_TEST_CASE(an_exec_that_writes_runs_there_and_ends_the_transaction_here)
{
	Connection c;
	FakeOffload offload;
	c.processor.set_write_offload(&offload);
	offload.reply = "*1\r\n+OK\r\n";
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"SET", "items:1", "{\"value\":\"x\"}"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "*1\r\n+OK\r\n");
	BOOST_TEST(!c.session.multi.active);
	BOOST_TEST(c.session.multi.count() == 0u);
	BOOST_TEST((offload.seen == std::vector<std::string>{"EXEC"}));
	/* An EXEC of reads runs here. */
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"GET", "items:1"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "*1\r\n$22\r\n{\"id\":1,\"value\":\"one\"}\r\n");
	BOOST_TEST(offload.seen.size() == 1u);
	/* A writing EXEC of a connection with CLIENT TRACKING on runs there too; the keys its reads
	 * noted there are tracked here. */
	BOOST_TEST(c.run({"CLIENT", "TRACKING", "ON"}) == "+OK\r\n");
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"HSET", "items:1", "value", "y"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"GET", "items:2"}) == "+QUEUED\r\n");
	offload.reply = "*2\r\n:0\r\n$22\r\n{\"id\":2,\"value\":\"two\"}\r\n";
	offload.tracked_keys = {"items:2"};
	BOOST_TEST(c.run({"EXEC"}) == offload.reply);
	BOOST_TEST(offload.seen.size() == 2u);
	BOOST_TEST(c.processor.tracking().stats().keys == 1u);
}

BOOST_AUTO_TEST_CASE(a_write_workers_table_hands_over_what_an_exec_noted)
{
	/* As the write worker runs it: a session with tracking on, EXEC of a write and a read. */
	Connection there;
	there.session.tracking.on = true;
	BOOST_TEST(there.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(there.run({"SET", "items:9", "{\"value\":\"nine\"}"}) == "+QUEUED\r\n");
	BOOST_TEST(there.run({"GET", "items:2"}) == "+QUEUED\r\n");
	BOOST_TEST(there.run({"EXEC"}).rfind("*2\r\n+OK\r\n", 0) == 0);
	BOOST_TEST((there.processor.tracking().take_noted_keys() == std::vector<std::string>{"items:2"}));
	BOOST_TEST(there.processor.tracking().stats().keys == 0u);
}

BOOST_AUTO_TEST_CASE(without_a_write_worker_writes_run_here)
{
	Connection c;
	FakeOffload offload;
	offload.run_here = true;
	c.processor.set_write_offload(&offload);
	BOOST_TEST(c.run({"HSET", "items:1", "value", "z"}) == ":0\r\n");
	BOOST_TEST(offload.seen.size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
