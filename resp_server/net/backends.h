/*
 * backends.h — the transport's backends as the event loop builds them (event_loop.cpp): the
 * io_uring streams (ring_backend.cpp), libuv's streams (uv_stream.cpp), and the TLS layer over
 * either (tls_stream.cpp). Only net/ includes it; above net/ a stream is a Stream.
 */
#pragma once

#include "resp_server/net/io_ring.h"
#include "resp_server/net/transport.h"
#include "resp_server/net/tls_session.h"

#include <cstdint>
#include <memory>
#include <vector>

struct uv_loop_s;

namespace local_cache::resp {

/* The descriptor's addresses (getpeername, getsockname). */
PeerIdentity identify(int fd);

/* Size of one read: a ring pool buffer, and the room a client's input keeps for the next read. */
constexpr size_t kReadChunk = 16 * 1024;

class RingStream;

/*
 * The io_uring backend: a worker's ring, and its streams. Each stream has one multishot
 * receive armed for its whole life, taking a buffer from the ring's pool (kRingBuffers of
 * kReadChunk, lent only between a completion and its copy into the owner's input) when data
 * arrives, and at most one send in flight (a short send continues from where the socket stopped;
 * the buffer lives until its completion). A completion's user_data is the stream's address with
 * the request's kind in its low bits. Closing a stream shuts its socket down, which ends its
 * receive and any send; the descriptor is closed and the stream released only after their last
 * completions (reap()), so no request queued for it can reach a socket that reused its number.
 */
class RingBackend {
public:
	/* Room for a turn's requests (a receive per connection stays armed and takes no slot once
	 * submitted; a send per connection at most). */
	static constexpr unsigned kEntries = 1024;
	static constexpr unsigned kBuffers = 128;
	/* user_data of the loop's own poll of libuv's descriptor (no stream: an address is aligned). */
	static constexpr uint64_t kLoopPoll = 3;

	/* 0, or the errno with which the kernel refused. */
	int open() { return ring_.open(kEntries, kBuffers, unsigned(kReadChunk)); }
	IoRing &ring() { return ring_; }

	/* A stream over identity.fd. */
	std::unique_ptr<Stream> open_stream(StreamEvents &events, PeerIdentity identity);
	/* A completion that names a stream. */
	void complete(const IoRing::Completion &done);
	/* Between turns: releases the closed streams no completion will name again. */
	void reap();
	/* No closed stream waits for its completions. */
	bool drained() const { return closed_ == nullptr; }
	/* A stream closed: released at the first reap() after its last completion. */
	void closed(RingStream *stream);

private:
	IoRing ring_;
	RingStream *closed_ = nullptr; /* linked through RingStream::next_closed_ */
};

/* A libuv stream over identity.fd. Nullptr when libuv did not take it: the descriptor is
 * closed then. */
std::unique_ptr<Stream> open_uv_stream(uv_loop_s *loop, StreamEvents &events, PeerIdentity identity);

/*
 * TLS over the stream below it (OpenSSL memory BIOs, tls_session.h): it is the lower stream's
 * events (ciphertext in, handshake and alerts out) and a Stream to its owner (plaintext). The
 * records of one read land in the loop's shared buffer (`records`) or, from the ring, are fed
 * from the pool buffer; the plaintext goes straight into the owner's input rooms.
 */
class TlsStream final : public Stream, public StreamEvents {
public:
	TlsStream(const TlsContext &context, StreamEvents &owner, std::vector<char> &records);
	void attach(std::unique_ptr<Stream> below) { below_ = std::move(below); }

	/* Stream, to the owner */
	void start_reading() override { below_->start_reading(); }
	void stop_reading() override { below_->stop_reading(); }
	SendResult send(ReplyBuffer &out) override;
	bool sending() const override { return below_->sending(); }
	size_t unsent() const override { return sealed_.size() + below_->unsent(); }
	size_t buffer_capacity() const override { return sealed_.capacity() + below_->buffer_capacity(); }
	void close() override { below_->close(); }
	const PeerIdentity &identity() const override { return below_->identity(); }
	const TlsSession *tls() const override { return &session_; }

	/* StreamEvents, from the stream below */
	ByteRange input_room() override;
	void input_added(size_t length) override;
	bool input_arrived(const char *data, size_t length) override;
	void readable() override;
	void writable() override { events_->writable(); }
	void ended(Ending how, const char *reason) noexcept override { events_->ended(how, reason); }
	void released() noexcept override { events_->released(); }

private:
	TlsSession session_;
	std::unique_ptr<Stream> below_;
	std::vector<char> &records_;
	/* Records made of the owner's replies (and of the handshake) not yet handed below. */
	ReplyBuffer sealed_;
};

} // namespace local_cache::resp
