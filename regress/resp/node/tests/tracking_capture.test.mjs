// CLIENT TRACKING while a cached table's capture triggers do not fire for every write
// (`ALTER TABLE ... DISABLE TRIGGER ALL`, as pg_restore --disable-triggers and bulk loaders do,
// and after `ENABLE TRIGGER ALL`, which leaves them firing ORIGIN only: logical-replication apply
// is not seen). Reads then go to the table, and nothing would tell a tracking connection of a
// change: so its read of such a key is not tracked, and the invalidation follows the reply at
// once (a client cache keeps the value only until that push). Keys read before the triggers
// were disabled are flushed when the ALTER TABLE commits. Once the triggers are back as
// enable() made them, reads are tracked again and writes push.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { psql } from './helpers.mjs';
import { RawResp, invalidatedKeys } from './resp3_raw.mjs';

const READER = 'regress_resp_reader'; // local_cache.resp_role in run.sh
const WRITER = 'regress_trkcap_writer';
const WRITER_PASSWORD = 'trkcap-Pw-3Vd9';
const T = 'trk_capture';
const key = (id) => `trkcap:${id}`;
const rowJson = (id, v) => JSON.stringify({ id, v });
const TRIGGERS = ['local_cache_mark_written', 'local_cache_invalidate', 'local_cache_invalidate_truncate'];

const conns = [];
async function tracker(...options) {
  return trackerWith({}, ...options);
}
async function trackerWith(connectOptions, ...options) {
  const c = await RawResp.connect(connectOptions);
  conns.push(c);
  await c.ok('CLIENT', 'TRACKING', 'ON', ...options);
  return c;
}
const show = (v) => JSON.stringify(v, (_, x) => (x instanceof Map ? Object.fromEntries(x) : x));

// The next push on c that is not a flush (an ALTER TABLE's flush may reach a connection opened
// just after it) must invalidate exactly `keys`.
async function nextKeys(c, what) {
  for (;;) {
    const p = await c.nextPush(5000);
    assert.notEqual(p, null, `no push within 5 s after ${what}`);
    if (invalidatedKeys(p) !== null) return invalidatedKeys(p);
  }
}
async function expectKeys(c, keys, what) {
  assert.deepEqual(await nextKeys(c, what), keys, `the push after ${what}`);
}

function restoreTriggers() {
  psql(`ALTER TABLE ${T} ${TRIGGERS.map((t) => `ENABLE ALWAYS TRIGGER ${t}`).join(', ')}`);
}

before(() => {
  psql(`CREATE TABLE ${T} (id integer PRIMARY KEY, v text);
        INSERT INTO ${T} SELECT g, 'v' || g FROM generate_series(1, 50) g;
        SELECT local_cache.enable('${T}', resp_prefix => 'trkcap');
        GRANT SELECT ON ${T} TO ${READER};
        CREATE ROLE ${WRITER} LOGIN PASSWORD '${WRITER_PASSWORD}';
        GRANT SELECT, INSERT, UPDATE, DELETE ON ${T} TO ${WRITER}`);
});
after(() => {
  for (const c of conns) c.close();
  psql(`DROP TABLE ${T}; DROP ROLE ${WRITER}`);
});

test('DISABLE TRIGGER ALL flushes what was tracked; a read while disabled is followed by its invalidation, so a later write leaves nothing stale', async () => {
  const c = await tracker();
  assert.equal(await c.call('GET', key(1)), rowJson(1, 'v1'));
  psql(`ALTER TABLE ${T} DISABLE TRIGGER ALL`);
  const flush = await c.nextPush(5000);
  assert.ok(flush !== null && (invalidatedKeys(flush) === null || invalidatedKeys(flush).includes(key(1))),
    `the ALTER TABLE pushes key 1 or a flush: ${show(flush)}`);
  assert.equal(await c.call('GET', key(2)), rowJson(2, 'v2'));
  await expectKeys(c, [key(2)], 'a GET while the triggers are disabled');
  assert.deepEqual(await c.call('MGET', key(3), key(4)), [rowJson(3, 'v3'), rowJson(4, 'v4')]);
  await expectKeys(c, [key(3), key(4)], 'an MGET while the triggers are disabled');
  psql(`UPDATE ${T} SET v = 'unseen' WHERE id = 2`);
  assert.equal(await c.call('GET', key(2)), rowJson(2, 'unseen'), 'the read goes to the table');
  await expectKeys(c, [key(2)], 'the GET after the uncaptured UPDATE');
  assert.deepEqual(await c.call('HGET', key(5), 'v'), 'v5');
  await expectKeys(c, [key(5)], 'an HGET while the triggers are disabled');
});

test('ENABLE TRIGGER ALL leaves the triggers ORIGIN only: still told at once; as enable() made them (ALWAYS) reads are tracked and writes push again', async () => {
  psql(`ALTER TABLE ${T} ENABLE TRIGGER ALL`);
  const c = await tracker();
  assert.equal(await c.call('GET', key(6)), rowJson(6, 'v6'));
  await expectKeys(c, [key(6)], 'a GET while the triggers fire ORIGIN only');
  restoreTriggers();
  // An ALTER TABLE's flush may reach a connection opened after it, and after its reads, which it
  // then forgets: until key 8's push comes with no flush before it, read again.
  const d = await tracker();
  for (let attempt = 1; ; attempt++) {
    assert.equal(await d.call('GET', key(7)), rowJson(7, 'v7'));
    assert.equal(await d.call('GET', key(8)), rowJson(8, attempt === 1 ? 'v8' : `seen ${attempt - 1}`));
    psql(`UPDATE ${T} SET v = 'seen ${attempt}' WHERE id = 8`);
    let flushed = false;
    for (;;) {
      const p = await d.nextPush(5000);
      assert.notEqual(p, null, 'no push after the UPDATE of key 8');
      if (invalidatedKeys(p) === null) {
        flushed = true;
        continue;
      }
      assert.deepEqual(invalidatedKeys(p), [key(8)], 'GET of key 7 with the triggers restored pushed nothing of its own');
      break;
    }
    if (!flushed || attempt === 3) break;
  }
  psql(`UPDATE ${T} SET v = 'seen' WHERE id = 7`);
  await expectKeys(d, [key(7)], 'a captured UPDATE of key 7');
});

test('BCAST and OPTIN: a BCAST connection whose prefix matches is told at once, OPTIN only after CLIENT CACHING YES', async () => {
  psql(`ALTER TABLE ${T} DISABLE TRIGGER ALL`);
  try {
    const b = await tracker('BCAST', 'PREFIX', 'trkcap:1');
    assert.equal(await b.call('GET', key(10)), rowJson(10, 'v10'));
    await expectKeys(b, [key(10)], 'a BCAST read of a matching key');
    const o = await tracker('OPTIN');
    assert.equal(await o.call('GET', key(11)), rowJson(11, 'v11'));
    await o.ok('CLIENT', 'CACHING', 'YES');
    assert.equal(await o.call('GET', key(12)), rowJson(12, 'v12'));
    await expectKeys(o, [key(12)], 'an OPTIN read after CLIENT CACHING YES (key 11 was not cached)');
  } finally {
    restoreTriggers();
  }
});

test('an EXEC that writes (run by a write worker) tells its reads of an uncaptured table at once too', async () => {
  psql(`ALTER TABLE ${T} DISABLE TRIGGER ALL`);
  try {
    const w = await trackerWith({ auth: [WRITER, WRITER_PASSWORD] });
    await w.ok('MULTI');
    await w.call('SET', key(20), JSON.stringify({ v: 'multi' }));
    await w.call('GET', key(21));
    const replies = await w.call('EXEC');
    assert.deepEqual(replies, ['OK', rowJson(21, 'v21')], `EXEC answered ${show(replies)}`);
    await expectKeys(w, [key(21)], 'an EXEC that wrote and read keys of the uncaptured table');
  } finally {
    restoreTriggers();
  }
});
