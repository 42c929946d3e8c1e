// bench/loadgen_probes.cpp: owns the stale probes of `loadgen soak` (loadgen_soak.h): the
// probe writes, the rounds of reads on the primary and the standby, the verdict of each read,
// and the probes' JSON (interval counters, final results, delays and histograms).
#include "bench/loadgen_soak.h"

#include "tools/lib/pg_text.h"

#include <poll.h>

#include <rapidjson/document.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace loadgen {

using tooling::Reply;

// The version of a probe value "p<version>:<random>" (0 for the initial "p0:init"), -2 if it is none.
long long probe_version(const std::string &v) {
    if (v.size() < 3 || v[0] != 'p') return -2;
    size_t colon = v.find(':');
    if (colon == std::string::npos || colon == 1) return -2;
    long long n = 0;
    for (size_t i = 1; i < colon; i++) {
        if (v[i] < '0' || v[i] > '9') return -2;
        n = n * 10 + (v[i] - '0');
    }
    return n;
}

void Soak::event(const std::string &kind, const std::string &server, const std::string &path, long long id,
           const std::string &write_path, long long version, const std::string &written, const ProbeRead &rd,
           long long seen_version, long long baseline, double ms_after_commit) {
    std::string e = "{\"kind\":\"" + kind + "\",\"server\":\"" + server + "\",\"path\":\"" + path +
                    "\",\"row\":" + std::to_string(id) + ",\"write_path\":\"" + write_path +
                    "\",\"written_version\":" + std::to_string(version) + ",\"written_value\":" + tooling::json_string(written) +
                    ",\"seen\":" + (rd.missing ? std::string("null") : tooling::json_string(rd.value)) +
                    ",\"seen_version\":" + std::to_string(seen_version) +
                    ",\"standby_newest_seen_before\":" + (server == "standby" ? std::to_string(baseline) : std::string("null")) +
                    ",\"ms_after_commit\":" + std::to_string(ms_after_commit) + "}";
    std::lock_guard<std::mutex> g(probe_m);
    events_total++;
    if (events.size() < 50) {  // the first 50 are kept (and shown), the others counted
        std::fprintf(stderr, "loadgen soak: STALE PROBE %s\n", e.c_str());
        events.push_back(e);
    }
}

void Soak::probe_round(std::vector<ProbeRead> &reads, size_t from, size_t to, long long id) {
    const std::string arr = "{" + std::to_string(id) + "}", key = o.prefix + ":" + std::to_string(id);
    const char *vals[1] = {arr.c_str()};
    std::vector<char> done(reads.size(), 1);
    for (size_t i = from; i < to; i++) {
        done[i] = 0;
        auto &rd = reads[i];
        rd.missing = false;
        rd.value.clear();
        rd.error.clear();
        if (rd.pg) {
            if (!PQsendQueryPrepared(rd.pg, "p", 1, vals, nullptr, nullptr, 0))
                throw std::runtime_error("probe " + rd.path + ": " + PQerrorMessage(rd.pg));
        } else {
            rd.resp->send({"GET", key});
        }
    }
    size_t pending = to - from;
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (pending) {
        std::vector<pollfd> pfds;
        std::vector<size_t> idx;
        for (size_t i = 0; i < reads.size(); i++)
            if (!done[i]) {
                pfds.push_back({reads[i].pg ? PQsocket(reads[i].pg) : reads[i].resp->fd(), POLLIN, 0});
                idx.push_back(i);
            }
        int n = ::poll(pfds.data(), pfds.size(), 1000);
        if (n < 0 && errno != EINTR) throw std::runtime_error("probe: poll failed");
        if (Clock::now() > deadline) throw std::runtime_error("probe: no reply within 60 s");
        for (size_t j = 0; j < pfds.size(); j++) {
            if (!pfds[j].revents) continue;
            auto &rd = reads[idx[j]];
            if (rd.pg) {
                if (!PQconsumeInput(rd.pg)) throw std::runtime_error("probe " + rd.path + ": " + PQerrorMessage(rd.pg));
                bool finished = false;
                while (!PQisBusy(rd.pg)) {
                    PGresult *r = PQgetResult(rd.pg);
                    if (!r) { finished = true; break; }
                    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
                        rd.error = PQresultErrorMessage(r);
                    } else if (PQntuples(r) == 0 || PQgetisnull(r, 0, 0)) {
                        rd.missing = true;  // fdw: no row; mget: a NULL element
                    } else if (PQntuples(r) != 1 || std::atoll(PQgetvalue(r, 0, 0)) != id) {
                        rd.error = std::to_string(PQntuples(r)) + " rows, first id " + PQgetvalue(r, 0, 0);
                    } else {
                        rd.value = PQgetvalue(r, 0, 1);
                    }
                    PQclear(r);
                }
                if (!finished) continue;
            } else {
                rd.resp->receive();
                Reply v;
                if (rd.resp->take(&v) != tooling::ParseStatus::Complete) continue;
                if (v.type == '$' && v.is_null) {
                    rd.missing = true;
                } else if (!v.is_bulk()) {
                    rd.error = v.describe();
                } else {
                    rapidjson::Document d;
                    if (d.Parse(v.text.c_str()).HasParseError() || !d.IsObject() || !d.HasMember("id") ||
                        !d["id"].IsInt64() || d["id"].GetInt64() != id || !d.HasMember("value") || !d["value"].IsString())
                        rd.error = "GET answered " + v.text;
                    else
                        rd.value.assign(d["value"].GetString(), d["value"].GetStringLength());
                }
            }
            rd.replied = Clock::now();
            done[idx[j]] = 1;
            pending--;
        }
    }
}

void Soak::prober() {
    std::mt19937_64 rng(std::random_device{}());
    const auto interval = std::chrono::milliseconds(o.probe_interval_ms);
    std::vector<long long> standby_newest(o.probe_rows, -1);  // newest version any standby read showed
    const bool standby = !standby_reads.empty();
    // the primary's reads, then the standby's: [0, np) and [np, np + ns)
    std::vector<ProbeRead> all = primary_reads;
    all.insert(all.end(), standby_reads.begin(), standby_reads.end());
    const size_t np = primary_reads.size(), ns = standby_reads.size();
    auto start = Clock::now();
    try {
        for (uint64_t n = 0; !stop; n++) {
            auto at = start + interval * static_cast<long>(n);
            if (Clock::now() < at) nap(at - Clock::now());
            if (stop) break;
            const int row = static_cast<int>(n % o.probe_rows);
            const long long id = PROBE_BASE + 1 + row, version = static_cast<long long>(n) + 1;
            const std::string value = "p" + std::to_string(version) + ":" + random_value(rng).substr(0, 24);
            const std::string ids = std::to_string(id), write_path = n % 2 == 0 ? "update" : "resp_set";
            // the write; its reply comes after COMMIT
            if (write_path == "update") {
                const char *vals[2] = {ids.c_str(), value.c_str()};
                PGresult *r = PQexecPrepared(probe_write_pg, "u", 2, vals, nullptr, nullptr, 0);
                bool ok = PQresultStatus(r) == PGRES_COMMAND_OK && std::string(PQcmdTuples(r)) == "1";
                PQclear(r);
                if (!ok) throw std::runtime_error(std::string("probe UPDATE: ") + PQerrorMessage(probe_write_pg));
            } else {
                Reply v = probe_write_resp->call({"SET", o.prefix + ":" + ids, row_json(id, value)});
                if (!v.is_simple("OK")) throw std::runtime_error("probe SET answered " + v.describe());
            }
            const auto committed = Clock::now();
            auto ms_after = [&](const ProbeRead &rd) {
                return std::chrono::duration<double, std::milli>(rd.replied - committed).count();
            };
            // the first round: the primary's and the standby's reads, all sent before any reply is read
            probe_round(all, 0, np + ns, id);
            // the primary: exactly the new value on every path
            ServerStats pst;
            for (size_t i = 0; i < np; i++) {
                auto &rd = all[i];
                pst.observations++;
                pst.obs_by[rd.path]++;
                if (rd.error.empty() && !rd.missing && rd.value == value) continue;
                long long seen = rd.missing ? -1 : probe_version(rd.value);
                bool stale = rd.error.empty() && seen >= -1 && seen < version;
                (stale ? pst.stale : pst.wrong)++;
                (stale ? pst.stale_by : pst.wrong_by)[rd.path]++;
                event(stale ? "stale" : "wrong", "primary", rd.path, id, write_path, version, value, rd, seen, -1,
                      ms_after(rd));
                if (!rd.error.empty()) std::fprintf(stderr, "loadgen soak: probe error on the primary, %s: %s\n", rd.path.c_str(), rd.error.c_str());
            }
            // the standby: until every path shows it; never older than what the standby showed before
            ServerStats sst;
            uint32_t slowest = 0;
            if (standby) {
                std::vector<char> seen_new(ns, 0);
                std::vector<uint32_t> delay(ns, 0);
                const auto deadline = committed + std::chrono::milliseconds(o.probe_bound_ms);
                for (bool first = true;; first = false) {
                    if (!first) probe_round(all, np, np + ns, id);
                    long long newest = standby_newest[row];
                    for (size_t i = 0; i < ns; i++) {
                        auto &rd = all[np + i];
                        sst.observations++;
                        sst.obs_by[rd.path]++;
                        long long seen = !rd.error.empty() ? -2 : rd.missing ? -1 : probe_version(rd.value);
                        bool wrong = seen == -2 || seen > version || (seen == version && rd.value != value);
                        if (wrong) {
                            sst.wrong++;
                            sst.wrong_by[rd.path]++;
                            event("wrong", "standby", rd.path, id, write_path, version, value, rd, seen,
                                  standby_newest[row], ms_after(rd));
                            if (!rd.error.empty()) std::fprintf(stderr, "loadgen soak: probe error on the standby, %s: %s\n", rd.path.c_str(), rd.error.c_str());
                            continue;
                        }
                        if (seen < standby_newest[row]) {
                            sst.stale++;
                            sst.stale_by[rd.path]++;
                            event("stale", "standby", rd.path, id, write_path, version, value, rd, seen,
                                  standby_newest[row], ms_after(rd));
                        }
                        newest = std::max(newest, seen);
                        if (seen == version && !seen_new[i]) {
                            seen_new[i] = 1;
                            delay[i] = static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(rd.replied - committed).count());
                        }
                    }
                    standby_newest[row] = newest;  // later rounds must not go back behind it
                    if (std::all_of(seen_new.begin(), seen_new.end(), [](char c) { return c; })) break;
                    if (Clock::now() > deadline) {
                        for (size_t i = 0; i < ns; i++)
                            if (!seen_new[i]) {
                                sst.not_visible++;
                                sst.not_visible_by[all[np + i].path]++;
                                event("not_visible", "standby", all[np + i].path, id, write_path, version, value,
                                      all[np + i], standby_newest[row], standby_newest[row], ms_after(all[np + i]));
                            }
                        break;
                    }
                    std::this_thread::sleep_for(std::chrono::microseconds(200));
                }
                for (size_t i = 0; i < ns; i++)
                    if (seen_new[i]) {
                        sst.delays[all[np + i].path].push_back(delay[i]);
                        if (all[np + i].path != "sql") slowest = std::max(slowest, delay[i]);  // the cached paths
                    }
                if (std::all_of(seen_new.begin(), seen_new.end(), [](char c) { return c; })) sst.delays_all.push_back(slowest);
            }
            std::lock_guard<std::mutex> g(probe_m);
            probes++;
            interval_probes++;
            (write_path == "update" ? probes_update : probes_resp_set)++;
            for (auto pr : {std::make_pair(&primary_st, &pst), std::make_pair(&standby_st, &sst)}) {
                ServerStats &t = *pr.first, &s = *pr.second;
                t.observations += s.observations;
                t.stale += s.stale;
                t.wrong += s.wrong;
                t.not_visible += s.not_visible;
                for (auto &kv : s.obs_by) t.obs_by[kv.first] += kv.second;
                for (auto &kv : s.stale_by) t.stale_by[kv.first] += kv.second;
                for (auto &kv : s.wrong_by) t.wrong_by[kv.first] += kv.second;
                for (auto &kv : s.not_visible_by) t.not_visible_by[kv.first] += kv.second;
                for (auto &kv : s.delays) t.delays[kv.first].insert(t.delays[kv.first].end(), kv.second.begin(), kv.second.end());
                t.delays_all.insert(t.delays_all.end(), s.delays_all.begin(), s.delays_all.end());
            }
            interval_delays.insert(interval_delays.end(), sst.delays_all.begin(), sst.delays_all.end());
        }
    } catch (const std::exception &e) {
        fatal(std::string("stale probes: ") + e.what());
    }
}

std::string Soak::delay_json(std::vector<uint32_t> v) {
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (auto x : v) sum += x;
    char buf[256];
    std::snprintf(buf, sizeof buf, "{\"count\":%zu,\"mean\":%.0f,\"min\":%u,\"p50\":%u,\"p90\":%u,\"p99\":%u,\"max\":%u}",
                  v.size(), v.empty() ? 0.0 : sum / v.size(), v.empty() ? 0u : v.front(), pct_of(v, 50), pct_of(v, 90),
                  pct_of(v, 99), v.empty() ? 0u : v.back());
    return buf;
}

std::string Soak::histogram_json(const std::vector<uint32_t> &v) {
    static const uint32_t edges[] = {100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000,
                                     1000000, 2000000, 5000000, 10000000};
    std::vector<uint64_t> counts(std::size(edges) + 1, 0);
    for (auto x : v) counts[std::upper_bound(std::begin(edges), std::end(edges), x - 1) - std::begin(edges)]++;
    std::string s = "[";
    for (size_t i = 0; i < counts.size(); i++) {
        if (i) s += ",";
        s += "[" + (i < std::size(edges) ? std::to_string(edges[i]) : std::string("null")) + "," + std::to_string(counts[i]) + "]";
    }
    return s + "]";
}

std::string Soak::by_path(const ServerStats &s, bool standby) const {
    std::string out = "{";
    bool first = true;
    for (const char *p : {"mget", "fdw", "resp", "sql"}) {
        auto get = [&](const std::map<std::string, uint64_t> &m) { auto it = m.find(p); return it == m.end() ? 0 : it->second; };
        if (!first) out += ",";
        first = false;
        out += std::string("\"") + p + "\":{\"observations\":" + std::to_string(get(s.obs_by)) +
               ",\"stale\":" + std::to_string(get(s.stale_by)) + ",\"wrong\":" + std::to_string(get(s.wrong_by));
        if (standby) {
            auto it = s.delays.find(p);
            std::vector<uint32_t> d = it == s.delays.end() ? std::vector<uint32_t>{} : it->second;
            out += ",\"not_visible_within_bound\":" + std::to_string(get(s.not_visible_by)) +
                   ",\"delay_us\":" + delay_json(d) + ",\"delay_histogram_us\":" + histogram_json(d);
        }
        out += "}";
    }
    return out + "}";
}

std::string Soak::probe_interval_json() {
    std::lock_guard<std::mutex> g(probe_m);
    std::vector<uint32_t> d;
    d.swap(interval_delays);
    std::sort(d.begin(), d.end());
    std::string s = "{\"probes\":" + std::to_string(probes) + ",\"in_interval\":" + std::to_string(interval_probes) +
                    ",\"primary_stale\":" + std::to_string(primary_st.stale) +
                    ",\"standby_stale\":" + std::to_string(standby_st.stale) +
                    ",\"wrong\":" + std::to_string(primary_st.wrong + standby_st.wrong) +
                    ",\"standby_not_visible\":" + std::to_string(standby_st.not_visible) +
                    ",\"standby_delay_us\":" + delay_json(d) + "}";
    interval_probes = 0;
    return s;
}

std::string Soak::probes_final_json() {
    std::lock_guard<std::mutex> g(probe_m);
    std::string s = "{\"probes\":" + std::to_string(probes) + ",\"interval_ms\":" + std::to_string(o.probe_interval_ms) +
                    ",\"rows\":" + std::to_string(o.probe_rows) + ",\"write_paths\":{\"update\":" +
                    std::to_string(probes_update) + ",\"resp_set\":" + std::to_string(probes_resp_set) + "}" +
                    ",\"primary\":{\"observations\":" + std::to_string(primary_st.observations) +
                    ",\"stale\":" + std::to_string(primary_st.stale) + ",\"wrong\":" + std::to_string(primary_st.wrong) +
                    ",\"by_path\":" + by_path(primary_st, false) + "}";
    if (standby_reads.empty()) {
        s += ",\"standby\":null";
    } else {
        s += ",\"standby\":{\"observations\":" + std::to_string(standby_st.observations) +
             ",\"stale\":" + std::to_string(standby_st.stale) + ",\"wrong\":" + std::to_string(standby_st.wrong) +
             ",\"not_visible_within_bound\":" + std::to_string(standby_st.not_visible) +
             ",\"bound_ms\":" + std::to_string(o.probe_bound_ms) + ",\"by_path\":" + by_path(standby_st, true) +
             ",\"delay_all_paths_us\":" + delay_json(standby_st.delays_all) +
             ",\"delay_all_paths_histogram_us\":" + histogram_json(standby_st.delays_all) + "}";
    }
    s += ",\"events_total\":" + std::to_string(events_total) + ",\"events\":[";
    for (size_t i = 0; i < events.size(); i++) s += (i ? "," : "") + events[i];
    return s + "]}";
}

bool Soak::probes_clean() {
    std::lock_guard<std::mutex> g(probe_m);
    return primary_st.stale + primary_st.wrong + standby_st.stale + standby_st.wrong + standby_st.not_visible == 0;
}

}  // namespace loadgen
