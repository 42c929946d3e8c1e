/*
 * request_parser_test.cpp — Boost.Test cases of the request parser (resp_server/protocol/request_parser.cpp):
 * multibulk and inline requests, Redis's quoting rules, every limit and error text, pipelines,
 * hostile lengths, and for every input, that splitting it anywhere (byte at a time, and at
 * every single split point) gives exactly what parsing it whole gives.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/tests/parse_harness.h"
#include "resp_server/protocol/request_parser.h"

#include <ostream>
#include <random>
#include <string>
#include <vector>

using namespace local_cache::resp;
using namespace std::string_literals;
using resp_test::HarnessOptions;
using resp_test::ParseOutcome;
using resp_test::parse_bytewise;
using resp_test::parse_in_chunks;
using resp_test::parse_whole;

namespace resp_test {

std::ostream &operator<<(std::ostream &os, const ParseOutcome &outcome)
{
	os << "{requests:";
	for (const auto &request : outcome.requests) {
		os << " [";
		for (size_t i = 0; i < request.size(); i++)
			os << (i ? " " : "") << '"' << request[i] << '"';
		os << "]";
	}
	if (outcome.failed)
		os << " error: " << outcome.error;
	else
		os << " leftover: " << outcome.leftover;
	return os << "}";
}

} // namespace resp_test

namespace {

using Args = std::vector<std::string>;
using Requests = std::vector<Args>;

/* Parse whole, byte at a time and split at every point; all must agree. Returns the outcome. */
ParseOutcome parse_every_way(const std::string &input, const HarnessOptions &options = {})
{
	ParseOutcome whole = parse_whole(input, options);
	ParseOutcome bytewise = parse_bytewise(input, options);
	BOOST_TEST(bytewise == whole, "byte-at-a-time differs for input of " << input.size() << " bytes");
	if (input.size() <= 512) {
		for (size_t split = 1; split < input.size(); split++) {
			bool first = true;
			ParseOutcome two_reads = parse_in_chunks(input, options, [&] {
				size_t piece = first ? split : input.size();
				first = false;
				return piece;
			});
			BOOST_TEST(two_reads == whole, "split at " << split << " differs");
		}
	}
	return whole;
}

ParseOutcome expect_requests(const std::string &input, const Requests &expected, size_t leftover = 0,
							 const HarnessOptions &options = {})
{
	ParseOutcome outcome = parse_every_way(input, options);
	BOOST_TEST(!outcome.failed, "unexpected error: " << outcome.error);
	BOOST_TEST(outcome.requests == expected, "got " << outcome);
	BOOST_TEST(outcome.leftover == leftover);
	return outcome;
}

void expect_error(const std::string &input, const std::string &error, const Requests &before = {},
				  const HarnessOptions &options = {})
{
	ParseOutcome outcome = parse_every_way(input, options);
	BOOST_TEST(outcome.failed, "expected an error, got " << outcome);
	BOOST_TEST(outcome.error == error);
	BOOST_TEST(outcome.requests == before, "got " << outcome);
}

std::string multibulk(const Args &args)
{
	std::string out = "*" + std::to_string(args.size()) + "\r\n";
	for (const std::string &arg : args)
		out += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
	return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(parser)

BOOST_AUTO_TEST_CASE(canonical_int64)
{
	struct Case {
		const char *text;
		bool ok;
		int64_t value;
	};
	const Case cases[] = {
		{"0", true, 0},
		{"1", true, 1},
		{"-1", true, -1},
		{"42", true, 42},
		{"9223372036854775807", true, INT64_MAX},
		{"-9223372036854775808", true, INT64_MIN},
		{"9223372036854775808", false, 0},
		{"-9223372036854775809", false, 0},
		{"18446744073709551615", false, 0},
		{"18446744073709551616", false, 0},
		{"99999999999999999999", false, 0},
		{"123456789012345678901", false, 0},
		{"", false, 0},
		{"-", false, 0},
		{"-0", false, 0},
		{"00", false, 0},
		{"01", false, 0},
		{"-01", false, 0},
		{"+1", false, 0},
		{" 1", false, 0},
		{"1 ", false, 0},
		{"1e3", false, 0},
		{"0x10", false, 0},
		{"1.0", false, 0},
		{"--1", false, 0},
	};
	for (const Case &c : cases) {
		int64_t value = 12345;
		bool ok = parse_canonical_int64(c.text, &value);
		BOOST_TEST(ok == c.ok, "'" << c.text << "'");
		if (c.ok)
			BOOST_TEST(value == c.value, "'" << c.text << "'");
	}
	int64_t value = 0;
	BOOST_TEST(!parse_canonical_int64(std::string_view("1\0", 2), &value));
}

BOOST_AUTO_TEST_CASE(multibulk_requests)
{
	expect_requests("*1\r\n$4\r\nPING\r\n", {{"PING"}});
	expect_requests("*3\r\n$3\r\nSET\r\n$1\r\na\r\n$0\r\n\r\n", {{"SET", "a", ""}});
	/* Arguments are binary: CR, LF, NUL and '*' inside a bulk are data. */
	expect_requests(multibulk({"GET", "a\r\nb\0*$"s}), {{"GET", "a\r\nb\0*$"s}});
	expect_requests(multibulk({"MGET", "items:1", "items:2", "items:3"}),
					{{"MGET", "items:1", "items:2", "items:3"}});
}

BOOST_AUTO_TEST_CASE(multibulk_views_point_into_the_input)
{
	std::string input = multibulk({"MGET", "items:1", "items:22"});
	RequestParser parser;
	ParseResult result = parser.parse(input.data(), input.size());
	BOOST_TEST(int(result.status) == int(ParseStatus::Request));
	BOOST_TEST(result.consumed == input.size());
	BOOST_REQUIRE(result.request.argc == 3);
	for (std::string_view arg : result.request) {
		auto address = [](const char *p) { return reinterpret_cast<uintptr_t>(p); };
		BOOST_TEST(address(arg.data()) >= address(input.data()));
		BOOST_TEST(address(arg.data() + arg.size()) <= address(input.data() + input.size()));
	}
	BOOST_TEST(result.request[2] == "items:22");
}

BOOST_AUTO_TEST_CASE(empty_multibulk_is_ignored)
{
	expect_requests("*0\r\n", {});
	expect_requests("*-1\r\n", {});
	expect_requests("*-5\r\n", {});
	expect_requests("*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n*0\r\n", {{"PING"}});

	/* The bytes of skipped empty requests are given back even when nothing else is ready. */
	RequestParser parser;
	std::string input = "*0\r\n*1\r\n$4\r\nPI";
	ParseResult result = parser.parse(input.data(), input.size());
	BOOST_TEST(int(result.status) == int(ParseStatus::NeedMore));
	BOOST_TEST(result.consumed == 4u);
}

BOOST_AUTO_TEST_CASE(inline_requests)
{
	expect_requests("PING\r\n", {{"PING"}});
	expect_requests("PING\n", {{"PING"}});
	expect_requests("  GET \t  items:1  \r\n", {{"GET", "items:1"}});
	expect_requests("a\vb c\r\n", {{"a\vb", "c"}}); /* \v separates only between arguments */
	expect_requests("GET a\rb\r\n", {{"GET", "a", "b"}});
	/* Empty and blank lines are no requests. */
	expect_requests("\r\n", {});
	expect_requests("\n", {});
	expect_requests("   \t \r\n\n\r\nPING\r\n", {{"PING"}});
	/* Redis reads the line as a C string: a NUL ends it. */
	expect_requests("GET a\0b c\r\nPING\r\n"s, {{"GET", "a"}, {"PING"}});
	expect_requests("\0PING\r\n"s, {});
	/* Incomplete lines wait. */
	expect_requests("PING", {}, 4);
	expect_requests("PING\r", {}, 5);
}

BOOST_AUTO_TEST_CASE(inline_quotes)
{
	expect_requests("SET \"a b\" 'c d'\r\n", {{"SET", "a b", "c d"}});
	expect_requests("ECHO \"\\x41\\x6a\\n\\r\\t\\b\\a\\\\\\\"\"\r\n",
					{{"ECHO", "Aj\n\r\t\b\a\\\""}});
	expect_requests("ECHO \"\\x00\"\r\n", {{"ECHO", "\0"s}});
	expect_requests("ECHO \"\\xZZ\"\r\n", {{"ECHO", "xZZ"}});
	expect_requests("ECHO \"\\x4\"\r\n", {{"ECHO", "x4"}});
	expect_requests("ECHO \"\\q\"\r\n", {{"ECHO", "q"}});
	expect_requests("ECHO \"\"\r\n", {{"ECHO", ""}});
	expect_requests("ECHO ''\r\n", {{"ECHO", ""}});
	expect_requests("ECHO 'it\\'s'\r\n", {{"ECHO", "it's"}});
	/* In single quotes only \' is an escape. */
	expect_requests("ECHO 'a\\nb\\\\c'\r\n", {{"ECHO", "a\\nb\\\\c"}});
	/* A quote may open inside an argument; the closing one must end it. */
	expect_requests("ECHO foo\"bar baz\"\r\n", {{"ECHO", "foobar baz"}});
	expect_requests("ECHO \"a\"\t'b'\r\n", {{"ECHO", "a", "b"}});
	expect_requests("ECHO \"a\"\r\n", {{"ECHO", "a"}});
	expect_requests("ECHO \"a\"\x0b\"b\"\r\n", {{"ECHO", "a", "b"}});
}

BOOST_AUTO_TEST_CASE(unbalanced_quotes)
{
	const std::string error = "Protocol error: unbalanced quotes in request";
	expect_error("ECHO \"abc\r\n", error);
	expect_error("ECHO 'abc\r\n", error);
	expect_error("ECHO \"abc\"def\r\n", error);
	expect_error("ECHO 'a'b\r\n", error);
	expect_error("ECHO \"abc\\\"\r\n", error);
	expect_error("ECHO \"ab\\\r\n", error);
	/* \' escapes the quote, so a backslash cannot end a single-quoted argument (as in Redis). */
	expect_error("ECHO 'ab\\'\r\n", error);
	expect_error("ECHO \"a\0b\"\r\n"s, error);
	expect_error("PING\r\nECHO \"x\r\nPING\r\n", error, {{"PING"}});
}

BOOST_AUTO_TEST_CASE(inline_size_limit)
{
	const std::string error = "Protocol error: too big inline request";
	HarnessOptions fast;
	fast.fresh_copy_per_call = false; /* 64 KiB byte by byte: skip the per-call copies */

	std::string longest(64 * 1024, 'a');
	ParseOutcome ok = parse_bytewise(longest + "\n", fast);
	BOOST_TEST(!ok.failed);
	BOOST_TEST(ok.requests.size() == 1u);
	BOOST_TEST(parse_whole(longest + "\n") == ok);

	/* One byte more is refused whether the newline has arrived or not, so the outcome does
	 * not depend on how the bytes were split. */
	std::string too_long(64 * 1024 + 1, 'a');
	for (const std::string &input : {too_long, too_long + "\n", too_long + "\r\n"}) {
		ParseOutcome whole = parse_whole(input);
		BOOST_TEST(whole.failed);
		BOOST_TEST(whole.error == error);
		BOOST_TEST(parse_bytewise(input, fast) == whole);
	}

	HarnessOptions small;
	small.limits.max_inline_size = 8;
	expect_requests("12345678\n", {{"12345678"}}, 0, small);
	expect_requests("1234567\r\n", {{"1234567"}}, 0, small);
	expect_error("123456789\n", error, {}, small);
	expect_error("123456789", error, {}, small);
	expect_error("PING\n123456789", error, {{"PING"}}, small);
}

BOOST_AUTO_TEST_CASE(invalid_multibulk_length)
{
	const std::string error = "Protocol error: invalid multibulk length";
	for (const char *input : {"*abc\r\n", "*\r\n", "*01\r\n", "*-0\r\n", "*+1\r\n", "* 1\r\n",
							  "*1 \r\n", "*2147483648\r\n", "*1048577\r\n",
							  "*99999999999999999999\r\n", "*-99999999999999999999\r\n",
							  "*9223372036854775808\r\n", "*1\rX", "*1\r\r\n"}) {
		expect_error(input, error);
	}
	/* The limit itself is accepted: the request then waits for its arguments. */
	expect_requests("*1048576\r\n", {}, 10);
	HarnessOptions small;
	small.limits.max_multibulk_count = 3;
	expect_error(multibulk({"a", "b", "c", "d"}), error, {}, small);
	expect_requests(multibulk({"a", "b", "c"}), {{"a", "b", "c"}}, 0, small);
}

BOOST_AUTO_TEST_CASE(invalid_bulk_length)
{
	const std::string error = "Protocol error: invalid bulk length";
	for (const char *input : {"*1\r\n$-5\r\n", "*1\r\n$-1\r\n", "*1\r\n$abc\r\n", "*1\r\n$\r\n",
							  "*1\r\n$99999999999999999999\r\n", "*1\r\n$01\r\n", "*1\r\n$-0\r\n",
							  "*1\r\n$+3\r\n", "*1\r\n$3 \r\n", "*1\r\n$536870913\r\n",
							  "*1\r\n$9223372036854775807\r\n", "*1\r\n$3\rX",
							  "*2\r\n$3\r\nGET\r\n$x\r\n"}) {
		expect_error(input, error);
	}
	/* 512 MiB exactly is accepted, and the parser says how much it needs. */
	std::string header = "*1\r\n$536870912\r\n";
	expect_requests(header, {}, header.size());
	RequestParser parser;
	BOOST_TEST(int(parser.parse(header.data(), header.size()).status) == int(ParseStatus::NeedMore));
	BOOST_TEST(parser.bytes_needed() == header.size() + 536870912u + 2u);

	HarnessOptions small;
	small.limits.max_bulk_length = 4;
	expect_requests(multibulk({"abcd"}), {{"abcd"}}, 0, small);
	expect_error(multibulk({"abcde"}), error, {}, small);
}

BOOST_AUTO_TEST_CASE(expected_dollar)
{
	expect_error("*1\r\nX3\r\nfoo\r\n", "Protocol error: expected '$', got 'X'");
	expect_error("*2\r\n$3\r\nGET\r\n:1\r\n", "Protocol error: expected '$', got ':'");
	expect_error("*1\r\n\r\n", "Protocol error: expected '$', got '\r'");
	expect_error("*1\r\n*1\r\n", "Protocol error: expected '$', got '*'");
}

BOOST_AUTO_TEST_CASE(bulk_not_followed_by_crlf)
{
	const std::string error = "Protocol error: bulk not followed by CRLF";
	expect_error("*1\r\n$3\r\nfooXY", error);
	expect_error("*1\r\n$3\r\nfoo\rX", error);
	expect_error("*1\r\n$3\r\nfoo\n\r", error);
	expect_error("*1\r\n$3\r\nfoobar\r\n", error);
	expect_error("*1\r\n$4\r\nPING\r\n*1\r\n$2\r\nabc\r\n", error, {{"PING"}});
	/* Waiting for the CRLF is not an error. */
	expect_requests("*1\r\n$3\r\nfoo", {}, 11);
	expect_requests("*1\r\n$3\r\nfoo\r", {}, 12);
}

BOOST_AUTO_TEST_CASE(too_big_header_lines)
{
	HarnessOptions fast;
	fast.fresh_copy_per_call = false;
	std::string digits(70000, '1');
	for (const std::string &input : {"*" + digits, "*" + digits + "\r\n"}) {
		ParseOutcome whole = parse_whole(input);
		BOOST_TEST(whole.error == "Protocol error: too big mbulk count string");
		BOOST_TEST(parse_bytewise(input, fast) == whole);
	}
	for (const std::string &input : {"*1\r\n$" + digits, "*1\r\n$" + digits + "\r\n"}) {
		ParseOutcome whole = parse_whole(input);
		BOOST_TEST(whole.error == "Protocol error: too big bulk count string");
		BOOST_TEST(parse_bytewise(input, fast) == whole);
	}
	HarnessOptions small;
	small.limits.max_inline_size = 4;
	expect_requests("*100\r\n", {}, 6, small); /* "*100" is 4 bytes: fine */
	expect_error("*1000\r\n", "Protocol error: too big mbulk count string", {}, small);
	expect_error("*1\r\n$1000\r\n", "Protocol error: too big bulk count string", {}, small);
}

BOOST_AUTO_TEST_CASE(hostile_lengths)
{
	expect_error("*2147483648\r\n", "Protocol error: invalid multibulk length");
	expect_error("*1\r\n$-5\r\n", "Protocol error: invalid bulk length");
	expect_error("*1\r\n$99999999999999999999\r\n", "Protocol error: invalid bulk length");
	/* A big announced count costs nothing until its bytes arrive. */
	RequestParser parser;
	std::string input = "*1048576\r\n";
	BOOST_TEST(int(parser.parse(input.data(), input.size()).status) == int(ParseStatus::NeedMore));
	BOOST_TEST(parser.bytes_needed() == 0u);
}

BOOST_AUTO_TEST_CASE(unauthenticated_limits)
{
	HarnessOptions anonymous;
	anonymous.authenticated = false;
	Args ten(10, "x");
	expect_requests(multibulk(ten), {ten}, 0, anonymous);
	Args eleven(11, "x");
	expect_error(multibulk(eleven), "Protocol error: unauthenticated multibulk length", {}, anonymous);
	std::string big(16385, 'v');
	expect_requests(multibulk({"AUTH", std::string(16384, 'v')}), {{"AUTH", std::string(16384, 'v')}},
					0, anonymous);
	expect_error(multibulk({"AUTH", big}), "Protocol error: unauthenticated bulk length", {},
				 anonymous);
	/* Authenticated connections get the ordinary limits. */
	expect_requests(multibulk(eleven), {eleven});
}

BOOST_AUTO_TEST_CASE(errors_are_sticky)
{
	RequestParser parser;
	std::string bad = "*x\r\n";
	BOOST_TEST(int(parser.parse(bad.data(), bad.size()).status) == int(ParseStatus::Error));
	BOOST_TEST(parser.failed());
	std::string good = "PING\r\n";
	ParseResult result = parser.parse(good.data(), good.size());
	BOOST_TEST(int(result.status) == int(ParseStatus::Error));
	BOOST_TEST(result.consumed == 0u);
	BOOST_TEST(parser.error() == "Protocol error: invalid multibulk length");
}

BOOST_AUTO_TEST_CASE(buffer_shrinking_is_refused)
{
	RequestParser parser;
	std::string partial = "*2\r\n$3\r\nGET\r\n$5\r\nit";
	BOOST_TEST(int(parser.parse(partial.data(), partial.size()).status) == int(ParseStatus::NeedMore));
	ParseResult result = parser.parse(partial.data(), 3);
	BOOST_TEST(int(result.status) == int(ParseStatus::Error));
}

BOOST_AUTO_TEST_CASE(pipelines)
{
	std::string input;
	Requests expected;
	std::mt19937 random(7);
	for (int i = 0; i < 1000; i++) {
		std::string key = "items:" + std::to_string(random() % 100000);
		switch (i % 4) {
		case 0:
			input += multibulk({"GET", key});
			expected.push_back({"GET", key});
			break;
		case 1:
			input += "GET " + key + "\r\n";
			expected.push_back({"GET", key});
			break;
		case 2:
			input += multibulk({"MGET", key, key + "0", ""});
			expected.push_back({"MGET", key, key + "0", ""});
			break;
		default:
			input += "*0\r\n\r\nECHO \"" + key + "\\n\"\n";
			expected.push_back({"ECHO", key + "\n"});
			break;
		}
	}
	ParseOutcome whole = parse_whole(input);
	BOOST_TEST(!whole.failed);
	BOOST_TEST(whole.requests == expected);
	BOOST_TEST(whole.leftover == 0u);
	BOOST_TEST(parse_bytewise(input) == whole);
	for (int round = 0; round < 20; round++) {
		std::mt19937 sizes(round);
		BOOST_TEST(parse_in_chunks(input, {}, [&] { return size_t(sizes() % 97 + 1); }) == whole);
	}
}

BOOST_AUTO_TEST_CASE(query_buffer_limit)
{
	ParserLimits limits;
	limits.max_query_buffer = 100;
	RequestParser parser(limits);
	BOOST_TEST(!parser.query_buffer_exceeded(100));
	BOOST_TEST(parser.query_buffer_exceeded(101));
	BOOST_TEST(RequestParser().query_buffer_exceeded((size_t(1) << 30) + 1));
	BOOST_TEST(!RequestParser().query_buffer_exceeded(size_t(1) << 30));
}

/* Every input used above, plus mutations, split at random points: the same outcome. */
BOOST_AUTO_TEST_CASE(random_splits_of_random_inputs)
{
	const std::string pieces[] = {"*",    "$",    "\r\n", "\r",  "\n",    "1",     "2",  "0",
								  "-1",   "GET",  " ",    "\"",  "'",     "\\",    "x4", "A",
								  "*1\r\n$4\r\nPING\r\n", "PING\r\n", "*0\r\n", "\\x41", "$3\r\nabc\r\n"};
	std::mt19937 random(12345);
	for (int round = 0; round < 3000; round++) {
		std::string input;
		size_t parts = random() % 12 + 1;
		for (size_t i = 0; i < parts; i++)
			input += pieces[random() % (sizeof(pieces) / sizeof(pieces[0]))];
		HarnessOptions options;
		options.authenticated = random() % 4 != 0;
		ParseOutcome whole = parse_whole(input, options);
		ParseOutcome bytewise = parse_bytewise(input, options);
		BOOST_TEST(bytewise == whole, "input: " << input);
		std::mt19937 sizes(round);
		BOOST_TEST(parse_in_chunks(input, options, [&] { return size_t(sizes() % 5 + 1); }) == whole);
	}
}

BOOST_AUTO_TEST_SUITE_END()
