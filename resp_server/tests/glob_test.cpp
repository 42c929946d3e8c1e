/*
 * glob_test.cpp — Boost.Test cases of Redis's glob (resp_server/commands/glob.cpp), which CONFIG GET
 * matches parameter names with: every element, case folding, and linear time on hostile
 * patterns.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/commands/command_table.h"

#include <chrono>
#include <string>

using namespace local_cache::resp;

BOOST_AUTO_TEST_SUITE(server_commands)

BOOST_AUTO_TEST_CASE(glob)
{
	struct Case {
		const char *pattern;
		const char *text;
		bool nocase;
		bool match;
	};
	const Case cases[] = {
		{"*", "", false, true},
		{"*", "anything", false, true},
		{"", "", false, true},
		{"", "a", false, false},
		{"save", "save", false, true},
		{"SAVE", "save", true, true},
		{"SAVE", "save", false, false},
		{"s?ve", "save", false, true},
		{"s?ve", "sve", false, false},
		{"max*", "maxmemory-policy", false, true},
		{"*policy", "maxmemory-policy", false, true},
		{"*mem*", "maxmemory", false, true},
		{"*a*b", "aaab", false, true},
		{"*a*b", "aaa", false, false},
		{"a*b*c", "abbbc", false, true},
		{"[abc]ave", "save", false, false},
		{"[rs]ave", "save", false, true},
		{"[^s]ave", "save", false, false},
		{"[^x]ave", "save", false, true},
		{"[a-z]ave", "save", false, true},
		{"[z-a]ave", "save", false, true},
		{"[A-Z]AVE", "save", true, true},
		{"[A-Z]ave", "save", false, false},
		{"\\*", "*", false, true},
		{"\\*", "a", false, false},
		{"[\\]]", "]", false, true},
		{"a\\", "a\\", false, true},
		{"[abc", "a", false, true},
		{"**a", "ba", false, true},
	};
	for (const Case &c : cases)
		BOOST_TEST(glob_match(c.pattern, c.text, c.nocase) == c.match, c.pattern << " ~ " << c.text);

	/* Patterns built to explode a recursive matcher stay linear. */
	std::string pattern;
	for (int i = 0; i < 2000; i++)
		pattern += "*a";
	pattern += "b";
	std::string text(5000, 'a');
	auto start = std::chrono::steady_clock::now();
	BOOST_TEST(!glob_match(pattern, text, false));
	double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	BOOST_TEST(seconds < 2.0);
}

BOOST_AUTO_TEST_SUITE_END()
