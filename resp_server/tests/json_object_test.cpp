/*
 * json_object_test.cpp — Boost.Test cases of read_plain_object (resp_server/commands/json_object.cpp):
 * what it reads, and that it leaves to PostgreSQL's parser every text it does not plainly read,
 * each invalid one included; and, on many texts made at random, that what it reads a strict JSON
 * parser (RapidJSON) reads as the same object.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/commands/json_object.h"

#include <rapidjson/document.h>

#include <random>
#include <string>
#include <vector>

using namespace local_cache::resp;

namespace {

/* "name=scalar" per member ("name" alone for true/false/object, "name=null" for null), joined by
 * '|'; "(PostgreSQL)" when the text is left to PostgreSQL's parser. */
std::string read(std::string_view text, size_t capacity = 16)
{
	std::vector<JsonMember> members(capacity);
	size_t count = 99;
	if (!read_plain_object(text, members.data(), capacity, &count))
		return "(PostgreSQL)";
	std::string out;
	for (size_t i = 0; i < count; i++) {
		out += i > 0 ? "|" : "";
		out += std::string(members[i].name);
		if (members[i].has_scalar)
			out += "=" + std::string(members[i].scalar);
		else if (members[i].is_null)
			out += "=null";
	}
	return count == 0 ? "{}" : out;
}

/* A plain object made at random (names, strings, numbers, literals and whitespace of JSON's own),
 * then, half the time, one to three bytes replaced, inserted or removed. */
std::string random_text(std::mt19937 &random, bool *mutated)
{
	static const char *const names[] = {"\"id\"", "\"v\"", "\"\"", "\"caf\xc3\xa9\"", "\"a b\""};
	static const char *const values[] = {"\"x\"", "\"\"", "\"1\"", "\"a b\"", "0", "-0", "7", "-12.5", "1e5", "2E-3",
										 "0.25e+10", "true", "false", "null"};
	static const char *const spaces[] = {"", "", " ", "\t", "\n", "\r", "  "};
	static const char bytes[] = "{}[]\":, \t\n\\abe0129-+.Eflnrstux\x01\x7f\xc3";
	auto pick = [&](auto &options) { return options[random() % (sizeof(options) / sizeof(options[0]))]; };
	std::string text = std::string(pick(spaces)) + "{";
	int members = int(random() % 5);
	for (int i = 0; i < members; i++)
		text += std::string(i > 0 ? "," : "") + pick(spaces) + pick(names) + pick(spaces) + ":" + pick(spaces) +
			pick(values) + pick(spaces);
	text += std::string("}") + pick(spaces);
	*mutated = random() % 2 == 0;
	for (int m = *mutated ? 1 + int(random() % 3) : 0; m > 0; m--) {
		size_t at = random() % (text.size() + 1);
		char byte = bytes[random() % (sizeof(bytes) - 1)];
		switch (random() % 3) {
		case 0: if (at < text.size()) text[at] = byte; break;
		case 1: text.insert(at, 1, byte); break;
		default: if (at < text.size()) text.erase(at, 1); break;
		}
	}
	return text;
}

} // namespace

BOOST_AUTO_TEST_SUITE(json_object)

BOOST_AUTO_TEST_CASE(plain_objects_are_read_as_postgresql_reads_them)
{
	BOOST_TEST(read(R"({"id":1,"value":"abc"})") == "id=1|value=abc");
	BOOST_TEST(read(" \t\r\n{ \"a\" : \"x y\" ,\n\"b\":null , \"c\":true,\"d\":false } \n") == "a=x y|b=null|c|d");
	BOOST_TEST(read("{}") == "{}");
	BOOST_TEST(read("{ }") == "{}");
	BOOST_TEST(read(R"({"":""})") == "=");
	BOOST_TEST(read(R"({"n":-0,"m":0.5,"e":1E+5,"f":-12.25e-3,"g":10})") == "n=-0|m=0.5|e=1E+5|f=-12.25e-3|g=10");
	/* names twice are each a member, as json's parser reports them */
	BOOST_TEST(read(R"({"a":1,"a":2})") == "a=1|a=2");
	/* bytes past ASCII as they are (the server encoding was checked before) */
	BOOST_TEST(read("{\"v\":\"caf\xc3\xa9\"}") == "v=caf\xc3\xa9");
	BOOST_TEST(read("{\"v\":\"\x7f\"}") == "v=\x7f");
}

BOOST_AUTO_TEST_CASE(everything_else_is_left_to_postgresql)
{
	const char *texts[] = {
		/* valid JSON it does not read itself: escapes, nesting, not an object */
		R"({"v":"a\"b"})", R"({"v":"\u0041"})", R"({"\u0076":1})", R"({"v":{"w":1}})", R"({"v":[1]})",
		R"([1])", R"("x")", "1", "null",
		/* not JSON */
		"", " ", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\" 1}", "{\"a\":1,}", "{,}", "{\"a\":1 \"b\":2}",
		"{\"a\":1}}", "{\"a\":1} x", "{\"a\":1}{}", "{a:1}", "{'a':1}", "{\"a\":'x'}", "{\"a\":\"x}",
		"{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":+1}", "{\"a\":-}", "{\"a\":1e}", "{\"a\":1e+}",
		"{\"a\":0x1}", "{\"a\":1x}", "{\"a\":NaN}", "{\"a\":Infinity}", "{\"a\":tru}", "{\"a\":truex}",
		"{\"a\":nul}", "{\"a\":nullx}", "{\"a\":True}", "{\"a\":1", "{\"a\"", "{\"a\":\"x\"",
		"{\"a\":\"tab\there\"}", "{\"a\":\"nl\nhere\"}", "{\"a\x01\":1}", "\v{\"a\":1}", "{\"a\":1}\f",
	};
	for (const char *text : texts)
		BOOST_TEST(read(text) == "(PostgreSQL)", "text: " << text);
	BOOST_TEST(read(std::string("{\"a\":\"x\0y\"}", 11)) == "(PostgreSQL)");
}

BOOST_AUTO_TEST_CASE(more_members_than_room_are_left_to_postgresql)
{
	BOOST_TEST(read(R"({"a":1,"b":2})", 2) == "a=1|b=2");
	BOOST_TEST(read(R"({"a":1,"b":2,"c":3})", 2) == "(PostgreSQL)");
}

BOOST_AUTO_TEST_CASE(what_it_reads_a_strict_json_parser_reads_the_same)
{
	std::mt19937 random(46);
	int valid_read = 0, mutated_read = 0;
	for (int round = 0; round < 100000; round++) {
		bool mutated;
		std::string text = random_text(random, &mutated);
		JsonMember members[16];
		size_t count;
		bool read = read_plain_object(text, members, 16, &count);
		if (!mutated)
			BOOST_TEST_REQUIRE(read, "a valid plain object left to PostgreSQL: " << text);
		if (!read)
			continue;
		(mutated ? mutated_read : valid_read)++;
		rapidjson::Document document;
		document.Parse<rapidjson::kParseNumbersAsStringsFlag>(text.data(), text.size());
		BOOST_TEST_REQUIRE((!document.HasParseError() && document.IsObject()), "read but not a JSON object: " << text);
		BOOST_TEST_REQUIRE(document.MemberCount() == count, text);
		size_t i = 0;
		for (auto member = document.MemberBegin(); member != document.MemberEnd(); ++member, ++i) {
			const rapidjson::Value &value = member->value;
			std::string_view name(member->name.GetString(), member->name.GetStringLength());
			BOOST_TEST_REQUIRE(name == members[i].name, text);
			BOOST_TEST_REQUIRE(members[i].has_scalar == value.IsString(), text);
			BOOST_TEST_REQUIRE(members[i].is_null == value.IsNull(), text);
			if (value.IsString())
				BOOST_TEST_REQUIRE(std::string_view(value.GetString(), value.GetStringLength()) == members[i].scalar, text);
		}
	}
	/* The mutations keep enough texts valid that both kinds were compared. */
	BOOST_TEST(valid_read > 10000);
	BOOST_TEST(mutated_read > 1000);
}

BOOST_AUTO_TEST_SUITE_END()
