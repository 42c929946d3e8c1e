// tools/stress_check/tables.cpp: owns the stressed tables declared in common.h: which they are,
// how a key number becomes each one's primary key (its columns' text, its canonical RESP text
// through tools/lib/key_text.h, mget's array literal, its JSON members), the SQL pieces built from a key's description, and
// the setup of one table.
//
// The tables cover the kinds of primary key local_cache keys rows by:
//  * stress_items (id bigint): an integer key, passed to mget as a bigint[];
//  * stress_uuids (id uuid): 16 key bytes whose canonical text is lower case with dashes,
//    passed as a uuid[];
//  * stress_lines (order_id bigint, line_no integer): a composite key of two integer columns,
//    passed as a 2-D bigint[] (line_no = k % 4 + 1, so a key move changes order_id alone);
//  * stress_accounts (account text, id uuid): a composite key whose text column holds ':',
//    '\', '"' and a non-ASCII letter, so that its RESP name needs escapes, passed as a 2-D
//    text[] whose uuid elements mget converts through uuid's input function.

#include "common.h"

#include <cstdio>

namespace stress {

namespace {

// A uuid unique to n (its low 64 bits are n) whose other hex digits vary, letters included.
std::string uuid_of(long long n) {
    uint64_t h = (uint64_t)n * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    char s[40];
    snprintf(s, sizeof s, "%08x-%04x-%04x-%04x-%012llx", (unsigned)(h >> 32),
             (unsigned)(h >> 16) & 0xffff, (unsigned)h & 0xffff, (unsigned)((uint64_t)n >> 48),
             (unsigned long long)((uint64_t)n & 0xffffffffffffULL));
    return s;
}

// The account of key number n: not unique (the uuid column is), with the characters a RESP
// key name escapes (':', '\'), an array literal and JSON escape ('"', '\') and a two-byte one.
std::string account_of(long long n) {
    return "acct:" + std::to_string(n % 7) + (n % 3 == 0 ? "\\" : "") + (n % 5 == 0 ? "\"\xc3\xa9" : "");
}

Table items{"stress_items", "stress_cache", {{"id", "bigint", true}}, "bigint[]",
            [](long long n) -> std::vector<std::string> { return {std::to_string(n)}; }};
Table uuids{"stress_uuids", "stress_uuids_cache", {{"id", "uuid", false}}, "uuid[]",
            [](long long n) -> std::vector<std::string> { return {uuid_of(n)}; }};
Table lines{"stress_lines", "stress_lines_cache",
            {{"order_id", "bigint", true}, {"line_no", "integer", true}}, "bigint[]",
            [](long long n) -> std::vector<std::string> {
                return {std::to_string(n / 4), std::to_string(n % 4 + 1)};
            }};
Table accounts{"stress_accounts", "stress_accounts_cache",
               {{"account", "text", false}, {"id", "uuid", false}}, "text[]",
               [](long long n) -> std::vector<std::string> { return {account_of(n), uuid_of(n)}; }};

const std::vector<Table *> all_tables{&items, &uuids, &lines, &accounts};

// An element of an array literal (tools/lib/pg_text.h).
std::string array_element(const std::string &s) {
    std::string out;
    tooling::append_array_element(out, s);
    return out;
}

std::string prefix(const char *alias) { return *alias ? std::string(alias) + "." : std::string(); }

// The pieces, one per key column, joined by `sep`.
template <typename Piece>
std::string join(const Table &t, const char *sep, Piece piece) {
    std::string s;
    for (size_t c = 0; c < t.key.size(); c++) s += (c ? sep : "") + piece(t.key[c], c);
    return s;
}

// Column c of the key of element i of the key array `array`, as the column's type.
std::string element(const Table &t, const std::string &array, const char *i, size_t c) {
    return "(" + array + ")[" + i + "]" + (t.composite() ? "[" + std::to_string(c + 1) + "]" : "") +
           "::" + t.key[c].type;
}

}  // namespace

Table::Table(const char *name, const char *foreign, std::vector<KeyColumn> key, const char *array_type,
             std::vector<std::string> (*key_of)(long long id))
    : name(name), foreign(foreign), key(std::move(key)), array_type(array_type), key_of(key_of) {
    std::vector<std::string> types;
    for (const KeyColumn &k : this->key) types.push_back(k.type);
    shape = tooling::key_shape(types);
}

const std::vector<Table *> &tables() { return all_tables; }

Table &pick_table(Rng &rng) { return *all_tables[rng.below((int)all_tables.size())]; }

std::string Table::text(long long id) const {
    if (id < 0) return "NULL";
    return tooling::key_text(shape, key_of(id));
}

std::string Table::keys_literal(const std::vector<long long> &ids) const {
    std::string s = "{";
    for (size_t i = 0; i < ids.size(); i++) {
        std::vector<std::string> cols(key.size(), "NULL");
        if (ids[i] >= 0 || (ids[i] == kHalfNullKey && composite())) {
            // a half-NULL key: the first columns of hot key 1, then NULL
            std::vector<std::string> k = key_of(ids[i] >= 0 ? ids[i] : 1);
            size_t n = ids[i] >= 0 ? k.size() : k.size() - 1;
            for (size_t c = 0; c < n; c++) cols[c] = array_element(k[c]);
        }
        std::string row;
        for (size_t c = 0; c < cols.size(); c++) row += (c ? "," : "") + cols[c];
        s += (i ? "," : "") + (composite() ? "{" + row + "}" : row);
    }
    return s + "}";
}

std::string Table::texts_literal(const std::vector<long long> &ids) const {
    std::string s = "{";
    for (size_t i = 0; i < ids.size(); i++)
        s += (i ? "," : "") + (ids[i] < 0 ? "NULL" : array_element(text(ids[i])));
    return s + "}";
}

std::string Table::json_key(long long id) const {
    std::vector<std::string> cols = key_of(id);
    return join(*this, ",", [&](const KeyColumn &k, size_t c) {
        return json_string(k.name) + ":" + (k.json_number ? cols[c] : json_string(cols[c]));
    });
}

std::string Table::columns(const char *alias) const {
    return join(*this, ", ", [&](const KeyColumn &k, size_t) { return prefix(alias) + k.name; });
}

std::string Table::match(const char *alias, int first) const {
    return join(*this, " AND ", [&](const KeyColumn &k, size_t c) {
        return prefix(alias) + k.name + " = $" + std::to_string(first + (int)c) + "::" + k.type;
    });
}

std::string Table::assign(int first) const {
    return join(*this, ", ", [&](const KeyColumn &k, size_t c) {
        return std::string(k.name) + " = $" + std::to_string(first + (int)c) + "::" + k.type;
    });
}

std::string Table::values(int first) const {
    return join(*this, ", ", [&](const KeyColumn &k, size_t c) {
        return "$" + std::to_string(first + (int)c) + "::" + k.type;
    });
}

std::string Table::elements(const std::string &array, const char *i) const {
    return join(*this, ", ", [&](const KeyColumn &, size_t c) { return element(*this, array, i, c); });
}

std::string Table::element_match(const char *alias, const std::string &array, const char *i) const {
    return join(*this, " AND ", [&](const KeyColumn &k, size_t c) {
        return prefix(alias) + k.name + " = " + element(*this, array, i, c);
    });
}

std::string Table::key_text_sql(const char *alias) const {
    if (!composite()) return "(" + prefix(alias) + key[0].name + ")::text";
    return join(*this, " || ':' || ", [&](const KeyColumn &k, size_t) {
        return "replace(replace((" + prefix(alias) + k.name + ")::text, '\\', '\\\\'), ':', '\\:')";
    });
}

bool setup_table(Conn &c, Table &t) {
    std::string name = t.name, cols = t.columns(""), array = "$1::" + std::string(t.array_type);
    std::string defs =
        join(t, ", ", [](const KeyColumn &k, size_t) { return std::string(k.name) + " " + k.type; });
    std::string counter = name + "_count_departure";
    std::vector<std::string> steps = {
        "DROP FOREIGN TABLE IF EXISTS " + std::string(t.foreign),
        "DROP TABLE IF EXISTS " + name,
        // version has a DEFAULT so that a RESP HSET of value alone can insert a missing row
        "CREATE TABLE " + name + " (" + defs + ", version int NOT NULL DEFAULT 1, value text, "
        "PRIMARY KEY (" + cols + "))",
        // Each key's departures: committed deletions of a row of the key and moves of it to
        // another key, counted in the departing transaction (compare_resp's absence proof).
        // SECURITY DEFINER: RESP writes run as local_cache.resp_role, which needs no
        // privilege on stress_departures.
        "CREATE OR REPLACE FUNCTION " + counter + "() RETURNS trigger LANGUAGE plpgsql "
        "SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$ BEGIN "
        "IF TG_OP = 'DELETE' OR ROW(" + t.columns("NEW") + ") IS DISTINCT FROM ROW(" + t.columns("OLD") +
            ") THEN "
        "INSERT INTO public.stress_departures AS d VALUES (TG_TABLE_NAME, " + t.key_text_sql("OLD") + ", 1) "
        "ON CONFLICT (tbl, key) DO UPDATE SET n = d.n + 1; END IF; RETURN NULL; END $$",
        "CREATE TRIGGER stress_count_departure AFTER DELETE OR UPDATE OF " + cols + " ON " + name +
            " FOR EACH ROW EXECUTE FUNCTION " + counter + "()",
    };
    for (const std::string &s : steps)
        if (!c.must(s.c_str())) return false;

    // The hot rows 1..--keys and the cold rows, whose values vary in length.
    std::vector<long long> ids;
    for (long long k = 1; k <= opt.keys; k++) ids.push_back(k);
    for (long long g = 1; g <= kColdRows; g++) ids.push_back(kColdBase + g);
    std::string keys = t.keys_literal(ids), numbers = "{", cold_base = std::to_string(kColdBase);
    for (size_t i = 0; i < ids.size(); i++) numbers += (i ? "," : "") + std::to_string(ids[i]);
    numbers += "}";
    std::string insert =
        "INSERT INTO " + name + " (" + cols + ", version, value) SELECT " + t.elements(array, "u.i") +
        ", 1, CASE WHEN x.n < $3 THEN 'hot-' || x.n || '-' || repeat('h', (x.n % 150)::int) "
        "ELSE 'cold-' || (x.n - $3) || '-' || repeat('c', ((x.n - $3) % 300)::int) END "
        "FROM generate_subscripts(" + array + ", 1) AS u(i), LATERAL (SELECT ($2::bigint[])[u.i] AS n) x";
    if (!c.must(insert.c_str(), {keys.c_str(), numbers.c_str(), cold_base.c_str()})) return false;
    std::string enable = "SELECT local_cache.enable('public." + name + "')";
    std::string foreign = "CREATE FOREIGN TABLE " + std::string(t.foreign) + " (" + defs +
                          ", version int, value text) SERVER local_cache "
                          "OPTIONS (table 'public." + name + "')";
    std::string analyze = "ANALYZE " + name;
    for (const std::string &s : {enable, foreign, analyze})
        if (!c.must(s.c_str())) return false;
    Res r = c.must("SELECT resp_prefix FROM local_cache.tables WHERE relid = $1::regclass",
                   {("public." + name).c_str()});
    if (!r) return false;
    t.resp_prefix = get(r, 0, 0);
    return true;
}

}  // namespace stress
