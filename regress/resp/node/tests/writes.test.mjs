// Writes through each client library's own API: SET (NX, XX, GET), SETNX, GETSET, MSET, MSETNX,
// DEL, HSET, HDEL, HINCRBY, HINCRBYFLOAT; privileges (NOPERM), constraints (SQLSTATE), MULTI/EXEC
// all or nothing, the WATCH idiom, and read-after-write for another connection and for SQL.
// The semantics and error texts are those of regress/resp/suites/writes.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { WatchError as WatchError6 } from 'redis';
import { WatchError as WatchError4 } from 'redis4';
import { CLIENTS, closeAll, close, send, psql, jsonOf, rejection } from './helpers.mjs';

const READER = 'regress_resp_reader'; // local_cache.resp_role in run.sh: the role clients act as
const WRITER = 'regress_resp_node_writer';
const WRITER_PASSWORD = 'node-wrt-Pw-9Qz2';
const TABLE = 'node_w';
const P = 'nw'; // the table's RESP prefix

const NOPERM = new RegExp(`^NOPERM permission denied for table ${TABLE}$`);
const NOT_NULL = new RegExp(`^ERR null value in column "v" of relation "${TABLE}" violates not-null constraint \\(SQLSTATE 23502\\)$`);
const EX_REFUSED = /^ERR rows do not expire: EX is not supported$/;
const UNSUPPORTED = /^ERR not supported by local_cache: write rows with SET, MSET, DEL, HSET, HDEL, HINCRBY or SQL$/;
const WATCH_CHANGED = 'One (or more) of the watched keys has been changed';

before(() => {
  psql(`CREATE ROLE ${WRITER} LOGIN PASSWORD '${WRITER_PASSWORD}';
        CREATE TABLE ${TABLE} (id integer PRIMARY KEY, v text NOT NULL DEFAULT 'dflt', n integer, f float8);
        SELECT local_cache.enable('${TABLE}', resp_prefix => '${P}');
        GRANT SELECT, INSERT, UPDATE, DELETE ON ${TABLE} TO ${WRITER};
        GRANT SELECT ON ${TABLE} TO ${READER}`);
});
after(async () => {
  await closeAll();
  psql(`DROP TABLE ${TABLE}; DROP ROLE ${WRITER}`);
});

const isIoredis = (client) => client instanceof Redis;
const key = (id) => `${P}:${id}`;
// The row as SQL has it (row_to_json text), or null.
const sqlRow = (id) => jsonOf(TABLE, id);
// The JSON text SQL renders for a row of the table: every column, in order.
const rowText = (id, { v = 'dflt', n = null, f = null } = {}) => JSON.stringify({ id, v, n, f });
const sqlInsert = (id, { v = 'dflt', n = null, f = null } = {}) =>
  psql(`INSERT INTO ${TABLE} VALUES (${id}, '${v}', ${n ?? 'NULL'}, ${f ?? 'NULL'})`);

// Each client library writes its own ids: 1000 * (index + 1) + n.
const idBase = (index) => 1000 * (index + 1);

// The library's calls, by Redis command, for the commands whose spelling differs.
function api(client, name) {
  if (isIoredis(client)) {
    return {
      // ioredis takes SET's options as trailing arguments
      set: (k, v, opt) => (opt ? client.set(k, v, ...opt.split(' ')) : client.set(k, v)),
      setex: (k, v) => client.set(k, v, 'EX', 10),
      setnx: (k, v) => client.setnx(k, v),
      getset: (k, v) => client.getset(k, v),
      mset: (obj) => client.mset(obj),
      msetnx: (obj) => client.msetnx(...Object.entries(obj).flat()),
      hsetObject: (k, obj) => client.hset(k, obj),
      hset: (k, f, v) => client.hset(k, f, v),
      hmset: (k, obj) => client.hmset(k, obj),
      hdel: (k, ...f) => client.hdel(k, ...f),
      hincrby: (k, f, n) => client.hincrby(k, f, n),
      hincrbyfloat: (k, f, n) => client.hincrbyfloat(k, f, n),
      hget: (k, f) => client.hget(k, f),
      del: (...k) => client.del(...k),
      unlink: (...k) => client.unlink(...k),
    };
  }
  // node-redis: SET's options as an object; v6 documents { condition: 'NX' } (NX: true deprecated)
  const setOptions = (opt) => {
    if (!opt) return undefined;
    const out = {};
    for (const word of opt.split(' ')) {
      if (word === 'GET') out.GET = true;
      else if (name === 'node-redis v6') out.condition = word;
      else out[word] = true;
    }
    return out;
  };
  return {
    set: (k, v, opt) => (opt ? client.set(k, v, setOptions(opt)) : client.set(k, v)),
    setex: (k, v) => client.set(k, v, { EX: 10 }),
    setnx: (k, v) => client.setNX(k, v),
    getset: (k, v) => client.getSet(k, v),
    mset: (obj) => client.mSet(obj),
    msetnx: (obj) => client.mSetNX(obj),
    hsetObject: (k, obj) => client.hSet(k, obj),
    hset: (k, f, v) => client.hSet(k, f, v),
    hmset: (k, obj) => send(client, ['HMSET', k, ...Object.entries(obj).flat().map(String)]),
    hdel: (k, ...f) => client.hDel(k, f),
    hincrby: (k, f, n) => client.hIncrBy(k, f, n),
    hincrbyfloat: (k, f, n) => client.hIncrByFloat(k, f, n),
    hget: (k, f) => client.hGet(k, f),
    del: (...k) => client.del(k),
    unlink: (...k) => client.unlink(k),
  };
}

const writer = (connect) => connect({ username: WRITER, password: WRITER_PASSWORD });

CLIENTS.forEach(({ name, connect }, index) => {
  const base = idBase(index);

  test(`${name}: set/get round trip as the writer role; SQL has the row, absent columns at DEFAULT`, async () => {
    const client = await writer(connect);
    const w = api(client, name);
    try {
      const id = base + 1;
      assert.equal(await w.set(key(id), '{"v":"one","n":1}'), 'OK');
      assert.equal(sqlRow(id), rowText(id, { v: 'one', n: 1 }));
      assert.equal(await client.get(key(id)), sqlRow(id));
      // SET of an existing row: it becomes exactly the object (n back to NULL, v to its DEFAULT)
      assert.equal(await w.set(key(id), JSON.stringify({ id, f: 2.5 })), 'OK');
      assert.equal(sqlRow(id), rowText(id, { f: 2.5 }));
      assert.equal(await client.get(key(id)), sqlRow(id));
      // EX: refused, nothing written
      assert.match(String((await rejection(w.setex(key(id), '{"v":"ex"}'))).message), EX_REFUSED);
      // an unsupported write
      assert.match(String((await rejection(client.incr(key(id)))).message), UNSUPPORTED);
      assert.equal(sqlRow(id), rowText(id, { f: 2.5 }));
    } finally {
      await close(client);
    }
  });

  test(`${name}: SET NX, XX, GET through the library's options; SETNX, GETSET`, async () => {
    const client = await writer(connect);
    const w = api(client, name);
    try {
      const a = base + 10; // exists
      const b = base + 11; // new
      sqlInsert(a, { v: 'a' });
      // NX: nil on an existing row (unchanged), OK on a new one
      assert.equal(await w.set(key(a), '{"v":"nx"}', 'NX'), null);
      assert.equal(sqlRow(a), rowText(a, { v: 'a' }));
      assert.equal(await w.set(key(b), '{"v":"b"}', 'NX'), 'OK');
      assert.equal(sqlRow(b), rowText(b, { v: 'b' }));
      // XX: nil on a missing row (not inserted), OK on an existing one
      assert.equal(await w.set(key(base + 12), '{"v":"xx"}', 'XX'), null);
      assert.equal(sqlRow(base + 12), null);
      assert.equal(await w.set(key(a), '{"v":"a2"}', 'XX'), 'OK');
      assert.equal(sqlRow(a), rowText(a, { v: 'a2' }));
      // GET: the old row (nil for a new one), and the new row is written
      const before = sqlRow(a);
      assert.equal(await w.set(key(a), '{"v":"a3"}', 'GET'), before);
      assert.equal(sqlRow(a), rowText(a, { v: 'a3' }));
      assert.equal(await w.set(key(base + 13), '{"v":"c"}', 'GET'), null);
      assert.equal(sqlRow(base + 13), rowText(base + 13, { v: 'c' }));
      // NX GET on an existing row: the old row, nothing written
      assert.equal(await w.set(key(a), '{"v":"never"}', 'NX GET'), rowText(a, { v: 'a3' }));
      assert.equal(sqlRow(a), rowText(a, { v: 'a3' }));
      if (name === 'node-redis v6') {
        // the deprecated { NX: true } / { XX: true } still work
        assert.equal(await client.set(key(a), '{"v":"nx"}', { NX: true }), null);
        assert.equal(await client.set(key(base + 14), '{"v":"xx"}', { XX: true }), null);
        assert.equal(await client.set(key(base + 14), '{"v":"d"}', { NX: true }), 'OK');
        assert.equal(sqlRow(base + 14), rowText(base + 14, { v: 'd' }));
      }
      // SETNX: 1 / 0; GETSET: the old row
      assert.equal(Number(await w.setnx(key(base + 15), '{"v":"e"}')), 1);
      assert.equal(Number(await w.setnx(key(base + 15), '{"v":"never"}')), 0);
      assert.equal(sqlRow(base + 15), rowText(base + 15, { v: 'e' }));
      assert.equal(await w.getset(key(base + 15), '{"v":"e2","n":5}'), rowText(base + 15, { v: 'e' }));
      assert.equal(sqlRow(base + 15), rowText(base + 15, { v: 'e2', n: 5 }));
      assert.equal(await w.getset(key(base + 16), '{"v":"f"}'), null);
      assert.equal(sqlRow(base + 16), rowText(base + 16, { v: 'f' }));
    } finally {
      await close(client);
    }
  });

  test(`${name}: del and unlink count the rows deleted; mSet / mSetNX all or nothing`, async () => {
    const client = await writer(connect);
    const w = api(client, name);
    try {
      const ids = [base + 20, base + 21, base + 22];
      assert.equal(await w.mset(Object.fromEntries(ids.map((id) => [key(id), JSON.stringify({ v: `m${id}`, n: id })]))), 'OK');
      for (const id of ids) assert.equal(sqlRow(id), rowText(id, { v: `m${id}`, n: id }));
      assert.deepEqual(await (isIoredis(client) ? client.mget(ids.map(key)) : client.mGet(ids.map(key))), ids.map(sqlRow));
      // a constraint violation in the second row: neither is written
      const err = await rejection(w.mset({ [key(base + 23)]: '{"v":"x"}', [key(base + 20)]: '{"v":null}' }));
      assert.match(String(err.message), NOT_NULL, String(err));
      assert.equal(sqlRow(base + 23), null);
      assert.equal(sqlRow(base + 20), rowText(base + 20, { v: `m${base + 20}`, n: base + 20 }));
      // MSETNX: 0 if any key names a row (nothing written), 1 otherwise
      assert.equal(Number(await w.msetnx({ [key(base + 24)]: '{"v":"y"}', [key(base + 21)]: '{"v":"z"}' })), 0);
      assert.equal(sqlRow(base + 24), null);
      assert.equal(Number(await w.msetnx({ [key(base + 24)]: '{"v":"y"}', [key(base + 25)]: '{"v":"z"}' })), 1);
      assert.equal(sqlRow(base + 25), rowText(base + 25, { v: 'z' }));
      // DEL: duplicates and missing rows count nothing
      assert.equal(Number(await w.del(key(base + 20), key(base + 20), key(base + 21), key(base + 999))), 2);
      assert.equal(sqlRow(base + 20), null);
      assert.equal(sqlRow(base + 21), null);
      assert.equal(await client.get(key(base + 20)), null);
      assert.equal(Number(await w.unlink(key(base + 22), key(base + 24), key(base + 25))), 3);
      assert.equal(psql(`SELECT count(*) FROM ${TABLE} WHERE id BETWEEN ${base + 20} AND ${base + 29}`), '0');
      assert.equal(Number(await w.del(key(base + 22))), 0);
    } finally {
      await close(client);
    }
  });

  test(`${name}: hSet (object and field/value), hDel, hIncrBy, hIncrByFloat`, async () => {
    const client = await writer(connect);
    const w = api(client, name);
    try {
      const id = base + 30;
      // a missing row is inserted: the number of fields given
      assert.equal(Number(await w.hsetObject(key(id), { v: 'h', n: 3 })), 2);
      assert.equal(sqlRow(id), rowText(id, { v: 'h', n: 3 }));
      // an existing row is updated: 0 new fields
      assert.equal(Number(await w.hset(key(id), 'f', '1.5')), 0);
      assert.equal(sqlRow(id), rowText(id, { v: 'h', n: 3, f: 1.5 }));
      assert.equal(Number(await w.hsetObject(key(id), { v: 'h2', n: '4' })), 0);
      assert.equal(sqlRow(id), rowText(id, { v: 'h2', n: 4, f: 1.5 }));
      assert.equal(await w.hmset(key(id), { v: 'h3' }), 'OK');
      assert.equal(await w.hget(key(id), 'v'), 'h3');
      // a field/value insert: the other columns at their DEFAULT
      assert.equal(Number(await w.hset(key(id + 1), 'n', '7')), 1);
      assert.equal(sqlRow(id + 1), rowText(id + 1, { n: 7 }));
      // a value that does not parse, the key column
      assert.match(String((await rejection(w.hset(key(id), 'n', 'many'))).message),
        /^ERR invalid input syntax for type integer: "many" \(SQLSTATE 22P02\)$/);
      assert.match(String((await rejection(w.hset(key(id), 'id', '5'))).message),
        /^ERR column "id" is the key: it is set by the key itself \(SQLSTATE 42P10\)$/);
      // HDEL sets NULL and counts the columns that were not NULL
      assert.equal(Number(await w.hdel(key(id), 'n', 'f')), 2);
      assert.equal(sqlRow(id), rowText(id, { v: 'h3' }));
      assert.equal(Number(await w.hdel(key(id), 'n')), 0);
      assert.match(String((await rejection(w.hdel(key(id), 'v'))).message), NOT_NULL);
      // HINCRBY: from NULL as 0, adds; a missing row is inserted
      assert.equal(Number(await w.hincrby(key(id), 'n', 5)), 5);
      assert.equal(Number(await w.hincrby(key(id), 'n', -2)), 3);
      assert.equal(sqlRow(id), rowText(id, { v: 'h3', n: 3 }));
      assert.equal(Number(await w.hincrby(key(id + 2), 'n', 4)), 4);
      assert.equal(sqlRow(id + 2), rowText(id + 2, { n: 4 }));
      assert.match(String((await rejection(w.hincrby(key(id), 'v', 1))).message),
        /^ERR column "v" is not a number column \(SQLSTATE 42804\)$/);
      // HINCRBYFLOAT
      assert.equal(String(await w.hincrbyfloat(key(id), 'f', 2.75)), '2.75');
      assert.equal(String(await w.hincrbyfloat(key(id), 'f', '0.25')), '3');
      assert.equal(psql(`SELECT f FROM ${TABLE} WHERE id = ${id}`), '3');
    } finally {
      await close(client);
    }
  });

  test(`${name}: a role with SELECT only gets NOPERM for every write; nothing is written`, async () => {
    const id = base + 40;
    sqlInsert(id, { v: 'kept', n: 1 });
    const client = await connect(); // resp_role: SELECT on the table only
    const w = api(client, name);
    try {
      assert.equal(await client.get(key(id)), sqlRow(id), 'the reader reads');
      const attempts = {
        set: () => w.set(key(id), '{"v":"reader"}'),
        'set NX of a new row': () => w.set(key(id + 1), '{"v":"reader"}', 'NX'),
        mset: () => w.mset({ [key(id + 2)]: '{"v":"reader"}' }),
        del: () => w.del(key(id)),
        hset: () => w.hset(key(id), 'v', 'reader'),
        hdel: () => w.hdel(key(id), 'n'),
        hincrby: () => w.hincrby(key(id), 'n', 1),
      };
      for (const [what, attempt] of Object.entries(attempts)) {
        const err = await rejection(attempt());
        assert.match(String(err.message), NOPERM, `${what}: ${err}`);
      }
      assert.equal(sqlRow(id), rowText(id, { v: 'kept', n: 1 }));
      assert.equal(psql(`SELECT count(*) FROM ${TABLE} WHERE id IN (${id + 1}, ${id + 2})`), '0');
      assert.equal(await client.get(key(id)), sqlRow(id), 'connection usable');
    } finally {
      await close(client);
    }
  });

  test(`${name}: a NOT NULL violation is a rejection with SQLSTATE 23502; the row is unchanged`, async () => {
    const client = await writer(connect);
    const w = api(client, name);
    try {
      const id = base + 50;
      sqlInsert(id, { v: 'nn' });
      for (const attempt of [() => w.set(key(id), '{"v":null}'), () => w.set(key(id + 1), '{"v":null,"n":1}'), () => w.hdel(key(id), 'v')]) {
        const err = await rejection(attempt());
        assert.ok(String(err.message).includes('SQLSTATE 23502'), String(err));
        assert.match(String(err.message), NOT_NULL);
      }
      assert.equal(sqlRow(id), rowText(id, { v: 'nn' }));
      assert.equal(sqlRow(id + 1), null);
      assert.equal(await client.get(key(id)), sqlRow(id), 'connection usable');
    } finally {
      await close(client);
    }
  });

  test(`${name}: multi().set().get().exec(): both replies, the GET sees the SET, committed`, async () => {
    const client = await writer(connect);
    try {
      const id = base + 60;
      const json = '{"v":"tx","n":60}';
      let replies;
      if (isIoredis(client)) {
        const results = await client.multi().set(key(id), json).get(key(id)).hset(key(id), 'f', '0.5').hget(key(id), 'f').exec();
        replies = results.map(([err, value], i) => {
          assert.equal(err, null, `command ${i} of the EXEC failed: ${err}`);
          return value;
        });
      } else {
        replies = await client.multi().set(key(id), json).get(key(id)).hSet(key(id), 'f', '0.5').hGet(key(id), 'f').exec();
      }
      assert.deepEqual(replies, ['OK', rowText(id, { v: 'tx', n: 60 }), 0, '0.5']);
      assert.equal(sqlRow(id), rowText(id, { v: 'tx', n: 60, f: 0.5 }));
      assert.equal(await client.get(key(id)), sqlRow(id));
    } finally {
      await close(client);
    }
  });

  test(`${name}: a multi() whose second write fails rejects with EXECABORT and writes nothing`, async () => {
    const client = await writer(connect);
    try {
      const id = base + 70;
      sqlInsert(id, { v: 'before' });
      const chain = isIoredis(client)
        ? client.multi().set(key(id + 1), '{"v":"new"}').hdel(key(id), 'v').set(key(id), '{"v":"after"}')
        : client.multi().set(key(id + 1), '{"v":"new"}').hDel(key(id), 'v').set(key(id), '{"v":"after"}');
      const err = await rejection(chain.exec());
      assert.match(String(err.message),
        new RegExp(`^EXECABORT Transaction rolled back: ${NOT_NULL.source.slice(1)}`), String(err));
      assert.equal(sqlRow(id + 1), null, 'the first SET was rolled back');
      assert.equal(sqlRow(id), rowText(id, { v: 'before' }));
      // the connection is out of MULTI and usable
      assert.equal(await client.get(key(id)), sqlRow(id));
      assert.equal(await client.get(key(id + 1)), null);
    } finally {
      await close(client);
    }
  });

  // node-redis (v4 and v6) rejects exec() with its WatchError when EXEC answers nil; ioredis
  // resolves exec() to null.
  async function execWatched(client, chain) {
    if (isIoredis(client)) return chain.exec();
    const err = await rejection(chain.exec());
    const WatchError = name === 'node-redis v6' ? WatchError6 : WatchError4;
    assert.ok(err instanceof WatchError, `expected a WatchError, got ${err?.constructor?.name}: ${err}`);
    assert.equal(err.message, WATCH_CHANGED);
    return null;
  }

  test(`${name}: watch(k), the row changed by SQL, multi().set(k).exec(): aborted (${name.startsWith('node-redis') ? 'WatchError' : 'null'}), nothing written`, async () => {
    const client = await writer(connect);
    try {
      const id = base + 80;
      sqlInsert(id, { v: 'w', n: 1 });
      assert.equal(await client.watch(key(id)), 'OK');
      psql(`UPDATE ${TABLE} SET n = 99 WHERE id = ${id}`);
      const result = await execWatched(client, client.multi().set(key(id), '{"v":"watched"}').set(key(id + 1), '{"v":"other"}'));
      assert.equal(result, null);
      assert.equal(sqlRow(id), rowText(id, { v: 'w', n: 99 }), 'the row keeps SQL\'s write');
      assert.equal(sqlRow(id + 1), null, 'nothing of the transaction was written');
      // a transaction of reads only is aborted the same way
      assert.equal(await client.watch(key(id)), 'OK');
      psql(`UPDATE ${TABLE} SET n = 98 WHERE id = ${id}`);
      assert.equal(await execWatched(client, client.multi().get(key(id))), null);
      // EXEC ended the watch: the same transaction now commits
      assert.deepEqual(await client.multi().set(key(id), '{"v":"watched"}').exec(), isIoredis(client) ? [[null, 'OK']] : ['OK']);
      assert.equal(sqlRow(id), rowText(id, { v: 'watched' }));
    } finally {
      await close(client);
    }
  });

  test(`${name}: watch(k) without a change commits; a change by another RESP client or a delete aborts; unwatch() ends it`, async () => {
    const client = await writer(connect);
    const other = await writer(connect);
    try {
      const id = base + 90;
      sqlInsert(id, { v: 'w' });
      // no change: committed
      assert.equal(await client.watch(key(id)), 'OK');
      assert.equal(await client.get(key(id)), rowText(id, { v: 'w' }));
      const done = await client.multi().set(key(id), '{"v":"w2"}').get(key(id)).exec();
      assert.deepEqual(done, isIoredis(client)
        ? [[null, 'OK'], [null, rowText(id, { v: 'w2' })]]
        : ['OK', rowText(id, { v: 'w2' })]);
      assert.equal(sqlRow(id), rowText(id, { v: 'w2' }));
      // changed by another RESP connection (HSET): aborted
      assert.equal(await client.watch(key(id)), 'OK');
      assert.equal(Number(await api(other, name).hset(key(id), 'n', '8')), 0);
      assert.equal(await execWatched(client, client.multi().set(key(id), '{"v":"never"}')), null);
      assert.equal(sqlRow(id), rowText(id, { v: 'w2', n: 8 }));
      // a watched key whose row did not exist and was inserted meanwhile: aborted
      assert.equal(await client.watch(key(id + 1)), 'OK');
      assert.equal(await api(other, name).set(key(id + 1), '{"v":"inserted"}'), 'OK');
      assert.equal(await execWatched(client, client.multi().set(key(id + 1), '{"v":"never"}')), null);
      assert.equal(sqlRow(id + 1), rowText(id + 1, { v: 'inserted' }));
      // deleted by SQL: aborted
      assert.equal(await client.watch(key(id + 1)), 'OK');
      psql(`DELETE FROM ${TABLE} WHERE id = ${id + 1}`);
      assert.equal(await execWatched(client, client.multi().set(key(id + 1), '{"v":"never"}')), null);
      assert.equal(sqlRow(id + 1), null);
      // unwatch() forgets the watch: the change does not matter any more
      assert.equal(await client.watch(key(id)), 'OK');
      psql(`UPDATE ${TABLE} SET n = 9 WHERE id = ${id}`);
      assert.equal(await client.unwatch(), 'OK');
      const incr = isIoredis(client)
        ? await client.multi().hincrby(key(id), 'n', 1).exec()
        : await client.multi().hIncrBy(key(id), 'n', 1).exec();
      assert.deepEqual(incr, isIoredis(client) ? [[null, 10]] : [10]);
      assert.equal(sqlRow(id), rowText(id, { v: 'w2', n: 10 }));
      // a write of the same connection that failed (rolled back) is no change
      assert.equal(await client.watch(key(id)), 'OK');
      assert.match(String((await rejection(send(client, ['HDEL', key(id), 'v']))).message), NOT_NULL);
      const set = isIoredis(client)
        ? await client.multi().hset(key(id), 'n', '11').exec()
        : await client.multi().hSet(key(id), 'n', '11').exec();
      assert.deepEqual(set, isIoredis(client) ? [[null, 0]] : [0]);
      assert.equal(sqlRow(id), rowText(id, { v: 'w2', n: 11 }));
      // DISCARD ends the watch too
      assert.equal(await client.watch(key(id)), 'OK');
      psql(`UPDATE ${TABLE} SET n = 12 WHERE id = ${id}`);
      assert.equal(await send(client, ['MULTI']), 'OK');
      assert.equal(await send(client, ['DISCARD']), 'OK');
      assert.deepEqual(await client.multi().get(key(id)).exec(),
        isIoredis(client) ? [[null, rowText(id, { v: 'w2', n: 12 })]] : [rowText(id, { v: 'w2', n: 12 })]);
      // as in Redis, a write of the watching connection itself is a change too
      assert.equal(await client.watch(key(id)), 'OK');
      assert.equal(await client.set(key(id), '{"v":"own"}'), 'OK');
      assert.equal(await execWatched(client, client.multi().set(key(id), '{"v":"never"}')), null);
      assert.equal(sqlRow(id), rowText(id, { v: 'own' }));
    } finally {
      await close(client);
      await close(other);
    }
  });

  // As in Redis, WATCH guards a transaction of reads too; EXEC does not lock the rows then (that
  // would need UPDATE), so a role with SELECT only can use it.
  test(`${name}: a role with SELECT only: watch(k) and multi().get(k).exec() reads; after a change, aborted`,
    async () => {
      const id = base + 95;
      sqlInsert(id, { v: 'ro' });
      const client = await connect(); // resp_role: SELECT only
      try {
        assert.equal(await client.watch(key(id)), 'OK');
        const got = await client.multi().get(key(id)).exec();
        assert.deepEqual(got, isIoredis(client) ? [[null, rowText(id, { v: 'ro' })]] : [rowText(id, { v: 'ro' })]);
        assert.equal(await client.watch(key(id)), 'OK');
        psql(`UPDATE ${TABLE} SET n = 1 WHERE id = ${id}`);
        assert.equal(await execWatched(client, client.multi().get(key(id))), null);
      } finally {
        await close(client);
      }
    });

  test(`${name}: read-after-write: once set() resolved, another client's GET and SQL see it`, async () => {
    const client = await writer(connect);
    const reader = await connect(); // resp_role
    try {
      const id = base + 100;
      sqlInsert(id, { v: 'old' });
      // the reader has the old row (cached by the server now)
      assert.equal(await reader.get(key(id)), rowText(id, { v: 'old' }));
      for (let i = 0; i < 20; i++) {
        const json = JSON.stringify({ v: `new ${i}`, n: i });
        assert.equal(await client.set(key(id), json), 'OK');
        assert.equal(await reader.get(key(id)), rowText(id, { v: `new ${i}`, n: i }), `write ${i} on the reader`);
        assert.equal(sqlRow(id), rowText(id, { v: `new ${i}`, n: i }), `write ${i} in SQL`);
      }
      // HSET, HINCRBY, DEL too
      assert.equal(Number(await api(client, name).hset(key(id), 'v', 'hashed')), 0);
      assert.equal(await api(reader, name).hget(key(id), 'v'), 'hashed');
      assert.equal(Number(await api(client, name).hincrby(key(id), 'n', 100)), 119);
      assert.equal(await reader.get(key(id)), rowText(id, { v: 'hashed', n: 119 }));
      assert.equal(Number(await api(client, name).del(key(id))), 1);
      assert.equal(await reader.get(key(id)), null);
      assert.equal(Number(await reader.exists(key(id))), 0);
      assert.equal(sqlRow(id), null);
    } finally {
      await close(client);
      await close(reader);
    }
  });
});
