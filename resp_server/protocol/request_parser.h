/*
 * request_parser.h — the incremental RESP request parser (multibulk and inline), with Redis's limits
 * and error texts. No PostgreSQL header: the unit tests and the fuzzer drive it alone.
 *
 * The caller owns the input buffer. Multibulk arguments (what client libraries send) are views
 * into it, never copied; inline requests (telnet, redis-cli pipes) are unescaped into the
 * parser's own small buffer. The contract, for one connection:
 *
 *   RequestParser parser(limits);
 *   for (;;) {
 *       ParseResult r = parser.parse(buf + start, end - start);
 *       if (r.status == ParseStatus::Request) {
 *           execute(r.request);          // r.request's views point into buf (or the parser)
 *           start += r.consumed;         // only now may those bytes be reused
 *       } else if (r.status == ParseStatus::NeedMore) {
 *           start += r.consumed;         // bytes of skipped empty requests
 *           // compact buf[start, end) to the front if you like, read more, call parse again
 *           // with the SAME unconsumed bytes at the front plus whatever arrived
 *           break;
 *       } else {                          // ParseStatus::Error, sticky
 *           reply "-ERR " + parser.error() and close the connection after the reply;
 *           break;
 *       }
 *   }
 *
 * Progress inside a partial request is remembered as offsets from its first byte, so a request
 * may be split across reads at any byte, and the buffer may move between calls.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "extension/key_bytes.h"

namespace local_cache::resp {

/* The limits Redis enforces on requests, with Redis's defaults. */
struct ParserLimits {
	/* Inline request lines, and the "*N" / "$N" header lines (PROTO_INLINE_MAX_SIZE). */
	size_t max_inline_size = 64 * 1024;
	/* Arguments of one multibulk request. */
	int64_t max_multibulk_count = 1024 * 1024;
	/* One bulk argument (proto-max-bulk-len). */
	int64_t max_bulk_length = 512LL * 1024 * 1024;
	/* Unconsumed input of one connection (client-query-buffer-limit); the caller checks it. */
	size_t max_query_buffer = size_t(1) << 30;
	/* While the connection is not authenticated, as Redis 7 does to bound what an anonymous
	 * client can make the server buffer. */
	int64_t unauthenticated_max_multibulk_count = 10;
	int64_t unauthenticated_max_bulk_length = 16384;
};

/* One complete request: argv[0] is the command name. */
struct Request {
	const std::string_view *argv = nullptr;
	size_t argc = 0;

	std::string_view operator[](size_t i) const { return argv[i]; }
	const std::string_view *begin() const { return argv; }
	const std::string_view *end() const { return argv + argc; }
};

enum class ParseStatus {
	Request,  /* a request is ready; consumed covers it */
	NeedMore, /* no complete request; consumed bytes (skipped empty requests) may be dropped */
	Error,    /* protocol error, see error(); every later call answers Error again */
};

struct ParseResult {
	ParseStatus status;
	size_t consumed; /* bytes from the front of the input the caller may drop */
	Request request; /* valid when status == Request, until the next parse() or until the
					  * caller reuses the consumed bytes */
};

class RequestParser {
public:
	explicit RequestParser(const ParserLimits &limits = ParserLimits());

	/*
	 * Parse from `data`, which must start at the first byte not yet consumed. After NeedMore,
	 * the next call must pass the same bytes again (after dropping `consumed`) plus any new
	 * ones; the parser resumes where it stopped and does not rescan.
	 */
	ParseResult parse(const char *data, size_t len);

	/* The protocol error text without the "-ERR " prefix, e.g. "Protocol error: invalid
	 * bulk length"; empty while there is none. */
	const std::string &error() const { return error_; }
	bool failed() const { return state_ == State::Failed; }

	/* Whether the stricter unauthenticated limits apply to the next request; the server sets
	 * this from the session before each parse(). */
	void set_authenticated(bool authenticated) { authenticated_ = authenticated; }

	/* True when `unconsumed_bytes` of buffered input exceed client-query-buffer-limit: Redis
	 * then closes the connection without a reply. */
	bool query_buffer_exceeded(size_t unconsumed_bytes) const
	{
		return unconsumed_bytes > limits_.max_query_buffer;
	}

	/* After NeedMore: how many bytes (from the front of the unconsumed input) the parser needs
	 * before it can make progress, when it knows (inside a bulk argument), else 0. Lets the
	 * caller size its read buffer for a big argument in one allocation. */
	size_t bytes_needed() const;

	const ParserLimits &limits() const { return limits_; }

private:
	enum class State {
		Start,          /* before the first byte of a request */
		Inline,         /* looking for the end of an inline line */
		MultibulkCount, /* looking for the end of "*N" */
		BulkLength,     /* looking for the end of "$N" */
		BulkData,       /* waiting for bulk_length_ bytes and CRLF */
		Failed,
	};

	/* An argument as an offset from the request's first byte, so the buffer may move. */
	struct ArgSpan {
		size_t offset;
		size_t length;
	};

	ParseResult fail(std::string message);
	void start_request();
	bool find_line_end(const char *data, size_t len, char terminator, size_t *line_end);
	bool split_inline(const char *line, size_t length);
	Request finish_multibulk(const char *data);

	ParserLimits limits_;
	bool authenticated_ = true;
	State state_ = State::Start;

	size_t pos_ = 0;       /* next unparsed byte, from the request's first byte */
	size_t line_start_ = 0;
	size_t scan_from_ = 0; /* where the search for a line end resumes */
	int64_t args_left_ = 0;
	int64_t bulk_length_ = 0;

	std::vector<ArgSpan> spans_;
	std::vector<std::string_view> argv_;
	std::string inline_decoded_; /* quoted inline arguments, unescaped */
	std::string error_;
};

/* RESP lengths, SELECT, HELLO and integer keys share one integer syntax (key_bytes.h). */
using local_cache::parse_canonical_int64;

} // namespace local_cache::resp
