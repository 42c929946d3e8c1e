// tools/stress_check/main.cpp: owns the concurrency stress check of local_cache (run by
// tools/test.sh) as a whole: the command line, the setup of the tables, the threads, the
// progress lines and statistics, and the final verdict. The sessions live in writer.cpp,
// reader.cpp, toggler.cpp and bank.cpp (the SERIALIZABLE mode), the stressed tables in
// tables.cpp, what they share in common.h / common.cpp.
//
// Four tables are stressed alike, one for each kind of primary key the cache keys rows by:
// stress_items (id bigint), stress_uuids (id uuid), stress_lines (order_id bigint, line_no
// integer) and stress_accounts (account text, id uuid; accounts contain ':', '\', '"' and a
// non-ASCII letter), each with version and value columns and a foreign table. Every session
// names rows by a key number that each table makes its own key (tables.cpp), and each step of
// a session works on a table picked at random; mget gets a one-dimensional array of the key's
// type for one-column keys and a two-dimensional one (bigint[], or text[] that mget converts)
// for composite keys, RESP the key's canonical text (uuids in lower case, a composite key's
// columns joined by ':' with ':' and '\' escaped).
//
// Writers change a few hot rows in every way that must invalidate the cache (UPDATE, DELETE +
// re-INSERT, DELETE and a later INSERT of the then absent key, INSERT ON CONFLICT DO UPDATE,
// primary key moves i.e. UPDATEs of the key columns, ROLLBACK), and right after each COMMIT
// returns check from a second connection that local_cache.mget shows what plain SQL shows
// (read-after-commit). Long-transaction writers (--long-writers) do the same but take their
// xid when their transaction begins and hold it a while before writing, so a key's deleters
// commit in another order than their xids. Readers compare local_cache.mget and local_cache.mget_json with the
// same rows read by plain SQL in the same snapshot, in REPEATABLE READ transactions whose
// snapshots get old, and in READ COMMITTED statements, for key lists of hot, cold, moved-away
// and missing keys with duplicates and NULL keys (for composite keys also keys with one NULL
// column); they also compare each foreign table (local_cache_fdw: key lookups, `= ANY` for a
// one-column key and `(columns) IN (...)` for a composite one, and a join that looks up each
// key) with the same queries on its table.
// Bank sessions (--bank-sessions) run the SERIALIZABLE mode (bank.cpp): transfers between the
// accounts of stress_bank, read through mget, with the bank's total checked by plain SQL after
// every commit, and read-only audits of the total through mget_json and the foreign table.
// A toggler session switches the capture trigger of a table off and on every few seconds (in
// one transaction or across several) and writes while it is off, so readers check every path
// while writes go uncaptured. Setup checks that a partitioned layout is refused.
// With --resp-port N the RESP server on 127.0.0.1:N is checked too: writers make about 30% of
// their writes through RESP (SET of a new row, DEL, HSET of one column, MULTI/EXEC of two
// SETs) and check that plain SQL right after the reply shows them (exactly, where it can prove
// the row is the write's); right after each COMMIT, ROLLBACK or RESP write reply, a writer
// GETs the key through RESP, and readers MGET key lists; each reply is compared with plain SQL
// read just before and just after it, for the keys those two reads prove unchanged in between
// (compare_resp in common.cpp explains why that is race-free; each table's trigger
// stress_count_departure counts each key's departures in stress_departures for it).
// Any difference prints the table, the keys, both results and local_cache.stats, and exits 1.
// Exits 1 too if the cache served no hit on some table or some table was never compared, or
// (with --resp-port) no RESP write was acknowledged (the run would prove nothing).
//
// Build (tools/test.sh does it; from the repository's root, the one include root):
//   g++ -std=c++17 -O2 -pthread -I. -I$(pg_config --includedir) tools/stress_check/*.cpp tools/lib/*.cpp \
//       extension/key_bytes.cpp -o tools/stress -lpq
// Usage: tools/stress CONNINFO [--seconds N] [--writers N] [--long-writers N] [--readers N] [--keys N]
//                             [--bank-sessions N]
//                             [--toggle-seconds N]   (0: no toggler)
//                             [--resp-port N]        (0: no RESP checks)
//        (the server must have shared_preload_libraries = 'local_cache'; the program
//        creates the extension if needed and (re)creates the four tables, their foreign
//        tables (stress_cache for stress_items, <table>_cache for the others) and departure
//        triggers, and the table stress_departures. For --resp-port the server's
//        local_cache.resp_port must be N, local_cache.resp_database the database of CONNINFO,
//        and local_cache.resp_role set: the program creates that role if it does not exist
//        (NOLOGIN) and grants it SELECT, INSERT, UPDATE and DELETE on the four tables.)

#include "common.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace stress;

namespace {

void usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s CONNINFO [--seconds N] [--writers N] [--long-writers N] [--readers N]\n"
            "       [--keys N] [--bank-sessions N] [--toggle-seconds N] [--resp-port N]\n"
            "  defaults: --seconds 30 --writers 3 --long-writers 1 --readers 3 --keys 64\n"
            "            --bank-sessions 2 --toggle-seconds 3\n"
            "            --resp-port 0 (no RESP checks)\n",
            argv0);
    exit(2);
}

// --resp-port: the server's RESP settings must fit, and the role RESP clients act as gets
// SELECT, INSERT, UPDATE and DELETE on the stressed tables (created first if needed; the
// tables have no sequence, and the departure triggers are SECURITY DEFINER, so it needs
// nothing else).
bool setup_resp(Conn &c) {
    Res r = c.must("SELECT current_setting('local_cache.resp_port'), "
                   "current_setting('local_cache.resp_role'), "
                   "current_setting('local_cache.resp_database'), current_database()");
    if (!r) return false;
    std::string port = get(r, 0, 0), role = get(r, 0, 1), db = get(r, 0, 2), cur = get(r, 0, 3);
    if (port != std::to_string(opt.resp_port)) {
        fail("setup: --resp-port " + std::to_string(opt.resp_port) +
             " but the server's local_cache.resp_port is " + port);
        return false;
    }
    if (db != cur) {
        fail("setup: local_cache.resp_database is \"" + db + "\", not this database \"" + cur +
             "\": RESP would not serve the stressed tables");
        return false;
    }
    if (role.empty()) {
        fail("setup: local_cache.resp_role is empty: set it to the role RESP clients act as "
             "without AUTH (created if missing, and granted SELECT, INSERT, UPDATE and DELETE on "
             "the stressed tables)");
        return false;
    }
    std::string names;
    for (const Table *t : tables()) names += (names.empty() ? "" : ", ") + std::string(t->name);
    std::string grant =
        "DO $$ BEGIN "
        "IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = current_setting('local_cache.resp_role')) "
        "THEN EXECUTE format('CREATE ROLE %I', current_setting('local_cache.resp_role')); END IF; "
        "EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON " + names + " TO %I', "
        "current_setting('local_cache.resp_role')); "
        "END $$";
    return !!c.must(grant.c_str());
}

// --resp-port: waits (up to 60 s) until the RESP server answers PING (its workers start after
// the server), then checks that GET of one row of each table answers what SQL shows
// (settings, role).
bool wait_for_resp() {
    auto deadline = Clock::now() + std::chrono::seconds(60);
    std::string last;
    for (;;) {
        try {
            RespClient r = resp_client();
            RespReply pong = r.call({"PING"});
            if (pong.type == '+' && pong.text == "PONG") {
                Conn c("setup");
                for (const Table *t : tables()) {
                    std::vector<SqlRow> row;
                    if (!read_sql_rows(c, *t, {1}, &row)) return false;
                    std::string key = t->resp_key(1);
                    RespReply got = r.call({"GET", key});
                    if (got.type != '$' || got.is_null || got.text != row[0].json) {
                        fail("setup: RESP GET " + key + " answered " + got.describe() + ", SQL shows " +
                             describe_sql_row(row[0]) + " (check local_cache.resp_role and resp_database)");
                        return false;
                    }
                }
                return true;
            }
            last = "PING answered " + pong.describe();
        } catch (const std::exception &e) {
            last = e.what();
        }
        if (Clock::now() >= deadline) {
            fail("setup: the RESP server on 127.0.0.1:" + std::to_string(opt.resp_port) +
                 " did not answer PING within 60 s: " + last);
            return false;
        }
        sleep_ms(200);
    }
}

bool setup() {
    Conn c("setup");
    const char *steps[] = {
        // (a pre-existing schema local_cache is used as is)
        "DO $$ BEGIN IF to_regnamespace('local_cache') IS NULL THEN "
        "CREATE EXTENSION local_cache; END IF; END $$",
        // The departures of every table's keys (tables.cpp: setup_table), by the table's name
        // and the key's canonical text.
        "DROP TABLE IF EXISTS stress_departures",
        "CREATE TABLE stress_departures (tbl text, key text, n bigint NOT NULL, PRIMARY KEY (tbl, key))",
    };
    for (const char *s : steps)
        if (!c.must(s)) return false;
    for (Table *t : tables())
        if (!setup_table(c, *t)) return false;
    // A partitioned layout is refused: writes through the parent would not reach the cache.
    const char *refused[] = {
        "CREATE TABLE stress_parted (id bigint PRIMARY KEY) PARTITION BY RANGE (id)",
        "CREATE TABLE stress_part PARTITION OF stress_parted FOR VALUES FROM (0) TO (10)",
    };
    c.must("DROP TABLE IF EXISTS stress_parted");
    for (const char *r : refused)
        if (!c.must(r)) return false;
    for (const char *sql : {"SELECT local_cache.enable('stress_parted')", "SELECT local_cache.enable('stress_part')",
                            "ALTER TABLE stress_parted ATTACH PARTITION stress_items FOR VALUES FROM (10) TO (2000000000)"}) {
        Conn::Outcome o = c.run(sql);
        if (o.ok) {
            fail(std::string("setup: a partitioned layout was accepted: ") + sql);
            return false;
        }
    }
    if (!c.must("DROP TABLE stress_parted")) return false;
    if (opt.bank_sessions > 0 && !setup_bank(c)) return false;
    if (opt.resp_port > 0 && !setup_resp(c)) return false;
    return true;
}

void print_stats(const char *title) {
    try {
        Conn c("stats");
        Res r = c.must("SELECT * FROM local_cache.stats");
        if (!r) {
            std::lock_guard<std::mutex> g(g_mutex);
            printf("%s: could not read local_cache.stats: %s\n", title, g_failure.c_str());
            return;
        }
        std::lock_guard<std::mutex> g(g_mutex);
        printf("%s (SELECT * FROM local_cache.stats):\n ", title);
        for (int j = 0; j < PQnfields(r.get()); j++) printf(" %s", PQfname(r.get(), j));
        printf("\n");
        for (int i = 0; i < PQntuples(r.get()); i++) {
            printf(" ");
            for (int j = 0; j < PQnfields(r.get()); j++) printf(" %s", get(r, i, j).c_str());
            printf("\n");
        }
        fflush(stdout);
    } catch (const std::exception &e) {
        std::lock_guard<std::mutex> g(g_mutex);
        printf("%s: %s\n", title, e.what());
    }
}

}  // namespace

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc < 2 || argv[1][0] == '-') usage(argv[0]);
    opt.conninfo = argv[1];
    for (int i = 2; i < argc; i++) {
        std::string a = argv[i];
        if (i + 1 >= argc) usage(argv[0]);
        int v = atoi(argv[++i]);
        if (a == "--seconds") opt.seconds = v;
        else if (a == "--writers") opt.writers = v;
        else if (a == "--long-writers") opt.long_writers = v;
        else if (a == "--bank-sessions") opt.bank_sessions = v;
        else if (a == "--readers") opt.readers = v;
        else if (a == "--keys") opt.keys = v;
        else if (a == "--toggle-seconds") opt.toggle_seconds = v;
        else if (a == "--resp-port") opt.resp_port = v;
        else usage(argv[0]);
    }
    if (opt.seconds < 1 || opt.writers < 0 || opt.long_writers < 0 || opt.readers < 0 || opt.keys < 1 ||
        opt.bank_sessions < 0 ||
        opt.toggle_seconds < 0 ||
        opt.resp_port < 0 || opt.resp_port > 65535 ||
        opt.keys >= kColdBase || opt.writers + opt.readers == 0) {
        fprintf(stderr, "stress: bad arguments (keys must be 1..%lld)\n", kColdBase - 1);
        return 2;
    }
    printf("stress: %d s, %d writers, %d long-transaction writers, %d readers, %d hot keys", opt.seconds,
           opt.writers, opt.long_writers, opt.readers, opt.keys);
    if (opt.resp_port > 0) printf(", RESP on 127.0.0.1:%d", opt.resp_port);
    printf("\n");

    try {
        if (!setup() || (opt.resp_port > 0 && !wait_for_resp())) {
            printf("stress: FAILED during setup: %s\n", g_failure.c_str());
            return 1;
        }
    } catch (const std::exception &e) {
        printf("stress: FAILED during setup: %s\n", e.what());
        return 1;
    }

    std::vector<std::thread> threads;
    int nwriters = opt.writers + opt.long_writers;
    int nthreads = nwriters + opt.readers + opt.bank_sessions + (opt.toggle_seconds > 0 ? 1 : 0);
    for (int i = 0; i < nthreads; i++) {
        threads.emplace_back([i, nwriters] {
            try {
                if (i < nwriters)
                    run_writer(i + 1, i >= opt.writers);
                else if (i < nwriters + opt.readers)
                    run_reader(i - nwriters + 1);
                else if (i < nwriters + opt.readers + opt.bank_sessions)
                    run_banker(i - nwriters - opt.readers + 1);
                else
                    run_toggler();
            } catch (const std::exception &e) {
                fail(e.what());
            }
            n_threads_done++;
        });
    }

    auto start = Clock::now();
    auto deadline = start + std::chrono::seconds(opt.seconds);
    auto next_report = start + std::chrono::seconds(10);
    while (!g_stop && Clock::now() < deadline) {
        sleep_ms(50);
        if (Clock::now() >= next_report) {
            next_report += std::chrono::seconds(10);
            say("stress: %3lds  reads checked %" PRIu64 ", commits %" PRIu64 ", rollbacks %" PRIu64
                ", RESP writes %" PRIu64,
                (long)std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start).count(),
                (uint64_t)(n_rr_checks + n_rc_checks + n_commit_checks + n_txn_checks +
                           n_fdw_checks + n_resp_commit_checks + n_resp_read_checks),
                (uint64_t)n_commits, (uint64_t)n_rollbacks,
                (uint64_t)(n_resp_sets + n_resp_dels + n_resp_hsets + n_resp_multis));
        }
    }
    g_stop = true;

    // Every statement has statement_timeout = 30s; give the threads a bit more than that.
    auto grace = Clock::now() + std::chrono::seconds(45);
    while (n_threads_done < nthreads && Clock::now() < grace) sleep_ms(50);
    if (n_threads_done < nthreads) {
        printf("stress: FAILED: %d of %d threads still running 45 s after the end "
               "(a statement hangs?)\n",
               nthreads - n_threads_done.load(), nthreads);
        if (g_failed) printf("%s\n", g_failure.c_str());
        print_stats("stress: cache statistics");
        fflush(stdout);
        _exit(1);
    }
    for (auto &t : threads) t.join();

    uint64_t resp_checks = n_resp_commit_checks + n_resp_read_checks;
    uint64_t reads = n_rr_checks + n_rc_checks + n_commit_checks + n_txn_checks + n_fdw_checks +
                     resp_checks;
    printf("stress: reads checked %" PRIu64 " (repeatable read %" PRIu64 " in %" PRIu64
           " transactions, read committed %" PRIu64 ", after commit/rollback %" PRIu64
           ", inside writing transactions %" PRIu64 ", foreign table %" PRIu64 ", RESP %" PRIu64 ")\n",
           reads, (uint64_t)n_rr_checks, (uint64_t)n_rr_txns, (uint64_t)n_rc_checks,
           (uint64_t)n_commit_checks, (uint64_t)n_txn_checks, (uint64_t)n_fdw_checks, resp_checks);
    if (opt.resp_port > 0)
        printf("stress: RESP keys checked %" PRIu64 " (GET after commit/rollback/RESP write %" PRIu64
               " of which %" PRIu64 " against the writer's own write, reader MGET keys %" PRIu64
               "; absent keys answered nil %" PRIu64 "), not comparable (changed around the "
               "request, or absence not provably constant) %" PRIu64 ", error replies %" PRIu64
               ", -BUSY retries %" PRIu64 "\n",
               resp_checks, (uint64_t)n_resp_commit_checks, (uint64_t)n_resp_own_checks,
               (uint64_t)n_resp_read_checks, (uint64_t)n_resp_absent_checks,
               (uint64_t)n_resp_skipped, (uint64_t)n_resp_errors, (uint64_t)n_resp_busy_retries);
    uint64_t resp_writes = n_resp_sets + n_resp_dels + n_resp_hsets + n_resp_multis;
    if (opt.resp_port > 0)
        printf("stress: RESP writes %" PRIu64 " (SET %" PRIu64 ", DEL %" PRIu64 ", HSET %" PRIu64
               ", MULTI/EXEC of two SETs %" PRIu64 "), rows proven exactly the write by plain SQL "
               "right after the reply %" PRIu64 ", expected error replies (serialization failure, "
               "nothing written) %" PRIu64 ", -BUSY retries %" PRIu64 ", given up after -BUSY "
               "(nothing written) %" PRIu64 "\n",
               resp_writes, (uint64_t)n_resp_sets, (uint64_t)n_resp_dels, (uint64_t)n_resp_hsets,
               (uint64_t)n_resp_multis, (uint64_t)n_resp_write_own,
               (uint64_t)n_resp_write_conflicts, (uint64_t)n_resp_write_busy_retries,
               (uint64_t)n_resp_write_gave_up);
    printf("stress: commits %" PRIu64 ", rollbacks %" PRIu64 ", conflicts rolled back %" PRIu64
           ", capture trigger switched off %" PRIu64 " times, uncaptured writes %" PRIu64
           ", transactions that took their xid early %" PRIu64 "\n",
           (uint64_t)n_commits, (uint64_t)n_rollbacks, (uint64_t)n_conflicts, (uint64_t)n_toggles,
           (uint64_t)n_uncaptured_writes, (uint64_t)n_early_xid_txns);

    if (opt.bank_sessions > 0)
        printf("stress: SERIALIZABLE transfers committed %" PRIu64 ", read-only audits %" PRIu64
               ", serialization failures rolled back %" PRIu64 "\n",
               (uint64_t)n_bank_commits, (uint64_t)n_bank_audits, (uint64_t)n_bank_conflicts);

    if (g_failed) {
        printf("stress: FAILED\n%s\n", g_failure.c_str());
        print_stats("stress: cache statistics");
        return 1;
    }

    // Each table's comparisons and cache statistics, and the statistics' sums (the line
    // tools/test.sh reports). A table that served no hit, or was never compared, makes the run
    // prove nothing about it.
    const char *columns[] = {"hits", "misses", "fills", "fill_rejections", "evictions", "invalidations",
                             "entries", "bytes"};
    long long sums[8] = {};
    std::string per_table, unproven;
    try {
        Conn c("stats");
        for (const Table *t : tables()) {
            std::string rel = std::string("public.") + t->name;
            Res r = c.must("SELECT hits, misses, fills, fill_rejections, evictions, invalidations, "
                           "entries, bytes FROM local_cache.stats WHERE relation = $1::regclass",
                           {rel.c_str()});
            if (!r || PQntuples(r.get()) != 1) {
                printf("stress: FAILED: no row for %s in local_cache.stats %s\n", t->name, g_failure.c_str());
                return 1;
            }
            std::string checks = std::to_string(t->checks.load());
            per_table += "stress:   " + std::string(t->name) + ": comparisons " + checks;
            for (int j = 0; j < 8; j++) {
                sums[j] += atoll(PQgetvalue(r.get(), 0, j));
                per_table += std::string(", ") + columns[j] + " " + get(r, 0, j);
            }
            per_table += "\n";
            if (t->checks == 0 || atoll(PQgetvalue(r.get(), 0, 0)) <= 0)
                unproven += (unproven.empty() ? "" : ", ") + std::string(t->name) + " (comparisons " +
                            checks + ", hits " + get(r, 0, 0) + ", fills " + get(r, 0, 2) + ")";
        }
    } catch (const std::exception &e) {
        printf("stress: FAILED reading statistics: %s\n", e.what());
        return 1;
    }
    printf("stress: cache");
    for (int j = 0; j < 8; j++) printf("%s %s %lld", j ? "," : "", columns[j], sums[j]);
    printf(" (%zu tables)\n%s", tables().size(), per_table.c_str());
    if (!unproven.empty()) {
        printf("stress: FAILED: no hits or no comparisons on %s, so this run proves nothing about it\n",
               unproven.c_str());
        return 1;
    }
    if (opt.bank_sessions > 0) {
        // The SERIALIZABLE reads must have been served from memory, or the mode proves nothing.
        Conn c("stats");
        Res r = c.must("SELECT hits, misses FROM local_cache.stats WHERE relation = 'stress_bank'::regclass");
        if (!r) {
            printf("stress: FAILED reading statistics: %s\n", g_failure.c_str());
            return 1;
        }
        printf("stress:   stress_bank (SERIALIZABLE): hits %s, misses %s\n", get(r, 0, 0).c_str(), get(r, 0, 1).c_str());
        if (n_bank_commits == 0 || atoll(get(r, 0, 0).c_str()) <= 0) {
            printf("stress: FAILED: the SERIALIZABLE mode committed no transfer or served no hit\n");
            return 1;
        }
    }
    if (reads == 0 || (opt.writers + opt.long_writers > 0 && n_commits == 0) ||
        (opt.long_writers > 0 && n_early_xid_txns == 0) ||
        (opt.readers > 0 && n_fdw_checks == 0) ||
        (opt.resp_port > 0 && opt.writers > 0 && n_resp_commit_checks == 0) ||
        (opt.resp_port > 0 && opt.readers > 0 && n_resp_read_checks == 0) ||
        (opt.toggle_seconds > 0 && opt.seconds > 2 * opt.toggle_seconds && n_uncaptured_writes == 0)) {
        printf("stress: FAILED: nothing was checked\n");
        return 1;
    }
    if (opt.resp_port > 0 && opt.writers > 0 && resp_writes == 0) {
        printf("stress: FAILED: no RESP write was acknowledged, so the RESP write checks prove nothing\n");
        return 1;
    }
    printf("stress: OK\n");
    return 0;
}
