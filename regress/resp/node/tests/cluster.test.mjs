// Cluster mode (local_cache.resp_cluster): run.sh's cluster and two hot standbys made here
// (tools/cluster.sh standby, in LC_STANDBY_DIR and LC_STANDBY_DIR-2, destroyed at the end) as one
// Redis Cluster shard, through the clients' documented cluster options only: node-redis
// createCluster({ rootNodes, useReplicas: true }) and ioredis Cluster with scaleReads: 'slave'
// write through the primary (the row is there in SQL) and read through the standbys (their
// commands counters grow; node-redis spreads reads over the primary too); WAIT 2 after a write
// makes the next read on a standby see it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createCluster } from 'redis';
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

// The requests a node served so far (INFO stats, every worker).
async function commandsServed(port) {
  const info = await call(port, 'INFO', 'stats');
  return Number(/total_commands_processed:(\d+)/.exec(info)[1]);
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
      `local_cache.resp_cluster_primary = '${HOST}:${PORT}'`, 'wal_receiver_status_interval = 1');
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
    await waitFor(`the standby on ${port} to know its primary`, 30000, async () => {
      try {
        return (await call(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok');
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

test('node-redis createCluster({ rootNodes, useReplicas: true }): writes on the primary, reads on the standbys', async () => {
  const client = createCluster({
    rootNodes: [{ url: `redis://${HOST}:${standbyPorts[0]}` }, { url: `redis://${HOST}:${PORT}` }],
    useReplicas: true,
  });
  client.on('error', () => {});
  await client.connect();
  try {
    assert.equal(await client.set(key(1), JSON.stringify({ id: 1, v: 'node-redis' })), 'OK');
    assert.equal(psql(`SELECT v FROM ${T} WHERE id = 1`), 'node-redis');
    const primaryBefore = await commandsServed(PORT);
    const standbysBefore = await Promise.all(standbyPorts.map(commandsServed));
    for (let i = 2; i <= 41; i++) assert.equal(await client.get(key(i)), JSON.stringify({ id: i, v: `v${i}` }));
    const standbysAfter = await Promise.all(standbyPorts.map(commandsServed));
    const primaryAfter = await commandsServed(PORT);
    // useReplicas spreads reads over every node of the shard, the primary included
    const perStandby = standbysAfter.map((n, i) => n - standbysBefore[i]);
    const onPrimary = primaryAfter - primaryBefore;
    assert.ok(perStandby.every((n) => n > 0), `each standby served reads: ${perStandby}, the primary ${onPrimary}`);
    assert.ok(perStandby[0] + perStandby[1] + onPrimary >= 40, `${perStandby} + ${onPrimary} requests for 40 reads`);
  } finally {
    await client.close();
  }
});

test('ioredis Cluster with scaleReads: slave: writes on the primary, reads on the standbys; WAIT', async () => {
  const client = new Redis.Cluster([{ host: HOST, port: PORT }], { scaleReads: 'slave', enableReadyCheck: true });
  client.on('error', () => {});
  try {
    await waitFor('ioredis to be ready', 20000, () => client.status === 'ready');
    assert.equal(await client.set(key(3), JSON.stringify({ id: 3, v: 'ioredis' })), 'OK');
    assert.equal(psql(`SELECT v FROM ${T} WHERE id = 3`), 'ioredis');
    // read-your-writes: WAIT on the primary's connection, then a read on any standby sees it
    const primary = client.nodes('master')[0];
    await primary.hset(key(4), 'v', 'waited');
    assert.equal(await primary.call('WAIT', '2', '10000'), 2);
    assert.equal(await client.hget(key(4), 'v'), 'waited');
    const before = await Promise.all(standbyPorts.map(commandsServed));
    for (let i = 10; i < 50; i++) assert.equal(await client.hget(key(i), 'v'), `v${i}`);
    const afterReads = await Promise.all(standbyPorts.map(commandsServed));
    const onStandbys = afterReads.reduce((a, n, i) => a + n - before[i], 0);
    assert.ok(onStandbys >= 40, `the standbys served ${onStandbys} requests for 40 reads`);
  } finally {
    client.disconnect();
    await sleep(50);
  }
});
