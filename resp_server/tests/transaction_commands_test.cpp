/*
 * transaction_commands_test.cpp — Boost.Test cases of MULTI, EXEC, DISCARD and WATCH
 * (resp_server/commands/transaction_commands.cpp) against a fake DataSource, as node-redis and ioredis use
 * them: queued replies, EXEC's array in one batch, EXECABORT after a refused request, and the
 * retry of an EXEC that found a table locked.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/command_harness.h"

#include <string>

using local_cache::resp::Batches;
using resp_test::Connection;
using resp_test::FakeTables;

BOOST_AUTO_TEST_SUITE(transactions)

BOOST_AUTO_TEST_CASE(multi_exec)
{
	Connection c;
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"GET", "items:1"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"HGET", "items:2", "value"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"PING"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"GET", "secret:1"}) == "+QUEUED\r\n"); /* refused when run, as in Redis */
	BOOST_TEST(c.data.rows.get_rows_calls == 0);
	BOOST_TEST(c.run({"EXEC"}) == "*4\r\n$22\r\n{\"id\":1,\"value\":\"one\"}\r\n$3\r\ntwo\r\n+PONG\r\n"
								  "-NOPERM permission denied for table secret\r\n");
	BOOST_TEST(c.data.batches.begun == 1);
	BOOST_TEST(!c.data.batches.in_batch);
	BOOST_TEST(c.run({"GET", "items:1"}) == "$22\r\n{\"id\":1,\"value\":\"one\"}\r\n"); /* not queued */
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "*0\r\n");
	c.session.protocol = 3;
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"GET", "items:3"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "*1\r\n_\r\n");
}

BOOST_AUTO_TEST_CASE(errors)
{
	Connection c;
	BOOST_TEST(c.run({"EXEC"}) == "-ERR EXEC without MULTI\r\n");
	BOOST_TEST(c.run({"DISCARD"}) == "-ERR DISCARD without MULTI\r\n");
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"MULTI"}) == "-ERR MULTI calls can not be nested\r\n");
	BOOST_TEST(c.run({"WATCH", "items:1"}) == "-ERR WATCH inside MULTI is not allowed\r\n");
	BOOST_TEST(c.run({"GET", "items:1"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"DISCARD"}) == "+OK\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "-ERR EXEC without MULTI\r\n");

	/* A request refused while queueing (unknown, arity, an unsupported write) aborts the
	 * transaction. */
	for (resp_test::Args refused : {resp_test::Args{"NOSUCH"}, resp_test::Args{"GET"},
									resp_test::Args{"INCR", "items:1"}}) {
		BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
		BOOST_TEST(c.run({"GET", "items:1"}) == "+QUEUED\r\n");
		BOOST_TEST(c.run(refused).rfind("-ERR ", 0) == 0);
		BOOST_TEST(c.run({"EXEC"}) == "-EXECABORT Transaction discarded because of previous errors.\r\n");
	}
	BOOST_TEST(c.run({"WATCH", "items:1"}) == "+OK\r\n");
	BOOST_TEST(c.run({"UNWATCH"}) == "+OK\r\n");
	BOOST_TEST(c.session.watched.empty());

	/* RESET ends a transaction; QUIT runs at once. */
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"RESET"}) == "+RESET\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "-ERR EXEC without MULTI\r\n");
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"QUIT"}) == "+OK\r\n");
	BOOST_TEST(c.session.close_after_reply);
}

BOOST_AUTO_TEST_CASE(exec_without_authentication)
{
	Connection c;
	c.data.logins.default_role_value.reset();
	c.session.role.reset();
	BOOST_TEST(c.run({"MULTI"}) == "-NOAUTH Authentication required.\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "-NOAUTH Authentication required.\r\n");
}

BOOST_AUTO_TEST_CASE(queue_is_released)
{
	Connection c;
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	for (int i = 0; i < 1000; i++)
		BOOST_TEST(c.run({"GET", "items:" + std::to_string(i)}) == "+QUEUED\r\n");
	BOOST_TEST(c.session.multi.count() == 1000u);
	BOOST_TEST(c.session.multi.memory() > 8000u);
	BOOST_TEST(c.run({"DISCARD"}) == "+OK\r\n");
	BOOST_TEST(c.session.multi.memory() < 64u);
}

/* A queued read that finds its table locked: nothing is replied and the queue stays, so the
 * server can run EXEC again; once the wait is over, the read answers BUSY inside EXEC's array. */
BOOST_AUTO_TEST_CASE(exec_finding_a_table_locked)
{
	Connection c;
	c.data.db.busy_prefixes.insert("items");
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"PING"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"GET", "items:1"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "");
	BOOST_TEST(c.session.retry_later);
	BOOST_TEST(c.session.multi.active);
	BOOST_TEST(!c.data.batches.in_batch);
	c.session.lock_wait_expired = true;
	BOOST_TEST(c.run({"EXEC"}) == "*2\r\n+PONG\r\n-BUSY table \"items\" is locked by another transaction\r\n");
	BOOST_TEST(!c.session.multi.active);
	c.session.lock_wait_expired = false;
	c.data.db.busy_prefixes.clear();
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"EXISTS", "items:1"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "*1\r\n:1\r\n");
}

/* A transaction with a write is all or nothing: the first error rolls everything back. */
BOOST_AUTO_TEST_CASE(exec_with_writes)
{
	Connection c;
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"SET", "items:5", "{\"id\":5}"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"GET", "items:5"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "*2\r\n+OK\r\n$8\r\n{\"id\":5}\r\n");
	BOOST_TEST(c.data.batches.rollbacks == 0);

	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"DEL", "items:5"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"GET", "secret:1"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "-EXECABORT Transaction rolled back: NOPERM permission denied for table secret\r\n");
	BOOST_TEST(c.data.batches.rollbacks == 1);
	BOOST_TEST(c.run({"EXISTS", "items:5"}) == ":1\r\n"); /* the DEL was rolled back */
	BOOST_TEST(!c.session.multi.active);
}

/* WATCH: EXEC runs nothing (nil) if a watched row changed since; the watch ends with EXEC. */
BOOST_AUTO_TEST_CASE(watch)
{
	Connection c;
	BOOST_TEST(c.run({"WATCH", "items:1", "items:3", "not-a-key"}) == "+OK\r\n");
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"SET", "items:3", "{}"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "*1\r\n+OK\r\n");
	BOOST_TEST(c.session.watched.empty());

	BOOST_TEST(c.run({"WATCH", "items:1"}) == "+OK\r\n");
	c.data.db.tables["items"][1].json = "changed by someone else";
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"SET", "items:1", "{}"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "*-1\r\n");
	BOOST_TEST(c.data.db.tables["items"][1].json == "changed by someone else");
	c.session.protocol = 3;
	BOOST_TEST(c.run({"WATCH", "items:3"}) == "+OK\r\n");
	c.data.db.tables["items"].erase(3);
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"EXEC"}) == "_\r\n");
	/* A batch of reads checks once; one that writes checks before its writes and again before
	 * its commit. */
	c.session.protocol = 2;
	c.data.batches.watch_checks.clear();
	BOOST_TEST(c.run({"WATCH", "items:1"}) == "+OK\r\n");
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"GET", "items:1"}) == "+QUEUED\r\n");
	BOOST_TEST(c.run({"EXEC"}).rfind("*1\r\n", 0) == 0);
	BOOST_TEST((c.data.batches.watch_checks == std::vector<Batches::WatchCheck>{Batches::WatchCheck::Reads}));
	c.data.batches.watch_checks.clear();
	BOOST_TEST(c.run({"WATCH", "items:1"}) == "+OK\r\n");
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"SET", "items:1", "{}"}) == "+QUEUED\r\n"); /* its own write is no change */
	BOOST_TEST(c.run({"EXEC"}) == "*1\r\n+OK\r\n");
	BOOST_TEST((c.data.batches.watch_checks == std::vector<Batches::WatchCheck>{Batches::WatchCheck::BeforeWrites,
																			Batches::WatchCheck::BeforeCommit}));
	/* Another client commits a change to the watched row while EXEC runs: nil, rolled back. */
	BOOST_TEST(c.run({"WATCH", "items:1"}) == "+OK\r\n");
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"SET", "items:2", "{\"v\":1}"}) == "+QUEUED\r\n");
	c.data.batches.commit_during_batch = [](FakeTables::Tables &committed) { committed["items"][1].json = "theirs"; };
	int rollbacks = c.data.batches.rollbacks;
	BOOST_TEST(c.run({"EXEC"}) == "*-1\r\n");
	BOOST_TEST(c.data.batches.rollbacks == rollbacks + 1);
	BOOST_TEST(c.session.watched.empty());
	/* DISCARD and RESET end the watch too. */
	BOOST_TEST(c.run({"WATCH", "items:1"}) == "+OK\r\n");
	BOOST_TEST(c.run({"MULTI"}) == "+OK\r\n");
	BOOST_TEST(c.run({"DISCARD"}) == "+OK\r\n");
	BOOST_TEST(c.session.watched.empty());
}

BOOST_AUTO_TEST_SUITE_END()
