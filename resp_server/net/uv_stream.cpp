/*
 * uv_stream.cpp — the libuv backend of the transport (backends.h): a connection as a libuv TCP
 * handle. Reads go straight into the owner's input room. A write is tried at once: the replies of
 * a read nearly always fit the socket buffer, and a uv_write that completes at once still costs
 * an epoll_ctl per reply (libuv re-arms the watcher when it reports the completion); only what
 * the socket does not take now goes to uv_write.
 */
#include "resp_server/net/backends.h"

#include "resp_server/net/callback.h"
#include "resp_server/protocol/buffers.h"

#include <uv.h>

#include <unistd.h>

namespace local_cache::resp {

namespace {

class UvStream final : public Stream {
public:
	UvStream(StreamEvents &events, PeerIdentity identity) : Stream(events), identity_(std::move(identity))
	{
		handle_.data = static_cast<Stream *>(this);
		write_request_.data = static_cast<Stream *>(this);
	}

	/* False: libuv did not take the descriptor, which is closed; the stream frees itself once
	 * its handle has closed. */
	bool open(uv_loop_t *loop)
	{
		uv_tcp_init(loop, &handle_);
		if (uv_tcp_open(&handle_, identity_.fd) == 0)
			return true;
		::close(identity_.fd); /* the handle did not take it */
		orphan_ = true;
		close();
		return false;
	}

	void start_reading() override
	{
		uv_read_start(as_stream(), uv_callback<on_alloc>, connection_callback<on_read>);
	}
	void stop_reading() override { uv_read_stop(as_stream()); }

	SendResult send(ReplyBuffer &out) override
	{
		if (out.empty())
			return SendResult{SendResult::Sent};
		uv_buf_t buffer = uv_buf_init(const_cast<char *>(out.data()), unsigned(out.size()));
		int written = uv_try_write(as_stream(), &buffer, 1);
		if (written < 0 && written != UV_EAGAIN)
			return SendResult{SendResult::Failed};
		size_t done = written > 0 ? size_t(written) : 0;
		if (done < out.size()) {
			writing_.swap(out);
			buffer = uv_buf_init(const_cast<char *>(writing_.data()) + done, unsigned(writing_.size() - done));
			if (uv_write(&write_request_, as_stream(), &buffer, 1, connection_callback<on_written>) < 0)
				return SendResult{SendResult::Failed};
			sending_ = true;
			return SendResult{SendResult::Pending};
		}
		out.clear();
		if (out.capacity() > kKeptBufferBytes)
			out.release();
		return SendResult{SendResult::Sent};
	}
	bool sending() const override { return sending_; }
	size_t unsent() const override { return writing_.size(); }
	size_t buffer_capacity() const override { return writing_.capacity(); }
	const PeerIdentity &identity() const override { return identity_; }

	void close() override
	{
		if (closing_)
			return;
		closing_ = true;
		uv_close(reinterpret_cast<uv_handle_t *>(&handle_), uv_callback<on_closed>);
	}

private:
	uv_stream_t *as_stream() { return reinterpret_cast<uv_stream_t *>(&handle_); }
	static UvStream *of(void *data) { return static_cast<UvStream *>(static_cast<Stream *>(data)); }

	/*
	 * libuv calls on_read right after this, with UV_ENOBUFS when the buffer is empty, through the
	 * read callback it keeps in the handle: ending the stream here (its owner would close it,
	 * which stops its reading and clears that callback) would make libuv call a null pointer. So
	 * no room, or a failure here (its guard does not end the stream), only leaves the buffer
	 * empty, and on_read ends the stream.
	 */
	static void on_alloc(uv_handle_t *handle, size_t, uv_buf_t *buffer)
	{
		UvStream *s = of(handle->data);
		*buffer = uv_buf_init(nullptr, 0);
		ByteRange room = s->events_->input_room();
		if (room.size == 0)
			s->room_refused_ = true;
		else
			*buffer = uv_buf_init(room.data, unsigned(room.size));
	}

	static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *)
	{
		UvStream *s = of(stream->data);
		if (nread < 0) {
			s->events_->ended(s->room_refused_ ? Ending::NoRoom : Ending::Closed, nullptr);
			return;
		}
		if (nread == 0)
			return;
		s->events_->input_added(size_t(nread));
		s->events_->readable();
	}

	static void on_written(uv_write_t *request, int status)
	{
		UvStream *s = of(request->data);
		s->sending_ = false;
		s->writing_.clear();
		if (s->writing_.capacity() > kKeptBufferBytes)
			s->writing_.release();
		if (s->closing_)
			return;
		if (status < 0) {
			s->events_->ended(Ending::Closed, nullptr);
			return;
		}
		s->events_->writable();
	}

	/* The last callback: the stream goes (its owner deletes it). */
	static void on_closed(uv_handle_t *handle)
	{
		UvStream *s = of(handle->data);
		if (s->orphan_)
			delete s;
		else
			s->events_->released();
	}

	uv_tcp_t handle_;
	uv_write_t write_request_;
	PeerIdentity identity_;
	ReplyBuffer writing_; /* what uv_write writes; kept until it completes */
	bool sending_ = false;
	bool closing_ = false;
	bool room_refused_ = false; /* on_alloc had no room for a read: on_read ends the stream */
	bool orphan_ = false;       /* never handed out: frees itself when its handle closes */
};

} // namespace

std::unique_ptr<Stream> open_uv_stream(uv_loop_s *loop, StreamEvents &events, PeerIdentity identity)
{
	auto stream = std::make_unique<UvStream>(events, std::move(identity));
	if (!stream->open(loop)) {
		stream.release(); /* deleted in its close callback */
		return nullptr;
	}
	return stream;
}

} // namespace local_cache::resp
