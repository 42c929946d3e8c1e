// tools/stress_check/writer.cpp: owns the writer sessions. A writer changes a few hot (and some
// cold) rows of the stressed tables (each write on a table picked at random) in every way that
// must invalidate the cache (UPDATE, DELETE + re-INSERT, DELETE and a later INSERT of the then
// absent key, INSERT ON CONFLICT DO UPDATE, primary key moves, i.e. UPDATEs of the key
// columns, ROLLBACK), sometimes checks its own writes inside the transaction, and right after
// each COMMIT or ROLLBACK returns checks on a second connection that local_cache shows what
// plain SQL shows, and (with --resp-port) that a RESP GET of the key answers what plain SQL
// shows. With --resp-port about 30% of its writes go through RESP instead (SET of a new row,
// DEL, HSET of one column, MULTI/EXEC of two SETs): plain SQL right after the reply must show
// the write (exactly, where it can prove the row is the write's own), and then the same checks
// run as after a COMMIT.
// A long-transaction writer (--long-writers) takes its xid as its transaction begins and holds
// it a while before it writes; meanwhile other writers, and often its own second connection,
// delete and re-insert the key with later xids, and often a witness connection takes a
// REPEATABLE READ snapshot, which must read the key as plain SQL does after the commit (and
// after the check's reads filled the cache). So a key's deleters commit in another order than
// their xids all the time (a negative entry must answer only snapshots that see all of them).

#include "common.h"

#include <unistd.h>

#include <cstring>

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

bool starts_with(const std::string &s, const char *p) { return s.compare(0, strlen(p), p) == 0; }

// "xxxxx" of an error reply's trailing "(SQLSTATE xxxxx)", or "".
std::string sqlstate_of(const std::string &error) {
    size_t at = error.rfind("(SQLSTATE ");
    return at == std::string::npos ? std::string() : error.substr(at + 10, 5);
}

std::string describe_request(const std::vector<std::string> &args) {
    std::string s;
    for (const std::string &a : args) s += (s.empty() ? "" : " ") + (a.size() > 200 ? a.substr(0, 200) + "..." : a);
    return s;
}

class Writer {
  public:
    Writer(int id, bool long_txns)
        : id_(id), long_txns_(long_txns), rng_(0x5eed0000ULL + id * 7919ULL + (uint64_t)getpid()),
          w_((long_txns ? "long writer " : "writer ") + std::to_string(id)),
          check_(w_.name() + " check") {
        if (opt.resp_port > 0 && !long_txns) resp_.reset(new RespClient(resp_client()));
        if (long_txns) witness_.reset(new Conn(w_.name() + " witness"));
    }

    void run() {
        while (!g_stop) {
            t_ = &pick_table(rng_);
            long long k = rng_.chance(3) ? cold_key(rng_) : hot_key(rng_);
            int op = rng_.below(100);
            bool ok;
            if (resp_ && rng_.chance(kRespWritePercent)) ok = resp_write(k);
            else if (long_txns_ && op < 50) ok = dml_txn(k, "DELETE") && dml_txn(k, "INSERT");
            else if (op < 35) ok = dml_txn(k, "UPDATE");
            else if (op < 48) ok = dml_txn(k, "DELETE+INSERT");
            // a DELETE, whose checks cache k as absent, then an INSERT of the absent key
            else if (op < 60) ok = dml_txn(k, "DELETE") && dml_txn(k, "INSERT");
            else if (op < 88 || long_txns_) ok = dml_txn(k, "UPSERT");
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
    int step(const std::string &sql, const Params &params) {
        Conn::Outcome o = w_.run(sql.c_str(), params.get());
        if (o.ok) return 1;
        if (expected_conflict(o.sqlstate)) {
            n_conflicts++;
            return w_.must("ROLLBACK") ? 0 : -1;
        }
        fail(w_.name() + ": unexpected error in `" + sql + "`: [" + o.sqlstate + "] " + o.error);
        return -1;
    }

    // The key list the checks of a write on k read: k, where a move takes it, k again, NULL.
    static std::vector<long long> keys_for(long long k) { return {k, k + kMoveOffset, k, kNullKey}; }

    // "writer 1: ... on stress_lines key 7:2" for reports.
    std::string on_key(long long k) const { return std::string(" on ") + t_->name + " key " + t_->text(k); }

    // With --resp-port, right before COMMIT: the state of k that this transaction's commit
    // leaves, for the RESP check after COMMIT (compare_resp's `known`): the version of k it
    // wrote (xmin = its xid), or, if it made k go away (deleted it or moved it to
    // k + kMoveOffset, and did not re-insert it), absence with the departure count it wrote.
    // Race-free: from this read until the commit no other session can change what it finds.
    // A row of k we wrote stays locked by us (as updated, deleted or inserted, an uncommitted
    // unique entry), a row we deleted or moved away means that k has no live row until our
    // commit (an INSERT of k, SQL or RESP, waits for us; an UPDATE finds nothing), and the
    // departure count we wrote stays locked by us too. If this transaction left k otherwise
    // (an UPDATE of an absent key, the deletion of a moved row, a ROLLBACK), own_known_ stays
    // false and compare_resp reads plain SQL before the GET instead. (In REPEATABLE READ an
    // upsert can see two rows of k, the one a concurrent move took away and its own: only its
    // own counts.)
    bool note_own(long long k) {
        own_known_ = false;
        if (!resp_) return true;
        std::string sql = "SELECT t.xmin::text || ' ' || t.ctid::text, row_to_json(t)::text, "
                          "t.version::text, t.value, t.xmin = x.me, d.n, d.xmin = x.me "
                          "FROM (SELECT pg_current_xact_id_if_assigned()::xid AS me) x "
                          "LEFT JOIN " + std::string(t_->name) + " t ON " + t_->match("t", 1) + " "
                          "LEFT JOIN stress_departures d ON d.tbl = '" + t_->name + "' AND d.key = " + more(1);
        Params params;
        params.key(*t_, k).add(t_->text(k));
        Res r = w_.must(sql.c_str(), params.get());
        if (!r) return false;
        own_.rows.assign(1, SqlRow{});
        own_.name = "as the writer committed it";
        own_.own = true;
        SqlRow &row = own_.rows[0];
        bool any_row = false, departed_by_us = false;
        for (int i = 0; i < PQntuples(r.get()); i++) {
            departed_by_us = get(r, i, 6) == "t";
            row.departures = atoll(get(r, i, 5) == "<NULL>" ? "0" : PQgetvalue(r.get(), i, 5));
            if (PQgetisnull(r.get(), i, 0)) continue;
            any_row = true;
            if (get(r, i, 4) != "t") continue;
            row.present = true;
            row.version_id = PQgetvalue(r.get(), i, 0);
            row.json = PQgetvalue(r.get(), i, 1);
            row.version = get(r, i, 2);
            row.value = get(r, i, 3);
        }
        own_known_ = row.present || (!any_row && departed_by_us);
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
        return check_after_write(k, w_.name() + ": read-after-" + (committed ? "commit" : "rollback") +
                                        " of " + what + on_key(k),
                                 committed && own_known_ ? &own_ : nullptr);
    }

    // The checks after a write (check_after, and after a RESP write's reply): the mget check on
    // the second connection and the RESP GET, which starts from `known` if given.
    bool check_after_write(long long k, const std::string &where, const KnownState *known) {
        n_commit_checks++;
        own_known_ = false;
        bool resp_first = resp_ && rng_.chance(50);
        if (resp_first &&
            !compare_resp(check_, *resp_, *t_, {k}, true, where + ", RESP GET first thing after it returned",
                          n_resp_commit_checks, known))
            return false;
        if (!compare(check_, *t_, keys_for(k), where + ", checked on the writer's second connection"))
            return false;
        if (resp_ && !resp_first &&
            !compare_resp(check_, *resp_, *t_, {k}, true, where + ", RESP GET after the mget check",
                          n_resp_commit_checks, known))
            return false;
        return true;
    }

    // ------------------------------------------------------------------ writes through RESP
    //
    // A RESP write runs in the server, as local_cache.resp_role, committed before the reply.
    // Around it the writer reads its keys with plain SQL on the second connection: P right
    // before the request, A right after the reply (and A is where the checks after the write
    // start, compare_resp's `known`). Every value it writes is a new tag ("r<writer>-<seq>-..."),
    // written by nobody else. What A must show:
    //  * SET / HSET acknowledged: not P's tuple (the write replaced whatever was visible before
    //    the request), and if absent, a departure since P (someone deleted or moved the row
    //    after the write). If A's row carries the tag and the key had no departure since P, A's
    //    row is the write's own tuple: a later UPDATE of it either changes value (every writer
    //    and the toggler write value) or moves it away, which counts a departure of k; so it
    //    must be exactly what was written (SET: the object, version DEFAULT 1 when absent;
    //    HSET that inserted: version DEFAULT 1; the key columns from the key). (The two rows of
    //    one EXEC have different xmins: each queued command runs in a subtransaction.)
    //  * DEL acknowledged: not P's tuple; a departure since P when it answered 1 (its own) or
    //    when it answered 0 although P had a row (someone else's made the DEL find none). With
    //    exactly one departure since P, its own, and the key absent, A is the DEL's own state.
    //  * an error reply (EXECABORT after a serialization failure, -BUSY after our retries):
    //    nothing written, so no tag anywhere (the keys and their moved-away partners).
    // Then check_after_write runs as after a COMMIT: the mget check compares the cache with
    // plain SQL in one snapshot taken after A, so it must show the write or a later state too,
    // and the RESP GET is compared with A and a plain SQL read after it (compare_resp).
    // Any other -ERR (with its SQLSTATE) fails the run: the single commands run in READ
    // COMMITTED and never wait for a lock (the server retries, then -BUSY), and SET and HSET
    // are INSERT ... ON CONFLICT on the only unique index, so no unique violation, deadlock or
    // serialization failure is possible; EXEC runs in REPEATABLE READ, where a row changed
    // after its snapshot is a serialization failure (40001), expected.

    static constexpr int kRespWritePercent = 30;
    static constexpr int kBusyRetries = 5;

    std::string resp_key(long long k) const { return t_->resp_key(k); }

    // The row_to_json text of the row of key k with these version and value (JSON) texts.
    std::string row_json(long long k, const std::string &version, const std::string &value) const {
        return "{" + t_->json_key(k) + ",\"version\":" + version + ",\"value\":" + value + "}";
    }

    // A new tag value: unique to this writer and write, sometimes long.
    std::string tag_value() {
        std::string v = "r" + std::to_string(id_) + "-" + std::to_string(++seq_) + "-";
        int len = rng_.chance(2) ? 2000 + rng_.below(6000) : rng_.below(200);
        static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \"\\'";
        for (int i = 0; i < len; i++) v += alphabet[rng_.below((int)sizeof(alphabet) - 1)];
        return v;
    }

    bool resp_write(long long k) {
        int op = rng_.below(100);
        if (op < 35) return resp_sets({k});
        if (op < 50) return resp_del(k);
        if (op < 80) return resp_hset(k);
        long long k2;
        do k2 = rng_.chance(3) ? cold_key(rng_) : hot_key(rng_);
        while (k2 == k);
        return resp_sets({k, k2});
    }

    // Sends `requests` (one write, or MULTI, the writes, EXEC) on the RESP connection; on
    // -BUSY (the server waited local_cache.resp_lock_timeout) sends them again, up to
    // kBusyRetries times. *written: the last reply is the write's acknowledgement (not an
    // error). False after fail().
    bool send_write(const std::vector<std::vector<std::string>> &requests, const std::string &where,
                    RespReply *last, bool *written) {
        bool multi = requests.size() > 1;
        const std::string aborted = "EXECABORT Transaction rolled back: ";
        for (int attempt = 0;; attempt++) {
            RespReply rep;
            for (size_t i = 0; i < requests.size(); i++) {
                try {
                    rep = resp_->call(requests[i]);
                } catch (const std::exception &e) {
                    fail(where + ": " + describe_request(requests[i]) + ": " + e.what());
                    return false;
                }
                if (i + 1 == requests.size()) break;
                const char *want = i == 0 ? "OK" : "QUEUED";
                if (rep.type != '+' || rep.text != want) {
                    fail("RESP write: unexpected reply (" + where + ")\n  request: " +
                         describe_request(requests[i]) + "\n  reply: " + rep.describe() +
                         " (expected +" + want + ")\n");
                    return false;
                }
            }
            *last = rep;
            *written = rep.type != '-';
            if (*written) return true;
            std::string error = multi && starts_with(rep.text, aborted.c_str()) ? rep.text.substr(aborted.size()) : rep.text;
            if (starts_with(error, "BUSY")) {
                if (attempt < kBusyRetries) {
                    n_resp_write_busy_retries++;
                    sleep_ms(5 + rng_.below(30));
                    continue;
                }
                n_resp_write_gave_up++;
                return true;
            }
            if (multi && error != rep.text && sqlstate_of(error) == "40001") {
                n_resp_write_conflicts++;
                return true;
            }
            fail("RESP write: unexpected error reply (" + where + ")\n  request: " +
                 describe_request(requests[multi ? requests.size() - 2 : 0]) +
                 (multi ? " (in MULTI ... EXEC)" : "") + "\n  reply: " + rep.describe() + "\n");
            return false;
        }
    }

    // After an error reply: no tag in the keys or their moved-away partners, then the usual
    // checks of each key.
    bool check_not_written(const std::vector<long long> &keys, const std::vector<std::string> &tags,
                           const std::string &what, const RespReply &reply) {
        std::vector<long long> ids = keys;
        for (long long k : keys) ids.push_back(k + kMoveOffset);
        std::vector<SqlRow> now;
        if (!read_sql_rows(check_, *t_, ids, &now)) return false;
        for (size_t i = 0; i < ids.size(); i++)
            for (const std::string &tag : tags)
                if (now[i].present && now[i].value == tag) {
                    fail("RESP write: a write answered with an error is visible (" + w_.name() + ": " + what +
                         ")\n  reply: " + reply.describe() + "\n  key " + resp_key(ids[i]) +
                         " right after the reply: " + describe_sql_row(now[i]) + "\n");
                    return false;
                }
        for (long long k : keys)
            if (!check_after_write(k, w_.name() + ": read-after-error of RESP " + what + on_key(k), nullptr))
                return false;
        return true;
    }

    // The checks common to SET and HSET of key k (see above): `p` and `a` read before and
    // after; `exact` the row_to_json text the write must have made, if known. *own: `a` is
    // the write's own tuple. False after fail().
    bool check_upsert(long long k, const SqlRow &p, const SqlRow &a, const std::string &tag,
                      const std::string &exact, const std::string &what, const RespReply &reply, bool *own) {
        *own = false;
        std::string problem;
        if (p.present && a.present && p.version_id == a.version_id)
            problem = "plain SQL right after the reply still shows the tuple from before the request";
        else if (!a.present && a.departures == p.departures)
            problem = "the key is absent right after the reply, and no departure of it committed since "
                      "before the request";
        else if (a.present && a.value == tag && a.departures == p.departures) {
            *own = true;
            if (!exact.empty() && a.json != exact)
                problem = "the row is the write's own tuple but not what was written:\n    written:  " + exact;
        }
        if (problem.empty()) return true;
        fail("RESP write: " + problem + " (" + w_.name() + ": " + what + " of key " + resp_key(k) +
             ")\n  reply: " + reply.describe() + "\n  plain SQL before the request: " + describe_sql_row(p) +
             "\n  plain SQL after the reply:    " + describe_sql_row(a) + "\n");
        return false;
    }

    // SET of one key, or MULTI / SET / SET / EXEC of two.
    bool resp_sets(const std::vector<long long> &keys) {
        bool multi = keys.size() > 1;
        std::string what = multi ? "MULTI/EXEC of SET " + resp_key(keys[0]) + " and SET " + resp_key(keys[1]) : "SET";
        std::vector<std::string> tags, exact;
        std::vector<std::vector<std::string>> requests;
        if (multi) requests.push_back({"MULTI"});
        for (long long k : keys) {
            std::string tag = tag_value(), value = json_string(tag);
            bool with_version = rng_.chance(80);
            std::string version = with_version ? std::to_string(1 + rng_.below(1000)) : "1";
            // members in any order; the key columns sometimes; version sometimes absent (DEFAULT)
            std::vector<std::string> members{"\"value\":" + value};
            if (with_version) members.push_back("\"version\":" + version);
            if (rng_.chance(30)) members.push_back(t_->json_key(k));
            if (rng_.chance(50)) std::swap(members.front(), members.back());
            std::string object = "{";
            for (size_t i = 0; i < members.size(); i++) object += (i ? "," : "") + members[i];
            object += "}";
            requests.push_back({"SET", resp_key(k), object});
            tags.push_back(tag);
            exact.push_back(row_json(k, version, value));
        }
        if (multi) requests.push_back({"EXEC"});
        std::string where = w_.name() + ": RESP " + what;

        std::vector<SqlRow> before, after;
        if (!read_sql_rows(check_, *t_, keys, &before)) return false;
        RespReply reply;
        bool written;
        if (!send_write(requests, where, &reply, &written)) return false;
        if (!written) return check_not_written(keys, tags, what, reply);
        bool form_ok = multi ? reply.type == '*' && !reply.is_null && reply.elements.size() == 2 &&
                                   reply.elements[0].type == '+' && reply.elements[0].text == "OK" &&
                                   reply.elements[1].type == '+' && reply.elements[1].text == "OK"
                             : reply.type == '+' && reply.text == "OK";
        if (!form_ok) {
            fail("RESP write: unexpected reply (" + where + ")\n  reply: " + reply.describe() + "\n");
            return false;
        }
        (multi ? n_resp_multis : n_resp_sets)++;
        if (!read_sql_rows(check_, *t_, keys, &after)) return false;
        std::vector<bool> own(keys.size());
        for (size_t i = 0; i < keys.size(); i++) {
            bool o;
            if (!check_upsert(keys[i], before[i], after[i], tags[i], exact[i], what, reply, &o)) return false;
            own[i] = o;
            if (o) n_resp_write_own++;
        }
        for (size_t i = 0; i < keys.size(); i++) {
            KnownState known{{after[i]}, own[i] ? "the write, read right after the reply" : "plain SQL right after the write's reply", own[i]};
            if (!check_after_write(keys[i], where + ": read-after-write" + on_key(keys[i]), &known))
                return false;
        }
        return true;
    }

    // HSET of the value column (a missing row is inserted, version at its DEFAULT).
    bool resp_hset(long long k) {
        std::string tag = tag_value();
        std::string where = w_.name() + ": RESP HSET";
        std::vector<SqlRow> before, after;
        if (!read_sql_rows(check_, *t_, {k}, &before)) return false;
        RespReply reply;
        bool written;
        if (!send_write({{"HSET", resp_key(k), "value", tag}}, where, &reply, &written)) return false;
        if (!written) return check_not_written({k}, {tag}, "HSET", reply);
        if (reply.type != ':' || (reply.text != "0" && reply.text != "1")) {
            fail("RESP write: unexpected reply (" + where + " of " + resp_key(k) + ")\n  reply: " + reply.describe() +
                 " (expected :1 for an inserted row, :0 for an updated one)\n");
            return false;
        }
        n_resp_hsets++;
        if (!read_sql_rows(check_, *t_, {k}, &after)) return false;
        std::string exact = reply.text == "1" ? row_json(k, "1", json_string(tag)) : "";
        bool own;
        if (!check_upsert(k, before[0], after[0], tag, exact, "HSET", reply, &own)) return false;
        if (own) n_resp_write_own++;
        KnownState known{{after[0]}, own ? "the write, read right after the reply" : "plain SQL right after the write's reply", own};
        return check_after_write(k, where + ": read-after-write" + on_key(k), &known);
    }

    // DEL of the key (sometimes with a key no row ever has, which counts nothing).
    bool resp_del(long long k) {
        std::string where = w_.name() + ": RESP DEL";
        std::vector<std::string> request{"DEL", resp_key(k)};
        if (rng_.chance(30)) request.push_back(resp_key(kMissingBase + rng_.below(1000)));
        std::vector<SqlRow> before, after;
        if (!read_sql_rows(check_, *t_, {k}, &before)) return false;
        RespReply reply;
        bool written;
        if (!send_write({request}, where, &reply, &written)) return false;
        if (!written) return check_not_written({k}, {}, "DEL", reply);
        if (reply.type != ':' || (reply.text != "0" && reply.text != "1")) {
            fail("RESP write: unexpected reply (" + where + " of " + resp_key(k) + ")\n  reply: " + reply.describe() +
                 " (expected :0 or :1)\n");
            return false;
        }
        n_resp_dels++;
        if (!read_sql_rows(check_, *t_, {k}, &after)) return false;
        const SqlRow &p = before[0], &a = after[0];
        std::string problem;
        if (p.present && a.present && p.version_id == a.version_id)
            problem = "plain SQL right after the reply still shows the tuple from before the request";
        else if (reply.text == "1" && a.departures <= p.departures)
            problem = "DEL answered 1 but no departure of the key committed since before the request";
        else if (reply.text == "0" && p.present && a.departures <= p.departures)
            problem = "DEL answered 0 although the key had a row before the request and no departure of it "
                      "committed since";
        if (!problem.empty()) {
            fail("RESP write: " + problem + " (" + where + " of " + resp_key(k) + ")\n  request: " +
                 describe_request(request) + "\n  reply: " + reply.describe() +
                 "\n  plain SQL before the request: " + describe_sql_row(p) +
                 "\n  plain SQL after the reply:    " + describe_sql_row(a) + "\n");
            return false;
        }
        bool own = reply.text == "1" && !a.present && a.departures == p.departures + 1;
        if (own) n_resp_write_own++;
        KnownState known{{a}, own ? "the DEL, read right after the reply" : "plain SQL right after the DEL's reply", own};
        return check_after_write(k, where + ": read-after-write" + on_key(k), &known);
    }

    // The key's parameters of the statements below: $1 .. $n, n = the key's columns; `more`
    // numbers those that follow.
    std::string more(int i) const { return "$" + std::to_string((int)t_->key.size() + i); }

    bool dml_txn(long long k, const std::string &what) {
        bool is_null;
        std::string value = make_value(rng_, id_, ++seq_, &is_null);
        std::string version = std::to_string(1 + (seq_ % 1000));
        bool rollback = rng_.chance(10);
        std::string table = t_->name, cols = t_->columns("");
        Params key = Params().key(*t_, k), with_value = key;
        is_null ? with_value.add_null() : with_value.add(value);

        bool rr = rng_.chance(20);
        if (!w_.must(rr ? "BEGIN ISOLATION LEVEL REPEATABLE READ" : "BEGIN")) return false;
        bool witnessing = false;
        if (long_txns_ && !hold_xid(k, &witnessing)) return false;
        // Sometimes read the key through the cache first, so an entry exists to invalidate.
        if (rng_.chance(30) && !compare(w_, *t_, keys_for(k), w_.name() + ": before " + what))
            return false;
        int r;
        if (what == "UPDATE") {
            r = step("UPDATE " + table + " t SET version = t.version + 1, value = " + more(1) + " WHERE " +
                         t_->match("t", 1),
                     with_value);
        } else if (what == "UPSERT") {
            r = step("INSERT INTO " + table + " AS t (" + cols + ", version, value) VALUES (" + t_->values(1) +
                         ", 1, " + more(1) + ") ON CONFLICT (" + cols + ") DO UPDATE SET "
                         "version = t.version + 1, value = EXCLUDED.value",
                     with_value);
        } else {  // DELETE, INSERT (a key present meanwhile: unique violation, rolled back) or both
            r = what == "INSERT" ? 1 : step("DELETE FROM " + table + " t WHERE " + t_->match("t", 1), key);
            Params row = key;
            row.add(version);
            is_null ? row.add_null() : row.add(value);
            if (r == 1 && what != "DELETE")
                r = step("INSERT INTO " + table + " (" + cols + ", version, value) VALUES (" + t_->values(1) +
                             ", " + more(1) + ", " + more(2) + ")",
                         row);
        }
        if (r < 0) return false;
        if (r == 0)
            return check_after(k, what + " (conflict)", false) && (!witnessing || witness_after(k, what + " (conflict)"));
        // Own writes: inside the writing transaction, mget must see the new row. Not in
        // REPEATABLE READ: there an upsert that inserts (because a concurrent transaction
        // outside the snapshot moved the old row away) leaves two visible rows with the same
        // key in the snapshot, and "the" row of the key is not defined.
        if (!rr && rng_.chance(30)) {
            n_txn_checks++;
            if (!compare(w_, *t_, keys_for(k), w_.name() + ": inside its own transaction after " + what))
                return false;
        }
        if (!rollback && !note_own(k)) return false;
        bool committed;
        if (!finish(rollback, &committed)) return false;
        return check_after(k, what, committed) && (!witnessing || witness_after(k, what));
    }

    // A long-transaction writer's transaction, begun: takes its xid now and holds it before
    // writing k. Meanwhile, half the time, the second connection deletes k and inserts it
    // again (two commits with later xids), and, half the time, the witness begins a
    // REPEATABLE READ transaction whose snapshot sees those commits but not ours
    // (*witnessing: witness_after reads k in it after our commit).
    bool hold_xid(long long k, bool *witnessing) {
        if (!w_.must("SELECT pg_current_xact_id()")) return false;
        n_early_xid_txns++;
        if (rng_.chance(50)) {
            Params key = Params().key(*t_, k), row = key;
            row.add("1").add("re-inserted under " + w_.name());
            std::string table = t_->name, match = t_->match("t", 1);
            for (std::string sql : {"DELETE FROM " + table + " t WHERE " + match,
                                    "INSERT INTO " + table + " (" + t_->columns("") + ", version, value) VALUES (" +
                                        t_->values(1) + ", " + more(1) + ", " + more(2) + ")"}) {
                Conn::Outcome o = check_.run(sql.c_str(), (sql[0] == 'D' ? key : row).get());
                if (!o.ok && !expected_conflict(o.sqlstate)) {
                    fail(check_.name() + ": unexpected error in `" + sql + "`: [" + o.sqlstate + "] " + o.error);
                    return false;
                }
            }
        }
        *witnessing = rng_.chance(50);
        if (*witnessing && (!witness_->must("BEGIN ISOLATION LEVEL REPEATABLE READ") ||
                            !compare(*witness_, *t_, keys_for(k), witness_->name() + ": snapshot taken")))
            return false;
        sleep_ms(2 + rng_.below(40));
        return true;
    }

    // The witness's snapshot, older than our commit (and than the fills after it), must still
    // read k as plain SQL does in it.
    bool witness_after(long long k, const std::string &what) {
        n_rr_checks++;
        return compare(*witness_, *t_, keys_for(k),
                       witness_->name() + ": REPEATABLE READ snapshot taken while " + w_.name() + " held its xid, after its " +
                           what + " committed" + on_key(k)) &&
               !!witness_->must("COMMIT");
    }

    // Moves row k to k + kMoveOffset and back (an UPDATE of every key column: for stress_lines
    // one of them keeps its value): in one transaction, or in two with checks after each
    // commit.
    bool move(long long k) {
        bool one_txn = rng_.chance(50);
        bool rollback = rng_.chance(10);
        std::string table = t_->name;
        // $1.. the row's key, then the key it moves to
        std::string update = "UPDATE " + table + " t SET " + t_->assign((int)t_->key.size() + 1) +
                             ", version = t.version + 1 WHERE " + t_->match("t", 1);
        Params away = Params().key(*t_, k).key(*t_, k + kMoveOffset);
        Params back = Params().key(*t_, k + kMoveOffset).key(*t_, k);
        if (!w_.must("BEGIN")) return false;
        int r = step(update, away);
        if (r < 0) return false;
        if (r == 0) return check_after(k, "key move (conflict)", false);
        if (rng_.chance(30)) {
            n_txn_checks++;
            if (!compare(w_, *t_, keys_for(k), w_.name() + ": inside its own transaction after key move"))
                return false;
        }
        if (one_txn) {
            r = step(update, back);
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
        r = step(update, back);
        if (r < 0) return false;
        if (r == 0) {
            if (!w_.must("BEGIN")) return false;
            Params moved = Params().key(*t_, k + kMoveOffset);
            if (step("DELETE FROM " + table + " t WHERE " + t_->match("t", 1), moved) < 0) return false;
        }
        if (!note_own(k)) return false;
        if (!finish(false, &committed)) return false;
        return check_after(k, r == 0 ? "delete of moved row" : "key move back", committed);
    }

    int id_;
    bool long_txns_;   // takes its xid at BEGIN and holds it before writing
    Rng rng_;
    Conn w_, check_;
    std::unique_ptr<Conn> witness_;      // long-transaction writers: hold_xid's snapshot
    std::unique_ptr<RespClient> resp_;   // with --resp-port
    Table *t_ = nullptr;                 // the table of the current write (run() picks it)
    KnownState own_;                     // note_own(): the state of k our commit leaves
    bool own_known_ = false;
    uint64_t seq_ = 0;
};

}  // namespace

void run_writer(int id, bool long_txns) {
    Writer w(id, long_txns);
    w.run();
}

}  // namespace stress
