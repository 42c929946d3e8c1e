// bench/loadgen.cpp: native closed-loop load generator of the benchmark harness.
//
//   loadgen check --pg CONNINFO --resp-port P --redis-port R [--keys int,uuid,text,pair] [--prefix P]
//                 [--resp-user U --resp-password W]
//       compares every read path with prepared SQL (result contract) for each key type (default:
//       all), the SQL paths with text and with binary key arrays, then the writes (public.items):
//       RESP SET (as U) seen by SQL and RESP GET, SQL UPDATE seen by RESP GET, redis-server SET;
//       exit 1 on a difference
//   loadgen run --pg CONNINFO --path PATH --conns N --batch B --seconds S
//               [--mode warm|miss|mixed|cold|write|serializable] [--keys int|uuid|text|pair] [--params text|binary]
//               [--resp-port P] [--redis-port R] [--resp-user U --resp-password W]
//       PATH: sql | mget | mget_json | fdw | resp | redis        (reads of B keys)
//             parse: `SELECT cardinality($1::bigint[])`, mget's key array without the reads
//             (the control: what the server spends on receiving and parsing the keys)
//             update | resp_set | redis_set                      (writes of one random row)
//       update is the prepared SQL UPDATE; resp_set is `SET items:<id> {"id":<id>,"value":"..."}`
//       to the RESP port, as U (AUTH U W on every connection) when --resp-user is given;
//       redis_set the same bytes to redis-server.
//       serializable: the warm mode's requests, each its own SERIALIZABLE transaction (the
//       connections' default_transaction_isolation), for the SQL read paths.
//       miss: every other key of a request has no row (ids rows+1, rows+2, ... are absent), the
//       same keys in every request like warm; with --batch 1 requests alternate between id 1 and
//       id rows+1. Every reply must have exactly the expected number of NULLs / nils (RESP) or rows.
//       --keys (reads of the warm, miss and cold modes): the table of the key type (see KEY_TYPES:
//       int public.items, uuid public.items_uuid, text public.items_text, pair public.items_pair
//       with the composite key (a, b)), the same rows under keys of that type; the statements and
//       the RESP keys follow from it (`loadgen keys` prints them)
//       --params (the SQL read paths): the key arrays as text parameters (array literals, the
//       default) or binary ones (PostgreSQL's binary array format, as pgx and other binary-protocol
//       drivers send a uuid[]: the server then runs array_recv and uuid_recv/int8recv/textrecv
//       instead of array_in and the type's input function); results are text either way
//   loadgen keys [--keys LIST]
//       one JSON line describing the key types: tables, key columns, the statements of the SQL
//       read paths, the parameters and the RESP keys of rows 1 and 2
//   loadgen resp-keys --keys TYPE --batch B
//       the RESP keys of rows 1..B of the key type's table, one per line (the keys of
//       redis-benchmark's fixed MGET in bench/driver.py)
//   loadgen soak --pg CONNINFO --resp-port P --redis-port R --resp-user U --resp-password W
//                --seconds S --interval I [--conns N] [--batch B] [--write-rate W]
//                [--probe-interval-ms M] [--probe-bound-ms X] [--probe-rows K]
//                [--standby-pg CONNINFO --standby-resp-port P2]
//       every path at once for S seconds (readers: mget, fdw, resp, redis, N connections each;
//       writers: update, resp_set, redis_set, W/s each), one JSON line per interval I, then a
//       final line with the stale probes' results; exit 1 on a stale, wrong or never visible probe
//       observation (see "soak mode" below)
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
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
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
    // keys: the key type of run (one of KEY_TYPES), of check a comma-separated list (default: all);
    // prefix: RESP key prefix, default the key type's table name
    // params (run): the format of the SQL paths' key arrays, text (array literals) or binary
    // (PostgreSQL's binary array format, what pgx and other binary-protocol drivers send)
    std::string cmd, pg, path = "sql", mode = "warm", keys, prefix, resp_user, resp_password, params = "text";
    int resp_port = 0, redis_port = 0, conns = 4, batch = 1, update_pct = 5, hot = 128, rows = 4096;
    double seconds = 1;
    // soak
    double interval = 10, write_rate = 100;
    std::string standby_pg;
    int standby_resp_port = 0, probe_interval_ms = 100, probe_bound_ms = 10000, probe_rows = 4;
};

// ------------------------------------------------------------------ key types (--keys)
//
// Every benchmark table holds public.items' 4,096 values: row n (1..rows) of each under its own
// key (bench/run creates and loads them). keys_for(), miss_keys() and the check's cases pick row
// numbers; a KeyType renders row n's key, as PostgreSQL prints it, per key column. Everything
// else — the statements of the SQL paths, their parameters, the RESP keys — follows from the
// table's name, its key columns and the element type of mget's key array.
struct KeyColumn {
    const char *name, *type;
    void (*put)(std::string &out, long long n);  // appends row n's key in this column
};
struct KeyType {
    const char *name;        // --keys
    const char *table;       // public.<table>, the foreign table cache.<table>, RESP prefix <table>
    const char *array_type;  // element type of mget's key array ($1::<array_type>[])
    std::vector<KeyColumn> cols;
};
void put_int(std::string &out, long long n) {
    char buf[24];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, n).ptr);
}
void put_uuid(std::string &out, long long n) {  // '00000000-0000-4000-8000-' || lpad(to_hex(n), 12, '0')
    static const char hex[] = "0123456789abcdef";
    out += "00000000-0000-4000-8000-";
    for (int shift = 44; shift >= 0; shift -= 4) out += hex[(static_cast<unsigned long long>(n) >> shift) & 15];
}
const std::vector<KeyType> KEY_TYPES = {
    {"int", "items", "bigint", {{"id", "bigint", put_int}}},
    {"uuid", "items_uuid", "uuid", {{"id", "uuid", put_uuid}}},
    {"text", "items_text", "text", {{"id", "text", [](std::string &out, long long n) { out += 'k'; put_int(out, n); }}}},
    {"pair", "items_pair", "bigint",
     {{"a", "bigint", [](std::string &out, long long n) { put_int(out, n / 16); }},
      {"b", "int", [](std::string &out, long long n) { put_int(out, n % 16); }}}},
};
const KeyType &INT_KEYS = KEY_TYPES[0];

const KeyType &key_type(const std::string &name) {
    for (auto &t : KEY_TYPES)
        if (name == t.name) return t;
    die("unknown key type " + name + " (int, uuid, text, pair)");
}

bool is_sql_read(const std::string &path) {
    return path == "sql" || path == "mget" || path == "mget_json" || path == "fdw" || path == "parse";
}
bool is_composite(const KeyType &t) { return t.cols.size() > 1; }
// mget, mget_json and parse take one array of keys (two-dimensional for a composite key);
// prepared SQL and the FDW one array per key column (one array for a one-column key)
int key_params(const KeyType &t, const std::string &path) {
    return is_composite(t) && (path == "sql" || path == "fdw") ? static_cast<int>(t.cols.size()) : 1;
}

// The statement of a SQL read path. One-column keys: `= ANY($1)`. Composite keys: a join of the
// table with unnest() of one array per key column, which PostgreSQL runs as a nested loop of
// index (or, on the foreign table, cache) lookups, one per key; like the mget paths (and unlike
// `= ANY`) a key asked twice gives its row twice. Of the natural forms it is the fastest:
// `(a, b) IN (SELECT * FROM unnest($1, $2))` adds a HashAggregate of the keys, and a list
// `(a, b) IN (($1, $2), ...)` (a statement per batch size) runs as a BitmapOr of index scans.
std::string statement(const KeyType &t, const std::string &path) {
    const std::string table = std::string("public.") + t.table, foreign = std::string("cache.") + t.table;
    const std::string keys = std::string("$1::") + t.array_type + "[]";
    if (path == "mget") return "SELECT array_to_json(local_cache.mget('" + table + "'::regclass, " + keys + "))";
    if (path == "mget_json") return "SELECT local_cache.mget_json('" + table + "'::regclass, " + keys + ")";
    // the control: what the server spends on mget's key array alone (receiving and parsing it)
    if (path == "parse") return "SELECT cardinality(" + keys + ")";
    if (path != "sql" && path != "fdw") die("no statement for path " + path);
    const std::string &rel = path == "sql" ? table : foreign;
    if (!is_composite(t))
        return "SELECT * FROM " + rel + " WHERE " + t.cols[0].name + " = ANY($1::" + t.cols[0].type + "[])";
    std::string arrays, names, on;
    for (size_t i = 0; i < t.cols.size(); i++) {
        const std::string c = t.cols[i].name;
        arrays += (i ? ", $" : "$") + std::to_string(i + 1) + "::" + t.cols[i].type + "[]";
        names += (i ? ", " : "") + c;
        on += (i ? " AND t." : "t.") + c + " = k." + c;
    }
    return "SELECT t.* FROM unnest(" + arrays + ") k(" + names + ") JOIN " + rel + " t ON " + on;
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

// Appends row n's key in column c (NULL for nullopt) as array_in reads it: quoted only when it
// has to be.
void put_item(std::string &out, const KeyColumn &c, const std::optional<long long> &n) {
    if (!n) {
        out += "NULL";
        return;
    }
    const size_t from = out.size();
    c.put(out, *n);
    bool quote = out.size() == from || (out.size() - from == 4 && strcasecmp(out.c_str() + from, "NULL") == 0);
    for (size_t i = from; i < out.size() && !quote; i++) {
        switch (out[i]) {
        case '{': case '}': case ',': case '"': case '\\': case ' ': case '\t': case '\n': case '\r': case '\v': case '\f':
            quote = true;
        }
    }
    if (!quote) return;
    const std::string v = out.substr(from);
    out.resize(from);
    out += '"';
    for (char ch : v) {
        if (ch == '"' || ch == '\\') out += '\\';
        out += ch;
    }
    out += '"';
}

// The binary send format of one array element of SQL type `type`, from its text (row n's key as
// KeyColumn::put spells it): what int8send, int4send, uuid_send and textsend give.
struct ElementType {
    const char *type;
    Oid oid;
    void (*put)(std::string &out, const std::string &text);
};
void put_be(std::string &out, unsigned long long v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
long long parse_int(const std::string &text) {
    long long v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) die("not an integer key: " + text);
    return v;
}
const std::vector<ElementType> ELEMENT_TYPES = {
    {"bigint", 20, [](std::string &out, const std::string &x) { put_be(out, static_cast<unsigned long long>(parse_int(x)), 8); }},
    {"int", 23, [](std::string &out, const std::string &x) { put_be(out, static_cast<unsigned long long>(parse_int(x)), 4); }},
    {"uuid", 2950, [](std::string &out, const std::string &x) {
         std::string hex;
         for (char ch : x) if (ch != '-') hex += ch;
         if (hex.size() != 32) die("not a uuid key: " + x);
         auto nibble = [&](char ch) { return ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10; };
         for (size_t i = 0; i < 32; i += 2) out += static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1]));
     }},
    {"text", 25, [](std::string &out, const std::string &x) { out += x; }},
};
const ElementType &element_type(const char *type) {
    for (auto &e : ELEMENT_TYPES)
        if (std::strcmp(e.type, type) == 0) return e;
    die(std::string("no binary form for element type ") + type);
}

// An array parameter in PostgreSQL's binary format (array_recv): int32 ndim, int32 has-null flag,
// Oid element type, per dimension int32 size and int32 lower bound (1), then per element int32
// length (-1: NULL) and its bytes. elems: the elements' text (nullopt: NULL), row-major.
std::string binary_array(const ElementType &e, const std::vector<int> &dims, const std::vector<std::optional<std::string>> &elems) {
    std::string out;
    bool nulls = std::any_of(elems.begin(), elems.end(), [](auto &x) { return !x; });
    // an empty array has no dimensions
    const bool empty = elems.empty();
    put_be(out, empty ? 0 : dims.size(), 4);
    put_be(out, nulls, 4);
    put_be(out, e.oid, 4);
    if (!empty)
        for (int d : dims) {
            put_be(out, static_cast<unsigned>(d), 4);
            put_be(out, 1, 4);
        }
    std::string bytes;
    for (auto &x : elems) {
        if (!x) {
            put_be(out, 0xffffffffu, 4);
            continue;
        }
        bytes.clear();
        e.put(bytes, *x);
        put_be(out, bytes.size(), 4);
        out += bytes;
    }
    return out;
}

// The parameters of a request of path for rows (nullopt: a NULL key): key_params(t, path) arrays.
// Text: array literals, e.g. {1,2} (int), {{0,1},{0,2}} (pair, mget) or {0,0} and {1,2} (pair, sql
// and fdw). Binary: the same arrays in the binary format (binary_array), the element type that of
// the statement's cast ($1::<array_type>[] for mget, mget_json and parse; $k::<column type>[] for
// prepared SQL and the FDW).
std::vector<std::string> key_arrays(const KeyType &t, const std::string &path, const std::vector<std::optional<long long>> &rows,
                                    bool binary = false) {
    std::vector<std::string> out;
    if (binary) {
        auto text = [](const KeyColumn &c, const std::optional<long long> &n) -> std::optional<std::string> {
            if (!n) return std::nullopt;
            std::string s;
            c.put(s, *n);
            return s;
        };
        const int n = static_cast<int>(rows.size());
        if (key_params(t, path) == 1) {  // one array: 1-D, or 2-D (a row per key) for a composite key
            std::vector<std::optional<std::string>> elems;
            for (auto &r : rows)
                for (auto &c : t.cols) elems.push_back(text(c, r));
            const bool set_path = path == "sql" || path == "fdw";  // `= ANY($1::<column type>[])`
            out.push_back(binary_array(element_type(set_path ? t.cols[0].type : t.array_type),
                                       is_composite(t) ? std::vector<int>{n, static_cast<int>(t.cols.size())} : std::vector<int>{n},
                                       elems));
            return out;
        }
        for (auto &c : t.cols) {
            std::vector<std::optional<std::string>> elems;
            for (auto &r : rows) elems.push_back(text(c, r));
            out.push_back(binary_array(element_type(c.type), {n}, elems));
        }
        return out;
    }
    if (key_params(t, path) == 1 && is_composite(t)) {  // one row of the 2-D array per key
        std::string s = "{";
        for (size_t i = 0; i < rows.size(); i++) {
            s += i ? ",{" : "{";
            for (size_t c = 0; c < t.cols.size(); c++) {
                if (c) s += ',';
                put_item(s, t.cols[c], rows[i]);
            }
            s += '}';
        }
        out.push_back(s + "}");
        return out;
    }
    for (auto &col : t.cols) {
        std::string s = "{";
        for (size_t i = 0; i < rows.size(); i++) {
            if (i) s += ',';
            put_item(s, col, rows[i]);
        }
        out.push_back(s + "}");
    }
    return out;
}

// Appends the id part of row n's RESP key: the key's canonical text, a composite key's columns
// joined by ':' with ':' and '\' inside a column escaped by '\'.
void put_key_text(std::string &out, const KeyType &t, long long n) {
    if (!is_composite(t)) return t.cols[0].put(out, n);
    std::string col;
    for (size_t c = 0; c < t.cols.size(); c++) {
        if (c) out += ':';
        col.clear();
        t.cols[c].put(col, n);
        for (char ch : col) {
            if (ch == ':' || ch == '\\') out += '\\';
            out += ch;
        }
    }
}
std::string key_text(const KeyType &t, long long n) {
    std::string s;
    put_key_text(s, t, n);
    return s;
}

// The RESP key prefix of key type t: --prefix, or the table's name.
std::string resp_prefix(const Options &o, const KeyType &t) { return o.prefix.empty() ? t.table : o.prefix; }

std::string array_literal(const std::vector<std::optional<long long>> &keys) {
    return key_arrays(INT_KEYS, "sql", keys)[0];
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

// A row: its key (key_text), its value, row_to_json(row)::text.
struct Row { std::string key; std::optional<std::string> value; std::string json; };

int g_failures = 0;
void fail(const std::string &what) {
    std::fprintf(stderr, "loadgen check: MISMATCH: %s\n", what.c_str());
    g_failures++;
}

std::string join(const std::vector<std::string> &v, const char *sep) {
    std::string s;
    for (size_t i = 0; i < v.size(); i++) s += (i ? sep : "") + v[i];
    return s;
}

// The values, lengths and formats of PQexecPrepared / PQsendQueryPrepared for params, all text or
// all binary (text results either way).
struct PgParams {
    std::vector<const char *> vals;
    std::vector<int> lengths, formats;
    PgParams(const std::vector<std::string> &params, bool binary) {
        for (auto &p : params) {
            vals.push_back(p.c_str());
            lengths.push_back(static_cast<int>(p.size()));
            formats.push_back(binary ? 1 : 0);
        }
    }
    int n() const { return static_cast<int>(vals.size()); }
};

PGresult *exec_prepared(PGconn *c, const char *name, const std::vector<std::string> &params, bool binary = false) {
    PgParams pp(params, binary);
    PGresult *r = PQexecPrepared(c, name, pp.n(), pp.vals.data(), pp.lengths.data(), pp.formats.data(), 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        die(std::string("query ") + name + " " + (binary ? "(binary parameters)" : join(params, " ")) + ": " + PQerrorMessage(c));
    return r;
}

std::string show_row(const Row &r) {
    return "(" + r.key + "," + (r.value ? *r.value : "NULL") + ")";
}

// A result row of a set-returning path (the key columns, then value): its key as key_text
// spells it and its value.
Row result_row(const KeyType &t, PGresult *r, int i) {
    Row row;
    for (int c = 0; c < static_cast<int>(t.cols.size()); c++) {
        if (c) row.key += ':';
        for (const char *p = PQgetvalue(r, i, c); *p; p++) {
            if (is_composite(t) && (*p == ':' || *p == '\\')) row.key += '\\';
            row.key += *p;
        }
    }
    const int v = static_cast<int>(t.cols.size());
    if (!PQgetisnull(r, i, v)) row.value = std::string(PQgetvalue(r, i, v));
    return row;
}

// An element of mget's JSON array against the expected row (or null): the same JSON value as the
// row's row_to_json (objects compare member by member).
void check_json_element(const std::string &ctx, const rapidjson::Value &v, const Row *exp) {
    if (!exp) {
        if (!v.IsNull()) fail(ctx + ": expected null");
        return;
    }
    rapidjson::Document want;
    if (want.Parse(exp->json.c_str()).HasParseError()) die(ctx + ": row_to_json gave no JSON: " + exp->json);
    if (!v.IsObject()) fail(ctx + ": expected the object " + exp->json + " for key " + exp->key);
    else if (v != want) fail(ctx + ": wrong row for key " + exp->key + ", expected " + exp->json);
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
        const std::string ids = std::to_string(id), key = resp_prefix(o, INT_KEYS) + ":" + ids, ctx = "write check, " + key;
        auto sql_row = [&](const std::string &when) {
            const char *vals[1] = {ids.c_str()};
            PGresult *r = PQexecPrepared(c, "row", 1, vals, nullptr, nullptr, 0);
            if (PQresultStatus(r) != PGRES_TUPLES_OK) die("query row " + ids + ": " + PQerrorMessage(c));
            Row row{ids, std::nullopt, ""};
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
            PGresult *q = exec_prepared(c, "int_mget_json", {arr});  // prepared by check_reads
            rapidjson::Document d;
            d.Parse(PQgetvalue(q, 0, 0));
            if (d.HasParseError() || !d.IsArray() || d.Size() != 1)
                fail(ctx + ": after RESP SET, mget_json answers " + PQgetvalue(q, 0, 0));
            else {
                Row want{ids, cases[i].set_value, json1};
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

using K = std::optional<long long>;

// The read check of one key type on rows `cases` (row numbers, nullopt: a NULL key), twice: pass
// 0 may fill the cache, pass 1 hits it. The reference is prepared SQL (the sql path's statement)
// with each row's row_to_json; it must find a row for every key of rows 1..rows (the table holds
// them, bench/run loads them so). Returns the number of comparisons.
int check_reads(const Options &o, const KeyType &t, PGconn *c, int resp, int redis, const std::vector<std::vector<K>> &cases) {
    const std::string name = t.name, expected = name + "_expected";
    pg_prepare(c, expected.c_str(), ("SELECT s.*, row_to_json(s)::text FROM (" + statement(t, "sql") + ") s").c_str(),
               key_params(t, "sql"));
    for (const char *p : {"sql", "mget", "mget_json", "fdw", "parse"})
        pg_prepare(c, (name + "_" + p).c_str(), statement(t, p).c_str(), key_params(t, p));
    const std::string prefix = resp_prefix(o, t);
    const size_t ncols = t.cols.size() + 1;  // the key columns and value
    auto by_key = [](const Row &a, const Row &b) { return a.key != b.key ? a.key < b.key : a.value < b.value; };
    int compared = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (auto &keys : cases) {
            const std::string ctx0 = name + " keys " + join(key_arrays(t, "mget", keys), " ") +
                                     (pass ? " (second pass)" : " (first pass)");
            auto params = [&](const char *p, bool binary) { return key_arrays(t, p, keys, binary); };
            std::vector<Row> ref;
            std::map<std::string, Row> exp;
            PGresult *r = exec_prepared(c, expected.c_str(), params("sql", false));
            for (int i = 0; i < PQntuples(r); i++) {
                Row row = result_row(t, r, i);
                row.json = PQgetvalue(r, i, PQnfields(r) - 1);
                ref.push_back(row);
                exp[row.key] = row;
            }
            PQclear(r);
            std::sort(ref.begin(), ref.end(), by_key);
            {
                std::map<std::string, Row> want;
                for (auto &k : keys)
                    if (k && *k >= 1 && *k <= o.rows) want[key_text(t, *k)];
                std::string missing;
                for (auto &kv : want)
                    if (!exp.count(kv.first)) missing += " " + kv.first;
                if (!missing.empty() || exp.size() != want.size())
                    fail("prepared SQL " + ctx0 + ": " + std::to_string(exp.size()) + " distinct keys found, expected the " +
                         std::to_string(want.size()) + " keys of rows 1.." + std::to_string(o.rows) +
                         (missing.empty() ? "" : "; no row for" + missing.substr(0, 300)));
                compared++;
            }
            // the SQL paths with the key arrays as text and as binary parameters (run --params)
            for (bool bin : {false, true}) {
                // set-returning paths: the FDW gives prepared SQL's rows (one-column keys: the set of
                // distinct existing keys; composite keys: a row per key that has one)
                for (const char *p : {"sql", "fdw"}) {
                    std::string ctx = std::string(p) + (bin ? " (binary parameters) " : " ") + ctx0;
                    PGresult *q = exec_prepared(c, (name + "_" + p).c_str(), params(p, bin), bin);
                    std::vector<Row> got;
                    if (static_cast<size_t>(PQnfields(q)) != ncols) {
                        fail(ctx + ": " + std::to_string(PQnfields(q)) + " columns, expected " + std::to_string(ncols));
                    } else {
                        for (int i = 0; i < PQntuples(q); i++) got.push_back(result_row(t, q, i));
                    }
                    PQclear(q);
                    std::sort(got.begin(), got.end(), by_key);
                    if (got.size() != ref.size()) fail(ctx + ": " + std::to_string(got.size()) + " rows, expected " + std::to_string(ref.size()));
                    for (size_t i = 0; i < got.size() && i < ref.size(); i++)
                        if (got[i].key != ref[i].key || got[i].value != ref[i].value)
                            fail(ctx + ": row " + show_row(got[i]) + ", expected " + show_row(ref[i]));
                    compared++;
                }
                // array paths: one element per input key, input order, duplicates kept, null for NULL/missing
                for (const char *p : {"mget", "mget_json"}) {
                    std::string ctx = std::string(p) + (bin ? " (binary parameters) " : " ") + ctx0;
                    PGresult *q = exec_prepared(c, (name + "_" + p).c_str(), params(p, bin), bin);
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
                                if (keys[i] && exp.count(key_text(t, *keys[i]))) e = &exp[key_text(t, *keys[i])];
                                check_json_element(ctx + " element " + std::to_string(i), d[i], e);
                            }
                        }
                    }
                    PQclear(q);
                    compared++;
                }
                {  // the control: the key array's elements as the server received them
                    std::string ctx = std::string("parse") + (bin ? " (binary parameters) " : " ") + ctx0;
                    PGresult *q = exec_prepared(c, (name + "_parse").c_str(), params("parse", bin), bin);
                    const std::string want = std::to_string(keys.size() * t.cols.size());
                    if (PQntuples(q) != 1 || PQgetisnull(q, 0, 0) || want != PQgetvalue(q, 0, 0))
                        fail(ctx + ": cardinality " + (PQntuples(q) == 1 && !PQgetisnull(q, 0, 0) ? PQgetvalue(q, 0, 0) : "?") +
                             ", expected " + want);
                    PQclear(q);
                    compared++;
                }
            }
            // RESP paths: MGET prefix:k for the non-NULL keys (RESP has no NULL key); the values
            // must be byte for byte row_to_json(row)::text; MGET without keys is an error
            std::vector<std::string> rk;
            for (auto &k : keys) if (k) rk.push_back(key_text(t, *k));
            std::vector<std::string> args = {"MGET"};
            for (auto &k : rk) args.push_back(prefix + ":" + k);
            for (auto [path, fd] : {std::pair<const char *, int>{"resp", resp}, {"redis", redis}}) {
                if (fd < 0) continue;
                std::string ctx = std::string(path) + " MGET " + ctx0;
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
    return compared;
}

// The key types of --keys: a comma-separated list; empty: all of KEY_TYPES.
std::vector<const KeyType *> key_types(const std::string &list) {
    std::vector<const KeyType *> out;
    if (list.empty()) {
        for (auto &t : KEY_TYPES) out.push_back(&t);
        return out;
    }
    size_t from = 0;
    while (from <= list.size()) {
        size_t comma = list.find(',', from);
        if (comma == std::string::npos) comma = list.size();
        if (comma > from) out.push_back(&key_type(list.substr(from, comma - from)));
        from = comma + 1;
    }
    return out;
}

int run_check(const Options &o) {
    PGconn *c = pg_connect(o.pg);
    int resp = o.resp_port ? resp_connect(o.resp_port) : -1;
    int redis = o.redis_port ? resp_connect(o.redis_port) : -1;

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
    bool with_int = false;
    std::string names;
    for (const KeyType *t : key_types(o.keys)) {
        int n = check_reads(o, *t, c, resp, redis, cases);
        std::fprintf(stderr, "loadgen check: %s keys (%s): %d comparisons\n", t->name,
                     statement(*t, "sql").c_str(), n);
        compared += n;
        with_int |= t == &INT_KEYS;
        names += std::string(names.empty() ? "" : ",") + "\"" + t->name + "\"";
    }
    // the writes: public.items only
    int write_compared = with_int && resp >= 0 && redis >= 0 ? check_writes(o, c, resp, redis, 4001) : 0;
    compared += write_compared;
    PQfinish(c);
    if (resp >= 0) close(resp);
    if (redis >= 0) close(redis);
    std::fprintf(stderr, "loadgen check: %d comparisons (%d of them writes), %d mismatches\n", compared,
                 write_compared, g_failures);
    std::printf("{\"client\":\"native\",\"comparisons\":%d,\"write_comparisons\":%d,\"mismatches\":%d,\"key_types\":[%s]}\n",
                compared, write_compared, g_failures, names.c_str());
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
    const KeyType *kt = &INT_KEYS;
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
        if (o.mode == "warm" || o.mode == "serializable" || o.path == "update") {
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
            for (auto x : k) {
                args.push_back(o.prefix + ":");
                put_key_text(args.back(), *kt, x);
            }
            s.out = resp_command(args);
            s.in.clear();
            s.state = Slot::RespWait;
            flush_resp(s);
        } else {
            auto k = keys_for(s);
            s.expect_present = present(k);
            const bool binary = o.params == "binary";
            auto params = key_arrays(*kt, o.path, std::vector<std::optional<long long>>(k.begin(), k.end()), binary);
            PgParams pp(params, binary);
            if (!PQsendQueryPrepared(s.pg, "q", pp.n(), pp.vals.data(), pp.lengths.data(), pp.formats.data(), 0))
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
    R.kt = &key_type(o.keys.empty() ? "int" : o.keys);
    bool resp = is_resp_path(o.path);
    if (!resp && !is_sql_read(o.path) && o.path != "update") die("unknown path " + o.path);
    // the other key types: reads only (mixed and write mode update public.items)
    if (R.kt != &INT_KEYS && (o.mode == "mixed" || o.mode == "write"))
        die("--keys " + o.keys + " has no " + o.mode + " mode (reads only: warm, miss, cold)");
    if ((o.path == "resp_set" || o.path == "redis_set") && o.mode != "write") die("path " + o.path + " needs --mode write");
    if (o.mode != "warm" && o.mode != "miss" && o.mode != "mixed" && o.mode != "cold" && o.mode != "write" &&
        o.mode != "serializable")
        die("unknown mode " + o.mode);
    if (o.mode == "serializable" && !is_sql_read(o.path)) die("--mode serializable needs an SQL read path");
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    int nthreads = std::max(1, std::min<int>(o.conns, static_cast<int>(cores * 2)));

    std::vector<std::vector<Slot>> slots(nthreads);
    for (int i = 0; i < o.conns; i++) {
        Slot s;
        s.index = i;
        bool need_pg = !resp || o.mode == "mixed";
        if (need_pg) {
            s.pg = pg_connect(o.pg);
            if (o.mode == "serializable") {
                PGresult *r = PQexec(s.pg, "SET default_transaction_isolation = 'serializable'");
                if (PQresultStatus(r) != PGRES_COMMAND_OK) die(std::string("SET: ") + PQerrorMessage(s.pg));
                PQclear(r);
            }
            if (o.path == "update") pg_prepare(s.pg, "q", UPDATE_SQL, 2);
            else if (!resp) pg_prepare(s.pg, "q", statement(*R.kt, o.path).c_str(), key_params(*R.kt, o.path));
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

// ------------------------------------------------------------------ soak mode
//
// Every path at once for a long time: closed-loop readers (SQL mget, the FDW, RESP MGET and, as
// the reference, redis-server MGET; --conns connections each, --batch consecutive keys from a
// random start) beside paced writers (SQL UPDATE, RESP SET as --resp-user, redis-server SET;
// --write-rate requests/s each, one random row with a fresh value). Every --interval seconds one
// JSON line per interval: per path requests, requests/s, p50/p99/max latency; the client's CPU;
// the stale probes' counters. The caller samples server CPU and memory when a line arrives.
//
// Stale probes (--probe-interval-ms, 0: none): a writer commits a new value of one of
// --probe-rows dedicated rows (ids 1000001.., alternately by SQL UPDATE and RESP SET) and, right
// after the COMMIT (the UPDATE's or SET's reply), reads it through mget (typed rows of the
// record[]), the FDW and RESP GET on the primary — and prepared SQL on the table as the control —
// all sent before any reply is read: each must be exactly the new value, else it is stale (an
// older version) or wrong. With a standby (--standby-pg, --standby-resp-port) the same reads go
// to the standby, in the same first round and then in rounds 0.2 ms apart until each has shown
// the new value (at most --probe-bound-ms after the COMMIT), recording per path the delay from
// the COMMIT's reply to the reply that first showed it (the control's delay is the replay's; a
// cached path slower than it would be the cache lagging). On the standby a read is stale if it
// shows a version older than one any standby read already showed (in an earlier round): once
// the standby has shown a commit, no later read may go back.

const long long PROBE_BASE = 1000000;
const char *PROBE_MGET_SQL =
    "SELECT r.id, r.value FROM (SELECT local_cache.mget('public.items'::regclass, $1::bigint[]) AS rows OFFSET 0) m, "
    "unnest(m.rows) AS r(id bigint, value text)";

struct SoakPath {
    std::string name;
    std::mutex m;
    std::vector<uint32_t> lat;  // this interval's latencies
    uint64_t total = 0;
};

struct ProbeRead {
    std::string path;  // mget | fdw | resp | sql (the control: the table, no cache)
    PGconn *pg = nullptr;
    int fd = -1;
    // result of the last round
    bool missing = false;
    std::string value, error;
    Clock::time_point replied;
};

std::string json_escape(const std::string &s) { return json_string(s); }

uint32_t pct_of(std::vector<uint32_t> &v, double p) {  // v sorted
    if (v.empty()) return 0;
    return v[std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * v.size()))];
}

// The version of a probe value "p<version>:<random>" (0 for the initial "p0:init"), -2 if it is none.
long long probe_version(const std::string &v) {
    if (v.size() < 3 || v[0] != 'p') return -2;
    size_t colon = v.find(':');
    if (colon == std::string::npos || colon == 1) return -2;
    long long n = 0;
    for (size_t i = 1; i < colon; i++) {
        if (v[i] < '0' || v[i] > '9') return -2;
        n = n * 10 + (v[i] - '0');
    }
    return n;
}

struct Soak {
    Options o;
    std::atomic<bool> stop{false};
    std::mutex err_m;
    std::string error;
    std::vector<std::unique_ptr<SoakPath>> paths;
    std::vector<std::thread> threads;

    void fatal(const std::string &msg) {
        std::lock_guard<std::mutex> g(err_m);
        if (error.empty()) error = msg;
        stop = true;
    }
    SoakPath &path(const std::string &name) {
        for (auto &p : paths)
            if (p->name == name) return *p;
        paths.push_back(std::make_unique<SoakPath>());
        paths.back()->name = name;
        return *paths.back();
    }
    void record(SoakPath &p, Clock::time_point t0) {
        uint32_t us = static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
        std::lock_guard<std::mutex> g(p.m);
        p.lat.push_back(us);
        p.total++;
    }
    // sleeps up to d, in slices, returning early when stopped
    void nap(Clock::duration d) {
        auto until = Clock::now() + d;
        while (!stop) {
            auto now = Clock::now();
            if (now >= until) return;
            std::this_thread::sleep_for(std::min<Clock::duration>(until - now, std::chrono::milliseconds(50)));
        }
    }

    // ---------------------------------------------------------- load
    void reader(SoakPath &P, PGconn *pg, int fd, unsigned seed) {
        std::mt19937_64 rng(seed);
        const std::string &path = P.name;
        std::vector<long long> k(o.batch);
        while (!stop) {
            long long start = static_cast<long long>(rng() % o.rows);
            for (int i = 0; i < o.batch; i++) k[i] = (start + i) % o.rows + 1;
            auto t0 = Clock::now();
            std::string err;
            if (pg) {
                std::string arr = array_literal(std::vector<std::optional<long long>>(k.begin(), k.end()));
                const char *vals[1] = {arr.c_str()};
                PGresult *r = PQexecPrepared(pg, "q", 1, vals, nullptr, nullptr, 0);
                if (PQresultStatus(r) != PGRES_TUPLES_OK) {
                    err = std::string("query failed: ") + PQerrorMessage(pg);
                } else if (path == "mget") {  // one JSON array, element i the row of key i
                    rapidjson::Document d;
                    if (PQntuples(r) != 1 || d.Parse(PQgetvalue(r, 0, 0)).HasParseError() || !d.IsArray() ||
                        d.Size() != k.size()) {
                        err = "mget answered " + std::string(PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "no row").substr(0, 200);
                    } else {
                        for (size_t i = 0; i < k.size() && err.empty(); i++)
                            if (!d[i].IsObject() || !d[i].HasMember("id") || !d[i]["id"].IsInt64() || d[i]["id"].GetInt64() != k[i])
                                err = "mget element " + std::to_string(i) + " is not the row of key " + std::to_string(k[i]);
                    }
                } else {  // fdw: the set of the keys' rows
                    std::vector<long long> ids;
                    for (int i = 0; i < PQntuples(r); i++) ids.push_back(std::atoll(PQgetvalue(r, i, 0)));
                    std::sort(ids.begin(), ids.end());
                    std::vector<long long> want = k;
                    std::sort(want.begin(), want.end());
                    if (ids != want) err = "fdw answered " + std::to_string(ids.size()) + " rows, not the keys' " + std::to_string(want.size());
                }
                PQclear(r);
            } else {
                std::vector<std::string> args = {"MGET"};
                for (auto x : k) args.push_back(o.prefix + ":" + std::to_string(x));
                RespValue v = resp_call(fd, resp_command(args));
                if (v.kind != RespValue::Array || v.items.size() != k.size()) {
                    err = "MGET answered " + describe(v);
                } else {
                    for (size_t i = 0; i < k.size() && err.empty(); i++) {
                        const std::string head = "{\"id\":" + std::to_string(k[i]) + ",";
                        if (v.items[i].kind != RespValue::Bulk || v.items[i].str.compare(0, head.size(), head) != 0)
                            err = "MGET element " + std::to_string(i) + ": " + describe(v.items[i]).substr(0, 200) +
                                  ", expected the row of key " + std::to_string(k[i]);
                    }
                }
            }
            if (!err.empty()) return fatal(path + ": " + err);
            record(P, t0);
        }
    }

    void writer(SoakPath &P, PGconn *pg, int fd, unsigned seed) {
        std::mt19937_64 rng(seed);
        const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / o.write_rate));
        auto next = Clock::now();
        while (!stop) {
            auto now = Clock::now();
            if (now < next) {
                nap(next - now);
                continue;
            }
            if (now - next > std::chrono::seconds(1)) next = now;  // fell behind: no catch-up burst
            next += period;
            long long id = static_cast<long long>(rng() % o.rows) + 1;
            std::string ids = std::to_string(id), val = random_value(rng), err;
            auto t0 = Clock::now();
            if (pg) {
                const char *vals[2] = {ids.c_str(), val.c_str()};
                PGresult *r = PQexecPrepared(pg, "u", 2, vals, nullptr, nullptr, 0);
                if (PQresultStatus(r) != PGRES_COMMAND_OK || std::string(PQcmdTuples(r)) != "1")
                    err = std::string("UPDATE failed: ") + PQerrorMessage(pg);
                PQclear(r);
            } else {
                RespValue v = resp_call(fd, resp_command({"SET", o.prefix + ":" + ids, row_json(id, val)}));
                if (v.kind != RespValue::Simple || v.str != "OK") err = "SET answered " + describe(v);
            }
            if (!err.empty()) return fatal(P.name + ": " + err);
            record(P, t0);
        }
    }

    // ---------------------------------------------------------- stale probes
    struct ServerStats {
        uint64_t observations = 0, stale = 0, wrong = 0, not_visible = 0;
        std::map<std::string, uint64_t> obs_by, stale_by, wrong_by, not_visible_by;
        std::map<std::string, std::vector<uint32_t>> delays;  // standby: per path, µs from COMMIT to visible
        std::vector<uint32_t> delays_all;                      // standby: per probe, the slowest path
    };
    std::mutex probe_m;
    uint64_t probes = 0, probes_update = 0, probes_resp_set = 0;
    ServerStats primary_st, standby_st;
    std::vector<uint32_t> interval_delays;  // this interval's delays_all
    uint64_t interval_probes = 0;
    std::vector<std::string> events;
    uint64_t events_total = 0;
    PGconn *probe_write_pg = nullptr;
    int probe_write_resp = -1;
    std::vector<ProbeRead> primary_reads, standby_reads;

    void event(const std::string &kind, const std::string &server, const std::string &path, long long id,
               const std::string &write_path, long long version, const std::string &written, const ProbeRead &rd,
               long long seen_version, long long baseline, double ms_after_commit) {
        std::string e = "{\"kind\":\"" + kind + "\",\"server\":\"" + server + "\",\"path\":\"" + path +
                        "\",\"row\":" + std::to_string(id) + ",\"write_path\":\"" + write_path +
                        "\",\"written_version\":" + std::to_string(version) + ",\"written_value\":" + json_escape(written) +
                        ",\"seen\":" + (rd.missing ? std::string("null") : json_escape(rd.value)) +
                        ",\"seen_version\":" + std::to_string(seen_version) +
                        ",\"standby_newest_seen_before\":" + (server == "standby" ? std::to_string(baseline) : std::string("null")) +
                        ",\"ms_after_commit\":" + std::to_string(ms_after_commit) + "}";
        std::lock_guard<std::mutex> g(probe_m);
        events_total++;
        if (events.size() < 50) {  // the first 50 are kept (and shown), the others counted
            std::fprintf(stderr, "loadgen soak: STALE PROBE %s\n", e.c_str());
            events.push_back(e);
        }
    }

    // Sends the read of row id on the connections reads[from, to), then waits for every reply.
    void probe_round(std::vector<ProbeRead> &reads, size_t from, size_t to, long long id) {
        const std::string arr = "{" + std::to_string(id) + "}", key = o.prefix + ":" + std::to_string(id);
        const char *vals[1] = {arr.c_str()};
        std::vector<std::string> in(reads.size());
        std::vector<char> done(reads.size(), 1);
        for (size_t i = from; i < to; i++) {
            done[i] = 0;
            auto &rd = reads[i];
            rd.missing = false;
            rd.value.clear();
            rd.error.clear();
            if (rd.pg) {
                if (!PQsendQueryPrepared(rd.pg, "p", 1, vals, nullptr, nullptr, 0))
                    throw std::runtime_error("probe " + rd.path + ": " + PQerrorMessage(rd.pg));
            } else {
                std::string req = resp_command({"GET", key});
                if (::send(rd.fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
                    throw std::runtime_error("probe resp: send failed");
            }
        }
        size_t pending = to - from;
        auto deadline = Clock::now() + std::chrono::seconds(60);
        while (pending) {
            std::vector<pollfd> pfds;
            std::vector<size_t> idx;
            for (size_t i = 0; i < reads.size(); i++)
                if (!done[i]) {
                    pfds.push_back({reads[i].pg ? PQsocket(reads[i].pg) : reads[i].fd, POLLIN, 0});
                    idx.push_back(i);
                }
            int n = ::poll(pfds.data(), pfds.size(), 1000);
            if (n < 0 && errno != EINTR) throw std::runtime_error("probe: poll failed");
            if (Clock::now() > deadline) throw std::runtime_error("probe: no reply within 60 s");
            for (size_t j = 0; j < pfds.size(); j++) {
                if (!pfds[j].revents) continue;
                auto &rd = reads[idx[j]];
                if (rd.pg) {
                    if (!PQconsumeInput(rd.pg)) throw std::runtime_error("probe " + rd.path + ": " + PQerrorMessage(rd.pg));
                    bool finished = false;
                    while (!PQisBusy(rd.pg)) {
                        PGresult *r = PQgetResult(rd.pg);
                        if (!r) { finished = true; break; }
                        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
                            rd.error = PQresultErrorMessage(r);
                        } else if (PQntuples(r) == 0 || PQgetisnull(r, 0, 0)) {
                            rd.missing = true;  // fdw: no row; mget: a NULL element
                        } else if (PQntuples(r) != 1 || std::atoll(PQgetvalue(r, 0, 0)) != id) {
                            rd.error = std::to_string(PQntuples(r)) + " rows, first id " + PQgetvalue(r, 0, 0);
                        } else {
                            rd.value = PQgetvalue(r, 0, 1);
                        }
                        PQclear(r);
                    }
                    if (!finished) continue;
                } else {
                    char tmp[4096];
                    ssize_t got = ::recv(rd.fd, tmp, sizeof tmp, MSG_DONTWAIT);
                    if (got == 0) throw std::runtime_error("probe resp: connection closed by the server");
                    if (got < 0) continue;
                    in[idx[j]].append(tmp, got);
                    size_t pos = 0;
                    RespValue v;
                    if (!resp_parse(in[idx[j]].data(), in[idx[j]].size(), pos, &v)) continue;
                    if (v.kind == RespValue::Nil) {
                        rd.missing = true;
                    } else if (v.kind != RespValue::Bulk) {
                        rd.error = describe(v);
                    } else {
                        rapidjson::Document d;
                        if (d.Parse(v.str.c_str()).HasParseError() || !d.IsObject() || !d.HasMember("id") ||
                            !d["id"].IsInt64() || d["id"].GetInt64() != id || !d.HasMember("value") || !d["value"].IsString())
                            rd.error = "GET answered " + v.str;
                        else
                            rd.value.assign(d["value"].GetString(), d["value"].GetStringLength());
                    }
                }
                rd.replied = Clock::now();
                done[idx[j]] = 1;
                pending--;
            }
        }
    }

    void prober() {
        std::mt19937_64 rng(std::random_device{}());
        const auto interval = std::chrono::milliseconds(o.probe_interval_ms);
        std::vector<long long> standby_newest(o.probe_rows, -1);  // newest version any standby read showed
        const bool standby = !standby_reads.empty();
        // the primary's reads, then the standby's: [0, np) and [np, np + ns)
        std::vector<ProbeRead> all = primary_reads;
        all.insert(all.end(), standby_reads.begin(), standby_reads.end());
        const size_t np = primary_reads.size(), ns = standby_reads.size();
        auto start = Clock::now();
        try {
            for (uint64_t n = 0; !stop; n++) {
                auto at = start + interval * static_cast<long>(n);
                if (Clock::now() < at) nap(at - Clock::now());
                if (stop) break;
                const int row = static_cast<int>(n % o.probe_rows);
                const long long id = PROBE_BASE + 1 + row, version = static_cast<long long>(n) + 1;
                const std::string value = "p" + std::to_string(version) + ":" + random_value(rng).substr(0, 24);
                const std::string ids = std::to_string(id), write_path = n % 2 == 0 ? "update" : "resp_set";
                // the write; its reply comes after COMMIT
                if (write_path == "update") {
                    const char *vals[2] = {ids.c_str(), value.c_str()};
                    PGresult *r = PQexecPrepared(probe_write_pg, "u", 2, vals, nullptr, nullptr, 0);
                    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK && std::string(PQcmdTuples(r)) == "1";
                    PQclear(r);
                    if (!ok) throw std::runtime_error(std::string("probe UPDATE: ") + PQerrorMessage(probe_write_pg));
                } else {
                    RespValue v = resp_call(probe_write_resp, resp_command({"SET", o.prefix + ":" + ids, row_json(id, value)}));
                    if (v.kind != RespValue::Simple || v.str != "OK") throw std::runtime_error("probe SET answered " + describe(v));
                }
                const auto committed = Clock::now();
                auto ms_after = [&](const ProbeRead &rd) {
                    return std::chrono::duration<double, std::milli>(rd.replied - committed).count();
                };
                // the first round: the primary's and the standby's reads, all sent before any reply is read
                probe_round(all, 0, np + ns, id);
                // the primary: exactly the new value on every path
                ServerStats pst;
                for (size_t i = 0; i < np; i++) {
                    auto &rd = all[i];
                    pst.observations++;
                    pst.obs_by[rd.path]++;
                    if (rd.error.empty() && !rd.missing && rd.value == value) continue;
                    long long seen = rd.missing ? -1 : probe_version(rd.value);
                    bool stale = rd.error.empty() && seen >= -1 && seen < version;
                    (stale ? pst.stale : pst.wrong)++;
                    (stale ? pst.stale_by : pst.wrong_by)[rd.path]++;
                    event(stale ? "stale" : "wrong", "primary", rd.path, id, write_path, version, value, rd, seen, -1,
                          ms_after(rd));
                    if (!rd.error.empty()) std::fprintf(stderr, "loadgen soak: probe error on the primary, %s: %s\n", rd.path.c_str(), rd.error.c_str());
                }
                // the standby: until every path shows it; never older than what the standby showed before
                ServerStats sst;
                uint32_t slowest = 0;
                if (standby) {
                    std::vector<char> seen_new(ns, 0);
                    std::vector<uint32_t> delay(ns, 0);
                    const auto deadline = committed + std::chrono::milliseconds(o.probe_bound_ms);
                    for (bool first = true;; first = false) {
                        if (!first) probe_round(all, np, np + ns, id);
                        long long newest = standby_newest[row];
                        for (size_t i = 0; i < ns; i++) {
                            auto &rd = all[np + i];
                            sst.observations++;
                            sst.obs_by[rd.path]++;
                            long long seen = !rd.error.empty() ? -2 : rd.missing ? -1 : probe_version(rd.value);
                            bool wrong = seen == -2 || seen > version || (seen == version && rd.value != value);
                            if (wrong) {
                                sst.wrong++;
                                sst.wrong_by[rd.path]++;
                                event("wrong", "standby", rd.path, id, write_path, version, value, rd, seen,
                                      standby_newest[row], ms_after(rd));
                                if (!rd.error.empty()) std::fprintf(stderr, "loadgen soak: probe error on the standby, %s: %s\n", rd.path.c_str(), rd.error.c_str());
                                continue;
                            }
                            if (seen < standby_newest[row]) {
                                sst.stale++;
                                sst.stale_by[rd.path]++;
                                event("stale", "standby", rd.path, id, write_path, version, value, rd, seen,
                                      standby_newest[row], ms_after(rd));
                            }
                            newest = std::max(newest, seen);
                            if (seen == version && !seen_new[i]) {
                                seen_new[i] = 1;
                                delay[i] = static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(rd.replied - committed).count());
                            }
                        }
                        standby_newest[row] = newest;  // later rounds must not go back behind it
                        if (std::all_of(seen_new.begin(), seen_new.end(), [](char c) { return c; })) break;
                        if (Clock::now() > deadline) {
                            for (size_t i = 0; i < ns; i++)
                                if (!seen_new[i]) {
                                    sst.not_visible++;
                                    sst.not_visible_by[all[np + i].path]++;
                                    event("not_visible", "standby", all[np + i].path, id, write_path, version, value,
                                          all[np + i], standby_newest[row], standby_newest[row], ms_after(all[np + i]));
                                }
                            break;
                        }
                        std::this_thread::sleep_for(std::chrono::microseconds(200));
                    }
                    for (size_t i = 0; i < ns; i++)
                        if (seen_new[i]) {
                            sst.delays[all[np + i].path].push_back(delay[i]);
                            if (all[np + i].path != "sql") slowest = std::max(slowest, delay[i]);  // the cached paths
                        }
                    if (std::all_of(seen_new.begin(), seen_new.end(), [](char c) { return c; })) sst.delays_all.push_back(slowest);
                }
                std::lock_guard<std::mutex> g(probe_m);
                probes++;
                interval_probes++;
                (write_path == "update" ? probes_update : probes_resp_set)++;
                for (auto pr : {std::make_pair(&primary_st, &pst), std::make_pair(&standby_st, &sst)}) {
                    ServerStats &t = *pr.first, &s = *pr.second;
                    t.observations += s.observations;
                    t.stale += s.stale;
                    t.wrong += s.wrong;
                    t.not_visible += s.not_visible;
                    for (auto &kv : s.obs_by) t.obs_by[kv.first] += kv.second;
                    for (auto &kv : s.stale_by) t.stale_by[kv.first] += kv.second;
                    for (auto &kv : s.wrong_by) t.wrong_by[kv.first] += kv.second;
                    for (auto &kv : s.not_visible_by) t.not_visible_by[kv.first] += kv.second;
                    for (auto &kv : s.delays) t.delays[kv.first].insert(t.delays[kv.first].end(), kv.second.begin(), kv.second.end());
                    t.delays_all.insert(t.delays_all.end(), s.delays_all.begin(), s.delays_all.end());
                }
                interval_delays.insert(interval_delays.end(), sst.delays_all.begin(), sst.delays_all.end());
            }
        } catch (const std::exception &e) {
            fatal(std::string("stale probes: ") + e.what());
        }
    }

    // ---------------------------------------------------------- output
    static std::string delay_json(std::vector<uint32_t> v) {
        std::sort(v.begin(), v.end());
        double sum = 0;
        for (auto x : v) sum += x;
        char buf[256];
        std::snprintf(buf, sizeof buf, "{\"count\":%zu,\"mean\":%.0f,\"min\":%u,\"p50\":%u,\"p90\":%u,\"p99\":%u,\"max\":%u}",
                      v.size(), v.empty() ? 0.0 : sum / v.size(), v.empty() ? 0u : v.front(), pct_of(v, 50), pct_of(v, 90),
                      pct_of(v, 99), v.empty() ? 0u : v.back());
        return buf;
    }
    static std::string histogram_json(const std::vector<uint32_t> &v) {
        static const uint32_t edges[] = {100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000,
                                         1000000, 2000000, 5000000, 10000000};
        std::vector<uint64_t> counts(std::size(edges) + 1, 0);
        for (auto x : v) counts[std::upper_bound(std::begin(edges), std::end(edges), x - 1) - std::begin(edges)]++;
        std::string s = "[";
        for (size_t i = 0; i < counts.size(); i++) {
            if (i) s += ",";
            s += "[" + (i < std::size(edges) ? std::to_string(edges[i]) : std::string("null")) + "," + std::to_string(counts[i]) + "]";
        }
        return s + "]";
    }
    std::string by_path(const ServerStats &s, bool standby) const {
        std::string out = "{";
        bool first = true;
        for (const char *p : {"mget", "fdw", "resp", "sql"}) {
            auto get = [&](const std::map<std::string, uint64_t> &m) { auto it = m.find(p); return it == m.end() ? 0 : it->second; };
            if (!first) out += ",";
            first = false;
            out += std::string("\"") + p + "\":{\"observations\":" + std::to_string(get(s.obs_by)) +
                   ",\"stale\":" + std::to_string(get(s.stale_by)) + ",\"wrong\":" + std::to_string(get(s.wrong_by));
            if (standby) {
                auto it = s.delays.find(p);
                std::vector<uint32_t> d = it == s.delays.end() ? std::vector<uint32_t>{} : it->second;
                out += ",\"not_visible_within_bound\":" + std::to_string(get(s.not_visible_by)) +
                       ",\"delay_us\":" + delay_json(d) + ",\"delay_histogram_us\":" + histogram_json(d);
            }
            out += "}";
        }
        return out + "}";
    }
    // the probes' part of an interval line (cumulative counters, this interval's standby delays)
    std::string probe_interval_json() {
        std::lock_guard<std::mutex> g(probe_m);
        std::vector<uint32_t> d;
        d.swap(interval_delays);
        std::sort(d.begin(), d.end());
        std::string s = "{\"probes\":" + std::to_string(probes) + ",\"in_interval\":" + std::to_string(interval_probes) +
                        ",\"primary_stale\":" + std::to_string(primary_st.stale) +
                        ",\"standby_stale\":" + std::to_string(standby_st.stale) +
                        ",\"wrong\":" + std::to_string(primary_st.wrong + standby_st.wrong) +
                        ",\"standby_not_visible\":" + std::to_string(standby_st.not_visible) +
                        ",\"standby_delay_us\":" + delay_json(d) + "}";
        interval_probes = 0;
        return s;
    }
    std::string probes_final_json() {
        std::lock_guard<std::mutex> g(probe_m);
        std::string s = "{\"probes\":" + std::to_string(probes) + ",\"interval_ms\":" + std::to_string(o.probe_interval_ms) +
                        ",\"rows\":" + std::to_string(o.probe_rows) + ",\"write_paths\":{\"update\":" +
                        std::to_string(probes_update) + ",\"resp_set\":" + std::to_string(probes_resp_set) + "}" +
                        ",\"primary\":{\"observations\":" + std::to_string(primary_st.observations) +
                        ",\"stale\":" + std::to_string(primary_st.stale) + ",\"wrong\":" + std::to_string(primary_st.wrong) +
                        ",\"by_path\":" + by_path(primary_st, false) + "}";
        if (standby_reads.empty()) {
            s += ",\"standby\":null";
        } else {
            s += ",\"standby\":{\"observations\":" + std::to_string(standby_st.observations) +
                 ",\"stale\":" + std::to_string(standby_st.stale) + ",\"wrong\":" + std::to_string(standby_st.wrong) +
                 ",\"not_visible_within_bound\":" + std::to_string(standby_st.not_visible) +
                 ",\"bound_ms\":" + std::to_string(o.probe_bound_ms) + ",\"by_path\":" + by_path(standby_st, true) +
                 ",\"delay_all_paths_us\":" + delay_json(standby_st.delays_all) +
                 ",\"delay_all_paths_histogram_us\":" + histogram_json(standby_st.delays_all) + "}";
        }
        s += ",\"events_total\":" + std::to_string(events_total) + ",\"events\":[";
        for (size_t i = 0; i < events.size(); i++) s += (i ? "," : "") + events[i];
        return s + "]}";
    }
    bool probes_clean() {
        std::lock_guard<std::mutex> g(probe_m);
        return primary_st.stale + primary_st.wrong + standby_st.stale + standby_st.wrong + standby_st.not_visible == 0;
    }
};

int run_soak(const Options &o) {
    if (o.seconds <= 0 || o.interval <= 0) die("soak needs --seconds and --interval > 0");
    if (o.write_rate <= 0) die("soak needs --write-rate > 0");
    Soak S;
    S.o = o;
    std::vector<std::string> reads = {"mget", "fdw", "resp"}, writes = {"update", "resp_set"};
    if (o.redis_port) {  // the reference: the same reads and writes to redis-server
        reads.push_back("redis");
        writes.push_back("redis_set");
    }
    std::vector<PGconn *> pgs;
    std::vector<int> fds;
    struct Worker { std::string path; bool write; PGconn *pg; int fd; };
    std::vector<Worker> workers;
    for (auto &p : reads) {
        S.path(p);
        for (int i = 0; i < o.conns; i++) {
            Worker w{p, false, nullptr, -1};
            if (p == "mget" || p == "fdw") {
                w.pg = pg_connect(o.pg);
                pg_prepare(w.pg, "q", statement(INT_KEYS, p).c_str(), 1);
                pgs.push_back(w.pg);
            } else {
                w.fd = resp_connect(p == "resp" ? o.resp_port : o.redis_port);
                fds.push_back(w.fd);
            }
            workers.push_back(w);
        }
    }
    for (auto &p : writes) {
        S.path(p);
        Worker w{p, true, nullptr, -1};
        if (p == "update") {
            w.pg = pg_connect(o.pg);
            pg_prepare(w.pg, "u", UPDATE_SQL, 2);
            pgs.push_back(w.pg);
        } else {
            w.fd = p == "resp_set" ? resp_connect_as(o.resp_port, o.resp_user, o.resp_password) : resp_connect(o.redis_port);
            fds.push_back(w.fd);
        }
        workers.push_back(w);
    }
    // the stale probes' rows, connections and statements
    const bool probing = o.probe_interval_ms > 0;
    if (probing) {
        if (o.probe_rows < 1) die("--probe-rows must be at least 1");
        S.probe_write_pg = pg_connect(o.pg);
        pgs.push_back(S.probe_write_pg);
        std::string sql = "INSERT INTO public.items SELECT g, 'p0:init' FROM generate_series(" + std::to_string(PROBE_BASE + 1) +
                          ", " + std::to_string(PROBE_BASE + o.probe_rows) + ") g ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value";
        PGresult *r = PQexec(S.probe_write_pg, sql.c_str());
        if (PQresultStatus(r) != PGRES_COMMAND_OK) die("inserting the probe rows: " + std::string(PQerrorMessage(S.probe_write_pg)));
        PQclear(r);
        pg_prepare(S.probe_write_pg, "u", UPDATE_SQL, 2);
        S.probe_write_resp = resp_connect_as(o.resp_port, o.resp_user, o.resp_password);
        fds.push_back(S.probe_write_resp);
        auto reads_of = [&](const std::string &conninfo, int resp_port, std::vector<ProbeRead> &out) {
            for (const char *p : {"mget", "fdw", "resp", "sql"}) {  // sql: the control, the table without the cache
                ProbeRead rd;
                rd.path = p;
                if (rd.path == "resp") {
                    rd.fd = resp_connect(resp_port);
                    fds.push_back(rd.fd);
                } else {
                    rd.pg = pg_connect(conninfo);
                    pg_prepare(rd.pg, "p", rd.path == "mget" ? PROBE_MGET_SQL : statement(INT_KEYS, rd.path).c_str(), 1);
                    pgs.push_back(rd.pg);
                }
                out.push_back(rd);
            }
        };
        reads_of(o.pg, o.resp_port, S.primary_reads);
        if (!o.standby_pg.empty()) {
            if (!o.standby_resp_port) die("--standby-pg needs --standby-resp-port");
            reads_of(o.standby_pg, o.standby_resp_port, S.standby_reads);
            // wait (bounded) until the standby has replayed the probe rows
            PGconn *sc = pg_connect(o.standby_pg);
            std::string q = "SELECT count(*) FROM public.items WHERE id > " + std::to_string(PROBE_BASE) + " AND value = 'p0:init'";
            auto until = Clock::now() + std::chrono::seconds(60);
            for (;;) {
                PGresult *c = PQexec(sc, q.c_str());
                bool ok = PQresultStatus(c) == PGRES_TUPLES_OK && std::atoi(PQgetvalue(c, 0, 0)) == o.probe_rows;
                PQclear(c);
                if (ok) break;
                if (Clock::now() > until) die("the standby did not replay the probe rows within 60 s");
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            PQfinish(sc);
        }
    }
    std::printf("READY\n");
    std::fflush(stdout);
    std::string line;
    if (!std::getline(std::cin, line)) die("no GO line on stdin");

    unsigned seed = 777;
    for (auto &w : workers) {
        SoakPath &P = S.path(w.path);
        if (w.write)
            S.threads.emplace_back([&S, &P, w, seed] { S.writer(P, w.pg, w.fd, seed); });
        else
            S.threads.emplace_back([&S, &P, w, seed] { S.reader(P, w.pg, w.fd, seed); });
        seed += 7919;
    }
    if (probing) S.threads.emplace_back([&S] { S.prober(); });

    const auto t0 = Clock::now();
    const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
    const auto step = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.interval));
    auto last = t0;
    double cpu_last = cpu_seconds(), cpu_start = cpu_last;
    for (auto next = t0 + step; !S.stop; next += step) {
        auto until = std::min(next, end);
        while (!S.stop && Clock::now() < until)
            std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(50)));
        if (S.stop) break;
        auto now = Clock::now();
        double secs = std::chrono::duration<double>(now - last).count(), cpu = cpu_seconds();
        std::string s = "{\"t\":" + std::to_string(std::chrono::duration<double>(now - t0).count()) +
                        ",\"interval_s\":" + std::to_string(secs) + ",\"client_cpu_s\":" + std::to_string(cpu - cpu_last) +
                        ",\"paths\":{";
        bool first = true;
        for (auto &p : S.paths) {
            std::vector<uint32_t> lat;
            {
                std::lock_guard<std::mutex> g(p->m);
                lat.swap(p->lat);
            }
            std::sort(lat.begin(), lat.end());
            char buf[256];
            std::snprintf(buf, sizeof buf, "\"%s\":{\"requests\":%zu,\"rps\":%.1f,\"p50_us\":%u,\"p99_us\":%u,\"max_us\":%u}",
                          p->name.c_str(), lat.size(), lat.size() / secs, pct_of(lat, 50), pct_of(lat, 99),
                          lat.empty() ? 0u : lat.back());
            s += (first ? "" : ",") + std::string(buf);
            first = false;
        }
        s += "}";
        if (probing) s += ",\"probes\":" + S.probe_interval_json();
        s += "}";
        std::printf("%s\n", s.c_str());
        std::fflush(stdout);
        last = now;
        cpu_last = cpu;
        if (now >= end) break;
    }
    S.stop = true;
    for (auto &t : S.threads) t.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    std::string s = "{\"final\":true,\"elapsed_s\":" + std::to_string(elapsed) +
                    ",\"client_cpu_s\":" + std::to_string(cpu_seconds() - cpu_start) + ",\"requests\":{";
    for (size_t i = 0; i < S.paths.size(); i++)
        s += (i ? ",\"" : "\"") + S.paths[i]->name + "\":" + std::to_string(S.paths[i]->total);
    s += "}";
    if (probing) s += ",\"stale_probes\":" + S.probes_final_json();
    s += ",\"error\":" + (S.error.empty() ? std::string("null") : json_escape(S.error)) + "}";
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
    std::getline(std::cin, line);  // the caller reads server CPU before we disconnect
    for (auto *c : pgs) PQfinish(c);
    for (int fd : fds) close(fd);
    if (!S.error.empty()) {
        std::fprintf(stderr, "loadgen soak: %s\n", S.error.c_str());
        return 2;
    }
    return probing && !S.probes_clean() ? 1 : 0;
}

// ------------------------------------------------------------------ keys: the key types, described

// One JSON line: per key type its table, key columns, the statements of the SQL read paths, and
// rows 1 and 2 as the paths send them (the parameters, the RESP keys).
int run_describe(const Options &o) {
    std::string s = "{\"rows\":" + std::to_string(o.rows) + ",\"key_types\":[";
    const auto types = key_types(o.keys);
    for (const KeyType *t : types) {
        if (t != types.front()) s += ",";
        s += "{\"name\":" + json_string(t->name) + ",\"table\":" + json_string(std::string("public.") + t->table) +
             ",\"foreign_table\":" + json_string(std::string("cache.") + t->table) +
             ",\"resp_prefix\":" + json_string(resp_prefix(o, *t)) + ",\"array_type\":" + json_string(t->array_type) +
             ",\"columns\":[";
        for (size_t c = 0; c < t->cols.size(); c++)
            s += std::string(c ? "," : "") + "{\"name\":" + json_string(t->cols[c].name) + ",\"type\":" + json_string(t->cols[c].type) + "}";
        s += "],\"statements\":{";
        const std::vector<std::optional<long long>> rows = {1, 2};
        std::string params, binary;
        for (const char *p : {"sql", "mget", "mget_json", "fdw", "parse"}) {
            s += std::string(p == std::string("sql") ? "" : ",") + json_string(p) + ":" + json_string(statement(*t, p));
            params += std::string(p == std::string("sql") ? "" : ",") + json_string(p) + ":[";
            auto arrays = key_arrays(*t, p, rows);
            for (size_t i = 0; i < arrays.size(); i++) params += (i ? "," : "") + json_string(arrays[i]);
            params += "]";
            binary += std::string(p == std::string("sql") ? "" : ",") + json_string(p) + ":[";
            arrays = key_arrays(*t, p, rows, true);
            for (size_t i = 0; i < arrays.size(); i++) {
                static const char hex[] = "0123456789abcdef";
                std::string h;
                for (unsigned char ch : arrays[i]) h += std::string{hex[ch >> 4], hex[ch & 15]};
                binary += (i ? "," : "") + json_string(h);
            }
            binary += "]";
        }
        s += "},\"rows_1_2\":{\"params\":{" + params + "},\"binary_params_hex\":{" + binary + "},\"resp\":" +
             json_string("MGET " + resp_prefix(o, *t) + ":" + key_text(*t, 1) + " " + resp_prefix(o, *t) + ":" + key_text(*t, 2)) + "}}";
    }
    std::printf("%s]}\n", s.c_str());
    return 0;
}

int run_resp_keys(const Options &o, const KeyType &t) {
    for (long long n = 1; n <= o.batch; n++) std::printf("%s:%s\n", resp_prefix(o, t).c_str(), key_text(t, n).c_str());
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    if (argc < 2) die("usage: loadgen check|run|soak|keys|resp-keys [options] (see the header of bench/loadgen.cpp)");
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
        else if (a == "--keys") o.keys = val();
        else if (a == "--params") o.params = val();
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
        else if (a == "--interval") o.interval = std::stod(val());
        else if (a == "--write-rate") o.write_rate = std::stod(val());
        else if (a == "--standby-pg") o.standby_pg = val();
        else if (a == "--standby-resp-port") o.standby_resp_port = std::stoi(val());
        else if (a == "--probe-interval-ms") o.probe_interval_ms = std::stoi(val());
        else if (a == "--probe-bound-ms") o.probe_bound_ms = std::stoi(val());
        else if (a == "--probe-rows") o.probe_rows = std::stoi(val());
        else die("unknown option " + a);
    }
    if (o.params != "text" && o.params != "binary") die("--params: text or binary, not " + o.params);
    if (o.cmd == "check") return run_check(o);
    if (o.cmd == "keys") return run_describe(o);
    // run and soak: one key type (soak: int), the RESP prefix its table's name unless --prefix
    const KeyType &kt = key_type(o.keys.empty() ? "int" : o.keys);
    o.prefix = resp_prefix(o, kt);
    if (o.cmd == "run") return run_load(o);
    if (o.cmd == "resp-keys") return run_resp_keys(o, kt);
    if (o.cmd == "soak") {
        if (&kt != &INT_KEYS) die("soak reads public.items only (no --keys)");
        return run_soak(o);
    }
    die("unknown command " + o.cmd);
}
