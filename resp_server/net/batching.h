/*
 * batching.h — when a busy RESP worker pauses before it blocks for the next requests
 * (local_cache.resp_batch_delay), judged from the load of the last millisecond. The worker's
 * event layer (worker.cpp, connection.cpp) feeds it; no PostgreSQL or libuv header, so the
 * policy is unit-tested alone (tests/batching_test.cpp).
 *
 * A worker blocked in epoll_wait is woken by every request that arrives, and the client's send
 * pays for the wakeup: on a virtual machine an interprocessor interrupt to a halted vCPU, which
 * costs more than serving a cached row. While the worker pauses no arrival wakes it (in
 * nanosleep, or in an io_uring wait for more completions than can come), so the next requests
 * of busy clients queue without waking anyone and are read in one loop turn.
 * The pause only pays when requests arrive faster than one per pause and many clients each
 * wait far longer between their requests than the pause lasts; with few clients the pause
 * would hold up the very requests they are waiting to send (a lone client's always).
 * The measurements behind the policy and its constants: docs/OPERATIONS.md, "Performance notes"
 * ("Wakeups and local_cache.resp_batch_delay").
 */
#pragma once

#include <cstdint>

namespace local_cache::resp {

class BatchPolicy {
public:
	/* Never read: a Connection's read_in_ms before its first read. */
	static constexpr uint64_t kNever = UINT64_MAX;

	/* A read from one connection at loop time now_ms (milliseconds); read_in_ms is that
	 * connection's own mark, so that each connection counts once per millisecond. */
	void count_read(uint64_t now_ms, uint64_t *read_in_ms)
	{
		roll(now_ms);
		turn_read_ = true;
		ms_reads_++;
		if (*read_in_ms != ms_) {
			*read_in_ms = ms_;
			ms_connections_++;
		}
	}

	/* How many pauses apart each connection's reads must be for a pause, by how the worker
	 * pauses: four in io_uring_enter (the ring worker), since at eight busy clients went unpaused
	 * and their tail grew; eight in nanosleep (the epoll worker: resp_io_uring off, or refused),
	 * since at four its dearer pause cost the clients it held up more than it saved them. */
	static constexpr unsigned kPausesApartInRing = 4;
	static constexpr unsigned kPausesApartInSleep = 8;
	/* The rule for a worker: eight on a TLS port too, through the ring as well, where at four
	 * the clients a pause held up lost more than it saved them (pipelined GETs of 16 connections
	 * fell to three quarters of the epoll worker's requests/s; without pauses the ring is ahead). */
	static constexpr unsigned pauses_apart(bool ring, bool tls)
	{
		return ring && !tls ? kPausesApartInRing : kPausesApartInSleep;
	}

	/* At the end of a loop turn: pause delay_us microseconds? Only after a turn that read, and
	 * only if the last whole millisecond had at least one read per pause and, per connection
	 * read in it, a read rate that leaves at least pauses_apart pauses between its reads. */
	bool should_pause(uint64_t now_ms, int delay_us, unsigned pauses_apart)
	{
		bool read = turn_read_;
		turn_read_ = false;
		roll(now_ms);
		if (!read || delay_us <= 0)
			return false;
		uint64_t delay = uint64_t(delay_us);
		return last_reads_ * delay >= 1000 && last_connections_ * 1000 >= last_reads_ * delay * pauses_apart;
	}

private:
	void roll(uint64_t now_ms)
	{
		if (now_ms == ms_)
			return;
		bool next = now_ms == ms_ + 1;
		last_reads_ = next ? ms_reads_ : 0;
		last_connections_ = next ? ms_connections_ : 0;
		ms_reads_ = ms_connections_ = 0;
		ms_ = now_ms;
	}

	bool turn_read_ = false; /* this loop turn read from a connection */
	uint64_t ms_ = 0; /* the millisecond being counted */
	uint64_t ms_reads_ = 0, ms_connections_ = 0;
	uint64_t last_reads_ = 0, last_connections_ = 0; /* the millisecond before; 0 if idle */
};

} // namespace local_cache::resp
