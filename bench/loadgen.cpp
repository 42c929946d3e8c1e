// bench/loadgen.cpp: native closed-loop load generator of the benchmark harness.
//
//   loadgen check --pg CONNINFO --resp-port P --redis-port R [--prefix items]
//                 [--resp-user U --resp-password W]
//       compares every read path with prepared SQL (result contract), then the writes: RESP SET
//       (as U) seen by SQL and RESP GET, SQL UPDATE seen by RESP GET, redis-server SET; exit 1 on
//       a difference
//   loadgen run --pg CONNINFO --path PATH --conns N --batch B --seconds S
//               [--mode warm|miss|mixed|cold|write] [--resp-port P] [--redis-port R]
//               [--resp-user U --resp-password W]
//       PATH: sql | mget | mget_json | fdw | resp | redis        (reads of B keys)
//             update | resp_set | redis_set                      (writes of one random row)
//       update is the prepared SQL UPDATE; resp_set is `SET items:<id> {"id":<id>,"value":"..."}`
//       to the RESP port, as U (AUTH U W on every connection) when --resp-user is given;
//       redis_set the same bytes to redis-server.
//       miss: every other key of a request has no row (ids rows+1, rows+2, ... are absent), the
//       same keys in every request like warm; with --batch 1 requests alternate between id 1 and
//       id rows+1. Every reply must have exactly the expected number of NULLs / nils (RESP) or rows.
//
// `run` connects, prepares and warms every connection, prints "READY" and waits for a line on
// stdin; then it runs for S seconds (one outstanding request per connection, closed loop),
// prints one JSON line with its counts, latency percentiles and its own CPU time, and waits
// for another line (or EOF) before it disconnects, so that the caller can read the server's
// CPU counters while the server processes still exist.
//
// SQL goes through libpq in non-blocking mode (prepared statements, text results); RESP
// through a minimal RESP2 client of its own. Threads: min(connections, 2 x cores), each
// driving its share of the connections with poll().
#include <libpq-fe.h>
#include <rapidjson/document.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string &msg) {
    std::fprintf(stderr, "loadgen: %s\n", msg.c_str());
    std::exit(2);
}

struct Options {
    std::string cmd, pg, path = "sql", mode = "warm", prefix = "items", resp_user, resp_password;
    int resp_port = 0, redis_port = 0, conns = 4, batch = 1, update_pct = 5, hot = 128, rows = 4096;
    double seconds = 1;
};

const char *sql_for(const std::string &path) {
    if (path == "sql") return "SELECT * FROM public.items WHERE id = ANY($1::bigint[])";
    if (path == "mget") return "SELECT array_to_json(local_cache.mget('public.items'::regclass, $1::bigint[]))";
    if (path == "mget_json") return "SELECT local_cache.mget_json('public.items'::regclass, $1::bigint[])";
    if (path == "fdw") return "SELECT * FROM cache.items WHERE id = ANY($1::bigint[])";
    if (path == "update") return "UPDATE public.items SET value = $2 WHERE id = $1";
    return nullptr;
}
const char *UPDATE_SQL = "UPDATE public.items SET value = $2 WHERE id = $1";

// ------------------------------------------------------------------ RESP2 client

int resp_connect(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket: " + std::string(strerror(errno)));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0)
        die("connect to 127.0.0.1:" + std::to_string(port) + ": " + strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

std::string resp_command(const std::vector<std::string> &args) {
    std::string s = "*" + std::to_string(args.size()) + "\r\n";
    for (auto &a : args) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    return s;
}

struct RespValue {
    enum Kind { Nil, Bulk, Simple, Error, Integer, Array } kind = Nil;
    std::string str;
    std::vector<RespValue> items;
};

// Parses one reply from buf[pos..len). Returns false if incomplete; advances pos otherwise.
// With out == nullptr only the structure is checked (fast path of the timed loop); count gets the
// number of elements of a top-level array, nils (when given) is incremented for every nil.
bool resp_parse(const char *buf, size_t len, size_t &pos, RespValue *out, size_t *count = nullptr,
                size_t *nils = nullptr) {
    if (pos >= len) return false;
    const char *crlf = static_cast<const char *>(memmem(buf + pos, len - pos, "\r\n", 2));
    if (!crlf) return false;
    char type = buf[pos];
    std::string line(buf + pos + 1, crlf - (buf + pos + 1));
    size_t after = crlf - buf + 2;
    switch (type) {
    case '+': case '-': case ':':
        if (out) {
            out->kind = type == '+' ? RespValue::Simple : type == '-' ? RespValue::Error : RespValue::Integer;
            out->str = line;
        }
        pos = after;
        return true;
    case '$': {
        long n = std::strtol(line.c_str(), nullptr, 10);
        if (n < 0) {
            if (out) out->kind = RespValue::Nil;
            if (nils) ++*nils;
            pos = after;
            return true;
        }
        if (after + n + 2 > len) return false;
        if (out) {
            out->kind = RespValue::Bulk;
            out->str.assign(buf + after, n);
        }
        pos = after + n + 2;
        return true;
    }
    case '*': {
        long n = std::strtol(line.c_str(), nullptr, 10);
        size_t p = after;
        if (out) { out->kind = n < 0 ? RespValue::Nil : RespValue::Array; out->items.clear(); }
        for (long i = 0; i < n; i++) {
            RespValue *child = nullptr;
            if (out) { out->items.emplace_back(); child = &out->items.back(); }
            if (!resp_parse(buf, len, p, child, nullptr, nils)) return false;
        }
        if (count) *count = n < 0 ? 0 : static_cast<size_t>(n);
        pos = p;
        return true;
    }
    default:
        die(std::string("RESP protocol error: unexpected byte '") + type + "'");
    }
}

// Blocking request/reply (check mode and warm-up).
RespValue resp_call(int fd, const std::string &req) {
    size_t off = 0;
    while (off < req.size()) {
        ssize_t n = ::send(fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
        if (n <= 0) die("RESP send failed: " + std::string(strerror(errno)));
        off += n;
    }
    std::string buf;
    char tmp[65536];
    for (;;) {
        size_t pos = 0;
        RespValue v;
        if (resp_parse(buf.data(), buf.size(), pos, &v)) return v;
        ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
        if (n <= 0) die("RESP connection closed by the server");
        buf.append(tmp, n);
    }
}

// ------------------------------------------------------------------ libpq helpers

PGconn *pg_connect(const std::string &conninfo) {
    PGconn *c = PQconnectdb(conninfo.c_str());
    if (PQstatus(c) != CONNECTION_OK) die(std::string("connection failed: ") + PQerrorMessage(c));
    return c;
}

void pg_prepare(PGconn *c, const char *name, const char *sql, int nparams) {
    PGresult *r = PQprepare(c, name, sql, nparams, nullptr);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) die(std::string("PREPARE ") + sql + ": " + PQerrorMessage(c));
    PQclear(r);
}

std::string array_literal(const std::vector<std::optional<long long>> &keys) {
    std::string s = "{";
    for (size_t i = 0; i < keys.size(); i++) {
        if (i) s += ",";
        s += keys[i] ? std::to_string(*keys[i]) : "NULL";
    }
    return s + "}";
}

std::string random_value(std::mt19937_64 &rng) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string v(128, 'x');
    for (auto &ch : v) ch = alphabet[rng() % (sizeof alphabet - 1)];
    return v;
}

// A string as a JSON string literal, escaped exactly as PostgreSQL's escape_json (row_to_json)
// does: \" \\ \b \f \n \r \t, other control characters \u00XX, everything else as is.
std::string json_string(const std::string &v) {
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

// The row (id, value) of public.items as RESP SET writes it: byte for byte row_to_json(row)::text.
std::string row_json(long long id, const std::string &value) {
    return "{\"id\":" + std::to_string(id) + ",\"value\":" + json_string(value) + "}";
}

// The keys of one request of the miss mode: every other key has no row (absent ids follow the
// table: rows+1, rows+2, ...), the same keys in every request like the warm mode; a request of
// one key alternates between id 1 and id rows+1 (seq: the connection's request number, index:
// the connection's).
std::vector<long long> miss_keys(const Options &o, uint64_t seq, int index) {
    std::vector<long long> k(o.batch);
    if (o.batch == 1) {
        k[0] = (seq + static_cast<uint64_t>(index)) % 2 == 0 ? 1 : o.rows + 1;
    } else {
        for (int i = 0; i < o.batch; i++) k[i] = i % 2 == 0 ? i / 2 + 1 : o.rows + i / 2 + 1;
    }
    return k;
}

bool is_resp_path(const std::string &path) {
    return path == "resp" || path == "redis" || path == "resp_set" || path == "redis_set";
}

// A RESP connection to port; AUTH user password first when a user is given.
int resp_connect_as(int port, const std::string &user, const std::string &password) {
    int fd = resp_connect(port);
    if (!user.empty()) {
        RespValue v = resp_call(fd, resp_command({"AUTH", user, password}));
        if (v.kind != RespValue::Simple || v.str != "OK")
            die("AUTH " + user + " on port " + std::to_string(port) + ": " + (v.kind == RespValue::Error ? v.str : "unexpected reply"));
    }
    return fd;
}

// ------------------------------------------------------------------ check mode

struct Row { long long id; std::optional<std::string> value; std::string json; };

int g_failures = 0;
void fail(const std::string &what) {
    std::fprintf(stderr, "loadgen check: MISMATCH: %s\n", what.c_str());
    g_failures++;
}

PGresult *exec_prepared(PGconn *c, const char *name, const std::string &arr) {
    const char *vals[1] = {arr.c_str()};
    PGresult *r = PQexecPrepared(c, name, 1, vals, nullptr, nullptr, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) die(std::string("query ") + name + " " + arr + ": " + PQerrorMessage(c));
    return r;
}

std::string show_row(const Row &r) {
    return "(" + std::to_string(r.id) + "," + (r.value ? *r.value : "NULL") + ")";
}

// An element of mget's JSON array against the expected row (or null).
void check_json_element(const std::string &ctx, const rapidjson::Value &v, const Row *exp) {
    if (!exp) {
        if (!v.IsNull()) fail(ctx + ": expected null");
        return;
    }
    if (!v.IsObject() || v.MemberCount() != 2 || !v.HasMember("id") || !v.HasMember("value")) {
        fail(ctx + ": expected an object {id, value} for key " + std::to_string(exp->id));
        return;
    }
    if (!v["id"].IsInt64() || v["id"].GetInt64() != exp->id) fail(ctx + ": wrong id, expected " + std::to_string(exp->id));
    const auto &val = v["value"];
    if (exp->value ? (!val.IsString() || std::string(val.GetString(), val.GetStringLength()) != *exp->value) : !val.IsNull())
        fail(ctx + ": wrong value for key " + std::to_string(exp->id));
}

std::string describe(const RespValue &v) {
    switch (v.kind) {
    case RespValue::Nil: return "nil";
    case RespValue::Bulk: return "bulk " + v.str;
    case RespValue::Simple: return "+" + v.str;
    case RespValue::Error: return "-" + v.str;
    case RespValue::Integer: return ":" + v.str;
    case RespValue::Array: return "an array of " + std::to_string(v.items.size());
    }
    return "?";
}

// The write paths, after the reads and on rows they do not use (first_id, first_id + 1): the
// row is read through RESP first (so that it is cached and the write must invalidate it); RESP
// SET as the writing role, then mget_json, plain SQL and RESP GET (the reading role) must show
// exactly the object; the benchmark's prepared SQL UPDATE, then SQL and RESP GET must show it;
// redis-server SET of the same bytes, then GET (this also leaves redis-server equal to the table).
// One row with a plain 128-byte value like the timed samples, one with characters JSON escapes.
// Returns the number of comparisons.
int check_writes(const Options &o, PGconn *c, int resp, int redis, long long first_id) {
    pg_prepare(c, "row", "SELECT value, row_to_json(i)::text FROM public.items i WHERE id = $1", 1);
    pg_prepare(c, "update", UPDATE_SQL, 2);
    int writer = resp_connect_as(o.resp_port, o.resp_user, o.resp_password);
    std::mt19937_64 rng(std::random_device{}());
    struct Case { std::string set_value, update_value; };
    std::vector<Case> cases = {
        {random_value(rng), random_value(rng)},
        {"quote \" backslash \\ tab \t newline \n bell \x07 slash / \xc3\xa9 " + random_value(rng).substr(0, 16),
         "update \"\\\t\x01 " + random_value(rng).substr(0, 16)},
    };
    int compared = 0;
    for (size_t i = 0; i < cases.size(); i++) {
        const long long id = first_id + static_cast<long long>(i);
        const std::string ids = std::to_string(id), key = o.prefix + ":" + ids, ctx = "write check, " + key;
        auto sql_row = [&](const std::string &when) {
            const char *vals[1] = {ids.c_str()};
            PGresult *r = PQexecPrepared(c, "row", 1, vals, nullptr, nullptr, 0);
            if (PQresultStatus(r) != PGRES_TUPLES_OK) die("query row " + ids + ": " + PQerrorMessage(c));
            Row row{id, std::nullopt, ""};
            if (PQntuples(r) != 1) {
                fail(ctx + ": " + when + ", SQL finds " + std::to_string(PQntuples(r)) + " rows, expected 1");
            } else {
                if (!PQgetisnull(r, 0, 0)) row.value = std::string(PQgetvalue(r, 0, 0));
                row.json = PQgetvalue(r, 0, 1);
            }
            PQclear(r);
            return row;
        };
        auto expect_get = [&](int fd, const char *who, const std::string &when, const std::string &want) {
            RespValue g = resp_call(fd, resp_command({"GET", key}));
            if (g.kind != RespValue::Bulk || g.str != want)
                fail(ctx + ": " + when + ", " + who + " GET answers " + describe(g) + ", expected " + want);
            compared++;
        };
        auto expect_ok = [&](const RespValue &r, const std::string &what) {
            if (r.kind != RespValue::Simple || r.str != "OK") fail(ctx + ": " + what + " answered " + describe(r) + ", expected +OK");
            compared++;
        };

        // the row as it is, cached by the RESP read
        Row before = sql_row("before the writes");
        expect_get(resp, "RESP", "before the writes", before.json);

        // RESP SET: the row becomes the object
        const std::string json1 = row_json(id, cases[i].set_value);
        expect_ok(resp_call(writer, resp_command({"SET", key, json1})), "RESP SET " + json1);
        {
            const std::string arr = "{" + ids + "}";
            PGresult *q = exec_prepared(c, "mget_json", arr);
            rapidjson::Document d;
            d.Parse(PQgetvalue(q, 0, 0));
            if (d.HasParseError() || !d.IsArray() || d.Size() != 1)
                fail(ctx + ": after RESP SET, mget_json answers " + PQgetvalue(q, 0, 0));
            else {
                Row want{id, cases[i].set_value, json1};
                check_json_element(ctx + ": after RESP SET, mget_json", d[0], &want);
            }
            PQclear(q);
            compared++;
        }
        Row after_set = sql_row("after RESP SET");
        if (after_set.value != cases[i].set_value || after_set.json != json1)
            fail(ctx + ": after RESP SET, SQL shows " + after_set.json + ", expected " + json1);
        compared++;
        expect_get(resp, "RESP", "after RESP SET", json1);

        // SQL UPDATE (the benchmark's prepared statement)
        const std::string json2 = row_json(id, cases[i].update_value);
        {
            const char *vals[2] = {ids.c_str(), cases[i].update_value.c_str()};
            PGresult *r = PQexecPrepared(c, "update", 2, vals, nullptr, nullptr, 0);
            if (PQresultStatus(r) != PGRES_COMMAND_OK) die("UPDATE " + ids + ": " + PQerrorMessage(c));
            if (std::string(PQcmdTuples(r)) != "1") fail(ctx + ": SQL UPDATE changed " + PQcmdTuples(r) + " rows, expected 1");
            PQclear(r);
            compared++;
        }
        Row after_update = sql_row("after SQL UPDATE");
        if (after_update.json != json2) fail(ctx + ": after SQL UPDATE, SQL shows " + after_update.json + ", expected " + json2);
        compared++;
        expect_get(resp, "RESP", "after SQL UPDATE", json2);

        // redis-server SET of the same bytes
        expect_ok(resp_call(redis, resp_command({"SET", key, json2})), "redis-server SET");
        expect_get(redis, "redis-server", "after redis-server SET", json2);
    }
    close(writer);
    return compared;
}

int run_check(const Options &o) {
    PGconn *c = pg_connect(o.pg);
    pg_prepare(c, "expected", "SELECT id, value, row_to_json(i)::text FROM public.items i WHERE id = ANY($1::bigint[])", 1);
    for (const char *p : {"sql", "mget", "mget_json", "fdw"}) pg_prepare(c, p, sql_for(p), 1);
    int resp = o.resp_port ? resp_connect(o.resp_port) : -1;
    int redis = o.redis_port ? resp_connect(o.redis_port) : -1;

    using K = std::optional<long long>;
    std::vector<std::vector<K>> cases = {
        {1}, {3, 1, 3, 999999}, {5, std::nullopt, 5, 0, -1}, {}, {std::nullopt, std::nullopt},
        {4096, 1, 4097}, {std::nullopt}, {42, 42, 42},
    };
    for (int n : {16, 64}) {
        std::vector<K> k;
        for (int i = 1; i <= n; i++) k.push_back(i);
        cases.push_back(k);
        std::reverse(k.begin(), k.end());
        cases.push_back(k);
    }
    // the keys of the miss mode (every other one without a row), as the timed samples send them
    for (int n : {1, 16, 64}) {
        Options m = o;
        m.mode = "miss";
        m.batch = n;
        for (uint64_t seq = 0; seq < (n == 1 ? 2u : 1u); seq++) {
            auto k = miss_keys(m, seq, 0);
            cases.push_back(std::vector<K>(k.begin(), k.end()));
        }
    }
    int compared = 0;
    for (int pass = 0; pass < 2; pass++) {  // pass 0 may fill the cache, pass 1 hits it
        for (auto &keys : cases) {
            std::string arr = array_literal(keys);
            std::string ctx0 = "keys " + arr + (pass ? " (second pass)" : " (first pass)");
            std::map<long long, Row> exp;
            PGresult *r = exec_prepared(c, "expected", arr);
            for (int i = 0; i < PQntuples(r); i++) {
                Row row{std::atoll(PQgetvalue(r, i, 0)), std::nullopt, PQgetvalue(r, i, 2)};
                if (!PQgetisnull(r, i, 1)) row.value = std::string(PQgetvalue(r, i, 1));
                exp[row.id] = row;
            }
            PQclear(r);
            // set-returning paths: prepared SQL and the FDW give the set of distinct existing keys
            for (const char *p : {"sql", "fdw"}) {
                std::string ctx = std::string(p) + " " + ctx0;
                PGresult *q = exec_prepared(c, p, arr);
                std::vector<Row> got;
                for (int i = 0; i < PQntuples(q); i++) {
                    Row row{std::atoll(PQgetvalue(q, i, 0)), std::nullopt, ""};
                    if (!PQgetisnull(q, i, 1)) row.value = std::string(PQgetvalue(q, i, 1));
                    got.push_back(row);
                }
                if (PQnfields(q) != 2) fail(ctx + ": expected 2 columns");
                PQclear(q);
                std::sort(got.begin(), got.end(), [](const Row &a, const Row &b) { return a.id < b.id; });
                if (got.size() != exp.size()) fail(ctx + ": " + std::to_string(got.size()) + " rows, expected " + std::to_string(exp.size()));
                size_t i = 0;
                for (auto &[id, e] : exp) {
                    if (i < got.size() && (got[i].id != e.id || got[i].value != e.value))
                        fail(ctx + ": row " + show_row(got[i]) + ", expected " + show_row(e));
                    i++;
                }
                compared++;
            }
            // array paths: one element per input key, input order, duplicates kept, null for NULL/missing
            for (const char *p : {"mget", "mget_json"}) {
                std::string ctx = std::string(p) + " " + ctx0;
                PGresult *q = exec_prepared(c, p, arr);
                if (PQntuples(q) != 1 || PQnfields(q) != 1) {
                    fail(ctx + ": expected one row with one column");
                } else if (PQgetisnull(q, 0, 0)) {
                    fail(ctx + ": NULL result, expected a JSON array of " + std::to_string(keys.size()));
                } else {
                    rapidjson::Document d;
                    d.Parse(PQgetvalue(q, 0, 0));
                    if (d.HasParseError() || !d.IsArray()) {
                        fail(ctx + ": not a JSON array: " + PQgetvalue(q, 0, 0));
                    } else if (d.Size() != keys.size()) {
                        fail(ctx + ": " + std::to_string(d.Size()) + " elements, expected " + std::to_string(keys.size()));
                    } else {
                        for (size_t i = 0; i < keys.size(); i++) {
                            const Row *e = nullptr;
                            if (keys[i] && exp.count(*keys[i])) e = &exp[*keys[i]];
                            check_json_element(ctx + " element " + std::to_string(i), d[i], e);
                        }
                    }
                }
                PQclear(q);
                compared++;
            }
            // RESP paths: MGET prefix:k for the non-NULL keys (RESP has no NULL key); the values
            // must be byte for byte row_to_json(row)::text; MGET without keys is an error
            std::vector<long long> rk;
            for (auto &k : keys) if (k) rk.push_back(*k);
            std::vector<std::string> args = {"MGET"};
            for (auto k : rk) args.push_back(o.prefix + ":" + std::to_string(k));
            for (auto [name, fd] : {std::pair<const char *, int>{"resp", resp}, {"redis", redis}}) {
                if (fd < 0) continue;
                std::string ctx = std::string(name) + " MGET " + ctx0;
                RespValue v = resp_call(fd, resp_command(args));
                if (rk.empty()) {
                    if (v.kind != RespValue::Error) fail(ctx + ": MGET without keys should be an error");
                } else if (v.kind != RespValue::Array || v.items.size() != rk.size()) {
                    fail(ctx + ": expected an array of " + std::to_string(rk.size()) + (v.kind == RespValue::Error ? ", got error " + v.str : ""));
                } else {
                    for (size_t i = 0; i < rk.size(); i++) {
                        auto it = exp.find(rk[i]);
                        const RespValue &e = v.items[i];
                        if (it == exp.end()) {
                            if (e.kind != RespValue::Nil) fail(ctx + " element " + std::to_string(i) + ": expected nil");
                        } else if (e.kind != RespValue::Bulk || e.str != it->second.json) {
                            fail(ctx + " element " + std::to_string(i) + ": got " + (e.kind == RespValue::Bulk ? e.str : "non-bulk") +
                                 ", expected " + it->second.json);
                        }
                    }
                }
                compared++;
            }
        }
    }
    int write_compared = resp >= 0 && redis >= 0 ? check_writes(o, c, resp, redis, 4001) : 0;
    compared += write_compared;
    PQfinish(c);
    if (resp >= 0) close(resp);
    if (redis >= 0) close(redis);
    std::fprintf(stderr, "loadgen check: %d comparisons (%d of them writes), %d mismatches\n", compared,
                 write_compared, g_failures);
    std::printf("{\"client\":\"native\",\"comparisons\":%d,\"write_comparisons\":%d,\"mismatches\":%d}\n",
                compared, write_compared, g_failures);
    return g_failures ? 1 : 0;
}

// ------------------------------------------------------------------ run mode

struct Slot {
    PGconn *pg = nullptr;         // SQL paths; for resp in mixed mode: the update connection
    int fd = -1;                  // RESP socket
    enum State { Idle, PgWait, RespWait } state = Idle;
    std::string out;              // RESP bytes still to send
    std::string in;               // RESP bytes received
    Clock::time_point sent;
    uint64_t seq = 0;             // requests issued by this slot (key rotation)
    int index = 0;
    int expect_present = 0;       // keys of the outstanding read that have a row
};

struct ThreadResult {
    std::vector<uint32_t> lat_us;
    uint64_t reads = 0, updates = 0, errors = 0;
};

struct Runner {
    Options o;
    std::atomic<int> warmed{0};
    std::atomic<bool> go{false}, stop{false};
    std::string error;
    std::atomic<bool> failed{false};

    void fatal(const std::string &msg) {
        if (!failed.exchange(true)) error = msg;
        stop = true;
    }

    std::vector<long long> keys_for(Slot &s) {
        std::vector<long long> k(o.batch);
        if (o.mode == "warm" || o.path == "update") {
            for (int i = 0; i < o.batch; i++) k[i] = i + 1;
        } else if (o.mode == "miss") {
            k = miss_keys(o, s.seq, s.index);
        } else if (o.mode == "mixed") {
            long long start = (s.seq * o.batch + s.index * 7) % o.hot;
            for (int i = 0; i < o.batch; i++) k[i] = (start + i) % o.hot + 1;
        } else {  // cold: walk the whole table so that reads keep missing after the flush
            long long start = (s.seq * o.batch + static_cast<long long>(s.index) * 4099) % o.rows;
            for (int i = 0; i < o.batch; i++) k[i] = (start + i) % o.rows + 1;
        }
        return k;
    }

    int present(const std::vector<long long> &k) const {
        return static_cast<int>(std::count_if(k.begin(), k.end(), [&](long long x) { return x >= 1 && x <= o.rows; }));
    }

    bool is_resp() const { return is_resp_path(o.path); }
    bool is_set() const { return o.path == "resp_set" || o.path == "redis_set"; }

    // Starts the next request of a slot. Returns false on error.
    void issue(Slot &s, std::mt19937_64 &rng, bool &is_update) {
        is_update = false;
        bool upd = o.path == "update" || (o.mode == "mixed" && static_cast<int>(rng() % 100) < o.update_pct);
        s.sent = Clock::now();
        if (is_set()) {  // one random row, the whole object, as the bytes row_to_json gives
            is_update = true;
            long long id = static_cast<long long>(rng() % o.rows) + 1;
            std::string key = o.prefix + ":" + std::to_string(id);
            s.out = resp_command({"SET", key, row_json(id, random_value(rng))});
            s.in.clear();
            s.state = Slot::RespWait;
            flush_resp(s);
        } else if (upd) {
            is_update = true;
            long long id = o.mode == "mixed" ? static_cast<long long>(rng() % o.hot) + 1
                                             : static_cast<long long>(rng() % o.rows) + 1;
            std::string ids = std::to_string(id), val = random_value(rng);
            const char *vals[2] = {ids.c_str(), val.c_str()};
            if (!PQsendQueryPrepared(s.pg, "u", 2, vals, nullptr, nullptr, 0))
                return fatal(std::string("send UPDATE: ") + PQerrorMessage(s.pg));
            if (PQflush(s.pg) < 0) return fatal(std::string("flush: ") + PQerrorMessage(s.pg));
            s.state = Slot::PgWait;
        } else if (is_resp()) {
            auto k = keys_for(s);
            s.expect_present = present(k);
            std::vector<std::string> args = {"MGET"};
            for (auto x : k) args.push_back(o.prefix + ":" + std::to_string(x));
            s.out = resp_command(args);
            s.in.clear();
            s.state = Slot::RespWait;
            flush_resp(s);
        } else {
            auto k = keys_for(s);
            s.expect_present = present(k);
            std::vector<std::optional<long long>> kk(k.begin(), k.end());
            std::string arr = array_literal(kk);
            const char *vals[1] = {arr.c_str()};
            if (!PQsendQueryPrepared(s.pg, "q", 1, vals, nullptr, nullptr, 0))
                return fatal(std::string("send: ") + PQerrorMessage(s.pg));
            if (PQflush(s.pg) < 0) return fatal(std::string("flush: ") + PQerrorMessage(s.pg));
            s.state = Slot::PgWait;
        }
        s.seq++;
    }

    void flush_resp(Slot &s) {
        while (!s.out.empty()) {
            ssize_t n = ::send(s.fd, s.out.data(), s.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK) return;
                return fatal(std::string("RESP send: ") + strerror(errno));
            }
            s.out.erase(0, n);
        }
    }

    // Progress on a slot; returns true when its request has completed.
    bool progress(Slot &s, short revents, bool is_update) {
        if (s.state == Slot::PgWait) {
            if (revents & POLLOUT) {
                if (PQflush(s.pg) < 0) { fatal(std::string("flush: ") + PQerrorMessage(s.pg)); return false; }
            }
            if (!PQconsumeInput(s.pg)) { fatal(std::string("consume: ") + PQerrorMessage(s.pg)); return false; }
            while (!PQisBusy(s.pg)) {
                PGresult *r = PQgetResult(s.pg);
                if (!r) { s.state = Slot::Idle; return true; }
                auto st = PQresultStatus(r);
                if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
                    fatal(std::string("query failed: ") + PQresultErrorMessage(r));
                    PQclear(r);
                    return false;
                }
                if (!is_update && o.mode != "mixed") {
                    int want = (o.path == "sql" || o.path == "fdw") ? s.expect_present : 1;
                    if (PQntuples(r) != want) {
                        fatal("unexpected row count " + std::to_string(PQntuples(r)) + " (expected " + std::to_string(want) + ")");
                    }
                }
                PQclear(r);
            }
            return false;
        }
        if (s.state == Slot::RespWait) {
            if (revents & POLLOUT) flush_resp(s);
            if (revents & (POLLIN | POLLHUP | POLLERR)) {
                char tmp[65536];
                for (;;) {
                    ssize_t n = ::recv(s.fd, tmp, sizeof tmp, MSG_DONTWAIT);
                    if (n > 0) { s.in.append(tmp, n); continue; }
                    if (n == 0) { fatal("RESP server closed the connection"); return false; }
                    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
                    fatal(std::string("RESP recv: ") + strerror(errno));
                    return false;
                }
                size_t pos = 0, count = 0, nils = 0;
                if (!s.in.empty() && s.in[0] == '-') { fatal("RESP error: " + s.in.substr(0, s.in.find('\r'))); return false; }
                if (resp_parse(s.in.data(), s.in.size(), pos, nullptr, &count, &nils)) {
                    if (is_set()) {
                        if (s.in != "+OK\r\n") fatal("SET answered " + s.in.substr(0, s.in.find('\r')) + ", expected +OK");
                    } else if (count != static_cast<size_t>(o.batch)) {
                        fatal("RESP reply with " + std::to_string(count) + " elements");
                    } else if (nils != static_cast<size_t>(o.batch - s.expect_present)) {  // every absent key nil, no other
                        fatal("RESP reply with " + std::to_string(nils) + " nils, expected " +
                              std::to_string(o.batch - s.expect_present));
                    }
                    s.state = Slot::Idle;
                    return true;
                }
            }
        }
        return false;
    }

    void thread_main(std::vector<Slot> &slots, ThreadResult &res, unsigned seed) {
        std::mt19937_64 rng(seed);
        std::vector<pollfd> pfds(slots.size());
        std::vector<char> upd(slots.size(), 0);
        auto loop = [&](bool timed, int warm_per_slot) {
            std::vector<int> done(slots.size(), 0);
            size_t finished = 0;
            for (size_t i = 0; i < slots.size(); i++) {
                bool u;
                issue(slots[i], rng, u);
                upd[i] = u;
            }
            while (!stop) {
                for (size_t i = 0; i < slots.size(); i++) {
                    Slot &s = slots[i];
                    pfds[i].fd = s.state == Slot::PgWait ? PQsocket(s.pg) : s.state == Slot::RespWait ? s.fd : -1;
                    pfds[i].events = POLLIN;
                    if ((s.state == Slot::RespWait && !s.out.empty()) ||
                        (s.state == Slot::PgWait && PQisnonblocking(s.pg) && PQflush(s.pg) == 1))
                        pfds[i].events |= POLLOUT;
                    pfds[i].revents = 0;
                }
                int n = ::poll(pfds.data(), pfds.size(), 100);
                if (n < 0 && errno != EINTR) { fatal("poll failed"); break; }
                auto now = Clock::now();
                for (size_t i = 0; i < slots.size() && n > 0; i++) {
                    if (!pfds[i].revents) continue;
                    Slot &s = slots[i];
                    if (!progress(s, pfds[i].revents, upd[i])) continue;
                    if (timed) {
                        auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - s.sent).count();
                        res.lat_us.push_back(static_cast<uint32_t>(us));
                        if (upd[i]) res.updates++; else res.reads++;
                        if (stop) continue;
                        bool u;
                        issue(s, rng, u);
                        upd[i] = u;
                    } else if (++done[i] < warm_per_slot) {
                        bool u;
                        issue(s, rng, u);
                        upd[i] = u;
                    } else if (++finished == slots.size()) {
                        return;
                    }
                }
            }
        };
        loop(false, 3);
        warmed++;
        while (!go && !stop) std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (stop) return;
        res.lat_us.reserve(1 << 20);
        loop(true, 0);
        // drain what is still outstanding so that connections are clean before closing
        for (auto &s : slots)
            if (s.state == Slot::PgWait) {
                PQsetnonblocking(s.pg, 0);
                while (PGresult *r = PQgetResult(s.pg)) PQclear(r);
            }
    }
};

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

int run_load(const Options &o) {
    Runner R;
    R.o = o;
    bool resp = is_resp_path(o.path);
    if (!resp && !sql_for(o.path)) die("unknown path " + o.path);
    if ((o.path == "resp_set" || o.path == "redis_set") && o.mode != "write") die("path " + o.path + " needs --mode write");
    if (o.mode != "warm" && o.mode != "miss" && o.mode != "mixed" && o.mode != "cold" && o.mode != "write")
        die("unknown mode " + o.mode);
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    int nthreads = std::max(1, std::min<int>(o.conns, static_cast<int>(cores * 2)));

    std::vector<std::vector<Slot>> slots(nthreads);
    for (int i = 0; i < o.conns; i++) {
        Slot s;
        s.index = i;
        bool need_pg = !resp || o.mode == "mixed";
        if (need_pg) {
            s.pg = pg_connect(o.pg);
            if (!resp) pg_prepare(s.pg, "q", sql_for(o.path), o.path == "update" ? 2 : 1);
            pg_prepare(s.pg, "u", UPDATE_SQL, 2);
            if (PQsetnonblocking(s.pg, 1) != 0) die("PQsetnonblocking failed");
        }
        if (o.path == "resp_set")  // the writing role (the default RESP role may only read)
            s.fd = resp_connect_as(o.resp_port, o.resp_user, o.resp_password);
        else if (resp)
            s.fd = resp_connect(o.path == "resp" ? o.resp_port : o.redis_port);
        slots[i % nthreads].push_back(std::move(s));
    }
    std::vector<ThreadResult> results(nthreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < nthreads; t++)
        threads.emplace_back([&, t] { R.thread_main(slots[t], results[t], 12345u + t); });
    while (R.warmed < nthreads && !R.stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (R.stop) {
        for (auto &th : threads) th.join();
        die("warm-up failed: " + R.error);
    }
    std::printf("READY\n");
    std::fflush(stdout);
    std::string line;
    if (!std::getline(std::cin, line)) die("no GO line on stdin");
    double cpu0 = cpu_seconds();
    auto t0 = Clock::now();
    R.go = true;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    R.stop = true;
    for (auto &th : threads) th.join();
    double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    double cpu = cpu_seconds() - cpu0;
    if (R.failed) die("run failed: " + R.error);

    std::vector<uint32_t> lat;
    uint64_t reads = 0, updates = 0;
    for (auto &r : results) {
        lat.insert(lat.end(), r.lat_us.begin(), r.lat_us.end());
        reads += r.reads;
        updates += r.updates;
    }
    std::sort(lat.begin(), lat.end());
    auto pct = [&](double p) -> double {
        if (lat.empty()) return 0;
        size_t i = std::min(lat.size() - 1, static_cast<size_t>(p / 100.0 * lat.size()));
        return lat[i];
    };
    std::printf("{\"requests\":%" PRIu64 ",\"reads\":%" PRIu64 ",\"updates\":%" PRIu64
                ",\"elapsed_s\":%.6f,\"client_cpu_s\":%.6f,\"threads\":%d,"
                "\"latency_us\":{\"p50\":%.0f,\"p90\":%.0f,\"p99\":%.0f,\"p999\":%.0f,\"max\":%.0f}}\n",
                reads + updates, reads, updates, elapsed, cpu, nthreads, pct(50), pct(90), pct(99), pct(99.9),
                lat.empty() ? 0.0 : static_cast<double>(lat.back()));
    std::fflush(stdout);
    std::getline(std::cin, line);  // the caller reads server CPU before we disconnect
    for (auto &v : slots)
        for (auto &s : v) {
            if (s.pg) PQfinish(s.pg);
            if (s.fd >= 0) close(s.fd);
        }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    if (argc < 2) die("usage: loadgen check|run [options] (see the header of bench/loadgen.cpp)");
    o.cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) die("missing value for " + a);
            return argv[++i];
        };
        if (a == "--pg") o.pg = val();
        else if (a == "--path") o.path = val();
        else if (a == "--mode") o.mode = val();
        else if (a == "--prefix") o.prefix = val();
        else if (a == "--resp-port") o.resp_port = std::stoi(val());
        else if (a == "--redis-port") o.redis_port = std::stoi(val());
        else if (a == "--resp-user") o.resp_user = val();
        else if (a == "--resp-password") o.resp_password = val();
        else if (a == "--conns") o.conns = std::stoi(val());
        else if (a == "--batch") o.batch = std::stoi(val());
        else if (a == "--seconds") o.seconds = std::stod(val());
        else if (a == "--update-pct") o.update_pct = std::stoi(val());
        else if (a == "--hot") o.hot = std::stoi(val());
        else if (a == "--rows") o.rows = std::stoi(val());
        else die("unknown option " + a);
    }
    if (o.cmd == "check") return run_check(o);
    if (o.cmd == "run") return run_load(o);
    die("unknown command " + o.cmd);
}
