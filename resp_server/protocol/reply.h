/*
 * reply.h — reply encoding: an append-only output buffer per connection and a writer that
 * encodes RESP2 or RESP3 values into it. No PostgreSQL header.
 *
 * The server appends the replies of every request it parsed from one read, then writes the
 * buffer with one write call (redis-benchmark -P 64 gets one write per 64 replies). The
 * buffer's size is what the output-buffer limit is checked against. Encoding allocates
 * nothing beyond the buffer's own growth.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace local_cache::resp {

/* Bytes waiting to be written to one connection. */
class ReplyBuffer {
public:
	ReplyBuffer() = default;
	~ReplyBuffer();
	ReplyBuffer(ReplyBuffer &&other) noexcept;
	ReplyBuffer &operator=(ReplyBuffer &&other) noexcept;
	ReplyBuffer(const ReplyBuffer &) = delete;
	ReplyBuffer &operator=(const ReplyBuffer &) = delete;

	const char *data() const { return data_; }
	size_t size() const { return size_; }
	bool empty() const { return size_ == 0; }
	size_t capacity() const { return capacity_; }
	std::string_view view() const { return std::string_view(data_, size_); }

	void append(const char *bytes, size_t length)
	{
		if (length == 0)
			return;
		char *out = reserve(length);
		memcpy(out, bytes, length);
		size_ += length;
	}
	void append(std::string_view bytes) { append(bytes.data(), bytes.size()); }
	void append(char byte)
	{
		*reserve(1) = byte;
		size_++;
	}

	/* Room for `length` more bytes at the end; write into it, then commit() what was written. */
	char *reserve(size_t length)
	{
		if (capacity_ - size_ < length)
			grow(length);
		return data_ + size_;
	}
	void commit(size_t length) { size_ += length; }

	/* After a write: drop everything, or the first `length` bytes of a partial write. */
	void clear() { size_ = 0; }
	/* Drop what was appended after the first `length` bytes (a reply abandoned half-way). */
	void truncate(size_t length)
	{
		if (length < size_)
			size_ = length;
	}
	void consume(size_t length);
	/* Give the memory back (an idle connection after a large reply). */
	void release();

	void swap(ReplyBuffer &other) noexcept;

private:
	void grow(size_t extra);

	char *data_ = nullptr;
	size_t size_ = 0;
	size_t capacity_ = 0;
};

/* Encodes one connection's replies in the protocol it negotiated (2 unless HELLO 3). */
class ReplyWriter {
public:
	ReplyWriter(ReplyBuffer &out, int protocol) : out_(out), protocol_(protocol) {}

	int protocol() const { return protocol_; }
	void set_protocol(int protocol) { protocol_ = protocol; }
	ReplyBuffer &buffer() { return out_; }

	/* +text; CR and LF in it become spaces, as Redis does for texts that carry user input. */
	void simple_string(std::string_view text);
	void ok() { out_.append("+OK\r\n", 5); }
	/* -ERR message */
	void error(std::string_view message) { error_with_code("ERR", message); }
	/* -CODE message (NOAUTH, WRONGPASS, NOPERM, NOPROTO ...) */
	void error_with_code(std::string_view code, std::string_view message);
	void integer(int64_t value);
	void bulk(std::string_view bytes);
	/* RESP2 $-1, RESP3 _ */
	void null();
	/*
	 * bulk() and null() for callers that may not allocate (a cache hit copied under a shard
	 * lock): they write only into room already reserved, and return false, writing nothing,
	 * when there is not enough. in_room_size() bounds what each takes, to reserve up front.
	 */
	bool bulk_in_room(std::string_view bytes);
	bool null_in_room();
	static size_t in_room_size(size_t bulk_length);
	/* RESP2 *-1, RESP3 _ */
	void null_array();
	void array(size_t count);
	/* RESP3 %count; RESP2 an array of 2 * count (key, value, key, value ...). */
	void map(size_t count);
	/* RESP3 ~count; RESP2 an array. */
	void set(size_t count);
	/* RESP3 #t / #f; RESP2 :1 / :0. */
	void boolean(bool value);
	/* RESP3 ,value; RESP2 a bulk string; inf, -inf and nan as Redis spells them. */
	void double_value(double value);
	/* RESP3 =length\r\nfmt:text (format is three bytes, "txt" or "mkd"); RESP2 a bulk of text. */
	void verbatim(std::string_view text, std::string_view format = "txt");

private:
	void header(char type, int64_t count);
	void line_sanitized(char type, std::string_view a, std::string_view b);

	ReplyBuffer &out_;
	int protocol_;
};

} // namespace local_cache::resp
