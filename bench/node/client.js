'use strict';
// bench/node/client.js: the Node.js client of the benchmark harness (node-postgres, node-redis).
// Same command line and stdin/stdout protocol as bench/loadgen (loadgen_main.cpp):
//   node client.js check --pg CONNINFO --resp-port P --redis-port R [--resp-user U --resp-password W]
//   node client.js run --pg CONNINFO --path PATH --conns N --batch B --seconds S [--mode warm|miss|mixed|cold|write]
//                      [--resp-port P] [--redis-port R] [--resp-user U --resp-password W]
// PATH: sql | mget | mget_json | fdw | resp | redis (reads), update | resp_set | redis_set (writes;
// resp_set connects as U), update_pair (update on even connections, the same UPDATE of
// public.items_plain, never cached, on odd ones; application_name local_cache_bench_cached or
// _plain; plain_updates counts the latter), update16 | resp_mset | redis_mset (writes of 16 distinct random rows,
// ascending ids, per request: one prepared UPDATE ... FROM unnest, one MSET as U, redis-server's MSET).
// miss: every other key has no row (see missKeys); every reply must have exactly the expected NULLs/nils.
// One event loop; every connection runs its own closed loop (one outstanding request).
const { pgConnect } = require('./pg_connect');
const redis = require('redis');
const readline = require('readline');

const SQL = {
  sql: 'SELECT * FROM public.items WHERE id = ANY($1::bigint[])',
  mget: "SELECT array_to_json(local_cache.mget('public.items'::regclass, $1::bigint[])) AS r",
  mget_json: "SELECT local_cache.mget_json('public.items'::regclass, $1::bigint[]) AS r",
  fdw: 'SELECT * FROM cache.items WHERE id = ANY($1::bigint[])',
  update: 'UPDATE public.items SET value = $2 WHERE id = $1',
  update_plain: 'UPDATE public.items_plain SET value = $2 WHERE id = $1',
  update16: 'UPDATE public.items AS t SET value = v.value FROM unnest($1::bigint[], $2::text[]) AS v(id, value) '
    + 'WHERE t.id = v.id',
};
const UPDATE_SQL = SQL.update;
const MULTI_ROWS = 16;  // the rows of one request of update16, resp_mset, redis_mset

function die(msg) {
  process.stderr.write(`node client: ${msg}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const o = { cmd: argv[0], path: 'sql', mode: 'warm', prefix: 'items', conns: 4, batch: 1, seconds: 1,
    updatePct: 5, hot: 128, rows: 4096, respPort: 0, redisPort: 0, respUser: '', respPassword: '' };
  const names = { '--pg': 'pg', '--path': 'path', '--mode': 'mode', '--prefix': 'prefix', '--resp-port': 'respPort',
    '--redis-port': 'redisPort', '--conns': 'conns', '--batch': 'batch', '--seconds': 'seconds',
    '--update-pct': 'updatePct', '--hot': 'hot', '--rows': 'rows', '--resp-user': 'respUser',
    '--resp-password': 'respPassword' };
  for (let i = 1; i < argv.length; i += 2) {
    const k = names[argv[i]];
    if (!k) die(`unknown option ${argv[i]}`);
    o[k] = ['pg', 'path', 'mode', 'prefix', 'respUser', 'respPassword'].includes(k) ? argv[i + 1] : Number(argv[i + 1]);
  }
  return o;
}

// auth: { username, password } to AUTH as another role than the server's default
async function redisConnect(port, auth) {
  const c = redis.createClient({ socket: { host: '127.0.0.1', port }, ...(auth && auth.username ? auth : {}) });
  c.on('error', (e) => die(`redis client on port ${port}: ${e.message}`));
  await c.connect();
  return c;
}

function randomValue() {
  const a = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  let s = '';
  for (let i = 0; i < 128; i++) s += a[(Math.random() * a.length) | 0];
  return s;
}

// The row (id, value) of public.items as RESP SET writes it: byte for byte row_to_json(row)::text
// (JSON.stringify escapes strings as PostgreSQL's escape_json does; members in column order).
const rowJson = (id, value) => JSON.stringify({ id, value });

// The keys of one request of the miss mode, as bench/loadgen_keys.cpp's miss_keys: every other key has
// no row (absent ids follow the table: rows+1, rows+2, ...), the same keys in every request; a
// request of one key alternates between id 1 and id rows+1.
function missKeys(o, seq, index) {
  if (o.batch === 1) return [(seq + index) % 2 === 0 ? 1 : o.rows + 1];
  return Array.from({ length: o.batch }, (_, i) => (i % 2 === 0 ? i / 2 + 1 : o.rows + (i - 1) / 2 + 1));
}
const writerAuth = (o) => ({ username: o.respUser, password: o.respPassword });

// n distinct random row numbers of 1..rows, ascending (concurrent multi-row writes lock their rows in
// one order), as bench/loadgen_client.cpp's distinct_rows
function distinctRows(n, rows) {
  const ids = new Set();
  while (ids.size < Math.min(n, rows)) ids.add(1 + Math.floor(Math.random() * rows));
  return [...ids].sort((a, b) => a - b);
}

// ------------------------------------------------------------------ check

let failures = 0;
function fail(msg) {
  process.stderr.write(`node client check: MISMATCH: ${msg}\n`);
  failures++;
}

// The write paths, after the reads and on rows they do not use (firstId, firstId + 1), as in
// bench/loadgen_check.cpp: the row is read through RESP first (cached, so the write must invalidate it);
// RESP SET as the writing role, then mget_json, plain SQL and RESP GET (the reading role) must
// show exactly the object; the benchmark's prepared SQL UPDATE, then SQL and RESP GET must show
// it; redis-server SET of the same bytes, then GET (leaving redis-server equal to the table).
async function checkWrites(o, c, resp, ref, firstId) {
  const writer = await redisConnect(o.respPort, writerAuth(o));
  const cases = [[randomValue(), randomValue()],
    [`quote " backslash \\ tab \t newline \n bell \x07 slash / \u00e9 ${randomValue().slice(0, 16)}`,
      `update "\\\t\x01 ${randomValue().slice(0, 16)}`]];
  let compared = 0;
  const sqlRow = async (id, when, ctx) => {
    const r = await c.query({ name: 'row', text: 'SELECT value, row_to_json(i)::text AS json FROM public.items i WHERE id = $1',
      values: [id] });
    if (r.rows.length !== 1) {
      fail(`${ctx}: ${when}, SQL finds ${r.rows.length} rows, expected 1`);
      return { value: undefined, json: '' };
    }
    return r.rows[0];
  };
  const tryCommand = async (cl, args) => {
    try { return await cl.sendCommand(args); } catch (err) { return `error ${err.message}`; }
  };
  for (let i = 0; i < cases.length; i++) {
    const id = firstId + i;
    const key = `${o.prefix}:${id}`;
    const ctx = `write check, ${key}`;
    const [setValue, updateValue] = cases[i];
    const expectGet = async (cl, who, when, want) => {
      const g = await tryCommand(cl, ['GET', key]);
      if (g !== want) fail(`${ctx}: ${when}, ${who} GET answers ${JSON.stringify(g)}, expected ${want}`);
      compared++;
    };
    const expectOk = (r, what) => {
      if (r !== 'OK') fail(`${ctx}: ${what} answered ${JSON.stringify(r)}, expected OK`);
      compared++;
    };
    // the row as it is, cached by the RESP read
    const before = await sqlRow(id, 'before the writes', ctx);
    await expectGet(resp, 'RESP', 'before the writes', before.json);
    // RESP SET: the row becomes the object
    const json1 = rowJson(id, setValue);
    expectOk(await tryCommand(writer, ['SET', key, json1]), `RESP SET ${json1}`);
    const m = await c.query({ name: 'mget_json', text: SQL.mget_json, values: [[id]] });
    if (JSON.stringify(m.rows[0].r) !== JSON.stringify([{ id, value: setValue }]))
      fail(`${ctx}: after RESP SET, mget_json answers ${JSON.stringify(m.rows[0].r)}`);
    compared++;
    const afterSet = await sqlRow(id, 'after RESP SET', ctx);
    if (afterSet.value !== setValue || afterSet.json !== json1) fail(`${ctx}: after RESP SET, SQL shows ${afterSet.json}, expected ${json1}`);
    compared++;
    await expectGet(resp, 'RESP', 'after RESP SET', json1);
    // SQL UPDATE (the benchmark's prepared statement)
    const json2 = rowJson(id, updateValue);
    const u = await c.query({ name: 'u', text: UPDATE_SQL, values: [id, updateValue] });
    if (u.rowCount !== 1) fail(`${ctx}: SQL UPDATE changed ${u.rowCount} rows, expected 1`);
    compared++;
    const afterUpdate = await sqlRow(id, 'after SQL UPDATE', ctx);
    if (afterUpdate.json !== json2) fail(`${ctx}: after SQL UPDATE, SQL shows ${afterUpdate.json}, expected ${json2}`);
    compared++;
    await expectGet(resp, 'RESP', 'after SQL UPDATE', json2);
    // redis-server SET of the same bytes
    expectOk(await tryCommand(ref, ['SET', key, json2]), 'redis-server SET');
    await expectGet(ref, 'redis-server', 'after redis-server SET', json2);
  }
  await writer.quit();
  return compared;
}

// The multi-row writes on MULTI_ROWS rows from firstId on, as bench/loadgen_check.cpp's
// check_multi_writes: read into the cache (RESP MGET), RESP MSET as the writing role, then SQL and
// RESP MGET must show exactly the objects; the benchmark's 16-row UPDATE, then SQL and RESP MGET
// the new rows; redis-server MSET of the same bytes, then MGET.
async function checkMultiWrites(o, c, resp, ref, firstId) {
  const writer = await redisConnect(o.respPort, writerAuth(o));
  const ids = Array.from({ length: MULTI_ROWS }, (_, i) => firstId + i);
  const keys = ids.map((id) => `${o.prefix}:${id}`);
  const ctx = `multi-row write check, rows ${ids[0]}-${ids[ids.length - 1]}`;
  let compared = 0;
  const tryCommand = async (cl, args) => {
    try { return await cl.sendCommand(args); } catch (err) { return `error ${err.message}`; }
  };
  const sqlRows = async () => (await c.query({ name: 'rows16', text: 'SELECT id, value, row_to_json(i)::text AS json '
    + 'FROM public.items i WHERE id = ANY($1::bigint[]) ORDER BY id', values: [ids] })).rows;
  const expectSql = async (when, values) => {
    const rows = await sqlRows();
    if (rows.length !== MULTI_ROWS) return fail(`${ctx}: ${when}, SQL finds ${rows.length} rows, expected ${MULTI_ROWS}`);
    rows.forEach((r, i) => {
      const want = rowJson(ids[i], values[i]);
      if (r.value !== values[i] || r.json !== want) fail(`${ctx}: ${when}, SQL shows ${r.json}, expected ${want}`);
      compared++;
    });
  };
  const expectMget = async (cl, who, when, want) => {
    const g = await tryCommand(cl, ['MGET', ...keys]);
    if (!Array.isArray(g) || g.length !== want.length) return fail(`${ctx}: ${when}, ${who} MGET answers ${JSON.stringify(g)}`);
    g.forEach((v, i) => {
      if (v !== want[i]) fail(`${ctx}: ${when}, ${who} MGET's ${keys[i]} is ${JSON.stringify(v)}, expected ${want[i]}`);
      compared++;
    });
  };
  const mset = async (cl, who, jsons) => {
    const r = await tryCommand(cl, ['MSET', ...keys.flatMap((k, i) => [k, jsons[i]])]);
    if (r !== 'OK') fail(`${ctx}: ${who} MSET answered ${JSON.stringify(r)}, expected OK`);
    compared++;
  };
  const fresh = (escaped) => {
    const values = ids.map((_, i) => (i === 3 ? `${escaped}${randomValue().slice(0, 16)}` : randomValue()));
    return [values, values.map((v, i) => rowJson(ids[i], v))];
  };
  // the rows as they are, cached by the RESP read
  const before = await sqlRows();
  if (before.length !== MULTI_ROWS) die(`${ctx}: the table lacks some of the rows`);
  await expectMget(resp, 'RESP', 'before the writes', before.map((r) => r.json));
  // RESP MSET (the writing role)
  const [setValues, setJsons] = fresh('mset " \\ \t \n \x07 / \u00e9 ');
  await mset(writer, 'RESP', setJsons);
  await expectSql('after RESP MSET', setValues);
  await expectMget(resp, 'RESP', 'after RESP MSET', setJsons);
  // the benchmark's 16-row UPDATE
  const [updValues, updJsons] = fresh('update16 "\\\t\x01 ');
  const u = await c.query({ name: 'update16', text: SQL.update16, values: [ids, updValues] });
  if (u.rowCount !== MULTI_ROWS) fail(`${ctx}: the 16-row UPDATE changed ${u.rowCount} rows, expected ${MULTI_ROWS}`);
  compared++;
  await expectSql('after the 16-row UPDATE', updValues);
  await expectMget(resp, 'RESP', 'after the 16-row UPDATE', updJsons);
  // redis-server MSET of the same bytes
  await mset(ref, 'redis-server', updJsons);
  await expectMget(ref, 'redis-server', 'after redis-server MSET', updJsons);
  await writer.quit();
  return compared;
}

async function check(o) {
  const c = await pgConnect(o);
  const resp = o.respPort ? await redisConnect(o.respPort) : null;
  const ref = o.redisPort ? await redisConnect(o.redisPort) : null;
  const range = (n) => Array.from({ length: n }, (_, i) => i + 1);
  const cases = [[1], [3, 1, 3, 999999], [5, null, 5, 0, -1], [], [null, null], [4096, 1, 4097], [null], [42, 42, 42],
    range(16), range(16).reverse(), range(64), range(64).reverse()];
  // the keys of the miss mode (every other one without a row), as the timed samples send them
  for (const n of [1, 16, 64]) {
    const m = { ...o, batch: n };
    for (let seq = 0; seq < (n === 1 ? 2 : 1); seq++) cases.push(missKeys(m, seq, 0));
  }
  let compared = 0;
  for (let pass = 0; pass < 2; pass++) {
    for (const keys of cases) {
      const ctx0 = `keys ${JSON.stringify(keys)} (pass ${pass + 1})`;
      const exp = new Map();
      const e = await c.query({ name: 'expected',
        text: 'SELECT id, value, row_to_json(i)::text AS json FROM public.items i WHERE id = ANY($1::bigint[])', values: [keys] });
      for (const r of e.rows) exp.set(String(r.id), r);
      for (const p of ['sql', 'fdw']) {
        const res = await c.query({ name: p, text: SQL[p], values: [keys] });
        const got = res.rows.map((r) => [String(r.id), r.value]).sort((a, b) => Number(a[0]) - Number(b[0]));
        const want = [...exp.values()].map((r) => [String(r.id), r.value]).sort((a, b) => Number(a[0]) - Number(b[0]));
        if (JSON.stringify(got) !== JSON.stringify(want)) fail(`${p} ${ctx0}: ${JSON.stringify(got).slice(0, 200)}`);
        compared++;
      }
      for (const p of ['mget', 'mget_json']) {
        const res = await c.query({ name: p, text: SQL[p], values: [keys] });
        const arr = res.rows[0].r;
        if (!Array.isArray(arr) || arr.length !== keys.length) {
          fail(`${p} ${ctx0}: not an array of ${keys.length}: ${JSON.stringify(arr)}`);
        } else {
          keys.forEach((k, i) => {
            const x = k === null ? undefined : exp.get(String(k));
            const want = x ? { id: Number(x.id), value: x.value } : null;
            if (JSON.stringify(arr[i]) !== JSON.stringify(want)) fail(`${p} ${ctx0} element ${i}: ${JSON.stringify(arr[i])}`);
          });
        }
        compared++;
      }
      const rk = keys.filter((k) => k !== null);
      for (const [name, cl] of [['resp', resp], ['redis', ref]]) {
        if (!cl) continue;
        let vals;
        try {
          vals = await cl.sendCommand(['MGET', ...rk.map((k) => `${o.prefix}:${k}`)]);
        } catch (err) {
          if (rk.length !== 0) fail(`${name} ${ctx0}: error ${err.message}`);
          compared++;
          continue;
        }
        if (rk.length === 0) fail(`${name} ${ctx0}: MGET without keys should be an error`);
        else if (!Array.isArray(vals) || vals.length !== rk.length) fail(`${name} ${ctx0}: bad reply`);
        else rk.forEach((k, i) => {
          const x = exp.get(String(k));
          const want = x ? x.json : null;
          if (vals[i] !== want) fail(`${name} ${ctx0} element ${i}: ${vals[i]} expected ${want}`);
        });
        compared++;
      }
    }
  }
  const writeCompared = resp && ref
    ? await checkWrites(o, c, resp, ref, 4003) + await checkMultiWrites(o, c, resp, ref, 4030) : 0;
  compared += writeCompared;
  await c.end();
  if (resp) await resp.quit();
  if (ref) await ref.quit();
  process.stderr.write(`node client check: ${compared} comparisons (${writeCompared} of them writes), ${failures} mismatches\n`);
  process.stdout.write(JSON.stringify({ client: 'node', comparisons: compared, write_comparisons: writeCompared,
    mismatches: failures }) + '\n');
  process.exit(failures ? 1 : 0);
}

// ------------------------------------------------------------------ run

async function run(o) {
  const isSet = o.path === 'resp_set' || o.path === 'redis_set';
  const isMset = o.path === 'resp_mset' || o.path === 'redis_mset';
  const isResp = o.path === 'resp' || o.path === 'redis' || isSet || isMset;
  const isPair = o.path === 'update_pair';
  if (!isResp && !isPair && !SQL[o.path]) die(`unknown path ${o.path}`);
  if ((isSet || isMset || isPair || o.path === 'update16') && o.mode !== 'write') die(`path ${o.path} needs --mode write`);
  if (!['warm', 'miss', 'mixed', 'cold', 'write'].includes(o.mode)) die(`unknown mode ${o.mode}`);
  const conns = [];
  for (let i = 0; i < o.conns; i++) {
    const s = { index: i, seq: 0 };
    if (!isResp || o.mode === 'mixed') s.pg = await pgConnect(o);
    s.plain = isPair && i % 2 === 1;
    if (isPair) await s.pg.query(`SET application_name = 'local_cache_bench_${s.plain ? 'plain' : 'cached'}'`);
    if (o.path === 'resp_set' || o.path === 'resp_mset') s.r = await redisConnect(o.respPort, writerAuth(o));  // the default RESP role only reads
    else if (isResp) s.r = await redisConnect(o.path === 'resp' ? o.respPort : o.redisPort);
    conns.push(s);
  }
  const keysFor = (s) => {
    const k = new Array(o.batch);
    if (o.mode === 'warm' || o.path === 'update') for (let i = 0; i < o.batch; i++) k[i] = i + 1;
    else if (o.mode === 'miss') return missKeys(o, s.seq, s.index);
    else if (o.mode === 'mixed') {
      const start = (s.seq * o.batch + s.index * 7) % o.hot;
      for (let i = 0; i < o.batch; i++) k[i] = ((start + i) % o.hot) + 1;
    } else {
      const start = (s.seq * o.batch + s.index * 4099) % o.rows;
      for (let i = 0; i < o.batch; i++) k[i] = ((start + i) % o.rows) + 1;
    }
    return k;
  };
  // One request; returns true if it was an update.
  const one = async (s) => {
    if (isSet) {  // one random row, the whole object
      const id = 1 + Math.floor(Math.random() * o.rows);
      const r = await s.r.set(`${o.prefix}:${id}`, rowJson(id, randomValue()));
      if (r !== 'OK') throw new Error(`SET answered ${r}`);
      s.seq++;
      return true;
    }
    if (isMset) {  // 16 distinct random rows in one MSET, each object as SET sends it
      const args = ['MSET'];
      for (const id of distinctRows(MULTI_ROWS, o.rows)) args.push(`${o.prefix}:${id}`, rowJson(id, randomValue()));
      const r = await s.r.sendCommand(args);
      if (r !== 'OK') throw new Error(`MSET answered ${r}`);
      s.seq++;
      return true;
    }
    if (o.path === 'update16') {  // one statement writing 16 distinct random rows
      const ids = distinctRows(MULTI_ROWS, o.rows);
      const res = await s.pg.query({ name: 'q', text: SQL.update16, values: [ids, ids.map(() => randomValue())] });
      if (res.rowCount !== MULTI_ROWS) throw new Error(`UPDATE of 16 rows changed ${res.rowCount} rows`);
      s.seq++;
      return true;
    }
    const upd = o.path === 'update' || isPair || (o.mode === 'mixed' && Math.random() * 100 < o.updatePct);
    if (upd) {
      const id = 1 + Math.floor(Math.random() * (o.mode === 'mixed' ? o.hot : o.rows));
      await s.pg.query({ name: 'u', text: s.plain ? SQL.update_plain : UPDATE_SQL, values: [id, randomValue()] });
      s.seq++;
      return true;
    }
    const keys = keysFor(s);
    s.seq++;
    const present = keys.filter((k) => k >= 1 && k <= o.rows).length;
    const nulls = (arr) => arr.reduce((n, v) => n + (v === null ? 1 : 0), 0);
    if (isResp) {
      const vals = await s.r.mGet(keys.map((k) => `${o.prefix}:${k}`));
      const rows = vals.map((v) => (v === null ? null : JSON.parse(v)));  // decoded rows, like pg's json
      if (rows.length !== o.batch) throw new Error(`reply with ${rows.length} elements`);
      if (nulls(rows) !== o.batch - present) throw new Error(`reply with ${nulls(rows)} nils, expected ${o.batch - present}`);
    } else {
      const res = await s.pg.query({ name: 'q', text: SQL[o.path], values: [keys] });
      if (o.mode !== 'mixed') {
        const want = o.path === 'sql' || o.path === 'fdw' ? present : 1;
        if (res.rows.length !== want) throw new Error(`unexpected row count ${res.rows.length}`);
        if (want === 1 && Array.isArray(res.rows[0].r) && nulls(res.rows[0].r) !== o.batch - present)
          throw new Error(`${o.path} answered ${nulls(res.rows[0].r)} nulls, expected ${o.batch - present}`);
      }
    }
    return false;
  };
  for (const s of conns) for (let i = 0; i < 3; i++) await one(s);  // warm every connection

  const lines = readline.createInterface({ input: process.stdin });
  const it = lines[Symbol.asyncIterator]();
  process.stdout.write('READY\n');
  await it.next();
  const lat = [];
  let reads = 0; let updates = 0; let plainUpdates = 0; let stop = false;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  setTimeout(() => { stop = true; }, o.seconds * 1000);
  await Promise.all(conns.map(async (s) => {
    while (!stop) {
      const a = process.hrtime.bigint();
      const upd = await one(s);
      lat.push(Number(process.hrtime.bigint() - a) / 1000);
      if (upd) updates++; else reads++;
      if (s.plain) plainUpdates++;
    }
  }));
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  lat.sort((a, b) => a - b);
  const pct = (p) => (lat.length ? Math.round(lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))]) : 0);
  process.stdout.write(JSON.stringify({ requests: reads + updates, reads, updates, plain_updates: plainUpdates, elapsed_s: elapsed,
    client_cpu_s: (cpu.user + cpu.system) / 1e6, threads: 1,
    latency_us: { p50: pct(50), p90: pct(90), p99: pct(99), p999: pct(99.9), max: lat.length ? Math.round(lat[lat.length - 1]) : 0 } }) + '\n');
  await it.next();
  for (const s of conns) {
    if (s.pg) await s.pg.end();
    if (s.r) await s.r.quit();
  }
  process.exit(0);
}

const o = parseArgs(process.argv.slice(2));
const main = o.cmd === 'check' ? check : o.cmd === 'run' ? run : () => die('usage: client.js check|run ...');
main(o).catch((e) => die(e.stack || String(e)));
