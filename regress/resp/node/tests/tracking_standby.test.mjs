// CLIENT TRACKING on a hot standby (issue #29): the standby's RESP server pushes the same
// invalidations when the primary's changes are replayed, and only then (a GET on the push sees
// the replayed row). The standby is made here from run.sh's cluster (tools/cluster.sh standby,
// in LC_STANDBY_DIR, which run.sh destroys in any case) with its own RESP port.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { psql, waitFor } from './helpers.mjs';
import { RawResp, invalidatedKeys } from './resp3_raw.mjs';

const CLUSTER_SH = process.env.LC_CLUSTER_SH;
const PRIMARY_DIR = process.env.LC_CLUSTER_DIR;
const STANDBY_DIR = process.env.LC_STANDBY_DIR;
const T = 'trk_sb';
const key = (id) => `trksb:${id}`;
const rowJson = (id, v) => JSON.stringify({ id, v });
let standbyPort;
const conns = [];

const cluster = (...args) => execFileSync(CLUSTER_SH, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120000 });

async function tracker() {
  const c = await RawResp.connect({ port: standbyPort });
  conns.push(c);
  await c.ok('CLIENT', 'TRACKING', 'ON');
  return c;
}

async function expectPush(c, expected, what) {
  const p = await c.nextPush(10000);
  assert.notEqual(p, null, `no push on the standby within 10 s after ${what}`);
  assert.deepEqual(invalidatedKeys(p), expected, `after ${what}: ${JSON.stringify(p)}`);
}

before(async () => {
  assert.ok(STANDBY_DIR, 'LC_STANDBY_DIR is not set: run through regress/resp/node/run.sh');
  psql(`CREATE TABLE ${T} (id integer PRIMARY KEY, v text);
        INSERT INTO ${T} SELECT g, 'v' || g FROM generate_series(1, 100) g;
        SELECT local_cache.enable('${T}', resp_prefix => 'trksb');
        GRANT SELECT ON ${T} TO regress_resp_reader`);
  standbyPort = Number(cluster('freeport').trim());
  cluster('standby', PRIMARY_DIR, STANDBY_DIR, 'auto', `local_cache.resp_port = ${standbyPort}`);
  let last;
  await waitFor('the standby\'s RESP server to serve the table', 30000, async () => {
    try {
      const c = await RawResp.connect({ port: standbyPort });
      last = await c.call('GET', key(1));
      c.close();
      return last === rowJson(1, 'v1');
    } catch (e) {
      last = e.message;
      return false;
    }
  }, () => `GET ${key(1)} answered ${last}`);
});

after(() => {
  for (const c of conns) c.close();
  try {
    cluster('destroy', STANDBY_DIR);
  } finally {
    psql(`DROP TABLE ${T}`);
  }
});

test('standby: a replayed UPDATE, DELETE and INSERT (of a key read as nil) push their keys; a GET on the push sees the replayed row', async () => {
  const c = await tracker();
  assert.equal(await c.call('GET', key(10)), rowJson(10, 'v10'));
  psql(`UPDATE ${T} SET v = 'replayed' WHERE id = 10`);
  await expectPush(c, [key(10)], 'UPDATE on the primary');
  assert.equal(await c.call('GET', key(10)), rowJson(10, 'replayed'));
  psql(`DELETE FROM ${T} WHERE id = 10`);
  await expectPush(c, [key(10)], 'DELETE on the primary');
  assert.equal(await c.call('GET', key(10)), null);
  psql(`INSERT INTO ${T} VALUES (10, 'again')`);
  await expectPush(c, [key(10)], 'INSERT on the primary');
  assert.equal(await c.call('GET', key(10)), rowJson(10, 'again'));
});

test('standby: a transaction rolled back on the primary pushes nothing (the next committed change is the next push)', async () => {
  const c = await tracker();
  assert.equal(await c.call('GET', key(20)), rowJson(20, 'v20'));
  assert.equal(await c.call('GET', key(21)), rowJson(21, 'v21'));
  psql(`BEGIN; UPDATE ${T} SET v = 'rolled back' WHERE id = 20; ROLLBACK`);
  psql(`UPDATE ${T} SET v = 'fence' WHERE id = 21`);
  await expectPush(c, [key(21)], 'a rollback, then a committed UPDATE of another key');
});

test('standby: TRUNCATE replayed sends the null invalidation', async () => {
  const c = await tracker();
  assert.equal(await c.call('GET', key(30)), rowJson(30, 'v30'));
  psql(`TRUNCATE ${T}`);
  await expectPush(c, null, 'TRUNCATE on the primary');
  assert.equal(await c.call('GET', key(30)), null);
});

// Closed within ms, or false.
const closedWithin = (c, ms) => Promise.race([c.closed.then(() => true), new Promise((r) => setTimeout(() => r(false), ms))]);

test('standby: while the primary does not log invalidations its tracking connections are closed (and any that turns tracking on); logged again, tracking works', async () => {
  psql(`INSERT INTO ${T} SELECT g, 'v' || g FROM generate_series(40, 42) g ON CONFLICT DO NOTHING`); // after TRUNCATE
  const c = await tracker();
  await waitFor('the rows on the standby', 10000, async () => (await c.call('GET', key(40))) === rowJson(40, 'v40'));
  psql(`ALTER SYSTEM SET local_cache.wal_invalidations = off`);
  psql('SELECT pg_reload_conf()');
  await new Promise((r) => setTimeout(r, 500));
  psql(`UPDATE ${T} SET v = 'unlogged' WHERE id = 40`); // the first unlogged write: a STOP record
  assert.ok(await closedWithin(c, 10000), 'the tracking connection stayed open after STOP was replayed');
  const d = await RawResp.connect({ port: standbyPort });
  conns.push(d);
  await d.call('CLIENT', 'TRACKING', 'ON').catch(() => null); // closed at once: its reply may not come
  assert.ok(await closedWithin(d, 10000), 'a connection that turned tracking on while stopped stayed open');
  psql(`ALTER SYSTEM RESET local_cache.wal_invalidations`);
  psql('SELECT pg_reload_conf()');
  let e;
  await waitFor('tracking on the standby again', 30000, async () => {
    psql(`UPDATE ${T} SET v = 'logged ' || now() WHERE id = 41`); // a logged write: START, once no unlogged writer is left
    e = await RawResp.connect({ port: standbyPort });
    conns.push(e);
    if ((await e.call('CLIENT', 'TRACKING', 'ON').catch(() => null)) === null) return false;
    return !(await closedWithin(e, 500));
  });
  assert.notEqual(await e.call('GET', key(42)), null);
  psql(`UPDATE ${T} SET v = 'tracked again' WHERE id = 42`);
  await expectPush(e, [key(42)], 'an UPDATE once invalidations are logged again');
});

test('standby: while the table\'s capture triggers are disabled on the primary, a read is followed by its invalidation; an uncaptured write leaves nothing stale', async () => {
  psql(`INSERT INTO ${T} VALUES (60, 'v60'), (61, 'v61') ON CONFLICT (id) DO UPDATE SET v = excluded.v`);
  const c = await tracker();
  await waitFor('the rows on the standby', 10000, async () => (await c.call('GET', key(61))) === rowJson(61, 'v61'));
  assert.equal(await c.call('GET', key(60)), rowJson(60, 'v60'));
  psql(`ALTER TABLE ${T} DISABLE TRIGGER ALL`);
  try {
    // (the INSERT's own push may come first)
    await c.pushesUntil((p) => invalidatedKeys(p) === null || invalidatedKeys(p).includes(key(60)), 10000,
      'the replayed ALTER TABLE\'s push of key 60 or a flush');
    psql(`UPDATE ${T} SET v = 'unseen' WHERE id = 61`);
    await waitFor('the replayed UPDATE', 10000, async () => (await c.call('GET', key(61))) === rowJson(61, 'unseen'));
    let p;
    do p = await c.nextPush(10000); while (p !== null && invalidatedKeys(p) === null);
    assert.deepEqual(invalidatedKeys(p), [key(61)], 'a GET while the triggers are disabled is followed by its invalidation');
  } finally {
    psql(`ALTER TABLE ${T} ENABLE ALWAYS TRIGGER local_cache_mark_written, ENABLE ALWAYS TRIGGER local_cache_invalidate,
          ENABLE ALWAYS TRIGGER local_cache_invalidate_truncate`);
  }
});
