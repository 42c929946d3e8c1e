// Values, pipelining and error replies through each client library.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { CLIENTS, closeAll, close, send, plain, rejection, jsonRows, jsonOf } from './helpers.mjs';

after(closeAll);

const ids = Array.from({ length: 100 }, (_, i) => i + 1);
const EXPECTED = jsonRows('items', ids);
const UNSUPPORTED = /^ERR not supported by local_cache: write rows with SET, MSET, DEL, HSET, HDEL, HINCRBY or SQL$/;

for (const { name, connect } of CLIENTS) {
  test(`${name}: MGET, GET, EXISTS, HGET, HMGET, HGETALL equal SQL`, async () => {
    const client = await connect();
    try {
      const keys = ['items:1', 'items:2', 'items:999999', 'items:01', 'items:1'];
      const got = client instanceof Redis ? await client.mget(keys) : await client.mGet(keys);
      assert.deepEqual(got, [EXPECTED.get(1), EXPECTED.get(2), null, null, EXPECTED.get(1)]);
      assert.equal(await client.get('items:3'), EXPECTED.get(3));
      assert.equal(await client.get('items:0'), null);
      assert.equal(await client.get('nosuchprefix:3'), null);
      assert.equal(Number(await client.exists(['items:1', 'items:1', 'items:999999'])), 2);
      const hget = client instanceof Redis ? client.hget.bind(client) : client.hGet.bind(client);
      assert.equal(await hget('items:4', 'value'), 'value 4');
      assert.equal(await hget('items:4', 'n'), '40');
      assert.equal(await hget('items:4', 'nope'), null);
      const hmget = client instanceof Redis ? (k, f) => client.hmget(k, ...f) : (k, f) => client.hmGet(k, f);
      assert.deepEqual(await hmget('items:5', ['n', 'nope', 'value']), ['50', null, 'value 5']);
      const hgetall = client instanceof Redis ? client.hgetall.bind(client) : client.hGetAll.bind(client);
      assert.deepEqual(plain(await hgetall('items:6')), { id: '6', value: 'value 6', n: '60' });
      assert.deepEqual(plain(await hgetall('items:999999')), {});
      // every value parses as JSON and equals the row
      const row = JSON.parse(await client.get('items:7'));
      assert.deepEqual(row, { id: 7, value: 'value 7', n: 70 });
    } finally {
      await close(client);
    }
  });

  test(`${name}: 100 pipelined commands in one batch, replies in order`, async () => {
    const client = await connect();
    try {
      let replies;
      if (client instanceof Redis) {
        const pipeline = client.pipeline();
        for (const id of ids) {
          if (id % 10 === 0) pipeline.echo(`echo-${id}`);
          else pipeline.get(`items:${id}`);
        }
        const results = await pipeline.exec();
        for (const [err] of results) assert.equal(err, null);
        replies = results.map(([, value]) => value);
      } else {
        // node-redis writes the commands of one tick in one batch (auto-pipelining)
        replies = await Promise.all(ids.map((id) => (id % 10 === 0 ? client.echo(`echo-${id}`) : client.get(`items:${id}`))));
      }
      assert.equal(replies.length, 100);
      ids.forEach((id, i) => {
        assert.equal(replies[i], id % 10 === 0 ? `echo-${id}` : EXPECTED.get(id), `reply ${i} of the pipeline`);
      });
    } finally {
      await close(client);
    }
  });

  test(`${name}: errors surface as rejections; the connection stays usable`, async () => {
    const client = await connect();
    try {
      // a write Redis has but local_cache does not (INCR); a write the role may not do (SELECT
      // only: NOPERM); a value that is no JSON object
      const unsupported = await rejection(client.incr('items:1'));
      assert.match(String(unsupported.message), UNSUPPORTED, String(unsupported));
      const noperm = await rejection(client.set('items:1', '{"value":"x"}'));
      assert.match(String(noperm.message), /^NOPERM permission denied for table items$/, String(noperm));
      const notJson = await rejection(client.set('items:1', 'x'));
      assert.match(String(notJson.message), /^ERR invalid input syntax for type json \(SQLSTATE 22P02\)$/, String(notJson));
      const unknown = await rejection(send(client, ['NOSUCHCOMMAND', 'a']));
      assert.match(String(unknown.message), /^ERR unknown command 'NOSUCHCOMMAND', with args beginning with: 'a'/, String(unknown));
      const arity = await rejection(send(client, ['GET']));
      assert.match(String(arity.message), /^ERR wrong number of arguments for 'get' command/, String(arity));
      const select = await rejection(send(client, ['SELECT', '3']));
      assert.match(String(select.message), /^ERR DB index is out of range/, String(select));
      assert.equal(await client.get('items:1'), EXPECTED.get(1), 'row unchanged, connection usable');
      if (client instanceof Redis) {
        const results = await client.pipeline().get('items:1').incr('items:1').set('items:1', '{}').get('items:2').exec();
        assert.equal(results[0][1], EXPECTED.get(1));
        assert.match(String(results[1][0]?.message), UNSUPPORTED);
        assert.match(String(results[2][0]?.message), /^NOPERM /);
        assert.equal(results[3][1], EXPECTED.get(2));
      } else {
        const results = await Promise.allSettled([client.get('items:1'), client.incr('items:1'), client.set('items:1', '{}'), client.get('items:2')]);
        assert.equal(results[0].value, EXPECTED.get(1));
        assert.equal(results[1].status, 'rejected');
        assert.match(String(results[1].reason?.message), UNSUPPORTED);
        assert.equal(results[2].status, 'rejected');
        assert.match(String(results[2].reason?.message), /^NOPERM /);
        assert.equal(results[3].value, EXPECTED.get(2));
      }
    } finally {
      await close(client);
    }
  });
}

test('text needing JSON escaping round-trips through every client', async () => {
  const { psql } = await import('./helpers.mjs');
  psql(`CREATE TABLE IF NOT EXISTS esc (id integer PRIMARY KEY, t text, ts timestamptz, f float8)`);
  psql(`INSERT INTO esc VALUES (1, E'q " b \\\\ n \\n t \\t c \\x01 \\u00e9 \\U0001F600', '2024-01-02 03:04:05.678+00', 1.0/3)
        ON CONFLICT (id) DO NOTHING`);
  psql(`SELECT local_cache.enable('esc') WHERE NOT EXISTS (SELECT 1 FROM local_cache.tables WHERE resp_prefix = 'esc')`);
  psql('GRANT SELECT ON esc TO regress_resp_reader');
  const want = jsonOf('esc', 1);
  for (const { name, connect } of CLIENTS) {
    const client = await connect();
    try {
      assert.equal(await client.get('esc:1'), want, name);
      assert.equal(JSON.parse(await client.get('esc:1')).t, psql('SELECT t FROM esc WHERE id = 1'), name);
    } finally {
      await close(client);
    }
  }
});
