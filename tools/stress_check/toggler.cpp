// tools/stress_check/toggler.cpp: owns the toggler session. Every few seconds it switches the
// capture trigger of stress_items off, writes a few rows while it is off, and switches it on
// again (in one transaction or across several), so readers check every path while writes go
// uncaptured.

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

}  // namespace

void run_toggler() {
    Toggler t;
    t.run();
}

}  // namespace stress
