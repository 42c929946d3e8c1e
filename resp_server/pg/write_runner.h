/*
 * write_runner.h — how a RESP write runs in PostgreSQL: the one prologue every write command
 * and WATCH's version reads share (run_write: a hot standby refuses, the results' memory is
 * reset, the body runs as the connection's role in a transaction inside the error boundary, an
 * error becomes the reply with its SQLSTATE), and the statements it runs through SPI with plans
 * kept for the worker's life (run, result_text). The SQL they run is built in writes.cpp and
 * batches.cpp from write_target.h.
 */
#pragma once

#include "extension/pg.h"

#include "resp_server/commands/data_source.h"
#include "resp_server/pg/session_runtime.h"
#include "resp_server/pg/transaction.h"

extern "C" {
#include "access/xlog.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
}

namespace local_cache::resp {

/* A write's error: the message and its SQLSTATE, as the write commands answer it. A cancel is
 * retried (failure()) unless it was the write's own statement_timeout. */
LookupResult write_failure(const PgError &error, bool statement_timed_out);

/*
 * Inside run_for_role's GUC nest level: the write starts as a new session of the role in this
 * database would, with the settings of ALTER ROLE / ALTER DATABASE ... SET (pg_db_role_setting:
 * the role in this database, the role, the database, every role; the worker's own lock_timeout
 * and isolation level stay), default_transaction_read_only applying to its
 * transaction, and its statement_timeout armed. end_role_statement() disarms it after the
 * transaction, committed or not, and says whether it fired.
 */
void begin_role_statement(Oid role);
bool end_role_statement();

/*
 * The settings the transaction's commit reads (synchronous_commit, commit_delay,
 * commit_siblings) outlive run_for_role's GUC nest level, which ends before the commit: taken as
 * the role's settings and its triggers left them before the level is rolled back
 * (remember_commit_settings), set again as SET LOCAL after it (restore_commit_settings), so that
 * a role's synchronous_commit = off or local holds for its RESP writes as for its SQL; the
 * commit's end undoes them.
 */
void remember_commit_settings();
void restore_commit_settings();

/* After run_for_role's transaction, committed or not: what a trigger may have left in the
 * worker's session outside the GUCs (prepared statements, session advisory locks, sequences'
 * currval) is discarded. */
void discard_session_leftovers();

/*
 * Runs `body` for the connection's role the way PostgreSQL runs code on another role's behalf
 * (REFRESH MATERIALIZED VIEW, VACUUM's index functions), so that nothing one role's triggers do
 * reaches another role's commands: in a transaction (transaction.h), connected to SPI, with the
 * role as the user id inside a security-restricted operation (no temporary objects, LISTEN,
 * cursors WITH HOLD or SET ROLE), and a GUC nest level rolled back after the body (but for the
 * settings the commit reads, remember_commit_settings) — a trigger's
 * set_config(..., false) of search_path, default_transaction_read_only, TimeZone or DateStyle
 * ends with the command. What a trigger can leave outside the GUCs (prepared statements,
 * session advisory locks, sequences' currval) is discarded after the transaction, committed or
 * not. So every command starts from the settings a new session of the role would have
 * (begin_role_statement: the server's, the database's and the role's): the table's own triggers
 * run with the role's search_path ("$user" is the role), as they do for that role's SQL, while
 * the statements below name every function, operator and type with its schema and so mean the
 * same under any search_path.
 */
template <typename Body> bool run_for_role(const Session &session, Body &&body, PgError *error)
{
	/* The body runs inside the boundary: a C++ exception from it would end the worker. */
	static_assert(noexcept(body()), "the body of run_for_role must be noexcept");
	return in_transaction([&]() noexcept {
		Oid saved_user;
		int saved_context;
		GetUserIdAndSecContext(&saved_user, &saved_context);
		SetUserIdAndSecContext(Oid(session.role->id),
							   saved_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
		int nest_level = NewGUCNestLevel();
		begin_role_statement(Oid(session.role->id));
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		body();
		SPI_finish();
		remember_commit_settings();
		AtEOXact_GUC(false, nest_level);
		restore_commit_settings();
		SetUserIdAndSecContext(saved_user, saved_context);
	}, error);
}

/* Whether a command that writes must answer ReadOnly: a hot standby. */
bool on_standby(PgError *error);

/*
 * The prologue and epilogue of every write command (`writes`) and of WATCH's version reads:
 * ReadOnly on a hot standby (writes only), the write group joined if it may (transaction.h),
 * then `body` through run_for_role with the results' memory reset first, then the session's
 * leftovers discarded; an error answers write_failure.
 * `body` leaves what it found in plain data of the caller's frame (in results_context).
 */
enum class Access { Write, Read };
template <typename Body> LookupResult run_write(const Session &session, Access access, Body &&body)
{
	static_assert(noexcept(body()), "the body of run_write must be noexcept");
	PgError error;
	if (access == Access::Write && on_standby(&error))
		return error.sqlerrcode == 0 ? LookupResult::read_only() : write_failure(error, false);
	if (access == Access::Write)
		join_write_group(Oid(session.role->id));
	bool ok = run_for_role(session, [&]() noexcept {
		MemoryContextReset(results_context);
		body();
	}, &error);
	bool timed_out = end_role_statement();
	discard_session_leftovers();
	return ok ? LookupResult::ok() : write_failure(error, timed_out);
}

/* Runs `sql`, a statement on the table `relid` (InvalidOid: on none), with the arguments
 * (through a kept plan; `nulls` as SPI_execute_plan takes it, nullptr: none is NULL); the number
 * of rows it processed. */
uint64 run(Oid relid, const char *sql, int nargs, Oid *types, Datum *values, const char *nulls = nullptr);

/* The text of column 1 of row `row` of the last result, in results_context; nullptr if NULL. */
char *result_text(uint64 row);

} // namespace local_cache::resp
