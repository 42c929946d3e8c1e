/*
 * transaction_commands.cpp — MULTI, EXEC, DISCARD, WATCH and UNWATCH, as Redis's multi.c. Requests
 * after MULTI are queued (command_table.cpp); EXEC runs them between Batches::begin_batch() and
 * end_batch(): one PostgreSQL transaction with one snapshot, so a MULTI of reads is a
 * consistent read and its writes commit together.
 *
 * Errors, mapped onto Redis's: a request refused while queueing (unknown, arity, NOAUTH, an
 * unsupported write) makes EXEC answer -EXECABORT, as in Redis. At run time, a transaction
 * with only reads answers each command's error in its place (nothing to roll back); one with
 * a write is all or nothing: the first error rolls everything back and EXEC answers
 * -EXECABORT Transaction rolled back: <that error>. WATCH keeps the watched rows' versions;
 * EXEC answers nil (runs nothing) if one changed. WATCH needs only SELECT: when EXEC writes,
 * the rows the role may lock are locked first, and all of them are checked once more after the
 * writes, before the commit (Batches::WatchCheck), so no commit to them is missed.
 */
#include "resp_server/commands/command_context.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace local_cache::resp {

namespace {

/* More watched keys than this is refused: the versions are kept per connection. */
constexpr size_t kMaxWatchedKeys = 1024;

/* An error reply's text, without its '-' and CRLF, for -EXECABORT. */
std::string_view error_text(std::string_view reply)
{
	return reply.substr(1, reply.find('\r') - 1);
}

/* Whether every watched row is as WATCH saw it; false with the reply written when the
 * command must stop (an error, or a lock to wait for). */
bool watched_unchanged(CommandContext &c, Batches::WatchCheck when, bool *unchanged)
{
	*unchanged = true;
	std::vector<RowKey> keys;
	std::vector<std::string> versions;
	for (const auto &[text, version] : c.session.watched) {
		if (std::optional<RowKey> key = parse_row_key(text)) {
			keys.push_back(*key);
			versions.push_back(version);
		}
	}
	if (keys.empty())
		return true;
	return lookup_succeeded(c, c.data.batches.check_versions(c.session, keys.data(), versions.data(), keys.size(), when,
													 unchanged));
}

/* EXEC's batch (Batches::begin_batch): ended exactly once, without committing when the
 * command leaves early (an allocation failed), so no batch outlives its EXEC. */
class BatchScope {
public:
	explicit BatchScope(Batches &batches) : batches_(batches) { batches_.begin_batch(); }
	~BatchScope()
	{
		if (open_) {
			try {
				batches_.end_batch(false);
			} catch (...) { /* the batch is ended; only its error's text was lost */
			}
		}
	}
	BatchScope(const BatchScope &) = delete;
	BatchScope &operator=(const BatchScope &) = delete;

	LookupResult end(bool commit)
	{
		open_ = false;
		return batches_.end_batch(commit);
	}

private:
	Batches &batches_;
	bool open_ = true;
};

void run_batch(CommandContext &c);

/* A queued read that answered, for CLIENT TRACKING once the EXEC commits. */
struct TrackedRead {
	size_t first_arg;
	size_t argc;
	bool caching_yes;
	bool caching_no;
};
void note_reads(CommandContext &c, const std::vector<std::string_view> &argv, const std::vector<TrackedRead> &reads);

} // namespace

void end_transaction(Session &session)
{
	session.multi.clear();
	std::vector<std::pair<std::string, std::string>>().swap(session.watched);
}

/* The queued requests' arguments, as views of the queue. */
static std::vector<std::string_view> queued_arguments(const QueuedRequests &multi)
{
	std::vector<std::string_view> argv(multi.arg_ends.size());
	size_t start = 0;
	for (size_t i = 0; i < argv.size(); i++) {
		argv[i] = std::string_view(multi.bytes).substr(start, multi.arg_ends[i] - start);
		start = multi.arg_ends[i];
	}
	return argv;
}

bool queue_writes(const QueuedRequests &multi)
{
	std::vector<std::string_view> argv = queued_arguments(multi);
	bool writes = false;
	for (size_t first = 0, n = 0; n < multi.count(); first += multi.argcs[n], n++)
		writes = writes || (command_for(Request{&argv[first], multi.argcs[n]})->flags & CMD_WRITE);
	return writes;
}

void multi_command(CommandContext &c)
{
	if (c.session.multi.active) {
		c.reply.error("MULTI calls can not be nested");
		return;
	}
	c.session.multi.clear();
	c.reply.ok(); /* first: a reply that cannot be written (out of memory) leaves no MULTI */
	c.session.multi.active = true;
}

void discard_command(CommandContext &c)
{
	if (!c.session.multi.active) {
		c.reply.error("DISCARD without MULTI");
		return;
	}
	end_transaction(c.session);
	c.reply.ok();
}

/*
 * Runs the queued requests, one reply each in an array. A request that finds a table or row
 * locked while it may still wait (Session::retry_later) ends the run: the batch is rolled
 * back, nothing is replied, the queue stays, and the server runs EXEC again later.
 */
void exec_command(CommandContext &c)
{
	QueuedRequests &multi = c.session.multi;
	if (!multi.active) {
		c.reply.error("EXEC without MULTI");
		return;
	}
	if (multi.refused) {
		end_transaction(c.session);
		c.reply.error_with_code("EXECABORT", "Transaction discarded because of previous errors.");
		return;
	}
	try {
		run_batch(c);
	} catch (...) {
		/* An allocation failed: the batch is rolled back (BatchScope), the transaction ends as
		 * EXECABORT ends it, and the command runner answers the error. */
		end_transaction(c.session);
		throw;
	}
}

namespace {

/* EXEC once the queue is known to run: the queued requests in one batch. */
void run_batch(CommandContext &c)
{
	QueuedRequests &multi = c.session.multi;
	std::vector<std::string_view> argv = queued_arguments(multi);
	bool writes = queue_writes(multi);

	ReplyBuffer &out = c.reply.buffer();
	size_t exec_start = out.size();
	BatchScope batch(c.data.batches);
	bool unchanged = true;
	if (!watched_unchanged(c, writes ? Batches::WatchCheck::BeforeWrites : Batches::WatchCheck::Reads,
						   &unchanged) ||
		!unchanged) {
		batch.end(false);
		if (c.session.retry_later)
			return;
		if (out.size() == exec_start) /* not an error: a watched row changed */
			c.reply.null_array();
		end_transaction(c.session);
		return;
	}
	c.reply.array(multi.count());
	std::vector<TrackedRead> reads;
	std::string failed;
	size_t first_arg = 0;
	for (size_t argc : multi.argcs) {
		Request request{&argv[first_arg], argc};
		first_arg += argc;
		size_t reply_start = out.size();
		/* Checked when it was queued; the table has not changed since. */
		CommandContext queued{request, c.session, c.data, c.reply, c.scratch, *command_for(request),
							  c.clients, c.monitor, c.tracking, c.cluster};
		run_command(queued, false);
		if (c.session.retry_later)
			break;
		std::string_view reply = out.view().substr(reply_start);
		if (c.session.tracking.on && (queued.command.flags & CMD_READONLY) && !reply.empty() && reply[0] != '-')
			reads.push_back(TrackedRead{first_arg - argc, argc, c.session.tracking.caching_yes,
										c.session.tracking.caching_no});
		if (writes && !reply.empty() && reply[0] == '-') {
			failed.assign(error_text(reply));
			break;
		}
	}
	/* The writes are done: a watched row another transaction changed meanwhile (one the role
	 * could not lock) makes EXEC answer nil after all, with nothing committed; an error of the
	 * check rolls back as a queued command's does. */
	if (writes && !c.session.retry_later && failed.empty()) {
		size_t check_start = out.size();
		bool checked = watched_unchanged(c, Batches::WatchCheck::BeforeCommit, &unchanged);
		if (checked && !unchanged) {
			batch.end(false);
			out.truncate(exec_start);
			c.reply.null_array();
			end_transaction(c.session);
			return;
		}
		std::string_view reply = out.view().substr(check_start);
		if (!checked && !reply.empty())
			failed.assign(error_text(reply));
	}
	if (c.session.retry_later || !failed.empty()) {
		batch.end(false);
		if (c.session.retry_later)
			return;
		out.truncate(exec_start);
		c.reply.error_with_code("EXECABORT", "Transaction rolled back: " + failed);
		end_transaction(c.session);
		return;
	}
	/* Before the commit: should noting fail (out of memory), nothing is committed and the
	 * client caches nothing; a commit that fails after it leaves keys tracked, which costs at
	 * most an invalidation nobody needed. */
	note_reads(c, argv, reads);
	LookupResult committed = batch.end(true);
	if (committed.status != LookupResult::Status::Ok) {
		out.truncate(exec_start);
		c.reply.error_with_code("EXECABORT", "Transaction rolled back: " + committed.message);
	}
	end_transaction(c.session);
}

/* CLIENT TRACKING: the reads of an EXEC about to commit, each with CLIENT CACHING's flags as
 * they were when it ran. */
void note_reads(CommandContext &c, const std::vector<std::string_view> &argv, const std::vector<TrackedRead> &reads)
{
	TrackingMode &mode = c.session.tracking;
	bool yes = mode.caching_yes, no = mode.caching_no;
	for (const TrackedRead &read : reads) {
		Request request{&argv[read.first_arg], read.argc};
		CommandContext queued{request, c.session, c.data, c.reply, c.scratch, *command_for(request),
							  c.clients, c.monitor, c.tracking, c.cluster};
		mode.caching_yes = read.caching_yes;
		mode.caching_no = read.caching_no;
		note_tracked_reads(queued);
	}
	mode.caching_yes = yes;
	mode.caching_no = no;
}

} // namespace

/* WATCH key [key ...]: remembers each row's version for EXEC. */
void watch_command(CommandContext &c)
{
	if (c.session.multi.active) {
		c.reply.error("WATCH inside MULTI is not allowed");
		return;
	}
	if (c.session.watched.size() + c.argc() - 1 > kMaxWatchedKeys) {
		c.reply.error("too many watched keys (at most 1024)");
		return;
	}
	std::vector<std::pair<std::string, std::string>> seen;
	for (size_t i = 1; i < c.argc(); i++) {
		std::string version = "no key";
		if (std::optional<RowKey> key = parse_row_key(c.arg(i))) {
			if (!lookup_succeeded(c, c.data.batches.row_version(c.session, *key, &version)))
				return;
		}
		seen.emplace_back(std::string(c.arg(i)), std::move(version));
	}
	for (auto &entry : seen)
		c.session.watched.push_back(std::move(entry));
	c.reply.ok();
}

void unwatch_command(CommandContext &c)
{
	std::vector<std::pair<std::string, std::string>>().swap(c.session.watched);
	c.reply.ok();
}

} // namespace local_cache::resp
