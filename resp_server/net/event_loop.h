/*
 * event_loop.h — a worker's event loop: one thread, libuv's loop for timers, wakeups and
 * descriptors, and the backend its connections' bytes go through (transport.h):
 *
 *   io_uring   use_ring() opened the worker's ring (io_ring.h): each turn submits the turn's
 *              sends and waits, in one io_uring_enter, for receives, sends, or libuv's epoll
 *              descriptor (polled through the ring) to complete, or for libuv's next timer.
 *              libuv's loop runs, without blocking, only when its descriptor was ready or a
 *              timer is due, so a busy turn makes that one system call.
 *   libuv      otherwise (the kernel refused a ring, or it was not asked for): libuv's loop,
 *              connections as libuv streams.
 * TLS layers over either (open_stream). Each turn calls the owner's Turn hooks the same way in
 * both: before_blocking() before the loop waits, after_turn() after each turn (where the owner
 * may pause(), the batching pause).
 *
 * Timer, MicroTimer, FdWatch and Wakeup are the loop's other handles, so that nothing above
 * net/ includes libuv. Each is closed before the loop ends (run() returns once stop() was called
 * and every handle and stream is closed). No PostgreSQL header, and no libuv header here.
 */
#pragma once

#include "resp_server/net/transport.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

struct uv_loop_s;

namespace local_cache::resp {

class TlsContext;
class RingBackend;

class EventLoop {
public:
	/* What the owner does at each turn. */
	class Turn {
	public:
		virtual ~Turn() = default;
		virtual void before_blocking() = 0;
		virtual void after_turn() = 0;
	};

	EventLoop();
	~EventLoop();
	EventLoop(const EventLoop &) = delete;
	EventLoop &operator=(const EventLoop &) = delete;

	/* Serves connections through an io_uring from now on: 0, or the errno with which the kernel
	 * refused one (Linux 6.1 or later; kernel.io_uring_disabled; seccomp), and then through
	 * libuv. Before any open_stream. */
	int use_ring();
	bool on_ring() const { return ring_ != nullptr; }

	/*
	 * A stream over the accepted socket `fd` (which it owns from now on), through the loop's
	 * backend, under TLS when `tls` is given; `events` hears of it. Nullptr when it could not
	 * be made: `fd` is closed then.
	 */
	std::unique_ptr<Stream> open_stream(int fd, StreamEvents &events, const TlsContext *tls) noexcept;

	/* Runs turns until stop() was called and every handle and stream has closed. */
	void run(Turn &turn);
	/* The loop ends once what is open has closed; the owner closes it all. */
	void stop();
	bool stopping() const { return stopping_; }

	/* The loop's clock (milliseconds, updated once per turn). */
	uint64_t now_ms() const;
	/* A pause of `microseconds` in which no arrival wakes the worker: on the ring, an
	 * io_uring_enter that also submits the turn's sends and takes in what arrives; else
	 * nanosleep. A signal ends it. */
	void pause(int microseconds);

	uv_loop_s *uv() { return loop_; }

private:
	uv_loop_s *loop_;
	struct Hooks;
	std::unique_ptr<Hooks> hooks_;
	std::unique_ptr<RingBackend> ring_;
	bool stopping_ = false;
	/* One read of TLS records (a record carries up to 16 kB of plaintext), shared by the
	 * loop's TLS streams: a read is decrypted before the next one is made. */
	std::vector<char> tls_records_;
};

/* A libuv timer of the loop (milliseconds). */
class Timer {
public:
	Timer(EventLoop &loop, std::function<void()> fire);
	~Timer();
	Timer(const Timer &) = delete;
	Timer &operator=(const Timer &) = delete;
	void start(uint64_t timeout_ms, uint64_t repeat_ms);
	void stop();
	bool active() const;
	void close();

	struct Handle;

private:
	Handle *handle_;
};

/* A one-shot timer finer than libuv's milliseconds: a timerfd the loop polls. */
class MicroTimer {
public:
	/* Throws std::system_error when no timerfd can be made. */
	MicroTimer(EventLoop &loop, std::function<void()> fire);
	~MicroTimer();
	MicroTimer(const MicroTimer &) = delete;
	MicroTimer &operator=(const MicroTimer &) = delete;
	void arm(long microseconds);
	void close();

	struct Handle;

private:
	Handle *handle_;
};

/* Calls `readable` when a descriptor becomes readable (a Unix socket, the postmaster's pipe). */
class FdWatch {
public:
	FdWatch() = default;
	~FdWatch();
	FdWatch(const FdWatch &) = delete;
	FdWatch &operator=(const FdWatch &) = delete;
	/* Watches fd (started); false when libuv refused it. */
	bool open(EventLoop &loop, int fd, std::function<void()> readable);
	bool is_open() const { return handle_ != nullptr; }
	void stop();
	/* Closes the watch; `closed` runs once libuv no longer names the descriptor (which may be
	 * closed then). */
	void close(std::function<void()> closed = nullptr);

	struct Handle;

private:
	Handle *handle_ = nullptr;
};

/* Wakes the loop from a signal handler: `woken` runs on the loop's thread. */
class Wakeup {
public:
	Wakeup(EventLoop &loop, std::function<void()> woken);
	~Wakeup();
	Wakeup(const Wakeup &) = delete;
	Wakeup &operator=(const Wakeup &) = delete;
	/* Async-signal-safe. */
	void send() noexcept;
	void close();

	struct Handle;

private:
	Handle *handle_;
};

} // namespace local_cache::resp
