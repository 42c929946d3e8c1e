// Read-after-commit and privilege changes, with writes and GRANT/REVOKE committed through psql
// while the clients stay connected.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { CLIENTS, closeAll, close, psql, jsonOf, rejection } from './helpers.mjs';

after(closeAll);

const mget = (client, keys) => (client instanceof Redis ? client.mget(keys) : client.mGet(keys));

CLIENTS.forEach(({ name, connect }, n) => {
  // each client library works on its own rows
  const id = 1001 + n;

  test(`${name}: UPDATE / DELETE / INSERT through psql are visible to the next request`, async () => {
    const client = await connect();
    try {
      const original = jsonOf('items', id);
      assert.equal(await client.get(`items:${id}`), original, 'initial read (fills the cache)');
      assert.equal(await client.get(`items:${id}`), original, 'second read (a hit)');
      for (let round = 1; round <= 15; round++) {
        psql(`UPDATE items SET value = 'round ${round} ${name}', n = ${round} WHERE id = ${id}`);
        const want = JSON.stringify({ id, value: `round ${round} ${name}`, n: round });
        assert.equal(await client.get(`items:${id}`), want, `GET after UPDATE round ${round}`);
        assert.deepEqual(await mget(client, [`items:${id}`, `items:${id}`]), [want, want], `MGET after UPDATE round ${round}`);
      }
      psql(`DELETE FROM items WHERE id = ${id}`);
      assert.equal(await client.get(`items:${id}`), null, 'GET after DELETE');
      assert.deepEqual(await mget(client, [`items:${id}`]), [null], 'MGET after DELETE');
      psql(`INSERT INTO items VALUES (${id}, 'back', 1)`);
      assert.equal(await client.get(`items:${id}`), JSON.stringify({ id, value: 'back', n: 1 }), 'GET after INSERT');
      psql(`BEGIN; UPDATE items SET value = 'rolled back' WHERE id = ${id}; ROLLBACK`);
      assert.equal(await client.get(`items:${id}`), JSON.stringify({ id, value: 'back', n: 1 }), 'GET after a ROLLBACK');
    } finally {
      await close(client);
    }
  });

  test(`${name}: NOPERM after REVOKE (committed), served again after GRANT`, async () => {
    const table = `perm_${n}`;
    psql(`CREATE TABLE ${table} (id integer PRIMARY KEY, v text);
          INSERT INTO ${table} VALUES (1, 'visible');
          SELECT local_cache.enable('${table}');
          GRANT SELECT ON ${table} TO regress_resp_reader`);
    const client = await connect();
    try {
      const want = jsonOf(table, 1);
      assert.equal(await client.get(`${table}:1`), want);
      psql(`REVOKE SELECT ON ${table} FROM regress_resp_reader`);
      const err = await rejection(client.get(`${table}:1`));
      assert.match(String(err.message), new RegExp(`^NOPERM permission denied for table ${table}$`), String(err));
      const err2 = await rejection(mget(client, ['items:1', `${table}:1`]));
      assert.match(String(err2.message), /^NOPERM /, String(err2));
      assert.equal(await client.get('items:1'), jsonOf('items', 1), 'other tables still served');
      psql(`GRANT SELECT ON ${table} TO regress_resp_reader`);
      assert.equal(await client.get(`${table}:1`), want, 'served again after GRANT');
    } finally {
      await close(client);
    }
  });
});
