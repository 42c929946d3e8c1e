// tools/stress_check/common.h: owns what every part of the stress check shares (see main.cpp
// for what the check does): the options, the run's stop flag, first failure and counters, the
// libpq wrapper Conn/Res, the stressed tables and their keys (tables.cpp), the comparisons of
// local_cache with plain SQL, the RESP connections (tools/lib's client), plain SQL reads of keys
// with their version identity and departure count, and the race-free comparison of RESP replies with plain SQL,
// the random number source Rng and the key pickers, and the entry points of the three kinds of
// session (writer.cpp, reader.cpp, toggler.cpp).

#pragma once

#include "tools/lib/key_text.h"
#include "tools/lib/pg.h"
#include "tools/lib/pg_text.h"
#include "tools/lib/resp_client.h"

#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace stress {

using Clock = std::chrono::steady_clock;

// Every session names a row of any stressed table by a key number, which the table makes its
// primary key (Table::key_of): so the hot, cold, moved-away and missing keys, and the writers'
// and readers' logic, are the same for every table.
constexpr long long kColdBase = 100000;      // cold rows: kColdBase+1 .. kColdBase+kColdRows
constexpr int kColdRows = 2000;
constexpr long long kMoveOffset = 1000000;   // a moved row k lives at k + kMoveOffset meanwhile
constexpr long long kMissingBase = 900000000; // never present
// In key lists only: a NULL key (every key column NULL), and a key whose last column alone is
// NULL (which is a NULL key too: it names no row; for a one-column key the same as kNullKey).
constexpr long long kNullKey = -1;
constexpr long long kHalfNullKey = -2;

struct Options {
    std::string conninfo;
    int seconds = 30;
    int writers = 3;
    int long_writers = 1;       // writers whose transactions take their xid early (writer.cpp)
    int bank_sessions = 2;      // SERIALIZABLE transfer sessions (bank.cpp)
    int readers = 3;
    int keys = 64;
    int toggle_seconds = 3;
    int resp_port = 0;          // 0: no RESP checks
};
extern Options opt;

extern std::atomic<bool> g_stop;
extern std::atomic<bool> g_failed;
extern std::mutex g_mutex;   // guards g_failure and stdout
extern std::string g_failure;

extern std::atomic<uint64_t> n_rr_checks, n_rc_checks, n_commit_checks, n_txn_checks,
    n_fdw_checks, n_commits, n_rollbacks, n_conflicts, n_rr_txns, n_toggles,
    n_uncaptured_writes, n_early_xid_txns;
// The SERIALIZABLE mode (bank.cpp): committed transfers, committed read-only audits, and
// serialization failures (rolled back, as expected).
extern std::atomic<uint64_t> n_bank_commits, n_bank_audits, n_bank_conflicts;
// RESP: keys compared after a writer's COMMIT/ROLLBACK/RESP write (GET) and in readers' MGETs,
// of these the absent keys (nil) and those compared with the writer's own write (its commit,
// or its RESP write proven by plain SQL right after the reply), keys not comparable
// because they changed around the request (or a change could not be ruled out), error replies
// (-ERR, -BUSY after the retries) and -BUSY replies retried.
extern std::atomic<uint64_t> n_resp_commit_checks, n_resp_read_checks, n_resp_skipped,
    n_resp_errors, n_resp_busy_retries, n_resp_absent_checks, n_resp_own_checks;
// RESP writes (writer.cpp): acknowledged writes by command (SET, DEL, HSET, MULTI/EXEC of two
// SETs), of these the ones whose rows plain SQL right after the reply proved to be exactly the
// write (n_resp_write_own), expected error replies (a serialization failure of EXEC's
// REPEATABLE READ transaction; nothing written), -BUSY replies retried, and writes given up
// after too many -BUSY (nothing written).
extern std::atomic<uint64_t> n_resp_sets, n_resp_dels, n_resp_hsets, n_resp_multis,
    n_resp_write_own, n_resp_write_conflicts, n_resp_write_busy_retries, n_resp_write_gave_up;
extern std::atomic<int> n_threads_done;

// printf to stdout as one line, under g_mutex.
void say(const char *fmt, ...);

// Records the first failure and stops every thread.
void fail(const std::string &msg);

void sleep_ms(int ms);

using Res = tooling::PgResult;

// One libpq connection, named for reports, with the check's session settings. Every statement
// goes through run(); errors come back as (ok=false, sqlstate, message) so callers can decide
// what is expected.
class Conn {
  public:
    explicit Conn(const std::string &name);
    ~Conn();
    Conn(const Conn &) = delete;
    Conn &operator=(const Conn &) = delete;

    using Outcome = tooling::PgOutcome;

    Outcome run(const char *sql, std::vector<const char *> params = {});

    // Runs a statement that must succeed; on error records a failure and returns null.
    Res must(const char *sql, std::vector<const char *> params = {});

    const std::string &name() const { return name_; }

  private:
    std::string name_;
    PGconn *conn_ = nullptr;
};

// The value at (row, col), or "<NULL>" for SQL NULL, a missing row or no result.
inline std::string get(const Res &r, int row, int col) { return tooling::pg_value(r.get(), row, col); }

// True for the errors concurrent writers may run into (the transaction is then rolled back).
bool expected_conflict(const std::string &sqlstate);

// The text of `s` as a JSON string, as row_to_json writes it (tools/lib/pg_text.h).
using tooling::json_string;

// One column of a table's primary key: its name, SQL type, and whether row_to_json writes its
// values as JSON numbers (else as strings).
struct KeyColumn {
    const char *name;
    const char *type;
    bool json_number;
};

// A stressed table (tables.cpp): besides its key, every one has the columns version int NOT
// NULL DEFAULT 1 and value text, a foreign table on it, and a trigger that counts its keys'
// departures in stress_departures (compare_resp). The SQL each part runs on a table is built
// from the key's description here, so every check runs on every table alike.
struct Table {
    Table(const char *name, const char *foreign, std::vector<KeyColumn> key, const char *array_type,
          std::vector<std::string> (*key_of)(long long id));

    const char *name;
    const char *foreign;                 // its foreign table (local_cache_fdw)
    std::vector<KeyColumn> key;          // in key order; the table's first columns
    const char *array_type;              // the type of mget's keys argument (2-D if composite)
    std::vector<std::string> (*key_of)(long long id);   // the key's columns as text
    local_cache::KeyShape shape;         // the key columns' kinds (tools/lib/key_text.h)
    std::string resp_prefix;             // read from local_cache.tables by setup
    std::atomic<uint64_t> checks{0};     // comparisons of this table (any kind)

    bool composite() const { return key.size() > 1; }
    // The key's canonical text, which names it in RESP after "prefix:" (tools/lib/key_text.h:
    // the extension's key_bytes.h itself); "NULL" for kNullKey and kHalfNullKey.
    std::string text(long long id) const;
    std::string resp_key(long long id) const { return resp_prefix + ":" + text(id); }
    // mget's keys argument for a key list (kNullKey, kHalfNullKey allowed), to be cast to
    // array_type: the `$1` of the statements that compare key lists.
    std::string keys_literal(const std::vector<long long> &ids) const;
    // text[] of the keys' canonical texts (what stress_departures names keys by).
    std::string texts_literal(const std::vector<long long> &ids) const;
    // The key's members of its row_to_json object, e.g. "order_id":7,"line_no":1.
    std::string json_key(long long id) const;

    // SQL pieces. Parameters are numbered from `first`, one per key column, as text.
    std::string columns(const char *alias) const;             // t.a, t.b
    std::string match(const char *alias, int first) const;    // t.a = $1::T AND t.b = $2::U
    std::string assign(int first) const;                      // a = $1::T, b = $2::U
    std::string values(int first) const;                      // $1::T, $2::U
    // The key of element `i` of the key array `array` (as keys_literal makes it).
    std::string elements(const std::string &array, const char *i) const;
    std::string element_match(const char *alias, const std::string &array, const char *i) const;
    // The canonical text of the key of the row `alias` (as text() makes it), in SQL.
    std::string key_text_sql(const char *alias) const;
};

// The stressed tables: stress_items first, then the others (tables.cpp).
const std::vector<Table *> &tables();

// (Re)creates the table, its departure trigger and foreign table, fills it with the hot and
// cold rows, enables it and reads its resp_prefix back. False after fail().
bool setup_table(Conn &c, Table &t);

// Statement parameters as text (or NULL), kept alive for the call: the key columns of keys of
// a table (Table::match etc. number them), then any others.
struct Params {
    std::vector<std::string> values;
    std::vector<bool> nulls;
    Params &key(const Table &t, long long id) {
        for (const std::string &v : t.key_of(id)) add(v);
        return *this;
    }
    Params &add(const std::string &v) {
        values.push_back(v);
        nulls.push_back(false);
        return *this;
    }
    Params &add_null() {
        values.emplace_back();
        nulls.push_back(true);
        return *this;
    }
    std::vector<const char *> get() const {
        std::vector<const char *> p;
        for (size_t i = 0; i < values.size(); i++) p.push_back(nulls[i] ? nullptr : values[i].c_str());
        return p;
    }
};

// For a failure report: where the JSON arrays a and b (rows of t's keys `ids`) differ, key by
// key, and both in full.
std::string describe_diff(const Table &t, const std::vector<long long> &ids, const std::string &a,
                          const char *a_name, const std::string &b, const char *b_name);

// Compares mget, mget_json and plain SQL for the key list `ids` of `t` in one statement on `c`.
// Returns false (after fail()) on a difference or an error; *cached gets mget's JSON.
bool compare(Conn &c, Table &t, const std::vector<long long> &ids, const std::string &where,
             std::string *cached = nullptr);

// Compares t's foreign table with t for the key list `ids` in one statement on `c`. Returns
// false (after fail()) on a difference or an error.
bool compare_fdw(Conn &c, Table &t, const std::vector<long long> &ids, const std::string &where);

// RESP replies and connections: tools/lib (resp_reply.h, resp_client.h).
using tooling::RespClient;
using RespReply = tooling::Reply;
constexpr int kRespTimeoutMs = 5000;
// A connection to the RESP server on 127.0.0.1:--resp-port; connects on first use, and a reply
// that does not arrive completely within kRespTimeoutMs throws.
RespClient resp_client();

// One key as plain SQL sees it: absent, or the visible version's row_to_json text (what RESP
// must answer, byte for byte), identity "xmin ctid" and columns; and in either case the key's
// departure count (stress_departures: how many times a committed transaction deleted a row of
// the key or moved it to another key; main.cpp's trigger keeps it), which proves an absence
// constant (compare_resp in common.cpp).
struct SqlRow {
    bool present = false;
    std::string version_id, json, version, value;   // value "<NULL>" for NULL
    long long departures = 0;
};

// Reads the keys `ids` (no NULL ones) of `t` with plain SQL in one statement on `c` (its own
// READ COMMITTED snapshot), one SqlRow per id in order. Returns false (after fail()) on an
// error.
bool read_sql_rows(Conn &c, const Table &t, const std::vector<long long> &ids, std::vector<SqlRow> *out);

// For reports: absent or the JSON, the version identity and the departure count.
std::string describe_sql_row(const SqlRow &r);

// The state of compare_resp's keys at a moment before the request, as the caller knows it
// instead of a plain SQL read before the request: `rows` (one per key) and how to name it in a
// report; `own` counts the compared keys in n_resp_own_checks (the state is the caller's own
// write, not merely a read after it).
struct KnownState {
    std::vector<SqlRow> rows;
    std::string name;
    bool own = false;
};

// Reads the keys `ids` of `t` (hot, cold, moved-away or missing) through RESP (GET for one key when
// `use_get`, else MGET) and compares the reply with plain SQL read just before and just after
// it on `c` (not inside a transaction), key by key, where that is race-free (see the comment
// in common.cpp). `known`, if given, replaces the read before (writer.cpp: its own commit, or
// plain SQL read right after its RESP write's reply). `checked` counts the compared keys.
// Returns false (after fail()) on a mismatch or an error.
bool compare_resp(Conn &c, RespClient &resp, Table &t, const std::vector<long long> &ids, bool use_get,
                  const std::string &where, std::atomic<uint64_t> &checked,
                  const KnownState *known = nullptr);

class Rng {
  public:
    explicit Rng(uint64_t seed) : g_(seed) {}
    int below(int n) { return (int)(g_() % (uint64_t)n); }
    bool chance(int percent) { return below(100) < percent; }
    uint64_t raw() { return g_(); }

  private:
    std::mt19937_64 g_;
};

// The table a session's next step is about: each equally often.
Table &pick_table(Rng &rng);
long long hot_key(Rng &rng);
long long cold_key(Rng &rng);
// A list of hot, cold, moved-away and missing keys, with NULLs and duplicates.
std::vector<long long> random_keys(Rng &rng);

// The sessions' loops: each runs until g_stop (and returns early after a failure).
void run_writer(int id, bool long_txns);   // writer.cpp
void run_reader(int id);   // reader.cpp
void run_toggler();        // toggler.cpp
void run_banker(int id);   // bank.cpp
// (Re)creates stress_bank, its accounts and its foreign table, and enables it.
bool setup_bank(Conn &c);

}  // namespace stress
