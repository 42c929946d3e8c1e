/*
 * tls_stream.cpp — TLS layered over either backend (backends.h): the bytes read go through the
 * session into the owner's input, the owner's replies through it into records (tls_session.h).
 * Whether the bytes came by io_uring or libuv, the rest is the same.
 */
#include "resp_server/net/backends.h"

#include "resp_server/protocol/buffers.h"

#include <sys/socket.h>

namespace local_cache::resp {

namespace {

/* One read of TLS records (a record carries up to 16 kB of plaintext). */
constexpr size_t kRecordsChunk = 64 * 1024;

} // namespace

TlsStream::TlsStream(const TlsContext &context, StreamEvents &owner, std::vector<char> &records)
	: Stream(owner), session_(context), records_(records)
{
}

ByteRange TlsStream::input_room()
{
	if (records_.size() < kRecordsChunk)
		records_.resize(kRecordsChunk);
	return ByteRange{records_.data(), records_.size()};
}

void TlsStream::input_added(size_t length)
{
	session_.receive(records_.data(), length);
}

bool TlsStream::input_arrived(const char *data, size_t length)
{
	session_.receive(data, length);
	return true;
}

/* The records of a read are in the session: their plaintext goes into the owner's input; the
 * handshake's answers go out with the owner's next send. */
void TlsStream::readable()
{
	bool was_established = session_.handshake_done();
	TlsSession::Status status = TlsSession::Status::Ok;
	for (size_t produced = 1; status == TlsSession::Status::Ok && produced > 0;) {
		ByteRange room = events_->input_room();
		if (room.size == 0) {
			events_->ended(Ending::NoRoom, nullptr);
			return;
		}
		status = session_.read_plaintext(room.data, room.size, &produced);
		if (produced > 0)
			events_->input_added(produced);
	}
	if (status == TlsSession::Status::Failed) {
		/* An alert, if the session made one, is the only answer: written now if the socket takes
		 * it, never behind a write in flight. */
		session_.take_output(sealed_);
		if (!sealed_.empty() && !below_->sending())
			(void) ::send(identity().fd, sealed_.data(), sealed_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
		events_->ended(was_established ? Ending::Failed : Ending::HandshakeFailed, session_.error().c_str());
		return;
	}
	if (status == TlsSession::Status::Closed) {
		events_->ended(Ending::Closed, nullptr);
		return;
	}
	if (!was_established && session_.handshake_done())
		events_->established();
	events_->readable();
}

SendResult TlsStream::send(ReplyBuffer &out)
{
	if (!out.empty()) {
		if (session_.send(out.data(), out.size()) != TlsSession::Status::Ok)
			return SendResult{SendResult::Failed, session_.error().c_str()};
		out.clear();
		if (out.capacity() > kKeptBufferBytes)
			out.release();
	}
	session_.take_output(sealed_);
	if (sealed_.empty())
		return SendResult{SendResult::Sent};
	return below_->send(sealed_);
}

} // namespace local_cache::resp
