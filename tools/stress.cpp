// tools/stress.cpp: owns the concurrency stress check of local_cache (run by tools/test.sh).
//
// Writers change a few hot rows of stress_items in every way that must invalidate the cache
// (UPDATE, DELETE + re-INSERT, INSERT ON CONFLICT DO UPDATE, primary key moves, ROLLBACK),
// and right after each COMMIT returns check from a second connection that local_cache.mget
// shows what plain SQL shows (read-after-commit). Readers compare local_cache.mget and
// local_cache.mget_json with the same rows read by plain SQL in the same snapshot, in
// REPEATABLE READ transactions whose snapshots get old, and in READ COMMITTED statements;
// they also compare the foreign table stress_cache (local_cache_fdw on stress_items: key
// lookups and a join that looks up each key) with the same queries on stress_items.
// A toggler session switches the capture trigger off and on every few seconds (in one
// transaction or across several) and writes while it is off, so readers check every path
// while writes go uncaptured. Setup checks that a partitioned layout is refused.
// Any difference prints the keys, both results and local_cache.stats, and exits 1. Exits 1
// too if the cache served no hit at all (the run would prove nothing).
//
// Build (tools/test.sh does it):
//   g++ -std=c++17 -O2 -pthread -I$(pg_config --includedir) tools/stress.cpp -o tools/stress -lpq
// Usage: tools/stress CONNINFO [--seconds N] [--writers N] [--readers N] [--keys N]
//                             [--toggle-seconds N]   (0: no toggler)
//        (the server must have shared_preload_libraries = 'local_cache'; the program
//        creates the extension if needed and (re)creates table stress_items and the
//        foreign table stress_cache)

#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr long long kColdBase = 100000;      // cold rows: kColdBase+1 .. kColdBase+kColdRows
constexpr int kColdRows = 2000;
constexpr long long kMoveOffset = 1000000;   // a moved row k lives at k + kMoveOffset meanwhile
constexpr long long kMissingBase = 900000000; // never present

struct Options {
    std::string conninfo;
    int seconds = 30;
    int writers = 3;
    int readers = 3;
    int keys = 64;
    int toggle_seconds = 3;
};
Options opt;

std::atomic<bool> g_stop{false};
std::atomic<bool> g_failed{false};
std::mutex g_mutex;          // guards g_failure and stdout
std::string g_failure;

std::atomic<uint64_t> n_rr_checks{0}, n_rc_checks{0}, n_commit_checks{0}, n_txn_checks{0},
    n_fdw_checks{0}, n_commits{0}, n_rollbacks{0}, n_conflicts{0}, n_rr_txns{0}, n_toggles{0},
    n_uncaptured_writes{0};
std::atomic<int> n_threads_done{0};

void say(const char *fmt, ...) {
    std::lock_guard<std::mutex> g(g_mutex);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

// Records the first failure and stops every thread.
void fail(const std::string &msg) {
    {
        std::lock_guard<std::mutex> g(g_mutex);
        if (!g_failed.load()) {
            g_failure = msg;
            g_failed = true;
        }
    }
    g_stop = true;
}

struct ResDel {
    void operator()(PGresult *r) const { PQclear(r); }
};
using Res = std::unique_ptr<PGresult, ResDel>;

// One libpq connection. Every statement goes through run(); errors come back as
// (ok=false, sqlstate, message) so callers can decide what is expected.
class Conn {
  public:
    explicit Conn(const std::string &name) : name_(name) {
        conn_ = PQconnectdb(opt.conninfo.c_str());
        if (PQstatus(conn_) != CONNECTION_OK) {
            std::string m = PQerrorMessage(conn_);
            PQfinish(conn_);
            conn_ = nullptr;
            throw std::runtime_error(name + ": connection failed: " + m);
        }
        Res r(PQexec(conn_, "SET application_name = 'local_cache_stress'; "
                            "SET statement_timeout = '30s'; SET lock_timeout = '10s'; "
                            "SET client_min_messages = warning"));
        if (PQresultStatus(r.get()) != PGRES_COMMAND_OK)
            throw std::runtime_error(name + ": SET failed: " + PQerrorMessage(conn_));
    }
    ~Conn() {
        if (conn_) PQfinish(conn_);
    }
    Conn(const Conn &) = delete;
    Conn &operator=(const Conn &) = delete;

    struct Outcome {
        bool ok = false;
        Res res;
        std::string sqlstate;
        std::string error;
    };

    Outcome run(const char *sql, std::vector<const char *> params = {}) {
        Outcome o;
        o.res.reset(PQexecParams(conn_, sql, (int)params.size(), nullptr,
                                 params.empty() ? nullptr : params.data(), nullptr, nullptr, 0));
        ExecStatusType st = o.res ? PQresultStatus(o.res.get()) : PGRES_FATAL_ERROR;
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
            o.ok = true;
            return o;
        }
        const char *ss = o.res ? PQresultErrorField(o.res.get(), PG_DIAG_SQLSTATE) : nullptr;
        o.sqlstate = ss ? ss : "";
        o.error = o.res ? PQresultErrorMessage(o.res.get()) : PQerrorMessage(conn_);
        if (o.error.empty()) o.error = PQerrorMessage(conn_);
        while (!o.error.empty() && o.error.back() == '\n') o.error.pop_back();
        return o;
    }

    // Runs a statement that must succeed; on error records a failure and returns null.
    Res must(const char *sql, std::vector<const char *> params = {}) {
        Outcome o = run(sql, params);
        if (!o.ok) {
            fail(name_ + ": unexpected error in `" + sql + "`: [" + o.sqlstate + "] " + o.error);
            return nullptr;
        }
        return std::move(o.res);
    }

    const std::string &name() const { return name_; }

  private:
    std::string name_;
    PGconn *conn_ = nullptr;
};

std::string get(const Res &r, int row, int col) {
    if (!r || row >= PQntuples(r.get()) || PQgetisnull(r.get(), row, col)) return "<NULL>";
    return PQgetvalue(r.get(), row, col);
}

// The same rows four ways, all in the statement's snapshot: mget's record[] rendered by
// array_to_json(x, false) (which the extension's planner hook leaves alone),
// array_to_json(mget(...)) (which it may rewrite to mget_json), mget_json, and plain SQL.
const char *kCompareSql =
    "SELECT array_to_json(local_cache.mget('stress_items'::regclass, $1::bigint[]), false)::text,"
    "       array_to_json(local_cache.mget('stress_items'::regclass, $1::bigint[]))::text,"
    "       local_cache.mget_json('stress_items'::regclass, $1::bigint[])::text,"
    "       (SELECT array_to_json(array_agg(s ORDER BY u.ord))::text"
    "          FROM unnest($1::bigint[]) WITH ORDINALITY AS u(id, ord)"
    "          LEFT JOIN stress_items s ON s.id = u.id)";
const char *kCompareNames[] = {"array_to_json(mget(...), false)", "array_to_json(mget(...))",
                               "mget_json(...)"};

// The same rows through the foreign table stress_cache and from stress_items, in one
// statement (so in one snapshot): `WHERE id = ANY($1) ORDER BY id` (SQL set semantics:
// duplicate and NULL keys give no rows), and a join that looks up every key of the list
// in list order (duplicates kept, NULL and missing keys dropped).
const char *kFdwCompareSql =
    "SELECT (SELECT coalesce(array_to_json(array_agg(c ORDER BY c.id))::text, '[]')"
    "          FROM stress_cache c WHERE c.id = ANY($1::bigint[])),"
    "       (SELECT coalesce(array_to_json(array_agg(s ORDER BY s.id))::text, '[]')"
    "          FROM stress_items s WHERE s.id = ANY($1::bigint[])),"
    "       (SELECT coalesce(array_to_json(array_agg(c ORDER BY u.ord))::text, '[]')"
    "          FROM unnest($1::bigint[]) WITH ORDINALITY AS u(id, ord)"
    "          JOIN stress_cache c ON c.id = u.id),"
    "       (SELECT coalesce(array_to_json(array_agg(s ORDER BY u.ord))::text, '[]')"
    "          FROM unnest($1::bigint[]) WITH ORDINALITY AS u(id, ord)"
    "          JOIN stress_items s ON s.id = u.id)";

// For a failure report: the visible heap tuples of the keys, read by a sequential scan in
// the same snapshot (or transaction) as the failed comparison.
const char *kDiagnoseSql =
    "SELECT string_agg(format('    id %s: ctid %s xmin %s xmax %s version %s value %s', id, ctid,"
    "       xmin, xmax, version, left(value, 40)), E'\\n' ORDER BY id)"
    "  FROM stress_items WHERE id + 0 = ANY($1::bigint[])";

// Splits a JSON array text into its top-level elements (for the failure report).
std::vector<std::string> json_elements(const std::string &s) {
    std::vector<std::string> out;
    if (s.size() < 2 || s.front() != '[') return out;
    int depth = 0;
    bool in_str = false, esc = false;
    std::string cur;
    for (size_t i = 1; i < s.size(); i++) {
        char c = s[i];
        if (in_str) {
            cur += c;
            if (esc) esc = false;
            else if (c == '\\') esc = true;
            else if (c == '"') in_str = false;
            continue;
        }
        if (c == '"') in_str = true;
        if (c == '[' || c == '{') depth++;
        if ((c == ']' || c == '}') && depth > 0) {
            depth--;
            cur += c;
            continue;
        }
        if (depth == 0 && (c == ',' || c == ']')) {
            out.push_back(cur);
            cur.clear();
            continue;
        }
        cur += c;
    }
    return out;
}

std::string clip(const std::string &s, size_t n = 600) {
    if (s.size() <= n) return s;
    return s.substr(0, n) + "...(" + std::to_string(s.size()) + " chars)";
}

std::string describe_diff(const std::vector<std::string> &keys, const std::string &a,
                          const char *a_name, const std::string &b, const char *b_name) {
    std::string m;
    std::vector<std::string> ea = json_elements(a), eb = json_elements(b);
    m += "  " + std::string(a_name) + " differs from " + b_name + ":\n";
    for (size_t i = 0; i < keys.size(); i++) {
        std::string x = i < ea.size() ? ea[i] : "<absent>";
        std::string y = i < eb.size() ? eb[i] : "<absent>";
        if (x != y)
            m += "   key " + keys[i] + " (position " + std::to_string(i + 1) + "):\n    " + a_name +
                 ": " + clip(x) + "\n    " + b_name + ": " + clip(y) + "\n";
    }
    m += "   full " + std::string(a_name) + ": " + clip(a, 3000) + "\n";
    m += "   full " + std::string(b_name) + ": " + clip(b, 3000) + "\n";
    return m;
}

struct Keys {
    std::vector<std::string> items;
    std::string literal() const {
        std::string s = "{";
        for (size_t i = 0; i < items.size(); i++) s += (i ? "," : "") + items[i];
        return s + "}";
    }
};

// Compares mget, mget_json and plain SQL for `keys` in one statement on `c`.
// Returns false (after fail()) on a difference or an error; *cached gets mget's JSON.
bool compare(Conn &c, const Keys &keys, const std::string &where, std::string *cached = nullptr) {
    std::string lit = keys.literal();
    Res r = c.must(kCompareSql, {lit.c_str()});
    if (!r) return false;
    std::string plain = get(r, 0, 3);
    if (cached) *cached = get(r, 0, 0);
    std::string report;
    for (int i = 0; i < 3; i++) {
        std::string v = get(r, 0, i);
        if (v != plain)
            report += describe_diff(keys.items, v, kCompareNames[i], plain, "plain SQL");
    }
    if (report.empty()) return true;
    std::string heap = "    (diagnostic query failed)";
    Conn::Outcome d = c.run(kDiagnoseSql, {lit.c_str()});
    if (d.ok) heap = get(d.res, 0, 0);
    fail("MISMATCH between local_cache and plain SQL in the same snapshot (" + where +
         ")\n  keys: " + lit + "\n" + report + "  visible heap tuples (seq scan, same snapshot):\n" +
         heap + "\n");
    return false;
}

// Compares the foreign table stress_cache with stress_items for `keys` in one statement on
// `c`. Returns false (after fail()) on a difference or an error.
bool compare_fdw(Conn &c, const Keys &keys, const std::string &where) {
    std::string lit = keys.literal();
    Res r = c.must(kFdwCompareSql, {lit.c_str()});
    if (!r) return false;
    std::string report;
    const char *names[][2] = {
        {"stress_cache WHERE id = ANY($1)", "stress_items WHERE id = ANY($1)"},
        {"unnest($1) JOIN stress_cache", "unnest($1) JOIN stress_items"}};
    for (int i = 0; i < 2; i++) {
        std::string fdw = get(r, 0, 2 * i), plain = get(r, 0, 2 * i + 1);
        if (fdw != plain)
            report += "  " + std::string(names[i][0]) + " differs from " + names[i][1] +
                      ":\n   " + names[i][0] + ": " + clip(fdw, 3000) + "\n   " + names[i][1] +
                      ": " + clip(plain, 3000) + "\n";
    }
    if (report.empty()) return true;
    std::string heap = "    (diagnostic query failed)";
    Conn::Outcome d = c.run(kDiagnoseSql, {lit.c_str()});
    if (d.ok) heap = get(d.res, 0, 0);
    fail("MISMATCH between the foreign table stress_cache and plain SQL in the same snapshot (" +
         where + ")\n  keys: " + lit + "\n" + report +
         "  visible heap tuples (seq scan, same snapshot):\n" + heap + "\n");
    return false;
}

bool expected_conflict(const std::string &sqlstate) {
    return sqlstate == "23505"      // unique_violation (moves racing with inserts)
           || sqlstate == "40P01"   // deadlock_detected
           || sqlstate == "40001";  // serialization_failure
}

class Rng {
  public:
    explicit Rng(uint64_t seed) : g_(seed) {}
    int below(int n) { return (int)(g_() % (uint64_t)n); }
    bool chance(int percent) { return below(100) < percent; }
    uint64_t raw() { return g_(); }

  private:
    std::mt19937_64 g_;
};

long long hot_key(Rng &rng) { return 1 + rng.below(opt.keys); }
long long cold_key(Rng &rng) { return kColdBase + 1 + rng.below(kColdRows); }

Keys random_keys(Rng &rng) {
    Keys k;
    int n = 1 + rng.below(16);
    for (int i = 0; i < n; i++) {
        int r = rng.below(100);
        if (r < 65) k.items.push_back(std::to_string(hot_key(rng)));
        else if (r < 80) k.items.push_back(std::to_string(cold_key(rng)));
        else if (r < 85) k.items.push_back(std::to_string(hot_key(rng) + kMoveOffset));
        else if (r < 90) k.items.push_back("NULL");
        else if (r < 93) k.items.push_back(std::to_string(kMissingBase + rng.below(1000)));
        else if (!k.items.empty()) k.items.push_back(k.items[rng.below((int)k.items.size())]);
        else k.items.push_back(std::to_string(hot_key(rng)));
    }
    // most lists get a NULL, a missing key and a duplicate somewhere
    if (rng.chance(50)) k.items.insert(k.items.begin() + rng.below((int)k.items.size() + 1), "NULL");
    if (rng.chance(50))
        k.items.insert(k.items.begin() + rng.below((int)k.items.size() + 1),
                       std::to_string(kMissingBase + 1000 + rng.below(1000)));
    if (rng.chance(50)) k.items.push_back(k.items[rng.below((int)k.items.size())]);
    return k;
}

std::string make_value(Rng &rng, int writer, uint64_t seq, bool *is_null) {
    *is_null = false;
    int r = rng.below(100);
    if (r < 3) {
        *is_null = true;
        return "";
    }
    std::string v = "w" + std::to_string(writer) + "-" + std::to_string(seq) + "-";
    int len = r < 5 ? 2000 + rng.below(6000) : rng.below(200);
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \"\\'";
    for (int i = 0; i < len; i++) v += alphabet[rng.below((int)sizeof(alphabet) - 1)];
    return v;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// ------------------------------------------------------------------------------------------
// Writers

class Writer {
  public:
    explicit Writer(int id)
        : id_(id), rng_(0x5eed0000ULL + id * 7919ULL + (uint64_t)getpid()),
          w_("writer " + std::to_string(id)), check_("writer " + std::to_string(id) + " check") {}

    void run() {
        while (!g_stop) {
            long long k = rng_.chance(3) ? cold_key(rng_) : hot_key(rng_);
            int op = rng_.below(100);
            bool ok;
            if (op < 35) ok = dml_txn(k, "UPDATE");
            else if (op < 60) ok = dml_txn(k, "DELETE+INSERT");
            else if (op < 88) ok = dml_txn(k, "UPSERT");
            else ok = move(k);
            if (!ok) return;
        }
    }

  private:
    // Ends the transaction with COMMIT (or ROLLBACK when `rollback`); returns false on a
    // failure. *committed tells whether a COMMIT happened.
    bool finish(bool rollback, bool *committed) {
        *committed = false;
        if (rollback) {
            if (!w_.must("ROLLBACK")) return false;
            n_rollbacks++;
            return true;
        }
        Conn::Outcome o = w_.run("COMMIT");
        if (!o.ok) {
            if (expected_conflict(o.sqlstate)) {
                n_conflicts++;
                return !!w_.must("ROLLBACK");
            }
            fail(w_.name() + ": COMMIT failed: [" + o.sqlstate + "] " + o.error);
            return false;
        }
        n_commits++;
        *committed = true;
        return true;
    }

    // Runs one DML statement inside the open transaction. Returns 1 ok, 0 expected conflict
    // (transaction rolled back), -1 failure.
    int step(const char *sql, std::vector<const char *> params) {
        Conn::Outcome o = w_.run(sql, params);
        if (o.ok) return 1;
        if (expected_conflict(o.sqlstate)) {
            n_conflicts++;
            return w_.must("ROLLBACK") ? 0 : -1;
        }
        fail(w_.name() + ": unexpected error in `" + sql + "`: [" + o.sqlstate + "] " + o.error);
        return -1;
    }

    Keys keys_for(long long k) {
        Keys keys;
        keys.items = {std::to_string(k), std::to_string(k + kMoveOffset), std::to_string(k),
                      "NULL"};
        return keys;
    }

    // After COMMIT (or ROLLBACK) returned: a fresh snapshot on the other connection must
    // show through the cache exactly what the heap shows.
    bool check_after(long long k, const std::string &what, bool committed) {
        n_commit_checks++;
        return compare(check_, keys_for(k),
                       w_.name() + ": read-after-" + (committed ? "commit" : "rollback") +
                           " of " + what + " on key " + std::to_string(k) +
                           ", checked on the writer's second connection");
    }

    bool dml_txn(long long k, const std::string &what) {
        bool is_null;
        std::string value = make_value(rng_, id_, ++seq_, &is_null);
        std::string key = std::to_string(k), version = std::to_string(1 + (seq_ % 1000));
        const char *v = is_null ? nullptr : value.c_str();
        bool rollback = rng_.chance(10);

        bool rr = rng_.chance(20);
        if (!w_.must(rr ? "BEGIN ISOLATION LEVEL REPEATABLE READ" : "BEGIN")) return false;
        // Sometimes read the key through the cache first, so an entry exists to invalidate.
        if (rng_.chance(30) && !compare(w_, keys_for(k), w_.name() + ": before " + what))
            return false;
        int r;
        if (what == "UPDATE") {
            r = step("UPDATE stress_items SET version = version + 1, value = $2 WHERE id = $1",
                     {key.c_str(), v});
        } else if (what == "DELETE+INSERT") {
            r = step("DELETE FROM stress_items WHERE id = $1", {key.c_str()});
            if (r == 1)
                r = step("INSERT INTO stress_items (id, version, value) VALUES ($1, $2, $3)",
                         {key.c_str(), version.c_str(), v});
        } else {
            r = step("INSERT INTO stress_items (id, version, value) VALUES ($1, 1, $2) "
                     "ON CONFLICT (id) DO UPDATE SET version = stress_items.version + 1, "
                     "value = EXCLUDED.value",
                     {key.c_str(), v});
        }
        if (r < 0) return false;
        if (r == 0) return check_after(k, what + " (conflict)", false);
        // Own writes: inside the writing transaction, mget must see the new row. Not in
        // REPEATABLE READ: there an upsert that inserts (because a concurrent transaction
        // outside the snapshot moved the old row away) leaves two visible rows with the same
        // key in the snapshot, and "the" row of the key is not defined.
        if (!rr && rng_.chance(30)) {
            n_txn_checks++;
            if (!compare(w_, keys_for(k), w_.name() + ": inside its own transaction after " + what))
                return false;
        }
        bool committed;
        if (!finish(rollback, &committed)) return false;
        return check_after(k, what, committed);
    }

    // Moves row k to k + kMoveOffset and back: in one transaction, or in two with checks
    // after each commit.
    bool move(long long k) {
        std::string key = std::to_string(k);
        bool one_txn = rng_.chance(50);
        bool rollback = rng_.chance(10);
        const char *away =
            "UPDATE stress_items SET id = id + 1000000, version = version + 1 WHERE id = $1";
        const char *back =
            "UPDATE stress_items SET id = id - 1000000, version = version + 1 "
            "WHERE id = $1::bigint + 1000000";
        if (!w_.must("BEGIN")) return false;
        int r = step(away, {key.c_str()});
        if (r < 0) return false;
        if (r == 0) return check_after(k, "key move (conflict)", false);
        if (rng_.chance(30)) {
            n_txn_checks++;
            if (!compare(w_, keys_for(k), w_.name() + ": inside its own transaction after key move"))
                return false;
        }
        if (one_txn) {
            r = step(back, {key.c_str()});
            if (r < 0) return false;
            if (r == 0) return check_after(k, "key move and back (conflict)", false);
            bool committed;
            if (!finish(rollback, &committed)) return false;
            return check_after(k, "key move and back in one transaction", committed);
        }
        bool committed;
        if (!finish(rollback, &committed)) return false;
        if (!check_after(k, "key move", committed)) return false;
        if (!committed) return true;
        // Move it back (never rolled back, so the row does not stay away). If another writer
        // re-inserted k meanwhile, the move back conflicts: drop the moved row instead.
        if (!w_.must("BEGIN")) return false;
        r = step(back, {key.c_str()});
        if (r < 0) return false;
        if (r == 0) {
            if (!w_.must("BEGIN")) return false;
            if (step("DELETE FROM stress_items WHERE id = $1::bigint + 1000000", {key.c_str()}) < 0)
                return false;
        }
        if (!finish(false, &committed)) return false;
        return check_after(k, r == 0 ? "delete of moved row" : "key move back", committed);
    }

    int id_;
    Rng rng_;
    Conn w_, check_;
    uint64_t seq_ = 0;
};

// ------------------------------------------------------------------------------------------
// Readers

class Reader {
  public:
    explicit Reader(int id)
        : id_(id), rng_(0xfeed0000ULL + id * 104729ULL + (uint64_t)getpid()),
          c_("reader " + std::to_string(id)) {}

    void run() {
        while (!g_stop) {
            bool ok = rng_.chance(60) ? repeatable_read() : read_committed();
            if (!ok) return;
        }
    }

  private:
    bool read_committed() {
        n_rc_checks++;
        Keys keys = random_keys(rng_);
        if (!compare(c_, keys, c_.name() + ": READ COMMITTED statement")) return false;
        if (!rng_.chance(50)) return true;
        n_fdw_checks++;
        return compare_fdw(c_, keys, c_.name() + ": READ COMMITTED statement");
    }

    bool repeatable_read() {
        if (!c_.must("BEGIN ISOLATION LEVEL REPEATABLE READ")) return false;
        n_rr_txns++;
        auto start = Clock::now();
        std::vector<std::pair<Keys, std::string>> seen;
        int rounds = 1 + rng_.below(5);
        for (int i = 0; i < rounds && !g_stop; i++) {
            long age = (long)std::chrono::duration_cast<std::chrono::milliseconds>(
                           Clock::now() - start).count();
            std::string where = c_.name() + ": REPEATABLE READ transaction, statement " +
                                std::to_string(i + 1) + ", snapshot age " + std::to_string(age) +
                                " ms";
            // Re-read an earlier key list: the same snapshot must give the same rows.
            if (!seen.empty() && rng_.chance(50)) {
                auto &prev = seen[rng_.below((int)seen.size())];
                std::string now;
                n_rr_checks++;
                if (!compare(c_, prev.first, where + " (re-read)", &now)) return false;
                if (now != prev.second) {
                    fail("MISMATCH: the same REPEATABLE READ snapshot returned different rows (" +
                         where + ")\n  keys: " + prev.first.literal() + "\n" +
                         describe_diff(prev.first.items, now, "now    ", prev.second, "earlier"));
                    return false;
                }
            }
            Keys keys = random_keys(rng_);
            std::string got;
            n_rr_checks++;
            if (!compare(c_, keys, where, &got)) return false;
            seen.emplace_back(keys, got);
            // The foreign table in the same (possibly old) snapshot: these keys, and keys
            // read earlier in this transaction, which other sessions may have cached since.
            n_fdw_checks++;
            if (!compare_fdw(c_, keys, where + " (foreign table)")) return false;
            if (seen.size() > 1 && rng_.chance(50)) {
                n_fdw_checks++;
                if (!compare_fdw(c_, seen[rng_.below((int)seen.size())].first,
                                 where + " (foreign table, earlier keys)"))
                    return false;
            }
            if (rng_.chance(40)) sleep_ms(1 + rng_.below(rng_.chance(20) ? 60 : 10));
        }
        return !!c_.must("COMMIT");
    }

    int id_;
    Rng rng_;
    Conn c_;
};

// ------------------------------------------------------------------------------------------
// Toggler: the capture trigger off and on, with writes in between

class Toggler {
  public:
    Toggler() : rng_(0x70991e00ULL + (uint64_t)getpid()), c_("toggler") {}

    void run() {
        while (!g_stop) {
            for (int slept = 0; slept < opt.toggle_seconds * 1000 && !g_stop; slept += 50) sleep_ms(50);
            if (g_stop || !toggle(rng_.chance(50))) return;
        }
    }

  private:
    // Off, a few uncaptured writes, on: in one transaction or each in its own. False on a
    // failure.
    bool toggle(bool one_txn) {
        if (one_txn && !c_.must("BEGIN")) return false;
        if (!c_.must("ALTER TABLE stress_items DISABLE TRIGGER local_cache_invalidate")) return false;
        n_toggles++;
        for (int i = 0; i < 5; i++) {
            std::string key = std::to_string(hot_key(rng_));
            Conn::Outcome o = c_.run("UPDATE stress_items SET version = version + 1, "
                                     "value = 'uncaptured-' || version WHERE id = $1",
                                     {key.c_str()});
            if (!o.ok) {
                if (!expected_conflict(o.sqlstate)) {
                    fail("toggler: unexpected error in an uncaptured write: [" + o.sqlstate + "] " + o.error);
                    return false;
                }
                n_conflicts++;
                if (one_txn) /* rolled back, trigger and all */
                    return !!c_.must("ROLLBACK");
                continue;
            }
            n_uncaptured_writes++;
            sleep_ms(20 + rng_.below(100));
        }
        if (!c_.must("ALTER TABLE stress_items ENABLE ALWAYS TRIGGER local_cache_invalidate")) return false;
        return !one_txn || !!c_.must("COMMIT");
    }

    Rng rng_;
    Conn c_;
};

// ------------------------------------------------------------------------------------------

void usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s CONNINFO [--seconds N] [--writers N] [--readers N] [--keys N]\n"
            "       [--toggle-seconds N]\n"
            "  defaults: --seconds 30 --writers 3 --readers 3 --keys 64 --toggle-seconds 3\n",
            argv0);
    exit(2);
}

bool setup() {
    Conn c("setup");
    const char *steps[] = {
        // (a pre-existing schema local_cache is used as is)
        "DO $$ BEGIN IF to_regnamespace('local_cache') IS NULL THEN "
        "CREATE EXTENSION local_cache; END IF; END $$",
        "DROP FOREIGN TABLE IF EXISTS stress_cache",
        "DROP TABLE IF EXISTS stress_items",
        "CREATE TABLE stress_items (id bigint PRIMARY KEY, version int NOT NULL, value text)",
    };
    for (const char *s : steps)
        if (!c.must(s)) return false;
    std::string n = std::to_string(opt.keys), cold_base = std::to_string(kColdBase),
                cold_rows = std::to_string(kColdRows);
    if (!c.must("INSERT INTO stress_items SELECT g, 1, 'hot-' || g || '-' || repeat('h', g % 150) "
                "FROM generate_series(1, $1::int) g",
                {n.c_str()}))
        return false;
    if (!c.must("INSERT INTO stress_items SELECT $1::bigint + g, 1, "
                "'cold-' || g || '-' || repeat('c', g % 300) FROM generate_series(1, $2::int) g",
                {cold_base.c_str(), cold_rows.c_str()}))
        return false;
    if (!c.must("SELECT local_cache.enable('public.stress_items')")) return false;
    // A partitioned layout is refused: writes through the parent would not reach the cache.
    const char *refused[] = {
        "CREATE TABLE stress_parted (id bigint PRIMARY KEY) PARTITION BY RANGE (id)",
        "CREATE TABLE stress_part PARTITION OF stress_parted FOR VALUES FROM (0) TO (10)",
    };
    c.must("DROP TABLE IF EXISTS stress_parted");
    for (const char *r : refused)
        if (!c.must(r)) return false;
    for (const char *sql : {"SELECT local_cache.enable('stress_parted')", "SELECT local_cache.enable('stress_part')",
                            "ALTER TABLE stress_parted ATTACH PARTITION stress_items FOR VALUES FROM (10) TO (2000000000)"}) {
        Conn::Outcome o = c.run(sql);
        if (o.ok) {
            fail(std::string("setup: a partitioned layout was accepted: ") + sql);
            return false;
        }
    }
    if (!c.must("DROP TABLE stress_parted")) return false;
    if (!c.must("CREATE FOREIGN TABLE stress_cache (id bigint, version int, value text) "
                "SERVER local_cache OPTIONS (table 'public.stress_items')"))
        return false;
    if (!c.must("ANALYZE stress_items")) return false;
    return true;
}

void print_stats(const char *title) {
    try {
        Conn c("stats");
        Res r = c.must("SELECT * FROM local_cache.stats");
        if (!r) {
            std::lock_guard<std::mutex> g(g_mutex);
            printf("%s: could not read local_cache.stats: %s\n", title, g_failure.c_str());
            return;
        }
        std::lock_guard<std::mutex> g(g_mutex);
        printf("%s (SELECT * FROM local_cache.stats):\n ", title);
        for (int j = 0; j < PQnfields(r.get()); j++) printf(" %s", PQfname(r.get(), j));
        printf("\n");
        for (int i = 0; i < PQntuples(r.get()); i++) {
            printf(" ");
            for (int j = 0; j < PQnfields(r.get()); j++) printf(" %s", get(r, i, j).c_str());
            printf("\n");
        }
        fflush(stdout);
    } catch (const std::exception &e) {
        std::lock_guard<std::mutex> g(g_mutex);
        printf("%s: %s\n", title, e.what());
    }
}

}  // namespace

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc < 2 || argv[1][0] == '-') usage(argv[0]);
    opt.conninfo = argv[1];
    for (int i = 2; i < argc; i++) {
        std::string a = argv[i];
        if (i + 1 >= argc) usage(argv[0]);
        int v = atoi(argv[++i]);
        if (a == "--seconds") opt.seconds = v;
        else if (a == "--writers") opt.writers = v;
        else if (a == "--readers") opt.readers = v;
        else if (a == "--keys") opt.keys = v;
        else if (a == "--toggle-seconds") opt.toggle_seconds = v;
        else usage(argv[0]);
    }
    if (opt.seconds < 1 || opt.writers < 0 || opt.readers < 0 || opt.keys < 1 || opt.toggle_seconds < 0 ||
        opt.keys >= kColdBase || opt.writers + opt.readers == 0) {
        fprintf(stderr, "stress: bad arguments (keys must be 1..%lld)\n", kColdBase - 1);
        return 2;
    }
    printf("stress: %d s, %d writers, %d readers, %d hot keys\n", opt.seconds, opt.writers,
           opt.readers, opt.keys);

    try {
        if (!setup()) {
            printf("stress: FAILED during setup: %s\n", g_failure.c_str());
            return 1;
        }
    } catch (const std::exception &e) {
        printf("stress: FAILED during setup: %s\n", e.what());
        return 1;
    }

    std::vector<std::thread> threads;
    int nthreads = opt.writers + opt.readers + (opt.toggle_seconds > 0 ? 1 : 0);
    for (int i = 0; i < nthreads; i++) {
        threads.emplace_back([i] {
            try {
                if (i < opt.writers) {
                    Writer w(i + 1);
                    w.run();
                } else if (i < opt.writers + opt.readers) {
                    Reader r(i - opt.writers + 1);
                    r.run();
                } else {
                    Toggler t;
                    t.run();
                }
            } catch (const std::exception &e) {
                fail(e.what());
            }
            n_threads_done++;
        });
    }

    auto start = Clock::now();
    auto deadline = start + std::chrono::seconds(opt.seconds);
    auto next_report = start + std::chrono::seconds(10);
    while (!g_stop && Clock::now() < deadline) {
        sleep_ms(50);
        if (Clock::now() >= next_report) {
            next_report += std::chrono::seconds(10);
            say("stress: %3lds  reads checked %" PRIu64 ", commits %" PRIu64 ", rollbacks %" PRIu64,
                (long)std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start).count(),
                (uint64_t)(n_rr_checks + n_rc_checks + n_commit_checks + n_txn_checks +
                           n_fdw_checks),
                (uint64_t)n_commits, (uint64_t)n_rollbacks);
        }
    }
    g_stop = true;

    // Every statement has statement_timeout = 30s; give the threads a bit more than that.
    auto grace = Clock::now() + std::chrono::seconds(45);
    while (n_threads_done < nthreads && Clock::now() < grace) sleep_ms(50);
    if (n_threads_done < nthreads) {
        printf("stress: FAILED: %d of %d threads still running 45 s after the end "
               "(a statement hangs?)\n",
               nthreads - n_threads_done.load(), nthreads);
        if (g_failed) printf("%s\n", g_failure.c_str());
        print_stats("stress: cache statistics");
        fflush(stdout);
        _exit(1);
    }
    for (auto &t : threads) t.join();

    uint64_t reads = n_rr_checks + n_rc_checks + n_commit_checks + n_txn_checks + n_fdw_checks;
    printf("stress: reads checked %" PRIu64 " (repeatable read %" PRIu64 " in %" PRIu64
           " transactions, read committed %" PRIu64 ", after commit/rollback %" PRIu64
           ", inside writing transactions %" PRIu64 ", foreign table %" PRIu64 ")\n",
           reads, (uint64_t)n_rr_checks, (uint64_t)n_rr_txns, (uint64_t)n_rc_checks,
           (uint64_t)n_commit_checks, (uint64_t)n_txn_checks, (uint64_t)n_fdw_checks);
    printf("stress: commits %" PRIu64 ", rollbacks %" PRIu64 ", conflicts rolled back %" PRIu64
           ", capture trigger switched off %" PRIu64 " times, uncaptured writes %" PRIu64 "\n",
           (uint64_t)n_commits, (uint64_t)n_rollbacks, (uint64_t)n_conflicts, (uint64_t)n_toggles,
           (uint64_t)n_uncaptured_writes);

    if (g_failed) {
        printf("stress: FAILED\n%s\n", g_failure.c_str());
        print_stats("stress: cache statistics");
        return 1;
    }

    long long hits = -1, fills = -1;
    try {
        Conn c("stats");
        Res r = c.must(
            "SELECT hits, misses, fills, fill_rejections, evictions, invalidations, entries, bytes "
            "FROM local_cache.stats WHERE relation = 'public.stress_items'::regclass");
        if (r && PQntuples(r.get()) == 1) {
            hits = atoll(PQgetvalue(r.get(), 0, 0));
            fills = atoll(PQgetvalue(r.get(), 0, 2));
            printf("stress: cache hits %s, misses %s, fills %s, fill_rejections %s, evictions %s, "
                   "invalidations %s, entries %s, bytes %s\n",
                   get(r, 0, 0).c_str(), get(r, 0, 1).c_str(), get(r, 0, 2).c_str(),
                   get(r, 0, 3).c_str(), get(r, 0, 4).c_str(), get(r, 0, 5).c_str(),
                   get(r, 0, 6).c_str(), get(r, 0, 7).c_str());
        } else {
            printf("stress: FAILED: no row for stress_items in local_cache.stats %s\n",
                   g_failure.c_str());
            return 1;
        }
    } catch (const std::exception &e) {
        printf("stress: FAILED reading statistics: %s\n", e.what());
        return 1;
    }
    if (hits <= 0) {
        printf("stress: FAILED: the cache served no hits (fills %lld), so this run proves nothing\n",
               fills);
        return 1;
    }
    if (reads == 0 || (opt.writers > 0 && n_commits == 0) ||
        (opt.readers > 0 && n_fdw_checks == 0) ||
        (opt.toggle_seconds > 0 && opt.seconds > 2 * opt.toggle_seconds && n_uncaptured_writes == 0)) {
        printf("stress: FAILED: nothing was checked\n");
        return 1;
    }
    printf("stress: OK\n");
    return 0;
}
