// bench/loadgen_run.cpp: owns `loadgen run` (loadgen_main.cpp): one path, mode and key type,
// closed loop over N connections driven by poll() from min(N, 2 x cores) threads, every reply
// checked (row counts, nils), then one JSON line of counts, latency percentiles and own CPU time.
#include "bench/loadgen.h"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <thread>

namespace loadgen {

namespace {

using tooling::PgParams;

struct Slot {
    PGconn *pg = nullptr;         // SQL paths; for resp in mixed mode: the update connection
    std::optional<tooling::RespClient> resp;  // RESP paths
    enum State { Idle, PgWait, RespWait } state = Idle;
    Clock::time_point sent;
    uint64_t seq = 0;             // requests issued by this slot (key rotation)
    int index = 0;
    int expect_present = 0;       // keys of the outstanding read that have a row
};

struct ThreadResult {
    std::vector<uint32_t> lat_us;
    uint64_t reads = 0, updates = 0, errors = 0;
    uint64_t plain_updates = 0;  // update_pair: the updates of public.items_plain (part of updates)
};

struct Runner {
    Options o;
    const KeyType *kt = &INT_KEYS;
    std::vector<std::string> resp_keys;  // "prefix:" and the key text of rows 0..: built once, sent often
    std::atomic<int> warmed{0};
    std::atomic<bool> go{false}, stop{false};
    std::string error;
    std::atomic<bool> failed{false};

    void fatal(const std::string &msg) {
        if (!failed.exchange(true)) error = msg;
        stop = true;
    }

    std::vector<long long> keys_for(Slot &s) {
        std::vector<long long> k(o.batch);
        if (o.mode == "warm" || o.mode == "serializable" || o.path == "update" || o.path == "update_pair") {
            for (int i = 0; i < o.batch; i++) k[i] = i + 1;
        } else if (o.mode == "miss") {
            k = miss_keys(o, s.seq, s.index);
        } else if (o.mode == "mixed") {
            long long start = (s.seq * o.batch + s.index * 7) % o.hot;
            for (int i = 0; i < o.batch; i++) k[i] = (start + i) % o.hot + 1;
        } else {  // cold: walk the whole table so that reads keep missing after the flush
            long long start = (s.seq * o.batch + static_cast<long long>(s.index) * 4099) % o.rows;
            for (int i = 0; i < o.batch; i++) k[i] = (start + i) % o.rows + 1;
        }
        return k;
    }

    int present(const std::vector<long long> &k) const {
        return static_cast<int>(std::count_if(k.begin(), k.end(), [&](long long x) { return x >= 1 && x <= o.rows; }));
    }

    bool is_resp() const { return is_resp_path(o.path); }
    bool is_set() const { return o.path == "resp_set" || o.path == "redis_set"; }
    bool is_mset() const { return is_mset_path(o.path); }
    bool is_resp_write() const { return is_set() || is_mset(); }  // answered +OK

    // Starts the next request of a slot. Returns false on error.
    void issue(Slot &s, std::mt19937_64 &rng, bool &is_update) {
        is_update = false;
        bool upd = o.path == "update" || o.path == "update_pair" || o.path == "update16" || (o.mode == "mixed" && static_cast<int>(rng() % 100) < o.update_pct);
        s.sent = Clock::now();
        if (is_set()) {  // one random row, the whole object, as the bytes row_to_json gives
            is_update = true;
            long long id = static_cast<long long>(rng() % o.rows) + 1;
            std::string key = o.prefix + ":" + std::to_string(id);
            s.resp->queue({"SET", key, row_json(id, random_value(rng))});
            s.state = Slot::RespWait;
            s.resp->flush();
        } else if (is_mset()) {  // MULTI_ROWS distinct random rows in one MSET, each as SET writes it
            is_update = true;
            std::vector<std::string> args = {"MSET"};
            for (long long id : distinct_rows(rng, MULTI_ROWS, o.rows)) {
                args.push_back(o.prefix + ":" + std::to_string(id));
                args.push_back(row_json(id, random_value(rng)));
            }
            s.resp->queue(args);
            s.state = Slot::RespWait;
            s.resp->flush();
        } else if (o.path == "update16") {  // one statement writing MULTI_ROWS distinct random rows
            is_update = true;
            std::vector<std::string> ids, vals;
            for (long long id : distinct_rows(rng, MULTI_ROWS, o.rows)) {
                ids.push_back(std::to_string(id));
                vals.push_back(random_value(rng));
            }
            const std::string id_array = "{" + [&] {
                std::string j;
                for (size_t i = 0; i < ids.size(); i++) j += (i ? "," : "") + ids[i];
                return j;
            }() + "}";
            const std::string val_array = text_array_literal(vals);
            const char *params[2] = {id_array.c_str(), val_array.c_str()};
            if (!PQsendQueryPrepared(s.pg, "q", 2, params, nullptr, nullptr, 0))
                return fatal(std::string("send UPDATE of 16 rows: ") + PQerrorMessage(s.pg));
            if (PQflush(s.pg) < 0) return fatal(std::string("flush: ") + PQerrorMessage(s.pg));
            s.state = Slot::PgWait;
        } else if (upd) {
            is_update = true;
            long long id = o.mode == "mixed" ? static_cast<long long>(rng() % o.hot) + 1
                                             : static_cast<long long>(rng() % o.rows) + 1;
            std::string ids = std::to_string(id), val = random_value(rng);
            const char *vals[2] = {ids.c_str(), val.c_str()};
            if (!PQsendQueryPrepared(s.pg, "u", 2, vals, nullptr, nullptr, 0))
                return fatal(std::string("send UPDATE: ") + PQerrorMessage(s.pg));
            if (PQflush(s.pg) < 0) return fatal(std::string("flush: ") + PQerrorMessage(s.pg));
            s.state = Slot::PgWait;
        } else if (is_resp()) {
            auto k = keys_for(s);
            s.expect_present = present(k);
            std::vector<std::string> args = {"MGET"};
            for (auto x : k)
                args.push_back(x >= 0 && static_cast<size_t>(x) < resp_keys.size() ? resp_keys[x]
                                                                                   : o.prefix + ":" + key_text(*kt, x));
            s.resp->queue(args);
            s.state = Slot::RespWait;
            s.resp->flush();
        } else {
            auto k = keys_for(s);
            s.expect_present = present(k);
            const bool binary = o.params == "binary";
            auto params = key_arrays(*kt, o.path, std::vector<std::optional<long long>>(k.begin(), k.end()), binary);
            PgParams pp(params, binary);
            if (!PQsendQueryPrepared(s.pg, "q", pp.n(), pp.vals.data(), pp.lengths.data(), pp.formats.data(), 0))
                return fatal(std::string("send: ") + PQerrorMessage(s.pg));
            if (PQflush(s.pg) < 0) return fatal(std::string("flush: ") + PQerrorMessage(s.pg));
            s.state = Slot::PgWait;
        }
        s.seq++;
    }

    // Progress on a slot; returns true when its request has completed.
    bool progress(Slot &s, short revents, bool is_update) {
        if (s.state == Slot::PgWait) {
            if (revents & POLLOUT) {
                if (PQflush(s.pg) < 0) { fatal(std::string("flush: ") + PQerrorMessage(s.pg)); return false; }
            }
            if (!PQconsumeInput(s.pg)) { fatal(std::string("consume: ") + PQerrorMessage(s.pg)); return false; }
            while (!PQisBusy(s.pg)) {
                PGresult *r = PQgetResult(s.pg);
                if (!r) { s.state = Slot::Idle; return true; }
                auto st = PQresultStatus(r);
                if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
                    fatal(std::string("query failed: ") + PQresultErrorMessage(r));
                    PQclear(r);
                    return false;
                }
                if (o.path == "update16" && std::string(PQcmdTuples(r)) != std::to_string(MULTI_ROWS)) {
                    fatal(std::string("UPDATE of 16 rows changed ") + PQcmdTuples(r) + " rows");
                } else if (!is_update && o.mode != "mixed") {
                    int want = (o.path == "sql" || o.path == "fdw") ? s.expect_present : 1;
                    if (PQntuples(r) != want) {
                        fatal("unexpected row count " + std::to_string(PQntuples(r)) + " (expected " + std::to_string(want) + ")");
                    }
                }
                PQclear(r);
            }
            return false;
        }
        if (s.state == Slot::RespWait) {  // errors of the RESP client throw: thread_main makes them fatal()
            if (revents & POLLOUT) s.resp->flush();
            if (!(revents & (POLLIN | POLLHUP | POLLERR))) return false;
            s.resp->receive();
            std::string_view in = s.resp->input();
            if (!in.empty() && in[0] == '-') { fatal("RESP error: " + std::string(in.substr(0, in.find('\r')))); return false; }
            tooling::Reply reply;
            tooling::ReplyShape shape;  // reads of B keys: only the framing, the count and the nils
            if (s.resp->take(is_resp_write() ? &reply : nullptr, &shape) != tooling::ParseStatus::Complete) return false;
            if (is_resp_write()) {
                if (!reply.is_simple("OK") || s.resp->buffered())
                    fatal(std::string(is_mset() ? "MSET" : "SET") + " answered " + reply.describe() + ", expected +OK");
            } else if (shape.elements != static_cast<size_t>(o.batch)) {
                fatal("RESP reply with " + std::to_string(shape.elements) + " elements");
            } else if (shape.nils != static_cast<size_t>(o.batch - s.expect_present)) {  // every absent key nil, no other
                fatal("RESP reply with " + std::to_string(shape.nils) + " nils, expected " +
                      std::to_string(o.batch - s.expect_present));
            }
            s.state = Slot::Idle;
            return true;
        }
        return false;
    }

    void thread_main(std::vector<Slot> &slots, ThreadResult &res, unsigned seed) {
        try {
            thread_loop(slots, res, seed);
        } catch (const std::exception &e) {
            fatal(e.what());
        }
    }

    void thread_loop(std::vector<Slot> &slots, ThreadResult &res, unsigned seed) {
        std::mt19937_64 rng(seed);
        std::vector<pollfd> pfds(slots.size());
        std::vector<char> upd(slots.size(), 0);
        auto loop = [&](bool timed, int warm_per_slot) {
            std::vector<int> done(slots.size(), 0);
            size_t finished = 0;
            for (size_t i = 0; i < slots.size(); i++) {
                bool u;
                issue(slots[i], rng, u);
                upd[i] = u;
            }
            while (!stop) {
                for (size_t i = 0; i < slots.size(); i++) {
                    Slot &s = slots[i];
                    pfds[i].fd = s.state == Slot::PgWait ? PQsocket(s.pg) : s.state == Slot::RespWait ? s.resp->fd() : -1;
                    pfds[i].events = POLLIN;
                    if ((s.state == Slot::RespWait && s.resp->output_pending()) ||
                        (s.state == Slot::PgWait && PQisnonblocking(s.pg) && PQflush(s.pg) == 1))
                        pfds[i].events |= POLLOUT;
                    pfds[i].revents = 0;
                }
                int n = ::poll(pfds.data(), pfds.size(), 100);
                if (n < 0 && errno != EINTR) { fatal("poll failed"); break; }
                auto now = Clock::now();
                for (size_t i = 0; i < slots.size() && n > 0; i++) {
                    if (!pfds[i].revents) continue;
                    Slot &s = slots[i];
                    if (!progress(s, pfds[i].revents, upd[i])) continue;
                    if (timed) {
                        auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - s.sent).count();
                        res.lat_us.push_back(static_cast<uint32_t>(us));
                        if (upd[i]) res.updates++; else res.reads++;
                        if (upd[i] && o.path == "update_pair" && pair_plain_half(s.index)) res.plain_updates++;
                        if (stop) continue;
                        bool u;
                        issue(s, rng, u);
                        upd[i] = u;
                    } else if (++done[i] < warm_per_slot) {
                        bool u;
                        issue(s, rng, u);
                        upd[i] = u;
                    } else if (++finished == slots.size()) {
                        return;
                    }
                }
            }
        };
        loop(false, 3);
        warmed++;
        while (!go && !stop) std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (stop) return;
        res.lat_us.reserve(1 << 20);
        loop(true, 0);
        // drain what is still outstanding so that connections are clean before closing
        for (auto &s : slots)
            if (s.state == Slot::PgWait) {
                PQsetnonblocking(s.pg, 0);
                while (PGresult *r = PQgetResult(s.pg)) PQclear(r);
            }
    }
};

}  // namespace

int run_load(const Options &o) {
    Runner R;
    R.o = o;
    R.kt = &key_type(o.keys.empty() ? "int" : o.keys);
    bool resp = is_resp_path(o.path);
    if (!resp && !is_sql_read(o.path) && o.path != "update" && o.path != "update_pair" && o.path != "update16")
        die("unknown path " + o.path);
    // the other key types: reads only (mixed and write mode update public.items)
    if (R.kt != &INT_KEYS && (o.mode == "mixed" || o.mode == "write"))
        die("--keys " + o.keys + " has no " + o.mode + " mode (reads only: warm, miss, cold)");
    if ((o.path == "resp_set" || o.path == "redis_set" || is_mset_path(o.path) || o.path == "update16" ||
         o.path == "update_pair") && o.mode != "write")
        die("path " + o.path + " needs --mode write");
    if (o.mode != "warm" && o.mode != "miss" && o.mode != "mixed" && o.mode != "cold" && o.mode != "write" &&
        o.mode != "serializable")
        die("unknown mode " + o.mode);
    if (o.mode == "serializable" && !is_sql_read(o.path)) die("--mode serializable needs an SQL read path");
    if (resp)  // every key a request may name: rows 1..rows and the miss mode's absent ones
        for (long long n = 0; n <= o.rows + o.batch + 1; n++) R.resp_keys.push_back(o.prefix + ":" + key_text(*R.kt, n));
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    int nthreads = std::max(1, std::min<int>(o.conns, static_cast<int>(cores * 2)));

    std::vector<std::vector<Slot>> slots(nthreads);
    for (int i = 0; i < o.conns; i++) {
        Slot s;
        s.index = i;
        bool need_pg = !resp || o.mode == "mixed";
        if (need_pg) {
            s.pg = tooling::pg_connect(o.pg);
            if (o.mode == "serializable") {
                tooling::pg_command(s.pg, "SET default_transaction_isolation = 'serializable'", "SET");
            }
            if (o.path == "update") tooling::pg_prepare(s.pg, "q", UPDATE_SQL, 2);
            else if (o.path == "update16") tooling::pg_prepare(s.pg, "q", UPDATE16_SQL, 2);
            else if (!resp && o.path != "update_pair")
                tooling::pg_prepare(s.pg, "q", statement(*R.kt, o.path).c_str(), key_params(*R.kt, o.path));
            bool plain_half = o.path == "update_pair" && pair_plain_half(i);
            if (o.path == "update_pair")
                tooling::pg_command(s.pg, std::string("SET application_name = 'local_cache_bench_") +
                                              (plain_half ? "plain'" : "cached'"), "SET application_name");
            tooling::pg_prepare(s.pg, "u", plain_half ? UPDATE_PLAIN_SQL : UPDATE_SQL, 2);
            if (PQsetnonblocking(s.pg, 1) != 0) die("PQsetnonblocking failed");
        }
        if (o.path == "resp_set" || o.path == "resp_mset")  // the writing role (the default RESP role may only read)
            s.resp = resp_connect(o.resp_port, o.resp_user, o.resp_password);
        else if (resp)
            s.resp = resp_connect(o.path == "resp" ? o.resp_port : o.redis_port);
        slots[i % nthreads].push_back(std::move(s));
    }
    std::vector<ThreadResult> results(nthreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < nthreads; t++)
        threads.emplace_back([&, t] { R.thread_main(slots[t], results[t], 12345u + t); });
    while (R.warmed < nthreads && !R.stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (R.stop) {
        for (auto &th : threads) th.join();
        die("warm-up failed: " + R.error);
    }
    std::printf("READY\n");
    std::fflush(stdout);
    std::string line;
    if (!std::getline(std::cin, line)) die("no GO line on stdin");
    double cpu0 = cpu_seconds();
    auto t0 = Clock::now();
    R.go = true;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    R.stop = true;
    for (auto &th : threads) th.join();
    double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    double cpu = cpu_seconds() - cpu0;
    if (R.failed) die("run failed: " + R.error);

    std::vector<uint32_t> lat;
    uint64_t reads = 0, updates = 0, plain_updates = 0;
    for (auto &r : results) {
        lat.insert(lat.end(), r.lat_us.begin(), r.lat_us.end());
        reads += r.reads;
        updates += r.updates;
        plain_updates += r.plain_updates;
    }
    std::sort(lat.begin(), lat.end());
    auto pct = [&](double p) { return static_cast<double>(pct_of(lat, p)); };
    std::printf("{\"requests\":%" PRIu64 ",\"reads\":%" PRIu64 ",\"updates\":%" PRIu64
                ",\"plain_updates\":%" PRIu64 ",\"elapsed_s\":%.6f,\"client_cpu_s\":%.6f,\"threads\":%d,"
                "\"latency_us\":{\"p50\":%.0f,\"p90\":%.0f,\"p99\":%.0f,\"p999\":%.0f,\"max\":%.0f}}\n",
                reads + updates, reads, updates, plain_updates, elapsed, cpu, nthreads, pct(50), pct(90), pct(99), pct(99.9),
                lat.empty() ? 0.0 : static_cast<double>(lat.back()));
    std::fflush(stdout);
    std::getline(std::cin, line);  // the caller reads server CPU before we disconnect
    for (auto &v : slots)
        for (auto &s : v)
            if (s.pg) PQfinish(s.pg);
    return 0;
}

}  // namespace loadgen
