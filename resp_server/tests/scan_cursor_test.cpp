/*
 * scan_cursor_test.cpp — Boost.Test cases of the SCAN cursor format (resp_server/commands/scan_cursor.h):
 * every position comes back from its cursor exactly, the text is digits every client keeps,
 * and a cursor is refused under another secret, role or database, or with any byte changed.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/commands/scan_cursor.h"

#include <string>

using namespace local_cache::resp;

namespace {

ScanCursorKey test_key()
{
	ScanCursorKey key;
	for (size_t i = 0; i < ScanCursorKey::kSecretBytes; i++)
		key.secret[i] = static_cast<unsigned char>(i * 7 + 1);
	key.role = 16384;
	key.database = 5;
	return key;
}

ScanPosition after(uint64_t table, const std::string &key_bytes)
{
	ScanPosition position;
	position.table = table;
	position.started = true;
	position.after_length = uint16_t(key_bytes.size());
	key_bytes.copy(position.after_key, key_bytes.size());
	return position;
}

bool same(const ScanPosition &a, const ScanPosition &b)
{
	return a.table == b.table && a.started == b.started && a.finished == b.finished &&
		a.after_length == b.after_length && std::string(a.after_key, a.after_length) == std::string(b.after_key, b.after_length);
}

} // namespace

BOOST_AUTO_TEST_SUITE(scan_cursor)

BOOST_AUTO_TEST_CASE(every_position_round_trips)
{
	ScanCursorKey key = test_key();
	for (size_t length = 0; length <= ScanPosition::kMaxKeyBytes; length++) {
		std::string bytes;
		for (size_t i = 0; i < length; i++)
			bytes.push_back(char((i * 131 + length) & 0xff)); /* every byte value, zeros too */
		ScanPosition position = after(4294967295u - length, bytes);
		std::string text;
		encode_scan_cursor(key, position, text);
		BOOST_TEST(text.find_first_not_of("0123456789") == std::string::npos);
		BOOST_TEST(text[0] == '1');
		BOOST_TEST(text.size() >= 66u);
		BOOST_TEST(text.size() <= 666u);
		ScanPosition back;
		BOOST_TEST(decode_scan_cursor(key, text, &back));
		BOOST_TEST(same(back, position), "key length " << length);
	}
	ScanPosition start_of_table; /* the next table, from its first key */
	start_of_table.table = 16400;
	std::string text;
	encode_scan_cursor(key, start_of_table, text);
	ScanPosition back;
	BOOST_TEST(decode_scan_cursor(key, text, &back));
	BOOST_TEST(same(back, start_of_table));
}

BOOST_AUTO_TEST_CASE(bound_to_the_secret_the_role_and_the_database)
{
	ScanCursorKey key = test_key();
	std::string text;
	encode_scan_cursor(key, after(16390, "\x80\x00\x00\x07"), text);
	ScanPosition back;
	ScanCursorKey other = key;
	other.role = 16385;
	BOOST_TEST(!decode_scan_cursor(other, text, &back));
	other = key;
	other.database = 6;
	BOOST_TEST(!decode_scan_cursor(other, text, &back));
	other = key;
	other.secret[31] ^= 1;
	BOOST_TEST(!decode_scan_cursor(other, text, &back));
	BOOST_TEST(decode_scan_cursor(key, text, &back));
}

BOOST_AUTO_TEST_CASE(any_change_is_refused)
{
	ScanCursorKey key = test_key();
	std::string text;
	encode_scan_cursor(key, after(16390, "some:text key"), text);
	ScanPosition back;
	for (size_t i = 0; i < text.size(); i++) {
		for (char digit = '0'; digit <= '9'; digit++) {
			if (digit == text[i])
				continue;
			std::string changed = text;
			changed[i] = digit;
			BOOST_TEST(!decode_scan_cursor(key, changed, &back), "digit " << i << " as " << digit);
		}
	}
	BOOST_TEST(!decode_scan_cursor(key, text + "00000", &back));
	BOOST_TEST(!decode_scan_cursor(key, text.substr(0, text.size() - 5), &back));
	BOOST_TEST(!decode_scan_cursor(key, text.substr(0, text.size() - 1), &back));
	BOOST_TEST(!decode_scan_cursor(key, "", &back));
	BOOST_TEST(!decode_scan_cursor(key, "0", &back));
	BOOST_TEST(!decode_scan_cursor(key, "123456", &back));
	BOOST_TEST(!decode_scan_cursor(key, "1" + std::string(665, '9'), &back)); /* groups above 65535 */
	BOOST_TEST(!decode_scan_cursor(key, "1" + std::string(670, '0'), &back)); /* too long */
}

BOOST_AUTO_TEST_CASE(truncated_forms)
{
	BOOST_TEST(is_truncated_cursor("18446744073709551615"));
	BOOST_TEST(is_truncated_cursor("Infinity"));
	BOOST_TEST(is_truncated_cursor("1.2222222222222222e+299"));
	BOOST_TEST(is_truncated_cursor("1e+21"));
	BOOST_TEST(!is_truncated_cursor("18446744073709551614"));
	BOOST_TEST(!is_truncated_cursor("0"));
	BOOST_TEST(!is_truncated_cursor("12e+3x"));
	BOOST_TEST(!is_truncated_cursor("-1e+21"));
	BOOST_TEST(!is_truncated_cursor("1.e+21"));
}

BOOST_AUTO_TEST_SUITE_END()
