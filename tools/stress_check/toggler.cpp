// tools/stress_check/toggler.cpp: owns the toggler session. Every few seconds it switches the
// capture trigger of a stressed table (picked at random) off, writes a few rows while it is
// off, and switches it on again (in one transaction or across several), so readers check
// every path while writes go uncaptured.

#include "common.h"

#include <unistd.h>

namespace stress {

namespace {

class Toggler {
  public:
    Toggler() : rng_(0x70991e00ULL + (uint64_t)getpid()), c_("toggler") {}

    void run() {
        while (!g_stop) {
            for (int slept = 0; slept < opt.toggle_seconds * 1000 && !g_stop; slept += 50) sleep_ms(50);
            if (g_stop || !toggle(pick_table(rng_), rng_.chance(50))) return;
        }
    }

  private:
    // Off, a few uncaptured writes, on: in one transaction or each in its own. False on a
    // failure.
    bool toggle(const Table &t, bool one_txn) {
        std::string table = t.name;
        std::string off = "ALTER TABLE " + table + " DISABLE TRIGGER local_cache_invalidate",
                    on = "ALTER TABLE " + table + " ENABLE ALWAYS TRIGGER local_cache_invalidate",
                    update = "UPDATE " + table + " t SET version = t.version + 1, "
                             "value = 'uncaptured-' || t.version WHERE " + t.match("t", 1);
        if (one_txn && !c_.must("BEGIN")) return false;
        if (!c_.must(off.c_str())) return false;
        n_toggles++;
        for (int i = 0; i < 5; i++) {
            Params key = Params().key(t, hot_key(rng_));
            Conn::Outcome o = c_.run(update.c_str(), key.get());
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
        if (!c_.must(on.c_str())) return false;
        return !one_txn || !!c_.must("COMMIT");
    }

    Rng rng_;
    Conn c_;
};

}  // namespace

void run_toggler() {
    Toggler t;
    t.run();
}

}  // namespace stress
