// bench/loadgen_check.cpp: owns `loadgen check` (loadgen_main.cpp): every read path against
// prepared SQL for each key type (text and binary key arrays, twice: the second pass reads what
// the first cached), and the writes (RESP SET, SQL UPDATE, redis-server SET; RESP MSET, the 16-row
// SQL UPDATE, redis-server MSET) seen by every path.
#include "bench/loadgen.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace loadgen {

namespace {

using tooling::PgParams;
using tooling::Reply;
using tooling::RespClient;

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
    std::vector<std::string> columns;
    for (int c = 0; c < static_cast<int>(t.cols.size()); c++) columns.push_back(PQgetvalue(r, i, c));
    row.key = tooling::key_text(t.shape, columns);
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
// The write paths, after the reads and on rows they do not use (first_id, first_id + 1): the
// row is read through RESP first (so that it is cached and the write must invalidate it); RESP
// SET as the writing role, then mget_json, plain SQL and RESP GET (the reading role) must show
// exactly the object; the benchmark's prepared SQL UPDATE, then SQL and RESP GET must show it;
// redis-server SET of the same bytes, then GET (this also leaves redis-server equal to the table).
// One row with a plain 128-byte value like the timed samples, one with characters JSON escapes.
// Returns the number of comparisons.
int check_writes(const Options &o, PGconn *c, RespClient &resp, RespClient &redis, long long first_id) {
    tooling::pg_prepare(c, "row", "SELECT value, row_to_json(i)::text FROM public.items i WHERE id = $1", 1);
    tooling::pg_prepare(c, "update", UPDATE_SQL, 2);
    RespClient writer = resp_connect(o.resp_port, o.resp_user, o.resp_password);
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
        auto expect_get = [&](RespClient &client, const char *who, const std::string &when, const std::string &want) {
            Reply g = client.call({"GET", key});
            if (!g.is_bulk() || g.text != want)
                fail(ctx + ": " + when + ", " + who + " GET answers " + g.describe() + ", expected " + want);
            compared++;
        };
        auto expect_ok = [&](const Reply &r, const std::string &what) {
            if (!r.is_simple("OK")) fail(ctx + ": " + what + " answered " + r.describe() + ", expected +OK");
            compared++;
        };

        // the row as it is, cached by the RESP read
        Row before = sql_row("before the writes");
        expect_get(resp, "RESP", "before the writes", before.json);

        // RESP SET: the row becomes the object
        const std::string json1 = row_json(id, cases[i].set_value);
        expect_ok(writer.call({"SET", key, json1}), "RESP SET " + json1);
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
        expect_ok(redis.call({"SET", key, json2}), "redis-server SET");
        expect_get(redis, "redis-server", "after redis-server SET", json2);
    }
    return compared;
}

// The multi-row writes, on MULTI_ROWS rows from first_id on that nothing else uses, read into the
// cache first (RESP MGET): MSET as the writing role of each row's object (one value with characters
// JSON escapes), then SQL (value and row_to_json) and RESP MGET must show exactly what was sent;
// the benchmark's prepared 16-row UPDATE, then SQL and RESP MGET the new rows; redis-server MSET of
// the same bytes, then MGET. Returns the number of comparisons.
int check_multi_writes(const Options &o, PGconn *c, RespClient &resp, RespClient &redis, long long first_id) {
    tooling::pg_prepare(c, "rows16", "SELECT id, value, row_to_json(i)::text FROM public.items i "
                                     "WHERE id = ANY($1::bigint[]) ORDER BY id", 1);
    tooling::pg_prepare(c, "update16", UPDATE16_SQL, 2);
    RespClient writer = resp_connect(o.resp_port, o.resp_user, o.resp_password);
    std::mt19937_64 rng(std::random_device{}());
    std::vector<long long> ids;
    std::vector<std::string> keys, id_texts;
    for (int i = 0; i < MULTI_ROWS; i++) {
        ids.push_back(first_id + i);
        id_texts.push_back(std::to_string(first_id + i));
        keys.push_back(resp_prefix(o, INT_KEYS) + ":" + id_texts.back());
    }
    std::string id_array = "{";
    for (size_t i = 0; i < id_texts.size(); i++) id_array += (i ? "," : "") + id_texts[i];
    id_array += "}";
    const std::string ctx = "multi-row write check, rows " + id_texts.front() + "-" + id_texts.back();
    int compared = 0;
    // SQL's rows (value, row_to_json) against the values written and their JSON
    auto expect_sql = [&](const std::string &when, const std::vector<std::string> &values) {
        PGresult *r = exec_prepared(c, "rows16", {id_array});
        if (PQntuples(r) != MULTI_ROWS) {
            fail(ctx + ": " + when + ", SQL finds " + std::to_string(PQntuples(r)) + " rows, expected " +
                 std::to_string(MULTI_ROWS));
        } else {
            for (int i = 0; i < MULTI_ROWS; i++) {
                const std::string json = row_json(ids[i], values[i]);
                if (PQgetisnull(r, i, 1) || PQgetvalue(r, i, 1) != values[i] || PQgetvalue(r, i, 2) != json)
                    fail(ctx + ": " + when + ", SQL shows " + PQgetvalue(r, i, 2) + ", expected " + json);
                compared++;
            }
        }
        PQclear(r);
    };
    auto expect_mget = [&](RespClient &client, const char *who, const std::string &when, const std::vector<std::string> &want) {
        std::vector<std::string> args = {"MGET"};
        args.insert(args.end(), keys.begin(), keys.end());
        Reply g = client.call(args);
        if (!g.is_aggregate() || g.elements.size() != want.size()) {
            fail(ctx + ": " + when + ", " + who + " MGET answers " + g.describe());
            return;
        }
        for (size_t i = 0; i < want.size(); i++) {
            if (!g.elements[i].is_bulk() || g.elements[i].text != want[i])
                fail(ctx + ": " + when + ", " + who + " MGET's " + keys[i] + " is " + g.elements[i].describe() +
                     ", expected " + want[i]);
            compared++;
        }
    };
    auto mset = [&](RespClient &client, const char *who, const std::vector<std::string> &jsons) {
        std::vector<std::string> args = {"MSET"};
        for (int i = 0; i < MULTI_ROWS; i++) {
            args.push_back(keys[i]);
            args.push_back(jsons[i]);
        }
        Reply r = client.call(args);
        if (!r.is_simple("OK")) fail(ctx + ": " + who + " MSET answered " + r.describe() + ", expected +OK");
        compared++;
    };
    auto fresh = [&](const std::string &escaped) {
        std::vector<std::string> values, jsons;
        for (int i = 0; i < MULTI_ROWS; i++) {
            values.push_back(i == 3 ? escaped + random_value(rng).substr(0, 16) : random_value(rng));
            jsons.push_back(row_json(ids[i], values.back()));
        }
        return std::make_pair(values, jsons);
    };

    // the rows as they are, cached by the RESP read
    {
        PGresult *r = exec_prepared(c, "rows16", {id_array});
        std::vector<std::string> before;
        for (int i = 0; i < PQntuples(r); i++) before.push_back(PQgetvalue(r, i, 2));
        PQclear(r);
        if (before.size() != static_cast<size_t>(MULTI_ROWS)) die(ctx + ": the table lacks some of the rows");
        expect_mget(resp, "RESP", "before the writes", before);
    }
    // RESP MSET (the writing role): the rows become the objects
    auto [set_values, set_jsons] = fresh("mset \" \\ \t \n \x07 / \xc3\xa9 ");
    mset(writer, "RESP", set_jsons);
    expect_sql("after RESP MSET", set_values);
    expect_mget(resp, "RESP", "after RESP MSET", set_jsons);

    // the benchmark's 16-row UPDATE
    auto [upd_values, upd_jsons] = fresh("update16 \"\\\t\x01 ");
    {
        const std::string val_array = text_array_literal(upd_values);
        const char *vals[2] = {id_array.c_str(), val_array.c_str()};
        PGresult *r = PQexecPrepared(c, "update16", 2, vals, nullptr, nullptr, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) die("UPDATE of rows " + id_array + ": " + PQerrorMessage(c));
        if (std::string(PQcmdTuples(r)) != std::to_string(MULTI_ROWS))
            fail(ctx + ": the 16-row UPDATE changed " + PQcmdTuples(r) + " rows, expected " + std::to_string(MULTI_ROWS));
        PQclear(r);
        compared++;
    }
    expect_sql("after the 16-row UPDATE", upd_values);
    expect_mget(resp, "RESP", "after the 16-row UPDATE", upd_jsons);

    // redis-server MSET of the same bytes
    mset(redis, "redis-server", upd_jsons);
    expect_mget(redis, "redis-server", "after redis-server MSET", upd_jsons);
    return compared;
}

using K = std::optional<long long>;

// The read check of one key type on rows `cases` (row numbers, nullopt: a NULL key), twice: pass
// 0 may fill the cache, pass 1 hits it. The reference is prepared SQL (the sql path's statement)
// with each row's row_to_json; it must find a row for every key of rows 1..rows (the table holds
// them, bench/run loads them so). Returns the number of comparisons.
int check_reads(const Options &o, const KeyType &t, PGconn *c, RespClient *resp, RespClient *redis,
                const std::vector<std::vector<K>> &cases) {
    const std::string name = t.name, expected = name + "_expected";
    tooling::pg_prepare(c, expected.c_str(), ("SELECT s.*, row_to_json(s)::text FROM (" + statement(t, "sql") + ") s").c_str(),
               key_params(t, "sql"));
    for (const char *p : {"sql", "mget", "mget_json", "fdw", "parse"})
        tooling::pg_prepare(c, (name + "_" + p).c_str(), statement(t, p).c_str(), key_params(t, p));
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
            for (auto [path, client] : {std::pair<const char *, RespClient *>{"resp", resp}, {"redis", redis}}) {
                if (!client) continue;
                std::string ctx = std::string(path) + " MGET " + ctx0;
                Reply v = client->call(args);
                if (rk.empty()) {
                    if (!v.is_error()) fail(ctx + ": MGET without keys should be an error");
                } else if (v.type != '*' || v.is_null || v.elements.size() != rk.size()) {
                    fail(ctx + ": expected an array of " + std::to_string(rk.size()) + (v.is_error() ? ", got error " + v.text : ""));
                } else {
                    for (size_t i = 0; i < rk.size(); i++) {
                        auto it = exp.find(rk[i]);
                        const Reply &e = v.elements[i];
                        if (it == exp.end()) {
                            if (!e.is_null) fail(ctx + " element " + std::to_string(i) + ": expected nil");
                        } else if (!e.is_bulk() || e.text != it->second.json) {
                            fail(ctx + " element " + std::to_string(i) + ": got " + (e.is_bulk() ? e.text : "non-bulk") +
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

}  // namespace

int run_check(const Options &o) {
    PGconn *c = tooling::pg_connect(o.pg);
    std::optional<RespClient> resp, redis;
    if (o.resp_port) resp = resp_connect(o.resp_port);
    if (o.redis_port) redis = resp_connect(o.redis_port);

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
        int n = check_reads(o, *t, c, resp ? &*resp : nullptr, redis ? &*redis : nullptr, cases);
        std::fprintf(stderr, "loadgen check: %s keys (%s): %d comparisons\n", t->name,
                     statement(*t, "sql").c_str(), n);
        compared += n;
        with_int |= t == &INT_KEYS;
        names += std::string(names.empty() ? "" : ",") + "\"" + t->name + "\"";
    }
    // the writes: public.items only
    int write_compared = with_int && resp && redis ? check_writes(o, c, *resp, *redis, 4001) : 0;
    if (with_int && resp && redis) write_compared += check_multi_writes(o, c, *resp, *redis, 4010);
    compared += write_compared;
    PQfinish(c);
    std::fprintf(stderr, "loadgen check: %d comparisons (%d of them writes), %d mismatches\n", compared,
                 write_compared, g_failures);
    std::printf("{\"client\":\"native\",\"comparisons\":%d,\"write_comparisons\":%d,\"mismatches\":%d,\"key_types\":[%s]}\n",
                compared, write_compared, g_failures, names.c_str());
    return g_failures ? 1 : 0;
}

}  // namespace loadgen
