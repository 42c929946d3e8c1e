/*
 * monitor.cpp — the slow log and the latency monitor's "command" event of one worker, for every
 * role and for each of the most recent roles, and the command line pg_stat_activity shows
 * (monitor.h).
 */
#include "resp_server/commands/monitor.h"

#include "resp_server/commands/command_table.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string_view>

namespace local_cache::resp {

namespace {

/* Whose arguments are secrets (passwords): the entry keeps only the command's name. */
bool redacted(const CommandSpec &command)
{
	return command.full_name == "auth" || command.full_name == "hello";
}

void keep_argument(std::vector<std::string> &out, std::string_view argument)
{
	if (argument.size() <= CommandMonitor::kMaxArgumentBytes) {
		out.emplace_back(argument);
		return;
	}
	std::string cut(argument.substr(0, CommandMonitor::kMaxArgumentBytes));
	cut.append("... (").append(std::to_string(argument.size() - CommandMonitor::kMaxArgumentBytes));
	cut.append(" more bytes)");
	out.push_back(std::move(cut));
}

} // namespace

void CommandMonitor::configure(const SlowlogSettings &settings)
{
	settings_ = settings;
	while (slowlog_.size() > settings_.max_length)
		slowlog_.pop_back();
}

void CommandMonitor::record(const CommandSpec &command, const Request &request, const Session &session,
							int64_t started_us, int64_t duration_us)
{
	if (duration_us < 0) /* the clock went back */
		duration_us = 0;
	if (settings_.log_slower_than_us < 0 || duration_us < settings_.log_slower_than_us)
		return;
	LatencyRecord *own = session.role ? &latency_of(session.role->id) : nullptr;
	for (LatencyRecord *latency : {&every_role_, own}) {
		if (latency == nullptr)
			continue;
		LatencyEvent &event = latency->command_event ? *latency->command_event : latency->command_event.emplace();
		event.latest_seconds = started_us / 1000000;
		event.latest_ms = duration_us / 1000;
		event.max_ms = std::max(event.max_ms, event.latest_ms);
	}
	log_slow(command, request, session, started_us, duration_us);
}

void CommandMonitor::log_slow(const CommandSpec &command, const Request &request, const Session &session,
							  int64_t started_us, int64_t duration_us)
{
	if (settings_.max_length == 0)
		return;
	SlowlogEntry entry;
	entry.id = next_id_++;
	entry.timestamp_seconds = started_us / 1000000;
	entry.duration_us = duration_us;
	size_t kept = redacted(command) ? 1 : std::min(request.argc, kMaxArguments);
	for (size_t i = 0; i < kept; i++) {
		if (i == kMaxArguments - 1 && request.argc > kMaxArguments) {
			entry.arguments.push_back("... (" + std::to_string(request.argc - kMaxArguments + 1) +
									  " more arguments)");
			break;
		}
		keep_argument(entry.arguments, request[i]);
	}
	entry.peer_address = session.peer_address;
	entry.client_name = session.name;
	if (session.role)
		entry.role_id = session.role->id;
	slowlog_.push_front(std::move(entry));
	while (slowlog_.size() > settings_.max_length)
		slowlog_.pop_back();
}

const LatencyRecord *CommandMonitor::role_latency(uint64_t role) const
{
	for (const RoleLatency &kept : roles_)
		if (kept.role == role)
			return &kept.latency;
	return nullptr;
}

LatencyRecord &CommandMonitor::latency_of(uint64_t role)
{
	auto found = std::find_if(roles_.begin(), roles_.end(), [&](const RoleLatency &kept) { return kept.role == role; });
	if (found == roles_.end() && roles_.size() >= kLatencyRoles) {
		found = std::prev(roles_.end());
		*found = RoleLatency{role, LatencyRecord()};
	} else if (found == roles_.end()) {
		return roles_.emplace_front(RoleLatency{role, LatencyRecord()}).latency;
	}
	roles_.splice(roles_.begin(), roles_, found);
	return found->latency;
}

void CommandMonitor::reset_latency()
{
	every_role_.command_event.reset();
	for (RoleLatency &kept : roles_)
		kept.latency.command_event.reset();
}

namespace {

/* Writes into a buffer that drops what does not fit (one byte kept for the NUL). */
struct ActivityText {
	char *out;
	size_t size;
	size_t length = 0;

	void put(char c)
	{
		if (length + 1 < size)
			out[length++] = c;
	}
	void put(std::string_view text)
	{
		size_t room = length + 1 < size ? size - 1 - length : 0;
		size_t n = std::min(text.size(), room);
		std::memcpy(out + length, text.data(), n);
		length += n;
	}
	/* "... (<count> more <what>)" */
	void put_more(size_t count, std::string_view what)
	{
		char digits[24];
		std::to_chars_result end = std::to_chars(digits, digits + sizeof(digits), count);
		put("... (");
		put(std::string_view(digits, size_t(end.ptr - digits)));
		put(" more ");
		put(what);
		put(")");
	}
};

bool plain_byte(unsigned char c)
{
	return c > ' ' && c <= '~' && c != '"' && c != '\\';
}

bool plain(std::string_view argument)
{
	if (argument.empty())
		return false;
	for (unsigned char c : argument)
		if (!plain_byte(c))
			return false;
	return true;
}

/* Redis's sdscatrepr: "..." with \n \r \t \a \b \" \\ and \xNN for other bytes. */
void put_quoted(ActivityText &text, std::string_view argument)
{
	static const char hex[] = "0123456789abcdef";
	text.put('"');
	for (size_t i = 0; i < argument.size(); i++) {
		/* A run of bytes that stand for themselves goes in at once (a JSON value is mostly one). */
		size_t run = i;
		while (run < argument.size() && (plain_byte(static_cast<unsigned char>(argument[run])) || argument[run] == ' '))
			run++;
		if (run > i) {
			text.put(argument.substr(i, run - i));
			i = run - 1;
			continue;
		}
		unsigned char c = static_cast<unsigned char>(argument[i]);
		switch (c) {
		case '\\': text.put("\\\\"); break;
		case '"': text.put("\\\""); break;
		case '\n': text.put("\\n"); break;
		case '\r': text.put("\\r"); break;
		case '\t': text.put("\\t"); break;
		case '\a': text.put("\\a"); break;
		case '\b': text.put("\\b"); break;
		default:
			if (c >= ' ' && c <= '~') {
				text.put(char(c));
			} else {
				text.put("\\x");
				text.put(hex[c >> 4]);
				text.put(hex[c & 15]);
			}
		}
	}
	text.put('"');
}

} // namespace

size_t format_activity(const CommandSpec &command, const Request &request, char *out, size_t size)
{
	if (size == 0)
		return 0;
	ActivityText text{out, size};
	size_t kept = redacted(command) ? 1 : std::min(request.argc, CommandMonitor::kMaxArguments);
	for (size_t i = 0; i < kept; i++) {
		if (i > 0)
			text.put(' ');
		if (i == CommandMonitor::kMaxArguments - 1 && request.argc > CommandMonitor::kMaxArguments) {
			text.put_more(request.argc - CommandMonitor::kMaxArguments + 1, "arguments");
			break;
		}
		std::string_view argument = request[i];
		size_t cut = argument.size() > CommandMonitor::kMaxArgumentBytes ? argument.size() - CommandMonitor::kMaxArgumentBytes : 0;
		argument = argument.substr(0, CommandMonitor::kMaxArgumentBytes);
		if (plain(argument))
			text.put(argument);
		else
			put_quoted(text, argument);
		if (cut > 0) {
			text.put_more(cut, "bytes");
		}
	}
	out[text.length] = '\0';
	return text.length;
}

} // namespace local_cache::resp
