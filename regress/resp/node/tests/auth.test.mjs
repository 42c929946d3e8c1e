// AUTH through the client libraries' own options (username / password).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import {
  CLIENTS, READER_PASSWORD, closeAll, close, send, psql, jsonOf, rejection, rawExchange, waitFor, serverLog,
} from './helpers.mjs';

const USER = 'regress_node_user';
const PASSWORD = 'node-usr-Pw-6Tn2-quux';
const WRONG = 'node-wrong-Pw-1Gk7-corge';

before(() => {
  psql(`CREATE ROLE ${USER} LOGIN PASSWORD '${PASSWORD}';
        CREATE TABLE auth_only (id integer PRIMARY KEY, v text);
        INSERT INTO auth_only VALUES (1, 'for ${USER} only');
        SELECT local_cache.enable('auth_only');
        GRANT SELECT ON auth_only, items TO ${USER}`);
});
after(closeAll);

const NOPERM = /^NOPERM permission denied for table auth_only$/;
const WRONGPASS = /WRONGPASS invalid username-password pair or user is disabled\./;

// Connects, or returns the error connecting produced.
async function tryConnect(connect, options) {
  try {
    return { client: await connect(options) };
  } catch (error) {
    return { error };
  }
}

// ioredis takes `username`/`password` too; node-redis takes them in the options or the URL.
for (const { name, connect } of CLIENTS) {
  test(`${name}: username/password options authenticate as that role`, async () => {
    const { client, error } = await tryConnect(connect, { username: USER, password: PASSWORD });
    assert.equal(error, undefined, `connect with credentials failed: ${error}`);
    try {
      assert.equal(await client.get('auth_only:1'), jsonOf('auth_only', 1));
      const info = String(await send(client, ['CLIENT', 'INFO']));
      assert.match(info, new RegExp(` user=${USER} `), info);
    } finally {
      await close(client);
    }
  });

  test(`${name}: without credentials the connection acts as resp_role (NOPERM on the other role's table)`, async () => {
    const client = await connect();
    try {
      const err = await rejection(client.get('auth_only:1'));
      assert.match(String(err.message), NOPERM, String(err));
      assert.equal(await client.get('items:1'), jsonOf('items', 1));
    } finally {
      await close(client);
    }
  });

  test(`${name}: password only authenticates as resp_role`, async () => {
    const { client, error } = await tryConnect(connect, { password: READER_PASSWORD });
    assert.equal(error, undefined, `connect with a password failed: ${error}`);
    try {
      assert.equal(await client.get('items:2'), jsonOf('items', 2));
      const info = String(await send(client, ['CLIENT', 'INFO']));
      assert.match(info, / user=regress_resp_reader /, info);
    } finally {
      await close(client);
    }
  });

  test(`${name}: a wrong password fails with WRONGPASS`, async () => {
    const { client, error } = await tryConnect(connect, { username: USER, password: WRONG });
    if (client) {
      // a library that does not fail the connect must fail the commands
      const err = await rejection(client.get('auth_only:1'));
      await close(client);
      assert.match(String(err.message), WRONGPASS, `connect succeeded and GET answered: ${err}`);
    } else {
      assert.match(String(error?.message), WRONGPASS, String(error));
    }
  });

  test(`${name}: explicit AUTH command`, async () => {
    const client = await connect();
    try {
      assert.equal(await send(client, ['AUTH', USER, PASSWORD]), 'OK');
      assert.equal(await client.get('auth_only:1'), jsonOf('auth_only', 1));
      const err = await rejection(send(client, ['AUTH', USER, WRONG]));
      assert.match(String(err.message), WRONGPASS, String(err));
      assert.equal(await client.get('auth_only:1'), jsonOf('auth_only', 1), 'a failed AUTH keeps the login');
    } finally {
      await close(client);
    }
  });
}

test('no resp_role: NOAUTH until the client authenticates through its options', async (t) => {
  psql("ALTER SYSTEM SET local_cache.resp_role = ''");
  psql('SELECT pg_reload_conf()');
  try {
    let last = '';
    const noauth = async () => {
      for (let i = 0; i < 6; i++) {
        last = (await rawExchange('GET items:1\r\n', { done: (s) => s.endsWith('\r\n') })).text;
        if (last !== '-NOAUTH Authentication required.\r\n') return false;
      }
      return true;
    };
    await waitFor('resp_role = \'\' to reach the workers', 10000, noauth, () => `GET answered ${JSON.stringify(last)}`);

    for (const { name, connect } of CLIENTS) {
      await t.test(`${name} without credentials: NOAUTH`, async () => {
        const { client, error } = await tryConnect(connect);
        if (client) {
          const err = await rejection(client.get('items:1'));
          await close(client);
          assert.match(String(err.message), /^NOAUTH /, String(err));
        } else {
          assert.match(String(error?.message), /NOAUTH/, String(error));
        }
      });
      await t.test(`${name} with username/password: served`, async () => {
        const { client, error } = await tryConnect(connect, { username: USER, password: PASSWORD });
        assert.equal(error, undefined, `connect with credentials failed: ${error}`);
        try {
          assert.equal(await client.get('items:1'), jsonOf('items', 1));
        } finally {
          await close(client);
        }
      });
      await t.test(`${name} with the resp_role password only: refused (no resp_role)`, async () => {
        const { client, error } = await tryConnect(connect, { password: READER_PASSWORD });
        if (client) {
          const err = await rejection(client.get('items:1'));
          await close(client);
          assert.match(String(err.message), /WRONGPASS|NOAUTH/, String(err));
        } else {
          assert.match(String(error?.message), /WRONGPASS|NOAUTH/, String(error));
        }
      });
    }
  } finally {
    psql('ALTER SYSTEM RESET local_cache.resp_role');
    psql('SELECT pg_reload_conf()');
    let last = '';
    await waitFor('resp_role back', 10000, async () => {
      for (let i = 0; i < 6; i++) {
        last = (await rawExchange('EXISTS items:1\r\n', { done: (s) => s.endsWith('\r\n') })).text;
        if (last !== ':1\r\n') return false;
      }
      return true;
    }, () => `EXISTS answered ${JSON.stringify(last)}`);
  }
});

test('no password appears in the server log', () => {
  const log = serverLog();
  for (const secret of [PASSWORD, WRONG, READER_PASSWORD]) {
    assert.equal(log.includes(secret), false, `the server log contains the password ${secret}`);
  }
});
