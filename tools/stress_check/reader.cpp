// tools/stress_check/reader.cpp: owns the reader sessions. A reader compares local_cache.mget
// and local_cache.mget_json with the same rows read by plain SQL in the same snapshot, in
// REPEATABLE READ transactions whose snapshots get old (re-reading earlier key lists, which
// must not change) and in READ COMMITTED statements, and compares the foreign table
// stress_cache with the same queries on stress_items.

#include "common.h"

#include <unistd.h>

#include <utility>

namespace stress {

namespace {

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

}  // namespace

void run_reader(int id) {
    Reader r(id);
    r.run();
}

}  // namespace stress
