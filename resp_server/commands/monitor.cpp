/*
 * monitor.cpp — the slow log, the latency monitor's "command" event and the per-command latency
 * histograms of one worker, for every role and for each of the most recent roles (monitor.h).
 */
#include "resp_server/commands/monitor.h"

#include "resp_server/commands/command_table.h"

#include <algorithm>
#include <string_view>

namespace local_cache::resp {

namespace {

/* The bucket of a duration: the smallest i with duration <= 2^i microseconds. */
size_t bucket_of(int64_t duration_us)
{
	size_t bucket = 0;
	while (bucket + 1 < CommandMonitor::kBuckets && (int64_t(1) << bucket) < duration_us)
		bucket++;
	return bucket;
}

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
	std::optional<uint64_t> role;
	if (session.role)
		role = session.role->id;
	if (&command != last_command_ || role != last_role_) {
		/* Forgotten first: latency_of may drop the record they point into, and a lookup may
		 * fail on memory. */
		last_command_ = nullptr;
		Histogram *every_role = &every_role_.histograms[&command];
		LatencyRecord *own = role ? &latency_of(*role) : nullptr;
		last_role_histogram_ = own != nullptr ? &own->histograms[&command] : nullptr;
		last_every_role_histogram_ = every_role;
		last_role_latency_ = own;
		last_role_ = role;
		last_command_ = &command;
	}
	size_t bucket = bucket_of(duration_us);
	for (Histogram *histogram : {last_every_role_histogram_, last_role_histogram_}) {
		if (histogram != nullptr) {
			histogram->calls++;
			histogram->counts[bucket]++;
		}
	}
	if (settings_.log_slower_than_us < 0 || duration_us < settings_.log_slower_than_us)
		return;
	for (LatencyRecord *latency : {&every_role_, last_role_latency_}) {
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

const CommandHistogram *LatencyRecord::histogram(const CommandSpec &command) const
{
	auto found = histograms.find(&command);
	return found == histograms.end() ? nullptr : &found->second;
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

} // namespace local_cache::resp
