'use strict';
// bench/node/cluster.js: the cluster mode's client (bench/run cluster): node-redis v6's cluster client,
// createCluster({ rootNodes: [the primary], useReplicas }), reading `GET items:<id>` over the hot rows
// 1..HOT on CONCURRENCY closed loops (one outstanding request each) of one client object, which routes
// every read by the slot map it took from the primary: to the primary alone without useReplicas, in turn
// to every node of the shard (primary and standbys) with it. Each reply is checked against the row.
// The protocol of bench/loadgen and client.js: READY once connected and warm, GO on stdin, one JSON
// result line after SECONDS, a second line on stdin to quit.
//   node cluster.js --port P --replicas 0|1 --concurrency N --seconds S [--hot 128]
const { createCluster } = require('redis6');
const readline = require('readline');

function die(msg) {
  process.stderr.write(`node cluster client: ${msg}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const o = { port: 0, replicas: 0, concurrency: 16, seconds: 1, hot: 128 };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    if (!(k in o)) die(`unknown option ${argv[i]}`);
    o[k] = Number(argv[i + 1]);
  }
  if (!o.port) die('--port is required');
  return o;
}

async function main(o) {
  const client = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${o.port}` }], useReplicas: o.replicas === 1 });
  client.on('error', (e) => die(`cluster client: ${e.message}`));
  await client.connect();
  const loops = Array.from({ length: o.concurrency }, (_, i) => ({ next: (i * 7) % o.hot }));
  const one = async (s) => {
    const id = s.next + 1;
    s.next = (s.next + 1) % o.hot;
    const v = await client.get(`items:${id}`);
    if (v === null || JSON.parse(v).id !== id) throw new Error(`GET items:${id} answered ${v}`);
  };
  // warm: every node's cache holds every hot row (the client spreads the reads over the nodes)
  for (let pass = 0; pass < 6; pass++) for (const s of loops) for (let i = 0; i < o.hot / loops.length + 1; i++) await one(s);

  const lines = readline.createInterface({ input: process.stdin });
  const it = lines[Symbol.asyncIterator]();
  process.stdout.write('READY\n');
  await it.next();
  const lat = [];
  let stop = false;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  setTimeout(() => { stop = true; }, o.seconds * 1000);
  await Promise.all(loops.map(async (s) => {
    while (!stop) {
      const a = process.hrtime.bigint();
      await one(s);
      lat.push(Number(process.hrtime.bigint() - a) / 1000);
    }
  }));
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  lat.sort((a, b) => a - b);
  const pct = (p) => (lat.length ? Math.round(lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))]) : 0);
  process.stdout.write(JSON.stringify({ requests: lat.length, elapsed_s: elapsed, client_cpu_s: (cpu.user + cpu.system) / 1e6,
    latency_us: { p50: pct(50), p90: pct(90), p99: pct(99), p999: pct(99.9), max: lat.length ? Math.round(lat[lat.length - 1]) : 0 } }) + '\n');
  await it.next();
  await client.close();
  process.exit(0);
}

main(parseArgs(process.argv.slice(2))).catch((e) => die(e.stack || String(e)));
