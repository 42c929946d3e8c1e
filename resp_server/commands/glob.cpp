/*
 * glob.cpp — Redis's glob (util.c's stringmatchlen) for CONFIG GET's patterns: * ? [abc] [^a-z]
 * and \ escapes, in linear time and without recursion, whatever the pattern.
 */
#include "resp_server/commands/command_context.h"

#include <algorithm>
#include <utility>

namespace local_cache::resp {

namespace {

/* Whether pattern element at `p` (not '*') matches `c`; moves `p` past the element. */
bool glob_element_matches(std::string_view pattern, size_t &p, char c, bool ignore_case)
{
	auto same = [ignore_case](char a, char b) {
		return ignore_case ? ascii_lower(a) == ascii_lower(b) : a == b;
	};
	char element = pattern[p];
	if (element == '?') {
		p++;
		return true;
	}
	if (element == '[') {
		size_t i = p + 1;
		bool negated = i < pattern.size() && pattern[i] == '^';
		if (negated)
			i++;
		bool matched = false;
		/* An unclosed class runs to the end of the pattern, as in Redis. */
		while (i < pattern.size() && pattern[i] != ']') {
			if (pattern[i] == '\\' && i + 1 < pattern.size()) {
				i++;
				matched |= pattern[i] == c;
			} else if (i + 2 < pattern.size() && pattern[i + 1] == '-') {
				char low = pattern[i], high = pattern[i + 2];
				if (low > high)
					std::swap(low, high);
				char x = c;
				if (ignore_case) {
					low = ascii_lower(low);
					high = ascii_lower(high);
					x = ascii_lower(x);
				}
				matched |= x >= low && x <= high;
				i += 2;
			} else {
				matched |= same(pattern[i], c);
			}
			i++;
		}
		p = std::min(i + 1, pattern.size());
		return matched != negated;
	}
	if (element == '\\' && p + 1 < pattern.size())
		p++;
	bool matched = same(pattern[p], c);
	p++;
	return matched;
}

} // namespace

bool glob_match(std::string_view pattern, std::string_view text, bool ignore_case)
{
	/* Each element other than '*' matches exactly one byte, so backtracking to the most
	 * recent '*' alone is complete: the classic linear-time wildcard walk. */
	size_t p = 0, t = 0;
	size_t star = std::string_view::npos, star_text = 0;
	while (t < text.size()) {
		if (p < pattern.size() && pattern[p] == '*') {
			star = ++p;
			star_text = t;
			continue;
		}
		size_t next = p;
		if (p < pattern.size() && glob_element_matches(pattern, next, text[t], ignore_case)) {
			p = next;
			t++;
			continue;
		}
		if (star == std::string_view::npos)
			return false;
		p = star;
		t = ++star_text;
	}
	while (p < pattern.size() && pattern[p] == '*')
		p++;
	return p == pattern.size();
}

} // namespace local_cache::resp
