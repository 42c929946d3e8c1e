// bench/loadgen_client.cpp: owns what every command of the load generator uses around its
// requests (loadgen.h): which paths speak RESP, RESP connections (with AUTH), the written
// values and their JSON rows, and the measurements (own CPU time, percentiles).
#include "bench/loadgen.h"

#include "tools/lib/pg_text.h"

#include <sys/resource.h>

#include <algorithm>

namespace loadgen {

bool is_resp_path(const std::string &path) {
    return path == "resp" || path == "redis" || path == "resp_set" || path == "redis_set" || is_mset_path(path);
}

bool is_mset_path(const std::string &path) { return path == "resp_mset" || path == "redis_mset"; }

std::vector<long long> distinct_rows(std::mt19937_64 &rng, int n, int rows) {
    std::vector<long long> ids;
    while (static_cast<int>(ids.size()) < std::min(n, rows)) {
        long long id = static_cast<long long>(rng() % rows) + 1;
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

std::string text_array_literal(const std::vector<std::string> &v) {
    std::string out = "{";
    for (size_t i = 0; i < v.size(); i++) {
        out += i ? ",\"" : "\"";
        for (char ch : v[i]) {
            if (ch == '"' || ch == '\\') out += '\\';
            out += ch;
        }
        out += '"';
    }
    return out + "}";
}

tooling::RespClient resp_connect(int port, const std::string &user, const std::string &password) {
    tooling::RespClient c = tooling::RespClient::tcp("127.0.0.1", port);
    c.connect();
    if (!user.empty()) c.auth(user, password);
    return c;
}

std::string random_value(std::mt19937_64 &rng) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string v(128, 'x');
    for (auto &ch : v) ch = alphabet[rng() % (sizeof alphabet - 1)];
    return v;
}

// The row (id, value) of public.items as RESP SET writes it: byte for byte row_to_json(row)::text.
std::string row_json(long long id, const std::string &value) {
    return "{\"id\":" + std::to_string(id) + ",\"value\":" + tooling::json_string(value) + "}";
}

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

uint32_t pct_of(const std::vector<uint32_t> &v, double p) {
    if (v.empty()) return 0;
    return v[std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * v.size()))];
}

}  // namespace loadgen
