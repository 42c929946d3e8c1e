// bench/loadgen.h: owns what the parts of the native load generator share (loadgen_main.cpp
// says what the program does): the options and fatal exit, the key types and how a row number
// becomes keys, parameters and RESP keys (loadgen_keys.cpp), connections, request values and
// measurements (loadgen_client.cpp), and the entry point of each command (loadgen_check.cpp,
// loadgen_run.cpp, loadgen_soak.cpp, loadgen_keys.cpp).
#pragma once

#include "tools/lib/key_text.h"
#include "tools/lib/pg.h"
#include "tools/lib/resp_client.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace loadgen {

using Clock = std::chrono::steady_clock;

// Prints "loadgen: msg" and exits 2.
[[noreturn]] void die(const std::string &msg);

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

// ------------------------------------------------------------------ key types (loadgen_keys.cpp)
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
    KeyType(const char *name, const char *table, const char *array_type, std::vector<KeyColumn> cols);
    const char *name;        // --keys
    const char *table;       // public.<table>, the foreign table cache.<table>, RESP prefix <table>
    const char *array_type;  // element type of mget's key array ($1::<array_type>[])
    std::vector<KeyColumn> cols;
    local_cache::KeyShape shape;  // the columns' kinds, for the RESP key text
};
extern const std::vector<KeyType> KEY_TYPES;
extern const KeyType &INT_KEYS;
extern const char *const UPDATE_SQL;
// update_pair's other half: public.items_plain, public.items' rows in a table that is never cached
extern const char *const UPDATE_PLAIN_SQL;
// update_pair: connection i's backend names its half in application_name (the driver reads each
// half's backend CPU from it)
inline bool pair_plain_half(int connection) { return connection % 2 == 1; }
// update16: one statement writing MULTI_ROWS rows, $1 their ids, $2 their values (text arrays)
extern const char *const UPDATE16_SQL;
// The rows of one request of the multi-row write paths (update16, resp_mset, redis_mset)
constexpr int MULTI_ROWS = 16;

const KeyType &key_type(const std::string &name);
// The key types of --keys: a comma-separated list; empty: all of KEY_TYPES.
std::vector<const KeyType *> key_types(const std::string &list);
bool is_sql_read(const std::string &path);
bool is_composite(const KeyType &t);
int key_params(const KeyType &t, const std::string &path);
std::string statement(const KeyType &t, const std::string &path);
std::vector<std::string> key_arrays(const KeyType &t, const std::string &path, const std::vector<std::optional<long long>> &rows,
                                    bool binary = false);
std::string array_literal(const std::vector<std::optional<long long>> &keys);
// Row n's key as PostgreSQL prints it, one string per key column.
std::vector<std::string> key_columns(const KeyType &t, long long n);
// The id part of row n's RESP key (tools/lib/key_text.h).
std::string key_text(const KeyType &t, long long n);
// The RESP key prefix of key type t: --prefix, or the table's name.
std::string resp_prefix(const Options &o, const KeyType &t);
std::vector<long long> miss_keys(const Options &o, uint64_t seq, int index);

// ------------------------------------------------------------------ client (loadgen_client.cpp)
bool is_resp_path(const std::string &path);
bool is_mset_path(const std::string &path);  // resp_mset, redis_mset
// n distinct random row numbers of 1..rows, ascending (concurrent multi-row writes then lock
// their rows in one order and do not deadlock each other)
std::vector<long long> distinct_rows(std::mt19937_64 &rng, int n, int rows);
// A text[] literal of the strings, each element quoted as array_in reads it.
std::string text_array_literal(const std::vector<std::string> &v);
// A RESP connection to 127.0.0.1:port (no time limit); AUTH user password first when a user is given.
tooling::RespClient resp_connect(int port, const std::string &user = "", const std::string &password = "");
std::string random_value(std::mt19937_64 &rng);
std::string row_json(long long id, const std::string &value);
double cpu_seconds();
uint32_t pct_of(const std::vector<uint32_t> &v, double p);  // v sorted

// ------------------------------------------------------------------ commands
int run_check(const Options &o);                      // loadgen_check.cpp
int run_load(const Options &o);                       // loadgen_run.cpp
int run_soak(const Options &o);                       // loadgen_soak.cpp
int run_describe(const Options &o);                   // loadgen_keys.cpp
int run_resp_keys(const Options &o, const KeyType &t);  // loadgen_keys.cpp

}  // namespace loadgen
