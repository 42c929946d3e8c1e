// bench/loadgen_soak.cpp: owns the load of `loadgen soak` (loadgen_soak.h): the paced and
// closed-loop paths, their connections, the interval lines and the final line.
#include "bench/loadgen_soak.h"

#include "tools/lib/pg_text.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace loadgen {

using tooling::Reply;

void Soak::fatal(const std::string &msg) {
    std::lock_guard<std::mutex> g(err_m);
    if (error.empty()) error = msg;
    stop = true;
}

SoakPath &Soak::path(const std::string &name) {
    for (auto &p : paths)
        if (p->name == name) return *p;
    paths.push_back(std::make_unique<SoakPath>());
    paths.back()->name = name;
    return *paths.back();
}

void Soak::record(SoakPath &p, Clock::time_point t0) {
    uint32_t us = static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
    std::lock_guard<std::mutex> g(p.m);
    p.lat.push_back(us);
    p.total++;
}

void Soak::nap(Clock::duration d) {
    auto until = Clock::now() + d;
    while (!stop) {
        auto now = Clock::now();
        if (now >= until) return;
        std::this_thread::sleep_for(std::min<Clock::duration>(until - now, std::chrono::milliseconds(50)));
    }
}

void Soak::reader(SoakPath &P, PGconn *pg, tooling::RespClient *resp, unsigned seed) {
    std::mt19937_64 rng(seed);
    const std::string &path = P.name;
    std::vector<long long> k(o.batch);
    while (!stop) {
        long long start = static_cast<long long>(rng() % o.rows);
        for (int i = 0; i < o.batch; i++) k[i] = (start + i) % o.rows + 1;
        auto t0 = Clock::now();
        std::string err;
        if (pg) {
            std::string arr = array_literal(std::vector<std::optional<long long>>(k.begin(), k.end()));
            const char *vals[1] = {arr.c_str()};
            PGresult *r = PQexecPrepared(pg, "q", 1, vals, nullptr, nullptr, 0);
            if (PQresultStatus(r) != PGRES_TUPLES_OK) {
                err = std::string("query failed: ") + PQerrorMessage(pg);
            } else if (path == "mget") {  // one JSON array, element i the row of key i
                rapidjson::Document d;
                if (PQntuples(r) != 1 || d.Parse(PQgetvalue(r, 0, 0)).HasParseError() || !d.IsArray() ||
                    d.Size() != k.size()) {
                    err = "mget answered " + std::string(PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "no row").substr(0, 200);
                } else {
                    for (size_t i = 0; i < k.size() && err.empty(); i++)
                        if (!d[i].IsObject() || !d[i].HasMember("id") || !d[i]["id"].IsInt64() || d[i]["id"].GetInt64() != k[i])
                            err = "mget element " + std::to_string(i) + " is not the row of key " + std::to_string(k[i]);
                }
            } else {  // fdw: the set of the keys' rows
                std::vector<long long> ids;
                for (int i = 0; i < PQntuples(r); i++) ids.push_back(std::atoll(PQgetvalue(r, i, 0)));
                std::sort(ids.begin(), ids.end());
                std::vector<long long> want = k;
                std::sort(want.begin(), want.end());
                if (ids != want) err = "fdw answered " + std::to_string(ids.size()) + " rows, not the keys' " + std::to_string(want.size());
            }
            PQclear(r);
        } else {
            std::vector<std::string> args = {"MGET"};
            for (auto x : k) args.push_back(o.prefix + ":" + std::to_string(x));
            Reply v = resp->call(args);
            if (v.type != '*' || v.is_null || v.elements.size() != k.size()) {
                err = "MGET answered " + v.describe();
            } else {
                for (size_t i = 0; i < k.size() && err.empty(); i++) {
                    const std::string head = "{\"id\":" + std::to_string(k[i]) + ",";
                    if (!v.elements[i].is_bulk() || v.elements[i].text.compare(0, head.size(), head) != 0)
                        err = "MGET element " + std::to_string(i) + ": " + v.elements[i].describe().substr(0, 200) +
                              ", expected the row of key " + std::to_string(k[i]);
                }
            }
        }
        if (!err.empty()) return fatal(path + ": " + err);
        record(P, t0);
    }
}

void Soak::writer(SoakPath &P, PGconn *pg, tooling::RespClient *resp, unsigned seed) {
    std::mt19937_64 rng(seed);
    const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / o.write_rate));
    auto next = Clock::now();
    while (!stop) {
        auto now = Clock::now();
        if (now < next) {
            nap(next - now);
            continue;
        }
        if (now - next > std::chrono::seconds(1)) next = now;  // fell behind: no catch-up burst
        next += period;
        long long id = static_cast<long long>(rng() % o.rows) + 1;
        std::string ids = std::to_string(id), val = random_value(rng), err;
        auto t0 = Clock::now();
        if (pg) {
            const char *vals[2] = {ids.c_str(), val.c_str()};
            PGresult *r = PQexecPrepared(pg, "u", 2, vals, nullptr, nullptr, 0);
            if (PQresultStatus(r) != PGRES_COMMAND_OK || std::string(PQcmdTuples(r)) != "1")
                err = std::string("UPDATE failed: ") + PQerrorMessage(pg);
            PQclear(r);
        } else {
            Reply v = resp->call({"SET", o.prefix + ":" + ids, row_json(id, val)});
            if (!v.is_simple("OK")) err = "SET answered " + v.describe();
        }
        if (!err.empty()) return fatal(P.name + ": " + err);
        record(P, t0);
    }
}

int run_soak(const Options &o) {
    if (o.seconds <= 0 || o.interval <= 0) die("soak needs --seconds and --interval > 0");
    if (o.write_rate <= 0) die("soak needs --write-rate > 0");
    Soak S;
    S.o = o;
    std::vector<std::string> reads = {"mget", "fdw", "resp"}, writes = {"update", "resp_set"};
    if (o.redis_port) {  // the reference: the same reads and writes to redis-server
        reads.push_back("redis");
        writes.push_back("redis_set");
    }
    std::vector<PGconn *> pgs;
    std::vector<std::unique_ptr<tooling::RespClient>> clients;
    auto resp_client = [&](int port, const std::string &user = "", const std::string &password = "") {
        clients.push_back(std::make_unique<tooling::RespClient>(resp_connect(port, user, password)));
        return clients.back().get();
    };
    struct Worker { std::string path; bool write; PGconn *pg; tooling::RespClient *resp; };
    std::vector<Worker> workers;
    for (auto &p : reads) {
        S.path(p);
        for (int i = 0; i < o.conns; i++) {
            Worker w{p, false, nullptr, nullptr};
            if (p == "mget" || p == "fdw") {
                w.pg = tooling::pg_connect(o.pg);
                tooling::pg_prepare(w.pg, "q", statement(INT_KEYS, p).c_str(), 1);
                pgs.push_back(w.pg);
            } else {
                w.resp = resp_client(p == "resp" ? o.resp_port : o.redis_port);
            }
            workers.push_back(w);
        }
    }
    for (auto &p : writes) {
        S.path(p);
        Worker w{p, true, nullptr, nullptr};
        if (p == "update") {
            w.pg = tooling::pg_connect(o.pg);
            tooling::pg_prepare(w.pg, "u", UPDATE_SQL, 2);
            pgs.push_back(w.pg);
        } else {
            w.resp = p == "resp_set" ? resp_client(o.resp_port, o.resp_user, o.resp_password) : resp_client(o.redis_port);
        }
        workers.push_back(w);
    }
    // the stale probes' rows, connections and statements
    const bool probing = o.probe_interval_ms > 0;
    if (probing) {
        if (o.probe_rows < 1) die("--probe-rows must be at least 1");
        S.probe_write_pg = tooling::pg_connect(o.pg);
        pgs.push_back(S.probe_write_pg);
        std::string sql = "INSERT INTO public.items SELECT g, 'p0:init' FROM generate_series(" + std::to_string(PROBE_BASE + 1) +
                          ", " + std::to_string(PROBE_BASE + o.probe_rows) + ") g ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value";
        tooling::pg_command(S.probe_write_pg, sql, "inserting the probe rows");
        tooling::pg_prepare(S.probe_write_pg, "u", UPDATE_SQL, 2);
        S.probe_write_resp = resp_client(o.resp_port, o.resp_user, o.resp_password);
        auto reads_of = [&](const std::string &conninfo, int resp_port, std::vector<ProbeRead> &out) {
            for (const char *p : {"mget", "fdw", "resp", "sql"}) {  // sql: the control, the table without the cache
                ProbeRead rd;
                rd.path = p;
                if (rd.path == "resp") {
                    rd.resp = resp_client(resp_port);
                } else {
                    rd.pg = tooling::pg_connect(conninfo);
                    tooling::pg_prepare(rd.pg, "p", rd.path == "mget" ? PROBE_MGET_SQL : statement(INT_KEYS, rd.path).c_str(), 1);
                    pgs.push_back(rd.pg);
                }
                out.push_back(rd);
            }
        };
        reads_of(o.pg, o.resp_port, S.primary_reads);
        if (!o.standby_pg.empty()) {
            if (!o.standby_resp_port) die("--standby-pg needs --standby-resp-port");
            reads_of(o.standby_pg, o.standby_resp_port, S.standby_reads);
            // wait (bounded) until the standby has replayed the probe rows
            PGconn *sc = tooling::pg_connect(o.standby_pg);
            std::string q = "SELECT count(*) FROM public.items WHERE id > " + std::to_string(PROBE_BASE) + " AND value = 'p0:init'";
            auto until = Clock::now() + std::chrono::seconds(60);
            for (;;) {
                PGresult *c = PQexec(sc, q.c_str());
                bool ok = PQresultStatus(c) == PGRES_TUPLES_OK && std::atoi(PQgetvalue(c, 0, 0)) == o.probe_rows;
                PQclear(c);
                if (ok) break;
                if (Clock::now() > until) die("the standby did not replay the probe rows within 60 s");
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            PQfinish(sc);
        }
    }
    std::printf("READY\n");
    std::fflush(stdout);
    std::string line;
    if (!std::getline(std::cin, line)) die("no GO line on stdin");

    unsigned seed = 777;
    for (auto &w : workers) {
        SoakPath &P = S.path(w.path);
        if (w.write)
            S.threads.emplace_back([&S, &P, w, seed] {
                try {
                    S.writer(P, w.pg, w.resp, seed);
                } catch (const std::exception &e) {
                    S.fatal(P.name + ": " + e.what());
                }
            });
        else
            S.threads.emplace_back([&S, &P, w, seed] {
                try {
                    S.reader(P, w.pg, w.resp, seed);
                } catch (const std::exception &e) {
                    S.fatal(P.name + ": " + e.what());
                }
            });
        seed += 7919;
    }
    if (probing) S.threads.emplace_back([&S] { S.prober(); });

    const auto t0 = Clock::now();
    const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
    const auto step = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.interval));
    auto last = t0;
    double cpu_last = cpu_seconds(), cpu_start = cpu_last;
    for (auto next = t0 + step; !S.stop; next += step) {
        auto until = std::min(next, end);
        while (!S.stop && Clock::now() < until)
            std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(50)));
        if (S.stop) break;
        auto now = Clock::now();
        double secs = std::chrono::duration<double>(now - last).count(), cpu = cpu_seconds();
        std::string s = "{\"t\":" + std::to_string(std::chrono::duration<double>(now - t0).count()) +
                        ",\"interval_s\":" + std::to_string(secs) + ",\"client_cpu_s\":" + std::to_string(cpu - cpu_last) +
                        ",\"paths\":{";
        bool first = true;
        for (auto &p : S.paths) {
            std::vector<uint32_t> lat;
            {
                std::lock_guard<std::mutex> g(p->m);
                lat.swap(p->lat);
            }
            std::sort(lat.begin(), lat.end());
            char buf[256];
            std::snprintf(buf, sizeof buf, "\"%s\":{\"requests\":%zu,\"rps\":%.1f,\"p50_us\":%u,\"p99_us\":%u,\"max_us\":%u}",
                          p->name.c_str(), lat.size(), lat.size() / secs, pct_of(lat, 50), pct_of(lat, 99),
                          lat.empty() ? 0u : lat.back());
            s += (first ? "" : ",") + std::string(buf);
            first = false;
        }
        s += "}";
        if (probing) s += ",\"probes\":" + S.probe_interval_json();
        s += "}";
        std::printf("%s\n", s.c_str());
        std::fflush(stdout);
        last = now;
        cpu_last = cpu;
        if (now >= end) break;
    }
    S.stop = true;
    for (auto &t : S.threads) t.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    std::string s = "{\"final\":true,\"elapsed_s\":" + std::to_string(elapsed) +
                    ",\"client_cpu_s\":" + std::to_string(cpu_seconds() - cpu_start) + ",\"requests\":{";
    for (size_t i = 0; i < S.paths.size(); i++)
        s += (i ? ",\"" : "\"") + S.paths[i]->name + "\":" + std::to_string(S.paths[i]->total);
    s += "}";
    if (probing) s += ",\"stale_probes\":" + S.probes_final_json();
    s += ",\"error\":" + (S.error.empty() ? std::string("null") : tooling::json_string(S.error)) + "}";
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
    std::getline(std::cin, line);  // the caller reads server CPU before we disconnect
    for (auto *c : pgs) PQfinish(c);
    if (!S.error.empty()) {
        std::fprintf(stderr, "loadgen soak: %s\n", S.error.c_str());
        return 2;
    }
    return probing && !S.probes_clean() ? 1 : 0;
}

}  // namespace loadgen
