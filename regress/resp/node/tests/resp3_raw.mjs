// A raw RESP client of the tracking tests (tracking*.test.mjs, ../checks/tracking_check.mjs): it sends
// commands as RESP arrays and parses RESP2 and RESP3 replies itself, so that the tests see the
// bytes' meaning exactly (a RESP3 null inside a push, a map, a RESP2 Pub/Sub message) without a
// client library deciding for them. Replies are matched to requests in order; out-of-band
// messages (RESP3 pushes `>`, and on RESP2 the `message` arrays of subscribed mode) go to a
// separate queue that nextPush() / pushesUntil() read. Also: the asynchronous psql the tests
// use to commit while a connection waits, and landing a connection on a given worker.
import net from 'node:net';
import { spawn } from 'node:child_process';
import { HOST, PORT } from './helpers.mjs';

// An error reply (`-ERR ...`, `!...`), kept as a value so a pipelined sequence can hold it.
export class RespError {
  constructor(message) {
    this.message = message;
  }
  toString() {
    return this.message;
  }
}

// A RESP3 push frame's elements (so that nothing else is mistaken for one).
export class Push extends Array {}

const CRLF = Buffer.from('\r\n');

// Parses one value at `pos` of `buf`; returns [value, nextPos] or null if incomplete.
function parse(buf, pos) {
  if (pos >= buf.length) return null;
  const end = buf.indexOf(CRLF, pos);
  if (end < 0) return null;
  const type = String.fromCharCode(buf[pos]);
  const line = buf.toString('utf8', pos + 1, end);
  let next = end + 2;
  const aggregate = (count, make) => {
    const items = [];
    for (let i = 0; i < count; i++) {
      const r = parse(buf, next);
      if (!r) return null;
      items.push(r[0]);
      next = r[1];
    }
    return [make(items), next];
  };
  switch (type) {
    case '+':
      return [line, next];
    case '-':
      return [new RespError(line), next];
    case ':':
      return [Number.isSafeInteger(Number(line)) ? Number(line) : BigInt(line), next];
    case ',':
      return [Number(line), next];
    case '#':
      return [line === 't', next];
    case '(':
      return [BigInt(line), next];
    case '_':
      return [null, next];
    case '$':
    case '!':
    case '=': {
      const n = Number(line);
      if (n < 0) return [null, next];
      if (buf.length < next + n + 2) return null;
      let text = buf.toString('utf8', next, next + n);
      if (type === '=') text = text.slice(4); // "txt:" of a verbatim string
      const value = type === '!' ? new RespError(text) : text;
      return [value, next + n + 2];
    }
    case '*':
    case '~': {
      const n = Number(line);
      if (n < 0) return [null, next];
      return aggregate(n, (items) => items);
    }
    case '>':
      return aggregate(Number(line), (items) => Push.from(items));
    case '%':
      return aggregate(2 * Number(line), (items) => {
        const map = new Map();
        for (let i = 0; i < items.length; i += 2) map.set(items[i], items[i + 1]);
        return map;
      });
    case '|': {
      // an attribute: skip it, the value follows
      const r = aggregate(2 * Number(line), () => null);
      if (!r) return null;
      return parse(buf, r[1]);
    }
    default:
      throw new Error(`unknown RESP type byte ${JSON.stringify(type)} in ${JSON.stringify(buf.toString('latin1', pos, pos + 40))}`);
  }
}

function encode(args) {
  const parts = [`*${args.length}\r\n`];
  for (const a of args) {
    const b = Buffer.isBuffer(a) ? a : Buffer.from(String(a));
    parts.push(`$${b.length}\r\n`, b, '\r\n');
  }
  return Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p))));
}

// RESP2 subscribed mode: these arrays arrive unrequested, like pushes.
const isPubSubMessage = (v) => Array.isArray(v) && !(v instanceof Push) && (v[0] === 'message' || v[0] === 'pmessage');

export class RawResp {
  // Connects; with protocol 3 sends HELLO 3 first. Resolves with the connection, its `id`
  // (CLIENT ID) and `worker` (the id's bits above 40: the worker that serves it).
  static async connect({ port = PORT, protocol = 3, auth = null } = {}) {
    const c = new RawResp();
    await new Promise((resolve, reject) => {
      c.socket = net.connect(port, HOST, resolve);
      c.socket.once('error', reject);
    });
    c.socket.setNoDelay(true);
    c.socket.on('data', (chunk) => c.#receive(chunk));
    c.socket.on('error', (e) => c.#fail(e));
    c.socket.on('close', () => {
      c.#fail(new Error('connection closed by the server'));
      c.#closedResolve();
    });
    if (protocol === 3) {
      const hello = await c.call('HELLO', '3');
      if (!(hello instanceof Map)) throw new Error(`HELLO 3 answered ${JSON.stringify(hello)}`);
    }
    if (auth) await c.ok('AUTH', ...auth);
    c.id = await c.call('CLIENT', 'ID');
    c.worker = Math.floor(Number(c.id) / 2 ** 40);
    return c;
  }

  socket = null;
  #closedResolve;
  // resolves when the socket closed (by either side)
  closed = new Promise((resolve) => (this.#closedResolve = resolve));
  #buf = Buffer.alloc(0);
  #waiting = []; // resolvers of the requests sent, in order
  #pushes = []; // { value, seq }
  #seq = 0; // frames parsed so far: orders pushes and replies (callSeq, drainPushes)
  #pushWaiter = null;
  #error = null;

  #receive(chunk) {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : chunk;
    let pos = 0;
    for (;;) {
      let r;
      try {
        r = parse(this.#buf, pos);
      } catch (e) {
        this.#fail(e);
        this.socket.destroy();
        return;
      }
      if (!r) break;
      pos = r[1];
      const value = r[0];
      const seq = ++this.#seq;
      if (value instanceof Push || isPubSubMessage(value)) {
        this.#pushes.push({ value, seq });
        if (this.#pushWaiter) this.#pushWaiter();
      } else {
        const w = this.#waiting.shift();
        if (w) w.resolve(w.withSeq ? [value, seq] : value);
        else this.#fail(new Error(`a reply nobody asked for: ${JSON.stringify(value)}`));
      }
    }
    this.#buf = this.#buf.subarray(pos);
  }

  #fail(e) {
    if (!this.#error) this.#error = e;
    for (const w of this.#waiting.splice(0)) w.reject(e);
    if (this.#pushWaiter) this.#pushWaiter();
  }

  // Sends one command; resolves with its reply (a RespError for an error reply).
  call(...args) {
    if (this.#error) return Promise.reject(this.#error);
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      this.socket.write(encode(args));
    });
  }

  // As call(), resolving with [reply, seq]: a push with a lower seq arrived before the reply,
  // a higher one after it (the reply's continuation runs after the whole chunk was parsed).
  callSeq(...args) {
    if (this.#error) return Promise.reject(this.#error);
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject, withSeq: true });
      this.socket.write(encode(args));
    });
  }

  // Every push that arrived and was not taken, as { value, seq }, oldest first.
  drainPushes() {
    if (this.#error) throw this.#error;
    return this.#pushes.splice(0);
  }

  // Sends one command and fails unless it answers +OK.
  async ok(...args) {
    const reply = await this.call(...args);
    if (reply !== 'OK') throw new Error(`${args.join(' ')} answered ${reply instanceof RespError ? `-${reply}` : JSON.stringify(reply)}`);
    return reply;
  }

  // Sends one command and fails on an error reply.
  async must(...args) {
    const reply = await this.call(...args);
    if (reply instanceof RespError) throw new Error(`${args.join(' ')} answered -${reply}`);
    return reply;
  }

  // The pushes that arrived and were not taken yet.
  get pendingPushes() {
    return this.#pushes.length;
  }

  // The next push (RESP3 `>` frame or RESP2 Pub/Sub message); null if none within ms.
  async nextPush(ms = 5000) {
    const deadline = Date.now() + ms;
    while (this.#pushes.length === 0) {
      if (this.#error) throw this.#error;
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.#pushWaiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.#pushWaiter = null;
    }
    return this.#pushes.shift().value;
  }

  // Takes pushes until one for which stop(push) holds; returns them all (that one last). Throws
  // if none does within ms. This is how the tests show that something was NOT sent: a later
  // committed change is pushed (pushes come in commit order), and nothing before it is the
  // unwanted push.
  async pushesUntil(stop, ms = 5000, what = 'the expected push') {
    const taken = [];
    const deadline = Date.now() + ms;
    for (;;) {
      const p = await this.nextPush(Math.max(0, deadline - Date.now()));
      if (p === null) throw new Error(`no ${what} within ${ms} ms; pushes seen: ${JSON.stringify(taken)}`);
      taken.push(p);
      if (stop(p)) return taken;
    }
  }

  close() {
    this.#error = this.#error || new Error('closed');
    this.socket?.destroy();
  }
}

// The keys of an invalidation push (RESP3 `>2 invalidate [keys]`, or RESP2
// `*3 message __redis__:invalidate [keys]`); null for the flush-all invalidation; undefined if
// the push is not an invalidation.
export function invalidatedKeys(push) {
  if (push instanceof Push && push.length === 2 && push[0] === 'invalidate') return push[1];
  if (!(push instanceof Push) && push.length === 3 && push[0] === 'message' && push[1] === '__redis__:invalidate') return push[2];
  return undefined;
}

// Connects until the connection is (sameAs: true) or is not (false) on `worker`; the server
// spreads connections over its workers (SO_REUSEPORT), so a few tries land on either.
export async function connectOnWorker(worker, sameAs, options = {}) {
  for (let i = 0; i < 200; i++) {
    const c = await RawResp.connect(options);
    if ((c.worker === worker) === sameAs) return c;
    c.close();
  }
  throw new Error(`200 connections, none ${sameAs ? 'on' : 'off'} worker ${worker}: does the server run several workers?`);
}

// psql as helpers.mjs's psql, but asynchronous: the test keeps receiving while SQL commits.
// `input` goes to psql's standard input (COPY ... FROM STDIN). Resolves with the output.
export function psqlAsync(sql, { input = '', dir = process.env.LC_CLUSTER_DIR } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.env.LC_CLUSTER_SH, ['psql', dir, '-v', 'ON_ERROR_STOP=1', '-Atq', '-c', sql], {
      env: { ...process.env, PGCLIENTENCODING: 'UTF8', LC_ALL: 'C' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(out.replace(/\n$/, '')) : reject(new Error(`psql failed (${code}): ${sql}\n${err}`))));
    p.stdin.end(input);
  });
}

// A long-lived psql reading statements from its standard input: the randomized checker's SQL
// writers (one process, many transactions, no process start per statement).
export class PsqlSession {
  constructor(dir = process.env.LC_CLUSTER_DIR) {
    this.proc = spawn(process.env.LC_CLUSTER_SH, ['psql', dir, '-Atq', '-v', 'ON_ERROR_STOP=0'], {
      env: { ...process.env, PGCLIENTENCODING: 'UTF8', LC_ALL: 'C' },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    this.errors = '';
    this.proc.stderr.on('data', (d) => (this.errors += d));
    this.done = new Promise((resolve) => this.proc.on('close', resolve));
  }

  // Queues SQL; resolves when psql has taken it (backpressure), not when it committed.
  write(sql) {
    return new Promise((resolve) => {
      if (this.proc.stdin.write(`${sql}\n`)) resolve();
      else this.proc.stdin.once('drain', resolve);
    });
  }

  // Ends the input; resolves when every statement ran and psql exited.
  async end() {
    this.proc.stdin.end();
    await this.done;
  }
}
