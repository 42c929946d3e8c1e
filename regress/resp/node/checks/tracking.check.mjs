// The randomized CLIENT TRACKING checker (tracking_check.mjs) as a node test, kept out of the
// default suite (run.sh runs tests/*.test.mjs): tools/test.sh's tracking-check step runs it as
//   LC_TRACKING_CHECK_SECONDS=30 regress/resp/node/run.sh checks/tracking.check.mjs
// (default 5 s; minutes for a soak; LC_TRACKING_CHECK_SEED repeats a run; the RESP workers are
// terminated and restarted LC_TRACKING_CHECK_RESTARTS times, default 2, each while a transaction
// is prepared, committed once they serve again). It passes when, after
// the writers stopped and a short quiescence, every tracking client's local copy equals the
// table: 0 stale keys. Its summary line starts with `tracking-check: `.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { psql } from '../tests/helpers.mjs';
import { runTrackingCheck } from './tracking_check.mjs';

const WRITER = { user: 'regress_trkchk_writer', password: 'trkchk-Pw-8Lq3' };
const SECONDS = Number(process.env.LC_TRACKING_CHECK_SECONDS || 5);
const SEED = process.env.LC_TRACKING_CHECK_SEED ? Number(process.env.LC_TRACKING_CHECK_SEED) : undefined;
const RESTARTS = Number(process.env.LC_TRACKING_CHECK_RESTARTS ?? 2);

before(() => psql(`CREATE ROLE ${WRITER.user} LOGIN PASSWORD '${WRITER.password}'`));
after(() => psql(`DROP TABLE IF EXISTS trk_check; DROP OWNED BY ${WRITER.user}; DROP ROLE ${WRITER.user}`));

test(`randomized check, ${SECONDS} s: SQL and RESP writers, tracking clients' local copies equal the table after quiescence`, async () => {
  const r = await runTrackingCheck({ seconds: SECONDS, seed: SEED, writer: WRITER, restarts: RESTARTS, log: (line) => console.log(line) });
  assert.ok(r.stats.reads > 0 && r.stats.pushes > 0, `no reads or no pushes: ${JSON.stringify(r.stats)}`);
  assert.ok(r.compared > 0, 'no cached key to compare');
  assert.deepEqual(r.stale, [], `stale keys (seed ${r.seed})`);
  assert.deepEqual(r.fenceMissing, [], 'clients without the fence\'s push');
  assert.equal(r.leftoverPrepared, 0, 'prepared transactions left behind');
  assert.equal(r.stats.restarts, RESTARTS, 'worker restarts done');
});
