'use strict';
// bench/node/pg_connect.js: a node-postgres connection from the conninfo the driver passes
// (`host=... port=... user=... dbname=...`), shared by client.js and tracking.js.
const pg = require('pg');

function pgConfig(conninfo) {
  const c = {};
  for (const part of conninfo.trim().split(/\s+/)) {
    const [k, v] = part.split('=');
    c[{ dbname: 'database' }[k] || k] = k === 'port' ? Number(v) : v;
  }
  return c;
}

// o.pg: the conninfo
async function pgConnect(o) {
  const c = new pg.Client(pgConfig(o.pg));
  await c.connect();
  return c;
}

module.exports = { pgConnect };
