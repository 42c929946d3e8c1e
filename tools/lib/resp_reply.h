// tools/lib/resp_reply.h: owns the RESP2/RESP3 reply reader of the C++ tools: a reply as a small
// tree (Reply) and the one parser that reads it from bytes, either into the tree or, for a timed
// loop, only checking its framing and counting its top-level elements and nils (ReplyShape).
// No sockets, no libpq, no PostgreSQL header: the RESP server's unit tests can use it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tooling {

struct Reply {
    char type = 0;          // the RESP type byte: + - : $ * _ % ~ # , =
    bool is_null = false;   // $-1, *-1, _
    std::string text;       // simple, error, integer digits, bulk, verbatim (without "txt:"), double, boolean t/f
    int64_t integer = 0;    // ':'
    std::string verbatim_format;
    std::vector<Reply> elements;  // array, set; a map as key, value, key, value ...

    bool is_string() const { return !is_null && (type == '$' || type == '+' || type == '='); }
    bool is_aggregate() const { return !is_null && (type == '*' || type == '%' || type == '~'); }
    bool is_error() const { return type == '-'; }
    bool is_simple(std::string_view s) const { return type == '+' && text == s; }
    bool is_bulk() const { return type == '$' && !is_null; }
    // The value of `key` in a RESP3 map, or in the pairs of a RESP2 flattened map.
    const Reply *find(std::string_view key) const;
    // For reports: nil, "bulk bytes" (clipped), -ERR ..., :1, +OK, [a, b], ...
    std::string describe(size_t clip = 3000) const;
};

// A reply's top level, for callers that only check its framing (out == nullptr below).
struct ReplyShape {
    char type = 0;
    size_t elements = 0;  // of an aggregate (a map's keys and values both)
    size_t nils = 0;      // null values at any depth
};

enum class ParseStatus { Complete, Incomplete, Malformed };

// Reads one reply from bytes[*pos..]. Complete: *pos is past it, *out (when given) holds it,
// *shape (when given) describes it. Incomplete: more bytes are needed (nothing consumed).
// Malformed: *error says why (the stream cannot be read further).
ParseStatus parse_reply(std::string_view bytes, size_t *pos, Reply *out, ReplyShape *shape = nullptr,
                        std::string *error = nullptr);

// Exactly one well-formed value, nothing after it; throws std::runtime_error otherwise.
Reply read_one(std::string_view bytes);

// Every value in the bytes (a pipeline's replies); throws std::runtime_error on any bad one.
std::vector<Reply> read_all(std::string_view bytes);

// The bytes of a request: an array of bulk strings.
void append_command(std::string &out, const std::vector<std::string> &args);
std::string encode_command(const std::vector<std::string> &args);

}  // namespace tooling
