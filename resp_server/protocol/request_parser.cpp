/*
 * request_parser.cpp — the request parser's state machine: inline lines split as Redis's
 * sdssplitargs does, multibulk requests read header by header, every limit checked at the
 * same point whatever the read boundaries were (so a request split anywhere parses exactly as
 * the whole request does; the fuzzer checks this).
 */
#include "resp_server/protocol/request_parser.h"

#include "resp_server/protocol/buffers.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace local_cache::resp {

namespace {

/* What C's isspace() accepts in the C locale: sdssplitargs skips these between arguments. */
bool is_c_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_hex_digit(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c - 'A' + 10;
}

/* The escapes sdssplitargs knows inside double quotes; any other escaped byte stands for itself. */
char unescape(char c)
{
	switch (c) {
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	case 'b': return '\b';
	case 'a': return '\a';
	default: return c;
	}
}

/* Redis preallocates at most this many argument slots from a count the client announced. */
constexpr int64_t kMaxPreallocatedArgs = 1024;

/*
 * Look for `terminator` in the line that starts at line_start_. A line longer than
 * max_inline_size is an error whether or not its end has arrived: judging only by what is
 * buffered, as Redis does, would make the outcome depend on how the bytes were split.
 */
enum class LineSearch { Found, NeedMore, TooLong };

LineSearch search_line(const char *data, size_t len, size_t line_start, size_t limit, char terminator,
					   size_t *scan_from, size_t *found_at)
{
	/* Only the first limit + 1 bytes of the line can hold an acceptable end. */
	size_t window_end = std::min(len, line_start + limit + 1);
	if (*scan_from < window_end) {
		const void *hit = memchr(data + *scan_from, terminator, window_end - *scan_from);
		if (hit != nullptr) {
			*found_at = size_t(static_cast<const char *>(hit) - data);
			*scan_from = *found_at; /* resume here if the byte after it is still missing */
			return LineSearch::Found;
		}
		*scan_from = window_end;
	}
	if (len - line_start > limit)
		return LineSearch::TooLong;
	return LineSearch::NeedMore;
}

} // namespace

RequestParser::RequestParser(const ParserLimits &limits) : limits_(limits) {}

ParseResult RequestParser::fail(std::string message)
{
	state_ = State::Failed;
	error_ = std::move(message);
	return ParseResult{ParseStatus::Error, 0, Request()};
}

void RequestParser::start_request()
{
	pos_ = 0;
	line_start_ = 0;
	scan_from_ = 0;
	args_left_ = 0;
	bulk_length_ = 0;
	/* One huge request must not pin memory for the connection's whole life. */
	release_if_large(spans_);
	release_if_large(argv_);
	spans_.clear();
}

size_t RequestParser::bytes_needed() const
{
	if (state_ == State::BulkData)
		return pos_ + size_t(bulk_length_) + 2;
	return 0;
}

ParseResult RequestParser::parse(const char *data, size_t len)
{
	if (state_ == State::Failed)
		return ParseResult{ParseStatus::Error, 0, Request()};
	/* A caller that hands back fewer bytes than the parser already saw broke the contract;
	 * refuse rather than read outside the buffer. */
	if (state_ != State::Start && len < std::max(pos_, scan_from_))
		return fail("Protocol error: request buffer shrank between reads");

	size_t skipped = 0; /* bytes of empty requests passed over during this call */
	for (;;) {
		const char *req = data + skipped;
		size_t avail = len - skipped;
		switch (state_) {
		case State::Failed:
			return ParseResult{ParseStatus::Error, 0, Request()};

		case State::Start:
			if (avail == 0)
				return ParseResult{ParseStatus::NeedMore, skipped, Request()};
			start_request();
			if (req[0] == '*') {
				state_ = State::MultibulkCount;
				scan_from_ = 1;
			} else {
				state_ = State::Inline;
			}
			continue;

		case State::Inline: {
			size_t newline = 0;
			switch (search_line(req, avail, 0, limits_.max_inline_size, '\n', &scan_from_,
								&newline)) {
			case LineSearch::NeedMore:
				return ParseResult{ParseStatus::NeedMore, skipped, Request()};
			case LineSearch::TooLong:
				return fail("Protocol error: too big inline request");
			case LineSearch::Found:
				break;
			}
			size_t line_length = newline;
			if (line_length > 0 && req[line_length - 1] == '\r')
				line_length--;
			if (!split_inline(req, line_length))
				return fail("Protocol error: unbalanced quotes in request");
			state_ = State::Start;
			size_t used = newline + 1;
			if (argv_.empty()) {
				/* An empty (or all-blank) line is no request. */
				skipped += used;
				continue;
			}
			return ParseResult{ParseStatus::Request, skipped + used,
							   Request{argv_.data(), argv_.size()}};
		}

		case State::MultibulkCount: {
			size_t cr = 0;
			switch (search_line(req, avail, 0, limits_.max_inline_size, '\r', &scan_from_, &cr)) {
			case LineSearch::NeedMore:
				return ParseResult{ParseStatus::NeedMore, skipped, Request()};
			case LineSearch::TooLong:
				return fail("Protocol error: too big mbulk count string");
			case LineSearch::Found:
				break;
			}
			if (cr + 1 >= avail)
				return ParseResult{ParseStatus::NeedMore, skipped, Request()};
			std::string_view count_text(req + 1, cr - 1);
			int64_t count = 0;
			if (req[cr + 1] != '\n' || !parse_canonical_int64(count_text, &count) ||
				count > limits_.max_multibulk_count)
				return fail("Protocol error: invalid multibulk length");
			if (!authenticated_ && count > limits_.unauthenticated_max_multibulk_count)
				return fail("Protocol error: unauthenticated multibulk length");
			pos_ = cr + 2;
			if (count <= 0) {
				/* "*0" and "*-1" are empty requests, passed over as Redis does. */
				state_ = State::Start;
				skipped += pos_;
				continue;
			}
			args_left_ = count;
			/* Reserve from what the client announced only up to a point: the count is not
			 * backed by any bytes yet. */
			spans_.reserve(size_t(std::min(count, kMaxPreallocatedArgs)));
			state_ = State::BulkLength;
			line_start_ = pos_;
			scan_from_ = pos_;
			continue;
		}

		case State::BulkLength: {
			size_t cr = 0;
			switch (search_line(req, avail, line_start_, limits_.max_inline_size, '\r',
								&scan_from_, &cr)) {
			case LineSearch::NeedMore:
				return ParseResult{ParseStatus::NeedMore, skipped, Request()};
			case LineSearch::TooLong:
				return fail("Protocol error: too big bulk count string");
			case LineSearch::Found:
				break;
			}
			if (cr + 1 >= avail)
				return ParseResult{ParseStatus::NeedMore, skipped, Request()};
			char type = req[line_start_];
			if (type != '$')
				return fail(std::string("Protocol error: expected '$', got '") + type + "'");
			std::string_view length_text(req + line_start_ + 1, cr - line_start_ - 1);
			int64_t length = 0;
			if (req[cr + 1] != '\n' || !parse_canonical_int64(length_text, &length) || length < 0 ||
				length > limits_.max_bulk_length)
				return fail("Protocol error: invalid bulk length");
			if (!authenticated_ && length > limits_.unauthenticated_max_bulk_length)
				return fail("Protocol error: unauthenticated bulk length");
			bulk_length_ = length;
			pos_ = cr + 2;
			state_ = State::BulkData;
			continue;
		}

		case State::BulkData: {
			size_t length = size_t(bulk_length_);
			if (avail - pos_ < length + 2)
				return ParseResult{ParseStatus::NeedMore, skipped, Request()};
			if (req[pos_ + length] != '\r' || req[pos_ + length + 1] != '\n')
				return fail("Protocol error: bulk not followed by CRLF");
			spans_.push_back(ArgSpan{pos_, length});
			pos_ += length + 2;
			if (--args_left_ > 0) {
				state_ = State::BulkLength;
				line_start_ = pos_;
				scan_from_ = pos_;
				continue;
			}
			state_ = State::Start;
			return ParseResult{ParseStatus::Request, skipped + pos_, finish_multibulk(req)};
		}
		}
	}
}

Request RequestParser::finish_multibulk(const char *data)
{
	argv_.resize(spans_.size());
	for (size_t i = 0; i < spans_.size(); i++)
		argv_[i] = std::string_view(data + spans_[i].offset, spans_[i].length);
	return Request{argv_.data(), argv_.size()};
}

/*
 * Split one inline line into arguments the way Redis's sdssplitargs does: blanks separate
 * arguments; "double quotes" take \n \r \t \b \a \xHH and \<any>; 'single quotes' take \';
 * a closing quote must be followed by a blank or the end of the line. Redis handles the line
 * as a C string, so a NUL byte ends it. Arguments are decoded into inline_decoded_, reserved
 * up front so that the views taken into it stay valid (decoding never lengthens the text).
 */
bool RequestParser::split_inline(const char *line, size_t length)
{
	if (const void *nul = memchr(line, '\0', length))
		length = size_t(static_cast<const char *>(nul) - line);
	inline_decoded_.clear();
	inline_decoded_.reserve(length);
	argv_.clear();

	/* The byte at k, or NUL past the end (the C-string view sdssplitargs has). */
	auto at = [&](size_t k) -> char { return k < length ? line[k] : '\0'; };

	size_t i = 0;
	for (;;) {
		while (i < length && is_c_space(line[i]))
			i++;
		if (i == length)
			return true;

		size_t arg_start = inline_decoded_.size();
		bool in_double_quotes = false;
		bool in_single_quotes = false;
		bool done = false;
		while (!done) {
			char c = at(i);
			if (in_double_quotes) {
				if (c == '\\' && at(i + 1) == 'x' && is_hex_digit(at(i + 2)) && is_hex_digit(at(i + 3))) {
					inline_decoded_.push_back(char(hex_value(at(i + 2)) * 16 + hex_value(at(i + 3))));
					i += 3;
				} else if (c == '\\' && i + 1 < length) {
					i++;
					inline_decoded_.push_back(unescape(line[i]));
				} else if (c == '"') {
					if (i + 1 < length && !is_c_space(line[i + 1]))
						return false;
					done = true;
				} else if (i >= length) {
					return false; /* the line ended inside the quotes */
				} else {
					inline_decoded_.push_back(c);
				}
			} else if (in_single_quotes) {
				if (c == '\\' && at(i + 1) == '\'') {
					i++;
					inline_decoded_.push_back('\'');
				} else if (c == '\'') {
					if (i + 1 < length && !is_c_space(line[i + 1]))
						return false;
					done = true;
				} else if (i >= length) {
					return false;
				} else {
					inline_decoded_.push_back(c);
				}
			} else {
				if (i >= length || c == ' ' || c == '\n' || c == '\r' || c == '\t')
					done = true;
				else if (c == '"')
					in_double_quotes = true;
				else if (c == '\'')
					in_single_quotes = true;
				else
					inline_decoded_.push_back(c);
			}
			if (i < length)
				i++;
		}
		argv_.emplace_back(inline_decoded_.data() + arg_start, inline_decoded_.size() - arg_start);
	}
}

} // namespace local_cache::resp
