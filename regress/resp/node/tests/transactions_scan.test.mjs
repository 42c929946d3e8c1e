// MULTI/EXEC/DISCARD/WATCH, a MULTI's reads on one snapshot while psql writes, SCAN/KEYS over a
// table's rows and the key introspection commands, through each client library's own API.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import Redis from 'ioredis';
import { CLIENTS, closeAll, close, send, psql, jsonOf, jsonRows, rejection, waitFor } from './helpers.mjs';

const READER = 'regress_resp_reader'; // local_cache.resp_role in run.sh: the role clients act as
const SCAN_IDS = Array.from({ length: 57 }, (_, i) => i - 20); // -20 .. 36: negative keys, 0 too
const NON_ASCII_ID = 7;
const EXECABORT = /^EXECABORT Transaction discarded because of previous errors\.$/;
// a write Redis has but local_cache does not: refused when queued, so EXEC aborts
const UNSUPPORTED = /^ERR not supported by local_cache: write rows with SET, MSET, DEL, HSET, HDEL, HINCRBY or SQL$/;
const NOPERM_HIDDEN = /^NOPERM permission denied for table scan_hidden$/;

before(() => {
  psql(`CREATE TABLE tx_left (id bigint PRIMARY KEY, c bigint NOT NULL, tag text);
        CREATE TABLE tx_right (id integer PRIMARY KEY, c bigint NOT NULL, h text, note text);
        INSERT INTO tx_left SELECT g, 0, 'left ' || g FROM generate_series(1, 3) g;
        INSERT INTO tx_right SELECT g, 0, 'right ' || g, NULL FROM generate_series(1, 3) g;
        SELECT local_cache.enable('tx_left', resp_prefix => 'txl');
        SELECT local_cache.enable('tx_right', resp_prefix => 'txr');
        CREATE TABLE tx_ctl (stop boolean NOT NULL);
        INSERT INTO tx_ctl VALUES (false);

        CREATE TABLE scan_rows (id bigint PRIMARY KEY, v text, n integer, note text);
        INSERT INTO scan_rows SELECT g, 'v' || g, g * 3, CASE WHEN g % 2 = 0 THEN 'even' END
          FROM generate_series(${SCAN_IDS[0]}, ${SCAN_IDS[SCAN_IDS.length - 1]}) g;
        UPDATE scan_rows SET v = E'caf\\u00e9 \\u20ac \\U0001F600 "q"', note = NULL WHERE id = ${NON_ASCII_ID};
        SELECT local_cache.enable('scan_rows', resp_prefix => 'txscan');
        CREATE TABLE scan_rows_x (id integer PRIMARY KEY, v text);
        INSERT INTO scan_rows_x SELECT g, 'x' || g FROM generate_series(1, 10) g;
        SELECT local_cache.enable('scan_rows_x', resp_prefix => 'txscanx');
        CREATE TABLE scan_hidden (id integer PRIMARY KEY, v text);
        INSERT INTO scan_hidden SELECT g, 'hidden' || g FROM generate_series(1, 5) g;
        SELECT local_cache.enable('scan_hidden', resp_prefix => 'txscanhidden');
        GRANT SELECT ON tx_left, tx_right, scan_rows, scan_rows_x TO ${READER}`);
});
after(closeAll);

const isIoredis = (client) => client instanceof Redis;

// The values of an ioredis EXEC ([[err, value], ...]), failing on any error.
function ioValues(results) {
  assert.ok(Array.isArray(results), `EXEC gave ${JSON.stringify(results)}`);
  return results.map(([err, value], i) => {
    assert.equal(err, null, `command ${i} of the EXEC failed: ${err}`);
    return value;
  });
}

// SQL's keys of a table, in primary-key order.
function sqlKeys(table, prefix) {
  return psql(`SELECT '${prefix}:' || id FROM ${table} ORDER BY id`).split('\n');
}

// ---- 1. MULTI / EXEC / DISCARD / WATCH

for (const { name, connect } of CLIENTS) {
  test(`${name}: multi() of GET, GET, HGET, MGET, EXISTS returns what SQL has`, async () => {
    const client = await connect();
    try {
      const l1 = jsonOf('tx_left', 1);
      const r2 = jsonOf('tx_right', 2);
      const l3 = jsonOf('tx_left', 3);
      const expected = [l1, r2, 'right 2', null, [l1, null, l3], 2, null];
      let got;
      if (isIoredis(client)) {
        got = ioValues(await client.multi()
          .get('txl:1').get('txr:2').hget('txr:2', 'h').hget('txr:2', 'note')
          .mget('txl:1', 'txl:999', 'txl:3').exists('txl:1', 'txr:3', 'txr:999').get('txr:999')
          .exec());
      } else {
        got = await client.multi()
          .get('txl:1').get('txr:2').hGet('txr:2', 'h').hGet('txr:2', 'note')
          .mGet(['txl:1', 'txl:999', 'txl:3']).exists(['txl:1', 'txr:3', 'txr:999']).get('txr:999')
          .exec();
      }
      got[5] = Number(got[5]);
      assert.deepEqual(got, expected);
      // the connection is out of MULTI afterwards: a plain GET answers the row, not QUEUED
      assert.equal(await client.get('txl:2'), jsonOf('tx_left', 2));
    } finally {
      await close(client);
    }
  });

  test(`${name}: a NOPERM inside EXEC is that command's reply in the array`, async () => {
    const client = await connect();
    try {
      if (isIoredis(client)) {
        const results = await client.multi().get('txl:1').get('txscanhidden:1').exec();
        assert.equal(results.length, 2);
        assert.deepEqual(results[0], [null, jsonOf('tx_left', 1)]);
        assert.match(String(results[1][0]?.message), NOPERM_HIDDEN, String(results[1][0]));
      } else {
        // node-redis rejects with a MultiErrorReply that carries every reply
        const err = await rejection(client.multi().get('txl:1').get('txscanhidden:1').exec());
        assert.ok(Array.isArray(err.replies), `expected a MultiErrorReply, got ${err}`);
        assert.deepEqual([...err.errorIndexes], [1]);
        assert.equal(err.replies[0], jsonOf('tx_left', 1));
        assert.match(String(err.replies[1]?.message), NOPERM_HIDDEN, String(err.replies[1]));
      }
      assert.equal(await client.get('txl:1'), jsonOf('tx_left', 1), 'connection usable');
    } finally {
      await close(client);
    }
  });

  // As in Redis (and as commit 9224b4d says: "runtime errors are per command in EXEC's array"),
  // the commands queued after a failing one still run and answer their own replies.
  test(`${name}: the commands queued after a NOPERM in EXEC still answer their own replies`, async () => {
    const client = await connect();
    try {
      let replies;
      if (isIoredis(client)) {
        const results = await client.multi()
          .get('txscanhidden:1').get('txr:1').ping().mget('txl:1', 'txl:2').exists('txl:3').exec();
        replies = results.map(([err, value]) => err ?? value);
      } else {
        const err = await rejection(client.multi()
          .get('txscanhidden:1').get('txr:1').ping().mGet(['txl:1', 'txl:2']).exists(['txl:3']).exec());
        assert.ok(Array.isArray(err.replies), `expected a MultiErrorReply, got ${err}`);
        replies = err.replies;
      }
      assert.equal(replies.length, 5);
      assert.match(String(replies[0]?.message), NOPERM_HIDDEN, String(replies[0]));
      const rest = replies.slice(1).map((r) => (r instanceof Error ? `error: ${r.message}` : r));
      if (typeof rest[3] !== 'string' || !rest[3].startsWith('error: ')) rest[3] = Number(rest[3]);
      assert.deepEqual(rest, [jsonOf('tx_right', 1), 'PONG', [jsonOf('tx_left', 1), jsonOf('tx_left', 2)], 1]);
    } finally {
      await close(client);
    }
  });

  test(`${name}: an unsupported write (INCR) queued in multi() makes EXEC fail with EXECABORT`, async () => {
    const client = await connect();
    try {
      if (isIoredis(client)) {
        // ioredis rejects exec() with EXEC's error and keeps the queued errors in previousErrors
        const err = await rejection(client.multi().get('txl:1').incr('txl:1').get('txr:1').exec());
        assert.match(String(err.message), EXECABORT, String(err));
        assert.equal(err.previousErrors?.length, 1, `previousErrors: ${err.previousErrors}`);
        assert.match(String(err.previousErrors[0].message), UNSUPPORTED);
      } else {
        // node-redis awaits the replies of the chain (MULTI, each QUEUED, EXEC) with Promise.all and
        // rejects with whichever error settles first: v6 (one flat Promise.all) the refused write's,
        // v4 (the queued commands in a nested Promise.all, one microtask later) EXEC's EXECABORT
        // when the replies arrive in one read. Either way exec() rejects; the wire is checked below.
        const err = await rejection(client.multi().get('txl:1').incr('txl:1').get('txr:1').exec());
        assert.ok(EXECABORT.test(String(err.message)) || UNSUPPORTED.test(String(err.message)), String(err));
      }
      // on the wire: the GET is QUEUED, the write refused, EXEC answers EXECABORT
      assert.equal(await send(client, ['MULTI']), 'OK');
      assert.equal(await send(client, ['GET', 'txl:1']), 'QUEUED');
      assert.match(String((await rejection(send(client, ['INCR', 'txl:1']))).message), UNSUPPORTED);
      assert.match(String((await rejection(send(client, ['EXEC']))).message), EXECABORT);
      // so do an unknown command, a wrong arity and other unsupported writes inside MULTI, even
      // after a supported write was queued (nothing of it is written)
      for (const bad of [['NOSUCHCOMMAND', 'a'], ['GET'], ['EXPIRE', 'txl:1', '10'], ['LPUSH', 'txl:1', 'a'], ['FLUSHDB']]) {
        assert.equal(await send(client, ['MULTI']), 'OK');
        assert.equal(await send(client, ['DEL', 'txl:1']), 'QUEUED');
        await rejection(send(client, bad));
        assert.match(String((await rejection(send(client, ['EXEC']))).message), EXECABORT, bad.join(' '));
      }
      // the transaction is over after EXECABORT: the row is unchanged and served
      assert.equal(await client.get('txl:1'), jsonOf('tx_left', 1));
      assert.match(String((await rejection(send(client, ['EXEC']))).message), /^ERR EXEC without MULTI$/);
    } finally {
      await close(client);
    }
  });

  test(`${name}: DISCARD, nested MULTI, WATCH accepted (refused inside MULTI), UNWATCH accepted`, async () => {
    const client = await connect();
    try {
      if (isIoredis(client)) {
        // ioredis's non-pipelined transaction: MULTI now, then commands answer QUEUED, then discard()
        assert.equal(await client.multi({ pipeline: false }), 'OK');
        assert.equal(await client.get('txl:1'), 'QUEUED');
        assert.equal(await client.discard(), 'OK');
        // and the same with exec(): ioredis wraps the replies as [[err, value], ...]
        assert.equal(await client.multi({ pipeline: false }), 'OK');
        assert.equal(await client.get('txl:2'), 'QUEUED');
        assert.equal(await client.hget('txr:2', 'h'), 'QUEUED');
        assert.deepEqual(await client.exec(), [[null, jsonOf('tx_left', 2)], [null, 'right 2']]);
      } else {
        // node-redis's multi() has no discard(): raw MULTI, a queued GET, DISCARD
        assert.equal(await send(client, ['MULTI']), 'OK');
        assert.equal(await client.get('txl:1'), 'QUEUED');
        assert.equal(await send(client, ['DISCARD']), 'OK');
      }
      assert.equal(await client.get('txl:1'), jsonOf('tx_left', 1), 'after DISCARD the GET is answered');
      assert.match(String((await rejection(send(client, ['DISCARD']))).message), /^ERR DISCARD without MULTI$/);
      assert.match(String((await rejection(send(client, ['EXEC']))).message), /^ERR EXEC without MULTI$/);

      // an empty transaction: EXEC answers an empty array
      assert.equal(await send(client, ['MULTI']), 'OK');
      assert.deepEqual(await send(client, ['EXEC']), []);

      // nested MULTI is an error and does not end the transaction
      assert.equal(await send(client, ['MULTI']), 'OK');
      assert.match(String((await rejection(send(client, ['MULTI']))).message), /^ERR MULTI calls can not be nested$/);
      assert.equal(await send(client, ['GET', 'txr:3']), 'QUEUED');
      assert.deepEqual(await send(client, ['EXEC']), [jsonOf('tx_right', 3)]);

      // WATCH: OK outside MULTI (rows, a missing row, a key that names no table); UNWATCH: OK,
      // also without a WATCH, and EXEC then runs. (A watched row of a table this role may only
      // SELECT makes EXEC answer NOPERM: see the todo test in writes.test.mjs.)
      assert.equal(await send(client, ['WATCH', 'txl:1', 'txl:999', 'nosuchprefix:1']), 'OK');
      assert.equal(await send(client, ['UNWATCH']), 'OK');
      assert.equal(await send(client, ['UNWATCH']), 'OK');
      assert.equal(await send(client, ['MULTI']), 'OK');
      assert.equal(await send(client, ['GET', 'txl:2']), 'QUEUED');
      assert.deepEqual(await send(client, ['EXEC']), [jsonOf('tx_left', 2)]);
      // a watched key that names no table never changes: EXEC runs
      assert.equal(await send(client, ['WATCH', 'nosuchprefix:1']), 'OK');
      assert.equal(await send(client, ['MULTI']), 'OK');
      assert.equal(await send(client, ['GET', 'txl:2']), 'QUEUED');
      assert.deepEqual(await send(client, ['EXEC']), [jsonOf('tx_left', 2)]);
      // refused inside MULTI, without ending the transaction
      assert.equal(await send(client, ['MULTI']), 'OK');
      assert.match(String((await rejection(send(client, ['WATCH', 'txl:1']))).message), /^ERR WATCH inside MULTI is not allowed$/);
      assert.equal(await send(client, ['GET', 'txl:3']), 'QUEUED');
      assert.deepEqual(await send(client, ['EXEC']), [jsonOf('tx_left', 3)]);
      assert.equal(await send(client, ['MULTI']), 'OK');
      assert.equal(await send(client, ['DISCARD']), 'OK');
      assert.equal(await client.get('txr:1'), jsonOf('tx_right', 1));
    } finally {
      await close(client);
    }
  });
}

// ---- 2. a MULTI's reads see one snapshot while psql commits updates of both rows

const CLUSTER_SH = process.env.LC_CLUSTER_SH;
const CLUSTER_DIR = process.env.LC_CLUSTER_DIR;

// One background psql running a DO block: each step updates both rows to the next counter value
// in one transaction, until tx_ctl.stop (or 30 s). Resolves { code, stdout, stderr } at its end.
function startWriter() {
  const sql = `DO $$
    DECLARE t0 timestamptz := clock_timestamp();
    BEGIN
      LOOP
        UPDATE tx_left SET c = c + 1 WHERE id = 1;
        UPDATE tx_right SET c = c + 1 WHERE id = 1;
        COMMIT;
        EXIT WHEN (SELECT stop FROM tx_ctl) OR clock_timestamp() > t0 + interval '30 s';
      END LOOP;
    END $$`;
  const child = spawn(CLUSTER_SH, ['psql', CLUSTER_DIR, '-v', 'ON_ERROR_STOP=1', '-Atq', '-c', sql], {
    env: { ...process.env, PGCLIENTENCODING: 'UTF8', LC_ALL: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  const done = new Promise((resolve) => {
    child.on('error', (e) => resolve({ code: -1, stdout, stderr: `${stderr}${e.message}` }));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { child, done };
}

const counterOf = (table) => Number(psql(`SELECT c FROM ${table} WHERE id = 1`));

CLIENTS.forEach(({ name, connect }) => {
  test(`${name}: 200 multi() reads of two tables while psql commits both rows: always the same counter`, async (t) => {
    const READS = 200;
    psql('UPDATE tx_ctl SET stop = false');
    const client = await connect();
    const start = counterOf('tx_left');
    assert.equal(counterOf('tx_right'), start, 'rows start equal');
    const writer = startWriter();
    let writerResult;
    writer.done.then((r) => { writerResult = r; });
    try {
      // start reading once the writer runs
      await waitFor('the writer\'s first commit', 15000, () => writerResult !== undefined || counterOf('tx_left') > start,
        () => `writer ended: ${JSON.stringify(writerResult)}`);
      assert.equal(writerResult, undefined, `the writer ended early: ${JSON.stringify(writerResult)}`);
      const seen = new Set();
      const began = Date.now();
      for (let i = 0; i < READS; i++) {
        let replies;
        if (isIoredis(client)) {
          replies = ioValues(await client.multi()
            .get('txl:1').get('txr:1').hget('txl:1', 'c').hget('txr:1', 'c').mget('txr:1', 'txl:1').exec());
        } else {
          replies = await client.multi()
            .get('txl:1').get('txr:1').hGet('txl:1', 'c').hGet('txr:1', 'c').mGet(['txr:1', 'txl:1']).exec();
        }
        const [l, r, hl, hr, [mr, ml]] = replies;
        const counters = [JSON.parse(l).c, JSON.parse(r).c, Number(hl), Number(hr), JSON.parse(mr).c, JSON.parse(ml).c];
        assert.ok(counters.every((c) => c === counters[0]),
          `EXEC ${i} saw different counters: GET txl:1 ${l}, GET txr:1 ${r}, HGET ${hl} / ${hr}, MGET ${mr} ${ml}`);
        assert.equal(JSON.parse(l).tag, 'left 1');
        assert.equal(JSON.parse(r).h, 'right 1');
        seen.add(counters[0]);
      }
      const elapsed = Date.now() - began;
      t.diagnostic(`${READS} EXECs in ${elapsed} ms saw ${seen.size} distinct counters`);
      // for comparison only (not asserted): the same two GETs pipelined without MULTI are two
      // snapshots, and may see different counters
      let differ = 0;
      for (let i = 0; i < READS; i++) {
        const [l, r] = isIoredis(client)
          ? ioValues(await client.pipeline().get('txl:1').get('txr:1').exec())
          : await Promise.all([client.get('txl:1'), client.get('txr:1')]);
        if (JSON.parse(l).c !== JSON.parse(r).c) differ++;
      }
      t.diagnostic(`without MULTI, ${differ} of ${READS} pipelined GET pairs saw different counters`);
      assert.ok(seen.size >= 2, `the writer made no visible progress during the reads (${[...seen]})`);
    } finally {
      psql('UPDATE tx_ctl SET stop = true');
      const result = await writer.done;
      await close(client);
      assert.equal(result.code, 0, `the writer failed: ${result.stderr}`);
    }
    const end = counterOf('tx_left');
    assert.equal(counterOf('tx_right'), end, 'rows end equal');
    t.diagnostic(`the writer committed ${end - start} steps`);
    // after the writer's last COMMIT, a MULTI reads its values
    const after = await connect();
    try {
      const replies = isIoredis(after)
        ? ioValues(await after.multi().get('txl:1').get('txr:1').exec())
        : await after.multi().get('txl:1').get('txr:1').exec();
      assert.deepEqual(replies, [jsonOf('tx_left', 1), jsonOf('tx_right', 1)]);
      assert.equal(JSON.parse(replies[0]).c, end);
    } finally {
      await close(after);
    }
  });
});

// ---- 3. SCAN, KEYS, TYPE, TTL, STRLEN, HLEN

// Every key the library's own iterator yields for MATCH/COUNT, and the batch sizes it saw.
async function scanAll(client, match, count) {
  const keys = [];
  const batches = [];
  if (isIoredis(client)) {
    await new Promise((resolve, reject) => {
      const stream = client.scanStream({ match, count });
      stream.on('data', (batch) => { batches.push(batch.length); keys.push(...batch); });
      stream.on('end', resolve);
      stream.on('error', reject);
    });
  } else {
    // node-redis v6 yields one array of keys per SCAN reply, v4 one key at a time
    for await (const item of client.scanIterator({ MATCH: match, COUNT: count })) {
      if (Array.isArray(item)) {
        batches.push(item.length);
        keys.push(...item);
      } else {
        keys.push(item);
      }
    }
  }
  return { keys, batches };
}

const duplicates = (keys) => keys.filter((k, i) => keys.indexOf(k) !== i);

for (const { name, connect } of CLIENTS) {
  test(`${name}: the library's SCAN iterator (MATCH <prefix>:*, COUNT 5) yields each row's key once`, async () => {
    const client = await connect();
    try {
      const want = sqlKeys('scan_rows', 'txscan');
      assert.equal(want.length, 57);
      const { keys, batches } = await scanAll(client, 'txscan:*', 5);
      assert.deepEqual(duplicates(keys), [], 'no key twice');
      assert.deepEqual([...keys].sort(), [...want].sort(), 'the keys SQL has');
      assert.deepEqual(keys, want, 'one table, walked in primary-key order');
      for (const size of batches) assert.ok(size <= 5, `a batch of ${size} keys with COUNT 5`);
    } finally {
      await close(client);
    }
  });

  test(`${name}: raw SCAN: decimal cursors that carry their position, continued on another connection, MATCH and TYPE filter`, async () => {
    const a = await connect();
    const b = await connect();
    try {
      const want = sqlKeys('scan_rows', 'txscan');
      const keys = [];
      let cursor = '0';
      let calls = 0;
      do {
        // alternate connections: a cursor is valid on any connection (and either worker)
        const reply = await send(calls % 2 === 0 ? a : b, ['SCAN', cursor, 'MATCH', 'txscan:*', 'COUNT', '5']);
        calls++;
        assert.ok(Array.isArray(reply) && reply.length === 2, `SCAN answered ${JSON.stringify(reply)}`);
        cursor = String(reply[0]);
        assert.match(cursor, /^(0|[1-9][0-9]*)$/, `cursor ${cursor}`);
        // the position and its signature (resp_server/commands/scan_cursor.h): longer than 64 bits,
        // below the 4300 digits Python's int() takes
        assert.ok(cursor === '0' || (cursor.length >= 66 && cursor.length <= 666), `cursor of ${cursor.length} digits`);
        assert.ok(reply[1].length <= 5, `${reply[1].length} keys with COUNT 5`);
        keys.push(...reply[1].map(String));
        assert.ok(calls < 1000, 'SCAN does not end');
      } while (cursor !== '0');
      assert.deepEqual(keys, want);
      // COUNT is the keys examined per call: 57 keys need at least 12 calls
      assert.ok(calls >= Math.ceil(want.length / 5), `${calls} calls`);

      // MATCH without the colon reaches the two readable tables whose prefix starts so; the
      // table the role may not read is skipped, not refused
      const wide = [];
      cursor = '0';
      calls = 0;
      do {
        const reply = await send(a, ['SCAN', cursor, 'MATCH', 'txscan*', 'COUNT', '100']);
        cursor = String(reply[0]);
        wide.push(...reply[1].map(String));
        assert.ok(++calls < 1000, 'SCAN does not end');
      } while (cursor !== '0');
      assert.deepEqual(duplicates(wide), []);
      assert.deepEqual([...wide].sort(), [...want, ...sqlKeys('scan_rows_x', 'txscanx')].sort());

      // TYPE string walks the keys; any other type none, ending at once
      const typed = await send(a, ['SCAN', '0', 'MATCH', 'txscan:*', 'COUNT', '10000', 'TYPE', 'string']);
      assert.equal(String(typed[0]), '0');
      assert.deepEqual(typed[1].map(String), want);
      assert.deepEqual((await send(a, ['SCAN', '0', 'MATCH', 'txscan:*', 'TYPE', 'hash'])).map((x) => (Array.isArray(x) ? x : String(x))), ['0', []]);

      assert.match(String((await rejection(send(a, ['SCAN', '12x']))).message), /^ERR invalid cursor$/);
    } finally {
      await close(a);
      await close(b);
    }
  });

  test(`${name}: KEYS <prefix>:* returns the table's keys; TYPE, TTL, STRLEN, HLEN of a row`, async () => {
    const client = await connect();
    try {
      const want = sqlKeys('scan_rows', 'txscan');
      const keys = await client.keys('txscan:*');
      assert.deepEqual(duplicates(keys), []);
      assert.deepEqual([...keys].sort(), [...want].sort());
      assert.deepEqual(await client.keys('txscanhidden:*'), [], 'a table the role may not read has no keys');
      assert.deepEqual(await client.keys('txscan:1?'), want.filter((k) => /^txscan:1\d$/.test(k)));

      const key = `txscan:${NON_ASCII_ID}`;
      const json = jsonOf('scan_rows', NON_ASCII_ID);
      assert.equal(await client.get(key), json);
      // columns that are not NULL: id, v, n (note is NULL)
      const nonNull = Number(psql(`SELECT (id IS NOT NULL)::int + (v IS NOT NULL)::int + (n IS NOT NULL)::int
                                          + (note IS NOT NULL)::int FROM scan_rows WHERE id = ${NON_ASCII_ID}`));
      assert.equal(nonNull, 3);
      const strlen = isIoredis(client) ? (k) => client.strlen(k) : (k) => client.strLen(k);
      const hlen = isIoredis(client) ? (k) => client.hlen(k) : (k) => client.hLen(k);
      assert.equal(await client.type(key), 'string');
      assert.equal(Number(await client.ttl(key)), -1);
      assert.equal(Number(await (isIoredis(client) ? client.pttl(key) : client.pTTL(key))), -1);
      assert.equal(Number(await strlen(key)), Buffer.byteLength(json, 'utf8'), 'STRLEN counts the JSON bytes');
      assert.ok(Buffer.byteLength(json, 'utf8') > json.length, 'the row has multi-byte characters');
      assert.equal(Number(await hlen(key)), nonNull);
      // a row without NULLs
      const even = jsonRows('scan_rows', [8]).get(8);
      assert.equal(Number(await strlen('txscan:8')), Buffer.byteLength(even, 'utf8'));
      assert.equal(Number(await hlen('txscan:8')), 4);
      // a key that names no row
      assert.equal(await client.type('txscan:9999'), 'none');
      assert.equal(Number(await client.ttl('txscan:9999')), -2);
      assert.equal(Number(await strlen('txscan:9999')), 0);
      assert.equal(Number(await hlen('txscan:9999')), 0);
    } finally {
      await close(client);
    }
  });
}
