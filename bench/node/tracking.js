'use strict';
// bench/node/tracking.js: the tracking mode of the benchmark (bench/run tracking, issues #29, 43):
// server-assisted client-side caching measured with node-redis (v6, the `redis6` alias) and
// node-postgres. One JSON line on stdout per run, progress on stderr.
//
//   node tracking.js delay --pg CONNINFO --resp-port P [--trackers 50] [--rounds 300] [--hot 128]
//                          [--sync-commit on] [--push-port P2 --standby-pg CONNINFO2]
//                          [--ddl vacuum_full,cluster,truncate_side,alter [--ddl-interval-ms 250]
//                           [--lock-readers 4] [--lock-reader-pause-ms 10]]
//     The push delay: `trackers` RESP3 connections with CLIENT TRACKING ON (node-redis's
//     emitInvalidate) to port `push-port` (default: resp-port, the primary's; a standby's RESP port
//     with --standby-pg), spread over the RESP workers as the server's SO_REUSEPORT places them (the
//     result counts them per worker), each reads items:<id>; on the primary (with `SET
//     synchronous_commit` = --sync-commit first, when given) `BEGIN; UPDATE ... WHERE id = <id>
//     RETURNING pg_current_xact_id()` runs and then a timed `COMMIT`; per tracking connection, the
//     time from the COMMIT's return to its client (the pg promise) to the push naming the key (the
//     'invalidate' event), and in from_send_us from the COMMIT's send. A push that arrived before
//     the COMMIT returned counts as 0 (`before_return` says how many did). Rounds cycle over `hot` rows; 10 rounds of warm-up are
//     not counted; a push missing after 2 s is counted, not waited for.
//     A null push (a flush: the DDL's own) is counted in `flush_pushes`; a connection it reached
//     after its read and before the key's push untracked the key, so no key push follows: that
//     connection's round counts in `covered_by_flush` (its delay in flush_from_return_us), neither
//     as a key push nor as missing.
//     --standby-pg: from just before each COMMIT is sent, a thread of its own (so that the pushes
//     arriving do not hold up its replies) polls the standby back to back with
//     `pg_visible_in_snapshot(xid, pg_current_snapshot())` until a new snapshot there sees the
//     transaction: the replay delay of that commit (`replay.from_return_us`, from the COMMIT's
//     return to the reply of the first poll that saw it, so at most one poll's round trip late;
//     0 when it came before the return, counted in `replay.before_return`), and per push its
//     arrival after that moment (`after_replay_us`: the push delay minus the replay delay; negative
//     when the push came first, which one poll's lateness allows).
//     --ddl: while the rounds run, another primary connection runs those statements (DDL below)
//     one every `ddl-interval-ms`, and `lock-readers` RESP connections to the push port read keys
//     that no row has (a miss each, so each read needs the table's lock) every
//     `lock-reader-pause-ms`: they wait whenever a DDL holds the table. `worker_waits` samples the
//     RESP workers' wait events in pg_stat_activity every 10 ms during the counted rounds.
//     `slowest_rounds`: the 10 rounds whose last push came latest: that push's worker, and each
//     worker's first and last push of the round (one worker's pushes all late while the other's
//     came early: that worker was late; one push late among early ones: the client).
//
//   node tracking.js reads --pg CONNINFO --resp-port P --variant csc|plain [--conns 4]
//                          [--seconds 5] [--hot 128] [--write-rate 20]
//     A read workload: `conns` node-redis RESP3 clients, each a closed loop of GET items:<random
//     hot id>, with (csc: clientSideCache, ttl 0, unbounded) or without (plain) the client-side
//     cache, while one node-postgres connection UPDATEs random hot rows at `write-rate` per
//     second. After the run and a 300 ms pause every client reads every hot row once more and
//     compares it with SQL: `stale` must be 0 (the run exits 1 otherwise).
//
//   node tracking.js hold --pg CONNINFO --resp-port P [--trackers 50] [--hot 128]
//     The load of the commit-path comparison: `trackers` tracking connections each read every
//     hot row once and then listen while pgbench UPDATEs, prints READY, and on end of stdin its
//     counts.
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const { pgConnect } = require('./pg_connect');
const { createClient } = require('redis6');

function die(msg) {
  process.stderr.write(`tracking.js: ${msg}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const o = { cmd: argv[0], trackers: 50, rounds: 300, hot: 128, conns: 4, seconds: 5, writeRate: 20, variant: 'csc', respPort: 0,
    pushPort: 0, standbyPg: '', ddl: '', ddlIntervalMs: 250, lockReaders: 4, lockReaderPauseMs: 10, syncCommit: '' };
  const names = { '--pg': 'pg', '--resp-port': 'respPort', '--trackers': 'trackers', '--rounds': 'rounds', '--hot': 'hot',
    '--conns': 'conns', '--seconds': 'seconds', '--write-rate': 'writeRate', '--variant': 'variant',
    '--push-port': 'pushPort', '--standby-pg': 'standbyPg', '--ddl': 'ddl', '--ddl-interval-ms': 'ddlIntervalMs',
    '--lock-readers': 'lockReaders', '--lock-reader-pause-ms': 'lockReaderPauseMs', '--sync-commit': 'syncCommit' };
  const strings = ['pg', 'variant', 'standbyPg', 'ddl', 'syncCommit'];
  for (let i = 1; i < argv.length; i += 2) {
    const k = names[argv[i]];
    if (!k) die(`unknown option ${argv[i]}`);
    o[k] = strings.includes(k) ? argv[i + 1] : Number(argv[i + 1]);
  }
  if (o.syncCommit && !['on', 'off', 'local', 'remote_write', 'remote_apply'].includes(o.syncCommit)) die('--sync-commit is a synchronous_commit value');
  if (o.standbyPg && !o.pushPort) die('--standby-pg needs --push-port, the standby\'s RESP port');
  if (!o.pg || !o.respPort) die('--pg and --resp-port are required');
  if (!['delay', 'reads', 'hold'].includes(o.cmd)) die('usage: tracking.js delay|reads|hold --pg CONNINFO --resp-port P ...');
  if (!['csc', 'plain'].includes(o.variant)) die('--variant is csc or plain');
  return o;
}

async function redisConnect(port, options = {}) {
  const c = createClient({ RESP: 3, socket: { host: '127.0.0.1', port, reconnectStrategy: false }, ...options });
  c.on('error', (e) => die(`redis client: ${e.message}`));
  await c.connect();
  return c;
}

// percentiles of a sorted array of numbers (nearest rank)
function percentiles(sorted) {
  const at = (q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] : null);
  const r = (x) => (x === null ? null : Math.round(x * 10) / 10);
  return { p50: r(at(0.5)), p90: r(at(0.9)), p99: r(at(0.99)), p999: r(at(0.999)), max: r(sorted.length ? sorted[sorted.length - 1] : null),
    avg: r(sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null) };
}

const nowUs = () => Number(process.hrtime.bigint()) / 1000;
const randomValue = () => Math.random().toString(36).slice(2).padEnd(12, 'x');
const key = (id) => `items:${id}`;

// The with-DDL cells' statements (--ddl, in this order, one every --ddl-interval-ms), each holding
// ACCESS EXCLUSIVE on the tracked table or on the side table the lock readers also read: VACUUM
// FULL and CLUSTER rewrite public.items (the UPDATE waits for them; nothing is flushed); TRUNCATE
// of public.items_side (cached, refilled in the same transaction) flushes that table; ALTER TABLE
// ... SET STORAGE (the column's storage as it is: a change of nothing, under the lock that
// statement takes) is a definition change of public.items, which flushes everything: a null
// push to every tracking connection.
const SIDE_ROWS = 64;
const DDL = {
  vacuum_full: () => 'VACUUM FULL public.items',
  cluster: () => 'CLUSTER public.items USING items_pkey',
  truncate_side: () => 'BEGIN; TRUNCATE public.items_side; INSERT INTO public.items_side '
    + `SELECT g, md5(g::text) FROM generate_series(1, ${SIDE_ROWS}) g; COMMIT`,
  alter: () => 'ALTER TABLE public.items ALTER COLUMN value SET STORAGE EXTENDED',
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The DDL loop: one statement every `intervalMs` (start to start; right after the last one when
// it took longer), until stop.done. Per kind: how many ran, how long each took (the time its locks
// were held, at most), errors.
function ddlLoop(conn, kinds, intervalMs, stop) {
  const stats = Object.fromEntries(kinds.map((k) => [k, { count: 0, errors: 0, took_us: [] }]));
  const errors = [];
  const done = (async () => {
    let next = Date.now();
    for (let n = 0; !stop.done; n++) {
      const kind = kinds[n % kinds.length];
      const t = nowUs();
      try {
        await conn.query(DDL[kind](n));
        stats[kind].count++;
        stats[kind].took_us.push(nowUs() - t);
      } catch (e) {
        stats[kind].errors++;
        if (errors.length < 5) errors.push(`${kind}: ${e.message}`);
      }
      next += intervalMs;
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      else next = Date.now();
    }
  })();
  return async () => {
    await done;
    const out = {};
    for (const [k, s] of Object.entries(stats)) {
      s.took_us.sort((a, b) => a - b);
      out[k] = { count: s.count, errors: s.errors, took_us: percentiles(s.took_us) };
    }
    return { interval_ms: intervalMs, by_kind: out, errors };
  };
}

// Lock readers: `n` plain RESP connections, each a GET of a key no row has (a new one every
// time, alternately of public.items and public.items_side, so never a cache hit: the read needs
// the table's lock) every `pauseMs`. While a DDL holds the table they wait in the worker, which
// retries them (connection.cpp): the worker's other connections, the tracking ones among them,
// must not wait with them.
function lockReaders(port, n, pauseMs, stop) {
  const latencies = [];
  let errors = 0;
  const done = (async () => {
    const clients = [];
    for (let i = 0; i < n; i++) clients.push(await redisConnect(port));
    let seq = 0;
    await Promise.all(clients.map(async (c) => {
      while (!stop.done) {
        const k = (seq++ % 2 ? 'items_side:' : 'items:') + (1e9 + seq);
        const t = nowUs();
        try {
          await c.get(k);
        } catch (e) {
          errors++; // -BUSY after local_cache.resp_lock_timeout
        }
        latencies.push(nowUs() - t);
        await sleep(pauseMs);
      }
    }));
    for (const c of clients) c.destroy();
  })();
  return async () => {
    await done;
    latencies.sort((a, b) => a - b);
    return { connections: n, pause_ms: pauseMs, requests: latencies.length, errors, latency_us: percentiles(latencies) };
  };
}

// What the server's RESP workers wait for, sampled every `everyMs` from pg_stat_activity of the
// server the tracking connections use: a worker in a Lock wait serves nobody meanwhile.
function workerWaits(conn, everyMs, stop) {
  const byEvent = {};
  let samples = 0;
  const done = (async () => {
    while (!stop.done) {
      const r = await conn.query("SELECT coalesce(wait_event_type || ':' || wait_event, 'running') AS w "
        + "FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker'");
      for (const row of r.rows) byEvent[row.w] = (byEvent[row.w] || 0) + 1;
      samples += r.rows.length;
      await sleep(everyMs);
    }
  })();
  return async () => {
    await done;
    return { every_ms: everyMs, samples, by_event: byEvent };
  };
}

async function delay(o) {
  const sql = await pgConnect(o); // the writer, on the primary
  // the commit's WAL is flushed, and so sent to a standby, before COMMIT returns (with `off`
  // the walwriter sends it up to wal_writer_delay later)
  if (o.syncCommit) await sql.query(`SET synchronous_commit = ${o.syncCommit}`);
  const pushPort = o.pushPort || o.respPort;
  const standby = !!o.standbyPg;
  const probe = standby ? new Worker(__filename, { workerData: { role: 'replay-probe', pg: o.standbyPg } }) : null;
  if (probe) await new Promise((resolve, reject) => { probe.once('message', resolve); probe.once('error', reject); });
  const kinds = o.ddl ? o.ddl.split(',').filter(Boolean) : [];
  for (const k of kinds) if (!DDL[k]) die(`unknown DDL ${k} (${Object.keys(DDL).join(', ')})`);
  const trackers = [];
  const workers = {};
  const workerOf = []; // each tracking connection's worker
  let round = null; // { key, got[], keyAt[], flushAt[], closed[], settled, done }
  let counting = false;
  let flushPushes = 0;
  for (let i = 0; i < o.trackers; i++) {
    const c = await redisConnect(pushPort, { emitInvalidate: true });
    const id = Number(await c.sendCommand(['CLIENT', 'ID']));
    const w = Math.floor(id / 2 ** 40);
    workers[w] = (workers[w] || 0) + 1;
    workerOf.push(w);
    c.on('invalidate', (k) => {
      const t = nowUs();
      if (k === null && counting) flushPushes++;
      const e = round;
      if (!e || e.closed[i]) return;
      if (k === null) {
        if (e.flushAt[i] === undefined) e.flushAt[i] = t;
        // A flush after the read's reply untracked the key: no key push follows. One parsed
        // before the reply's promise resolved may have been written before the read ran (which
        // tracks the key again): the round waits for the key push then.
        if (!e.got[i]) return;
      } else if (String(k) === e.key) {
        e.keyAt[i] = t;
      } else {
        return;
      }
      e.closed[i] = true;
      if (++e.settled === o.trackers) e.done();
    });
    trackers.push(c);
  }
  process.stderr.write(`tracking.js: ${o.trackers} tracking connections on port ${pushPort} (per worker: `
    + `${JSON.stringify(workers)}), ${o.rounds} rounds${kinds.length ? `, DDL ${kinds.join(',')} every ${o.ddlIntervalMs} ms, `
    + `${o.lockReaders} lock readers` : ''}${standby ? ', replay probed on the standby' : ''}\n`);
  const stop = { done: false };
  const ddlConn = kinds.length ? await pgConnect(o) : null;
  const ddlDone = kinds.length ? ddlLoop(ddlConn, kinds, o.ddlIntervalMs, stop) : null;
  const readersDone = kinds.length && o.lockReaders > 0 ? lockReaders(pushPort, o.lockReaders, o.lockReaderPauseMs, stop) : null;
  const waitsConn = await pgConnect({ pg: o.standbyPg || o.pg });
  let waitsDone = null;
  const fromReturn = [];
  const fromSend = [];
  const flushFromReturn = [];
  const replay = [];
  const afterReplay = [];
  const probeRtt = [];
  const probePolls = [];
  let replayBeforeReturn = 0;
  let missing = 0;
  let beforeReturn = 0;
  let coveredByFlush = 0;
  let getRetries = 0;
  let replayMissing = 0;
  const warmup = 10;
  // The rounds of the slowest pushes, for telling a late worker from a late client: a worker
  // writes all its connections' pushes of a commit in one loop turn, so its pushes all late while
  // the other worker's came early point at that worker; one late among early ones at the client.
  let slowest = [];
  const track = async (c, i, k, e) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await c.get(k);
        e.got[i] = true;
        return;
      } catch (err) { // -BUSY: the table stayed locked for local_cache.resp_lock_timeout
        if (attempt >= 20) throw err;
        getRetries++;
      }
    }
  };
  for (let r = 0; r < o.rounds + warmup; r++) {
    if (r === warmup) {
      counting = true;
      waitsDone = workerWaits(waitsConn, 10, stop);
    }
    const id = 1 + (r % o.hot);
    let done;
    const all = new Promise((resolve) => (done = resolve));
    const e = round = { key: key(id), got: [], keyAt: [], flushAt: [], closed: [], settled: 0, done };
    await Promise.all(trackers.map((c, i) => track(c, i, key(id), e)));
    // id and value are digits and [0-9a-z]: safe in the statement's text
    const begun = await sql.query(`BEGIN; UPDATE public.items SET value = '${randomValue()}' WHERE id = ${id} `
      + 'RETURNING pg_current_xact_id()::text AS xid');
    const xid = begun[1].rows[0].xid;
    const seen = probe ? new Promise((resolve) => probe.once('message', resolve)) : null;
    if (probe) probe.postMessage(xid);
    const sent = nowUs();
    await sql.query('COMMIT');
    const returned = nowUs();
    let timer;
    const [, visible] = await Promise.all([
      Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, 2000)))]),
      seen,
    ]);
    clearTimeout(timer);
    round = null;
    if (r < warmup) continue;
    const visibleAt = visible ? visible.at : null;
    if (visible) {
      if (visibleAt === null) replayMissing++;
      else {
        if (visibleAt < returned) replayBeforeReturn++;
        replay.push(Math.max(0, visibleAt - returned));
        probePolls.push(visible.polls);
        probeRtt.push(...visible.rtts);
      }
    }
    for (let i = 0; i < o.trackers; i++) {
      const t = e.keyAt[i];
      if (t === undefined) {
        if (e.flushAt[i] === undefined) missing++;
        else {
          coveredByFlush++;
          flushFromReturn.push(Math.max(0, e.flushAt[i] - returned));
        }
        continue;
      }
      if (t < returned) beforeReturn++;
      fromReturn.push(Math.max(0, t - returned));
      fromSend.push(t - sent);
      if (standby && visibleAt !== null) afterReplay.push(t - visibleAt);
    }
    const late = e.keyAt.reduce((m, t, i) => (t !== undefined && (m < 0 || t > e.keyAt[m]) ? i : m), -1);
    if (late >= 0) {
      const span = {}; // worker -> [first, last] push of the round, from the COMMIT's return
      e.keyAt.forEach((t, i) => {
        if (t === undefined) return;
        const w = workerOf[i];
        const d = Math.round(t - returned);
        span[w] = span[w] ? [Math.min(span[w][0], d), Math.max(span[w][1], d)] : [d, d];
      });
      slowest.push({ round: r - warmup, worker: workerOf[late], from_return_us: Math.round(e.keyAt[late] - returned),
        first_last_by_worker_us: span, replay_us: visibleAt !== null && standby ? Math.round(visibleAt - returned) : null });
      slowest = slowest.sort((a, b) => b.from_return_us - a.from_return_us).slice(0, 10);
    }
  }
  counting = false;
  stop.done = true;
  const ddl = ddlDone ? await ddlDone() : null;
  const lock = readersDone ? await readersDone() : null;
  const waits = waitsDone ? await waitsDone() : null;
  for (const a of [fromReturn, fromSend, flushFromReturn, replay, afterReplay, probeRtt, probePolls]) a.sort((x, y) => x - y);
  for (const c of trackers) c.destroy();
  for (const c of [sql, ddlConn, waitsConn]) if (c) await c.end();
  if (probe) await probe.terminate();
  return { cmd: 'delay', server: standby ? 'standby' : 'primary', ddl: kinds, synchronous_commit: o.syncCommit || null,
    trackers: o.trackers, per_worker: workers, rounds: o.rounds, hot_rows: o.hot,
    pushes: fromReturn.length, missing, before_return: beforeReturn, covered_by_flush: coveredByFlush,
    flush_pushes: flushPushes, get_retries: getRetries,
    from_return_us: percentiles(fromReturn), from_send_us: percentiles(fromSend),
    flush_from_return_us: percentiles(flushFromReturn),
    replay: standby ? { from_return_us: percentiles(replay), before_return: replayBeforeReturn, missing: replayMissing,
      probe_rtt_us: percentiles(probeRtt), probe_polls: percentiles(probePolls) } : null,
    after_replay_us: standby ? percentiles(afterReplay) : null,
    ddl_stats: ddl, lock_readers: lock, worker_waits: waits, slowest_rounds: slowest };
}

async function reads(o) {
  const sql = await pgConnect(o);
  const writer = await pgConnect(o);
  const csc = o.variant === 'csc';
  const clients = [];
  for (let i = 0; i < o.conns; i++) clients.push(await redisConnect(o.respPort, csc ? { clientSideCache: { ttl: 0, maxEntries: 0 } } : {}));
  const latencies = [];
  let requests = 0;
  let writes = 0;
  const end = Date.now() + o.seconds * 1000;
  const loops = clients.map(async (c) => {
    while (Date.now() < end) {
      const t = nowUs();
      await c.get(key(1 + Math.floor(Math.random() * o.hot)));
      latencies.push(nowUs() - t);
      requests++;
      // a local hit resolves without I/O: let the event loop breathe (pushes, the writer)
      if (csc && requests % 64 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  });
  const writeLoop = (async () => {
    if (o.writeRate <= 0) return;
    const every = 1000 / o.writeRate;
    let next = Date.now();
    while (Date.now() < end) {
      await writer.query('UPDATE public.items SET value = $2 WHERE id = $1', [1 + Math.floor(Math.random() * o.hot), randomValue()]);
      writes++;
      next += every;
      const wait = next - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();
  const started = Date.now();
  await Promise.all([...loops, writeLoop]);
  const elapsed = (Date.now() - started) / 1000;
  const stats = csc ? clients.map((c) => c.clientSideCache.stats()) : [];
  // every client's view of every hot row, after the writer stopped, against SQL
  await new Promise((resolve) => setTimeout(resolve, 300));
  const rows = new Map((await sql.query('SELECT id, row_to_json(i)::text AS j FROM public.items i WHERE id <= $1', [o.hot])).rows
    .map((r) => [Number(r.id), r.j]));
  let stale = 0;
  for (const c of clients) {
    for (let id = 1; id <= o.hot; id++) if ((await c.get(key(id))) !== (rows.get(id) ?? null)) stale++;
  }
  for (const c of clients) c.destroy();
  await sql.end();
  await writer.end();
  latencies.sort((a, b) => a - b);
  const hits = stats.reduce((a, s) => a + s.hitCount, 0);
  const misses = stats.reduce((a, s) => a + s.missCount, 0);
  return { cmd: 'reads', variant: o.variant, connections: o.conns, seconds: elapsed, hot_rows: o.hot,
    requests, rps: requests / elapsed, writes, writes_per_s: writes / elapsed, latency_us: percentiles(latencies),
    local_hits: csc ? hits : null, local_misses: csc ? misses : null, hit_ratio: csc && hits + misses ? hits / (hits + misses) : null,
    stale };
}

async function hold(o) {
  const trackers = [];
  let pushes = 0;
  for (let i = 0; i < o.trackers; i++) {
    const c = await redisConnect(o.respPort, { emitInvalidate: true });
    // Tracking connections that read each hot row once and then only listen: every commit
    // goes through the tracking log and the workers read it, which is the writers' side of the
    // cost; re-reading what was invalidated would add a read workload of its own (the reads
    // mode measures that).
    c.on('invalidate', () => {
      pushes++;
    });
    trackers.push(c);
  }
  await Promise.all(trackers.map((c) => Promise.all(Array.from({ length: o.hot }, (_, j) => c.get(key(j + 1))))));
  process.stdout.write('READY\n');
  await new Promise((resolve) => {
    process.stdin.on('data', () => {});
    process.stdin.on('end', resolve);
  });
  for (const c of trackers) c.destroy();
  return { cmd: 'hold', trackers: o.trackers, hot_rows: o.hot, pushes };
}

// The replay probe (a worker thread of `delay --standby-pg`): for each xid the main thread posts
// (just before its COMMIT is sent), polls the standby back to back until a new snapshot sees the
// transaction committed, and answers { at: the reply's arrival (null: not within 2 s), polls,
// rtts }. Its own event loop, so the pushes the main thread receives do not delay its replies.
async function replayProbe(conninfo) {
  const c = await pgConnect({ pg: conninfo });
  parentPort.on('message', async (xid) => {
    const rtts = [];
    const deadline = nowUs() + 2.5e6;
    for (;;) {
      const t = nowUs();
      const r = await c.query({ name: 'visible', text: 'SELECT pg_visible_in_snapshot($1::xid8, pg_current_snapshot()) AS v',
        values: [xid] });
      const got = nowUs();
      rtts.push(got - t);
      if (r.rows[0].v || got > deadline) {
        parentPort.postMessage({ at: r.rows[0].v ? got : null, polls: rtts.length, rtts });
        return;
      }
    }
  });
  parentPort.postMessage('ready');
}

if (!isMainThread) {
  replayProbe(workerData.pg).catch((e) => die(e.stack || String(e)));
} else (async () => {
  const o = parseArgs(process.argv.slice(2));
  const result = o.cmd === 'delay' ? await delay(o) : o.cmd === 'reads' ? await reads(o) : await hold(o);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(result.stale ? 1 : 0);
})().catch((e) => die(e.stack || String(e)));
