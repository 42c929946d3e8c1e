// tools/stress_check/bank.cpp: owns the SERIALIZABLE mode of the stress check (--bank-sessions):
// sessions that move money between the accounts of stress_bank in SERIALIZABLE transactions.
// Each customer has two accounts, and may overdraw one as long as the two together stay at or
// above zero. A transfer reads the customer's two balances and the receiving account's through
// local_cache.mget (so from the cache, with the predicate locks SSI needs), takes at most the
// customer's total from one of the two, and writes back the values computed from what it read.
// Two transfers from the two accounts of one customer write different rows: only SSI can stop
// the write skew that overdraws the customer. After every commit plain SQL checks the bank's
// total and every customer's. A third of the transactions are read-only: they read every
// account through mget_json (or the foreign table) and check the total they see.
// Serialization failures (40001) are expected: the transaction is rolled back and counted.

#include "common.h"

#include <unistd.h>

#include <algorithm>
#include <climits>

namespace stress {

namespace {

constexpr int kAccounts = 12; // customer c (from 0) owns accounts 2c + 1 and 2c + 2
constexpr long long kOpeningBalance = 1000;

class Banker {
  public:
    explicit Banker(int id)
        : rng_(0xba4c0000ULL + id * 65537ULL + (uint64_t)getpid()), c_("bank " + std::to_string(id)),
          check_("bank " + std::to_string(id) + " check") {}

    void run() {
        while (!g_stop) {
            bool ok = rng_.chance(33) ? audit() : transfer();
            if (!ok) return;
        }
    }

  private:
    // A failed statement: true for a serialization failure (counted; the transaction is rolled
    // back when `open`, i.e. the failure was not COMMIT's).
    bool expected_failure(const Conn::Outcome &o, const char *what, bool open) {
        if (o.sqlstate == "40001" || o.sqlstate == "40P01") {
            n_bank_conflicts++;
            return !open || !!c_.must("ROLLBACK");
        }
        fail(c_.name() + ": " + what + " failed: [" + o.sqlstate + "] " + o.error);
        return false;
    }

    // From one account of a customer to an account of another, within the customer's total.
    bool transfer() {
        int customer = rng_.below(kAccounts / 2);
        int own[2] = {2 * customer + 1, 2 * customer + 2};
        int to = 1 + rng_.below(kAccounts - 2);
        if (to >= own[0]) to += 2;
        int from = own[rng_.below(2)];
        if (!c_.must("BEGIN ISOLATION LEVEL SERIALIZABLE")) return false;
        std::string keys = "{" + std::to_string(own[0]) + "," + std::to_string(own[1]) + "," + std::to_string(to) + "}";
        Conn::Outcome read = c_.run("SELECT r.id, r.balance FROM unnest(local_cache.mget('stress_bank', $1::int[])) "
                                    "AS r(id int, balance bigint)",
                                    {keys.c_str()});
        if (!read.ok) return expected_failure(read, "the transfer's read", true);
        long long balance[kAccounts + 1];
        for (long long &b : balance) b = LLONG_MIN;
        for (int i = 0; i < PQntuples(read.res.get()); i++) {
            int id = atoi(PQgetvalue(read.res.get(), i, 0));
            if (id >= 1 && id <= kAccounts) balance[id] = atoll(PQgetvalue(read.res.get(), i, 1));
        }
        if (PQntuples(read.res.get()) != 3 || balance[own[0]] == LLONG_MIN || balance[own[1]] == LLONG_MIN ||
            balance[to] == LLONG_MIN) {
            fail(c_.name() + ": mget returned " + std::to_string(PQntuples(read.res.get())) + " accounts of " + keys);
            return false;
        }
        long long available = balance[own[0]] + balance[own[1]];
        long long amount = available > 0 ? 1 + rng_.below((int)std::min<long long>(available, 300)) : 0;
        if (rng_.chance(30)) sleep_ms(1 + rng_.below(5));
        std::string a = std::to_string(from), b = std::to_string(to);
        std::string new_from = std::to_string(balance[from] - amount), new_to = std::to_string(balance[to] + amount);
        for (auto &w : {std::make_pair(&a, &new_from), std::make_pair(&b, &new_to)}) {
            Conn::Outcome o = c_.run("UPDATE stress_bank SET balance = $2::bigint WHERE id = $1::int",
                                     {w.first->c_str(), w.second->c_str()});
            if (!o.ok) return expected_failure(o, "the transfer's update", true);
        }
        Conn::Outcome commit = c_.run("COMMIT");
        if (!commit.ok) return expected_failure(commit, "the transfer's COMMIT", false);
        n_bank_commits++;
        return books_balance("after a transfer of " + std::to_string(amount) + " from " + a + " to " + b +
                             " committed");
    }

    // Every account through mget_json or the foreign table, in a read-only transaction.
    bool audit() {
        bool deferrable = rng_.chance(20);
        if (!c_.must(deferrable ? "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE"
                                : "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY"))
            return false;
        bool fdw = rng_.chance(30);
        Conn::Outcome o = c_.run(fdw ? "SELECT sum(balance) FROM stress_bank_cache WHERE id = ANY($1::int[])"
                                     : "SELECT sum((r->>'balance')::bigint) FROM "
                                       "json_array_elements(local_cache.mget_json('stress_bank', $1::int[])) r",
                                 {all_accounts().c_str()});
        if (!o.ok) return expected_failure(o, "the audit's read", true);
        std::string seen = get(o.res, 0, 0);
        Conn::Outcome commit = c_.run("COMMIT");
        if (!commit.ok) return expected_failure(commit, "the audit's COMMIT", false);
        n_bank_audits++;
        if (seen != std::to_string(kAccounts * kOpeningBalance)) {
            fail("MISMATCH: " + c_.name() + ": a SERIALIZABLE READ ONLY" + (deferrable ? " DEFERRABLE" : "") +
                 " transaction saw a total of " + seen + " through " + (fdw ? "the foreign table" : "mget_json") +
                 ", not " + std::to_string(kAccounts * kOpeningBalance));
            return false;
        }
        return true;
    }

    // The bank's total, and no customer below zero.
    bool books_balance(const std::string &when) {
        Res r = check_.must("SELECT sum(balance), min(total) FROM (SELECT (id - 1) / 2 AS customer, "
                            "sum(balance) OVER (PARTITION BY (id - 1) / 2) AS total, balance FROM stress_bank) s");
        if (!r) return false;
        if (get(r, 0, 0) != std::to_string(kAccounts * kOpeningBalance) || atoll(get(r, 0, 1).c_str()) < 0) {
            Res rows = check_.must("SELECT string_agg(id || '=' || balance, ' ' ORDER BY id) FROM stress_bank");
            fail("MISMATCH: " + c_.name() + ": the bank's total is " + get(r, 0, 0) + " (must be " +
                 std::to_string(kAccounts * kOpeningBalance) + "), the lowest customer's " + get(r, 0, 1) +
                 " (must be >= 0), " + when + ": an anomaly SSI did not catch\n  " + get(rows, 0, 0));
            return false;
        }
        return true;
    }

    static std::string all_accounts() {
        std::string s = "{";
        for (int i = 1; i <= kAccounts; i++) s += (i > 1 ? "," : "") + std::to_string(i);
        return s + "}";
    }

    Rng rng_;
    Conn c_, check_;
};

}  // namespace

bool setup_bank(Conn &c) {
    std::string fill = "INSERT INTO stress_bank SELECT g, " + std::to_string(kOpeningBalance) +
                       " FROM generate_series(1, " + std::to_string(kAccounts) + ") g";
    const char *steps[] = {
        "DROP TABLE IF EXISTS stress_bank CASCADE",
        "CREATE TABLE stress_bank (id int PRIMARY KEY, balance bigint NOT NULL)",
        fill.c_str(),
        "SELECT local_cache.enable('stress_bank')",
        "CREATE FOREIGN TABLE stress_bank_cache (id int, balance bigint) SERVER local_cache "
        "OPTIONS (table 'public.stress_bank')",
    };
    for (const char *s : steps)
        if (!c.must(s)) return false;
    return true;
}

void run_banker(int id) {
    Banker b(id);
    b.run();
}

}  // namespace stress
