/*
 * transport.h — the transport's one interface: a Stream is one accepted connection's bytes, in
 * and out, whatever carries them; its owner (a client, clients/) hears of it through
 * StreamEvents. Redis keeps sockets and TLS behind one ConnectionType table (connection.h); this
 * is the same seam as two small classes:
 *
 *   accept          Listeners (listener.h) hand over accepted sockets; EventLoop::open_stream
 *                   makes a Stream of one, through the loop's backend, TLS layered on top
 *   read-ready      input_room / input_added (or input_arrived), then readable()
 *   write           send(): one write of the replies at a time; writable() when it is done
 *   close           close(), then released() once nothing names the stream any more
 *   peer identity   identity(): descriptor and addresses; tls(): the TLS session, if any
 *
 * Two backends carry the bytes (event_loop.h chooses one per worker): the worker's io_uring
 * (ring_backend.cpp: a multishot receive per connection into the ring's buffer pool, sends
 * submitted with the loop turn's wait) and libuv's streams (uv_stream.cpp: reads into the
 * owner's buffer, a write tried at once and handed to uv_write only for what the socket did not
 * take). TLS (tls_stream.cpp) is a Stream over either that is also the events of the one below.
 * Everything runs on the loop's one thread. No PostgreSQL header: tests/transport_test.cpp runs
 * every backend, with and without TLS, over socket pairs.
 */
#pragma once

#include "resp_server/protocol/reply.h"

#include <cstddef>
#include <string>

namespace local_cache::resp {

class TlsSession;

/* Room for bytes read: `size` bytes at `data` (size 0: none). */
struct ByteRange {
	char *data = nullptr;
	size_t size = 0;
};

/* Why a stream ended on its own (its owner then closes it). */
enum class Ending {
	Closed,          /* the peer closed it (or TLS close_notify), or the socket failed: no log line */
	NoRoom,          /* the owner gave no room for bytes that arrived */
	Failed,          /* a TLS record or a C++ exception in a callback: `reason` says which */
	HandshakeFailed, /* the TLS handshake failed: `reason` is OpenSSL's */
};

/* What a stream tells its owner. Calls come from the loop, never from inside the owner's own
 * call of the stream. */
class StreamEvents {
public:
	virtual ~StreamEvents() = default;

	/* Room for the next read, at the end of the owner's input. Size 0: no room; the stream
	 * then ends with Ending::NoRoom (after this call returns: it may not close the stream). */
	virtual ByteRange input_room() = 0;
	/* A read put `length` bytes at the start of the room input_room() gave last. */
	virtual void input_added(size_t length) = 0;
	/* A read whose bytes sit in the transport's own buffer (the ring's pool), valid during the
	 * call. By default copied into input_room(); false: no room. */
	virtual bool input_arrived(const char *data, size_t length);
	/* A read is complete: run what the input holds. It may have added nothing (TLS records
	 * without application data). */
	virtual void readable() = 0;
	/* The TLS handshake completed (before the readable() of the read that completed it). */
	virtual void established() {}
	/* The write in flight is done: send what waits. */
	virtual void writable() = 0;
	/* The stream ended without close(): the owner closes it. */
	virtual void ended(Ending how, const char *reason) noexcept = 0;
	/* After close(): nothing will name the stream again; the owner may delete it (and itself).
	 * The last call. */
	virtual void released() noexcept = 0;
};

/* Who is at the other end. */
struct PeerIdentity {
	int fd = -1;
	std::string peer_address;  /* "host:port" */
	std::string local_address; /* "host:port" */
};

/* What send() did. */
struct SendResult {
	enum Status { Sent, Pending, Failed };
	Status status;
	/* Failed: why, for the log line (valid until the stream is released); nullptr: the socket
	 * failed, which is closed without one. */
	const char *reason = nullptr;
};

class Stream {
public:
	explicit Stream(StreamEvents &events) : events_(&events) {}
	virtual ~Stream() = default;
	Stream(const Stream &) = delete;
	Stream &operator=(const Stream &) = delete;

	/* Reads from now on (once the owner has decided to keep the connection). */
	virtual void start_reading() = 0;
	/* No more reads wanted (the connection closes after its reply). */
	virtual void stop_reading() = 0;
	/*
	 * Writes `out` and leaves it empty (its capacity may be the buffer of the write before:
	 * buffers swap, nothing is copied). Not while sending(). Sent: the socket took it all now;
	 * Pending: writable() follows; Failed: the owner closes the stream.
	 */
	virtual SendResult send(ReplyBuffer &out) = 0;
	/* A write is in flight. */
	virtual bool sending() const = 0;
	/* Bytes given to send() that the socket has not taken yet. */
	virtual size_t unsent() const = 0;
	/* Buffer memory the stream holds (for the owner's memory accounting). */
	virtual size_t buffer_capacity() const = 0;
	/* Ends the stream: no event but released() follows, and that one only after this call. */
	virtual void close() = 0;
	virtual const PeerIdentity &identity() const = 0;
	/* The TLS session of a TLS stream; nullptr: plaintext. */
	virtual const TlsSession *tls() const { return nullptr; }

	/* A C++ exception in one of this stream's callbacks (callback.h): its owner hears
	 * Ending::Failed with the message. */
	void fail(const char *what) noexcept { events_->ended(Ending::Failed, what); }

protected:
	StreamEvents *events_;
};

} // namespace local_cache::resp
