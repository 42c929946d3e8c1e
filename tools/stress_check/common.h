// tools/stress_check/common.h: owns what every part of the stress check shares (see main.cpp
// for what the check does): the options, the run's stop flag, first failure and counters, the
// libpq wrapper Conn/Res, the comparisons of local_cache with plain SQL, the random number
// source Rng and the key pickers, and the entry points of the three kinds of session
// (writer.cpp, reader.cpp, toggler.cpp).

#pragma once

#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace stress {

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
extern Options opt;

extern std::atomic<bool> g_stop;
extern std::atomic<bool> g_failed;
extern std::mutex g_mutex;   // guards g_failure and stdout
extern std::string g_failure;

extern std::atomic<uint64_t> n_rr_checks, n_rc_checks, n_commit_checks, n_txn_checks,
    n_fdw_checks, n_commits, n_rollbacks, n_conflicts, n_rr_txns, n_toggles,
    n_uncaptured_writes;
extern std::atomic<int> n_threads_done;

// printf to stdout as one line, under g_mutex.
void say(const char *fmt, ...);

// Records the first failure and stops every thread.
void fail(const std::string &msg);

void sleep_ms(int ms);

struct ResDel {
    void operator()(PGresult *r) const { PQclear(r); }
};
using Res = std::unique_ptr<PGresult, ResDel>;

// One libpq connection. Every statement goes through run(); errors come back as
// (ok=false, sqlstate, message) so callers can decide what is expected.
class Conn {
  public:
    explicit Conn(const std::string &name);
    ~Conn();
    Conn(const Conn &) = delete;
    Conn &operator=(const Conn &) = delete;

    struct Outcome {
        bool ok = false;
        Res res;
        std::string sqlstate;
        std::string error;
    };

    Outcome run(const char *sql, std::vector<const char *> params = {});

    // Runs a statement that must succeed; on error records a failure and returns null.
    Res must(const char *sql, std::vector<const char *> params = {});

    const std::string &name() const { return name_; }

  private:
    std::string name_;
    PGconn *conn_ = nullptr;
};

// The value at (row, col), or "<NULL>" for SQL NULL, a missing row or no result.
std::string get(const Res &r, int row, int col);

// True for the errors concurrent writers may run into (the transaction is then rolled back).
bool expected_conflict(const std::string &sqlstate);

struct Keys {
    std::vector<std::string> items;
    std::string literal() const {
        std::string s = "{";
        for (size_t i = 0; i < items.size(); i++) s += (i ? "," : "") + items[i];
        return s + "}";
    }
};

// For a failure report: where the JSON arrays a and b differ, key by key, and both in full.
std::string describe_diff(const std::vector<std::string> &keys, const std::string &a,
                          const char *a_name, const std::string &b, const char *b_name);

// Compares mget, mget_json and plain SQL for `keys` in one statement on `c`.
// Returns false (after fail()) on a difference or an error; *cached gets mget's JSON.
bool compare(Conn &c, const Keys &keys, const std::string &where, std::string *cached = nullptr);

// Compares the foreign table stress_cache with stress_items for `keys` in one statement on
// `c`. Returns false (after fail()) on a difference or an error.
bool compare_fdw(Conn &c, const Keys &keys, const std::string &where);

class Rng {
  public:
    explicit Rng(uint64_t seed) : g_(seed) {}
    int below(int n) { return (int)(g_() % (uint64_t)n); }
    bool chance(int percent) { return below(100) < percent; }
    uint64_t raw() { return g_(); }

  private:
    std::mt19937_64 g_;
};

long long hot_key(Rng &rng);
long long cold_key(Rng &rng);
// A list of hot, cold, moved-away and missing keys, with NULLs and duplicates.
Keys random_keys(Rng &rng);

// The sessions' loops: each runs until g_stop (and returns early after a failure).
void run_writer(int id);   // writer.cpp
void run_reader(int id);   // reader.cpp
void run_toggler();        // toggler.cpp

}  // namespace stress
