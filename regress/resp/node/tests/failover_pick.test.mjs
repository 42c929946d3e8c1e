// The failover check's readers pick a standby of the slot map the way ioredis's scaleReads:
// 'slave' does and note which node they read (checks/failover_lib.mjs, pickStandby). Right after
// a -MOVED, ioredis hands scaleReads nodes of the new slot map it holds no connection to yet
// (undefined): the pick skips them instead of throwing (a TypeError there escaped the check as
// an uncaught exception and failed a passing run). No server needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pickStandby } from '../checks/failover_lib.mjs';

const node = (port) => ({ options: { host: '127.0.0.1', port } });

test('a standby of the slot, noted as one; the primary when the slot has none', () => {
  const chosen = { node: null, standby: false };
  const pick = pickStandby(chosen);
  const standby = node(2);
  assert.equal(pick([node(1), standby]), standby);
  assert.deepEqual(chosen, { node: '127.0.0.1:2', standby: true });
  const primary = node(1);
  assert.equal(pick([primary]), primary);
  assert.deepEqual(chosen, { node: '127.0.0.1:1', standby: false });
});

test('nodes without a connection yet are skipped; none left: undefined, counted as no standby', () => {
  const chosen = { node: null, standby: false };
  const pick = pickStandby(chosen);
  const standby = node(3);
  for (let i = 0; i < 20; i++) assert.equal(pick([node(1), undefined, standby]), standby);
  assert.deepEqual(chosen, { node: '127.0.0.1:3', standby: true });
  const primary = node(1);
  assert.equal(pick([primary, undefined]), primary);
  assert.deepEqual(chosen, { node: '127.0.0.1:1', standby: false });
  assert.equal(pick([undefined, undefined]), undefined);
  assert.deepEqual(chosen, { node: null, standby: false });
});
