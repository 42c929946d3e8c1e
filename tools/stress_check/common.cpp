// tools/stress_check/common.cpp: owns the shared pieces declared in common.h (but the tables,
// tables.cpp): the run's state and failure recording, the libpq wrapper Conn, the SQL that
// compares local_cache (mget, mget_json, the foreign table) with plain SQL in one snapshot and
// the failure reports it prints, the RESP connections, plain SQL reads of keys, the comparison of
// RESP replies with plain SQL and its race-freedom argument, and the key pickers.

#include "common.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
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
    n_uncaptured_writes{0}, n_early_xid_txns{0};
std::atomic<uint64_t> n_bank_commits{0}, n_bank_audits{0}, n_bank_conflicts{0};
std::atomic<uint64_t> n_resp_commit_checks{0}, n_resp_read_checks{0}, n_resp_skipped{0},
    n_resp_errors{0}, n_resp_busy_retries{0}, n_resp_absent_checks{0}, n_resp_own_checks{0};
std::atomic<uint64_t> n_resp_sets{0}, n_resp_dels{0}, n_resp_hsets{0}, n_resp_multis{0},
    n_resp_write_own{0}, n_resp_write_conflicts{0}, n_resp_write_busy_retries{0},
    n_resp_write_gave_up{0};
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
    try {
        conn_ = tooling::pg_connect(opt.conninfo);
    } catch (const std::exception &e) {
        throw std::runtime_error(name + ": " + e.what());
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
    return tooling::pg_run(conn_, sql, params);
}

Res Conn::must(const char *sql, std::vector<const char *> params) {
    Outcome o = run(sql, params);
    if (!o.ok) {
        fail(name_ + ": unexpected error in `" + sql + "`: [" + o.sqlstate + "] " + o.error);
        return nullptr;
    }
    return std::move(o.res);
}

bool expected_conflict(const std::string &sqlstate) {
    return sqlstate == "23505"      // unique_violation (moves racing with inserts)
           || sqlstate == "40P01"   // deadlock_detected
           || sqlstate == "40001";  // serialization_failure
}

namespace {

// Every statement below takes the key list as $1, mget's keys argument (Table::keys_literal),
// and some the keys' canonical texts as $2 (Table::texts_literal).

std::string keys_param(const Table &t) { return "$1::" + std::string(t.array_type); }

// The subscripts u.i of the keys of a key array: generate_series rather than
// generate_subscripts, whose row estimate (1000) would make the plain SQL joins scan the whole
// table instead of probing its primary key per key.
std::string subscripts(const std::string &keys) {
    return "generate_series(1, array_length(" + keys + ", 1)) AS u(i)";
}

// The same rows four ways, all in the statement's snapshot: mget's record[] rendered by
// array_to_json(x, false) (which the extension's planner hook leaves alone),
// array_to_json(mget(...)) (which it may rewrite to mget_json), mget_json, and plain SQL.
std::string compare_sql(const Table &t) {
    std::string keys = keys_param(t), name = t.name;
    std::string mget = "local_cache.mget('" + name + "'::regclass, " + keys + ")";
    return "SELECT array_to_json(" + mget + ", false)::text, array_to_json(" + mget + ")::text, "
           "local_cache.mget_json('" + name + "'::regclass, " + keys + ")::text, "
           "(SELECT array_to_json(array_agg(s ORDER BY u.i))::text "
           "FROM " + subscripts(keys) + " "
           "LEFT JOIN " + name + " s ON " + t.element_match("s", keys, "u.i") + ")";
}
const char *kCompareNames[] = {"array_to_json(mget(...), false)", "array_to_json(mget(...))",
                               "mget_json(...)"};

// The same rows through the table's foreign table and from the table, in one statement (so
// in one snapshot): the rows whose key is in the list, ordered by key (SQL set semantics:
// duplicate and NULL keys give no rows; a one-column key as `= ANY($1)`, a composite one as
// `(columns) IN (SELECT ...)`, which becomes a nested loop of lookups), and a join that looks
// up every key of the list in list order (duplicates kept, NULL and missing keys dropped).
std::string fdw_compare_sql(const Table &t) {
    std::string keys = keys_param(t);
    std::string in = t.composite() ? "ROW(" + t.columns("r") + ") IN (SELECT " + t.elements(keys, "u.i") +
                                         " FROM " + subscripts(keys) + ")"
                                   : t.columns("r") + " = ANY(" + keys + ")";
    auto set = [&](const char *from) {
        return "(SELECT coalesce(array_to_json(array_agg(r ORDER BY " + t.columns("r") + "))::text, '[]') "
               "FROM " + from + " r WHERE " + in + ")";
    };
    auto join = [&](const char *from) {
        return "(SELECT coalesce(array_to_json(array_agg(r ORDER BY u.i))::text, '[]') "
               "FROM " + subscripts(keys) + " JOIN " + from + " r ON " +
               t.element_match("r", keys, "u.i") + ")";
    };
    return "SELECT " + set(t.foreign) + ", " + set(t.name) + ", " + join(t.foreign) + ", " + join(t.name);
}

// For a failure report: the visible heap tuples of the keys ($1: their texts), read by a
// sequential scan (no index matches the key's text) in the same snapshot (or transaction) as
// the failed comparison.
std::string diagnose_sql(const Table &t) {
    std::string key = t.key_text_sql("s");
    return "SELECT string_agg(format('    key %s: ctid %s xmin %s xmax %s version %s value %s', " + key +
           ", ctid, xmin, xmax, version, left(value, 40)), E'\\n' ORDER BY " + key + ") "
           "FROM " + t.name + " s WHERE " + key + " = ANY($1::text[])";
}

// For a failure report of a RESP check: the departure counts of the keys ($1: their texts).
std::string diagnose_departures_sql(const Table &t) {
    return "SELECT coalesce(string_agg(format('    key %s: %s departures (last by xmin %s)', key, n, xmin),"
           " E'\\n' ORDER BY key), '    (none)') FROM stress_departures "
           "WHERE tbl = '" + std::string(t.name) + "' AND key = ANY($1::text[])";
}

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

std::string describe_diff(const Table &t, const std::vector<long long> &ids, const std::string &a,
                          const char *a_name, const std::string &b, const char *b_name) {
    std::string m;
    std::vector<std::string> ea = json_elements(a), eb = json_elements(b);
    m += "  " + std::string(a_name) + " differs from " + b_name + ":\n";
    for (size_t i = 0; i < ids.size(); i++) {
        std::string x = i < ea.size() ? ea[i] : "<absent>";
        std::string y = i < eb.size() ? eb[i] : "<absent>";
        if (x != y)
            m += "   key " + t.text(ids[i]) + " (position " + std::to_string(i + 1) + "):\n    " + a_name +
                 ": " + clip(x) + "\n    " + b_name + ": " + clip(y) + "\n";
    }
    m += "   full " + std::string(a_name) + ": " + clip(a, 3000) + "\n";
    m += "   full " + std::string(b_name) + ": " + clip(b, 3000) + "\n";
    return m;
}

// Compares mget, mget_json and plain SQL for the key list `ids` of `t` in one statement on `c`.
// Returns false (after fail()) on a difference or an error; *cached gets mget's JSON.
bool compare(Conn &c, Table &t, const std::vector<long long> &ids, const std::string &where,
             std::string *cached) {
    t.checks++;
    std::string lit = t.keys_literal(ids), sql = compare_sql(t);
    Res r = c.must(sql.c_str(), {lit.c_str()});
    if (!r) return false;
    std::string plain = get(r, 0, 3);
    if (cached) *cached = get(r, 0, 0);
    std::string report;
    for (int i = 0; i < 3; i++) {
        std::string v = get(r, 0, i);
        if (v != plain)
            report += describe_diff(t, ids, v, kCompareNames[i], plain, "plain SQL");
    }
    if (report.empty()) return true;
    std::string heap = "    (diagnostic query failed)", texts = t.texts_literal(ids),
                diagnose = diagnose_sql(t);
    Conn::Outcome d = c.run(diagnose.c_str(), {texts.c_str()});
    if (d.ok) heap = get(d.res, 0, 0);
    fail("MISMATCH between local_cache and plain SQL on " + std::string(t.name) +
         " in the same snapshot (" + where + ")\n  keys: " + lit + "\n" + report +
         "  visible heap tuples (seq scan, same snapshot):\n" + heap + "\n");
    return false;
}

// Compares t's foreign table with t for the key list `ids` in one statement on `c`. Returns
// false (after fail()) on a difference or an error.
bool compare_fdw(Conn &c, Table &t, const std::vector<long long> &ids, const std::string &where) {
    t.checks++;
    std::string lit = t.keys_literal(ids), sql = fdw_compare_sql(t);
    Res r = c.must(sql.c_str(), {lit.c_str()});
    if (!r) return false;
    std::string report, foreign = t.foreign, name = t.name;
    std::string names[][2] = {
        {foreign + " WHERE key IN ($1)", name + " WHERE key IN ($1)"},
        {"$1 JOIN " + foreign, "$1 JOIN " + name}};
    for (int i = 0; i < 2; i++) {
        std::string fdw = get(r, 0, 2 * i), plain = get(r, 0, 2 * i + 1);
        if (fdw != plain)
            report += "  " + names[i][0] + " differs from " + names[i][1] +
                      ":\n   " + names[i][0] + ": " + clip(fdw, 3000) + "\n   " + names[i][1] +
                      ": " + clip(plain, 3000) + "\n";
    }
    if (report.empty()) return true;
    std::string heap = "    (diagnostic query failed)", texts = t.texts_literal(ids),
                diagnose = diagnose_sql(t);
    Conn::Outcome d = c.run(diagnose.c_str(), {texts.c_str()});
    if (d.ok) heap = get(d.res, 0, 0);
    fail("MISMATCH between the foreign table " + foreign + " and plain SQL in the same snapshot (" +
         where + ")\n  keys: " + lit + "\n" + report +
         "  visible heap tuples (seq scan, same snapshot):\n" + heap + "\n");
    return false;
}

// ---------------------------------------------------------------------------- RESP

RespClient resp_client() { return RespClient::tcp("127.0.0.1", opt.resp_port, kRespTimeoutMs); }

namespace {

// The keys' rows and departure counts in one statement, so in one snapshot.
std::string sql_rows_sql(const Table &t) {
    std::string keys = keys_param(t);
    return "SELECT t.xmin::text || ' ' || t.ctid::text, row_to_json(t)::text, t.version::text, t.value, "
           "coalesce(d.n, 0) FROM " + subscripts(keys) + " "
           "LEFT JOIN " + std::string(t.name) + " t ON " + t.element_match("t", keys, "u.i") + " "
           "LEFT JOIN stress_departures d ON d.tbl = '" + t.name + "' AND d.key = ($2::text[])[u.i] "
           "ORDER BY u.i";
}

}  // namespace

bool read_sql_rows(Conn &c, const Table &t, const std::vector<long long> &ids, std::vector<SqlRow> *out) {
    std::string lit = t.keys_literal(ids), texts = t.texts_literal(ids), sql = sql_rows_sql(t);
    Res r = c.must(sql.c_str(), {lit.c_str(), texts.c_str()});
    if (!r) return false;
    size_t n = ids.size();
    if ((size_t)PQntuples(r.get()) != n) {
        fail(c.name() + ": RESP check: plain SQL returned " + std::to_string(PQntuples(r.get())) +
             " rows for " + std::to_string(n) + " keys " + lit);
        return false;
    }
    out->assign(n, SqlRow{});
    for (size_t i = 0; i < n; i++) {
        SqlRow &row = (*out)[i];
        row.departures = atoll(PQgetvalue(r.get(), (int)i, 4));
        if (PQgetisnull(r.get(), (int)i, 0)) continue;
        row.present = true;
        row.version_id = PQgetvalue(r.get(), (int)i, 0);
        row.json = PQgetvalue(r.get(), (int)i, 1);
        row.version = get(r, (int)i, 2);
        row.value = get(r, (int)i, 3);
    }
    return true;
}

std::string describe_sql_row(const SqlRow &r) {
    std::string d = ", " + std::to_string(r.departures) + " departures";
    if (!r.present) return "absent" + d;
    return "\"" + clip(r.json, 3000) + "\" (xmin ctid " + r.version_id + d + ")";
}

namespace {

bool starts_with(const std::string &s, const char *p) { return s.compare(0, strlen(p), p) == 0; }

long ms_between(Clock::time_point a, Clock::time_point b) {
    return (long)std::chrono::duration_cast<std::chrono::microseconds>(b - a).count() / 1000;
}

}  // namespace

// Race-freedom. RESP runs outside any SQL snapshot, and keys are shared: every writer picks
// random hot and cold keys (through SQL and through RESP writes), and the toggler updates
// random hot keys. So a reply is compared with the key's state read by plain SQL in two
// statements, S1 right before the request is sent and S2 right after the reply arrived (fresh
// READ COMMITTED snapshots on the same connection), and only when they prove that the key did
// not change in between. (A writer passes what it knows instead of S1, `known`: its own
// commit, see writer.cpp, note_own(), or plain SQL read right after its RESP write's reply.)
// Snapshots taken one after the other see ever more transactions, and the request's snapshot
// (or a cache hit, which is what a fresh snapshot would read) comes between S1's and S2's.
//
//  * present in S1 and S2 with the same version identity (xmin and ctid): that tuple was
//    visible, committed and undeleted at S1 and still at S2; a deleted tuple never becomes
//    visible again, and while it is live no other version of the key can be (primary key).
//    So the key's row was that tuple throughout, and the reply must be its row_to_json text.
//    (Comparing the JSON alone would not do: A -> B -> A is possible in principle.)
//  * absent in S1 and S2 with the same departure count: the reply must be nil. A key's row
//    stops being visible only through a DELETE (a writer's DELETE + INSERT, the deletion of a
//    moved row, a RESP DEL) or an UPDATE that changes its id (a move), and the trigger
//    stress_count_departure (main.cpp) counts each such departure in the key's row of
//    stress_departures, in the departing transaction and under that row's lock, so the count
//    a snapshot sees is the number of departures it sees committed. If the request had seen
//    a row, its inserter was not visible to S1 (else S1 had seen it, or its departure, which
//    the request would see too); S2 sees the inserter but not the row, so a departure that
//    the request did not see, and S1 then neither, is visible to S2: the counts differ. (Keys
//    from kMissingBase on are never inserted and have no departures: always comparable.)
//  * anything else (the key changed, or left and came back) is not compared and is counted
//    in n_resp_skipped.
//
// That is exactly the promise: a writer's invalidation runs at pre-commit, before its commit
// becomes visible to any snapshot and before its COMMIT (or its RESP write's reply) returns,
// so a state that S1 and S2 both show is the only state a request between them may answer; an
// older row (in particular the one a write acknowledged before S1 replaced) is a mismatch.
bool compare_resp(Conn &c, RespClient &resp, Table &t, const std::vector<long long> &ids, bool use_get,
                  const std::string &where, std::atomic<uint64_t> &checked,
                  const KnownState *known) {
    t.checks++;
    std::vector<std::string> args{use_get ? "GET" : "MGET"};
    for (long long id : ids) args.push_back(t.resp_key(id));
    std::string request = args[0];
    for (size_t i = 1; i < args.size(); i++) request += " " + args[i];

    std::vector<SqlRow> before, after;
    auto t0 = Clock::now();
    if (known && known->rows.size() == ids.size()) before = known->rows;
    else if (!read_sql_rows(c, t, ids, &before)) return false;
    std::string before_name = known ? known->name : "plain SQL before the request";
    before_name += ": ";
    before_name.resize(std::max<size_t>(before_name.size(), 31), ' ');
    auto t1 = Clock::now();
    RespReply rep;
    int busy = 0;
    try {
        for (;;) {
            rep = resp.call(args);
            if (rep.type == '-' && starts_with(rep.text, "BUSY") && busy < 5) {
                busy++;
                n_resp_busy_retries++;
                sleep_ms(20);
                continue;
            }
            break;
        }
    } catch (const std::exception &e) {
        fail(where + ": " + request + ": " + e.what());
        return false;
    }
    auto t2 = Clock::now();
    if (rep.type == '-') {
        if (starts_with(rep.text, "ERR") || starts_with(rep.text, "BUSY")) {
            // Not a mismatch (nothing was answered), but counted and shown.
            uint64_t n = ++n_resp_errors;
            if (n <= 5) say("stress: RESP error reply (%s): %s -> -%s", where.c_str(), request.c_str(), rep.text.c_str());
            return true;
        }
        fail("RESP: unexpected error reply (" + where + ")\n  request: " + request + "\n  reply: " +
             rep.describe() + "\n  (the role local_cache.resp_role has SELECT on " + t.name + ")\n");
        return false;
    }
    std::vector<const RespReply *> got;
    if (use_get && rep.type == '$') got.push_back(&rep);
    if (!use_get && rep.type == '*' && !rep.is_null && rep.elements.size() == ids.size()) {
        for (const RespReply &e : rep.elements)
            if (e.type == '$') got.push_back(&e);
    }
    if (got.size() != ids.size()) {
        fail("RESP: malformed reply (" + where + ")\n  request: " + request + "\n  reply: " +
             rep.describe() + "\n");
        return false;
    }
    if (!read_sql_rows(c, t, ids, &after)) return false;
    auto t3 = Clock::now();

    std::string report;
    for (size_t i = 0; i < ids.size(); i++) {
        const SqlRow &b = before[i], &a = after[i];
        bool same_version = b.present && a.present && b.version_id == a.version_id;
        bool stayed_absent = !b.present && !a.present && b.departures == a.departures;
        if (!same_version && !stayed_absent) {
            n_resp_skipped++;
            continue;
        }
        checked++;
        if (stayed_absent) n_resp_absent_checks++;
        if (known && known->own) n_resp_own_checks++;
        const RespReply &g = *got[i];
        bool ok = same_version ? (!g.is_null && g.text == b.json) : g.is_null;
        if (ok) continue;
        report += "   key " + args[i + 1] + " (position " + std::to_string(i + 1) + "):\n" +
                  "    " + before_name + describe_sql_row(b) + "\n" +
                  "    RESP reply:                    " + g.describe() + "\n" +
                  "    plain SQL after the reply:     " + describe_sql_row(a) + "\n";
        if (stayed_absent)
            report += "    (absent all along: no departure of the key committed in between)\n";
    }
    if (report.empty()) return true;

    // What the server says now, and the visible heap tuples of the keys and their partners
    // (k <-> k + kMoveOffset) and the keys' departure counts, for the report.
    std::vector<long long> diag_ids = ids;
    for (long long id : ids)
        if (id < kMissingBase) diag_ids.push_back(id > kMoveOffset ? id - kMoveOffset : id + kMoveOffset);
    std::string texts = t.texts_literal(diag_ids), diagnose = diagnose_sql(t),
                diagnose_departures = diagnose_departures_sql(t);
    std::string again;
    try {
        again = resp.call(args).describe();
    } catch (const std::exception &e) {
        again = e.what();
    }
    std::string heap = "    (diagnostic query failed)", departures = heap;
    Conn::Outcome d = c.run(diagnose.c_str(), {texts.c_str()});
    if (d.ok) heap = get(d.res, 0, 0);
    Conn::Outcome dd = c.run(diagnose_departures.c_str(), {texts.c_str()});
    if (dd.ok) departures = get(dd.res, 0, 0);
    fail("MISMATCH between RESP and plain SQL on " + std::string(t.name) + " (" + where +
         ")\n  request: " + request + "\n" + report + "  timing: " +
         (known ? std::string() : "SQL before took " + std::to_string(ms_between(t0, t1)) + " ms, ") +
         "the request until its reply " + std::to_string(ms_between(t1, t2)) + " ms" +
         (busy ? " (" + std::to_string(busy) + " -BUSY retries)" : "") + ", SQL after " +
         std::to_string(ms_between(t2, t3)) + " ms\n  the same request again now: " +
         clip(again, 3000) + "\n  visible heap tuples now (seq scan):\n" + heap +
         "\n  departures now:\n" + departures + "\n");
    return false;
}

long long hot_key(Rng &rng) { return 1 + rng.below(opt.keys); }
long long cold_key(Rng &rng) { return kColdBase + 1 + rng.below(kColdRows); }

std::vector<long long> random_keys(Rng &rng) {
    std::vector<long long> k;
    int n = 1 + rng.below(16);
    for (int i = 0; i < n; i++) {
        int r = rng.below(100);
        if (r < 65) k.push_back(hot_key(rng));
        else if (r < 80) k.push_back(cold_key(rng));
        else if (r < 85) k.push_back(hot_key(rng) + kMoveOffset);
        else if (r < 88) k.push_back(kNullKey);
        else if (r < 90) k.push_back(kHalfNullKey);
        else if (r < 93) k.push_back(kMissingBase + rng.below(1000));
        else if (!k.empty()) k.push_back(k[rng.below((int)k.size())]);
        else k.push_back(hot_key(rng));
    }
    // most lists get a NULL, a missing key and a duplicate somewhere
    if (rng.chance(50)) k.insert(k.begin() + rng.below((int)k.size() + 1), kNullKey);
    if (rng.chance(50))
        k.insert(k.begin() + rng.below((int)k.size() + 1), kMissingBase + 1000 + rng.below(1000));
    if (rng.chance(50)) k.push_back(k[rng.below((int)k.size())]);
    return k;
}

}  // namespace stress
