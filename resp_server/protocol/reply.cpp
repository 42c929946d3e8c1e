/*
 * reply.cpp — growth of the reply buffer and the RESP2/RESP3 encodings.
 */
#include "resp_server/protocol/reply.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <new>
#include <utility>

namespace local_cache::resp {

/* Room for the longest int64 (20 characters with the sign) plus CRLF and a type byte. */
constexpr size_t kMaxIntegerLine = 1 + 20 + 2;

ReplyBuffer::~ReplyBuffer()
{
	free(data_);
}

ReplyBuffer::ReplyBuffer(ReplyBuffer &&other) noexcept
	: data_(other.data_), size_(other.size_), capacity_(other.capacity_)
{
	other.data_ = nullptr;
	other.size_ = 0;
	other.capacity_ = 0;
}

ReplyBuffer &ReplyBuffer::operator=(ReplyBuffer &&other) noexcept
{
	if (this != &other) {
		ReplyBuffer moved(std::move(other));
		swap(moved);
	}
	return *this;
}

void ReplyBuffer::swap(ReplyBuffer &other) noexcept
{
	std::swap(data_, other.data_);
	std::swap(size_, other.size_);
	std::swap(capacity_, other.capacity_);
}

void ReplyBuffer::grow(size_t extra)
{
	/* Doubling keeps appends amortized O(1); the first block fits a typical batch of replies. */
	size_t needed = size_ + extra;
	if (needed < size_)
		throw std::bad_alloc();
	size_t capacity = capacity_ == 0 ? 4096 : capacity_;
	while (capacity < needed)
		capacity = capacity * 2 > capacity ? capacity * 2 : needed;
	char *grown = static_cast<char *>(realloc(data_, capacity));
	if (grown == nullptr)
		throw std::bad_alloc();
	data_ = grown;
	capacity_ = capacity;
}

void ReplyBuffer::consume(size_t length)
{
	if (length >= size_) {
		size_ = 0;
		return;
	}
	memmove(data_, data_ + length, size_ - length);
	size_ -= length;
}

void ReplyBuffer::release()
{
	free(data_);
	data_ = nullptr;
	size_ = 0;
	capacity_ = 0;
}

void ReplyWriter::header(char type, int64_t count)
{
	char *out = out_.reserve(kMaxIntegerLine);
	char *p = out;
	*p++ = type;
	p = std::to_chars(p, out + kMaxIntegerLine, count).ptr;
	*p++ = '\r';
	*p++ = '\n';
	out_.commit(size_t(p - out));
}

/* type, a, then " b" when b is not empty, CRLF; CR and LF inside become spaces. */
void ReplyWriter::line_sanitized(char type, std::string_view a, std::string_view b)
{
	size_t length = 1 + a.size() + (b.empty() ? 0 : 1 + b.size()) + 2;
	char *out = out_.reserve(length);
	char *p = out;
	auto copy = [&p](std::string_view text) {
		for (char c : text)
			*p++ = (c == '\r' || c == '\n') ? ' ' : c;
	};
	*p++ = type;
	copy(a);
	if (!b.empty()) {
		*p++ = ' ';
		copy(b);
	}
	*p++ = '\r';
	*p++ = '\n';
	out_.commit(length);
}

void ReplyWriter::simple_string(std::string_view text)
{
	line_sanitized('+', text, std::string_view());
}

void ReplyWriter::error_with_code(std::string_view code, std::string_view message)
{
	line_sanitized('-', code, message);
}

void ReplyWriter::integer(int64_t value)
{
	header(':', value);
}

void ReplyWriter::bulk(std::string_view bytes)
{
	char *out = out_.reserve(kMaxIntegerLine + bytes.size() + 2);
	char *p = out;
	*p++ = '$';
	p = std::to_chars(p, out + kMaxIntegerLine, bytes.size()).ptr;
	*p++ = '\r';
	*p++ = '\n';
	memcpy(p, bytes.data(), bytes.size());
	p += bytes.size();
	*p++ = '\r';
	*p++ = '\n';
	out_.commit(size_t(p - out));
}

size_t ReplyWriter::in_room_size(size_t bulk_length)
{
	return kMaxIntegerLine + bulk_length + 2;
}

bool ReplyWriter::bulk_in_room(std::string_view bytes)
{
	if (out_.capacity() - out_.size() < in_room_size(bytes.size()))
		return false;
	bulk(bytes);
	return true;
}

bool ReplyWriter::null_in_room()
{
	if (out_.capacity() - out_.size() < in_room_size(0))
		return false;
	null();
	return true;
}

void ReplyWriter::null()
{
	if (protocol_ >= 3)
		out_.append("_\r\n", 3);
	else
		out_.append("$-1\r\n", 5);
}

void ReplyWriter::null_array()
{
	if (protocol_ >= 3)
		out_.append("_\r\n", 3);
	else
		out_.append("*-1\r\n", 5);
}

void ReplyWriter::array(size_t count)
{
	header('*', int64_t(count));
}

void ReplyWriter::map(size_t count)
{
	if (protocol_ >= 3)
		header('%', int64_t(count));
	else
		header('*', int64_t(count) * 2);
}

void ReplyWriter::set(size_t count)
{
	header(protocol_ >= 3 ? '~' : '*', int64_t(count));
}

void ReplyWriter::boolean(bool value)
{
	if (protocol_ >= 3)
		out_.append(value ? "#t\r\n" : "#f\r\n", 4);
	else
		out_.append(value ? ":1\r\n" : ":0\r\n", 4);
}

void ReplyWriter::double_value(double value)
{
	/* The shortest text that reads back as the same double, like Redis 7.2's fpconv_dtoa. */
	char text[64];
	size_t length;
	if (std::isnan(value)) {
		memcpy(text, "nan", 3);
		length = 3;
	} else if (std::isinf(value)) {
		length = value > 0 ? 3 : 4;
		memcpy(text, value > 0 ? "inf" : "-inf", length);
	} else {
		length = size_t(std::to_chars(text, text + sizeof(text), value).ptr - text);
	}
	if (protocol_ >= 3) {
		char *out = out_.reserve(1 + length + 2);
		out[0] = ',';
		memcpy(out + 1, text, length);
		out[1 + length] = '\r';
		out[2 + length] = '\n';
		out_.commit(length + 3);
	} else {
		bulk(std::string_view(text, length));
	}
}

void ReplyWriter::verbatim(std::string_view text, std::string_view format)
{
	if (protocol_ < 3 || format.size() != 3) {
		bulk(text);
		return;
	}
	header('=', int64_t(text.size() + 4));
	char *out = out_.reserve(4 + text.size() + 2);
	memcpy(out, format.data(), 3);
	out[3] = ':';
	memcpy(out + 4, text.data(), text.size());
	out[4 + text.size()] = '\r';
	out[5 + text.size()] = '\n';
	out_.commit(text.size() + 6);
}

} // namespace local_cache::resp
