/*
 * io_ring.h — the io_uring a RESP worker waits, receives and sends through: one ring per
 * worker, used by its one thread only, with a pool of receive buffers the kernel picks from
 * when data arrives (a provided-buffer ring), so an idle connection holds none. Built on
 * liburing (Debian's liburing-dev), which owns the rings' memory barriers and index arithmetic;
 * this class only chooses the setup and the requests. No PostgreSQL or libuv header:
 * tests/io_ring_test.cpp tests it over socket pairs.
 *
 * Why: epoll costs a wait, a read and a write per request at the load of many clients, where
 * one io_uring_enter per loop turn submits every send and collects every receive
 * (docs/OPERATIONS.md, "Performance notes"). It needs Linux 6.1 (deferred task running, multishot
 * receive); open() fails on older kernels, where io_uring is disabled, or where a seccomp
 * filter refuses it, and the worker then serves through libuv's epoll.
 */
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>

namespace local_cache::resp {

class IoRing {
public:
	struct Completion {
		uint64_t user_data;
		int32_t result;
		uint32_t flags;
	};

	IoRing() = default;
	IoRing(const IoRing &) = delete;
	IoRing &operator=(const IoRing &) = delete;
	~IoRing();

	/* 0, or the errno with which the kernel refused. buffer_count: a power of two. */
	int open(unsigned entries, unsigned buffer_count, unsigned buffer_size);

	/*
	 * Requests, queued until the next submit(); each completion carries the user_data given.
	 * A full submission queue is submitted first. receive() stays armed (IORING_CQE_F_MORE)
	 * and puts each arrival in a pool buffer (buffer_of(); hand it back with recycle()); it ends
	 * at end of file, on an error, or with -ENOBUFS when the pool ran dry.
	 */
	void receive(int fd, uint64_t user_data);
	void send(int fd, const void *data, size_t length, uint64_t user_data);
	void poll_readable(int fd, uint64_t user_data); /* one completion */

	/* Hands the queued requests to the kernel. 0 or -errno. */
	int submit();
	/* submit(), then waits until a completion is ready or timeout_ms passed (-1: no limit).
	 * 0, -ETIME (the time passed), -EINTR (a signal), or another -errno. */
	int submit_and_wait(int timeout_ms);
	/* submit(), then waits timeout_us while the kernel takes in what arrives (ended early only
	 * by a full completion queue or a signal); returns as submit_and_wait. A batching pause. */
	int submit_and_pause(int64_t timeout_us);

	/* Calls visit(const Completion &) for each ready completion, in order; visit may queue and
	 * submit requests. Each completion is consumed before visit sees it. */
	template <typename Visit> void each_completion(Visit &&visit)
	{
		io_uring_cqe *cqe = nullptr;
		while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe != nullptr) {
			Completion completion{cqe->user_data, cqe->res, cqe->flags};
			io_uring_cqe_seen(&ring_, cqe);
			visit(completion);
		}
	}

	/* A receive's bytes, when the completion holds a pool buffer (has_buffer). */
	static bool has_buffer(const Completion &c) { return (c.flags & IORING_CQE_F_BUFFER) != 0; }
	static bool more_follow(const Completion &c) { return (c.flags & IORING_CQE_F_MORE) != 0; }
	const char *buffer_of(const Completion &c) const;
	void recycle(const Completion &c);

private:
	/* A request slot of the queue, submitting the queue first when it is full. */
	io_uring_sqe *next_request();
	int wait(unsigned completions, int64_t timeout_ns);
	/* Lends buffer `id` to the kernel again (made visible by the caller's advance). */
	void add_buffer(unsigned id, int offset);

	io_uring ring_;
	bool open_ = false;
	unsigned cq_entries_ = 0;
	/* The provided-buffer ring (group 0) and the buffers it lends. */
	io_uring_buf_ring *buffer_ring_ = nullptr;
	size_t buffer_ring_size_ = 0;
	unsigned buffer_count_ = 0;
	char *buffers_ = nullptr;
	size_t buffers_size_ = 0;
	unsigned buffer_size_ = 0;
};

} // namespace local_cache::resp
