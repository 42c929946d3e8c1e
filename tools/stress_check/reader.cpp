// tools/stress_check/reader.cpp: owns the reader sessions. A reader compares local_cache.mget
// and local_cache.mget_json with the same rows read by plain SQL in the same snapshot, in
// REPEATABLE READ transactions whose snapshots get old (re-reading earlier key lists, which
// must not change) and in READ COMMITTED statements, and compares the foreign table
// stress_cache with the same queries on stress_items. With --resp-port it also reads key lists
// through RESP MGET and compares them with plain SQL read before and after (compare_resp).

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
        if (opt.resp_port > 0) resp_.reset(new RespClient(opt.resp_port));
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
        std::vector<long long> ids;
        std::string where = c_.name() + ": RESP MGET";
        if (rng_.chance(50)) {
            Keys keys;
            int n = 1 + rng_.below(8);
            for (int i = 0; i < n; i++) keys.items.push_back(std::to_string(hot_key(rng_)));
            n_rc_checks++;
            if (!compare(c_, keys, c_.name() + ": READ COMMITTED statement before a RESP MGET"))
                return false;
            for (const std::string &k : keys.items) ids.push_back(std::stoll(k));
            where += " of hot keys just read through mget";
        } else {
            for (const std::string &k : random_keys(rng_).items)
                if (k != "NULL") ids.push_back(std::stoll(k));
            if (ids.empty()) ids.push_back(hot_key(rng_));
            where += " of random keys";
        }
        return compare_resp(c_, *resp_, ids, false, where, n_resp_read_checks);
    }

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
    std::unique_ptr<RespClient> resp_;   // with --resp-port
};

}  // namespace

void run_reader(int id) {
    Reader r(id);
    r.run();
}

}  // namespace stress
