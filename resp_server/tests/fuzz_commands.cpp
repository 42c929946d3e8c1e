/*
 * fuzz_commands.cpp — libFuzzer target for the command layer (command_table.cpp, *_commands.cpp,
 * glob.cpp): the bytes of one connection go through the request parser, the way
 * connection.cpp's process_input drives it, and every request is run by a CommandProcessor over
 * the fakes of fake_data.h. Beyond "no crash, no sanitizer report" (every argument is handed to the
 * command layer in an exact-size heap copy, so reading past an argument shows up under
 * AddressSanitizer), it checks, aborting when one breaks:
 *   - a request appends exactly one reply, or nothing with Session::retry_later set; a request
 *     that asked to be retried is answered within a few retries, as the server retries it;
 *     (P)SUBSCRIBE and (P)UNSUBSCRIBE one per channel (RESP3: pushes) or one error;
 *   - each reply is one well-formed value of the session's protocol after the request (HELLO
 *     and RESET switch it): RESP2 only + - : $ *, RESP3 also _ , # = % ~ and no $-1 or *-1;
 *     canonical lengths and integers, no CR or LF inside a line, errors start with a code;
 *   - a reply other than an error names a known command, never a write command, and one that
 *     allows no authentication (CMD_NO_AUTH) while the session is not authenticated;
 *   - no data lookup (rows, columns, key counts, writes) reaches the fakes without a role;
 *   - the same input gives the same replies and session when it arrives in one read and each
 *     request runs on a fresh CommandProcessor (no state leaks through the scratch buffers,
 *     nothing depends on where the reads split the stream).
 *
 * Input: byte 0 picks options (no default role, so NOAUTH and AUTH paths run; lock waits
 * already expired; logins that stay pending for 0-3 tries; answers in key order; a standby),
 * bytes 1-3 pick three offsets where the stream is split into reads; the rest is the stream.
 * At most kMaxRequests requests run per input, which keeps memory per input bounded.
 *
 * FUZZ_COMMANDS_TRACE=1 ./resp_server/tests/fuzz_commands INPUT prints the replies, for a look
 * at what a seed or a crash input does.
 */
#include "resp_server/commands/command_table.h"
#include "resp_server/tests/fake_data.h"
#include "resp_server/protocol/request_parser.h"
#include "resp_server/protocol/reply.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

using namespace local_cache::resp;
using resp_test::FakeData;

namespace {

constexpr size_t kMaxRequests = 64;
/* Logins stay pending at most 3 tries and a busy table answers -BUSY on the first retry. */
constexpr int kMaxRetries = 8;
constexpr int kMaxDepth = 8;

[[noreturn]] void fail(const char *what, std::string_view detail = {})
{
	fprintf(stderr, "fuzz_commands: %s\n", what);
	if (!detail.empty()) {
		fprintf(stderr, "  ");
		for (unsigned char c : detail.substr(0, 400))
			fprintf(stderr, (c >= ' ' && c <= '~') ? "%c" : "\\x%02x", c);
		fprintf(stderr, "%s\n", detail.size() > 400 ? " ..." : "");
	}
	__builtin_trap();
}

/* ---- one reply, checked strictly against what the protocol allows ---- */

class ReplyChecker {
public:
	ReplyChecker(std::string_view bytes, int protocol) : bytes_(bytes), resp3_(protocol >= 3) {}

	/* Exactly one value and nothing after it; returns its type byte. */
	char check_one()
	{
		char type = bytes_.empty() ? 0 : bytes_[0];
		value(0);
		if (pos_ != bytes_.size())
			bad("bytes after the reply");
		return type;
	}

	/* (P)SUBSCRIBE and (P)UNSUBSCRIBE: one value per channel, pushes in RESP3, or one error;
	 * returns the first one's type byte. */
	char check_pubsub()
	{
		char type = bytes_.empty() ? 0 : bytes_[0];
		pushes_ = true;
		do {
			if (bytes_[pos_] != '-' && bytes_[pos_] != (resp3_ ? '>' : '*'))
				bad("a Pub/Sub reply that is neither an error nor a Pub/Sub message");
			value(0);
		} while (pos_ < bytes_.size() && type != '-');
		if (pos_ != bytes_.size())
			bad("bytes after an error");
		return type;
	}

private:
	[[noreturn]] void bad(const char *what) { fail(what, bytes_); }

	std::string_view line()
	{
		size_t end = bytes_.find("\r\n", pos_);
		if (end == std::string_view::npos)
			bad("a reply line without CRLF");
		std::string_view text = bytes_.substr(pos_, end - pos_);
		if (text.find_first_of("\r\n") != std::string_view::npos)
			bad("CR or LF inside a reply line");
		pos_ = end + 2;
		return text;
	}

	int64_t number(int64_t min)
	{
		int64_t n = 0;
		if (!parse_canonical_int64(line(), &n) || n < min)
			bad("a length or integer that is not canonical or out of range");
		return n;
	}

	/* A length or count; -1 (null) only in RESP2, where it is the null bulk and array. */
	int64_t length()
	{
		int64_t n = number(resp3_ ? 0 : -1);
		if (n > int64_t(bytes_.size() - pos_))
			bad("a length beyond the reply");
		return n;
	}

	void payload(int64_t n)
	{
		if (bytes_.substr(pos_ + size_t(n), 2) != "\r\n")
			bad("a bulk without CRLF after its bytes");
		pos_ += size_t(n) + 2;
	}

	void value(int depth)
	{
		if (depth > kMaxDepth)
			bad("replies nest deeper than the command layer writes");
		if (pos_ >= bytes_.size())
			bad("a reply that ends early");
		char type = bytes_[pos_++];
		switch (type) {
		case '+':
			line();
			return;
		case '-': {
			/* "-CODE message" or "-CODE": clients read the code up to the first space. */
			std::string_view text = line();
			size_t code_end = std::min(text.find(' '), text.size());
			if (code_end == 0)
				bad("an error without a code");
			for (char c : text.substr(0, code_end)) {
				if (c < 'A' || c > 'Z')
					bad("an error code that is not upper case");
			}
			return;
		}
		case ':':
			number(INT64_MIN);
			return;
		case '$': {
			int64_t n = length();
			if (n >= 0)
				payload(n);
			return;
		}
		case '*': {
			int64_t n = length();
			for (int64_t i = 0; i < n; i++)
				value(depth + 1);
			return;
		}
		default:
			break;
		}
		if (!resp3_)
			bad("a RESP3 type in a RESP2 reply");
		switch (type) {
		case '_':
			if (!line().empty())
				bad("a null with text");
			return;
		case '#': {
			std::string_view text = line();
			if (text != "t" && text != "f")
				bad("a boolean other than t or f");
			return;
		}
		case ',': {
			std::string text(line());
			char *end = nullptr;
			if (text != "inf" && text != "-inf" && text != "nan" &&
				(text.empty() || (strtod(text.c_str(), &end), end != text.c_str() + text.size())))
				bad("a double that does not read back");
			return;
		}
		case '=': {
			int64_t n = length();
			if (n < 4 || bytes_[pos_ + 3] != ':')
				bad("a verbatim string without its format");
			payload(n);
			return;
		}
		case '%':
		case '~': {
			int64_t n = length();
			for (int64_t i = 0; i < (type == '%' ? 2 * n : n); i++)
				value(depth + 1);
			return;
		}
		case '>': {
			if (!pushes_ || depth != 0)
				bad("a push where the command layer writes none");
			int64_t n = length();
			for (int64_t i = 0; i < n; i++)
				value(depth + 1);
			return;
		}
		default:
			bad("a type byte the command layer never writes");
		}
	}

	std::string_view bytes_;
	size_t pos_ = 0;
	bool resp3_;
	bool pushes_ = false;
};

/* INFO's tracking_total_* are the worker's table's sizes, which a fresh processor per request
 * does not keep: the transcripts compare INFO without their digits. */
std::string without_tracking_sizes(std::string_view reply)
{
	size_t header_end = reply.find("\r\n");
	std::string body(reply.substr(header_end + 2));
	size_t removed = 0;
	for (size_t at = body.find("tracking_total_"); at != std::string::npos; at = body.find("tracking_total_", at + 1)) {
		size_t digits = body.find(':', at) + 1;
		size_t end = body.find_first_not_of("0123456789", digits);
		removed += end - digits;
		body.erase(digits, end - digits);
	}
	int64_t length = 0;
	parse_canonical_int64(reply.substr(1, header_end - 1), &length);
	return std::string(1, reply[0]) + std::to_string(length - int64_t(removed)) + "\r\n" + body;
}

/* ---- the data sources: the fakes, with a locked table ---- */

/* Another transaction holds a lock on this table. */
constexpr std::string_view kBusyPrefix = "busy";

struct Options {
	bool no_default_role = false;
	bool lock_wait_expired = false; /* local_cache.resp_lock_timeout = 0 */
	int pending_logins = 0;
	bool answers_in_order = false;
	bool replica = false; /* a hot standby: INFO replication says so */
};

/* The command a request resolves to, as the dispatcher resolves it; nullptr if unknown. */
const CommandSpec *resolve(const Request &request)
{
	const CommandSpec *command = find_command(request[0]);
	if (command != nullptr && command->is_container() && request.argc >= 2)
		command = find_subcommand(*command, request[1]);
	return command;
}

/* One connection: the server's side of process_input, with the checks above. */
class Client {
public:
	Client(const Options &options, bool fresh_processor_per_request)
		: options_(options), fresh_processor_per_request_(fresh_processor_per_request)
	{
		data_.db.busy_prefixes.insert(std::string(kBusyPrefix));
		data_.logins.pending_logins = options.pending_logins;
		data_.rows.scramble_answers = !options.answers_in_order;
		if (options.no_default_role)
			data_.logins.default_role_value.reset();
		if (options.replica) {
			data_.server.info.replica = true;
			data_.server.info.master_host = "primary.example";
			data_.server.info.master_port = 5432;
		}
		session_.id = 7;
		session_.role = data_.logins.default_role(session_);
		session_.peer_address = "127.0.0.1:50000";
		session_.local_address = "127.0.0.1:6380";
		session_.fd = 9;
		session_.connected_at_ms = 1000;
		session_.last_request_at_ms = 4500;
	}

	/* Bytes arrive from one read. */
	void receive(std::string_view bytes)
	{
		if (closed_)
			return;
		input_.append(bytes.data(), bytes.size());
		process();
	}

	const std::string &transcript() const { return transcript_; }
	const Session &session() const { return session_; }
	const FakeData &fake() const { return data_; }

private:
	void process()
	{
		while (!closed_) {
			if (requests_ == kMaxRequests) {
				closed_ = true;
				return;
			}
			parser_.set_authenticated(session_.authenticated());
			ParseResult result = parser_.parse(input_.data(), input_.size());
			if (result.status == ParseStatus::NeedMore) {
				input_.erase(0, result.consumed);
				return;
			}
			if (result.status == ParseStatus::Error) {
				/* The server answers the protocol error and closes after the reply. */
				ReplyBuffer out;
				ReplyWriter(out, session_.protocol).error(parser_.error());
				check_reply(out.view(), nullptr);
				closed_ = true;
				return;
			}
			if (!execute(result.request))
				continue; /* asked to run again later: the server parses the same bytes again */
			input_.erase(0, result.consumed);
			requests_++;
			if (session_.close_after_reply)
				closed_ = true;
		}
	}

	/* Runs one request; false when it asked to be run again (and wrote nothing). */
	bool execute(const Request &parsed)
	{
		/* Every argument in its own exact-size allocation: a read past one is a report. */
		std::vector<std::unique_ptr<char[]>> copies;
		std::vector<std::string_view> argv;
		copies.reserve(parsed.argc);
		argv.reserve(parsed.argc);
		for (std::string_view arg : parsed) {
			copies.emplace_back(new char[arg.size()]);
			if (!arg.empty())
				memcpy(copies.back().get(), arg.data(), arg.size());
			argv.emplace_back(copies.back().get(), arg.size());
		}
		Request request{argv.data(), argv.size()};

		const bool was_authenticated = session_.authenticated();
		session_.lock_wait_expired = options_.lock_wait_expired || retries_ > 0;
		ReplyBuffer out;
		if (fresh_processor_per_request_) {
			CommandProcessor fresh(data_.sources());
			fresh.execute(request, session_, out);
		} else {
			processor_.execute(request, session_, out);
		}

		if (data_.db.calls_without_role != 0)
			fail("a data lookup reached the data sources without a role", argv[0]);
		if (session_.retry_later) {
			if (!out.empty())
				fail("a request asked to be retried and wrote a reply", out.view());
			if (++retries_ > kMaxRetries)
				fail("a request asked to be retried forever", argv[0]);
			return false;
		}
		retries_ = 0;

		const CommandSpec *command = resolve(request);
		if (check_reply(out.view(), command) != '-') {
			if (command == nullptr)
				fail("an unknown command answered other than an error", out.view());
			if (command->flags & CMD_UNSUPPORTED)
				fail("an unsupported write answered other than an error", out.view());
			if (!was_authenticated && !(command->flags & CMD_NO_AUTH))
				fail("a command ran without authentication", out.view());
		}
		return true;
	}

	char check_reply(std::string_view reply, const CommandSpec *command)
	{
		if (reply.empty())
			fail("a request wrote no reply");
		ReplyChecker checker(reply, session_.protocol);
		char type = command != nullptr && (command->flags & CMD_PUBSUB) ? checker.check_pubsub() : checker.check_one();
		if (command != nullptr && command->full_name == "info" && type != '-')
			transcript_.append(without_tracking_sizes(reply));
		else
			transcript_.append(reply.data(), reply.size());
		return type;
	}

	Options options_;
	bool fresh_processor_per_request_;
	FakeData data_;
	CommandProcessor processor_{data_.sources()};
	Session session_;
	RequestParser parser_;
	std::string input_;
	std::string transcript_;
	size_t requests_ = 0;
	int retries_ = 0;
	bool closed_ = false;
};

bool same_outcome(const Client &a, const Client &b)
{
	const Session &x = a.session();
	const Session &y = b.session();
	return a.transcript() == b.transcript() && x.protocol == y.protocol && x.name == y.name &&
		   x.lib_name == y.lib_name && x.lib_version == y.lib_version &&
		   x.authenticated() == y.authenticated() &&
		   (!x.authenticated() || (x.role->id == y.role->id && x.role->name == y.role->name)) &&
		   x.close_after_reply == y.close_after_reply &&
		   a.fake().logins.authenticate_calls == b.fake().logins.authenticate_calls &&
		   a.fake().rows.get_rows_calls == b.fake().rows.get_rows_calls;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	Options options;
	options.no_default_role = (data[0] & 1) != 0;
	options.lock_wait_expired = (data[0] & 2) != 0;
	options.pending_logins = (data[0] >> 2) & 3;
	options.answers_in_order = (data[0] & 16) != 0;
	options.replica = (data[0] & 32) != 0;
	std::string_view stream(reinterpret_cast<const char *>(data) + 4, size - 4);

	/* Three split offsets, in order: up to four reads. */
	size_t cuts[5] = {0, 0, 0, 0, stream.size()};
	for (int i = 0; i < 3; i++)
		cuts[i + 1] = size_t(data[i + 1]) * stream.size() / 255;
	std::sort(cuts + 1, cuts + 4);

	Client split(options, false);
	for (int i = 0; i < 4; i++)
		split.receive(stream.substr(cuts[i], cuts[i + 1] - cuts[i]));

	Client whole(options, true);
	whole.receive(stream);

	static const bool trace = getenv("FUZZ_COMMANDS_TRACE") != nullptr;
	if (trace)
		fprintf(stderr, "%s\n", split.transcript().c_str());

	if (!same_outcome(split, whole))
		fail("split reads on one processor and one read on fresh processors differ",
			 split.transcript());
	return 0;
}
