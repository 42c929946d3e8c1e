// tools/stress_check/reader.cpp: owns the reader sessions. A reader compares local_cache.mget
// and local_cache.mget_json with the same rows read by plain SQL in the same snapshot, in
// REPEATABLE READ transactions whose snapshots get old (re-reading earlier key lists, which
// must not change) and in READ COMMITTED statements, and compares each table's foreign table
// with the same queries on the table; every statement reads a key list of a table picked at
// random (so one REPEATABLE READ snapshot reads several tables). With --resp-port it also
// reads key lists through RESP MGET and compares them with plain SQL read before and after
// (compare_resp).

#include "common.h"

#include <unistd.h>

#include <utility>

namespace stress {

namespace {

class Reader {
  public:
    explicit Reader(int id)
        : id_(id), rng_(0xfeed0000ULL + id * 104729ULL + (uint64_t)getpid()),
          c_("reader " + std::to_string(id)) {
        if (opt.resp_port > 0) resp_.reset(new RespClient(resp_client()));
    }

    void run() {
        while (!g_stop) {
            bool ok;
            if (resp_ && rng_.chance(25)) ok = resp_mget();
            else ok = rng_.chance(60) ? repeatable_read() : read_committed();
            if (!ok) return;
        }
    }

  private:
    // RESP MGET of a key list (no NULLs: a RESP key is a string), compared key by key with
    // plain SQL read right before and right after (compare_resp: only keys whose row was the
    // same version in both reads, or proven absent all along, are compared). Half of the lists
    // are a few hot keys first read through mget, which fills the cache, so the MGET is
    // usually answered from cache hits without a transaction; the others are random_keys
    // lists, whose missing and cold keys make the MGET take a transaction and fill.
    bool resp_mget() {
        Table &t = pick_table(rng_);
        std::vector<long long> ids;
        std::string where = c_.name() + ": RESP MGET";
        if (rng_.chance(50)) {
            int n = 1 + rng_.below(8);
            for (int i = 0; i < n; i++) ids.push_back(hot_key(rng_));
            n_rc_checks++;
            if (!compare(c_, t, ids, c_.name() + ": READ COMMITTED statement before a RESP MGET"))
                return false;
            where += " of hot keys just read through mget";
        } else {
            for (long long k : random_keys(rng_))
                if (k >= 0) ids.push_back(k);
            if (ids.empty()) ids.push_back(hot_key(rng_));
            where += " of random keys";
        }
        return compare_resp(c_, *resp_, t, ids, false, where, n_resp_read_checks);
    }

    bool read_committed() {
        Table &t = pick_table(rng_);
        n_rc_checks++;
        std::vector<long long> keys = random_keys(rng_);
        if (!compare(c_, t, keys, c_.name() + ": READ COMMITTED statement")) return false;
        if (!rng_.chance(50)) return true;
        n_fdw_checks++;
        return compare_fdw(c_, t, keys, c_.name() + ": READ COMMITTED statement");
    }

    // A key list of a table read earlier in a REPEATABLE READ transaction, and what mget gave.
    struct Seen {
        Table *table;
        std::vector<long long> keys;
        std::string rows;
    };

    bool repeatable_read() {
        if (!c_.must("BEGIN ISOLATION LEVEL REPEATABLE READ")) return false;
        n_rr_txns++;
        auto start = Clock::now();
        std::vector<Seen> seen;
        int rounds = 1 + rng_.below(5);
        for (int i = 0; i < rounds && !g_stop; i++) {
            long age = (long)std::chrono::duration_cast<std::chrono::milliseconds>(
                           Clock::now() - start).count();
            std::string where = c_.name() + ": REPEATABLE READ transaction, statement " +
                                std::to_string(i + 1) + ", snapshot age " + std::to_string(age) +
                                " ms";
            // Re-read an earlier key list: the same snapshot must give the same rows.
            if (!seen.empty() && rng_.chance(50)) {
                Seen &prev = seen[rng_.below((int)seen.size())];
                std::string now;
                n_rr_checks++;
                if (!compare(c_, *prev.table, prev.keys, where + " (re-read)", &now)) return false;
                if (now != prev.rows) {
                    fail("MISMATCH: the same REPEATABLE READ snapshot returned different rows of " +
                         std::string(prev.table->name) + " (" + where + ")\n  keys: " +
                         prev.table->keys_literal(prev.keys) + "\n" +
                         describe_diff(*prev.table, prev.keys, now, "now    ", prev.rows, "earlier"));
                    return false;
                }
            }
            Table &t = pick_table(rng_);
            std::vector<long long> keys = random_keys(rng_);
            std::string got;
            n_rr_checks++;
            if (!compare(c_, t, keys, where, &got)) return false;
            seen.push_back({&t, keys, got});
            // The foreign table in the same (possibly old) snapshot: these keys, and keys
            // read earlier in this transaction, which other sessions may have cached since.
            n_fdw_checks++;
            if (!compare_fdw(c_, t, keys, where + " (foreign table)")) return false;
            if (seen.size() > 1 && rng_.chance(50)) {
                n_fdw_checks++;
                Seen &earlier = seen[rng_.below((int)seen.size())];
                if (!compare_fdw(c_, *earlier.table, earlier.keys, where + " (foreign table, earlier keys)"))
                    return false;
            }
            if (rng_.chance(40)) sleep_ms(1 + rng_.below(rng_.chance(20) ? 60 : 10));
        }
        return !!c_.must("COMMIT");
    }

    int id_;
    Rng rng_;
    Conn c_;
    std::unique_ptr<RespClient> resp_;   // with --resp-port
};

}  // namespace

void run_reader(int id) {
    Reader r(id);
    r.run();
}

}  // namespace stress
