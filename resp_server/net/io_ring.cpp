/*
 * io_ring.cpp — setting up and driving a worker's io_uring (io_ring.h): the shared rings, the
 * submission queue, the provided-buffer ring of receive buffers.
 */
#include "resp_server/net/io_ring.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace local_cache::resp {

namespace {

/* The ring's tail shares the first buffer entry's last 16 bits (struct io_uring_buf_ring). */
uint16_t *buffer_ring_tail(io_uring_buf *ring)
{
	return &ring[0].resv;
}

int sys_setup(unsigned entries, io_uring_params *params)
{
	return int(syscall(__NR_io_uring_setup, entries, params));
}

int sys_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags, const void *arg, size_t size)
{
	return int(syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, arg, size));
}

void *map(size_t size, int fd, off_t offset)
{
	int flags = fd >= 0 ? MAP_SHARED | MAP_POPULATE : MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE;
	void *address = mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, fd, offset);
	return address == MAP_FAILED ? nullptr : address;
}

} // namespace

IoRing::~IoRing()
{
	/* Closing the ring cancels what is still in flight. */
	if (fd_ >= 0)
		close(fd_);
	if (rings_ != nullptr)
		munmap(rings_, rings_size_);
	if (requests_ != nullptr)
		munmap(requests_, requests_size_);
	if (buffer_ring_ != nullptr)
		munmap(buffer_ring_, buffer_ring_size_);
	if (buffers_ != nullptr)
		munmap(buffers_, buffers_size_);
}

int IoRing::open(unsigned entries, unsigned buffer_count, unsigned buffer_size)
{
	io_uring_params params;
	memset(&params, 0, sizeof(params));
	/* Completions are delivered when this thread waits, not by interrupting it: the kernel's
	 * default delivery made each request much dearer under a paravirtualised guest. */
	params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
	params.cq_entries = entries * 4;
	fd_ = sys_setup(entries, &params);
	if (fd_ < 0)
		return errno;
	const unsigned needed = IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP | IORING_FEAT_EXT_ARG;
	if ((params.features & needed) != needed)
		return ENOSYS;

	size_t sq_size = params.sq_off.array + params.sq_entries * sizeof(unsigned);
	size_t cq_size = params.cq_off.cqes + params.cq_entries * sizeof(io_uring_cqe);
	rings_size_ = sq_size > cq_size ? sq_size : cq_size;
	rings_ = map(rings_size_, fd_, IORING_OFF_SQ_RING);
	requests_size_ = params.sq_entries * sizeof(io_uring_sqe);
	requests_ = static_cast<io_uring_sqe *>(map(requests_size_, fd_, IORING_OFF_SQES));
	if (rings_ == nullptr || requests_ == nullptr)
		return errno;
	char *rings = static_cast<char *>(rings_);
	sq_head_ = reinterpret_cast<unsigned *>(rings + params.sq_off.head);
	sq_tail_ = reinterpret_cast<unsigned *>(rings + params.sq_off.tail);
	sq_mask_ = *reinterpret_cast<unsigned *>(rings + params.sq_off.ring_mask);
	sq_entries_ = params.sq_entries;
	sq_local_tail_ = *sq_tail_;
	/* Queue slot i always names request i. */
	unsigned *array = reinterpret_cast<unsigned *>(rings + params.sq_off.array);
	for (unsigned i = 0; i < sq_entries_; i++)
		array[i] = i;
	cq_head_ = reinterpret_cast<unsigned *>(rings + params.cq_off.head);
	cq_tail_ = reinterpret_cast<unsigned *>(rings + params.cq_off.tail);
	cq_mask_ = *reinterpret_cast<unsigned *>(rings + params.cq_off.ring_mask);
	cq_entries_ = params.cq_entries;
	cqes_ = reinterpret_cast<io_uring_cqe *>(rings + params.cq_off.cqes);

	if (buffer_count == 0 || (buffer_count & (buffer_count - 1)) != 0 || buffer_count > 32768)
		return EINVAL;
	buffer_ring_size_ = buffer_count * sizeof(io_uring_buf);
	buffer_ring_ = static_cast<io_uring_buf *>(map(buffer_ring_size_, -1, 0));
	buffers_size_ = size_t(buffer_count) * buffer_size;
	buffers_ = static_cast<char *>(map(buffers_size_, -1, 0));
	if (buffer_ring_ == nullptr || buffers_ == nullptr)
		return errno;
	io_uring_buf_reg registration;
	memset(&registration, 0, sizeof(registration));
	registration.ring_addr = reinterpret_cast<uint64_t>(buffer_ring_);
	registration.ring_entries = buffer_count;
	registration.bgid = 0;
	if (syscall(__NR_io_uring_register, fd_, IORING_REGISTER_PBUF_RING, &registration, 1) != 0)
		return errno;
	buffer_mask_ = buffer_count - 1;
	buffer_size_ = buffer_size;
	for (unsigned id = 0; id < buffer_count; id++)
		give_buffer(id);
	__atomic_store_n(buffer_ring_tail(buffer_ring_), buffer_tail_, __ATOMIC_RELEASE);
	return 0;
}

io_uring_sqe *IoRing::next_request(uint8_t opcode, int fd, uint64_t user_data)
{
	if (sq_local_tail_ - __atomic_load_n(sq_head_, __ATOMIC_ACQUIRE) == sq_entries_) {
		submit();
		if (sq_local_tail_ - __atomic_load_n(sq_head_, __ATOMIC_ACQUIRE) == sq_entries_)
			throw std::runtime_error("io_uring submission queue full");
	}
	io_uring_sqe *request = &requests_[sq_local_tail_ & sq_mask_];
	sq_local_tail_++;
	memset(request, 0, sizeof(*request));
	request->opcode = opcode;
	request->fd = fd;
	request->user_data = user_data;
	return request;
}

void IoRing::receive(int fd, uint64_t user_data)
{
	io_uring_sqe *request = next_request(IORING_OP_RECV, fd, user_data);
	request->ioprio = IORING_RECV_MULTISHOT;
	request->flags = IOSQE_BUFFER_SELECT;
	request->buf_group = 0;
}

void IoRing::send(int fd, const void *data, size_t length, uint64_t user_data)
{
	io_uring_sqe *request = next_request(IORING_OP_SEND, fd, user_data);
	request->addr = reinterpret_cast<uint64_t>(data);
	request->len = unsigned(length);
	request->msg_flags = MSG_NOSIGNAL;
}

void IoRing::poll_readable(int fd, uint64_t user_data)
{
	next_request(IORING_OP_POLL_ADD, fd, user_data)->poll32_events = POLLIN;
}

unsigned IoRing::publish()
{
	__atomic_store_n(sq_tail_, sq_local_tail_, __ATOMIC_RELEASE);
	return sq_local_tail_ - __atomic_load_n(sq_head_, __ATOMIC_ACQUIRE);
}

int IoRing::submit()
{
	unsigned queued = publish();
	if (queued == 0)
		return 0;
	return sys_enter(fd_, queued, 0, 0, nullptr, 0) < 0 ? -errno : 0;
}

int IoRing::submit_and_wait(int timeout_ms)
{
	return enter_and_wait(1, timeout_ms < 0 ? -1 : int64_t(timeout_ms) * 1000000);
}

int IoRing::submit_and_pause(int64_t timeout_us)
{
	/* No more completions than the queue holds can be waited for. */
	return enter_and_wait(cq_entries_, timeout_us * 1000);
}

int IoRing::enter_and_wait(unsigned completions, int64_t timeout_ns)
{
	unsigned queued = publish();
	__kernel_timespec timeout;
	io_uring_getevents_arg arg;
	memset(&arg, 0, sizeof(arg));
	if (timeout_ns >= 0) {
		timeout.tv_sec = timeout_ns / 1000000000;
		timeout.tv_nsec = timeout_ns % 1000000000;
		arg.ts = reinterpret_cast<uint64_t>(&timeout);
	}
	int rc = sys_enter(fd_, queued, completions, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg));
	return rc < 0 ? -errno : 0;
}

const char *IoRing::buffer_of(const Completion &c) const
{
	return buffers_ + size_t(c.flags >> IORING_CQE_BUFFER_SHIFT) * buffer_size_;
}

void IoRing::recycle(const Completion &c)
{
	give_buffer(c.flags >> IORING_CQE_BUFFER_SHIFT);
	__atomic_store_n(buffer_ring_tail(buffer_ring_), buffer_tail_, __ATOMIC_RELEASE);
}

void IoRing::give_buffer(unsigned id)
{
	/* Entry 0's resv is the ring's tail: written through its own pointer only. */
	io_uring_buf &entry = buffer_ring_[buffer_tail_ & buffer_mask_];
	entry.addr = reinterpret_cast<uint64_t>(buffers_ + size_t(id) * buffer_size_);
	entry.len = buffer_size_;
	entry.bid = uint16_t(id);
	buffer_tail_++;
}

} // namespace local_cache::resp
