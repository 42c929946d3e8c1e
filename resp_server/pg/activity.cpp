/*
 * activity.cpp — the command a RESP process runs, in its pg_stat_activity row (activity.h).
 */
#include "extension/pg.h"

#include "resp_server/pg/activity.h"

extern "C" {
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "utils/backend_status.h"
}

namespace local_cache::resp {

bool activity_report_pending = false;

namespace {

/* The command running now (between command_started and command_ended). */
struct Running {
	const CommandSpec *command;
	const Request *request;
	const Session *session;
};
Running running = {nullptr, nullptr, nullptr};

/* What the row shows: a command (state active) of connection `session`, which may be waiting to
 * run it again; else idle. */
struct Shown {
	bool active;
	uint64_t session;
	bool waiting;
};
Shown shown = {false, 0, false};

/* The process's own user, as pgstat_bestart recorded it. */
Oid own_user = InvalidOid;
bool own_user_known = false;

/* The command line; pgstat keeps track_activity_query_size bytes of it (1 kB by default). */
char text[4096];

void show_user(Oid role)
{
	volatile PgBackendStatus *entry = MyBEEntry;
	if (entry == nullptr)
		return;
	if (!own_user_known) {
		own_user = entry->st_userid;
		own_user_known = true;
	}
	if (!OidIsValid(role))
		role = own_user;
	if (entry->st_userid == role)
		return;
	PGSTAT_BEGIN_WRITE_ACTIVITY(entry);
	entry->st_userid = role;
	PGSTAT_END_WRITE_ACTIVITY(entry);
}

void show_idle()
{
	shown = Shown{false, 0, false};
	if (!pgstat_track_activities)
		return;
	show_user(InvalidOid);
	pgstat_report_activity(STATE_IDLE, NULL);
}

} // namespace

void report_activity() noexcept
{
	activity_report_pending = false;
	if (running.command == nullptr || !pgstat_track_activities)
		return;
	format_activity(*running.command, *running.request, text, sizeof(text));
	const Session &session = *running.session;
	show_user(session.role ? Oid(session.role->id) : InvalidOid);
	/* query_start: when the command came to PostgreSQL (in_transaction sets it again for each of
	 * its transactions). */
	SetCurrentStatementStartTimestamp();
	pgstat_report_activity(STATE_RUNNING, text);
	shown = Shown{true, session.id, false};
}

void PgActivity::command_started(const CommandSpec &command, const Request &request, const Session &session) noexcept
{
	running = Running{&command, &request, &session};
	/* The request that waited runs again (its connection runs nothing before it): the row goes on
	 * showing it, with the time it began. */
	if (shown.active && shown.waiting && shown.session == session.id) {
		shown.waiting = false;
		activity_report_pending = false;
		return;
	}
	activity_report_pending = true;
}

void PgActivity::command_ended(bool will_run_again) noexcept
{
	activity_report_pending = false;
	if (shown.active && running.session != nullptr && shown.session == running.session->id) {
		if (will_run_again)
			shown.waiting = true;
		else
			show_idle();
	}
	running = Running{nullptr, nullptr, nullptr};
}

void PgActivity::check_waiting(bool someone_waits) noexcept
{
	if (shown.active && shown.waiting && !someone_waits)
		show_idle();
}

} // namespace local_cache::resp
