// tools/lib/key_text.cpp: owns the conversion of printed key values into key bytes for
// key_text.h; the text form itself is extension/key_bytes.cpp's append_key_text.
#include "tools/lib/key_text.h"

#include <cstring>
#include <stdexcept>

namespace tooling {

using local_cache::KeyKind;
using local_cache::KeyShape;

KeyKind key_kind(std::string_view type) {
    if (type == "smallint" || type == "int2") return KeyKind::Int2;
    if (type == "int" || type == "integer" || type == "int4") return KeyKind::Int4;
    if (type == "bigint" || type == "int8") return KeyKind::Int8;
    if (type == "text" || type == "varchar" || type == "character varying") return KeyKind::Text;
    if (type == "character" || type == "char" || type == "bpchar") return KeyKind::Bpchar;
    if (type == "uuid") return KeyKind::Uuid;
    throw std::invalid_argument("no key kind for the type " + std::string(type));
}

KeyShape key_shape(const std::vector<std::string> &types) {
    if (types.empty() || types.size() > local_cache::MAX_KEY_COLUMNS)
        throw std::invalid_argument("a key has 1 to " + std::to_string(local_cache::MAX_KEY_COLUMNS) + " columns");
    KeyShape shape;
    shape.ncolumns = static_cast<int>(types.size());
    for (size_t c = 0; c < types.size(); c++) shape.kinds[c] = key_kind(types[c]);
    return shape;
}

void append_key_text(std::string &out, const KeyShape &shape, const std::vector<std::string> &columns) {
    if (static_cast<int>(columns.size()) != shape.ncolumns)
        throw std::invalid_argument("a key of " + std::to_string(shape.ncolumns) + " columns, given " +
                                    std::to_string(columns.size()));
    std::string bytes;
    for (int c = 0; c < shape.ncolumns; c++) {
        const std::string &v = columns[c];
        const KeyKind kind = shape.kinds[c];
        char fixed[local_cache::UUID_KEY_BYTES];
        local_cache::KeyBytes column{v.data(), static_cast<uint32_t>(v.size())};
        if (local_cache::is_integer(kind)) {
            int64_t value;
            if (!local_cache::parse_canonical_int64(v, &value) || !local_cache::integer_fits(value, kind))
                throw std::invalid_argument("not an integer key column: " + v);
            std::memcpy(fixed, &value, local_cache::INT_KEY_BYTES);
            column = {fixed, local_cache::INT_KEY_BYTES};
        } else if (kind == KeyKind::Uuid) {
            KeyShape one;
            one.ncolumns = 1;
            one.kinds[0] = KeyKind::Uuid;
            if (!local_cache::key_from_text(one, v, fixed, &column))
                throw std::invalid_argument("not a uuid key column: " + v);
        } else if (kind == KeyKind::Bpchar) {
            column.len = local_cache::without_trailing_blanks(v.data(), column.len);
        }
        if (shape.composite()) {
            char prefix[5];
            bytes.append(prefix, local_cache::put_component_length(column.len, prefix));
        }
        bytes.append(column.data, column.len);
    }
    if (!local_cache::append_key_text(shape, {bytes.data(), static_cast<uint32_t>(bytes.size())}, out))
        throw std::invalid_argument("no key text for the key " + bytes);
}

std::string key_text(const KeyShape &shape, const std::vector<std::string> &columns) {
    std::string s;
    append_key_text(s, shape, columns);
    return s;
}

}  // namespace tooling
