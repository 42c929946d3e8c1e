/*
 * json_object.h — the top-level members of a SET's JSON object, read without PostgreSQL's JSON
 * parser when the text is plainly one (read_plain_object). Free of PostgreSQL: unit-tested alone
 * (tests/json_object_test.cpp).
 */
#pragma once

#include <cstddef>
#include <string_view>

namespace local_cache::resp {

/* A member of the object: its name and, when it is a string or a number, its text (a string's
 * without its quotes, a number's as written); null is is_null; true, false, an object or an
 * array have neither. */
struct JsonMember {
	std::string_view name;
	std::string_view scalar;
	bool has_scalar;
	bool is_null;
};

/*
 * Reads `text` when it is an object that needs no more than a glance: members whose names and
 * string values have no backslash and no control character, whose values are strings, numbers
 * (JSON's grammar), true, false or null, with JSON's whitespace around the tokens, and nothing
 * after the object. Fills members[0 .. *count) (names and texts point into `text`) and returns
 * true; returns false for anything else (an escape, a nested object or array, more than
 * `capacity` members, and every text that is not valid JSON), which PostgreSQL's parser then
 * reads, with its own errors. So what it accepts it reads as PostgreSQL's parser does.
 */
bool read_plain_object(std::string_view text, JsonMember *members, size_t capacity, size_t *count);

} // namespace local_cache::resp
