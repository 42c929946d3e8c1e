// The name you read is the name you are told about (issue 43): only a key's canonical spelling
// names its row. A character(n) key's equality ignores trailing blanks, but the invalidation names
// the key as the server renders it ("chk:ab"); a client cache keyed by the name it asked for must
// never hold a value under "chk:ab " that no push would reach.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { psql, redis6, closeAll, waitFor } from './helpers.mjs';
import { RawResp, RespError, invalidatedKeys } from './resp3_raw.mjs';

const READER = 'regress_resp_reader'; // local_cache.resp_role in run.sh
const WRITER = 'regress_trkname_writer';
const WRITER_PASSWORD = 'trkname-Pw-6Rb2';
const CHK = 'trk_chk'; // prefix chk: a character(4) key

const conns = [];
async function open(options = {}) {
  const c = await RawResp.connect(options);
  conns.push(c);
  return c;
}
async function tracker() {
  const c = await open();
  await c.ok('CLIENT', 'TRACKING', 'ON');
  return c;
}
const writer = () => open({ protocol: 2, auth: [WRITER, WRITER_PASSWORD] });
const show = (v) => JSON.stringify(v);
async function expectInvalidation(c, keys) {
  const p = await c.nextPush(5000);
  assert.notEqual(p, null, `no push within 5 s, expected the invalidation of ${keys.join(' ')}`);
  assert.deepEqual(invalidatedKeys(p), keys);
}

before(() => {
  psql(`CREATE ROLE ${WRITER} LOGIN PASSWORD '${WRITER_PASSWORD}';
        CREATE TABLE ${CHK} (code character(4) PRIMARY KEY, v text);
        INSERT INTO ${CHK} VALUES ('ab', 'two'), ('cd', 'two more');
        SELECT local_cache.enable('${CHK}', resp_prefix => 'chk');
        GRANT SELECT ON ${CHK} TO ${READER};
        GRANT SELECT, INSERT, UPDATE, DELETE ON ${CHK} TO ${WRITER}`);
});
after(async () => {
  for (const c of conns) c.close();
  await closeAll();
  psql(`DROP TABLE ${CHK}; DROP ROLE ${WRITER}`);
});

const chkJson = (code, v) => JSON.stringify({ code: code.padEnd(4, ' '), v });

test('a character(n) key spelled with trailing blanks names no row: nil, and after an UPDATE still nil; the canonical spelling is pushed', async () => {
  const c = await tracker();
  assert.equal(await c.call('GET', 'chk:ab '), null, 'GET "chk:ab " (not the canonical spelling)');
  assert.deepEqual(await c.must('MGET', 'chk:ab  ', 'chk:ab'), [null, chkJson('ab', 'two')]);
  assert.equal(await c.must('EXISTS', 'chk:ab ', 'chk:ab   '), 0);
  psql(`UPDATE ${CHK} SET v = 'changed' WHERE code = 'ab'`);
  await expectInvalidation(c, ['chk:ab']);
  // nothing the blank spelling answered can be stale: it answers nil before and after
  assert.equal(await c.call('GET', 'chk:ab '), null);
  assert.equal(await c.call('GET', 'chk:ab'), chkJson('ab', 'changed'));
});

test('node-redis clientSideCache: a cache keyed by the name asked for never keeps a stale row under a blank-padded spelling', async () => {
  const client = await redis6({ RESP: 3, clientSideCache: { ttl: 0, maxEntries: 0 } });
  assert.equal(await client.get('chk:cd '), null);
  assert.equal(await client.get('chk:cd'), chkJson('cd', 'two more'));
  psql(`UPDATE ${CHK} SET v = 'changed cd' WHERE code = 'cd'`);
  let last;
  await waitFor('the invalidation of chk:cd to reach node-redis', 5000, async () => {
    last = await client.get('chk:cd');
    return last === chkJson('cd', 'changed cd');
  }, () => `get answered ${last}`);
  assert.equal(await client.get('chk:cd '), null, 'the blank-padded spelling still names no row');
});

test('a write to a blank-padded character(n) key is refused with the canonical spelling; nothing is written or pushed', async () => {
  const c = await tracker();
  const w = await writer();
  assert.equal(await c.call('GET', 'chk:cd'), psql(`SELECT row_to_json(t)::text FROM ${CHK} t WHERE code = 'cd'`));
  const refused = await w.call('SET', 'chk:cd ', '{"v":"through blanks"}');
  assert.ok(refused instanceof RespError, `SET "chk:cd " answered ${show(refused)}`);
  assert.match(String(refused), /key "chk:cd " is not in canonical form; the row's key is "chk:cd"/);
  assert.notEqual(psql(`SELECT v FROM ${CHK} WHERE code = 'cd'`), 'through blanks');
  await w.ok('SET', 'chk:cd', '{"v":"canonical"}');
  await expectInvalidation(c, ['chk:cd']);
});

