// tools/stress_check/writer.cpp: owns the writer sessions. A writer changes a few hot (and some
// cold) rows of stress_items in every way that must invalidate the cache (UPDATE, DELETE +
// re-INSERT, INSERT ON CONFLICT DO UPDATE, primary key moves, ROLLBACK), sometimes checks its
// own writes inside the transaction, and right after each COMMIT or ROLLBACK returns checks on
// a second connection that local_cache shows what plain SQL shows, and (with --resp-port) that
// a RESP GET of the key answers what plain SQL shows.

#include "common.h"

#include <unistd.h>

namespace stress {

namespace {

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

class Writer {
  public:
    explicit Writer(int id)
        : id_(id), rng_(0x5eed0000ULL + id * 7919ULL + (uint64_t)getpid()),
          w_("writer " + std::to_string(id)), check_("writer " + std::to_string(id) + " check") {
        if (opt.resp_port > 0) resp_.reset(new RespClient(opt.resp_port));
    }

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

    // With --resp-port, right before COMMIT: the versions of k and of its partner
    // k + kMoveOffset that this transaction wrote (xmin = its xid), as the state its commit
    // leaves, for the RESP check after COMMIT (compare_resp's known_before). Race-free: from
    // this read until the commit no other session can change what it finds. A row of k we
    // wrote stays locked by us (as updated, deleted or inserted, an uncommitted unique entry),
    // and a row we moved to k + kMoveOffset means that k has no live row until our commit
    // (we deleted it; an INSERT of k waits for us, an UPDATE finds nothing). If this
    // transaction wrote neither (an UPDATE of an absent key, a ROLLBACK), own_known_ stays
    // false and compare_resp reads plain SQL before the GET instead.
    bool note_own(long long k) {
        own_known_ = false;
        if (!resp_) return true;
        std::string key = std::to_string(k);
        Res r = w_.must("SELECT t.id, t.xmin::text || ' ' || t.ctid::text, row_to_json(t)::text"
                        "  FROM stress_items t WHERE t.id IN ($1::bigint, $1::bigint + 1000000)"
                        "   AND t.xmin = pg_current_xact_id_if_assigned()::xid",
                        {key.c_str()});
        if (!r) return false;
        own_.assign(2, SqlRow{});
        for (int i = 0; i < PQntuples(r.get()); i++) {
            SqlRow &row = own_[atoll(PQgetvalue(r.get(), i, 0)) == k ? 0 : 1];
            row.present = true;
            row.version_id = PQgetvalue(r.get(), i, 1);
            row.json = PQgetvalue(r.get(), i, 2);
        }
        own_known_ = own_[0].present || own_[1].present;
        return true;
    }

    // After COMMIT (or ROLLBACK) returned: a fresh snapshot on the other connection must
    // show through the cache exactly what the heap shows. With --resp-port, a RESP GET of the
    // key must answer what plain SQL shows too: sometimes first thing after COMMIT returned
    // (the key was just invalidated, so usually a miss and a fill through RESP), sometimes
    // after the mget check (which usually filled the cache, so a hit served without a
    // transaction). Keys are shared with the other writers and the toggler: compare_resp
    // compares only what is proven unchanged from our commit (note_own) or from a plain SQL
    // read before the GET until a plain SQL read after it.
    bool check_after(long long k, const std::string &what, bool committed) {
        n_commit_checks++;
        std::string where = w_.name() + ": read-after-" + (committed ? "commit" : "rollback") +
                            " of " + what + " on key " + std::to_string(k);
        const std::vector<SqlRow> *known = committed && own_known_ ? &own_ : nullptr;
        own_known_ = false;
        bool resp_first = resp_ && rng_.chance(50);
        if (resp_first &&
            !compare_resp(check_, *resp_, {k}, true, where + ", RESP GET first thing after it returned",
                          n_resp_commit_checks, known))
            return false;
        if (!compare(check_, keys_for(k), where + ", checked on the writer's second connection"))
            return false;
        if (resp_ && !resp_first &&
            !compare_resp(check_, *resp_, {k}, true, where + ", RESP GET after the mget check",
                          n_resp_commit_checks, known))
            return false;
        return true;
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
        if (!rollback && !note_own(k)) return false;
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
            if (!rollback && !note_own(k)) return false;
            bool committed;
            if (!finish(rollback, &committed)) return false;
            return check_after(k, "key move and back in one transaction", committed);
        }
        if (!rollback && !note_own(k)) return false;
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
        if (!note_own(k)) return false;
        if (!finish(false, &committed)) return false;
        return check_after(k, r == 0 ? "delete of moved row" : "key move back", committed);
    }

    int id_;
    Rng rng_;
    Conn w_, check_;
    std::unique_ptr<RespClient> resp_;   // with --resp-port
    std::vector<SqlRow> own_;            // note_own(): k, then k + kMoveOffset
    bool own_known_ = false;
    uint64_t seq_ = 0;
};

}  // namespace

void run_writer(int id) {
    Writer w(id);
    w.run();
}

}  // namespace stress
