// tools/stress_check/common.cpp: owns the shared pieces declared in common.h: the run's state
// and failure recording, the libpq wrapper Conn, the SQL that compares local_cache (mget,
// mget_json, the foreign table) with plain SQL in one snapshot and the failure reports it
// prints, and the key pickers.

#include "common.h"

#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <thread>

namespace stress {

Options opt;

std::atomic<bool> g_stop{false};
std::atomic<bool> g_failed{false};
std::mutex g_mutex;
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

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

Conn::Conn(const std::string &name) : name_(name) {
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

Conn::~Conn() {
    if (conn_) PQfinish(conn_);
}

Conn::Outcome Conn::run(const char *sql, std::vector<const char *> params) {
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

Res Conn::must(const char *sql, std::vector<const char *> params) {
    Outcome o = run(sql, params);
    if (!o.ok) {
        fail(name_ + ": unexpected error in `" + sql + "`: [" + o.sqlstate + "] " + o.error);
        return nullptr;
    }
    return std::move(o.res);
}

std::string get(const Res &r, int row, int col) {
    if (!r || row >= PQntuples(r.get()) || PQgetisnull(r.get(), row, col)) return "<NULL>";
    return PQgetvalue(r.get(), row, col);
}

bool expected_conflict(const std::string &sqlstate) {
    return sqlstate == "23505"      // unique_violation (moves racing with inserts)
           || sqlstate == "40P01"   // deadlock_detected
           || sqlstate == "40001";  // serialization_failure
}

namespace {

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

}  // namespace

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

// Compares mget, mget_json and plain SQL for `keys` in one statement on `c`.
// Returns false (after fail()) on a difference or an error; *cached gets mget's JSON.
bool compare(Conn &c, const Keys &keys, const std::string &where, std::string *cached) {
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

}  // namespace stress
