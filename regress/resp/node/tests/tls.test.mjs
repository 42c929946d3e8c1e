// The client libraries' TLS options against a RESP port that speaks TLS only (run.sh's second
// cluster): node-redis (v6 and v4) and ioredis log in by a client certificate (a `cert` line of
// pg_hba.conf names the certificate's CN as the role) and by a password over TLS, and read rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createClient as createClient6 } from 'redis';
import { createClient as createClient4 } from 'redis4';
import Redis from 'ioredis';
import { HOST } from './helpers.mjs';

const PORT = Number(process.env.LC_TLS_PORT);
const CERTS = process.env.LC_TLS_CERTS;
const PASSWORD = process.env.LC_TLS_PASSWORD;
const ca = readFileSync(`${CERTS}/ca.crt`);
const cert = readFileSync(`${CERTS}/client.crt`);
const key = readFileSync(`${CERTS}/client.key`);
const ROW = '{"id":1,"v":"one"}';

async function withNodeRedis(createClient, options, fn) {
  const client = createClient({ socket: { host: HOST, port: PORT, tls: true, ca, ...options.tls }, ...options.auth });
  client.on('error', () => {});
  await client.connect();
  try {
    await fn(client);
  } finally {
    await client.quit();
  }
}

for (const [name, createClient] of [['node-redis v6', createClient6], ['node-redis v4', createClient4]]) {
  test(`${name}: socket { tls: true, ca, cert, key } logs in by the certificate`, async () => {
    await withNodeRedis(createClient, { tls: { cert, key } }, async (client) => {
      assert.equal(await client.get('tls_items:1'), ROW);
      const info = await client.sendCommand(['CLIENT', 'INFO']);
      assert.match(info, / user=regress_resp_reader /, info);
      assert.match(info, / tls=yes/, info);
    });
  });

  test(`${name}: a password over TLS`, async () => {
    await withNodeRedis(createClient, { auth: { username: 'regress_tls_password', password: PASSWORD } }, async (client) => {
      assert.deepEqual(await client.mGet(['tls_items:1', 'tls_items:2', 'tls_items:3']),
        [ROW, '{"id":2,"v":"two"}', null]);
    });
  });
}

test('ioredis: tls { ca, cert, key } logs in by the certificate', async () => {
  const client = new Redis({ host: HOST, port: PORT, tls: { ca, cert, key }, lazyConnect: true, maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  await client.connect();
  try {
    assert.equal(await client.get('tls_items:1'), ROW);
    assert.match(await client.client('INFO'), / user=regress_resp_reader .* tls=yes/);
  } finally {
    client.disconnect();
  }
});

test('ioredis: a password over TLS', async () => {
  const client = new Redis({ host: HOST, port: PORT, tls: { ca }, username: 'regress_tls_password', password: PASSWORD,
    lazyConnect: true, maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  await client.connect();
  try {
    assert.equal(await client.get('tls_items:2'), '{"id":2,"v":"two"}');
  } finally {
    client.disconnect();
  }
});

test('a client that does not trust the server\'s CA does not connect', async () => {
  const client = new Redis({ host: HOST, port: PORT, tls: {}, lazyConnect: true, maxRetriesPerRequest: 0,
    retryStrategy: () => null });
  client.on('error', () => {});
  await assert.rejects(client.connect());
  client.disconnect();
});
