// 1,000 concurrent connections, and a client that stops reading its replies.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import Redis from 'ioredis';
import {
  HOST, PORT, redis6, redis4, ioredis, closeAll, close, jsonRows, jsonOf, setSetting, serverLog, sleep, waitFor, rawExchange,
} from './helpers.mjs';

after(closeAll);

const CONNECTIONS = Number(process.env.LC_CONNECTIONS || 1000);
const FD_LIMIT = Number(process.env.LC_FD_LIMIT || 0);

test(`${CONNECTIONS} concurrent connections (node-redis v6, v4 and ioredis), every answer correct`, async () => {
  assert.ok(FD_LIMIT === 0 || FD_LIMIT >= CONNECTIONS + 200,
    `the open files limit (ulimit -n) is ${FD_LIMIT}: ${CONNECTIONS} connections need at least ${CONNECTIONS + 200}`);
  const expected = jsonRows('items', Array.from({ length: 2000 }, (_, i) => i + 1));
  const factories = [redis6, redis4, ioredis];
  // open them all first, so that they are connected at the same time
  const settled = await Promise.allSettled(
    Array.from({ length: CONNECTIONS }, (_, i) => factories[i % 3]()),
  );
  const clients = settled.filter((s) => s.status === 'fulfilled').map((s) => s.value);
  const failures = settled.filter((s) => s.status === 'rejected').map((s) => String(s.reason?.message ?? s.reason));
  try {
    assert.equal(clients.length, CONNECTIONS,
      `${failures.length} of ${CONNECTIONS} connections failed; first errors: ${[...new Set(failures)].slice(0, 3).join(' / ')}`);
    const wrong = [];
    await Promise.all(clients.map(async (client, i) => {
      const keys = [1, 2, 3].map((k) => ((i * 7 + k * 13) % 2000) + 1);
      const names = keys.map((k) => `items:${k}`).concat(['items:999999']);
      const got = client instanceof Redis ? await client.mget(names) : await client.mGet(names);
      const want = keys.map((k) => expected.get(k)).concat([null]);
      if (JSON.stringify(got) !== JSON.stringify(want)) wrong.push(`connection ${i}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
      const one = await client.get(`items:${keys[0]}`);
      if (one !== expected.get(keys[0])) wrong.push(`connection ${i}: GET items:${keys[0]} expected ${expected.get(keys[0])}, got ${one}`);
    }));
    assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} connections got wrong answers`);
    // all still connected: with resp_max_clients = CONNECTIONS the next connection is refused
    await setSetting('local_cache.resp_max_clients', String(CONNECTIONS), null);
    const { text, closed } = await rawExchange('PING\r\n', { done: () => false, timeoutMs: 5000 });
    assert.deepEqual({ text, closed }, { text: '-ERR max number of clients reached\r\n', closed: true },
      `connection number ${CONNECTIONS + 1} with resp_max_clients = ${CONNECTIONS}`);
  } finally {
    await Promise.all(clients.map(close));
    await setSetting('local_cache.resp_max_clients', null, 'maxclients', 10000);
  }
});

test('a raw client that sends a big pipeline and stops reading is disconnected; others are served', async () => {
  await setSetting('local_cache.resp_output_buffer_limit', '64kB', null);
  const logBefore = serverLog().length;
  try {
    const socket = net.connect(PORT, HOST);
    await once(socket, 'connect');
    socket.pause(); // never read a reply
    let closed = false;
    let received = 0;
    socket.on('data', (chunk) => { received += chunk.length; });
    socket.on('error', () => { closed = true; });
    socket.on('close', () => { closed = true; });
    // each request asks for 10 rows of 4 kB (a 40 kB reply, below the limit) in 66 bytes
    const request = Buffer.from(`MGET${' big:1'.repeat(10)}\r\n`);
    const requests = 4000;
    const replyBytes = requests * 10 * 4000;
    const deadline = Date.now() + 20000;
    for (let i = 0; i < requests && !closed && Date.now() < deadline; i++) {
      if (!socket.write(request)) {
        await Promise.race([once(socket, 'drain').catch(() => {}), once(socket, 'close').catch(() => {}), sleep(1000)]);
      }
    }
    // Now read: a disconnected client gets what the kernel buffered, then the end; one still
    // connected would get every reply (replyBytes).
    socket.resume();
    await waitFor('the server to close the connection', 20000, () => closed,
      () => `still open after receiving ${received} bytes`);
    assert.ok(received < replyBytes / 2, `received ${received} of ${replyBytes} reply bytes before the close`);
    assert.match(serverLog().slice(logBefore), /output buffer limit exceeded/);

    // the worker keeps serving others
    const client = await redis6();
    assert.equal(await client.get('items:1'), jsonOf('items', 1));
    await close(client);
  } finally {
    await setSetting('local_cache.resp_output_buffer_limit', null, null);
  }
});

test('a client reading slowly but steadily is not disconnected', async () => {
  await setSetting('local_cache.resp_output_buffer_limit', '1MB', null);
  try {
    const client = await redis4();
    const big = jsonOf('bigrow', 1);
    for (let round = 0; round < 5; round++) {
      const replies = await Promise.all(Array.from({ length: 50 }, () => client.get('big:1')));
      assert.ok(replies.every((r) => r === big), `round ${round}: every reply equals the row`);
    }
    await close(client);
  } finally {
    await setSetting('local_cache.resp_output_buffer_limit', null, null);
  }
});
