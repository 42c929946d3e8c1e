// Connect handshakes of the client libraries with their default options.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { createClient as createClient6 } from 'redis';
import { createClient as createClient4 } from 'redis4';
import { HOST, PORT, redis6, redis4, ioredis, closeAll, close, send, jsonOf, sleep } from './helpers.mjs';

after(closeAll);

const J1 = jsonOf('items', 1);

test('node-redis v6, default options: HELLO 3 accepted, RESP3 session, lib info recorded', async () => {
  const client = createClient6({ url: `redis://${HOST}:${PORT}` });
  const errors = [];
  client.on('error', (e) => errors.push(e));
  try {
    await client.connect();
    assert.equal(await client.ping(), 'PONG');
    const info = String(await client.sendCommand(['CLIENT', 'INFO']));
    assert.match(info, / resp=3 /, `CLIENT INFO after connect: ${info}`);
    assert.match(info, / lib-name=node-redis /, `CLIENT INFO after connect: ${info}`);
    assert.match(info, / lib-ver=6\.\d+\.\d+/, `CLIENT INFO after connect: ${info}`);
    assert.equal(await client.get('items:1'), J1);
    assert.deepEqual(errors, [], 'no client error events');
  } finally {
    client.destroy();
  }
});

test('node-redis v4, default options: RESP2, CLIENT SETINFO pipelined at connect', async () => {
  const client = createClient4({ url: `redis://${HOST}:${PORT}` });
  const errors = [];
  client.on('error', (e) => errors.push(e));
  try {
    await client.connect();
    assert.equal(await client.ping(), 'PONG');
    const info = String(await client.sendCommand(['CLIENT', 'INFO']));
    assert.match(info, / resp=2 /, `CLIENT INFO after connect: ${info}`);
    assert.match(info, / lib-name=node-redis /, `CLIENT INFO after connect: ${info}`);
    assert.match(info, / lib-ver=\d+\.\d+\.\d+/, `CLIENT INFO after connect: ${info}`);
    assert.equal(await client.get('items:1'), J1);
    assert.deepEqual(errors, [], 'no client error events');
  } finally {
    await client.disconnect().catch(() => {});
  }
});

test('ioredis, default options: HELLO 3, CLIENT SETINFO, the info ready check', async () => {
  const client = new Redis(PORT, HOST);
  const errors = [];
  client.on('error', (e) => errors.push(e));
  try {
    await Promise.race([
      new Promise((resolve) => client.once('ready', resolve)),
      sleep(10000, undefined, { ref: false }).then(() => { throw new Error(`ioredis not ready after 10 s (status ${client.status}; errors: ${errors.join('; ')})`); }),
    ]);
    assert.equal(client.status, 'ready');
    assert.equal(await client.ping(), 'PONG');
    const info = String(await client.call('CLIENT', 'INFO'));
    assert.match(info, / lib-name=ioredis /, `CLIENT INFO after connect: ${info}`);
    assert.match(info, / resp=[23] /, `CLIENT INFO after connect: ${info}`);
    assert.equal(await client.get('items:1'), J1);
    assert.deepEqual(errors, [], 'no client error events');
  } finally {
    client.disconnect();
  }
});

test('ioredis with protocol 2 (no HELLO): ready check and reads', async () => {
  const client = await ioredis({ protocol: 2 });
  const info = String(await client.call('CLIENT', 'INFO'));
  assert.match(info, / resp=2 /, `CLIENT INFO: ${info}`);
  assert.equal(await client.get('items:1'), J1);
  await close(client);
});

test('connection names travel with the handshake (HELLO SETNAME, CLIENT SETNAME)', async () => {
  const a = await redis6({ name: 'v6name' });
  const b = await redis4({ name: 'v4name' });
  const c = await ioredis({ connectionName: 'ioname' });
  assert.equal(await send(a, ['CLIENT', 'GETNAME']), 'v6name');
  assert.equal(await send(b, ['CLIENT', 'GETNAME']), 'v4name');
  assert.equal(await send(c, ['CLIENT', 'GETNAME']), 'ioname');
  await Promise.all([a, b, c].map(close));
});

test('node-redis v6 with RESP 2 and ioredis/node-redis with database 0', async () => {
  const a = await redis6({ RESP: 2, database: 0 });
  const b = await redis4({ database: 0 });
  const c = await ioredis({ db: 0 });
  for (const client of [a, b, c]) assert.equal(await client.get('items:1'), J1);
  const info = String(await a.sendCommand(['CLIENT', 'INFO']));
  assert.match(info, / resp=2 /, `CLIENT INFO: ${info}`);
  await Promise.all([a, b, c].map(close));
});

test('a database other than 0 is refused at connect', async () => {
  const err = await redis4({ database: 1 }).then((c) => { close(c); return null; }, (e) => e);
  assert.ok(err, 'node-redis v4 connect with database 1 should fail');
  assert.match(String(err.message), /DB index is out of range/);
});
