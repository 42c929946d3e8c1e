// Cluster mode (local_cache.resp_cluster): run.sh's cluster and two hot standbys made here
// (tools/cluster.sh standby, in LC_STANDBY_DIR and LC_STANDBY_DIR-2, destroyed at the end) as one
// Redis Cluster shard, through the clients' documented cluster options only, each started from
// one standby (so it learns the group from a standby's topology): node-redis v5 and v6
// createCluster({ rootNodes, useReplicas: true }) and ioredis Cluster with scaleReads: 'slave'
// write through the primary (the row is there in SQL; INFO commandstats: SET ran there and on no
// standby) and read through both standbys (each one's GET calls grow; node-redis spreads reads
// over the primary too); WAIT 2 after a write makes the next read on a standby see it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createCluster } from 'redis';
import { createCluster as createCluster5 } from 'redis5';
import Redis from 'ioredis';
import { HOST, PORT, psql, waitFor, sleep } from './helpers.mjs';
import { RawResp } from './resp3_raw.mjs';

const CLUSTER_SH = process.env.LC_CLUSTER_SH;
const PRIMARY_DIR = process.env.LC_CLUSTER_DIR;
const STANDBY_DIRS = [process.env.LC_STANDBY_DIR, `${process.env.LC_STANDBY_DIR}-2`];
const T = 'clu_items';
const key = (id) => `clu:${id}`;
const standbyPorts = [];
const made = [];

const cluster = (...args) => execFileSync(CLUSTER_SH, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120000 });
const standbySql = (dir, sql) => cluster('psql', dir, '-Atq', '-c', sql).trim();

async function call(port, ...args) {
  const c = await RawResp.connect({ port });
  try {
    return await c.call(...args);
  } finally {
    c.close();
  }
}

// The calls of one command a node ran so far (INFO commandstats, every worker).
async function calls(port, command) {
  const info = await call(port, 'INFO', 'commandstats');
  const found = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info);
  return found ? Number(found[1]) : 0;
}
const allPorts = () => [PORT, ...standbyPorts];
const callsPerNode = (command) => Promise.all(allPorts().map((port) => calls(port, command)));
const delta = (after, before) => after.map((n, i) => n - before[i]);
// The calls per node since `before`, once they add up to `total`: a worker's counts reach the shared
// statistics within 10 ms of its last request (Worker::kStatsFoldDelayMs), so INFO may lag that much.
async function countedSince(command, before, total) {
  let counted = delta(await callsPerNode(command), before);
  for (let i = 0; i < 100 && counted.reduce((a, n) => a + n, 0) < total; i++) {
    await sleep(20);
    counted = delta(await callsPerNode(command), before);
  }
  return counted;
}

before(async () => {
  psql(`CREATE TABLE ${T} (id integer PRIMARY KEY, v text);
        INSERT INTO ${T} SELECT g, 'v' || g FROM generate_series(1, 50) g;
        SELECT local_cache.enable('${T}', resp_prefix => 'clu');
        GRANT SELECT, INSERT, UPDATE, DELETE ON ${T} TO regress_resp_reader`);
  psql('ALTER SYSTEM SET local_cache.resp_cluster = on');
  psql('SELECT pg_reload_conf()');
  for (const dir of STANDBY_DIRS) {
    const port = Number(cluster('freeport').trim());
    cluster('standby', PRIMARY_DIR, dir, 'auto', `local_cache.resp_port = ${port}`,
      `local_cache.resp_cluster_primary = '${HOST}:${PORT}'`);
    made.push(dir);
    standbyPorts.push(port);
    // The standby announces its RESP endpoint to the primary in its application_name.
    const conninfo = standbySql(dir, 'SHOW primary_conninfo').replace(/application_name=\S+/, '');
    standbySql(dir, `ALTER SYSTEM SET primary_conninfo = '${conninfo.replace(/'/g, "''")} application_name=${HOST}:${port}'`);
    standbySql(dir, 'SELECT pg_reload_conf()');
  }
  await waitFor('the primary to list both standbys', 60000, async () => {
    try {
      const slots = await call(PORT, 'CLUSTER', 'SLOTS');
      return slots.length === 1 && slots[0].length === 5; // the range, the primary, two standbys
    } catch {
      return false;
    }
  });
  for (const port of standbyPorts) {
    await waitFor(`the standby on ${port} to know its primary and its sibling`, 30000, async () => {
      try {
        const slots = await call(port, 'CLUSTER', 'SLOTS');
        return (await call(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok') && slots[0].length === 5;
      } catch {
        return false;
      }
    });
  }
});

after(() => {
  try {
    for (const dir of made) cluster('destroy', dir);
  } finally {
    psql('ALTER SYSTEM RESET local_cache.resp_cluster');
    psql('SELECT pg_reload_conf()');
    psql(`DROP TABLE ${T}`);
  }
});

for (const [name, create] of [['node-redis v5', createCluster5], ['node-redis v6', createCluster]]) {
  test(`${name} createCluster({ rootNodes: [a standby], useReplicas: true }): writes on the primary, reads on both standbys`, async () => {
    const client = create({ rootNodes: [{ url: `redis://${HOST}:${standbyPorts[0]}` }], useReplicas: true });
    client.on('error', () => {});
    await client.connect();
    try {
      const setsBefore = await callsPerNode('set');
      assert.equal(await client.set(key(1), JSON.stringify({ id: 1, v: name })), 'OK');
      assert.equal(psql(`SELECT v FROM ${T} WHERE id = 1`), name);
      assert.deepEqual(await countedSince('set', setsBefore, 1), [1, 0, 0], 'SET ran on the primary only');
      const getsBefore = await callsPerNode('get');
      for (let i = 2; i <= 41; i++) assert.equal(await client.get(key(i)), JSON.stringify({ id: i, v: `v${i}` }));
      const gets = await countedSince('get', getsBefore, 40);
      // useReplicas spreads reads over every node of the shard, the primary included
      assert.ok(gets[1] > 0 && gets[2] > 0, `each standby served reads (GET per node: ${gets})`);
      assert.equal(gets[0] + gets[1] + gets[2], 40, `40 reads, each served once (GET per node: ${gets})`);
    } finally {
      await client.close();
    }
  });
}

test('ioredis Cluster with scaleReads: slave: writes on the primary, reads on the standbys; WAIT', async () => {
  const client = new Redis.Cluster([{ host: HOST, port: standbyPorts[1] }], { scaleReads: 'slave', enableReadyCheck: true });
  client.on('error', () => {});
  try {
    await waitFor('ioredis to be ready', 20000, () => client.status === 'ready');
    const setsBefore = await callsPerNode('set');
    assert.equal(await client.set(key(3), JSON.stringify({ id: 3, v: 'ioredis' })), 'OK');
    assert.equal(psql(`SELECT v FROM ${T} WHERE id = 3`), 'ioredis');
    assert.deepEqual(await countedSince('set', setsBefore, 1), [1, 0, 0], 'SET ran on the primary only');
    // read-your-writes: WAIT on the primary's connection, then a read on any standby sees it
    const primary = client.nodes('master')[0];
    await primary.hset(key(4), 'v', 'waited');
    assert.equal(await primary.call('WAIT', '2', '10000'), 2);
    // counted from before the first HGET: a worker's counts reach INFO up to 10 ms late, so a
    // snapshot taken right after a read may or may not include it
    const before = await callsPerNode('hget');
    assert.equal(await client.hget(key(4), 'v'), 'waited');
    for (let i = 10; i < 50; i++) assert.equal(await client.hget(key(i), 'v'), `v${i}`);
    const hgets = await countedSince('hget', before, 41);
    // scaleReads: 'slave' reads on a random standby each time: both, never the primary
    assert.deepEqual([hgets[0], hgets[1] + hgets[2]], [0, 41], `HGET per node: ${hgets}`);
    assert.ok(hgets[1] > 0 && hgets[2] > 0, `each standby served reads (HGET per node: ${hgets})`);
  } finally {
    client.disconnect();
    await sleep(50);
  }
});
