/*
 * reply_test.cpp — Boost.Test cases of the reply encodings (resp_server/protocol/reply.cpp), byte for
 * byte in RESP2 and RESP3, and of the output buffer the server writes once per batch.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/protocol/reply.h"
#include "tools/lib/resp_reply.h"

#include <cmath>
#include <limits>
#include <string>

using namespace local_cache::resp;
using namespace std::string_literals;

namespace {

/* Encode with `write` in the given protocol and return the bytes. */
template <typename Write>
std::string encode(int protocol, Write write)
{
	ReplyBuffer buffer;
	ReplyWriter writer(buffer, protocol);
	write(writer);
	return std::string(buffer.view());
}

template <typename Write>
void expect_encoding(Write write, const std::string &resp2, const std::string &resp3)
{
	BOOST_TEST(encode(2, write) == resp2);
	BOOST_TEST(encode(3, write) == resp3);
	/* Each encoding is one well-formed value. */
	BOOST_CHECK_NO_THROW(tooling::read_one(resp2));
	BOOST_CHECK_NO_THROW(tooling::read_one(resp3));
}

} // namespace

BOOST_AUTO_TEST_SUITE(reply)

BOOST_AUTO_TEST_CASE(simple_strings_and_errors)
{
	expect_encoding([](ReplyWriter &w) { w.simple_string("PONG"); }, "+PONG\r\n", "+PONG\r\n");
	expect_encoding([](ReplyWriter &w) { w.ok(); }, "+OK\r\n", "+OK\r\n");
	expect_encoding([](ReplyWriter &w) { w.error("unknown command"); }, "-ERR unknown command\r\n",
					"-ERR unknown command\r\n");
	expect_encoding([](ReplyWriter &w) { w.error_with_code("NOAUTH", "Authentication required."); },
					"-NOAUTH Authentication required.\r\n", "-NOAUTH Authentication required.\r\n");
	/* Client text inside a line cannot break the framing. */
	expect_encoding([](ReplyWriter &w) { w.error("a\r\nb\rc\nd"); }, "-ERR a  b c d\r\n",
					"-ERR a  b c d\r\n");
	expect_encoding([](ReplyWriter &w) { w.simple_string("x\ny"); }, "+x y\r\n", "+x y\r\n");
	expect_encoding([](ReplyWriter &w) { w.simple_string(""); }, "+\r\n", "+\r\n");
}

BOOST_AUTO_TEST_CASE(integers)
{
	expect_encoding([](ReplyWriter &w) { w.integer(0); }, ":0\r\n", ":0\r\n");
	expect_encoding([](ReplyWriter &w) { w.integer(-1); }, ":-1\r\n", ":-1\r\n");
	expect_encoding([](ReplyWriter &w) { w.integer(INT64_MAX); }, ":9223372036854775807\r\n",
					":9223372036854775807\r\n");
	expect_encoding([](ReplyWriter &w) { w.integer(INT64_MIN); }, ":-9223372036854775808\r\n",
					":-9223372036854775808\r\n");
}

BOOST_AUTO_TEST_CASE(bulk_strings_and_nulls)
{
	expect_encoding([](ReplyWriter &w) { w.bulk("{\"id\":1}"); }, "$8\r\n{\"id\":1}\r\n",
					"$8\r\n{\"id\":1}\r\n");
	expect_encoding([](ReplyWriter &w) { w.bulk(""); }, "$0\r\n\r\n", "$0\r\n\r\n");
	expect_encoding([](ReplyWriter &w) { w.bulk("a\r\n\0b"s); }, "$5\r\na\r\n\0b\r\n"s,
					"$5\r\na\r\n\0b\r\n"s);
	expect_encoding([](ReplyWriter &w) { w.null(); }, "$-1\r\n", "_\r\n");
	expect_encoding([](ReplyWriter &w) { w.null_array(); }, "*-1\r\n", "_\r\n");
	std::string big(100000, 'x');
	BOOST_TEST(encode(2, [&](ReplyWriter &w) { w.bulk(big); }) == "$100000\r\n" + big + "\r\n");
}

/* What a cache hit writes under a shard lock: only into room reserved before, never growing. */
BOOST_AUTO_TEST_CASE(bulk_and_null_in_reserved_room_only)
{
	ReplyBuffer buffer;
	ReplyWriter writer(buffer, 2);
	BOOST_TEST(!writer.bulk_in_room("{}"));
	BOOST_TEST(!writer.null_in_room());
	BOOST_TEST(buffer.size() == 0u);
	buffer.reserve(ReplyWriter::in_room_size(2) + ReplyWriter::in_room_size(0));
	size_t capacity = buffer.capacity();
	BOOST_TEST(writer.bulk_in_room("{}"));
	BOOST_TEST(writer.null_in_room());
	BOOST_TEST(std::string(buffer.view()) == "$2\r\n{}\r\n$-1\r\n");
	BOOST_TEST(buffer.capacity() == capacity);
	std::string big(capacity, 'x');
	BOOST_TEST(!writer.bulk_in_room(big));
	BOOST_TEST(std::string(buffer.view()) == "$2\r\n{}\r\n$-1\r\n");
	BOOST_TEST(buffer.capacity() == capacity);
}

BOOST_AUTO_TEST_CASE(aggregates)
{
	expect_encoding(
		[](ReplyWriter &w) {
			w.array(2);
			w.bulk("a");
			w.null();
		},
		"*2\r\n$1\r\na\r\n$-1\r\n", "*2\r\n$1\r\na\r\n_\r\n");
	expect_encoding([](ReplyWriter &w) { w.array(0); }, "*0\r\n", "*0\r\n");
	expect_encoding(
		[](ReplyWriter &w) {
			w.map(2);
			w.bulk("id");
			w.bulk("1");
			w.bulk("value");
			w.bulk("one");
		},
		"*4\r\n$2\r\nid\r\n$1\r\n1\r\n$5\r\nvalue\r\n$3\r\none\r\n",
		"%2\r\n$2\r\nid\r\n$1\r\n1\r\n$5\r\nvalue\r\n$3\r\none\r\n");
	expect_encoding([](ReplyWriter &w) { w.map(0); }, "*0\r\n", "%0\r\n");
	expect_encoding(
		[](ReplyWriter &w) {
			w.set(1);
			w.simple_string("readonly");
		},
		"*1\r\n+readonly\r\n", "~1\r\n+readonly\r\n");
}

BOOST_AUTO_TEST_CASE(booleans_doubles_verbatim)
{
	expect_encoding([](ReplyWriter &w) { w.boolean(true); }, ":1\r\n", "#t\r\n");
	expect_encoding([](ReplyWriter &w) { w.boolean(false); }, ":0\r\n", "#f\r\n");
	expect_encoding([](ReplyWriter &w) { w.double_value(1.5); }, "$3\r\n1.5\r\n", ",1.5\r\n");
	expect_encoding([](ReplyWriter &w) { w.double_value(0.1); }, "$3\r\n0.1\r\n", ",0.1\r\n");
	expect_encoding([](ReplyWriter &w) { w.double_value(-3); }, "$2\r\n-3\r\n", ",-3\r\n");
	expect_encoding([](ReplyWriter &w) { w.double_value(std::numeric_limits<double>::infinity()); },
					"$3\r\ninf\r\n", ",inf\r\n");
	expect_encoding([](ReplyWriter &w) { w.double_value(-std::numeric_limits<double>::infinity()); },
					"$4\r\n-inf\r\n", ",-inf\r\n");
	expect_encoding([](ReplyWriter &w) { w.double_value(std::nan("")); }, "$3\r\nnan\r\n",
					",nan\r\n");
	expect_encoding([](ReplyWriter &w) { w.verbatim("a:1\r\n"); }, "$5\r\na:1\r\n\r\n",
					"=9\r\ntxt:a:1\r\n\r\n");
	expect_encoding([](ReplyWriter &w) { w.verbatim("# T", "mkd"); }, "$3\r\n# T\r\n",
					"=7\r\nmkd:# T\r\n");
	/* The shortest text that reads back as the same double. */
	std::string third = encode(3, [](ReplyWriter &w) { w.double_value(1.0 / 3); });
	BOOST_TEST(std::stod(third.substr(1)) == 1.0 / 3);
}

BOOST_AUTO_TEST_CASE(protocol_switch_mid_stream)
{
	ReplyBuffer buffer;
	ReplyWriter writer(buffer, 2);
	writer.null();
	writer.set_protocol(3);
	writer.null();
	BOOST_TEST(std::string(buffer.view()) == "$-1\r\n_\r\n");
	BOOST_TEST(writer.protocol() == 3);
}

BOOST_AUTO_TEST_CASE(buffer_batches_replies)
{
	ReplyBuffer buffer;
	ReplyWriter writer(buffer, 2);
	for (int i = 0; i < 64; i++)
		writer.bulk("{\"id\":1,\"value\":\"one\"}");
	/* One contiguous block for one write, and its size for the output-buffer limit. */
	std::string expected;
	for (int i = 0; i < 64; i++)
		expected += "$22\r\n{\"id\":1,\"value\":\"one\"}\r\n";
	BOOST_TEST(std::string(buffer.data(), buffer.size()) == expected);
	BOOST_TEST(buffer.size() == expected.size());

	/* Once grown, appending within the capacity does not move the block. */
	size_t capacity = buffer.capacity();
	const char *block = buffer.data();
	buffer.clear();
	BOOST_TEST(buffer.empty());
	while (buffer.size() + 32 <= capacity)
		writer.integer(123456789);
	BOOST_TEST(static_cast<const void *>(buffer.data()) == static_cast<const void *>(block));
	BOOST_TEST(buffer.capacity() == capacity);
}

BOOST_AUTO_TEST_CASE(buffer_partial_writes_and_truncation)
{
	ReplyBuffer buffer;
	buffer.append("+OK\r\n:1\r\n");
	buffer.consume(5);
	BOOST_TEST(std::string(buffer.view()) == ":1\r\n");
	buffer.consume(100);
	BOOST_TEST(buffer.empty());

	buffer.append("+OK\r\n");
	size_t mark = buffer.size();
	buffer.append("*2\r\n$1\r\na\r\n");
	buffer.truncate(mark);
	BOOST_TEST(std::string(buffer.view()) == "+OK\r\n");
	buffer.truncate(1000);
	BOOST_TEST(std::string(buffer.view()) == "+OK\r\n");

	ReplyBuffer other;
	other.append("in flight");
	buffer.swap(other);
	BOOST_TEST(std::string(buffer.view()) == "in flight");
	BOOST_TEST(std::string(other.view()) == "+OK\r\n");

	ReplyBuffer moved(std::move(buffer));
	BOOST_TEST(std::string(moved.view()) == "in flight");
	BOOST_TEST(buffer.empty());
	moved.release();
	BOOST_TEST(moved.capacity() == 0u);
	moved.append('x');
	BOOST_TEST(std::string(moved.view()) == "x");
}

BOOST_AUTO_TEST_SUITE_END()
