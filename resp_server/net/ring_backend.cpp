/*
 * ring_backend.cpp — the io_uring backend of the transport (backends.h): streams whose receives
 * and sends go through the worker's ring, and the completions that come back for them.
 */
#include "resp_server/net/backends.h"

#include "resp_server/net/callback.h"
#include "resp_server/protocol/buffers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace local_cache::resp {

namespace {

/* What a completion is for: the low bits of its user_data (the stream's address, aligned, has
 * them free). RingBackend::kLoopPoll is the third. */
enum RingTag : uint64_t { kReceive = 1, kSend = 2 };
constexpr uint64_t kTagBits = 3;

std::string address_text(const sockaddr_storage &address)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (address.ss_family == AF_INET) {
		const sockaddr_in *in = reinterpret_cast<const sockaddr_in *>(&address);
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (address.ss_family == AF_INET6) {
		const sockaddr_in6 *in = reinterpret_cast<const sockaddr_in6 *>(&address);
		inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof(host));
		port = ntohs(in->sin6_port);
	}
	return std::string(host) + ":" + std::to_string(port);
}

} // namespace

PeerIdentity identify(int fd)
{
	PeerIdentity identity;
	identity.fd = fd;
	sockaddr_storage address;
	socklen_t length = sizeof(address);
	if (getpeername(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0)
		identity.peer_address = address_text(address);
	length = sizeof(address);
	if (getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0)
		identity.local_address = address_text(address);
	return identity;
}

bool StreamEvents::input_arrived(const char *data, size_t length)
{
	while (length > 0) {
		ByteRange room = input_room();
		if (room.size == 0)
			return false;
		size_t taken = length < room.size ? length : room.size;
		memcpy(room.data, data, taken);
		input_added(taken);
		data += taken;
		length -= taken;
	}
	return true;
}

class RingStream final : public Stream {
public:
	RingStream(RingBackend &backend, StreamEvents &events, PeerIdentity identity)
		: Stream(events), backend_(backend), identity_(std::move(identity))
	{
	}

	void start_reading() override
	{
		if (!receiving_ && !closing_)
			arm_receive();
	}
	/* The receive stays armed: what still arrives, the owner leaves unread. */
	void stop_reading() override {}

	SendResult send(ReplyBuffer &out) override
	{
		if (out.empty())
			return SendResult{SendResult::Sent};
		writing_.swap(out);
		written_ = 0;
		queue_send();
		return SendResult{SendResult::Pending};
	}
	bool sending() const override { return sending_; }
	size_t unsent() const override { return writing_.size(); }
	size_t buffer_capacity() const override { return writing_.capacity(); }
	const PeerIdentity &identity() const override { return identity_; }

	/* Ends its receive and any send in flight; the descriptor stays open (and its number unused
	 * by a new connection) until they have completed. */
	void close() override
	{
		if (closing_)
			return;
		closing_ = true;
		shutdown(identity_.fd, SHUT_RDWR);
		backend_.closed(this);
	}

	void completed(const IoRing::Completion &done)
	{
		if ((done.user_data & kTagBits) == kReceive)
			received(done);
		else
			sent(done.result);
	}

	/* reap(): the descriptor goes, then the stream (released() may delete it). */
	bool idle() const { return requests_ == 0; }
	void release() noexcept
	{
		::close(identity_.fd);
		events_->released();
	}

	RingStream *next_closed_ = nullptr;

private:
	uint64_t tag(RingTag kind) { return reinterpret_cast<uint64_t>(this) | kind; }

	void arm_receive()
	{
		backend_.ring().receive(identity_.fd, tag(kReceive));
		requests_++;
		receiving_ = true;
	}

	void queue_send()
	{
		backend_.ring().send(identity_.fd, writing_.data() + written_, writing_.size() - written_, tag(kSend));
		requests_++;
		sending_ = true;
	}

	/*
	 * A receive completed: bytes in a pool buffer (given back at once), end of file, an error, or
	 * -ENOBUFS when the pool was dry (the receive is armed again: its buffers have just come
	 * back). A closed stream's receive ends with end of file (close() shuts the socket down).
	 */
	void received(const IoRing::Completion &done)
	{
		IoRing &ring = backend_.ring();
		if (!IoRing::more_follow(done)) {
			receiving_ = false;
			requests_--;
		}
		if (IoRing::has_buffer(done)) {
			bool taken;
			try {
				taken = closing_ || events_->input_arrived(ring.buffer_of(done), size_t(done.result));
			} catch (...) {
				ring.recycle(done);
				throw;
			}
			ring.recycle(done);
			if (closing_)
				return;
			if (!taken) {
				events_->ended(Ending::NoRoom, nullptr);
				return;
			}
			events_->readable();
		} else if (closing_) {
			return;
		} else if (done.result != -ENOBUFS) {
			events_->ended(Ending::Closed, nullptr);
			return;
		}
		if (!closing_ && !receiving_)
			arm_receive();
	}

	/* A send completed with what the socket took, or failed. */
	void sent(int32_t result)
	{
		requests_--;
		if (closing_)
			return;
		if (result < 0) {
			events_->ended(Ending::Closed, nullptr);
			return;
		}
		written_ += size_t(result);
		if (written_ < writing_.size()) {
			queue_send();
			return;
		}
		sending_ = false;
		writing_.clear();
		if (writing_.capacity() > kKeptBufferBytes)
			writing_.release();
		events_->writable();
	}

	RingBackend &backend_;
	PeerIdentity identity_;
	/* Requests in the ring whose last completion has not come (its receive, its send); their
	 * completions name the stream, so it is released only at 0. */
	unsigned requests_ = 0;
	bool receiving_ = false; /* its receive is armed */
	bool sending_ = false;
	bool closing_ = false;
	ReplyBuffer writing_; /* the write in flight; kept until its last completion */
	size_t written_ = 0;  /* bytes of writing_ the socket has taken */
};

std::unique_ptr<Stream> RingBackend::open_stream(StreamEvents &events, PeerIdentity identity)
{
	return std::make_unique<RingStream>(*this, events, std::move(identity));
}

void RingBackend::complete(const IoRing::Completion &done)
{
	RingStream *stream = reinterpret_cast<RingStream *>(done.user_data & ~kTagBits);
	guarded([&] { stream->completed(done); }, [&](const char *what) noexcept { stream->fail(what); });
}

void RingBackend::closed(RingStream *stream)
{
	stream->next_closed_ = closed_;
	closed_ = stream;
}

void RingBackend::reap()
{
	for (RingStream **link = &closed_; *link != nullptr;) {
		RingStream *stream = *link;
		if (!stream->idle()) {
			link = &stream->next_closed_;
			continue;
		}
		*link = stream->next_closed_;
		stream->release();
	}
}

} // namespace local_cache::resp
