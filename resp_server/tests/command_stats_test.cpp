/*
 * command_stats_test.cpp — Boost.Test cases of INFO's command statistics
 * (resp_server/commands/command_stats.cpp and their use by the dispatcher, EXEC, INFO, LATENCY
 * HISTOGRAM and CONFIG RESETSTAT): the histogram's buckets and percentiles, the command numbers,
 * what counts as a call, a failed and a rejected call and under which error code, requests counted
 * and folded by a process's recorder, the three INFO sections rendered as Redis 7.2 renders them,
 * each role seeing its own, and the reset.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/commands/command_stats.h"
#include "resp_server/commands/command_table.h"
#include "resp_server/tests/command_harness.h"
#include "resp_server/tests/fake_cluster.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace local_cache::resp;
using resp_test::Connection;
using resp_test::Value;

namespace {

const CommandSpec &spec(std::string_view name)
{
	size_t bar = name.find('|');
	const CommandSpec *command = find_command(name.substr(0, bar));
	if (command != nullptr && bar != std::string_view::npos)
		command = find_subcommand(*command, name.substr(bar + 1));
	BOOST_REQUIRE(command != nullptr);
	return *command;
}

uint16_t number(std::string_view name)
{
	return command_number(spec(name));
}

CommandCounters zero()
{
	CommandCounters c;
	memset(&c, 0, sizeof(c));
	return c;
}

/* The lines of an INFO section's text, "name" -> "value". */
std::map<std::string, std::string> lines(const std::string &text)
{
	std::map<std::string, std::string> out;
	size_t start = 0;
	while (start < text.size()) {
		size_t end = text.find("\r\n", start);
		BOOST_REQUIRE(end != std::string::npos);
		std::string line = text.substr(start, end - start);
		size_t colon = line.find(':');
		if (colon != std::string::npos)
			out[line.substr(0, colon)] = line.substr(colon + 1);
		start = end + 2;
	}
	return out;
}

/* One role's statistics as INFO shows them to it. */
std::map<std::string, std::string> info(Connection &c, const std::string &section)
{
	return lines(c.value({"INFO", section}).text);
}

} // namespace

BOOST_AUTO_TEST_SUITE(command_stats)

BOOST_AUTO_TEST_CASE(histogram_buckets_are_exact_then_eight_per_power_of_two)
{
	using H = LatencyHistogram;
	/* 0 .. 8 exactly; a clock that went back counts as 0. */
	for (int64_t v = 0; v <= 8; v++)
		BOOST_TEST(H::upper_bound(H::bucket_of(v)) == uint64_t(v));
	BOOST_TEST(H::bucket_of(-5) == 0u);
	/* (lower, upper]: every value within 12.5% below its bucket's bound, and powers of two are
	 * bounds. */
	for (int64_t v = 9; v < 100000; v += 7) {
		uint64_t bound = H::upper_bound(H::bucket_of(v));
		BOOST_TEST(bound >= uint64_t(v));
		BOOST_TEST(double(bound) <= double(v) * 1.125 + 1);
	}
	for (unsigned power = 3; power <= 32; power++) {
		int64_t p = int64_t(1) << power;
		BOOST_TEST(H::upper_bound(H::bucket_of(p)) == uint64_t(p));
		if (power < 32)
			BOOST_TEST(H::bucket_of(p + 1) == H::bucket_of(p) + 1);
	}
	BOOST_TEST(H::bucket_of(int64_t(1) << 40) == H::kBuckets - 1);
	BOOST_TEST(H::upper_bound(H::kBuckets - 1) == uint64_t(1) << 32);
	BOOST_TEST(H::bucket_of(17) == H::bucket_of(18));
	BOOST_TEST(H::upper_bound(H::bucket_of(17)) == 18u);
}

BOOST_AUTO_TEST_CASE(percentiles_as_hdr_histograms_answer_them)
{
	LatencyHistogram h;
	memset(&h, 0, sizeof(h));
	BOOST_TEST(h.value_at_percentile(50) == 0u);
	/* 98 calls of 3 µs, one of 100, one of 5000. */
	for (int i = 0; i < 98; i++)
		h.add(3);
	h.add(100);
	h.add(5000);
	BOOST_TEST(h.total() == 100u);
	BOOST_TEST(h.value_at_percentile(50) == 3u);
	BOOST_TEST(h.value_at_percentile(98) == 3u);
	BOOST_TEST(h.value_at_percentile(99) == LatencyHistogram::upper_bound(LatencyHistogram::bucket_of(100)));
	BOOST_TEST(h.value_at_percentile(99.9) == LatencyHistogram::upper_bound(LatencyHistogram::bucket_of(5000)));
	BOOST_TEST(h.value_at_percentile(100) == LatencyHistogram::upper_bound(LatencyHistogram::bucket_of(5000)));
	/* LATENCY HISTOGRAM's cumulative power-of-two buckets. */
	uint64_t powers[LatencyHistogram::kPowers];
	h.cumulative_powers_of_two(powers);
	BOOST_TEST(powers[0] == 0u);  /* <= 1 µs */
	BOOST_TEST(powers[1] == 0u);  /* <= 2 */
	BOOST_TEST(powers[2] == 98u); /* <= 4 */
	BOOST_TEST(powers[6] == 98u); /* <= 64 */
	BOOST_TEST(powers[7] == 99u); /* <= 128 */
	BOOST_TEST(powers[12] == 99u);
	BOOST_TEST(powers[13] == 100u); /* <= 8192 */
	BOOST_TEST(powers[LatencyHistogram::kPowers - 1] == 100u);
}

BOOST_AUTO_TEST_CASE(command_numbers_follow_the_table)
{
	size_t count = command_count();
	BOOST_TEST(count > 100u);
	BOOST_TEST(command_by_number(0) == nullptr);
	BOOST_TEST(command_by_number(count + 1) == nullptr);
	for (size_t n = 1; n <= count; n++) {
		const CommandSpec *command = command_by_number(n);
		BOOST_REQUIRE(command != nullptr);
		BOOST_TEST(command_number(*command) == n);
	}
	BOOST_TEST(command_by_number(number("client") + 1)->full_name.substr(0, 7) == "client|");
	BOOST_TEST(number("config|resetstat") > number("config"));
}

BOOST_AUTO_TEST_CASE(error_codes_are_the_replys_first_word)
{
	auto code = [](std::string_view reply) { return std::string(kErrorCodes[error_code_of(reply)]); };
	BOOST_TEST(code("-NOAUTH Authentication required.\r\n") == "NOAUTH");
	BOOST_TEST(code("-WRONGPASS invalid username-password pair\r\n") == "WRONGPASS");
	BOOST_TEST(code("-BUSY table \"items\" is locked\r\n") == "BUSY");
	BOOST_TEST(code("-ERR unknown command 'x'\r\n") == "ERR");
	BOOST_TEST(code("-EXECABORT Transaction discarded\r\n") == "EXECABORT");
	BOOST_TEST(code("-CLUSTERDOWN Hash slot not served\r\n") == "CLUSTERDOWN");
	/* A code this server never answers, or none at all: ERR, as Redis falls back to it. */
	BOOST_TEST(code("-NOSUCHCODE x\r\n") == "ERR");
	BOOST_TEST(code("-READONLY\r\n") == "READONLY");
	BOOST_TEST(code("-" + std::string(40, 'A') + " x\r\n") == "ERR");
}

BOOST_AUTO_TEST_CASE(the_recorder_counts_until_folded)
{
	CommandStatsRecorder r;
	BOOST_TEST(!r.has_pending());
	r.executed(spec("get"), 10, 5, "$3\r\none\r\n");
	r.executed(spec("get"), 10, 7, "-NOPERM permission denied for table secret\r\n");
	r.executed(spec("get"), 20, 1, "$-1\r\n");
	r.rejected(&spec("get"), 10, "-ERR wrong number of arguments for 'get' command\r\n");
	r.rejected(nullptr, CommandStatsRecorder::kNoRole, "-ERR unknown command 'x'\r\n");
	r.executed(spec("get"), 10, -3, "+OK\r\n"); /* the clock went back: 0 µs */
	BOOST_REQUIRE(r.pending_count() == 3u);
	const CommandStatsRecorder::Entry &own = r.pending(0);
	BOOST_TEST(own.role == 10u);
	BOOST_TEST(own.command == number("get"));
	BOOST_TEST(own.counters.calls == 3u);
	BOOST_TEST(own.counters.usec == 12u);
	BOOST_TEST(own.counters.failed_calls == 1u);
	BOOST_TEST(own.counters.rejected_calls == 1u);
	BOOST_TEST(own.counters.errors[error_code_of("-NOPERM x")] == 1u);
	BOOST_TEST(own.counters.errors[error_code_of("-ERR x")] == 1u);
	BOOST_TEST(own.counters.latency.total() == 3u);
	BOOST_TEST(r.pending(1).role == 20u);
	BOOST_TEST(r.pending(2).command == 0u);
	BOOST_TEST(r.pending(2).counters.rejected_calls == 0u);
	BOOST_TEST(r.pending(2).counters.errors[error_code_of("-ERR x")] == 1u);

	resp_test::FakeCommandStats store;
	store.fold(r);
	BOOST_TEST(!r.has_pending());
	/* Counting goes on from zero, for known pairs and new ones. */
	r.executed(spec("get"), 10, 2, "$-1\r\n");
	r.executed(spec("mget"), 10, 2, "*0\r\n");
	BOOST_REQUIRE(r.pending_count() == 2u);
	BOOST_TEST(r.pending(0).counters.calls == 1u);
	store.fold(r);
	BOOST_TEST(store.of(10, number("get")).calls == 4u);
	BOOST_TEST(store.of(10, number("get")).usec == 14u);
	BOOST_TEST(store.of(10, number("mget")).calls == 1u);
	BOOST_TEST(store.of(20, number("get")).calls == 1u);
}

BOOST_AUTO_TEST_CASE(the_recorder_keeps_a_bounded_number_of_pairs)
{
	CommandStatsRecorder r;
	resp_test::FakeCommandStats store;
	for (uint64_t role = 1; role <= CommandStatsRecorder::kKeptPairs + 10; role++)
		r.executed(spec("get"), role, 1, "+OK\r\n");
	store.fold(r);
	/* Past the bound it starts over: still correct. */
	r.executed(spec("get"), 1, 1, "+OK\r\n");
	BOOST_REQUIRE(r.pending_count() == 1u);
	store.fold(r);
	BOOST_TEST(store.of(1, number("get")).calls == 2u);
	BOOST_TEST(store.entries.size() == CommandStatsRecorder::kKeptPairs + 10);
}

BOOST_AUTO_TEST_CASE(info_sections_as_redis_renders_them)
{
	std::vector<CommandCounters> totals(command_count() + 1, zero());
	CommandCounters &get = totals[number("get")];
	get.calls = 3;
	get.usec = 10;
	get.failed_calls = 1;
	get.rejected_calls = 2;
	get.errors[error_code_of("-ERR x")] = 2;
	get.errors[error_code_of("-NOPERM x")] = 1;
	for (int64_t v : {2, 3, 5})
		get.latency.add(v);
	CommandCounters &list = totals[number("client|list")];
	list.calls = 1;
	list.usec = 250;
	list.latency.add(250);
	totals[number("set")].rejected_calls = 1; /* rejected only: listed, no latency */
	totals[number("set")].errors[error_code_of("-NOAUTH x")] = 1;
	totals[0].errors[error_code_of("-ERR x")] = 4; /* unknown commands */

	std::string out;
	append_commandstats(out, totals);
	/* In table order (the connection commands come before the writes). */
	BOOST_TEST(out == "cmdstat_get:calls=3,usec=10,usec_per_call=3.33,rejected_calls=2,failed_calls=1\r\n"
					  "cmdstat_client|list:calls=1,usec=250,usec_per_call=250.00,rejected_calls=0,failed_calls=0\r\n"
					  "cmdstat_set:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0\r\n");
	out.clear();
	append_errorstats(out, totals);
	BOOST_TEST(out == "errorstat_ERR:count=6\r\nerrorstat_NOAUTH:count=1\r\nerrorstat_NOPERM:count=1\r\n");
	out.clear();
	append_latencystats(out, totals);
	BOOST_TEST(out == "latency_percentiles_usec_get:p50=3.000,p99=5.000,p99.9=5.000\r\n"
					  "latency_percentiles_usec_client|list:p50=256.000,p99=256.000,p99.9=256.000\r\n");
	out.clear();
	append_commandstats(out, std::vector<CommandCounters>(command_count() + 1, zero()));
	BOOST_TEST(out.empty());
}

BOOST_AUTO_TEST_CASE(requests_count_as_calls_failures_and_rejections)
{
	Connection c;
	c.data.db.forbidden_prefixes.insert("secret");
	c.run({"GET", "items:1"});
	c.run({"GET", "items:1"});
	c.run({"GET", "secret:1"});      /* -NOPERM: a failed call */
	c.run({"GET"});                  /* arity: rejected */
	c.run({"NOSUCH", "x"});          /* no command: errorstats only */
	c.run({"CLIENT", "bogus"});      /* no subcommand: errorstats only */
	c.run({"CLIENT", "ID"});
	c.run({"AUTH", "alice", "wrong"}); /* WRONGPASS, counted under the role that sent it */
	c.run({"AUTH", "alice", "alice-pw"});
	c.run({"GET", "items:2"});          /* as alice now */
	c.session.role.reset();
	c.run({"GET", "items:1"});          /* NOAUTH: rejected, before a login */
	c.session.role = AuthenticatedRole{10, "cache_reader"};
	c.processor.fold_stats();

	const resp_test::FakeCommandStats &s = c.data.stats;
	CommandCounters get = s.of(10, number("get"));
	BOOST_TEST(get.calls == 3u);
	BOOST_TEST(get.failed_calls == 1u);
	BOOST_TEST(get.rejected_calls == 1u);
	BOOST_TEST(get.errors[error_code_of("-NOPERM x")] == 1u);
	BOOST_TEST(get.errors[error_code_of("-ERR x")] == 1u);
	BOOST_TEST(s.of(10, 0).errors[error_code_of("-ERR x")] == 2u);
	BOOST_TEST(s.of(10, number("client|id")).calls == 1u);
	CommandCounters auth = s.of(10, number("auth"));
	BOOST_TEST(auth.calls == 2u);
	BOOST_TEST(auth.failed_calls == 1u);
	BOOST_TEST(auth.errors[error_code_of("-WRONGPASS x")] == 1u);
	BOOST_TEST(s.of(20, number("get")).calls == 1u);
	CommandCounters before_login = s.of(CommandStatsRecorder::kNoRole, number("get"));
	BOOST_TEST(before_login.calls == 0u);
	BOOST_TEST(before_login.rejected_calls == 1u);
	BOOST_TEST(before_login.errors[error_code_of("-NOAUTH x")] == 1u);
}

BOOST_AUTO_TEST_CASE(a_cluster_redirection_is_a_rejected_call)
{
	/* Redis Cluster counts -MOVED as a rejected call of the command, and the error as MOVED. */
	Connection c;
	resp_test::FakeCluster cluster;
	cluster.standby = true;
	c.processor.set_cluster(&cluster);
	BOOST_TEST(c.run({"GET", "users:1"}).rfind("-MOVED ", 0) == 0u);
	c.processor.fold_stats();
	CommandCounters get = c.data.stats.of(10, number("get"));
	BOOST_TEST(get.calls == 0u);
	BOOST_TEST(get.rejected_calls == 1u);
	BOOST_TEST(get.errors[error_code_of("-MOVED 1 h:1")] == 1u);
	BOOST_TEST(std::string(kErrorCodes[error_code_of("-MOVED 1 h:1")]) == "MOVED");
}

BOOST_AUTO_TEST_CASE(exec_counts_itself_and_each_command_it_ran)
{
	Connection c;
	c.data.db.forbidden_prefixes.insert("secret");
	c.run({"MULTI"});
	c.run({"GET", "items:1"});
	c.run({"GET", "secret:1"});
	c.run({"PING"});
	Value exec = c.value({"EXEC"});
	BOOST_REQUIRE(exec.elements.size() == 3u);
	/* A refused queued request: rejected, and EXEC fails with EXECABORT. */
	c.run({"MULTI"});
	c.run({"GET"});
	BOOST_TEST(c.run({"EXEC"}).rfind("-EXECABORT ", 0) == 0u);
	c.processor.fold_stats();
	const resp_test::FakeCommandStats &s = c.data.stats;
	BOOST_TEST(s.of(10, number("multi")).calls == 2u);
	CommandCounters exec_counts = s.of(10, number("exec"));
	BOOST_TEST(exec_counts.calls == 2u);
	BOOST_TEST(exec_counts.failed_calls == 1u);
	BOOST_TEST(exec_counts.errors[error_code_of("-EXECABORT x")] == 1u);
	CommandCounters get = s.of(10, number("get"));
	BOOST_TEST(get.calls == 2u); /* when EXEC ran them, not when queued */
	BOOST_TEST(get.failed_calls == 1u);
	BOOST_TEST(get.rejected_calls == 1u);
	BOOST_TEST(get.errors[error_code_of("-NOPERM x")] == 1u);
	BOOST_TEST(s.of(10, number("ping")).calls == 1u);
}

BOOST_AUTO_TEST_CASE(a_request_that_waits_counts_once_when_answered)
{
	Connection c;
	c.data.db.busy_prefixes.insert("items");
	c.session.lock_wait_expired = false;
	BOOST_TEST(c.run({"GET", "items:1"}).empty());
	BOOST_TEST(c.session.retry_later);
	c.data.db.busy_prefixes.clear();
	c.run({"GET", "items:1"});
	c.processor.fold_stats();
	BOOST_TEST(c.data.stats.of(10, number("get")).calls == 1u);
}

BOOST_AUTO_TEST_CASE(info_shows_each_role_its_own_and_readers_of_all_stats_every_ones)
{
	Connection c;
	c.data.rows.get_rows_cost_us = 3;
	c.run({"GET", "items:1"});
	c.run({"GET", "items:1"});
	c.run({"GET", "nosuchkey"});
	c.run({"HGET", "items:1"}); /* rejected */
	c.session.role = AuthenticatedRole{20, "alice"};
	c.run({"GET", "items:2"});
	c.run({"STRLEN", "items:2"});
	c.run({"NOSUCH"});
	c.session.role = AuthenticatedRole{10, "cache_reader"};

	/* Its own requests, summed with whatever the store holds from other processes; the INFO
	 * being answered is not among them (Redis counts a request once it ended). */
	auto own = info(c, "commandstats");
	BOOST_TEST(own["cmdstat_get"] == "calls=3,usec=6,usec_per_call=2.00,rejected_calls=0,failed_calls=0");
	BOOST_TEST(own["cmdstat_hget"] == "calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0");
	BOOST_TEST(own.count("cmdstat_strlen") == 0u);
	BOOST_TEST(own.count("cmdstat_info") == 0u);
	BOOST_TEST(info(c, "commandstats")["cmdstat_info"] ==
			   "calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0");
	auto errors = info(c, "errorstats");
	BOOST_TEST(errors["errorstat_ERR"] == "count=1");
	auto latency = info(c, "latencystats");
	BOOST_TEST(latency["latency_percentiles_usec_get"] == "p50=3.000,p99=3.000,p99.9=3.000");
	BOOST_TEST(latency.count("latency_percentiles_usec_hget") == 0u);
	BOOST_TEST(latency.count("latency_percentiles_usec_strlen") == 0u);

	c.data.server.stats_readers.insert(10);
	auto all = info(c, "commandstats");
	BOOST_TEST(all["cmdstat_get"] == "calls=4,usec=9,usec_per_call=2.25,rejected_calls=0,failed_calls=0");
	BOOST_TEST(all.count("cmdstat_strlen") == 1u);
	BOOST_TEST(info(c, "errorstats")["errorstat_ERR"] == "count=2");

	/* Before a login: nothing (INFO itself answers NOAUTH then). */
	c.data.server.stats_readers.clear();
	c.session.role.reset();
	BOOST_TEST(c.run({"INFO", "commandstats"}).rfind("-NOAUTH ", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(info_sections_by_name_default_and_all)
{
	Connection c;
	c.run({"GET", "items:1"});
	std::string plain = c.value({"INFO"}).text;
	BOOST_TEST(plain.find("\r\n# Errorstats\r\n") != std::string::npos);
	BOOST_TEST(plain.find("# Commandstats") == std::string::npos);
	BOOST_TEST(plain.find("# Latencystats") == std::string::npos);
	BOOST_TEST(c.value({"INFO", "default"}).text.find("# Commandstats") == std::string::npos);
	std::string everything = c.value({"INFO", "all"}).text;
	/* Redis's order: ... Replication, Commandstats, Errorstats, Latencystats, Cluster, Keyspace. */
	size_t replication = everything.find("# Replication\r\n");
	size_t commands = everything.find("\r\n\r\n# Commandstats\r\ncmdstat_");
	size_t errors = everything.find("\r\n\r\n# Errorstats\r\n");
	size_t latency = everything.find("\r\n\r\n# Latencystats\r\nlatency_percentiles_usec_");
	size_t cluster = everything.find("# Cluster\r\n");
	BOOST_TEST(replication < commands);
	BOOST_TEST(commands < errors);
	BOOST_TEST(errors < latency);
	BOOST_TEST(latency < cluster);
	BOOST_TEST(cluster != std::string::npos);
	BOOST_TEST(c.value({"INFO", "everything"}).text.find("# Latencystats") != std::string::npos);
	BOOST_TEST(c.value({"INFO", "LatencyStats"}).text.rfind("# Latencystats\r\n", 0) == 0u);
	BOOST_TEST(c.value({"INFO", "errorstats"}).text == "# Errorstats\r\n");
}

BOOST_AUTO_TEST_CASE(latency_histogram_reads_the_shared_statistics)
{
	Connection c;
	/* Another process's calls of GET as the same role: summed with this one's. */
	CommandCounters other = zero();
	other.calls = 2;
	other.latency.add(100);
	other.latency.add(3000);
	c.data.stats.entries[{10, number("get")}] = other;
	c.data.rows.get_rows_cost_us = 3;
	c.run({"GET", "items:1"});
	Value histogram = c.value({"LATENCY", "HISTOGRAM", "get"});
	const Value *get = histogram.find("get");
	BOOST_REQUIRE(get != nullptr);
	BOOST_TEST(get->find("calls")->integer == 3);
	const Value *buckets = get->find("histogram_usec");
	BOOST_REQUIRE(buckets != nullptr);
	BOOST_REQUIRE(buckets->elements.size() == 2u * 13u); /* 1 µs .. 4096 µs */
	BOOST_TEST(buckets->elements[4].integer == 4);       /* <= 4 µs: the 3 µs call */
	BOOST_TEST(buckets->elements[5].integer == 1);
	BOOST_TEST(buckets->elements[14].integer == 128);    /* <= 128 µs: and the 100 µs one */
	BOOST_TEST(buckets->elements[15].integer == 2);
	BOOST_TEST(buckets->elements[24].integer == 4096);
	BOOST_TEST(buckets->elements[25].integer == 3);
	/* Another role's calls: not shown. */
	c.data.stats.entries[{20, number("mget")}] = other;
	BOOST_TEST(c.value({"LATENCY", "HISTOGRAM"}).find("mget") == nullptr);
	c.data.server.stats_readers.insert(10);
	BOOST_TEST(c.value({"LATENCY", "HISTOGRAM"}).find("mget") != nullptr);
}

BOOST_AUTO_TEST_CASE(config_resetstat_needs_the_reset_privilege)
{
	Connection c;
	c.run({"GET", "items:1"});
	BOOST_TEST(c.run({"CONFIG", "RESETSTAT"}).rfind("-NOPERM ", 0) == 0u);
	BOOST_TEST(info(c, "commandstats").count("cmdstat_get") == 1u);
	c.data.stats.may_reset_roles.insert(10);
	BOOST_TEST(c.run({"CONFIG", "RESETSTAT"}) == "+OK\r\n");
	/* Everything before it is gone, this worker's unfolded requests too. */
	auto after = info(c, "commandstats");
	BOOST_TEST(after.count("cmdstat_get") == 0u);
	BOOST_TEST(after.count("cmdstat_info") == 0u);
	BOOST_TEST(info(c, "commandstats")["cmdstat_info"] ==
			   "calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0");
	/* CONFIG RESETSTAT's own call came after the reset: counted. */
	BOOST_TEST(info(c, "commandstats").count("cmdstat_config|resetstat") == 1u);
	BOOST_TEST(c.run({"CONFIG", "RESETSTAT", "x"}).rfind("-ERR wrong number of arguments", 0) == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
