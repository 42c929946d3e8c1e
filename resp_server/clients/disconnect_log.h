/*
 * disconnect_log.h — the rate limits of a worker's "closing client" log lines (a client that
 * floods the server must not flood the log):
 *   DisconnectLog        at most one line a second for each reason, then one line with the count
 *                        of those left out;
 *   HandshakeFailureLog  failed TLS handshakes: a few lines per client address in a window, then
 *                        one line that counts the others.
 *
 * DisconnectLog runs on the paths that close a connection after a failure, allocation failures
 * included, inside noexcept libuv callbacks: so it never allocates (a fixed table), and it copies
 * each reason (a caller may pass an exception's what(), gone once the call returns). No
 * PostgreSQL header: the worker writes the lines, the unit tests drive the tables alone.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>

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

/*
 * The log lines of failed TLS handshakes, by client address. A failed handshake closes its own
 * connection and nothing else: clients behind one NAT share an address, and one client's failures
 * must never cost another its handshake (the handshake is bounded by authentication_timeout, and
 * connections not logged in by their own cap). So only the log is limited here: the first
 * kLinesPerAddress failures of an address in a window are written one by one, the others counted
 * and written as one line once the window has ended (at the first flush after kWindowMs).
 * Memory is bounded: at most kAddresses addresses are followed at a time; the failures of
 * further ones are counted together, one line per window. So the log takes at most
 * kAddresses * (kLinesPerAddress + 1) + 1 lines per window, whatever the clients do.
 */
class HandshakeFailureLog {
public:
	static constexpr size_t kAddresses = 1000;
	static constexpr uint32_t kLinesPerAddress = 3;
	static constexpr int64_t kWindowMs = 10 * 1000;

	/* A handshake from `address` failed at now_ms: whether to write its line (else it is
	 * counted). */
	bool note(const std::string &address, int64_t now_ms) noexcept
	{
		auto found = windows_.find(address);
		if (found == windows_.end() && windows_.size() < kAddresses) {
			try {
				found = windows_.emplace(address, Window{now_ms, 0, 0}).first;
			} catch (...) {
				found = windows_.end(); /* out of memory: counted with the addresses not followed */
			}
		}
		if (found == windows_.end()) {
			if (others_.left_out++ == 0)
				others_.start_ms = now_ms;
			return false;
		}
		Window &window = found->second;
		if (window.written < kLinesPerAddress) {
			window.written++;
			return true;
		}
		window.left_out++;
		return false;
	}

	/* Forgets the windows that have ended; for those with failures left out, calls
	 * emit(address, count) first (address nullptr: the addresses not followed). */
	template <typename Emit> void flush(int64_t now_ms, Emit &&emit)
	{
		for (auto it = windows_.begin(); it != windows_.end();) {
			if (now_ms - it->second.start_ms < kWindowMs) {
				++it;
				continue;
			}
			if (it->second.left_out > 0)
				emit(it->first.c_str(), it->second.left_out);
			it = windows_.erase(it);
		}
		if (others_.left_out > 0 && now_ms - others_.start_ms >= kWindowMs) {
			emit(static_cast<const char *>(nullptr), others_.left_out);
			others_.left_out = 0;
		}
	}

	size_t addresses_followed() const { return windows_.size(); }

private:
	struct Window {
		int64_t start_ms;
		uint32_t written;
		uint64_t left_out;
	};

	std::unordered_map<std::string, Window> windows_;
	Window others_{0, 0, 0};
};

} // namespace local_cache::resp
