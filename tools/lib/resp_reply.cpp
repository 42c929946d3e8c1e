// tools/lib/resp_reply.cpp: owns the one RESP reply parser of the C++ tools (resp_reply.h):
// strict framing (CRLF-terminated lines without CR or LF inside, canonical lengths, a bulk's
// CRLF), RESP2 and the RESP3 types the server writes.
#include "tools/lib/resp_reply.h"

#include <charconv>
#include <cstring>
#include <stdexcept>

namespace tooling {

namespace {

constexpr int kMaxDepth = 64;

struct Parser {
    std::string_view bytes;
    size_t pos;
    std::string *error;
    size_t *nils;

    ParseStatus malformed(const std::string &why) {
        if (error) *error = why;
        return ParseStatus::Malformed;
    }

    // The line at pos (without its CRLF); pos moves past it.
    ParseStatus line(std::string_view *out) {
        const char *start = bytes.data() + pos;
        const void *nl = std::memchr(start, '\n', bytes.size() - pos);
        if (!nl) {
            if (std::memchr(start, '\r', bytes.size() - pos) &&
                bytes.back() != '\r')  // a CR not followed by LF
                return malformed("CR without LF in a reply line");
            return ParseStatus::Incomplete;
        }
        size_t end = static_cast<const char *>(nl) - bytes.data();
        if (end == pos || bytes[end - 1] != '\r') return malformed("LF without CR in a reply line");
        std::string_view l = bytes.substr(pos, end - 1 - pos);
        if (l.find('\r') != std::string_view::npos) return malformed("CR inside a reply line");
        *out = l;
        pos = end + 1;
        return ParseStatus::Complete;
    }

    ParseStatus number(std::string_view l, int64_t *value) {
        auto [end, ec] = std::from_chars(l.data(), l.data() + l.size(), *value);
        if (l.empty() || ec != std::errc() || end != l.data() + l.size())
            return malformed("bad number '" + std::string(l.substr(0, 40)) + "'");
        return ParseStatus::Complete;
    }

    // A null value: _, and the RESP2 lengths -1 of $ and *.
    ParseStatus null(Reply *out) {
        if (out) out->is_null = true;
        if (nils) ++*nils;
        return ParseStatus::Complete;
    }

    // The length of a bulk string or an aggregate: *n = -1 for RESP2's null ($-1, *-1).
    ParseStatus length(std::string_view l, char type, int64_t *n) {
        ParseStatus st = number(l, n);
        if (st != ParseStatus::Complete) return st;
        if (*n == -1 && (type == '$' || type == '*')) return st;
        if (*n < 0) return malformed(std::string("bad length of a '") + type + "' reply");
        return st;
    }

    ParseStatus value(Reply *out, ReplyShape *shape, int depth) {
        if (depth > kMaxDepth) return malformed("reply nested too deeply");
        if (pos >= bytes.size()) return ParseStatus::Incomplete;
        const char type = bytes[pos++];
        if (out) out->type = type;
        if (shape) shape->type = type;
        std::string_view l;
        ParseStatus st = line(&l);
        if (st != ParseStatus::Complete) return st;
        switch (type) {
        case '+':
        case '-':
        case ',':
            if (out) out->text.assign(l);
            return ParseStatus::Complete;
        case '#':
            if (l != "t" && l != "f") return malformed("bad boolean");
            if (out) out->text.assign(l);
            return ParseStatus::Complete;
        case ':': {
            int64_t v;
            if ((st = number(l, &v)) != ParseStatus::Complete) return st;
            if (out) {
                out->integer = v;
                out->text.assign(l);
            }
            return ParseStatus::Complete;
        }
        case '_':
            if (!l.empty()) return malformed("bad null");
            return null(out);
        case '$':
        case '=': {
            int64_t n;
            if ((st = length(l, type, &n)) != ParseStatus::Complete) return st;
            if (n == -1) return null(out);
            if (static_cast<uint64_t>(n) + 2 > bytes.size() - pos) return ParseStatus::Incomplete;
            if (bytes.compare(pos + static_cast<size_t>(n), 2, "\r\n") != 0)
                return malformed("bulk string not followed by CRLF");
            std::string_view body = bytes.substr(pos, static_cast<size_t>(n));
            pos += static_cast<size_t>(n) + 2;
            if (type == '=') {
                if (body.size() < 4 || body[3] != ':') return malformed("bad verbatim string");
                if (out) {
                    out->verbatim_format.assign(body.substr(0, 3));
                    body.remove_prefix(4);
                }
            }
            if (out) out->text.assign(body);
            return ParseStatus::Complete;
        }
        case '*':
        case '~':
        case '%': {
            int64_t n;
            if ((st = length(l, type, &n)) != ParseStatus::Complete) return st;
            if (n == -1) return null(out);
            const uint64_t count = static_cast<uint64_t>(n) * (type == '%' ? 2 : 1);
            // every element takes at least 3 bytes: a longer count cannot be complete yet
            if (count > (bytes.size() - pos) / 3) {
                if (count > (uint64_t(1) << 40)) return malformed("bad aggregate length");
                return ParseStatus::Incomplete;
            }
            if (shape) shape->elements = static_cast<size_t>(count);
            if (out) out->elements.resize(static_cast<size_t>(count));
            for (uint64_t i = 0; i < count; i++)
                if ((st = value(out ? &out->elements[i] : nullptr, nullptr, depth + 1)) != ParseStatus::Complete)
                    return st;
            return ParseStatus::Complete;
        }
        default:
            return malformed(std::string("unknown type byte '") + type + "'");
        }
    }
};

std::string clipped(const std::string &s, size_t n) {
    if (s.size() <= n) return s;
    return s.substr(0, n) + "...(" + std::to_string(s.size()) + " chars)";
}

}  // namespace

ParseStatus parse_reply(std::string_view bytes, size_t *pos, Reply *out, ReplyShape *shape, std::string *error) {
    ReplyShape local;
    if (shape) *shape = ReplyShape{};
    if (out) *out = Reply{};
    Parser p{bytes, *pos, error, shape ? &shape->nils : &local.nils};
    ParseStatus st = p.value(out, shape, 0);
    if (st == ParseStatus::Complete) *pos = p.pos;
    return st;
}

Reply read_one(std::string_view bytes) {
    size_t pos = 0;
    Reply r;
    std::string error;
    ParseStatus st = parse_reply(bytes, &pos, &r, nullptr, &error);
    if (st == ParseStatus::Malformed) throw std::runtime_error(error);
    if (st == ParseStatus::Incomplete) throw std::runtime_error("reply ended early");
    if (pos != bytes.size()) throw std::runtime_error("bytes after the reply");
    return r;
}

std::vector<Reply> read_all(std::string_view bytes) {
    std::vector<Reply> out;
    size_t pos = 0;
    std::string error;
    while (pos < bytes.size()) {
        out.emplace_back();
        ParseStatus st = parse_reply(bytes, &pos, &out.back(), nullptr, &error);
        if (st == ParseStatus::Malformed) throw std::runtime_error(error);
        if (st == ParseStatus::Incomplete) throw std::runtime_error("reply ended early");
    }
    return out;
}

const Reply *Reply::find(std::string_view key) const {
    for (size_t i = 0; i + 1 < elements.size(); i += 2)
        if (elements[i].text == key) return &elements[i + 1];
    return nullptr;
}

std::string Reply::describe(size_t clip) const {
    switch (type) {
    case '$':
        return is_null ? "nil" : "\"" + clipped(text, clip) + "\"";
    case '=':
        return "\"" + clipped(text, clip) + "\" (" + verbatim_format + ")";
    case '*':
    case '~':
    case '%': {
        if (is_null) return "nil array";
        std::string s = type == '*' ? "[" : type == '~' ? "~[" : "{";
        for (size_t i = 0; i < elements.size(); i++)
            s += (i == 0 ? "" : type == '%' && i % 2 ? ": " : ", ") + elements[i].describe(clip);
        return s + (type == '%' ? "}" : "]");
    }
    case '_':
        return "null";
    case '-':
    case ':':
    case '+':
    case ',':
    case '#':
        return type + text;
    default:
        return "<no reply>";
    }
}

void append_command(std::string &out, const std::vector<std::string> &args) {
    out += '*';
    out += std::to_string(args.size());
    out += "\r\n";
    for (const std::string &a : args) {
        out += '$';
        out += std::to_string(a.size());
        out += "\r\n";
        out += a;
        out += "\r\n";
    }
}

std::string encode_command(const std::vector<std::string> &args) {
    std::string s;
    append_command(s, args);
    return s;
}

}  // namespace tooling
