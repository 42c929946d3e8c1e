/*
 * cmd_transactions.cpp — MULTI, EXEC, DISCARD, WATCH and UNWATCH, as Redis's multi.c. Requests
 * after MULTI are queued (commands.cpp); EXEC runs them between DataSource::begin_batch() and
 * end_batch(), so the reads of one transaction see one snapshot: a MULTI of GETs across tables
 * is a consistent read. A request refused while queueing makes EXEC answer EXECABORT. WATCH is
 * refused: RESP cannot write, so there is nothing to watch for.
 */
#include "command_context.h"

#include <string_view>
#include <vector>

namespace local_cache::resp {

void multi_command(CommandContext &c)
{
	if (c.session.multi.active) {
		c.reply.error("MULTI calls can not be nested");
		return;
	}
	c.session.multi.clear();
	c.session.multi.active = true;
	c.reply.ok();
}

void discard_command(CommandContext &c)
{
	if (!c.session.multi.active) {
		c.reply.error("DISCARD without MULTI");
		return;
	}
	c.session.multi.clear();
	c.reply.ok();
}

/*
 * Runs the queued requests; one reply each, in an array. A request that finds a table locked
 * while it may still wait (Session::retry_later) ends the run: the batch is given up, nothing
 * is replied, the queue stays, and the server runs EXEC again later.
 */
void exec_command(CommandContext &c)
{
	QueuedRequests &multi = c.session.multi;
	if (!multi.active) {
		c.reply.error("EXEC without MULTI");
		return;
	}
	if (multi.refused) {
		multi.clear();
		c.reply.error_with_code("EXECABORT", "Transaction discarded because of previous errors.");
		return;
	}
	std::vector<std::string_view> argv(multi.arg_ends.size());
	size_t start = 0;
	for (size_t i = 0; i < argv.size(); i++) {
		argv[i] = std::string_view(multi.bytes).substr(start, multi.arg_ends[i] - start);
		start = multi.arg_ends[i];
	}
	c.data.begin_batch();
	c.reply.array(multi.count());
	size_t first_arg = 0;
	for (size_t argc : multi.argcs) {
		Request request{&argv[first_arg], argc};
		first_arg += argc;
		/* Checked when it was queued; the table has not changed since. */
		CommandContext queued{request, c.session, c.data, c.reply, c.scratch, *command_for(request), c.clients};
		run_command(queued);
		if (c.session.retry_later)
			break;
	}
	c.data.end_batch();
	if (!c.session.retry_later)
		multi.clear();
}

void watch_command(CommandContext &c)
{
	if (c.session.multi.active) {
		c.reply.error("WATCH inside MULTI is not allowed");
		return;
	}
	c.reply.error("WATCH is not supported: keys change only through SQL writes, which RESP cannot "
				  "watch; a MULTI of reads is one consistent read without it");
}

void unwatch_command(CommandContext &c)
{
	c.reply.ok();
}

} // namespace local_cache::resp
