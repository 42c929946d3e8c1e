'use strict';
// bench/node/tracking.js: the tracking mode of the benchmark (bench/run tracking, issue #29):
// server-assisted client-side caching measured with node-redis (v6, the `redis6` alias) and
// node-postgres. One JSON line on stdout per run, progress on stderr.
//
//   node tracking.js delay --pg CONNINFO --resp-port P [--trackers 50] [--rounds 300] [--hot 128]
//     The invalidation delay: `trackers` RESP3 connections with CLIENT TRACKING ON (node-redis's
//     emitInvalidate), spread over the RESP workers as the server's SO_REUSEPORT places them (the
//     result counts them per worker), each reads items:<id>; an autocommit SQL UPDATE of row id
//     runs; per tracking connection, the time from the UPDATE's return to its client (the pg
//     promise) to the push's arrival (the 'invalidate' event). A push that arrived before the
//     UPDATE returned counts as 0 (`before_return` says how many did). Rounds cycle over `hot`
//     rows; 10 rounds of warm-up are not counted; a push missing after 2 s is counted, not waited for.
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
const { pgConnect } = require('./pg_connect');
const { createClient } = require('redis6');

function die(msg) {
  process.stderr.write(`tracking.js: ${msg}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const o = { cmd: argv[0], trackers: 50, rounds: 300, hot: 128, conns: 4, seconds: 5, writeRate: 20, variant: 'csc', respPort: 0 };
  const names = { '--pg': 'pg', '--resp-port': 'respPort', '--trackers': 'trackers', '--rounds': 'rounds', '--hot': 'hot',
    '--conns': 'conns', '--seconds': 'seconds', '--write-rate': 'writeRate', '--variant': 'variant' };
  for (let i = 1; i < argv.length; i += 2) {
    const k = names[argv[i]];
    if (!k) die(`unknown option ${argv[i]}`);
    o[k] = ['pg', 'variant'].includes(k) ? argv[i + 1] : Number(argv[i + 1]);
  }
  if (!o.pg || !o.respPort) die('--pg and --resp-port are required');
  if (!['delay', 'reads', 'hold'].includes(o.cmd)) die('usage: tracking.js delay|reads|hold --pg CONNINFO --resp-port P ...');
  if (!['csc', 'plain'].includes(o.variant)) die('--variant is csc or plain');
  return o;
}

async function redisConnect(o, options = {}) {
  const c = createClient({ RESP: 3, socket: { host: '127.0.0.1', port: o.respPort, reconnectStrategy: false }, ...options });
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

async function delay(o) {
  const sql = await pgConnect(o);
  const trackers = [];
  const workers = {};
  let expecting = null; // { key, arrived: Map(index -> us) }
  for (let i = 0; i < o.trackers; i++) {
    const c = await redisConnect(o, { emitInvalidate: true });
    const id = Number(await c.sendCommand(['CLIENT', 'ID']));
    const w = Math.floor(id / 2 ** 40);
    workers[w] = (workers[w] || 0) + 1;
    c.on('invalidate', (k) => {
      const t = nowUs();
      if (expecting && (k === null || String(k) === expecting.key) && !expecting.arrived.has(i)) {
        expecting.arrived.set(i, t);
        if (expecting.arrived.size === o.trackers) expecting.done();
      }
    });
    trackers.push(c);
  }
  process.stderr.write(`tracking.js: ${o.trackers} tracking connections (per worker: ${JSON.stringify(workers)}), ${o.rounds} rounds\n`);
  const fromReturn = [];
  const fromSend = [];
  let missing = 0;
  let beforeReturn = 0;
  const warmup = 10;
  for (let r = 0; r < o.rounds + warmup; r++) {
    const id = 1 + (r % o.hot);
    await Promise.all(trackers.map((c) => c.get(key(id))));
    let done;
    const all = new Promise((resolve) => (done = resolve));
    expecting = { key: key(id), arrived: new Map(), done };
    const sent = nowUs();
    await sql.query('UPDATE public.items SET value = $2 WHERE id = $1', [id, randomValue()]);
    const returned = nowUs();
    let timer;
    await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, 2000)))]);
    clearTimeout(timer);
    const arrived = expecting.arrived;
    expecting = null;
    if (r < warmup) continue;
    missing += o.trackers - arrived.size;
    for (const t of arrived.values()) {
      if (t < returned) beforeReturn++;
      fromReturn.push(Math.max(0, t - returned));
      fromSend.push(t - sent);
    }
  }
  fromReturn.sort((a, b) => a - b);
  fromSend.sort((a, b) => a - b);
  for (const c of trackers) c.destroy();
  await sql.end();
  return { cmd: 'delay', trackers: o.trackers, per_worker: workers, rounds: o.rounds, hot_rows: o.hot,
    pushes: fromReturn.length, missing, before_return: beforeReturn,
    from_return_us: percentiles(fromReturn), from_send_us: percentiles(fromSend) };
}

async function reads(o) {
  const sql = await pgConnect(o);
  const writer = await pgConnect(o);
  const csc = o.variant === 'csc';
  const clients = [];
  for (let i = 0; i < o.conns; i++) clients.push(await redisConnect(o, csc ? { clientSideCache: { ttl: 0, maxEntries: 0 } } : {}));
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
    const c = await redisConnect(o, { emitInvalidate: true });
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

(async () => {
  const o = parseArgs(process.argv.slice(2));
  const result = o.cmd === 'delay' ? await delay(o) : o.cmd === 'reads' ? await reads(o) : await hold(o);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(result.stale ? 1 : 0);
})().catch((e) => die(e.stack || String(e)));
