// tools/lib/key_text.h: owns how the tools name a row in RESP: a primary key, given by its
// columns' values as PostgreSQL prints them, becomes the canonical bytes and then the text of
// extension/key_bytes.h (compiled in, not re-implemented: one rule, one implementation).
#pragma once

#include "extension/key_bytes.h"

#include <string>
#include <string_view>
#include <vector>

namespace tooling {

// The key kind of a column of SQL type `type` (smallint, int, integer, bigint, text, varchar,
// character, uuid and their internal names); throws std::invalid_argument for any other.
local_cache::KeyKind key_kind(std::string_view type);

// The shape of a key whose columns have these SQL types, in key order.
local_cache::KeyShape key_shape(const std::vector<std::string> &types);

// Appends the key's RESP text (without the table's prefix and ':'); throws
// std::invalid_argument when the values are no key of this shape.
void append_key_text(std::string &out, const local_cache::KeyShape &shape, const std::vector<std::string> &columns);
std::string key_text(const local_cache::KeyShape &shape, const std::vector<std::string> &columns);

}  // namespace tooling
