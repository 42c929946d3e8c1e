/*
 * activity.h — what pg_stat_activity shows of a RESP worker or write worker: the command it runs,
 * as a backend shows its query. While a command runs in PostgreSQL (a transaction: a miss, a
 * write, SCAN, a login, ...) and while it waits to run again (a table another transaction has
 * locked), the process's row says state 'active', query its command line (commands/monitor.h's
 * format_activity: no password), query_start when it began, and usename the role it runs as;
 * once it ends, 'idle' with the last command line, and the process's own user again.
 *
 * Cheap for what never reaches PostgreSQL: CommandProcessor tells this object of every command,
 * which only notes where the command is; the report is made by the command's first call into
 * PostgreSQL (in_transaction, transaction.h). A GET answered from the cache makes none.
 *
 * usename: PostgreSQL records a session's user once, when it starts (pgstat_bestart), and has no
 * call to change it; the process rewrites that field of its own entry (PgBackendStatus.st_userid,
 * under the entry's change counter, as pgstat_report_activity writes its fields) while a command
 * runs, so that members of the role see its command as they see their own backends' queries. The
 * permission to signal the process (pg_cancel_backend, pg_terminate_backend) is not the entry's:
 * it stays the worker's own user's.
 */
#pragma once

#include "resp_server/commands/command_table.h"

namespace local_cache::resp {

class PgActivity final : public CommandActivity {
public:
	void command_started(const CommandSpec &command, const Request &request, const Session &session) noexcept override;
	void command_ended(bool will_run_again) noexcept override;

	/* The worker's timer: a command shown as waiting whose connection no longer waits (it
	 * closed) gives way to idle. `someone_waits`: a connection of the worker waits for a lock or
	 * a write worker. */
	void check_waiting(bool someone_waits) noexcept;
};

/* For in_transaction: a command is running that pg_stat_activity does not show yet. */
extern bool activity_report_pending;
/* Shows it (and clears activity_report_pending). */
void report_activity() noexcept;

} // namespace local_cache::resp
