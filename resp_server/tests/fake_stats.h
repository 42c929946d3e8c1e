/*
 * fake_stats.h — the command tests' CommandStatsStore: the statistics every process would share,
 * in memory, by (role, command number), with the switch CONFIG RESETSTAT's privilege check
 * answers and a count of the folds that reached it.
 */
#pragma once

#include "resp_server/commands/command_stats.h"

#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace resp_test {

using local_cache::resp::CommandCounters;
using local_cache::resp::CommandStatsRecorder;
using local_cache::resp::CommandStatsStore;
using local_cache::resp::Session;

class FakeCommandStats final : public CommandStatsStore {
public:
	std::map<std::pair<uint64_t, uint16_t>, CommandCounters> entries;
	std::set<uint64_t> may_reset_roles; /* roles for which may_reset answers true */
	int folds = 0;

	void fold(CommandStatsRecorder &recorder) override
	{
		folds++;
		for (size_t i = 0; i < recorder.pending_count(); i++) {
			const CommandStatsRecorder::Entry &e = recorder.pending(i);
			auto [at, added] = entries.try_emplace({e.role, e.command});
			if (added)
				memset(&at->second, 0, sizeof(CommandCounters));
			at->second.add(e.counters);
		}
		recorder.clear_pending();
	}

	void read(std::optional<uint64_t> role, std::vector<CommandCounters> &totals) override
	{
		for (const auto &[key, counters] : entries)
			if ((!role || key.first == *role) && key.second < totals.size())
				totals[key.second].add(counters);
	}

	bool may_reset(const Session &session) override
	{
		return session.role && may_reset_roles.count(session.role->id) > 0;
	}

	void reset() override { entries.clear(); }

	/* The counters of one pair; zeros when it never ran. */
	CommandCounters of(uint64_t role, uint16_t command) const
	{
		auto found = entries.find({role, command});
		CommandCounters none;
		memset(&none, 0, sizeof(none));
		return found == entries.end() ? none : found->second;
	}
};

} // namespace resp_test
