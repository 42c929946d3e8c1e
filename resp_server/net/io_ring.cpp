/*
 * io_ring.cpp — setting up and driving a worker's io_uring (io_ring.h) through liburing: the
 * ring, its requests, the provided-buffer ring of receive buffers.
 */
#include "resp_server/net/io_ring.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace local_cache::resp {

namespace {

constexpr int kBufferGroup = 0;

void *map_anonymous(size_t size)
{
	void *address = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return address == MAP_FAILED ? nullptr : address;
}

} // namespace

IoRing::~IoRing()
{
	/* Closing the ring cancels what is still in flight. */
	if (open_)
		io_uring_queue_exit(&ring_);
	if (buffer_ring_ != nullptr)
		munmap(buffer_ring_, buffer_ring_size_);
	if (buffers_ != nullptr)
		munmap(buffers_, buffers_size_);
}

int IoRing::open(unsigned entries, unsigned buffer_count, unsigned buffer_size)
{
	if (buffer_count == 0 || (buffer_count & (buffer_count - 1)) != 0 || buffer_count > 32768)
		return EINVAL;
	io_uring_params params;
	memset(&params, 0, sizeof(params));
	/* Completions are delivered when this thread waits, not by interrupting it: the kernel's
	 * default delivery made each request much dearer under a paravirtualised guest. */
	params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
	params.cq_entries = entries * 4;
	int rc = io_uring_queue_init_params(entries, &ring_, &params);
	if (rc < 0)
		return -rc;
	open_ = true;
	/* NODROP: a full completion queue keeps what overflows; EXT_ARG: waits with a timeout need
	 * no timeout request. */
	const unsigned needed = IORING_FEAT_NODROP | IORING_FEAT_EXT_ARG;
	if ((params.features & needed) != needed)
		return ENOSYS;
	cq_entries_ = params.cq_entries;

	/* The buffer ring must be page-aligned: a mapping of its own. */
	buffer_ring_size_ = buffer_count * sizeof(io_uring_buf);
	buffer_ring_ = static_cast<io_uring_buf_ring *>(map_anonymous(buffer_ring_size_));
	buffers_size_ = size_t(buffer_count) * buffer_size;
	buffers_ = static_cast<char *>(map_anonymous(buffers_size_));
	if (buffer_ring_ == nullptr || buffers_ == nullptr)
		return errno;
	io_uring_buf_ring_init(buffer_ring_);
	io_uring_buf_reg registration;
	memset(&registration, 0, sizeof(registration));
	registration.ring_addr = reinterpret_cast<uint64_t>(buffer_ring_);
	registration.ring_entries = buffer_count;
	registration.bgid = kBufferGroup;
	rc = io_uring_register_buf_ring(&ring_, &registration, 0);
	if (rc < 0)
		return -rc;
	buffer_count_ = buffer_count;
	buffer_size_ = buffer_size;
	for (unsigned id = 0; id < buffer_count; id++)
		add_buffer(id, int(id));
	io_uring_buf_ring_advance(buffer_ring_, int(buffer_count));
	return 0;
}

io_uring_sqe *IoRing::next_request()
{
	io_uring_sqe *request = io_uring_get_sqe(&ring_);
	if (request == nullptr) {
		submit();
		request = io_uring_get_sqe(&ring_);
		if (request == nullptr)
			throw std::runtime_error("io_uring submission queue full");
	}
	return request;
}

void IoRing::receive(int fd, uint64_t user_data)
{
	io_uring_sqe *request = next_request();
	io_uring_prep_recv_multishot(request, fd, nullptr, 0, 0);
	io_uring_sqe_set_flags(request, IOSQE_BUFFER_SELECT);
	request->buf_group = kBufferGroup;
	io_uring_sqe_set_data64(request, user_data);
}

void IoRing::send(int fd, const void *data, size_t length, uint64_t user_data)
{
	io_uring_sqe *request = next_request();
	io_uring_prep_send(request, fd, data, length, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(request, user_data);
}

void IoRing::poll_readable(int fd, uint64_t user_data)
{
	io_uring_sqe *request = next_request();
	io_uring_prep_poll_add(request, fd, POLLIN);
	io_uring_sqe_set_data64(request, user_data);
}

int IoRing::submit()
{
	int rc = io_uring_submit(&ring_);
	return rc < 0 ? rc : 0;
}

int IoRing::submit_and_wait(int timeout_ms)
{
	if (timeout_ms < 0) {
		int rc = io_uring_submit_and_wait(&ring_, 1);
		return rc < 0 ? rc : 0;
	}
	return wait(1, int64_t(timeout_ms) * 1000000);
}

int IoRing::submit_and_pause(int64_t timeout_us)
{
	/* No more completions than the queue holds can be waited for. */
	return wait(cq_entries_, timeout_us * 1000);
}

int IoRing::wait(unsigned completions, int64_t timeout_ns)
{
	__kernel_timespec timeout;
	timeout.tv_sec = timeout_ns / 1000000000;
	timeout.tv_nsec = timeout_ns % 1000000000;
	io_uring_cqe *first = nullptr;
	/* One io_uring_enter at most: it submits the queue and waits (not at all when nothing is to
	 * be submitted and enough completions are ready). */
	int rc = io_uring_submit_and_wait_timeout(&ring_, &first, completions, &timeout, nullptr);
	return rc < 0 ? rc : 0;
}

const char *IoRing::buffer_of(const Completion &c) const
{
	return buffers_ + size_t(c.flags >> IORING_CQE_BUFFER_SHIFT) * buffer_size_;
}

void IoRing::recycle(const Completion &c)
{
	add_buffer(c.flags >> IORING_CQE_BUFFER_SHIFT, 0);
	io_uring_buf_ring_advance(buffer_ring_, 1);
}

void IoRing::add_buffer(unsigned id, int offset)
{
	io_uring_buf_ring_add(buffer_ring_, buffers_ + size_t(id) * buffer_size_, buffer_size_, uint16_t(id),
						  io_uring_buf_ring_mask(buffer_count_), offset);
}

} // namespace local_cache::resp
