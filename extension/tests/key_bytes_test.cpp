/*
 * key_bytes_test.cpp — canonical key bytes and their RESP text form (extension/key_bytes.h):
 * every spelling maps to the bytes of its key or to none, and the text of a key's bytes reads
 * back as the same bytes.
 */
#include <boost/test/unit_test.hpp>

#include "extension/key_bytes.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace local_cache;
using namespace std::string_literals;

namespace std {
inline ostream &operator<<(ostream &os, const optional<string> &bytes)
{
	if (!bytes)
		return os << "no key";
	os << '"';
	for (unsigned char c : *bytes)
		if (c >= 32 && c < 127)
			os << char(c);
		else
			os << "\\x" << "0123456789abcdef"[c >> 4] << "0123456789abcdef"[c & 15];
	return os << '"';
}
} // namespace std

namespace {

KeyShape shape_of(std::initializer_list<KeyKind> kinds)
{
	KeyShape shape;
	for (KeyKind kind : kinds)
		shape.kinds[shape.ncolumns++] = kind;
	return shape;
}

std::optional<std::string> bytes_of(const KeyShape &shape, std::string_view text)
{
	std::string buffer(key_bytes_bound(text.size()), '\0');
	KeyBytes key;
	if (!key_from_text(shape, text, buffer.data(), &key))
		return std::nullopt;
	return std::string(key.data, key.len);
}

std::string text_of(const KeyShape &shape, const std::string &bytes)
{
	std::string out;
	BOOST_REQUIRE(append_key_text(shape, KeyBytes{bytes.data(), uint32_t(bytes.size())}, out));
	return out;
}

std::string int_bytes(int64_t value) { return std::string(reinterpret_cast<const char *>(&value), 8); }

std::string column(const std::string &bytes)
{
	char prefix[5];
	int n = put_component_length(uint32_t(bytes.size()), prefix);
	return std::string(prefix, size_t(n)) + bytes;
}

} // namespace

BOOST_AUTO_TEST_SUITE(key_bytes)

BOOST_AUTO_TEST_CASE(integer_keys_are_the_int64_and_only_canonical_decimals_name_them)
{
	for (KeyKind kind : {KeyKind::Int2, KeyKind::Int4, KeyKind::Int8}) {
		KeyShape shape = shape_of({kind});
		BOOST_TEST(bytes_of(shape, "42") == int_bytes(42));
		BOOST_TEST(bytes_of(shape, "-7") == int_bytes(-7));
		BOOST_TEST(bytes_of(shape, "0") == int_bytes(0));
		/* Past the column's range: no key of this shape (and no row could have it). */
		BOOST_TEST(bytes_of(shape, "-9223372036854775808") ==
				   (kind == KeyKind::Int8 ? std::optional<std::string>(int_bytes(INT64_MIN)) : std::nullopt));
		BOOST_TEST(bytes_of(shape, "32768").has_value() == (kind != KeyKind::Int2));
		for (const char *bad : {"", "01", "+1", "-0", " 1", "1 ", "1a", "9223372036854775808", "0x10"})
			BOOST_TEST(!bytes_of(shape, bad).has_value(), bad);
		BOOST_TEST(text_of(shape, int_bytes(-123)) == "-123");
	}
	BOOST_TEST(integer_fits(32767, KeyKind::Int2));
	BOOST_TEST(!integer_fits(32768, KeyKind::Int2));
	BOOST_TEST(!integer_fits(-2147483649LL, KeyKind::Int4));
	BOOST_TEST(integer_fits(INT64_MIN, KeyKind::Int8));
}

BOOST_AUTO_TEST_CASE(text_keys_are_their_bytes_colons_included)
{
	KeyShape shape = shape_of({KeyKind::Text});
	BOOST_TEST(bytes_of(shape, "alice") == "alice"s);
	BOOST_TEST(bytes_of(shape, "a:b:c") == "a:b:c"s);
	BOOST_TEST(bytes_of(shape, "") == ""s);
	BOOST_TEST(bytes_of(shape, "trailing ") == "trailing "s);
	BOOST_TEST(bytes_of(shape, "back\\slash") == "back\\slash"s);
	BOOST_TEST(text_of(shape, "a:b\\c") == "a:b\\c"); /* no escaping for one column */
}

BOOST_AUTO_TEST_CASE(character_keys_are_named_without_trailing_blanks_only)
{
	/* Their equality ignores trailing blanks, so the bytes have none; the one spelling of a
	 * key is its bytes' text, so a spelling with them names no key (a client caching "ab "
	 * would never be told of a change to "ab"). */
	KeyShape shape = shape_of({KeyKind::Bpchar});
	BOOST_TEST(bytes_of(shape, "ab") == "ab"s);
	BOOST_TEST(bytes_of(shape, " ab") == " ab"s);
	BOOST_TEST(bytes_of(shape, "") == ""s);
	BOOST_TEST(bytes_of(shape, "a\t") == "a\t"s); /* a tab is no blank to bpchareq */
	for (const char *bad : {"ab ", "ab   ", " ", "   "})
		BOOST_TEST(!bytes_of(shape, bad).has_value(), bad);
	BOOST_TEST(without_trailing_blanks("x \t ", 4) == 3u); /* only blanks, as bpchareq */
}

BOOST_AUTO_TEST_CASE(uuid_keys_are_16_bytes_named_by_lower_case_text_only)
{
	KeyShape shape = shape_of({KeyKind::Uuid});
	const std::string text = "6f1c0a2e-9b3d-4c5e-8f70-0123456789ab";
	std::optional<std::string> bytes = bytes_of(shape, text);
	BOOST_REQUIRE(bytes.has_value());
	BOOST_TEST(bytes->size() == 16u);
	BOOST_TEST(static_cast<unsigned char>((*bytes)[0]) == 0x6fu);
	BOOST_TEST(static_cast<unsigned char>((*bytes)[15]) == 0xabu);
	BOOST_TEST(text_of(shape, *bytes) == text);
	for (const char *bad : {"6F1C0A2E-9B3D-4C5E-8F70-0123456789AB", "6f1c0a2e9b3d4c5e8f700123456789ab",
							"{6f1c0a2e-9b3d-4c5e-8f70-0123456789ab}", "6f1c0a2e-9b3d-4c5e-8f70-0123456789a",
							"6f1c0a2e-9b3d-4c5e-8f70-0123456789ag", "6f1c0a2e-9b3d-4c5e-8f70+0123456789ab", ""})
		BOOST_TEST(!bytes_of(shape, bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(composite_keys_join_columns_with_colons_and_escape_them)
{
	KeyShape shape = shape_of({KeyKind::Int4, KeyKind::Text});
	BOOST_TEST(bytes_of(shape, "7:a") == column(int_bytes(7)) + column("a"));
	BOOST_TEST(bytes_of(shape, "7:") == column(int_bytes(7)) + column(""));
	BOOST_TEST(bytes_of(shape, "7:a\\:b\\\\c") == column(int_bytes(7)) + column("a:b\\c"));
	BOOST_TEST(text_of(shape, column(int_bytes(7)) + column("a:b\\c")) == "7:a\\:b\\\\c");
	for (const char *bad : {"7", "7:a:b", "07:a", "x:a", "7:a\\b", "7:a\\", ":a", "7\\:1:a"})
		BOOST_TEST(!bytes_of(shape, bad).has_value(), bad);

	KeyShape three = shape_of({KeyKind::Text, KeyKind::Uuid, KeyKind::Bpchar});
	std::string text = "x\\:y:00000000-0000-0000-0000-000000000001:z";
	std::optional<std::string> bytes = bytes_of(three, text);
	BOOST_REQUIRE(bytes.has_value());
	BOOST_TEST(text_of(three, *bytes) == text);
	BOOST_TEST(!bytes_of(three, "x\\:y:00000000-0000-0000-0000-000000000001:z  ").has_value());
	BOOST_TEST(!bytes_of(shape_of({KeyKind::Bpchar, KeyKind::Int4}), "z :1").has_value());

	/* A long column's length takes more than one byte. */
	std::string long_text(300, 'q');
	BOOST_TEST(bytes_of(shape, "1:" + long_text) == column(int_bytes(1)) + column(long_text));
	BOOST_TEST(column(long_text).size() == 302u);
}

namespace {

std::optional<std::string> spelling_of(const KeyShape &shape, std::string_view text)
{
	/* Exactly the room the header promises is enough, checked by the canary after it. */
	std::string buffer(key_bytes_bound(text.size()) + 1, '\x7f');
	std::string_view out;
	bool spelled = canonical_spelling(shape, text, buffer.data(), &out);
	BOOST_TEST(buffer.back() == '\x7f');
	if (!spelled)
		return std::nullopt;
	BOOST_TEST(out.data() == buffer.data());
	return std::string(out);
}

} // namespace

BOOST_AUTO_TEST_CASE(canonical_spelling_reads_integers_as_int8in_does)
{
	for (KeyKind kind : {KeyKind::Int2, KeyKind::Int4, KeyKind::Int8}) {
		KeyShape shape = shape_of({kind});
		const std::pair<const char *, const char *> spelled[] = {
			{"1", "1"}, {"01", "1"}, {"+1", "1"}, {"-0", "0"}, {"+0", "0"}, {"000", "0"}, {" 1", "1"},
			{"1 ", "1"}, {"\t\n\v\f\r 42 \r\n", "42"}, {"-007", "-7"}, {"0000000000000000000000000012", "12"},
			{"32767", "32767"}, {"-32768", "-32768"}};
		for (auto [text, canonical] : spelled)
			BOOST_TEST(spelling_of(shape, text) == std::optional<std::string>(canonical), text);
		for (const char *bad : {"", " ", "+", "-", "--1", "+-1", "1 2", "1a", "0x10", "1_000", "1.0", "1e3", "\xa0" "1"})
			BOOST_TEST(!spelling_of(shape, bad).has_value(), bad);
	}
	KeyShape int8 = shape_of({KeyKind::Int8});
	BOOST_TEST(spelling_of(int8, "+09223372036854775807") == "9223372036854775807"s);
	BOOST_TEST(spelling_of(int8, "-09223372036854775808") == "-9223372036854775808"s);
	for (const char *bad : {"9223372036854775808", "-9223372036854775809", "99999999999999999999",
							"18446744073709551616", "184467440737095516160"})
		BOOST_TEST(!spelling_of(int8, bad).has_value(), bad);
	/* The column's range, as int2in and int4in check it. */
	BOOST_TEST(!spelling_of(shape_of({KeyKind::Int2}), "+32768").has_value());
	BOOST_TEST(!spelling_of(shape_of({KeyKind::Int2}), "-32769").has_value());
	BOOST_TEST(spelling_of(shape_of({KeyKind::Int4}), "-02147483648") == "-2147483648"s);
	BOOST_TEST(!spelling_of(shape_of({KeyKind::Int4}), "2147483648").has_value());
}

BOOST_AUTO_TEST_CASE(canonical_spelling_reads_uuids_as_uuid_in_does)
{
	KeyShape shape = shape_of({KeyKind::Uuid});
	const std::string canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
	for (const char *text : {"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
							 "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", "a0eebc999c0b4ef8bb6d6bb9bd380a11",
							 "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11", "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
							 "A0eeBC99-9c0b-4EF8-bb6d-6bb9bd380a11"})
		BOOST_TEST(spelling_of(shape, text) == canonical, text);
	for (const char *bad : {"", "{}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
							"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
							"a0eebc9-99c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
							"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-", "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
							" a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 ",
							"g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "urn:uuid:a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"})
		BOOST_TEST(!spelling_of(shape, bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(canonical_spelling_of_text_character_and_composite_keys)
{
	KeyShape text = shape_of({KeyKind::Text});
	for (const char *t : {"", "ab ", " a:b\\c ", "UPPER"})
		BOOST_TEST(spelling_of(text, t) == std::optional<std::string>(t), t); /* every text is its own */
	KeyShape character = shape_of({KeyKind::Bpchar});
	BOOST_TEST(spelling_of(character, "ab   ") == "ab"s);
	BOOST_TEST(spelling_of(character, "   ") == ""s);
	BOOST_TEST(spelling_of(character, " ab\t") == " ab\t"s);

	KeyShape pair = shape_of({KeyKind::Int4, KeyKind::Text});
	BOOST_TEST(spelling_of(pair, "07:a\\:b") == "7:a\\:b"s);
	BOOST_TEST(spelling_of(pair, " +7 :") == "7:"s);
	for (const char *bad : {"7", "7:a:b", "x:a", "7:a\\b", "7\\:1:a", "07"})
		BOOST_TEST(!spelling_of(pair, bad).has_value(), bad);
	KeyShape three = shape_of({KeyKind::Bpchar, KeyKind::Uuid, KeyKind::Int2});
	BOOST_TEST(spelling_of(three, "x\\: :{00000000-0000-0000-0000-00000000000A}:+01") ==
			   "x\\::00000000-0000-0000-0000-00000000000a:1"s);
	BOOST_TEST(!spelling_of(three, "x:00000000-0000-0000-0000-00000000000a:40000").has_value());
}

BOOST_AUTO_TEST_CASE(a_text_names_a_key_exactly_when_it_is_its_own_canonical_spelling)
{
	/* key_from_text is the reads' check, canonical_spelling the writes' message: they agree. */
	const KeyShape shapes[] = {shape_of({KeyKind::Int8}), shape_of({KeyKind::Int2}), shape_of({KeyKind::Text}),
							   shape_of({KeyKind::Bpchar}), shape_of({KeyKind::Uuid}),
							   shape_of({KeyKind::Bpchar, KeyKind::Int4}), shape_of({KeyKind::Text, KeyKind::Uuid})};
	const char *texts[] = {"1", "01", "+1", " 1", "-0", "0", "40000", "ab", "ab ", "", " ", "a:1", "a :1", "a:01",
						   "a\\:b:1", "a\\ :1", "a:a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
						   "a:A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
						   "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", "x\\y:1"};
	for (const KeyShape &shape : shapes) {
		for (const char *text : texts) {
			bool named = bytes_of(shape, text).has_value();
			std::optional<std::string> spelling = spelling_of(shape, text);
			BOOST_TEST(named == (spelling == std::optional<std::string>(text)), text);
			if (spelling) {
				BOOST_TEST(bytes_of(shape, *spelling).has_value(), text);
				BOOST_TEST(spelling_of(shape, *spelling) == spelling, text);
			}
		}
	}
}

BOOST_AUTO_TEST_CASE(split_key_refuses_bytes_that_are_no_key)
{
	KeyShape shape = shape_of({KeyKind::Int8, KeyKind::Text});
	std::string good = column(int_bytes(1)) + column("ab");
	KeyBytes columns[MAX_KEY_COLUMNS];
	BOOST_TEST(split_key(shape, KeyBytes{good.data(), uint32_t(good.size())}, columns));
	BOOST_TEST(std::string(columns[1].data, columns[1].len) == "ab");
	/* A length in two bytes where one does: the same columns, but not the canonical bytes. */
	std::string long_length = std::string("\x88\x00", 2) + int_bytes(1) + column("ab");
	for (const std::string &bad : {good + "x", good.substr(0, good.size() - 1), column(int_bytes(1)),
								   std::string("\xff\xff\xff\xff\xff\xff", 6), std::string(), long_length}) {
		BOOST_TEST(!split_key(shape, KeyBytes{bad.data(), uint32_t(bad.size())}, columns));
		std::string out;
		BOOST_TEST(!append_key_text(shape, KeyBytes{bad.data(), uint32_t(bad.size())}, out));
		BOOST_TEST(out.empty());
	}
	/* A uuid column must be 16 bytes, an integer 8. */
	KeyShape uuid = shape_of({KeyKind::Uuid});
	std::string out;
	BOOST_TEST(!append_key_text(uuid, KeyBytes{"short", 5}, out));
}

BOOST_AUTO_TEST_SUITE_END()
