// tools/lib/pg_text.cpp: owns the spelling rules declared in pg_text.h.
#include "tools/lib/pg_text.h"

#include <strings.h>

#include <cstdio>

namespace tooling {

std::string json_string(std::string_view v) {
    std::string s = "\"";
    for (unsigned char ch : v) {
        switch (ch) {
        case '"': s += "\\\""; break;
        case '\\': s += "\\\\"; break;
        case '\b': s += "\\b"; break;
        case '\f': s += "\\f"; break;
        case '\n': s += "\\n"; break;
        case '\r': s += "\\r"; break;
        case '\t': s += "\\t"; break;
        default:
            if (ch < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", ch);
                s += buf;
            } else {
                s += static_cast<char>(ch);
            }
        }
    }
    return s + "\"";
}

void append_array_element(std::string &out, std::string_view v) {
    bool quote = v.empty() || (v.size() == 4 && strncasecmp(v.data(), "NULL", 4) == 0);
    for (size_t i = 0; i < v.size() && !quote; i++) {
        switch (v[i]) {
        case '{': case '}': case ',': case '"': case '\\': case ' ': case '\t': case '\n': case '\r': case '\v': case '\f':
            quote = true;
        }
    }
    if (!quote) {
        out += v;
        return;
    }
    out += '"';
    for (char ch : v) {
        if (ch == '"' || ch == '\\') out += '\\';
        out += ch;
    }
    out += '"';
}

}  // namespace tooling
