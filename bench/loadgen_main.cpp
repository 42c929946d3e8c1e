// bench/loadgen_main.cpp: owns the command line of the native closed-loop load generator
// (bench/loadgen) of the benchmark harness, and says what the program does:
//
//   loadgen check --pg CONNINFO --resp-port P --redis-port R [--keys int,uuid,text,pair] [--prefix P]
//                 [--resp-user U --resp-password W]
//       compares every read path with prepared SQL (result contract) for each key type (default:
//       all), the SQL paths with text and with binary key arrays, then the writes (public.items):
//       RESP SET (as U) seen by SQL and RESP GET, SQL UPDATE seen by RESP GET, redis-server SET,
//       then on 16 rows RESP MSET (as U) and the 16-row UPDATE seen by SQL and RESP MGET,
//       redis-server MSET; exit 1 on a difference
//   loadgen run --pg CONNINFO --path PATH --conns N --batch B --seconds S
//               [--mode warm|miss|mixed|cold|write|serializable] [--keys int|uuid|text|pair] [--params text|binary]
//               [--resp-port P] [--redis-port R] [--resp-user U --resp-password W]
//       PATH: sql | mget | mget_json | fdw | resp | redis        (reads of B keys)
//             parse: `SELECT cardinality($1::bigint[])`, mget's key array without the reads
//             (the control: what the server spends on receiving and parsing the keys)
//             update | resp_set | redis_set                      (writes of one random row)
//             update_pair: update on even connections, the same UPDATE of public.items_plain (the
//             rows of public.items in a table never cached) on odd ones, each connection's
//             application_name local_cache_bench_cached or _plain; plain_updates counts the latter
//             update16 | resp_mset | redis_mset                  (writes of 16 random rows)
//       update is the prepared SQL UPDATE; resp_set is `SET items:<id> {"id":<id>,"value":"..."}`
//       to the RESP port, as U (AUTH U W on every connection) when --resp-user is given;
//       redis_set the same bytes to redis-server. The 16-row paths (--mode write; 16 distinct
//       random rows, ascending ids, per request): update16 is ONE prepared `UPDATE public.items AS t
//       SET value = v.value FROM unnest($1::bigint[], $2::text[]) AS v(id, value) WHERE t.id = v.id`
//       (every reply must say UPDATE 16); resp_mset `MSET items:<id1> <json1> ... items:<id16>
//       <json16>` of the objects SET sends, as U; redis_mset the same bytes to redis-server.
//       serializable: the warm mode's requests, each its own SERIALIZABLE transaction (the
//       connections' default_transaction_isolation), for the SQL read paths.
//       miss: every other key of a request has no row (ids rows+1, rows+2, ... are absent), the
//       same keys in every request like warm; with --batch 1 requests alternate between id 1 and
//       id rows+1. Every reply must have exactly the expected number of NULLs / nils (RESP) or rows.
//       --keys (reads of the warm, miss and cold modes): the table of the key type (see KEY_TYPES:
//       int public.items, uuid public.items_uuid, text public.items_text, pair public.items_pair
//       with the composite key (a, b)), the same rows under keys of that type; the statements and
//       the RESP keys follow from it (`loadgen keys` prints them)
//       --params (the SQL read paths): the key arrays as text parameters (array literals, the
//       default) or binary ones (PostgreSQL's binary array format, as pgx and other binary-protocol
//       drivers send a uuid[]: the server then runs array_recv and uuid_recv/int8recv/textrecv
//       instead of array_in and the type's input function); results are text either way
//   loadgen keys [--keys LIST]
//       one JSON line describing the key types: tables, key columns, the statements of the SQL
//       read paths, the parameters and the RESP keys of rows 1 and 2
//   loadgen resp-keys --keys TYPE --batch B
//       the RESP keys of rows 1..B of the key type's table, one per line (the keys of
//       redis-benchmark's fixed MGET in bench/driver.py)
//   loadgen soak --pg CONNINFO --resp-port P --redis-port R --resp-user U --resp-password W
//                --seconds S --interval I [--conns N] [--batch B] [--write-rate W]
//                [--probe-interval-ms M] [--probe-bound-ms X] [--probe-rows K]
//                [--standby-pg CONNINFO --standby-resp-port P2]
//       every path at once for S seconds (readers: mget, fdw, resp, redis, N connections each;
//       writers: update, resp_set, redis_set, W/s each), one JSON line per interval I, then a
//       final line with the stale probes' results; exit 1 on a stale, wrong or never visible probe
//       observation (see loadgen_soak.h)
//
// `run` connects, prepares and warms every connection, prints "READY" and waits for a line on
// stdin; then it runs for S seconds (one outstanding request per connection, closed loop),
// prints one JSON line with its counts, latency percentiles and its own CPU time, and waits
// for another line (or EOF) before it disconnects, so that the caller can read the server's
// CPU counters while the server processes still exist.
//
// SQL goes through libpq in non-blocking mode (prepared statements, text results); RESP
// through tools/lib's client. Threads: min(connections, 2 x cores), each driving its share of
// the connections with poll().
//
// The parts: loadgen.h (what they share), loadgen_keys.cpp (key types, statements, parameters,
// `keys` and `resp-keys`), loadgen_client.cpp (connections, request values, measurements),
// loadgen_check.cpp (`check`), loadgen_run.cpp (`run`), loadgen_soak.h, loadgen_soak.cpp and
// loadgen_probes.cpp (`soak` and its stale probes); RESP and libpq through tools/lib/.
#include "bench/loadgen.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace loadgen {

[[noreturn]] void die(const std::string &msg) {
    std::fprintf(stderr, "loadgen: %s\n", msg.c_str());
    std::exit(2);
}

namespace {

// The command; every error of the tools library (connections, RESP, libpq) ends the run as die() does.
int dispatch(Options &o) {
    if (o.cmd == "check") return run_check(o);
    if (o.cmd == "keys") return run_describe(o);
    // run and soak: one key type (soak: int), the RESP prefix its table's name unless --prefix
    const KeyType &kt = key_type(o.keys.empty() ? "int" : o.keys);
    o.prefix = resp_prefix(o, kt);
    if (o.cmd == "run") return run_load(o);
    if (o.cmd == "resp-keys") return run_resp_keys(o, kt);
    if (o.cmd == "soak") {
        if (&kt != &INT_KEYS) die("soak reads public.items only (no --keys)");
        return run_soak(o);
    }
    die("unknown command " + o.cmd);
}

}  // namespace

}  // namespace loadgen

int main(int argc, char **argv) {
    using namespace loadgen;
    Options o;
    if (argc < 2) die("usage: loadgen check|run|soak|keys|resp-keys [options] (see the header of bench/loadgen_main.cpp)");
    o.cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) die("missing value for " + a);
            return argv[++i];
        };
        if (a == "--pg") o.pg = val();
        else if (a == "--path") o.path = val();
        else if (a == "--mode") o.mode = val();
        else if (a == "--prefix") o.prefix = val();
        else if (a == "--keys") o.keys = val();
        else if (a == "--params") o.params = val();
        else if (a == "--resp-port") o.resp_port = std::stoi(val());
        else if (a == "--redis-port") o.redis_port = std::stoi(val());
        else if (a == "--resp-user") o.resp_user = val();
        else if (a == "--resp-password") o.resp_password = val();
        else if (a == "--conns") o.conns = std::stoi(val());
        else if (a == "--batch") o.batch = std::stoi(val());
        else if (a == "--seconds") o.seconds = std::stod(val());
        else if (a == "--update-pct") o.update_pct = std::stoi(val());
        else if (a == "--hot") o.hot = std::stoi(val());
        else if (a == "--rows") o.rows = std::stoi(val());
        else if (a == "--interval") o.interval = std::stod(val());
        else if (a == "--write-rate") o.write_rate = std::stod(val());
        else if (a == "--standby-pg") o.standby_pg = val();
        else if (a == "--standby-resp-port") o.standby_resp_port = std::stoi(val());
        else if (a == "--probe-interval-ms") o.probe_interval_ms = std::stoi(val());
        else if (a == "--probe-bound-ms") o.probe_bound_ms = std::stoi(val());
        else if (a == "--probe-rows") o.probe_rows = std::stoi(val());
        else die("unknown option " + a);
    }
    if (o.params != "text" && o.params != "binary") die("--params: text or binary, not " + o.params);
    try {
        return dispatch(o);
    } catch (const std::exception &e) {
        die(e.what());
    }
}
