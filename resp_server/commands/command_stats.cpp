/*
 * command_stats.cpp — the latency histogram, the command numbers, one process's recorder of
 * per-(role, command) counters, and the INFO sections made of their sums (command_stats.h).
 */
#include "resp_server/commands/command_stats.h"

#include "resp_server/commands/command_context.h"

#include <cstdio>
#include <cstring>
#include <new>

namespace local_cache::resp {

/* ---- the histogram ---- */

size_t LatencyHistogram::bucket_of(int64_t usec)
{
	if (usec <= int64_t(kExact - 1))
		return usec < 0 ? 0 : size_t(usec);
	uint64_t below = uint64_t(usec) - 1; /* buckets hold (lower, upper] */
	if (below >> (kLastOctave + 1))
		return kBuckets - 1;
	unsigned octave = 63u - unsigned(__builtin_clzll(below));
	size_t sub = size_t(below >> (octave - kFirstOctave)) & (kPerOctave - 1);
	return kExact + (octave - kFirstOctave) * kPerOctave + sub;
}

uint64_t LatencyHistogram::upper_bound(size_t bucket)
{
	if (bucket < kExact)
		return bucket;
	size_t i = bucket - kExact;
	unsigned octave = kFirstOctave + unsigned(i / kPerOctave);
	uint64_t width = uint64_t(1) << (octave - kFirstOctave);
	return (uint64_t(1) << octave) + (i % kPerOctave + 1) * width;
}

uint64_t LatencyHistogram::total() const
{
	uint64_t sum = 0;
	for (uint64_t count : counts)
		sum += count;
	return sum;
}

uint64_t LatencyHistogram::value_at_percentile(double percentile) const
{
	uint64_t all = total();
	if (all == 0)
		return 0;
	uint64_t wanted = uint64_t(percentile / 100.0 * double(all) + 0.5);
	if (wanted < 1)
		wanted = 1;
	uint64_t seen = 0;
	for (size_t b = 0; b < kBuckets; b++) {
		seen += counts[b];
		if (seen >= wanted)
			return upper_bound(b);
	}
	return upper_bound(kBuckets - 1);
}

void LatencyHistogram::cumulative_powers_of_two(uint64_t (&out)[kPowers]) const
{
	uint64_t seen = 0;
	size_t b = 0;
	for (size_t power = 0; power < kPowers; power++) {
		uint64_t limit = uint64_t(1) << power;
		for (; b < kBuckets && upper_bound(b) <= limit; b++)
			seen += counts[b];
		out[power] = seen;
	}
}

void CommandCounters::add(const CommandCounters &other)
{
	calls += other.calls;
	usec += other.usec;
	rejected_calls += other.rejected_calls;
	failed_calls += other.failed_calls;
	for (size_t i = 0; i < kErrorCodeCount; i++)
		errors[i] += other.errors[i];
	for (size_t b = 0; b < LatencyHistogram::kBuckets; b++)
		latency.counts[b] += other.latency.counts[b];
}

size_t error_code_of(std::string_view reply)
{
	size_t err = kErrCode;
	if (reply.empty() || reply[0] != '-')
		return err;
	std::string_view word = reply.substr(1, 32);
	word = word.substr(0, word.find_first_of(" \r"));
	for (size_t i = 0; i < kErrorCodeCount; i++)
		if (word == kErrorCodes[i])
			return i;
	return err;
}

/* ---- command numbers: a walk over the table (a new pair is rare; SQL reads a few hundred) ---- */

size_t command_count()
{
	size_t count = 0;
	for (const CommandSpec &command : command_table())
		count += 1 + command.subcommand_count;
	return count;
}

uint16_t command_number(const CommandSpec &command)
{
	size_t number = 0;
	for (const CommandSpec &top : command_table()) {
		number++;
		if (&top == &command)
			return uint16_t(number);
		for (size_t i = 0; i < top.subcommand_count; i++) {
			number++;
			if (&top.subcommands[i] == &command)
				return uint16_t(number);
		}
	}
	return 0;
}

const CommandSpec *command_by_number(size_t number)
{
	if (number == 0)
		return nullptr;
	for (const CommandSpec &top : command_table()) {
		if (--number == 0)
			return &top;
		if (number <= top.subcommand_count)
			return &top.subcommands[number - 1];
		number -= top.subcommand_count;
	}
	return nullptr;
}

/* ---- the recorder ---- */

CommandStatsRecorder::Entry *CommandStatsRecorder::entry_of(const CommandSpec *command, uint64_t role)
{
	Key key{role, command};
	if (has_last_ && key == last_) /* pending since clear_pending() */
		return &entries_[last_entry_];
	auto found = index_.find(key);
	uint32_t at;
	if (found != index_.end()) {
		at = found->second;
	} else {
		/* Room first, so that a failure leaves the three in step. */
		entries_.reserve(entries_.size() + 1);
		is_pending_.reserve(entries_.size() + 1);
		pending_.reserve(entries_.size() + 1);
		at = uint32_t(entries_.size());
		index_.emplace(key, at);
		Entry entry;
		memset(&entry, 0, sizeof(entry));
		entry.role = role;
		entry.command = command != nullptr ? command_number(*command) : 0;
		entries_.push_back(entry);
		is_pending_.push_back(false);
	}
	if (!is_pending_[at]) {
		is_pending_[at] = true;
		pending_.push_back(at);
	}
	last_ = key;
	last_entry_ = at;
	has_last_ = true;
	return &entries_[at];
}

void CommandStatsRecorder::executed_by_lookup(const CommandSpec &command, uint64_t role, int64_t usec, bool failed,
											  size_t error_code) noexcept
{
	Entry *entry;
	try {
		entry = entry_of(&command, role);
	} catch (const std::bad_alloc &) {
		return;
	}
	count_call(entry->counters, usec, failed, error_code);
}

void CommandStatsRecorder::rejected(const CommandSpec *command, uint64_t role, std::string_view reply) noexcept
{
	Entry *entry;
	try {
		entry = entry_of(command, role);
	} catch (const std::bad_alloc &) {
		return;
	}
	if (command != nullptr)
		entry->counters.rejected_calls++;
	entry->counters.errors[error_code_of(reply)]++;
}

void CommandStatsRecorder::clear_pending()
{
	if (entries_.size() > kKeptPairs) {
		entries_.clear();
		index_.clear();
		is_pending_.clear();
		pending_.clear();
		has_last_ = false;
		return;
	}
	for (uint32_t at : pending_) {
		memset(&entries_[at].counters, 0, sizeof(CommandCounters));
		is_pending_[at] = false;
	}
	pending_.clear();
	has_last_ = false; /* the shortcut in entry_of skips the pending check */
}

/* ---- the INFO sections ---- */

namespace {

void append_double(std::string &out, const char *format, double value)
{
	char text[64];
	int length = snprintf(text, sizeof(text), format, value);
	out.append(text, size_t(length));
}

} // namespace

void append_commandstats(std::string &out, const std::vector<CommandCounters> &totals)
{
	for (size_t n = 1; n < totals.size(); n++) {
		const CommandCounters &c = totals[n];
		const CommandSpec *command = command_by_number(n);
		if (!c.listed() || command == nullptr)
			continue;
		out.append("cmdstat_").append(command->full_name).append(":calls=");
		append_number(out, c.calls);
		out.append(",usec=");
		append_number(out, c.usec);
		append_double(out, ",usec_per_call=%.2f", c.calls == 0 ? 0.0 : double(c.usec) / double(c.calls));
		out.append(",rejected_calls=");
		append_number(out, c.rejected_calls);
		out.append(",failed_calls=");
		append_number(out, c.failed_calls);
		out.append("\r\n");
	}
}

void append_errorstats(std::string &out, const std::vector<CommandCounters> &totals)
{
	for (size_t code = 0; code < kErrorCodeCount; code++) {
		uint64_t count = 0;
		for (const CommandCounters &c : totals)
			count += c.errors[code];
		if (count == 0)
			continue;
		out.append("errorstat_").append(kErrorCodes[code]).append(":count=");
		append_number(out, count);
		out.append("\r\n");
	}
}

void append_latencystats(std::string &out, const std::vector<CommandCounters> &totals)
{
	for (size_t n = 1; n < totals.size(); n++) {
		const CommandCounters &c = totals[n];
		const CommandSpec *command = command_by_number(n);
		if (c.calls == 0 || command == nullptr)
			continue;
		out.append("latency_percentiles_usec_").append(command->full_name);
		append_double(out, ":p50=%.3f", double(c.latency.value_at_percentile(50)));
		append_double(out, ",p99=%.3f", double(c.latency.value_at_percentile(99)));
		append_double(out, ",p99.9=%.3f", double(c.latency.value_at_percentile(99.9)));
		out.append("\r\n");
	}
}

} // namespace local_cache::resp
