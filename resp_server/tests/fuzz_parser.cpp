/*
 * fuzz_parser.cpp — libFuzzer target for the RESP request parser (request_parser.cpp).
 *
 * Build and run with `make fuzz` (clang, -fsanitize=fuzzer,address,undefined). For each input
 * it checks, beyond "no crash, no out-of-bounds read" (every parse() sees an exact-size heap
 * copy of the unconsumed bytes, so AddressSanitizer catches a read past the end or a view
 * kept from an earlier buffer):
 *   - consumed never exceeds the bytes given, requests are never empty, errors are sticky;
 *   - byte-at-a-time parsing and parsing in pseudo-random pieces give exactly the requests,
 *     the error and the leftover that parsing the whole input gives;
 *   - every request parsed, re-encoded as a multibulk request, parses back to itself.
 *
 * The first input byte picks options (authenticated or not, tiny limits so that limit paths
 * are reached with short inputs), the second seeds the piece sizes; the rest is the stream.
 */
#include "resp_server/tests/parse_harness.h"
#include "resp_server/protocol/request_parser.h"

#include <cstdint>
#include <cstdio>
#include <string>

using namespace local_cache::resp;
using namespace resp_test;

namespace {

[[noreturn]] void fail(const char *what, const ParseOutcome &expected, const ParseOutcome &got)
{
	fprintf(stderr, "fuzz_parser: %s\n  whole: %zu requests, %s '%s', leftover %zu\n"
					"  other: %zu requests, %s '%s', leftover %zu\n",
			what, expected.requests.size(), expected.failed ? "error" : "no error",
			expected.error.c_str(), expected.leftover, got.requests.size(),
			got.failed ? "error" : "no error", got.error.c_str(), got.leftover);
	__builtin_trap();
}

std::string encode_multibulk(const std::vector<std::string> &args)
{
	std::string out = "*" + std::to_string(args.size()) + "\r\n";
	for (const std::string &arg : args)
		out += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
	return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	const uint8_t options_byte = data[0];
	const uint8_t seed = data[1];
	std::string_view input(reinterpret_cast<const char *>(data) + 2, size - 2);

	HarnessOptions options;
	options.authenticated = (options_byte & 1) != 0;
	if (options_byte & 2) {
		options.limits.max_inline_size = 16;
		options.limits.max_multibulk_count = 8;
		options.limits.max_bulk_length = 32;
		options.limits.unauthenticated_max_multibulk_count = 3;
		options.limits.unauthenticated_max_bulk_length = 8;
	}

	ParseOutcome whole = parse_whole(input, options);
	if (!whole.failed && whole.leftover > input.size())
		fail("leftover larger than the input", whole, whole);

	ParseOutcome bytewise = parse_bytewise(input, options);
	if (bytewise != whole)
		fail("byte-at-a-time parsing differs", whole, bytewise);

	uint32_t state = seed * 2654435761u + 1;
	ParseOutcome pieces = parse_in_chunks(input, options, [&state] {
		state = state * 1103515245u + 12345u;
		return size_t((state >> 16) % 23 + 1);
	});
	if (pieces != whole)
		fail("parsing in pieces differs", whole, pieces);

	/* Whatever was understood survives the canonical encoding unchanged. */
	std::string encoded;
	for (const auto &request : whole.requests)
		encoded += encode_multibulk(request);
	HarnessOptions roomy;
	roomy.limits = options.limits;
	roomy.authenticated = true;
	ParseOutcome round_trip = parse_whole(encoded, roomy);
	if (round_trip.failed || round_trip.requests != whole.requests || round_trip.leftover != 0)
		fail("a parsed request does not parse back from its encoding", whole, round_trip);
	return 0;
}
