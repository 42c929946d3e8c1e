/*
 * disconnect_log.h — the rate limit of a worker's "closing client" log lines: at most one line
 * a second for each reason, then one line with the count of those left out (a client that
 * floods the server must not flood the log).
 *
 * It runs on the paths that close a connection after a failure, allocation failures included,
 * inside noexcept libuv callbacks: so it never allocates (a fixed table), and it copies each
 * reason (a caller may pass an exception's what(), gone once the call returns). No PostgreSQL
 * header: the worker writes the lines, the unit tests drive the table alone.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace local_cache::resp {

class DisconnectLog {
public:
	/* Distinct reasons followed; further ones are logged every time (none is ever hidden). */
	static constexpr size_t kReasons = 64;
	/* Longer reasons are followed by their first kReasonBytes - 1 bytes. */
	static constexpr size_t kReasonBytes = 160;
	/* Between two lines for one reason. */
	static constexpr int64_t kIntervalMs = 1000;

	/* What to do about one disconnect at now_ms: write a line now (`log`), mentioning the
	 * `left_out` earlier ones of the same reason that were not written; else it is counted. */
	struct Decision {
		bool log;
		uint64_t left_out;
	};

	Decision note(const char *reason, int64_t now_ms) noexcept
	{
		Entry *entry = find(reason);
		if (entry == nullptr && used_ < kReasons) {
			entry = &entries_[used_++];
			size_t length = strnlen(reason, kReasonBytes - 1);
			memcpy(entry->reason, reason, length);
			entry->reason[length] = '\0';
			entry->last_ms = now_ms - kIntervalMs;
			entry->left_out = 0;
		}
		if (entry == nullptr)
			return Decision{true, 0};
		if (now_ms - entry->last_ms < kIntervalMs) {
			entry->left_out++;
			return Decision{false, 0};
		}
		Decision decision{true, entry->left_out};
		entry->last_ms = now_ms;
		entry->left_out = 0;
		return decision;
	}

	/* Calls emit(reason, count) for each reason with disconnects left out whose second is
	 * over, and counts them as written. */
	template <typename Emit> void flush(int64_t now_ms, Emit &&emit) noexcept
	{
		for (size_t i = 0; i < used_; i++) {
			Entry &entry = entries_[i];
			if (entry.left_out == 0 || now_ms - entry.last_ms < kIntervalMs)
				continue;
			emit(static_cast<const char *>(entry.reason), entry.left_out);
			entry.last_ms = now_ms;
			entry.left_out = 0;
		}
	}

private:
	struct Entry {
		char reason[kReasonBytes];
		int64_t last_ms;
		uint64_t left_out;
	};

	Entry *find(const char *reason) noexcept
	{
		for (size_t i = 0; i < used_; i++)
			if (strncmp(entries_[i].reason, reason, kReasonBytes - 1) == 0)
				return &entries_[i];
		return nullptr;
	}

	Entry entries_[kReasons];
	size_t used_ = 0;
};

} // namespace local_cache::resp
