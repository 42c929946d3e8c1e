// Server-assisted client-side caching (issue #29): CLIENT TRACKING as Redis 7.2 documents it,
// with invalidations driven by what commits in PostgreSQL. Raw RESP3 connections
// (resp3_raw.mjs) see the pushes as sent: `>2 invalidate [keys]`, the null flush `>2 invalidate _`,
// and over RESP2 the Pub/Sub message of `__redis__:invalidate` on a REDIRECT target. Each rule
// of the issue has its test: every write path pushes, nothing for keys not read, a key is
// re-tracked only by a new read, rollback and PREPARE are silent, nil keys are tracked, NOLOOP,
// BCAST/PREFIX, OPTIN/OPTOUT, REDIRECT on either worker, flushes (also when a type the rows are
// made of is altered), across workers, commit-exact
// (a GET on the push sees the new row), CLIENT TRACKINGINFO/GETREDIR/CACHING and INFO, the
// bounded table (local_cache.resp_tracking_max_keys), and node-redis's clientSideCache.
//
// That something was NOT pushed is shown without waiting for a timeout: a later change to a
// tracked "fence" key is committed, and the pushes up to the fence's must hold nothing else
// (pushes reach a connection in commit order).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { psql, redis6, closeAll, setSetting, waitFor } from './helpers.mjs';
import { RawResp, RespError, invalidatedKeys, connectOnWorker, psqlAsync } from './resp3_raw.mjs';

const READER = 'regress_resp_reader'; // local_cache.resp_role in run.sh
const WRITER = 'regress_trk_writer';
const WRITER_PASSWORD = 'trk-wrt-Pw-5Hn1';
const T = 'trk'; // prefix trk
const OTHER = 'trk_other'; // prefix other
const FLUSH = 'trk_flush'; // prefix trkflush
const TYPED = 'trk_typed'; // prefix trktyped: rows made of an enum array and a composite type
// NOLOOP's side effects, read by those tests only: a child table whose rows go with their parent
// (ON DELETE CASCADE), and a table whose trigger echoes a write of row n < 1000 into row n + 1000.
const PARENT = 'trk_parent'; // prefix trkparent
const CHILD = 'trk_child'; // prefix trkchild
const ECHO = 'trk_echo'; // prefix trkecho
const key = (id) => `trk:${id}`;
const rowJson = (id, v) => JSON.stringify({ id, v });

const conns = [];
async function open(options = {}) {
  const c = await RawResp.connect(options);
  conns.push(c);
  return c;
}
// A RESP3 connection with CLIENT TRACKING ON and these options.
async function tracker(...options) {
  const c = await open();
  await c.ok('CLIENT', 'TRACKING', 'ON', ...options);
  return c;
}
const writer = () => open({ protocol: 2, auth: [WRITER, WRITER_PASSWORD] });
const show = (v) => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? String(x) : x instanceof Map ? Object.fromEntries(x) : x));
const update = (id, v) => psql(`UPDATE ${T} SET v = '${v}' WHERE id = ${id}`);

// Reads `ids` on c (tracking them) and checks the values are the table's.
async function read(c, ...ids) {
  for (const id of ids) {
    const got = await c.call('GET', key(id));
    assert.ok(!(got instanceof RespError), `GET ${key(id)} answered -${got}`);
    const sql = psql(`SELECT row_to_json(t)::text FROM ${T} t WHERE id = ${id}`);
    assert.equal(got, sql === '' ? null : sql, `GET ${key(id)}`);
  }
}

// Waits until the pushes on c have invalidated every key of `keys`; any other push before that
// (another key, a flush, not an invalidation) fails the test.
async function expectInvalidation(c, keys, ms = 5000) {
  const want = new Set(keys);
  const seen = new Set();
  const pushes = await c.pushesUntil((p) => {
    const k = invalidatedKeys(p);
    if (Array.isArray(k)) k.forEach((x) => seen.add(x));
    return [...want].every((x) => seen.has(x));
  }, ms, `invalidation of ${keys.join(' ')}`);
  for (const p of pushes) {
    const k = invalidatedKeys(p);
    assert.ok(Array.isArray(k), `expected the invalidation of ${keys.join(' ')}, got the push ${show(p)} first`);
    for (const x of k) assert.ok(want.has(x), `expected the invalidation of ${keys.join(' ')} only, got ${show(p)}`);
  }
}

// The flush-all invalidation (a null instead of the key array) must be the next push on c.
async function expectFlush(c, ms = 5000) {
  const p = await c.nextPush(ms);
  assert.notEqual(p, null, `no push within ${ms} ms, expected >2 invalidate _`);
  assert.equal(invalidatedKeys(p), null, `expected >2 invalidate _ (null), got ${show(p)}`);
}

// The fence: commit a change of the tracked key fenceId and expect its push and nothing before.
async function fence(c, fenceId) {
  update(fenceId, `fence ${Date.now()}`);
  await expectInvalidation(c, [key(fenceId)]);
}

function info(text) {
  const out = {};
  for (const line of String(text).split(/\r?\n/)) {
    const m = /^([a-z_0-9]+):(.*)$/.exec(line);
    if (m) out[m[1]] = m[2];
  }
  return out;
}
async function trackingStats(c) {
  const i = info(await c.must('INFO'));
  for (const f of ['tracking_total_keys', 'tracking_total_items', 'tracking_total_prefixes']) {
    assert.ok(f in i, `INFO has no ${f}`);
  }
  return { keys: Number(i.tracking_total_keys), items: Number(i.tracking_total_items), prefixes: Number(i.tracking_total_prefixes) };
}

// CLIENT TRACKINGINFO as an object (a RESP3 map, or RESP2's flat array).
async function trackingInfo(c) {
  const r = await c.must('CLIENT', 'TRACKINGINFO');
  const m = r instanceof Map ? r : new Map(r.reduce((acc, x, i) => (i % 2 ? acc : [...acc, [x, r[i + 1]]]), []));
  return { flags: [...m.get('flags')].sort(), redirect: Number(m.get('redirect')), prefixes: [...m.get('prefixes')].sort() };
}

before(() => {
  psql(`CREATE ROLE ${WRITER} LOGIN PASSWORD '${WRITER_PASSWORD}';
        CREATE TABLE ${T} (id integer PRIMARY KEY, v text);
        INSERT INTO ${T} SELECT g, 'v' || g FROM generate_series(1, 999) g;
        SELECT local_cache.enable('${T}', resp_prefix => 'trk');
        CREATE TABLE ${OTHER} (id integer PRIMARY KEY, v text);
        INSERT INTO ${OTHER} SELECT g, 'o' || g FROM generate_series(1, 10) g;
        SELECT local_cache.enable('${OTHER}', resp_prefix => 'other');
        CREATE TABLE ${FLUSH} (id integer PRIMARY KEY, v text);
        INSERT INTO ${FLUSH} SELECT g, 'f' || g FROM generate_series(1, 10) g;
        SELECT local_cache.enable('${FLUSH}', resp_prefix => 'trkflush');
        CREATE TYPE trk_mood AS ENUM ('happy', 'sad');
        CREATE TYPE trk_point AS (x integer, y integer);
        CREATE TABLE ${TYPED} (id integer PRIMARY KEY, moods trk_mood[], p trk_point);
        INSERT INTO ${TYPED} VALUES (1, '{happy}', '(1,2)');
        SELECT local_cache.enable('${TYPED}', resp_prefix => 'trktyped');
        CREATE TABLE ${PARENT} (id integer PRIMARY KEY, v text);
        INSERT INTO ${PARENT} SELECT g, 'p' || g FROM generate_series(1, 10) g;
        SELECT local_cache.enable('${PARENT}', resp_prefix => 'trkparent');
        CREATE TABLE ${CHILD} (id integer PRIMARY KEY, parent integer REFERENCES ${PARENT} ON DELETE CASCADE, v text);
        INSERT INTO ${CHILD} SELECT g, g, 'c' || g FROM generate_series(1, 10) g;
        SELECT local_cache.enable('${CHILD}', resp_prefix => 'trkchild');
        CREATE TABLE ${ECHO} (id integer PRIMARY KEY, v text);
        INSERT INTO ${ECHO} SELECT g, 'e' || g FROM generate_series(1, 10) g UNION ALL SELECT g + 1000, 'e' || g + 1000 FROM generate_series(1, 10) g;
        CREATE FUNCTION trk_echo_write() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN UPDATE public.${ECHO} SET v = 'echo of ' || NEW.v WHERE id = NEW.id + 1000; RETURN NULL; END $$;
        CREATE TRIGGER trk_echo AFTER INSERT OR UPDATE ON ${ECHO} FOR EACH ROW WHEN (NEW.id < 1000) EXECUTE FUNCTION trk_echo_write();
        SELECT local_cache.enable('${ECHO}', resp_prefix => 'trkecho');
        GRANT SELECT ON ${T}, ${OTHER}, ${FLUSH}, ${TYPED}, ${PARENT}, ${CHILD}, ${ECHO} TO ${READER};
        GRANT SELECT, INSERT, UPDATE, DELETE ON ${T}, ${OTHER}, ${PARENT}, ${CHILD}, ${ECHO} TO ${WRITER}`);
});
after(async () => {
  for (const c of conns) c.close();
  await closeAll();
  psql(`DROP TABLE ${T}, ${OTHER}, ${FLUSH}, ${TYPED}, ${CHILD}, ${PARENT}, ${ECHO}; DROP FUNCTION trk_echo_write();
        DROP TYPE trk_mood, trk_point; DROP ROLE ${WRITER}`);
});

// ---- (a) every write path pushes the keys a connection read

test('SQL UPDATE of a row read under CLIENT TRACKING ON (RESP3): >2 invalidate [key]', async () => {
  const c = await tracker();
  await read(c, 10);
  update(10, 'updated');
  await expectInvalidation(c, [key(10)]);
});

test('SQL INSERT of a key read as nil, DELETE and COPY of keys read: each pushes its key', async () => {
  const c = await tracker();
  psql(`DELETE FROM ${T} WHERE id IN (20, 22)`);
  await read(c, 20, 21);
  psql(`INSERT INTO ${T} VALUES (20, 'inserted')`);
  await expectInvalidation(c, [key(20)]);
  psql(`DELETE FROM ${T} WHERE id = 21`);
  await expectInvalidation(c, [key(21)]);
  await read(c, 22);
  await psqlAsync(`COPY ${T} (id, v) FROM STDIN`, { input: '22\tcopied\n\\.\n' });
  await expectInvalidation(c, [key(22)]);
  await read(c, 22); // the new row, read again
});

test('RESP SET, HSET and DEL from another connection push the key to the tracking one', async () => {
  const c = await tracker();
  const w = await writer();
  await read(c, 30);
  await w.ok('SET', key(30), '{"v":"by set"}');
  await expectInvalidation(c, [key(30)]);
  await read(c, 30);
  await w.must('HSET', key(30), 'v', 'by hset');
  await expectInvalidation(c, [key(30)]);
  await read(c, 30);
  assert.equal(await w.must('DEL', key(30)), 1);
  await expectInvalidation(c, [key(30)]);
  await read(c, 30); // nil now
});

test('MGET, HGET, HGETALL, EXISTS and a GET inside MULTI/EXEC track their keys as GET does', async () => {
  const c = await tracker();
  await c.must('MGET', key(40), key(41));
  await c.must('HGET', key(42), 'v');
  await c.must('HGETALL', key(43));
  await c.must('EXISTS', key(44));
  await c.ok('MULTI');
  assert.equal(await c.call('GET', key(45)), 'QUEUED');
  assert.deepEqual(await c.must('EXEC'), [rowJson(45, 'v45')]);
  psql(`UPDATE ${T} SET v = v || '!' WHERE id BETWEEN 40 AND 45`);
  await expectInvalidation(c, [40, 41, 42, 43, 44, 45].map(key));
});

test('a GET inside a MULTI/EXEC that writes (run by a write worker) tracks its key as GET does', async () => {
  const c = await open({ auth: [WRITER, WRITER_PASSWORD] });
  await c.ok('CLIENT', 'TRACKING', 'ON', 'NOLOOP');
  await c.ok('MULTI');
  assert.equal(await c.call('SET', key(48), '{"v":"exec write"}'), 'QUEUED');
  assert.equal(await c.call('GET', key(49)), 'QUEUED');
  assert.deepEqual(await c.must('EXEC'), ['OK', rowJson(49, 'v49')]);
  psql(`UPDATE ${T} SET v = v || '!' WHERE id = 49`);
  await expectInvalidation(c, [key(49)]);
});

test('CLIENT TRACKING OFF: keys read before are not pushed while it is off', async () => {
  const c = await tracker();
  await read(c, 46);
  await c.ok('CLIENT', 'TRACKING', 'OFF');
  update(46, 'while off');
  await c.ok('CLIENT', 'TRACKING', 'ON');
  await read(c, 47);
  await fence(c, 47);
});

// ---- (b) (c) (d) (e)

test('no push for a key that was not read; a multi-row UPDATE pushes only the keys read', async () => {
  const c = await tracker();
  await read(c, 50, 51);
  update(52, 'not read'); // never read: nothing
  psql(`UPDATE ${T} SET v = 'range' WHERE id BETWEEN 53 AND 59`);
  await fence(c, 51);
  psql(`UPDATE ${T} SET v = 'range 2' WHERE id BETWEEN 50 AND 59`);
  await expectInvalidation(c, [key(50)]);
});

test('a key is tracked once: after its push, changes are not pushed until it is read again', async () => {
  const c = await tracker();
  await read(c, 60, 61);
  update(60, 'first');
  await expectInvalidation(c, [key(60)]);
  update(60, 'second'); // not read since its push
  await fence(c, 61);
  await read(c, 60, 61);
  update(60, 'third');
  await expectInvalidation(c, [key(60)]);
});

test('a rolled-back transaction sends nothing; the same change committed does', async () => {
  const c = await tracker();
  await read(c, 70, 71);
  psql(`BEGIN; UPDATE ${T} SET v = 'rolled back' WHERE id = 70; ROLLBACK`);
  psql(`BEGIN; DELETE FROM ${T} WHERE id = 70; SAVEPOINT s; ROLLBACK; `);
  psql(`BEGIN; UPDATE ${T} SET v = 'kept?' WHERE id = 71; SAVEPOINT s; UPDATE ${T} SET v = 'sub' WHERE id = 70; ROLLBACK TO SAVEPOINT s; COMMIT`);
  // 71 committed (the fence); 70's change was rolled back to the savepoint: not pushed
  await expectInvalidation(c, [key(71)]);
  await read(c, 70, 71);
  update(70, 'committed');
  await expectInvalidation(c, [key(70)]);
});

test('a key read as nil is tracked: INSERT of that id pushes it', async () => {
  const c = await tracker();
  psql(`DELETE FROM ${T} WHERE id = 9001`);
  assert.equal(await c.call('GET', key(9001)), null);
  psql(`INSERT INTO ${T} VALUES (9001, 'born')`);
  await expectInvalidation(c, [key(9001)]);
  assert.equal(await c.call('GET', key(9001)), rowJson(9001, 'born'));
});

// ---- (f) NOLOOP

test('NOLOOP: no push for the connection\'s own SET; another connection\'s SET is pushed', async () => {
  const c = await open({ auth: [WRITER, WRITER_PASSWORD] });
  await c.ok('CLIENT', 'TRACKING', 'ON', 'NOLOOP');
  const w = await writer();
  await read(c, 80, 81);
  await c.ok('SET', key(80), '{"v":"own write"}');
  await fence(c, 81);
  await read(c, 80);
  await w.ok('SET', key(80), '{"v":"their write"}');
  await expectInvalidation(c, [key(80)]);
});

// NOLOOP skips the keys the connection's commands wrote, not the other rows their transaction
// changed: a cascade, a trigger's write. Each test ends on a fence of its own (an SQL update of a
// parent row c read): the keys pushed up to it must be exactly those expected.
async function readKeys(c, ...keys) {
  for (const k of keys) {
    const got = await c.call('GET', k);
    assert.ok(typeof got === 'string', `GET ${k} answered ${show(got)}`);
  }
}

test('NOLOOP: DEL of a parent row pushes the child row its ON DELETE CASCADE deleted, not the parent', async () => {
  const c = await open({ auth: [WRITER, WRITER_PASSWORD] });
  await c.ok('CLIENT', 'TRACKING', 'ON', 'NOLOOP');
  await readKeys(c, 'trkparent:1', 'trkchild:1', 'trkparent:2');
  assert.equal(await c.must('DEL', 'trkparent:1'), 1);
  psql(`UPDATE ${PARENT} SET v = 'fence' WHERE id = 2`);
  await expectInvalidation(c, ['trkchild:1', 'trkparent:2']);
});

test('NOLOOP: a trigger\'s write of another row on SET and on HSET is pushed, the row written is not', async () => {
  const c = await open({ auth: [WRITER, WRITER_PASSWORD] });
  await c.ok('CLIENT', 'TRACKING', 'ON', 'NOLOOP');
  await readKeys(c, 'trkecho:1', 'trkecho:1001', 'trkecho:2', 'trkecho:1002', 'trkparent:5');
  await c.ok('SET', 'trkecho:1', '{"v":"set"}');
  await expectInvalidation(c, ['trkecho:1001']);
  await c.must('HSET', 'trkecho:2', 'v', 'hset');
  await expectInvalidation(c, ['trkecho:1002']);
  assert.equal(await c.call('GET', 'trkecho:1002'), JSON.stringify({ id: 1002, v: 'echo of hset' }));
  psql(`UPDATE ${PARENT} SET v = 'fence' WHERE id = 5`);
  await expectInvalidation(c, ['trkparent:5']);
});

test('NOLOOP: MULTI/EXEC pushes the rows its cascades and triggers changed, not those its commands wrote', async () => {
  const c = await open({ auth: [WRITER, WRITER_PASSWORD] });
  await c.ok('CLIENT', 'TRACKING', 'ON', 'NOLOOP');
  await readKeys(c, 'trkparent:3', 'trkchild:3', 'trkecho:3', 'trkecho:1003', 'trkecho:4', 'trkecho:1004',
    'trkecho:5', 'trkecho:1005', 'trkparent:6');
  const exec = async (...commands) => {
    await c.ok('MULTI');
    for (const command of commands) assert.equal(await c.call(...command), 'QUEUED');
    return c.call('EXEC');
  };
  assert.deepEqual(await exec(['DEL', 'trkparent:3'], ['SET', 'trkecho:3', '{"v":"exec"}'], ['HSET', 'trkecho:4', 'v', 'exec']),
    [1, 'OK', 0]);
  await expectInvalidation(c, ['trkchild:3', 'trkecho:1003', 'trkecho:1004']);
  // Rolled back whole (its MSET writes 1005, the trigger's row, then fails on its second key):
  // nothing to push.
  const aborted = await exec(['SET', 'trkecho:5', '{"v":"exec"}'],
    ['MSET', 'trkecho:1005', '{"v":"mset"}', 'trkecho:6', '{"nosuchcolumn":1}']);
  assert.ok(aborted instanceof RespError && /^EXECABORT /.test(aborted.message), `EXEC: ${show(aborted)}`);
  psql(`UPDATE ${PARENT} SET v = 'fence' WHERE id = 6`);
  await expectInvalidation(c, ['trkparent:6']);
});

test('without NOLOOP the connection\'s own SET is pushed to it', async () => {
  const c = await open({ auth: [WRITER, WRITER_PASSWORD] });
  await c.ok('CLIENT', 'TRACKING', 'ON');
  await read(c, 82);
  await c.ok('SET', key(82), '{"v":"own write"}');
  await expectInvalidation(c, [key(82)]);
});

// ---- (g) BCAST

test('BCAST PREFIX trk: pushes changes of keys never read; none for another table\'s prefix', async () => {
  const c = await tracker('BCAST', 'PREFIX', 'trk:');
  update(90, 'bcast');
  await expectInvalidation(c, [key(90)]);
  psql(`UPDATE ${OTHER} SET v = 'other' WHERE id = 1`);
  psql(`INSERT INTO ${T} VALUES (9090, 'bcast insert')`);
  await expectInvalidation(c, [key(9090)]); // and nothing of other:1 before it
  const w = await writer();
  await w.ok('SET', key(91), '{"v":"bcast set"}');
  await expectInvalidation(c, [key(91)]);
});

test('BCAST without PREFIX pushes every key\'s change', async () => {
  const c = await tracker('BCAST');
  psql(`UPDATE ${OTHER} SET v = 'other 2' WHERE id = 2`);
  await expectInvalidation(c, ['other:2']);
  update(92, 'bcast all');
  await expectInvalidation(c, [key(92)]);
});

// ---- (h) OPTIN / OPTOUT

test('OPTIN: a read is tracked only right after CLIENT CACHING YES', async () => {
  const c = await tracker('OPTIN');
  await read(c, 100);
  await c.ok('CLIENT', 'CACHING', 'YES');
  await read(c, 101);
  await read(c, 102); // CACHING YES held for one command only
  update(100, 'optin untracked');
  update(102, 'optin untracked');
  await fence(c, 101);
});

test('OPTIN: CLIENT CACHING YES before MULTI tracks every read of the transaction', async () => {
  const c = await tracker('OPTIN');
  await c.ok('CLIENT', 'CACHING', 'YES');
  await c.ok('MULTI');
  assert.equal(await c.call('GET', key(103)), 'QUEUED');
  assert.equal(await c.call('GET', key(104)), 'QUEUED');
  assert.equal((await c.must('EXEC')).length, 2);
  psql(`UPDATE ${T} SET v = 'optin multi' WHERE id IN (103, 104)`);
  await expectInvalidation(c, [key(103), key(104)]);
});

test('OPTOUT: a read right after CLIENT CACHING NO is not tracked, the others are', async () => {
  const c = await tracker('OPTOUT');
  await c.ok('CLIENT', 'CACHING', 'NO');
  await read(c, 110);
  await read(c, 111);
  update(110, 'optout untracked');
  await fence(c, 111);
});

// ---- (i) REDIRECT over RESP2

for (const [where, same] of [['the same worker', true], ['the other worker', false]]) {
  test(`REDIRECT to a RESP2 connection on ${where} subscribed to __redis__:invalidate: *3 message __redis__:invalidate [key]`, async () => {
    const b = await open({ protocol: 2 });
    assert.deepEqual(await b.must('SUBSCRIBE', '__redis__:invalidate'), ['subscribe', '__redis__:invalidate', 1]);
    const a = await connectOnWorker(b.worker, same, { protocol: 2 });
    conns.push(a);
    await a.ok('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(b.id));
    assert.equal(await a.call('CLIENT', 'GETREDIR'), b.id);
    const id = same ? 120 : 121;
    await read(a, id);
    update(id, `redirected ${where}`);
    const p = await b.nextPush(5000);
    assert.notEqual(p, null, 'no message on the redirect target within 5 s');
    assert.deepEqual([...p], ['message', '__redis__:invalidate', [key(id)]]);
    assert.equal(a.pendingPushes, 0, 'the tracking connection itself got a message');
    // subscribed mode (RESP2): PING answers the Pub/Sub way, other commands are refused,
    // UNSUBSCRIBE leaves it
    assert.deepEqual(await b.must('PING'), ['pong', '']);
    const refused = await b.call('GET', key(id));
    assert.ok(refused instanceof RespError && /^ERR .*allowed in this context/.test(refused.message), `GET in subscribed mode: ${show(refused)}`);
    assert.deepEqual(await b.must('UNSUBSCRIBE'), ['unsubscribe', '__redis__:invalidate', 0]);
    assert.equal(await b.call('GET', key(id)), rowJson(id, `redirected ${where}`));
  });
}

for (const [where, same] of [['the same worker', true], ['the other worker', false]]) {
  test(`REDIRECT to a connection of another role on ${where}: it is told nothing (key names stay with the role that read them)`, async () => {
    const b = await open({ protocol: 2, auth: [WRITER, WRITER_PASSWORD] });
    await b.must('SUBSCRIBE', '__redis__:invalidate');
    const stranger = await connectOnWorker(b.worker, same, { protocol: 2 }); // the reader role
    conns.push(stranger);
    await stranger.ok('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(b.id));
    const colleague = await open({ protocol: 2, auth: [WRITER, WRITER_PASSWORD] });
    await colleague.ok('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(b.id));
    const [secret, fenceId] = same ? [124, 125] : [126, 127];
    await read(stranger, secret);
    await read(colleague, fenceId);
    update(secret, 'not for the other role');
    update(fenceId, 'the fence');
    const p = await b.nextPush(5000);
    assert.notEqual(p, null, 'no message for the same-role tracker within 5 s');
    assert.deepEqual([...p], ['message', '__redis__:invalidate', [key(fenceId)]]);
  });
}

test('REDIRECT: TRUNCATE sends the subscriber *3 message __redis__:invalidate with a null (flush everything)', async () => {
  const b = await open({ protocol: 2 });
  await b.must('SUBSCRIBE', '__redis__:invalidate');
  const a = await open({ protocol: 2 });
  await a.ok('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(b.id));
  assert.notEqual(await a.call('GET', 'trkflush:4'), null);
  psql(`TRUNCATE ${FLUSH}`);
  const p = await b.nextPush(5000);
  assert.notEqual(p, null, 'no message on the redirect target within 5 s');
  assert.deepEqual([...p], ['message', '__redis__:invalidate', null]);
  psql(`INSERT INTO ${FLUSH} SELECT g, 'f' || g FROM generate_series(1, 10) g`);
});

test('REDIRECT: two tracking connections may redirect to the same subscriber', async () => {
  const b = await open({ protocol: 2 });
  await b.must('SUBSCRIBE', '__redis__:invalidate');
  const a1 = await open({ protocol: 2 });
  const a2 = await open();
  await a1.ok('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(b.id));
  await a2.ok('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(b.id));
  await read(a1, 122);
  await read(a2, 123);
  psql(`UPDATE ${T} SET v = 'two redirects' WHERE id IN (122, 123)`);
  const seen = new Set();
  await b.pushesUntil((p) => {
    (invalidatedKeys(p) || []).forEach((k) => seen.add(k));
    return seen.has(key(122)) && seen.has(key(123));
  }, 5000, 'messages for both keys');
  assert.equal(a2.pendingPushes, 0, 'the RESP3 tracking connection itself got a push');
});

test('REDIRECT: when the target closed, a RESP3 tracking connection gets >2 tracking-redir-broken <id>', async () => {
  const b = await open({ protocol: 2 });
  await b.must('SUBSCRIBE', '__redis__:invalidate');
  const a = await connectOnWorker(b.worker, true); // CLIENT LIST shows its own worker's connections
  conns.push(a);
  await a.ok('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(b.id));
  await read(a, 124);
  b.close();
  await waitFor('the redirect target to be gone', 5000, async () => !String(await a.must('CLIENT', 'LIST')).includes(`id=${b.id} `));
  update(124, 'redirect broken');
  const p = await a.nextPush(5000);
  assert.notEqual(p, null, 'no push within 5 s');
  assert.deepEqual([...p], ['tracking-redir-broken', b.id]);
});

// ---- (j) flushes

test('TRUNCATE of a table sends the null invalidation to connections tracking it, not to others', async () => {
  const c = await tracker();
  const bcast = await tracker('BCAST', 'PREFIX', 'trkflush:');
  const bystander = await tracker();
  const bcastOther = await tracker('BCAST', 'PREFIX', 'trk:');
  assert.equal(await c.call('GET', 'trkflush:1'), JSON.stringify({ id: 1, v: 'f1' }));
  await read(bystander, 130);
  psql(`TRUNCATE ${FLUSH}`);
  await expectFlush(c);
  await expectFlush(bcast);
  await fence(bystander, 130); // nothing before the fence's push: no flush
  await expectInvalidation(bcastOther, [key(130)]);
  psql(`INSERT INTO ${FLUSH} SELECT g, 'f' || g FROM generate_series(1, 10) g`);
});

test('local_cache.disable() of a table sends the null invalidation', async () => {
  const c = await tracker();
  assert.notEqual(await c.call('GET', 'trkflush:2'), null);
  psql(`SELECT local_cache.disable('${FLUSH}')`);
  await expectFlush(c);
  psql(`SELECT local_cache.enable('${FLUSH}', resp_prefix => 'trkflush')`);
});

test('ALTER TABLE ADD COLUMN of a table sends the null invalidation', async () => {
  const c = await tracker();
  assert.notEqual(await c.call('GET', 'trkflush:3'), null);
  psql(`ALTER TABLE ${FLUSH} ADD COLUMN extra integer`);
  await expectFlush(c);
  assert.equal(await c.call('GET', 'trkflush:3'), JSON.stringify({ id: 3, v: 'f3', extra: null }));
});

test('ALTER TYPE of a type the rows are made of (an enum value, a composite attribute renamed) sends the null invalidation', async () => {
  const c = await tracker();
  assert.equal(await c.call('GET', 'trktyped:1'), JSON.stringify({ id: 1, moods: ['happy'], p: { x: 1, y: 2 } }));
  psql(`ALTER TYPE trk_mood RENAME VALUE 'happy' TO 'glad'`);
  await expectFlush(c);
  assert.equal(await c.call('GET', 'trktyped:1'), JSON.stringify({ id: 1, moods: ['glad'], p: { x: 1, y: 2 } }));
  psql(`ALTER TYPE trk_point RENAME ATTRIBUTE x TO across`);
  await expectFlush(c);
  assert.equal(await c.call('GET', 'trktyped:1'), JSON.stringify({ id: 1, moods: ['glad'], p: { across: 1, y: 2 } }));
});

// ---- (k) across workers

test('a RESP write on one worker pushes to a tracking connection on the other', async () => {
  const c = await tracker();
  const w = await connectOnWorker(c.worker, false, { protocol: 2, auth: [WRITER, WRITER_PASSWORD] });
  conns.push(w);
  await read(c, 140);
  await w.ok('SET', key(140), '{"v":"from the other worker"}');
  await expectInvalidation(c, [key(140)]);
  assert.equal(await c.call('GET', key(140)), rowJson(140, 'from the other worker'));
  // and the other way round
  const c2 = await connectOnWorker(c.worker, false);
  conns.push(c2);
  await c2.ok('CLIENT', 'TRACKING', 'ON');
  const w2 = await connectOnWorker(c.worker, true, { protocol: 2, auth: [WRITER, WRITER_PASSWORD] });
  conns.push(w2);
  await read(c2, 141);
  await w2.ok('SET', key(141), '{"v":"back"}');
  await expectInvalidation(c2, [key(141)]);
});

// ---- (l) two-phase commit

test('two-phase commit: PREPARE TRANSACTION sends nothing, COMMIT PREPARED the push; ROLLBACK PREPARED nothing', async () => {
  const c = await tracker();
  await read(c, 150, 151, 152);
  psql(`BEGIN; UPDATE ${T} SET v = 'prepared' WHERE id = 150; PREPARE TRANSACTION 'trk_2pc'`);
  psql(`BEGIN; UPDATE ${T} SET v = 'prepared, rolled back' WHERE id = 152; PREPARE TRANSACTION 'trk_2pc_rb'`);
  await fence(c, 151);
  psql(`ROLLBACK PREPARED 'trk_2pc_rb'`);
  psql(`COMMIT PREPARED 'trk_2pc'`);
  await expectInvalidation(c, [key(150)]); // and not 152
  assert.equal(await c.call('GET', key(150)), rowJson(150, 'prepared'));
});

// ---- (m) commit-exact

test('commit-exact: a GET sent on receiving the push sees the new row (40 times, SQL and RESP writes)', async () => {
  const c = await tracker();
  const w = await writer();
  for (let i = 0; i < 40; i++) {
    const id = 160 + (i % 3);
    const v = `exact ${i}`;
    await read(c, id);
    // the write is not awaited: the push may arrive before psql or SET has returned
    const done = i % 2 ? w.ok('SET', key(id), JSON.stringify({ v })) : psqlAsync(`UPDATE ${T} SET v = '${v}' WHERE id = ${id}`);
    const p = await c.nextPush(10000);
    assert.deepEqual(invalidatedKeys(p), [key(id)], `round ${i}: ${show(p)}`);
    assert.equal(await c.call('GET', key(id)), rowJson(id, v), `round ${i}: GET on the push`);
    await done;
    assert.equal(c.pendingPushes, 0);
  }
});

// ---- (n) CLIENT TRACKINGINFO, GETREDIR, CACHING and INFO

test('CLIENT TRACKINGINFO and GETREDIR follow CLIENT TRACKING ON/OFF and its options', async () => {
  const c = await open();
  assert.deepEqual(await trackingInfo(c), { flags: ['off'], redirect: -1, prefixes: [] });
  assert.equal(await c.call('CLIENT', 'GETREDIR'), -1);
  await c.ok('CLIENT', 'TRACKING', 'ON');
  assert.deepEqual(await trackingInfo(c), { flags: ['on'], redirect: 0, prefixes: [] });
  assert.equal(await c.call('CLIENT', 'GETREDIR'), 0);
  await c.ok('CLIENT', 'TRACKING', 'OFF');
  await c.ok('CLIENT', 'TRACKING', 'ON', 'BCAST', 'PREFIX', 'trk:', 'PREFIX', 'other:', 'NOLOOP');
  assert.deepEqual(await trackingInfo(c), { flags: ['bcast', 'noloop', 'on'], redirect: 0, prefixes: ['other:', 'trk:'] });
  await c.ok('CLIENT', 'TRACKING', 'OFF');
  await c.ok('CLIENT', 'TRACKING', 'ON', 'OPTIN');
  assert.deepEqual((await trackingInfo(c)).flags, ['on', 'optin']);
  await c.ok('CLIENT', 'TRACKING', 'OFF');
  await c.ok('CLIENT', 'TRACKING', 'ON', 'OPTOUT');
  assert.deepEqual((await trackingInfo(c)).flags, ['on', 'optout']);
  await c.ok('CLIENT', 'TRACKING', 'OFF');
  const target = await open({ protocol: 2 });
  await c.ok('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(target.id));
  assert.deepEqual(await trackingInfo(c), { flags: ['on'], redirect: Number(target.id), prefixes: [] });
  assert.equal(await c.call('CLIENT', 'GETREDIR'), target.id);
  await c.ok('CLIENT', 'TRACKING', 'OFF');
  assert.deepEqual(await trackingInfo(c), { flags: ['off'], redirect: -1, prefixes: [] });
});

test('CLIENT TRACKING and CLIENT CACHING refuse bad options with -ERR and change nothing', async () => {
  const c = await open();
  const err = async (re, ...args) => {
    const r = await c.call(...args);
    assert.ok(r instanceof RespError, `${args.join(' ')}: expected an error, got ${show(r)}`);
    assert.match(r.message, re, args.join(' '));
  };
  await err(/^ERR /, 'CLIENT', 'TRACKING', 'MAYBE');
  await err(/^ERR .*wrong number of arguments/i, 'CLIENT', 'TRACKING');
  await err(/^ERR .*client ID.*does not exist/i, 'CLIENT', 'TRACKING', 'ON', 'REDIRECT', '999999999');
  await err(/^ERR .*PREFIX.*BCAST/i, 'CLIENT', 'TRACKING', 'ON', 'PREFIX', 'trk:');
  await err(/^ERR .*OPTIN.*OPTOUT|^ERR .*OPTOUT.*OPTIN/i, 'CLIENT', 'TRACKING', 'ON', 'OPTIN', 'OPTOUT');
  await err(/^ERR .*BCAST/i, 'CLIENT', 'TRACKING', 'ON', 'BCAST', 'OPTIN');
  await err(/^ERR /, 'CLIENT', 'TRACKING', 'ON', 'REDIRECT', 'notanumber');
  assert.deepEqual((await trackingInfo(c)).flags, ['off']);
  // CLIENT CACHING: only with tracking on in OPTIN (YES) or OPTOUT (NO) mode
  await err(/^ERR .*wrong number of arguments/i, 'CLIENT', 'CACHING');
  await err(/^ERR .*tracking mode/i, 'CLIENT', 'CACHING', 'YES');
  await c.ok('CLIENT', 'TRACKING', 'ON');
  await err(/^ERR .*OPTIN/i, 'CLIENT', 'CACHING', 'YES');
  await c.ok('CLIENT', 'TRACKING', 'OFF');
  await c.ok('CLIENT', 'TRACKING', 'ON', 'OPTIN');
  await err(/^ERR .*OPTOUT/i, 'CLIENT', 'CACHING', 'NO');
  await err(/^ERR /, 'CLIENT', 'CACHING', 'MAYBE');
  await c.ok('CLIENT', 'CACHING', 'YES');
  await c.ok('CLIENT', 'TRACKING', 'OFF');
  await c.ok('CLIENT', 'TRACKING', 'ON', 'OPTOUT');
  await err(/^ERR .*OPTIN/i, 'CLIENT', 'CACHING', 'YES');
  await c.ok('CLIENT', 'CACHING', 'NO');
  // BCAST with overlapping prefixes is refused, as in Redis
  await c.ok('CLIENT', 'TRACKING', 'OFF');
  await err(/^ERR .*overlap/i, 'CLIENT', 'TRACKING', 'ON', 'BCAST', 'PREFIX', 'trk', 'PREFIX', 'trk:');
});

test('INFO tracking_total_keys, _items and _prefixes count the worker\'s tracking table', async () => {
  const c = await tracker();
  const c2 = await connectOnWorker(c.worker, true);
  conns.push(c2);
  await c2.ok('CLIENT', 'TRACKING', 'ON');
  const s0 = await trackingStats(c);
  await read(c, 170, 171, 172); // three keys nobody read before
  const s1 = await trackingStats(c);
  assert.deepEqual({ keys: s1.keys - s0.keys, items: s1.items - s0.items }, { keys: 3, items: 3 });
  await read(c2, 170, 171); // the same keys by a second connection: items, not keys
  const s2 = await trackingStats(c);
  assert.deepEqual({ keys: s2.keys - s0.keys, items: s2.items - s0.items }, { keys: 3, items: 5 });
  update(170, 'counted');
  await expectInvalidation(c, [key(170)]);
  await expectInvalidation(c2, [key(170)]);
  const s3 = await trackingStats(c);
  assert.deepEqual({ keys: s3.keys - s0.keys, items: s3.items - s0.items }, { keys: 2, items: 3 });
  // BCAST prefixes
  const b = await connectOnWorker(c.worker, true);
  conns.push(b);
  await b.ok('CLIENT', 'TRACKING', 'ON', 'BCAST', 'PREFIX', 'trkinfo_a:', 'PREFIX', 'trkinfo_b:');
  assert.equal((await trackingStats(c)).prefixes - s0.prefixes, 2);
  await b.ok('CLIENT', 'TRACKING', 'OFF');
  assert.equal((await trackingStats(c)).prefixes - s0.prefixes, 0);
});

// ---- (p) node-redis's client-side cache

test('node-redis clientSideCache (RESP3): the second get is a local hit; after a SQL UPDATE get returns the new row', async () => {
  const client = await redis6({ RESP: 3, clientSideCache: { ttl: 0, maxEntries: 0 } });
  const cache = client.clientSideCache;
  assert.ok(cache, 'node-redis exposes no clientSideCache');
  const before = cache.stats();
  assert.equal(await client.get(key(190)), rowJson(190, 'v190'));
  assert.equal(await client.get(key(190)), rowJson(190, 'v190'));
  const s = cache.stats();
  assert.equal(s.missCount - before.missCount, 1, 'the first get is a miss');
  assert.equal(s.hitCount - before.hitCount, 1, 'the second get is a local hit');
  update(190, 'new for node-redis');
  let last;
  await waitFor('the invalidation to reach node-redis', 5000, async () => {
    last = await client.get(key(190));
    return last === rowJson(190, 'new for node-redis');
  }, () => `get answered ${last}`);
  assert.ok(cache.stats().missCount - before.missCount >= 2, 'the get after the push went to the server');
});

// ---- (o) the bounded tracking table (after the others: a reload reaches the workers a little
// later, and a bound of 2 would evict the keys of any test still running)

test('local_cache.resp_tracking_max_keys = 2: reading a third key evicts one with its invalidation', async () => {
  await setSetting('local_cache.resp_tracking_max_keys', '2');
  try {
    const c = await tracker();
    // fresh keys, one at a time, until the setting has reached c's worker and a read past the
    // bound evicted one of them (keys of closed connections may go first)
    const tracked = [];
    let p = null;
    for (let id = 180; id < 200 && p === null; id++) {
      await read(c, id);
      tracked.push(key(id));
      if (tracked.length >= 3) p = await c.nextPush(500);
    }
    assert.notEqual(p, null, `no eviction push after tracking ${tracked.length} keys with max 2`);
    const k = invalidatedKeys(p);
    assert.ok(Array.isArray(k) && k.length >= 1 && k.every((x) => tracked.includes(x)), `eviction push ${show(p)}`);
    assert.ok((await trackingStats(c)).keys <= 2, 'INFO tracking_total_keys > 2');
  } finally {
    await setSetting('local_cache.resp_tracking_max_keys', null);
  }
});

// ---- a worker that ends (last: it restarts the RESP workers)

test('a RESP worker that ends closes its tracking connections (clients then drop their caches); restarted, it tracks again', async () => {
  const c = await tracker();
  const other = await connectOnWorker(c.worker, false);
  conns.push(other);
  await other.ok('CLIENT', 'TRACKING', 'ON');
  await read(c, 200);
  await read(other, 200);
  const ended = psql(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker'`);
  assert.ok(Number(ended) >= 2, `terminated ${ended} RESP workers`);
  let timer;
  const closedBoth = await Promise.race([Promise.all([c.closed, other.closed]).then(() => true),
    new Promise((resolve) => (timer = setTimeout(() => resolve(false), 10000)))]);
  clearTimeout(timer);
  assert.ok(closedBoth, 'a tracking connection stayed open after its worker ended');
  update(200, 'while the workers restart');
  let again;
  await waitFor('the restarted workers to accept tracking connections', 30000, async () => {
    try {
      again = await tracker();
      return true;
    } catch {
      return false;
    }
  });
  await read(again, 200);
  update(200, 'after the restart');
  await expectInvalidation(again, [key(200)]);
});

