// bench/loadgen_keys.cpp: owns the key types of the load generator (loadgen.h): their tables
// and key columns, the statements of the SQL read paths, a request's key arrays as text or
// binary parameters, RESP keys (through tools/lib/key_text.h), the keys of the miss mode, and
// the commands `keys` and `resp-keys`.
#include "bench/loadgen.h"

#include "tools/lib/pg_text.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace loadgen {

using tooling::json_string;

namespace {

void put_int(std::string &out, long long n) {
    char buf[24];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, n).ptr);
}
void put_uuid(std::string &out, long long n) {  // '00000000-0000-4000-8000-' || lpad(to_hex(n), 12, '0')
    static const char hex[] = "0123456789abcdef";
    out += "00000000-0000-4000-8000-";
    for (int shift = 44; shift >= 0; shift -= 4) out += hex[(static_cast<unsigned long long>(n) >> shift) & 15];
}

}  // namespace

KeyType::KeyType(const char *name, const char *table, const char *array_type, std::vector<KeyColumn> cols)
    : name(name), table(table), array_type(array_type), cols(std::move(cols)) {
    std::vector<std::string> types;
    for (auto &c : this->cols) types.push_back(c.type);
    shape = tooling::key_shape(types);
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
const char *const UPDATE_SQL = "UPDATE public.items SET value = $2 WHERE id = $1";
const char *const UPDATE_PLAIN_SQL = "UPDATE public.items_plain SET value = $2 WHERE id = $1";
const char *const UPDATE16_SQL =
    "UPDATE public.items AS t SET value = v.value FROM unnest($1::bigint[], $2::text[]) AS v(id, value) WHERE t.id = v.id";

namespace {

// Appends row n's key in column c (NULL for nullopt) as array_in reads it.
void put_item(std::string &out, const KeyColumn &c, const std::optional<long long> &n) {
    if (!n) {
        out += "NULL";
        return;
    }
    std::string v;
    c.put(v, *n);
    tooling::append_array_element(out, v);
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

}  // namespace

// The parameters of a request of path for rows (nullopt: a NULL key): key_params(t, path) arrays.
// Text: array literals, e.g. {1,2} (int), {{0,1},{0,2}} (pair, mget) or {0,0} and {1,2} (pair, sql
// and fdw). Binary: the same arrays in the binary format (binary_array), the element type that of
// the statement's cast ($1::<array_type>[] for mget, mget_json and parse; $k::<column type>[] for
// prepared SQL and the FDW).
std::vector<std::string> key_arrays(const KeyType &t, const std::string &path, const std::vector<std::optional<long long>> &rows,
                                    bool binary) {
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
std::vector<std::string> key_columns(const KeyType &t, long long n) {
    std::vector<std::string> cols(t.cols.size());
    for (size_t c = 0; c < t.cols.size(); c++) t.cols[c].put(cols[c], n);
    return cols;
}

std::string key_text(const KeyType &t, long long n) { return tooling::key_text(t.shape, key_columns(t, n)); }

// The RESP key prefix of key type t: --prefix, or the table's name.
std::string resp_prefix(const Options &o, const KeyType &t) { return o.prefix.empty() ? t.table : o.prefix; }

std::string array_literal(const std::vector<std::optional<long long>> &keys) {
    return key_arrays(INT_KEYS, "sql", keys)[0];
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
}  // namespace loadgen
