// Shared helpers of the node --test suites: the cluster run.sh started (through environment
// variables), psql, and the three client libraries with their default options.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import net from 'node:net';
import { createClient as createClient6 } from 'redis';
import { createClient as createClient4 } from 'redis4';
import Redis from 'ioredis';

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through regress/resp/node/run.sh`);
  return value;
}

export const HOST = '127.0.0.1';
export const PORT = Number(required('LC_RESP_PORT'));
const CLUSTER_SH = required('LC_CLUSTER_SH');
const CLUSTER_DIR = required('LC_CLUSTER_DIR');
export const SERVER_LOG = `${CLUSTER_DIR}/server.log`;
export const READER_PASSWORD = required('LC_READER_PASSWORD');

export { sleep };

// Runs SQL as the cluster's superuser; returns psql's unaligned output without the last newline.
export function psql(sql) {
  try {
    return execFileSync(CLUSTER_SH, ['psql', CLUSTER_DIR, '-v', 'ON_ERROR_STOP=1', '-Atq', '-F', '\x1f', '-c', sql], {
      encoding: 'utf8',
      env: { ...process.env, PGCLIENTENCODING: 'UTF8', LC_ALL: 'C' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60000,
    }).replace(/\n$/, '');
  } catch (e) {
    throw new Error(`psql failed: ${sql}\n${e.stderr || e.message}`);
  }
}

// id -> row_to_json(row)::text of a table, as SQL renders it.
export function jsonRows(table, ids) {
  const out = psql(`SELECT id, row_to_json(lc_row_)::text FROM ${table} lc_row_ WHERE id = ANY('{${ids.join(',')}}')`);
  const map = new Map();
  if (out === '') return map;
  for (const line of out.split('\n')) {
    const [id, json] = line.split('\x1f');
    map.set(Number(id), json);
  }
  return map;
}

export function jsonOf(table, id) {
  return jsonRows(table, [id]).get(id) ?? null;
}

// Polls fn (sync or async) until it returns true; throws with describe()'s text after ms.
export async function waitFor(what, ms, fn, describe = () => '') {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) throw new Error(`gave up after ${ms} ms waiting for ${what}${describe() ? `: ${describe()}` : ''}`);
    await sleep(100);
  }
}

// A raw RESP exchange on a new connection: sends `request`, collects until `done(text)` or
// the server closes; resolves { text, closed }.
export function rawExchange(request, { done = () => false, timeoutMs = 10000 } = {}) {
  return new Promise((resolve) => {
    const socket = net.connect(PORT, HOST);
    let text = '';
    let settled = false;
    const finish = (closed) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      if (done(text)) finish(false);
    });
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
  });
}

// CONFIG GET through a fresh raw connection (either worker).
export async function configGet(name) {
  const { text } = await rawExchange(`CONFIG GET ${name}\r\n`, { done: (t) => /^\*2\r\n\$\d+\r\n[^\r]*\r\n\$\d+\r\n[^\r]*\r\n$/.test(t) || t.startsWith('-') });
  const m = /^\*2\r\n\$\d+\r\n[^\r]*\r\n\$\d+\r\n([^\r]*)\r\n$/.exec(text);
  return m ? m[1] : null;
}

// ALTER SYSTEM SET name = value (or RESET when value is null), reload, and wait until six fresh
// connections in a row (spread over the workers) report `expect` through CONFIG GET configName.
export async function setSetting(name, value, configName, expect) {
  psql(value === null ? `ALTER SYSTEM RESET ${name}` : `ALTER SYSTEM SET ${name} = '${value}'`);
  psql('SELECT pg_reload_conf()');
  if (!configName) {
    await sleep(500);
    return;
  }
  let last;
  await waitFor(`${name} reloaded`, 10000, async () => {
    for (let i = 0; i < 6; i++) {
      last = await configGet(configName);
      if (last !== String(expect)) return false;
    }
    return true;
  }, () => `CONFIG GET ${configName} answered ${last}, expected ${expect}`);
}

export function serverLog() {
  return readFileSync(SERVER_LOG, 'latin1');
}

// ---- clients with their default options (plus the address, and no reconnection so a
// failure is reported instead of retried forever)

const openClients = new Set();

// client.connect(), failing with the connect error plus every 'error' event the client emitted
// (ioredis reports a refused HELLO/AUTH as an error event and rejects with "Connection is closed.").
async function connectOrExplain(client) {
  try {
    await client.connect();
  } catch (e) {
    await sleep(50); // let queued error events arrive
    const events = client.errors.map((x) => x?.message ?? String(x));
    openClients.delete(client);
    try {
      const pending = client.disconnect?.();
      if (pending && typeof pending.catch === 'function') pending.catch(() => {});
    } catch {
      // already closed
    }
    throw new Error(`${e?.message ?? e}${events.length ? ` | error events: ${events.join(' | ')}` : ''}`);
  }
}

// node-redis, the current major (v6): sends HELLO 3 at connect.
export async function redis6(options = {}) {
  const client = createClient6({ url: `redis://${HOST}:${PORT}`, ...options, socket: { reconnectStrategy: false, ...(options.socket || {}) } });
  client.errors = [];
  client.on('error', (e) => client.errors.push(e));
  openClients.add(client);
  await connectOrExplain(client);
  return client;
}

// node-redis v4: RESP2, pipelines CLIENT SETINFO at connect.
export async function redis4(options = {}) {
  const client = createClient4({ url: `redis://${HOST}:${PORT}`, ...options, socket: { reconnectStrategy: false, ...(options.socket || {}) } });
  client.errors = [];
  client.on('error', (e) => client.errors.push(e));
  openClients.add(client);
  await connectOrExplain(client);
  return client;
}

// ioredis (v6): HELLO 3, CLIENT SETINFO, then the `info` ready check; resolves when ready.
export async function ioredis(options = {}) {
  const client = new Redis({ host: HOST, port: PORT, lazyConnect: true, retryStrategy: () => null, ...options });
  client.errors = [];
  client.on('error', (e) => client.errors.push(e));
  openClients.add(client);
  await connectOrExplain(client);
  return client;
}

export const CLIENTS = [
  { name: 'node-redis v6', connect: redis6 },
  { name: 'node-redis v4', connect: redis4 },
  { name: 'ioredis', connect: ioredis },
];

// Closes a client of any kind, quietly.
export async function close(client) {
  openClients.delete(client);
  try {
    if (client instanceof Redis) client.disconnect();
    else if (typeof client.destroy === 'function') client.destroy();
    else await client.disconnect();
  } catch {
    // already closed
  }
}

export async function closeAll() {
  await Promise.all([...openClients].map(close));
}

// A command through whichever client: node-redis sendCommand or ioredis call.
export function send(client, args) {
  if (client instanceof Redis) return client.call(args[0], ...args.slice(1));
  return client.sendCommand(args);
}

// HGETALL's result as a plain object (node-redis v6 may map RESP3 maps differently).
export function plain(value) {
  if (value instanceof Map) return Object.fromEntries(value);
  if (Array.isArray(value)) {
    const out = {};
    for (let i = 0; i + 1 < value.length; i += 2) out[String(value[i])] = String(value[i + 1]);
    return out;
  }
  return { ...value };
}

// The rejection of a promise (or a failure if it resolves).
export async function rejection(promise) {
  try {
    const value = await promise;
    return new Error(`expected an error reply, got ${JSON.stringify(value)}`);
  } catch (e) {
    return e;
  }
}
