/*
 * parse_harness.h — drives a RequestParser the way the server will (append what arrives, parse
 * until it needs more, drop consumed bytes), feeding an input in pieces of chosen sizes.
 * Shared by the unit tests and the fuzzer, which both compare split parsing with whole parsing.
 */
#pragma once

#include "resp_server/protocol/request_parser.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace resp_test {

struct ParseOutcome {
	std::vector<std::vector<std::string>> requests;
	bool failed = false;
	std::string error;
	size_t leftover = 0; /* unconsumed bytes of an incomplete request at the end */

	bool operator==(const ParseOutcome &other) const
	{
		return requests == other.requests && failed == other.failed && error == other.error &&
			   (failed || leftover == other.leftover);
	}
	bool operator!=(const ParseOutcome &other) const { return !(*this == other); }
};

/* A contract violation the harness saw (the fuzzer turns it into a crash). */
struct HarnessViolation : std::logic_error {
	using std::logic_error::logic_error;
};

struct HarnessOptions {
	local_cache::resp::ParserLimits limits;
	bool authenticated = true;
	/* Hand every parse() an exact-size heap copy of the unconsumed bytes, so that a read past
	 * the end or a view kept from an earlier buffer shows up under AddressSanitizer. */
	bool fresh_copy_per_call = true;
};

/*
 * Feed `input` in pieces: next_chunk() says how many bytes arrive next (at least one is fed).
 * After the last piece the outcome records what was parsed and what is left.
 */
inline ParseOutcome parse_in_chunks(std::string_view input, const HarnessOptions &options,
									const std::function<size_t()> &next_chunk)
{
	using namespace local_cache::resp;
	RequestParser parser(options.limits);
	parser.set_authenticated(options.authenticated);
	ParseOutcome outcome;
	std::string pending;
	size_t fed = 0;
	for (;;) {
		for (;;) {
			std::unique_ptr<char[]> copy;
			const char *data = pending.data();
			if (options.fresh_copy_per_call) {
				copy.reset(new char[pending.size()]);
				if (!pending.empty())
					memcpy(copy.get(), pending.data(), pending.size());
				data = copy.get();
			}
			ParseResult result = parser.parse(data, pending.size());
			if (result.consumed > pending.size())
				throw HarnessViolation("consumed more than the input");
			if (result.status == ParseStatus::Error) {
				if (parser.error().empty() || !parser.failed())
					throw HarnessViolation("an error without text or not sticky");
				ParseResult again = parser.parse(data, pending.size());
				if (again.status != ParseStatus::Error)
					throw HarnessViolation("the error did not stick");
				outcome.failed = true;
				outcome.error = parser.error();
				return outcome;
			}
			if (result.status == ParseStatus::NeedMore) {
				pending.erase(0, result.consumed);
				break;
			}
			if (result.request.argc == 0 || result.consumed == 0)
				throw HarnessViolation("an empty request");
			std::vector<std::string> args;
			for (std::string_view arg : result.request)
				args.emplace_back(arg);
			outcome.requests.push_back(std::move(args));
			pending.erase(0, result.consumed);
		}
		if (fed == input.size())
			break;
		size_t piece = std::min(std::max<size_t>(next_chunk(), 1), input.size() - fed);
		pending.append(input.substr(fed, piece));
		fed += piece;
	}
	outcome.leftover = pending.size();
	return outcome;
}

inline ParseOutcome parse_whole(std::string_view input, const HarnessOptions &options = {})
{
	return parse_in_chunks(input, options, [&] { return input.size(); });
}

inline ParseOutcome parse_bytewise(std::string_view input, const HarnessOptions &options = {})
{
	return parse_in_chunks(input, options, [] { return size_t(1); });
}

} // namespace resp_test
