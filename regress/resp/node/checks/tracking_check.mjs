// The randomized checker of CLIENT TRACKING (issue #29): concurrent SQL writers (psql sessions:
// single-row and range UPDATEs, DELETEs, upserts, multi-statement transactions that commit or
// roll back, two-phase commits, now and then a TRUNCATE and reload, and a few writes while the
// table's capture triggers are disabled or fire ORIGIN only) and RESP writers (SET, DEL,
// HSET, MULTI/EXEC, on either worker) change a small key set, while tracking clients (RESP3:
// default mode, BCAST with and without PREFIX, OPTOUT, one that writes itself) keep a local copy
// as a client-side cache does: a read stores the reply (nil too), an invalidation push drops its
// keys, the null push drops everything, and a key in the copy is never asked again. After the
// writers stop, a short quiescence and a fence (one more commit, whose push each client awaits),
// every key of every copy must equal the table: a stale key is a committed change some tracking
// client was never told about, or was told about before the change could be read.
//
// With `restarts`, now and then a transaction is prepared, the RESP workers are terminated (the
// launcher starts them again; clients reconnect and, as client libraries do on a closed
// connection, drop their copies), and it commits once they serve again: the new workers must push
// its COMMIT PREPARED.
//
// Pushes and replies are applied in the order they arrived (RawResp.callSeq/drainPushes): a
// push that came before a GET's reply drops the key before the reply is stored, one that came
// after drops the stored reply.
import { RawResp, RespError, invalidatedKeys, PsqlSession, psqlAsync, connectOnWorker } from '../tests/resp3_raw.mjs';
import { sleep } from '../tests/helpers.mjs';

const TABLE = 'trk_check';
const PREFIX = 'trkchk';
const key = (id) => `${PREFIX}:${id}`;
const CAPTURE_TRIGGERS = ['local_cache_mark_written', 'local_cache_invalidate', 'local_cache_invalidate_truncate'];

// A small deterministic PRNG (mulberry32), so that a run's choices can be repeated with its seed (not its timing).
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// options: seconds, keys (ids 1..keys; keys + 100 is the fence), sqlWriters, respWriters, trackers, seed, writer
// ({ user, password }: a role that may write the table), log (progress lines)
export async function runTrackingCheck({
  seconds = 5, keys = 40, sqlWriters = 2, respWriters = 2, trackers = 6, seed = Date.now() % 1e9,
  writer, log = () => {}, quiescenceMs = 1000, fenceMs = 10000, restarts = 0,
}) {
  const rand = prng(seed);
  const pick = (n) => Math.floor(rand() * n);
  const randomId = () => 1 + pick(keys + 2); // a few ids past the end: inserts and nil reads
  const word = () => `w${pick(1e6)}`;
  log(`tracking-check: seed ${seed}, ${seconds} s, ${keys} keys, ${sqlWriters} SQL and ${respWriters} RESP writers, ${trackers} tracking clients`);

  await psqlAsync(`DROP TABLE IF EXISTS ${TABLE};
    CREATE TABLE ${TABLE} (id integer PRIMARY KEY, v text, n integer);
    INSERT INTO ${TABLE} SELECT g, 'init', 0 FROM generate_series(1, ${keys}) g;
    SELECT local_cache.enable('${TABLE}', resp_prefix => '${PREFIX}');
    GRANT SELECT ON ${TABLE} TO regress_resp_reader;
    GRANT SELECT, INSERT, UPDATE, DELETE ON ${TABLE} TO ${writer.user}`);

  const stats = { sqlStatements: 0, respWrites: 0, respErrors: 0, reads: 0, localHits: 0, pushes: 0, flushes: 0, busy: 0,
    uncaptured: 0, restarts: 0, reconnects: 0 };
  const conns = [];
  let stop = false;
  let failure = null; // the first error of any loop: it stops them all
  const fail = (e) => {
    failure = failure || e;
    stop = true;
  };
  const deadline = Date.now() + seconds * 1000;
  const writing = () => Date.now() < deadline && !failure;

  // ---- tracking clients
  const modes = [[], [], ['BCAST', 'PREFIX', `${PREFIX}:`], ['BCAST'], ['OPTOUT'], ['writes']];
  const clients = [];
  let first = null;
  for (let i = 0; i < trackers; i++) {
    const mode = modes[i % modes.length];
    const writes = mode[0] === 'writes';
    const options = { auth: writes ? [writer.user, writer.password] : null };
    // spread over the workers: every other one off the first one's worker
    const c = first === null ? await RawResp.connect(options) : await connectOnWorker(first.worker, i % 2 === 0, options);
    if (first === null) first = c;
    conns.push(c);
    const reply = await c.call('CLIENT', 'TRACKING', 'ON', ...(writes ? [] : mode));
    if (reply !== 'OK') throw new Error(`CLIENT TRACKING ON ${mode.join(' ')} answered ${reply instanceof RespError ? `-${reply}` : JSON.stringify(reply)}`);
    clients.push({ c, mode: mode.join(' ') || 'default', writes, options, trackingArgs: writes ? [] : mode, copy: new Map() });
  }

  // A connection the server closed (its worker ended): connect again, as often as it takes
  // while the launcher restarts the workers.
  const closedByServer = (e) => /connection closed by the server|ECONNREFUSED|ECONNRESET|EPIPE/.test(String(e && e.message));
  // ... or one meant for the other worker, which the launcher has not started again yet (it starts
  // them one after the other: all of connectOnWorker's tries can land on the one already back)
  const workerNotBack = (e) => /connections, none (on|off) worker/.test(String(e && e.message));
  async function reconnect(open) {
    const until = Date.now() + 30000;
    for (;;) {
      try {
        return await open();
      } catch (e) {
        if (!(closedByServer(e) || workerNotBack(e)) || Date.now() > until) throw e;
        await sleep(50);
      }
    }
  }
  async function reconnectTracker(t) {
    t.c.close();
    t.copy.clear(); // a closed tracking connection means "drop everything"
    stats.reconnects++;
    t.c = await reconnect(async () => {
      const c = await RawResp.connect(t.options);
      conns.push(c);
      const reply = await c.call('CLIENT', 'TRACKING', 'ON', ...t.trackingArgs);
      if (reply !== 'OK') throw new Error(`CLIENT TRACKING ON answered ${JSON.stringify(reply)}`);
      return c;
    });
  }

  const applyPush = (t, push) => {
    const k = invalidatedKeys(push);
    if (k === undefined) throw new Error(`tracking client (${t.mode}) got a push that is no invalidation: ${JSON.stringify(push)}`);
    stats.pushes++;
    if (k === null) {
      stats.flushes++;
      t.copy.clear();
    } else {
      for (const x of k) t.copy.delete(x);
    }
  };
  const applyPushes = (t, beforeSeq = Infinity) => {
    const rest = [];
    for (const p of t.c.drainPushes()) {
      if (p.seq < beforeSeq) applyPush(t, p.value);
      else rest.push(p);
    }
    return rest;
  };

  async function trackerLoop(t) {
    while (!stop) {
      try {
        await trackerStep(t);
      } catch (e) {
        if (!restarts || !closedByServer(e)) throw e;
        await reconnectTracker(t);
      }
    }
  }
  async function trackerStep(t) {
    {
      applyPushes(t);
      const id = randomId();
      if (t.copy.has(key(id))) {
        stats.localHits++;
        // a local hit costs nothing: pace them, or six loops take both cores from the server
        if (stats.localHits % 4 === 0) await sleep(1);
        return;
      }
      if (t.writes && rand() < 0.1) {
        const r = await t.c.call('SET', key(id), JSON.stringify({ v: `self ${word()}`, n: pick(100) }));
        if (r instanceof RespError) stats.respErrors++;
        else stats.respWrites++;
        return;
      }
      const optoutSkip = t.mode === 'OPTOUT' && rand() < 0.2;
      if (optoutSkip) await t.c.ok('CLIENT', 'CACHING', 'NO');
      const [value, seq] = await t.c.callSeq('GET', key(id));
      stats.reads++;
      // pushes that came before the reply concern what was read earlier
      const after = applyPushes(t, seq);
      if (value instanceof RespError) {
        if (/^BUSY /.test(value.message)) stats.busy++;
        else throw new Error(`GET ${key(id)} answered -${value.message}`);
      } else if (!optoutSkip) {
        t.copy.set(key(id), value);
      }
      for (const p of after) applyPush(t, p.value);
    }
  }

  // ---- SQL writers
  let prepared = 0;
  const sqlStatement = () => {
    const r = rand();
    const id = randomId();
    const set = `v = '${word()}', n = n + 1`;
    if (r < 0.35) return `UPDATE ${TABLE} SET ${set} WHERE id = ${id};`;
    if (r < 0.45) return `UPDATE ${TABLE} SET ${set} WHERE id BETWEEN ${id} AND ${id + pick(5)};`;
    if (r < 0.55) return `DELETE FROM ${TABLE} WHERE id = ${id};`;
    if (r < 0.7) return `INSERT INTO ${TABLE} VALUES (${id}, '${word()}', 0) ON CONFLICT (id) DO UPDATE SET v = excluded.v;`;
    if (r < 0.8) return `BEGIN; UPDATE ${TABLE} SET ${set} WHERE id = ${id}; DELETE FROM ${TABLE} WHERE id = ${randomId()}; COMMIT;`;
    if (r < 0.88) return `BEGIN; UPDATE ${TABLE} SET v = 'rolled back' WHERE id = ${id}; DELETE FROM ${TABLE} WHERE id = ${randomId()}; ROLLBACK;`;
    if (r < 0.93) return `BEGIN; UPDATE ${TABLE} SET ${set} WHERE id = ${id}; SAVEPOINT s; UPDATE ${TABLE} SET v = 'undone' WHERE id = ${randomId()}; ROLLBACK TO SAVEPOINT s; COMMIT;`;
    if (r < 0.97) {
      const gid = `trkchk_${seed}_${prepared++}`;
      return `BEGIN; UPDATE ${TABLE} SET ${set} WHERE id = ${id}; PREPARE TRANSACTION '${gid}'; ${rand() < 0.8 ? 'COMMIT' : 'ROLLBACK'} PREPARED '${gid}';`;
    }
    if (r < 0.975) return `BEGIN; TRUNCATE ${TABLE}; INSERT INTO ${TABLE} SELECT g, 'reloaded', 0 FROM generate_series(1, ${keys}) g; COMMIT;`;
    if (r < 0.985) {
      // writes nothing captures: triggers disabled, then firing ORIGIN only, then as enable() made them
      stats.uncaptured++;
      return `ALTER TABLE ${TABLE} DISABLE TRIGGER ALL; UPDATE ${TABLE} SET ${set} WHERE id = ${id}; SELECT pg_sleep(0.02);
        DELETE FROM ${TABLE} WHERE id = ${randomId()}; ALTER TABLE ${TABLE} ENABLE TRIGGER ALL;
        INSERT INTO ${TABLE} VALUES (${randomId()}, '${word()}', 0) ON CONFLICT (id) DO UPDATE SET v = excluded.v; SELECT pg_sleep(0.02);
        ALTER TABLE ${TABLE} ${CAPTURE_TRIGGERS.map((t) => `ENABLE ALWAYS TRIGGER ${t}`).join(', ')};`;
    }
    const copied = randomId();
    return `BEGIN; DELETE FROM ${TABLE} WHERE id = ${copied}; COPY ${TABLE} FROM PROGRAM 'printf "${copied}\\tcopied\\t0\\n"'; COMMIT;`;
  };
  async function sqlWriterLoop() {
    const s = new PsqlSession();
    // a lock wait (TRUNCATE, a range UPDATE) must not outlast the run
    await s.write(`SET lock_timeout = '2s';`);
    while (writing()) {
      await s.write(sqlStatement());
      stats.sqlStatements++;
      await sleep(2 + pick(8));
    }
    await s.end();
    // deadlocks and lock timeouts are expected under this contention; anything else is not
    const unexpected = s.errors.split('\n').filter((l) => /^(ERROR|FATAL|psql)/.test(l) &&
      !/deadlock detected|lock timeout|could not serialize|duplicate key|current transaction is aborted|prepared transaction with identifier/.test(l));
    if (unexpected.length) throw new Error(`SQL writer: ${unexpected.slice(0, 5).join(' | ')}`);
  }

  // ---- RESP writers
  async function respWriterLoop(i) {
    const open = async () => {
      const c = await connectOnWorker(first.worker, i % 2 === 0, { protocol: 2, auth: [writer.user, writer.password] });
      conns.push(c);
      return c;
    };
    let w = await open();
    while (writing()) {
      try {
        await respWrite(w);
      } catch (e) {
        if (!restarts || !closedByServer(e)) throw e;
        w.close();
        w = await reconnect(open);
      }
    }
  }
  async function respWrite(w) {
    {
      const r = rand();
      const id = randomId();
      let reply;
      if (r < 0.4) reply = await w.call('SET', key(id), JSON.stringify({ v: word(), n: pick(100) }));
      else if (r < 0.55) reply = await w.call('DEL', key(id));
      else if (r < 0.8) reply = await w.call('HSET', key(id), 'v', word());
      else {
        await w.call('MULTI');
        await w.call('SET', key(id), JSON.stringify({ v: word(), n: 1 }));
        await w.call('DEL', key(randomId()));
        reply = await w.call('EXEC');
      }
      if (reply instanceof RespError || reply === null) stats.respErrors++;
      else stats.respWrites++;
      await sleep(pick(5));
    }
  }

  // ---- worker restarts with a transaction prepared
  async function restartLoop() {
    for (let n = 0; n < restarts && writing(); n++) {
      await sleep(seconds * 1000 / (restarts + 1));
      const gid = `trkchk_${seed}_restart_${n}`;
      await psqlAsync(`SET lock_timeout = '5s'; BEGIN; UPDATE ${TABLE} SET v = 'prepared ${n}', n = n + 1 WHERE id = ${randomId()};
        PREPARE TRANSACTION '${gid}'`);
      await psqlAsync(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker'`);
      stats.restarts++;
      // the workers serve again (the launcher waits a moment), and trackers read meanwhile
      await sleep(1500);
      await psqlAsync(`COMMIT PREPARED '${gid}'`);
    }
  }

  try {
    const loops = clients.map((t) => trackerLoop(t).catch(fail));
    const writers = [];
    for (let i = 0; i < sqlWriters; i++) writers.push(sqlWriterLoop().catch(fail));
    for (let i = 0; i < respWriters; i++) writers.push(respWriterLoop(i).catch(fail));
    if (restarts) writers.push(restartLoop().catch(fail));
    await Promise.all(writers);
    if (failure) throw failure;
    log(`tracking-check: writers stopped; ${quiescenceMs} ms of quiescence, then the fence`);
    await sleep(quiescenceMs);
    stop = true;
    await Promise.all(loops);
    if (failure) throw failure;
    // The fence: every client reads a key no writer touches, one more commit changes it, and each
    // client takes its pushes up to that key's: pushes come in commit order, so by then every
    // earlier commit's push has arrived, however loaded the machine.
    const fenceKey = key(keys + 100);
    for (const t of clients) {
      const [value, seq] = await t.c.callSeq('GET', fenceKey);
      if (value instanceof RespError) throw new Error(`GET ${fenceKey} answered -${value.message}`);
      for (const p of applyPushes(t, seq)) applyPush(t, p.value);
    }
    await psqlAsync(`INSERT INTO ${TABLE} VALUES (${keys + 100}, 'fence', 0) ON CONFLICT (id) DO UPDATE SET v = 'fence 2'`);
    const fenceMissing = [];
    const fenceDeadline = Date.now() + fenceMs;
    await Promise.all(clients.map(async (t) => {
      for (;;) {
        const p = await t.c.nextPush(Math.max(0, fenceDeadline - Date.now()));
        if (p === null) {
          fenceMissing.push(`${t.mode} (worker ${t.c.worker})`);
          return;
        }
        const k = invalidatedKeys(p);
        applyPush(t, p);
        if (Array.isArray(k) && k.includes(fenceKey)) return;
      }
    }));

    const out = await psqlAsync(`SELECT id, row_to_json(t)::text FROM ${TABLE} t`);
    const table = new Map();
    for (const line of out ? out.split('\n') : []) {
      const bar = line.indexOf('|');
      table.set(key(Number(line.slice(0, bar))), line.slice(bar + 1));
    }
    const stale = [];
    let compared = 0;
    for (const t of clients) {
      for (const [k, v] of t.copy) {
        compared++;
        const now = table.get(k) ?? null;
        if (v !== now) stale.push({ client: t.mode, worker: t.c.worker, key: k, cached: v, table: now });
      }
    }
    const leftover = (await psqlAsync(`SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'trkchk_%'`)).trim();
    log(`tracking-check: ${stats.sqlStatements} SQL statements, ${stats.respWrites} RESP writes (${stats.respErrors} refused), ` +
      `${stats.reads} reads, ${stats.localHits} local hits, ${stats.pushes} pushes (${stats.flushes} flushes), ${stats.busy} BUSY, ` +
      `${stats.uncaptured} uncaptured windows, ${stats.restarts} worker restarts (${stats.reconnects} reconnects); ` +
      `${compared} cached keys compared, ${stale.length} stale`);
    for (const s of stale.slice(0, 20)) log(`tracking-check: STALE ${JSON.stringify(s)}`);
    if (fenceMissing.length) log(`tracking-check: no push for the fence ${fenceKey} within ${fenceMs} ms: ${fenceMissing.join(', ')}`);
    return { seed, stats, compared, stale, fenceMissing, leftoverPrepared: Number(leftover) };
  } finally {
    stop = true;
    for (const c of conns) c.close();
  }
}
