// bench/loadgen_soak.h: owns what the two halves of `loadgen soak` share: the paths' latency
// records, the stale probes' reads and counters, and the Soak run's state (its load and interval
// lines in loadgen_soak.cpp, its stale probes and their JSON in loadgen_probes.cpp).
//
// Every path at once for a long time: closed-loop readers (SQL mget, the FDW, RESP MGET and, as
// the reference, redis-server MGET; --conns connections each, --batch consecutive keys from a
// random start) beside paced writers (SQL UPDATE, RESP SET as --resp-user, redis-server SET;
// --write-rate requests/s each, one random row with a fresh value). Every --interval seconds one
// JSON line per interval: per path requests, requests/s, p50/p99/max latency; the client's CPU;
// the stale probes' counters. The caller samples server CPU and memory when a line arrives.
//
// Stale probes (--probe-interval-ms, 0: none): a writer commits a new value of one of
// --probe-rows dedicated rows (ids 1000001.., alternately by SQL UPDATE and RESP SET) and, right
// after the COMMIT (the UPDATE's or SET's reply), reads it through mget (typed rows of the
// record[]), the FDW and RESP GET on the primary — and prepared SQL on the table as the control —
// all sent before any reply is read: each must be exactly the new value, else it is stale (an
// older version) or wrong. With a standby (--standby-pg, --standby-resp-port) the same reads go
// to the standby, in the same first round and then in rounds 0.2 ms apart until each has shown
// the new value (at most --probe-bound-ms after the COMMIT), recording per path the delay from
// the COMMIT's reply to the reply that first showed it (the control's delay is the replay's; a
// cached path slower than it would be the cache lagging). On the standby a read is stale if it
// shows a version older than one any standby read already showed (in an earlier round): once
// the standby has shown a commit, no later read may go back.

#pragma once

#include "bench/loadgen.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace loadgen {

const long long PROBE_BASE = 1000000;
inline const char *const PROBE_MGET_SQL =
    "SELECT r.id, r.value FROM (SELECT local_cache.mget('public.items'::regclass, $1::bigint[]) AS rows OFFSET 0) m, "
    "unnest(m.rows) AS r(id bigint, value text)";

struct SoakPath {
    std::string name;
    std::mutex m;
    std::vector<uint32_t> lat;  // this interval's latencies
    uint64_t total = 0;
};

struct ProbeRead {
    std::string path;  // mget | fdw | resp | sql (the control: the table, no cache)
    PGconn *pg = nullptr;
    tooling::RespClient *resp = nullptr;
    // result of the last round
    bool missing = false;
    std::string value, error;
    Clock::time_point replied;
};

// The version of a probe value "p<version>:<random>" (0 for the initial "p0:init"), -2 if it is none.
long long probe_version(const std::string &v);

struct Soak {
    Options o;
    std::atomic<bool> stop{false};
    std::mutex err_m;
    std::string error;
    std::vector<std::unique_ptr<SoakPath>> paths;
    std::vector<std::thread> threads;

    void fatal(const std::string &msg);
    SoakPath &path(const std::string &name);
    void record(SoakPath &p, Clock::time_point t0);
    // sleeps up to d, in slices, returning early when stopped
    void nap(Clock::duration d);

    // ---------------------------------------------------------- load (loadgen_soak.cpp)
    void reader(SoakPath &P, PGconn *pg, tooling::RespClient *resp, unsigned seed);
    void writer(SoakPath &P, PGconn *pg, tooling::RespClient *resp, unsigned seed);

    // ---------------------------------------------------------- stale probes (loadgen_probes.cpp)
    struct ServerStats {
        uint64_t observations = 0, stale = 0, wrong = 0, not_visible = 0;
        std::map<std::string, uint64_t> obs_by, stale_by, wrong_by, not_visible_by;
        std::map<std::string, std::vector<uint32_t>> delays;  // standby: per path, µs from COMMIT to visible
        std::vector<uint32_t> delays_all;                      // standby: per probe, the slowest path
    };
    std::mutex probe_m;
    uint64_t probes = 0, probes_update = 0, probes_resp_set = 0;
    ServerStats primary_st, standby_st;
    std::vector<uint32_t> interval_delays;  // this interval's delays_all
    uint64_t interval_probes = 0;
    std::vector<std::string> events;
    uint64_t events_total = 0;
    PGconn *probe_write_pg = nullptr;
    tooling::RespClient *probe_write_resp = nullptr;
    std::vector<ProbeRead> primary_reads, standby_reads;

    void event(const std::string &kind, const std::string &server, const std::string &path, long long id,
               const std::string &write_path, long long version, const std::string &written, const ProbeRead &rd,
               long long seen_version, long long baseline, double ms_after_commit);
    // Sends the read of row id on the connections reads[from, to), then waits for every reply.
    void probe_round(std::vector<ProbeRead> &reads, size_t from, size_t to, long long id);
    void prober();

    // ---------------------------------------------------------- output (loadgen_probes.cpp)
    static std::string delay_json(std::vector<uint32_t> v);
    static std::string histogram_json(const std::vector<uint32_t> &v);
    std::string by_path(const ServerStats &s, bool standby) const;
    // the probes' part of an interval line (cumulative counters, this interval's standby delays)
    std::string probe_interval_json();
    std::string probes_final_json();
    bool probes_clean();
};

}  // namespace loadgen
