// tools/lib/pg_text.h: owns how the tools spell values the way PostgreSQL reads or writes them:
// a string as a JSON string literal (escape_json, as row_to_json writes it) and an element of
// an array literal (as array_in reads it).
#pragma once

#include <string>
#include <string_view>

namespace tooling {

// v as a JSON string literal, escaped exactly as PostgreSQL's escape_json does: \" \\ \b \f \n
// \r \t, other control characters \u00XX, everything else as is.
std::string json_string(std::string_view v);

// Appends v as an element of an array literal, double-quoted (with '"' and '\' escaped) only
// when array_in needs it: empty, NULL in any case, or holding braces, commas, quotes,
// backslashes or white space.
void append_array_element(std::string &out, std::string_view v);

}  // namespace tooling
