/*
 * event_loop.cpp — a worker's event loop (event_loop.h): libuv's loop, run alone or nested in
 * the io_uring's; streams through either backend; the loop's timers, watches and wakeup.
 */
#include "resp_server/net/event_loop.h"

#include "resp_server/net/backends.h"
#include "resp_server/net/callback.h"

#include <uv.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

namespace local_cache::resp {

namespace {

void log_to_stderr(const char *what) noexcept
{
	fprintf(stderr, "local_cache RESP: %s\n", what);
}

CallbackFailureLog failure_log = log_to_stderr;

} // namespace

void set_callback_failure_log(CallbackFailureLog log) noexcept
{
	failure_log = log != nullptr ? log : log_to_stderr;
}

void log_callback_failure(const char *what) noexcept
{
	failure_log(what);
}

/* The loop's own handles: the owner's hooks before the loop blocks (prepare) and after each
 * turn (check), started only when libuv's loop is the loop. */
struct EventLoop::Hooks {
	uv_prepare_t prepare;
	uv_check_t check;
	Turn *turn = nullptr;

	static void before_blocking(uv_prepare_t *handle) { static_cast<Hooks *>(handle->data)->turn->before_blocking(); }
	static void after_turn(uv_check_t *handle) { static_cast<Hooks *>(handle->data)->turn->after_turn(); }
};

EventLoop::EventLoop() : loop_(new uv_loop_t), hooks_(std::make_unique<Hooks>())
{
	uv_loop_init(loop_);
	uv_prepare_init(loop_, &hooks_->prepare);
	hooks_->prepare.data = hooks_.get();
	uv_check_init(loop_, &hooks_->check);
	hooks_->check.data = hooks_.get();
	/* nanosleep would round a batching pause up by the default 50 µs of slack */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
}

namespace {

void note_active(uv_handle_t *handle, void *any)
{
	if (uv_is_active(handle))
		*static_cast<bool *>(any) = true;
}

} // namespace

EventLoop::~EventLoop()
{
	/* After run() every handle is closed; a loop that never ran closes its own hooks here. Where
	 * an exception ended run(), handles may still be active: the loop is left to the process's
	 * exit rather than run again. */
	if (!stopping_)
		stop();
	bool active = false;
	uv_walk(loop_, uv_callback<note_active>, &active);
	if (active)
		return;
	uv_run(loop_, UV_RUN_NOWAIT); /* only close callbacks are left */
	if (uv_loop_close(loop_) == 0)
		delete loop_;
}

int EventLoop::use_ring()
{
	auto ring = std::make_unique<RingBackend>();
	int error = ring->open();
	if (error == 0)
		ring_ = std::move(ring);
	return error;
}

std::unique_ptr<Stream> EventLoop::open_stream(int fd, StreamEvents &events, const TlsContext *tls) noexcept
{
	try {
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		PeerIdentity identity = identify(fd);
		std::unique_ptr<TlsStream> layer;
		StreamEvents *below_events = &events;
		if (tls != nullptr) {
			layer = std::make_unique<TlsStream>(*tls, events, tls_records_);
			below_events = layer.get();
		}
		/* From here the stream owns fd, or has closed it. */
		std::unique_ptr<Stream> plain = ring_ != nullptr ? ring_->open_stream(*below_events, std::move(identity))
														 : open_uv_stream(loop_, *below_events, std::move(identity));
		if (plain == nullptr || layer == nullptr)
			return plain;
		layer->attach(std::move(plain));
		return layer;
	} catch (...) {
		::close(fd);
		return nullptr;
	}
}

void EventLoop::stop()
{
	if (stopping_)
		return;
	stopping_ = true;
	uv_close(reinterpret_cast<uv_handle_t *>(&hooks_->prepare), nullptr);
	uv_close(reinterpret_cast<uv_handle_t *>(&hooks_->check), nullptr);
}

uint64_t EventLoop::now_ms() const
{
	return uv_now(loop_);
}

void EventLoop::pause(int microseconds)
{
	if (ring_ != nullptr) {
		ring_->ring().submit_and_pause(microseconds);
		return;
	}
	timespec pause = {0, long(microseconds) * 1000};
	nanosleep(&pause, nullptr);
}

void EventLoop::run(Turn &turn)
{
	hooks_->turn = &turn;
	if (ring_ == nullptr) {
		if (!stopping_) {
			uv_prepare_start(&hooks_->prepare, uv_callback<Hooks::before_blocking>);
			uv_check_start(&hooks_->check, uv_callback<Hooks::after_turn>);
		}
		uv_run(loop_, UV_RUN_DEFAULT);
		return;
	}
	/* The ring's loop: one io_uring_enter per turn; libuv's loop runs (without blocking) when its
	 * epoll descriptor, polled through the ring, was ready or a timer is due. */
	IoRing &ring = ring_->ring();
	bool libuv_ready = true;
	for (;;) {
		uv_update_time(loop_);
		if (libuv_ready || uv_backend_timeout(loop_) == 0) {
			uv_run(loop_, UV_RUN_NOWAIT);
			/* Polled again only now: polled while libuv still had events to take, it would
			 * complete at once. */
			if (libuv_ready)
				ring.poll_readable(uv_backend_fd(loop_), RingBackend::kLoopPoll);
			libuv_ready = false;
		}
		turn.after_turn();
		ring_->reap();
		if (stopping_ && ring_->drained() && !uv_loop_alive(loop_))
			return;
		turn.before_blocking();
		int rc = ring.submit_and_wait(uv_backend_timeout(loop_));
		if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
			throw std::runtime_error(std::string("io_uring_enter failed: ") + strerror(-rc));
		ring.each_completion([&](const IoRing::Completion &done) {
			if (done.user_data == RingBackend::kLoopPoll)
				libuv_ready = true;
			else
				ring_->complete(done);
		});
	}
}

/* ---------------------------------------------------------------- the loop's other handles */

namespace {

template <typename Handle> void close_handle(Handle *handle)
{
	uv_close(reinterpret_cast<uv_handle_t *>(&handle->uv), uv_callback<Handle::closed>);
}

} // namespace

struct Timer::Handle {
	uv_timer_t uv;
	std::function<void()> fire;
	static void fired(uv_timer_t *timer) { static_cast<Handle *>(timer->data)->fire(); }
	static void closed(uv_handle_t *handle) { delete static_cast<Handle *>(handle->data); }
};

Timer::Timer(EventLoop &loop, std::function<void()> fire) : handle_(new Handle)
{
	handle_->fire = std::move(fire);
	uv_timer_init(loop.uv(), &handle_->uv);
	handle_->uv.data = handle_;
}

Timer::~Timer()
{
	close();
}

void Timer::start(uint64_t timeout_ms, uint64_t repeat_ms)
{
	uv_timer_start(&handle_->uv, uv_callback<Handle::fired>, timeout_ms, repeat_ms);
}

void Timer::stop()
{
	uv_timer_stop(&handle_->uv);
}

bool Timer::active() const
{
	return uv_is_active(reinterpret_cast<const uv_handle_t *>(&handle_->uv)) != 0;
}

void Timer::close()
{
	if (handle_ == nullptr)
		return;
	close_handle(handle_);
	handle_ = nullptr;
}

struct MicroTimer::Handle {
	uv_poll_t uv;
	int fd;
	std::function<void()> fire;
	static void fired(uv_poll_t *poll, int, int)
	{
		Handle *handle = static_cast<Handle *>(poll->data);
		uint64_t expirations;
		if (read(handle->fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
			throw std::system_error(errno, std::generic_category(), "reading a timer");
		handle->fire();
	}
	static void closed(uv_handle_t *uv)
	{
		Handle *handle = static_cast<Handle *>(uv->data);
		::close(handle->fd);
		delete handle;
	}
};

MicroTimer::MicroTimer(EventLoop &loop, std::function<void()> fire)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		throw std::system_error(errno, std::generic_category(), "creating a timer");
	handle_ = new Handle;
	handle_->fd = fd;
	handle_->fire = std::move(fire);
	uv_poll_init(loop.uv(), &handle_->uv, fd);
	handle_->uv.data = handle_;
	uv_poll_start(&handle_->uv, UV_READABLE, uv_callback<Handle::fired>);
}

MicroTimer::~MicroTimer()
{
	close();
}

void MicroTimer::arm(long microseconds)
{
	itimerspec when = {};
	when.it_value.tv_sec = microseconds / 1000000;
	when.it_value.tv_nsec = (microseconds % 1000000) * 1000;
	timerfd_settime(handle_->fd, 0, &when, nullptr);
}

void MicroTimer::close()
{
	if (handle_ == nullptr)
		return;
	close_handle(handle_);
	handle_ = nullptr;
}

struct FdWatch::Handle {
	uv_poll_t uv;
	std::function<void()> readable;
	std::function<void()> on_closed;
	static void fired(uv_poll_t *poll, int, int) { static_cast<Handle *>(poll->data)->readable(); }
	static void closed(uv_handle_t *uv)
	{
		Handle *handle = static_cast<Handle *>(uv->data);
		std::function<void()> then = std::move(handle->on_closed);
		delete handle;
		if (then)
			then();
	}
};

FdWatch::~FdWatch()
{
	close();
}

bool FdWatch::open(EventLoop &loop, int fd, std::function<void()> readable)
{
	Handle *handle = new Handle;
	if (uv_poll_init(loop.uv(), &handle->uv, fd) != 0) {
		delete handle;
		return false;
	}
	handle->readable = std::move(readable);
	handle->uv.data = handle;
	uv_poll_start(&handle->uv, UV_READABLE, uv_callback<Handle::fired>);
	handle_ = handle;
	return true;
}

void FdWatch::stop()
{
	if (handle_ != nullptr)
		uv_poll_stop(&handle_->uv);
}

void FdWatch::close(std::function<void()> closed)
{
	if (handle_ == nullptr)
		return;
	handle_->on_closed = std::move(closed);
	close_handle(handle_);
	handle_ = nullptr;
}

struct Wakeup::Handle {
	uv_async_t uv;
	std::function<void()> woken;
	static void fired(uv_async_t *async) { static_cast<Handle *>(async->data)->woken(); }
	static void closed(uv_handle_t *uv) { delete static_cast<Handle *>(uv->data); }
};

Wakeup::Wakeup(EventLoop &loop, std::function<void()> woken) : handle_(new Handle)
{
	handle_->woken = std::move(woken);
	handle_->uv.data = handle_;
	uv_async_init(loop.uv(), &handle_->uv, uv_callback<Handle::fired>);
}

Wakeup::~Wakeup()
{
	close();
}

void Wakeup::send() noexcept
{
	if (handle_ != nullptr)
		uv_async_send(&handle_->uv);
}

void Wakeup::close()
{
	if (handle_ == nullptr)
		return;
	close_handle(handle_);
	handle_ = nullptr;
}

} // namespace local_cache::resp
