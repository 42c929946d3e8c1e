/*
 * write_job.cpp — the frames of a write worker's jobs and replies (write_job.h).
 */
#include "resp_server/commands/write_job.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace local_cache::resp {

namespace {

void put_number(uint64_t value, std::string &out)
{
	for (int i = 0; i < 8; i++)
		out.push_back(char((value >> (8 * i)) & 0xff));
}

void put_text(std::string_view text, std::string &out)
{
	put_number(text.size(), out);
	out.append(text);
}

/* A frame's header, its length written by end_frame once the payload is there. */
size_t begin_frame(std::string &out)
{
	size_t start = out.size();
	put_number(0, out);
	return start;
}

void end_frame(size_t start, std::string &out)
{
	uint64_t length = out.size() - start - kWriteFrameHeader;
	for (int i = 0; i < 8; i++)
		out[start + size_t(i)] = char((length >> (8 * i)) & 0xff);
}

/* Reads what put_number and put_text wrote; every read checks that the bytes are there. */
class Reader {
public:
	explicit Reader(std::string_view bytes) : bytes_(bytes) {}
	bool number(uint64_t *value)
	{
		if (bytes_.size() < 8)
			return false;
		*value = 0;
		for (int i = 0; i < 8; i++)
			*value |= uint64_t(static_cast<unsigned char>(bytes_[size_t(i)])) << (8 * i);
		bytes_.remove_prefix(8);
		return true;
	}
	bool text(std::string_view *value)
	{
		uint64_t length;
		if (!number(&length) || length > bytes_.size())
			return false;
		*value = bytes_.substr(0, size_t(length));
		bytes_.remove_prefix(size_t(length));
		return true;
	}
	/* A count of items that each take at least `min_bytes`: bounded by what is left. */
	bool count(uint64_t *value, size_t min_bytes)
	{
		return number(value) && *value <= bytes_.size() / min_bytes;
	}
	bool done() const { return bytes_.empty(); }

private:
	std::string_view bytes_;
};

} // namespace

void encode_write_job(const Request &request, const Session &session, std::string &out)
{
	size_t start = begin_frame(out);
	put_number(session.id, out);
	put_number(session.role ? session.role->id : 0, out);
	put_text(session.role ? session.role->name : std::string(), out);
	put_number(uint64_t(session.protocol), out);
	const TrackingMode &mode = session.tracking;
	put_number(uint64_t(mode.on) | uint64_t(mode.bcast) << 1 | uint64_t(mode.optin) << 2 | uint64_t(mode.optout) << 3 |
				   uint64_t(mode.caching_yes) << 4 | uint64_t(mode.caching_no) << 5,
			   out);
	put_number(request.argc, out);
	for (std::string_view argument : request)
		put_text(argument, out);
	const QueuedRequests &multi = session.multi;
	put_number(uint64_t(multi.active) | uint64_t(multi.refused) << 1, out);
	put_text(multi.bytes, out);
	put_number(multi.arg_ends.size(), out);
	for (size_t end : multi.arg_ends)
		put_number(end, out);
	put_number(multi.argcs.size(), out);
	for (size_t argc : multi.argcs)
		put_number(argc, out);
	put_number(session.watched.size(), out);
	for (const auto &[key, version] : session.watched) {
		put_text(key, out);
		put_text(version, out);
	}
	end_frame(start, out);
}

bool decode_write_job(std::string_view payload, WriteJob *job)
{
	Reader in(payload);
	Session &session = job->session;
	uint64_t role, protocol, tracking, argc, flags, count;
	std::string_view name, bytes;
	if (!in.number(&session.id) || !in.number(&role) || !in.text(&name) || !in.number(&protocol) ||
		(protocol != 2 && protocol != 3) || !in.number(&tracking) || tracking >= 64 || !in.count(&argc, 8) || argc == 0)
		return false;
	TrackingMode &mode = session.tracking;
	mode.on = tracking & 1;
	mode.bcast = tracking & 2;
	mode.optin = tracking & 4;
	mode.optout = tracking & 8;
	mode.caching_yes = tracking & 16;
	mode.caching_no = tracking & 32;
	if (role != 0)
		session.role = AuthenticatedRole{role, std::string(name)};
	session.protocol = int(protocol);
	job->argv.resize(size_t(argc));
	for (std::string_view &argument : job->argv)
		if (!in.text(&argument))
			return false;
	QueuedRequests &multi = session.multi;
	if (!in.number(&flags) || !in.text(&bytes))
		return false;
	multi.active = flags & 1;
	multi.refused = flags & 2;
	multi.bytes.assign(bytes);
	if (!in.count(&count, 8))
		return false;
	multi.arg_ends.resize(size_t(count));
	for (size_t &end : multi.arg_ends) {
		uint64_t value;
		if (!in.number(&value) || value > multi.bytes.size() || (&end != &multi.arg_ends[0] && value < (&end)[-1]))
			return false;
		end = size_t(value);
	}
	uint64_t arguments = 0;
	if (!in.count(&count, 8))
		return false;
	multi.argcs.resize(size_t(count));
	for (size_t &queued : multi.argcs) {
		uint64_t value;
		if (!in.number(&value) || value == 0 || value > multi.arg_ends.size() - arguments)
			return false;
		queued = size_t(value);
		arguments += value;
	}
	if (arguments != multi.arg_ends.size() || !in.count(&count, 16))
		return false;
	session.watched.resize(size_t(count));
	for (auto &[key, version] : session.watched) {
		std::string_view k, v;
		if (!in.text(&k) || !in.text(&v))
			return false;
		key.assign(k);
		version.assign(v);
	}
	return in.done();
}

void encode_write_reply(const WriteReply &reply, std::string &out)
{
	size_t start = begin_frame(out);
	put_number(uint64_t(reply.duration_us), out);
	put_text(reply.reply, out);
	for (const std::vector<std::string> *keys : {&reply.tracked_keys, &reply.uncaptured_keys}) {
		put_number(keys->size(), out);
		for (const std::string &key : *keys)
			put_text(key, out);
	}
	end_frame(start, out);
}

bool decode_write_reply(std::string_view payload, WriteReply *reply)
{
	Reader in(payload);
	uint64_t duration;
	if (!in.number(&duration) || !in.text(&reply->reply))
		return false;
	reply->duration_us = int64_t(duration);
	for (std::vector<std::string> *keys : {&reply->tracked_keys, &reply->uncaptured_keys}) {
		uint64_t count;
		if (!in.count(&count, 8))
			return false;
		keys->resize(size_t(count));
		for (std::string &key : *keys) {
			std::string_view text;
			if (!in.text(&text))
				return false;
			key.assign(text);
		}
	}
	return in.done();
}

std::optional<size_t> complete_write_frame(std::string_view bytes)
{
	Reader in(bytes);
	uint64_t length;
	if (!in.number(&length) || length > bytes.size() - kWriteFrameHeader)
		return std::nullopt;
	return size_t(length) + kWriteFrameHeader;
}

bool receive_available(int fd, std::string &input)
{
	char buffer[65536];
	for (;;) {
		ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
		if (n > 0)
			input.append(buffer, size_t(n));
		else if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
			return false;
		else if (errno != EINTR)
			return true;
	}
}

bool send_frame(int fd, std::string_view frame, int timeout_ms)
{
	size_t sent = 0;
	while (sent < frame.size()) {
		ssize_t n = send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
		if (n > 0) {
			sent += size_t(n);
			continue;
		}
		pollfd writable = {fd, POLLOUT, 0};
		if (n < 0 && (errno == EINTR || ((errno == EAGAIN || errno == EWOULDBLOCK) && poll(&writable, 1, timeout_ms) > 0)))
			continue;
		return false;
	}
	return true;
}

} // namespace local_cache::resp
