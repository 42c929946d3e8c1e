// What the failover check (failover.check.mjs) and its benchmark (bench/failover) share: a Patroni
// cluster of three nodes (tools/patroni.sh) with a table of versioned rows, cluster clients that
// write and read through it with their default options, and a watch of every node's topology.
//
// Writers (ioredis Cluster and node-redis createCluster) own disjoint rows and raise each row's
// version one at a time: HSET fo:ID ver N and WAIT 1 1000 sent together, so that both go to the
// same node over the same connection; the write counts as acknowledged only when that WAIT
// answers 1 or more (a standby has replayed it). Readers (ioredis Cluster whose scaleReads picks
// a random standby of the slot map, as scaleReads: 'slave' does, and notes which) read random rows
// and remember the newest version of each per node they read it on: a read below it on the same
// node went back in time, and every version read on a standby must still be there at the end (a
// failover lost no write a standby had shown). Reads the client sends to the primary because
// its slot map lists no standby (ioredis's fallback) are counted apart and checked for neither:
// a crash can lose what a primary shows before any standby has it. ioredis refreshes its slot map
// on errors and -MOVED only, unless slotsRefreshInterval asks for more: a client that only reads
// meets neither when a standby it reads from is promoted, and would go on reading the new primary
// as a standby; the readers refresh every second (docs/PATRONI.md).
import { execFile, execFileSync } from 'node:child_process';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { createCluster } from 'redis';
import Redis from 'ioredis';
import { HOST, sleep } from '../tests/helpers.mjs';
import { RawResp } from '../tests/resp3_raw.mjs';

export const PATRONI_SH = `${dirname(process.env.LC_CLUSTER_SH)}/patroni.sh`;
export const TABLE = 'fo_items';
export const ROLE = 'fo_client';
export const ROWS_PER_WRITER = 10;
const key = (id) => `fo:${id}`;
const execFileAsync = promisify(execFile);

export const patroni = (...args) =>
  execFileSync(PATRONI_SH, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 180000 });
export const patroniAsync = async (...args) =>
  (await execFileAsync(PATRONI_SH, args, { encoding: 'utf8', timeout: 180000 })).stdout;

// name, pg port, RESP port, REST API port of each node (tools/patroni.sh nodes)
export function nodes(dir) {
  return patroni('nodes', dir).trim().split('\n').map((line) => {
    const [name, pg, resp, api, role] = line.split(' ');
    return { name, pg: Number(pg), resp: Number(resp), api: Number(api), role };
  });
}

export const sql = (dir, text) => patroni('psql', dir, 'leader', '-v', 'ON_ERROR_STOP=1', '-Atq', '-c', text).trim();

// Starts the cluster in dir and creates the table (rows 1..rows, version 0) on its leader.
export function startCluster(dir, rows) {
  patroni('start', dir, `local_cache.resp_role=${ROLE}`);
  sql(dir, `CREATE EXTENSION local_cache;
            CREATE ROLE ${ROLE};
            CREATE TABLE ${TABLE} (id integer PRIMARY KEY, ver bigint NOT NULL);
            INSERT INTO ${TABLE} SELECT g, 0 FROM generate_series(1, ${rows}) g;
            SELECT local_cache.enable('${TABLE}', resp_prefix => 'fo');
            GRANT SELECT, INSERT, UPDATE, DELETE ON ${TABLE} TO ${ROLE}`);
  return nodes(dir);
}

// One request on a new connection; null if the node does not answer.
export async function ask(port, ...args) {
  let c;
  try {
    c = await RawResp.connect({ port, protocol: 2 });
    return await c.call(...args);
  } catch {
    return null;
  } finally {
    c?.close();
  }
}

// The primary's RESP endpoint each node names in ROLE ("host:port"; a primary names itself).
export async function namedPrimaries(all) {
  return Promise.all(all.map(async (n) => {
    const role = await ask(n.resp, 'ROLE');
    if (!Array.isArray(role)) return null;
    return role[0] === 'master' ? `${HOST}:${n.resp}` : `${role[1]}:${role[2]}`;
  }));
}

// Every node's CLUSTER SHARDS primary ("host:port"), null for a node that does not answer.
export async function shardPrimaries(all) {
  return Promise.all(all.map(async (n) => {
    const shards = await ask(n.resp, 'CLUSTER', 'SHARDS');
    if (!Array.isArray(shards) || shards.length !== 1) return null;
    const fields = shards[0];
    const nodeList = fields[fields.indexOf('nodes') + 1];
    for (const node of nodeList) {
      const f = (name) => node[node.indexOf(name) + 1];
      if (f('role') === 'master') return `${f('ip')}:${f('port')}`;
    }
    return null;
  }));
}

// ioredis's scaleReads for a reader, as 'slave' does: a random one of the slot's standbys
// (candidates[0] is its primary), the primary when it has none; notes in `chosen` the node and
// whether it is a standby. After a -MOVED the slot map may name nodes ioredis has no connection to
// yet (undefined candidates): they are skipped; with none left it returns undefined, ioredis then
// picks a node itself, and the read counts as one on a primary (checked for nothing).
export function pickStandby(chosen) {
  return (candidates) => {
    const standbys = candidates.slice(1).filter(Boolean);
    const node = standbys.length ? standbys[Math.floor(Math.random() * standbys.length)] : candidates[0];
    chosen.node = node ? `${node.options.host}:${node.options.port}` : null;
    chosen.standby = standbys.length > 0;
    return node;
  };
}

// The workload: writers and readers until stop(); its counters and the first successful write
// after each mark() (the time a failover's promotion was seen).
export class Workload {
  constructor(all, { readers = 2 } = {}) {
    this.rootNodes = all.map((n) => ({ host: HOST, port: n.resp }));
    this.readerCount = readers;
    this.acked = new Map(); // id -> highest version a WAIT 1 acknowledged
    this.seen = new Map(); // "reader node id" -> highest version read there
    this.shown = new Map(); // id -> highest version any standby showed
    this.backInTime = [];
    this.stats = { writes: 0, acked: 0, writeErrors: 0, waitShort: 0, reads: 0, primaryReads: 0, readErrors: 0 };
    this.firstWriteAfter = null; // ms from mark() to the first write answered OK after it
    this.firstAckAfter = null; // ... and to the first one a WAIT 1 acknowledged
    this.marked = null;
    this.running = true;
    this.loops = [];
    this.clients = [];
  }

  mark() {
    this.marked = Date.now();
    this.firstWriteAfter = null;
    this.firstAckAfter = null;
  }

  #written() {
    if (this.marked !== null && this.firstWriteAfter === null) this.firstWriteAfter = Date.now() - this.marked;
  }

  #acknowledge(id, version) {
    this.stats.acked++;
    if (version > (this.acked.get(id) ?? 0)) this.acked.set(id, version);
    if (this.marked !== null && this.firstAckAfter === null) this.firstAckAfter = Date.now() - this.marked;
  }

  // write(id, version, written) resolves to WAIT's answer, or throws; it calls written() once the
  // write itself was answered OK
  async #writer(ids, write) {
    const versions = new Map(ids.map((id) => [id, 0]));
    while (this.running) {
      const id = ids[Math.floor(Math.random() * ids.length)];
      const version = versions.get(id) + 1;
      versions.set(id, version);
      this.stats.writes++;
      try {
        const replicas = await write(id, version, () => this.#written());
        if (replicas >= 1) this.#acknowledge(id, version);
        else this.stats.waitShort++;
      } catch {
        this.stats.writeErrors++;
        await sleep(20);
      }
    }
  }

  // chosen.node: the node the reader's last request went to, chosen.standby whether as a standby
  async #reader(index, client, chosen, ids) {
    while (this.running) {
      const id = ids[Math.floor(Math.random() * ids.length)];
      try {
        const value = await client.hget(key(id), 'ver');
        const version = Number(value);
        if (!chosen.standby) {
          this.stats.primaryReads++;
          continue;
        }
        this.stats.reads++;
        const where = `${index} ${chosen.node} ${id}`;
        const before = this.seen.get(where) ?? 0;
        if (version < before) this.backInTime.push({ reader: index, node: chosen.node, id, read: version, before, at: Date.now() });
        else this.seen.set(where, version);
        if (version > (this.shown.get(id)?.version ?? 0)) this.shown.set(id, { version, node: chosen.node, at: Date.now() });
      } catch {
        this.stats.readErrors++;
        await sleep(20);
      }
    }
  }

  async start() {
    const io = new Redis.Cluster(this.rootNodes);
    io.on('error', () => {});
    const nr = createCluster({ rootNodes: this.rootNodes.map((n) => ({ socket: n })) });
    nr.on('error', () => {});
    this.clients.push({ close: () => io.disconnect() }, { close: () => nr.destroy() });
    await nr.connect();
    const ioIds = Array.from({ length: ROWS_PER_WRITER }, (_, i) => 1 + i);
    const nrIds = Array.from({ length: ROWS_PER_WRITER }, (_, i) => 1 + ROWS_PER_WRITER + i);
    // ioredis: a pipeline goes to the node of its keys' slot, WAIT with it over one connection
    this.loops.push(this.#writer(ioIds, async (id, version, written) => {
      const [[hsetError], [waitError, replicas]] = await io.pipeline().hset(key(id), 'ver', version).call('WAIT', '1', '1000').exec();
      if (hsetError) throw hsetError;
      written();
      if (waitError) throw waitError;
      return replicas;
    }));
    // node-redis: both commands in one tick take the same slot map, so the same node's socket
    this.loops.push(this.#writer(nrIds, async (id, version, written) => {
      const [hset, wait] = await Promise.allSettled([
        nr.hSet(key(id), 'ver', String(version)),
        nr.sendCommand(key(id), false, ['WAIT', '1', '1000']),
      ]);
      if (hset.status === 'rejected') throw hset.reason;
      written();
      if (wait.status === 'rejected') throw wait.reason;
      return Array.isArray(wait.value) ? Math.min(...wait.value) : wait.value;
    }));
    const all = [...ioIds, ...nrIds];
    for (let i = 0; i < this.readerCount; i++) {
      const chosen = { node: null, standby: false };
      const reader = new Redis.Cluster(this.rootNodes, { scaleReads: pickStandby(chosen), slotsRefreshInterval: 1000 });
      reader.on('error', () => {});
      this.clients.push({ close: () => reader.disconnect() });
      this.loops.push(this.#reader(i, reader, chosen, all));
    }
  }

  async stop() {
    this.running = false;
    await Promise.race([Promise.all(this.loops), sleep(15000)]);
    for (const c of this.clients) {
      try {
        await c.close();
      } catch {
        // already closed
      }
    }
  }
}

// Waits until every node in `expected` names `primary` in ROLE and CLUSTER SHARDS; ms taken,
// or null after `limit` ms.
export async function untilAllName(expected, primary, limit) {
  const start = Date.now();
  while (Date.now() - start < limit) {
    const [roles, shards] = await Promise.all([namedPrimaries(expected), shardPrimaries(expected)]);
    if (roles.every((p) => p === primary) && shards.every((p) => p === primary)) return Date.now() - start;
    await sleep(100);
  }
  return null;
}

// Waits for a node other than `old` to answer ROLE as master (Patroni promoted it).
export async function untilPromoted(all, old, limit) {
  const start = Date.now();
  while (Date.now() - start < limit) {
    for (const n of all) {
      if (n.name === old) continue;
      const role = await ask(n.resp, 'ROLE');
      if (Array.isArray(role) && role[0] === 'master') return n;
    }
    await sleep(50);
  }
  return null;
}
