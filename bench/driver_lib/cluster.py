"""bench/driver_lib/cluster.py: the cluster mode (bench/run cluster, issue 47 item 5): a Redis Cluster
client reading through one primary and two hot standbys (local_cache.resp_cluster = on) against the
primary alone, and how long WAIT takes.

Reads: bench/node/cluster.js (node-redis v6 createCluster, rooted at the primary) reads the hot rows
with `GET` at CLUSTER_CONCURRENCY requests in flight, variant "primary" (useReplicas: false: every
read on the primary) and "replicas" (useReplicas: true: the client spreads the reads over the three
nodes); REPEATS rounds, the variants' order alternating. For each sample and node: the GETs it ran
(INFO commandstats, cmdstat_get) and the CPU time of its PostgreSQL processes (/proc, every process
of its postmaster: RESP workers, walsender or walreceiver and startup included), so the spread of
the requests and the server CPU per request on each node.

WAIT: WAIT_ROUNDS rounds of `SET items:<id>` (as the writer role) then `WAIT 2 1000` on one
connection to the primary, the WAIT's time from the client; cell "idle" alone, cell "writer" while
another connection writes in a closed loop. The result goes to doc["cluster"]."""
import json
import socket
import subprocess
import threading
import time

from driver_lib.env import CLK, DURATION, ENV, NODE_DIR, PG_PID, REPEATS, RESP_PORT, RESP_WRITER, RESP_WRITER_PASSWORD, log
from driver_lib.measure import children, cpu_ticks

CONCURRENCY = int(ENV.get("CLUSTER_CONCURRENCY") or 16)
WAIT_ROUNDS = int(ENV.get("WAIT_ROUNDS") or 200)
HOT = 128
VARIANTS = ("primary", "replicas")


def standbys():
    """[(name, RESP port, postmaster pid)] of the standbys bench/run started (BENCH_CLUSTER_STANDBYS:
    port:pid,port:pid)."""
    out = []
    for i, item in enumerate(x for x in ENV.get("BENCH_CLUSTER_STANDBYS", "").split(",") if x):
        port, pid = item.split(":")
        out.append((f"standby{i + 1}", int(port), int(pid)))
    return out


def command(*args):
    return b"".join([b"*%d\r\n" % len(args)] + [b"$%d\r\n%s\r\n" % (len(a), a) for a in (str(x).encode() for x in args)])


class Resp:
    """A minimal RESP2 connection: call() sends one command and returns its reply (bulk strings as
    str, integers as int, arrays as lists; an error raises)."""

    def __init__(self, port, auth=None):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")
        if auth:
            self.call("AUTH", *auth)

    def call(self, *args):
        self.sock.sendall(command(*args))
        return self.read()

    def read(self):
        line = self.file.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind in (b"$", b"="):
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2].decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError(f"unexpected reply {line!r}")

    def close(self):
        self.sock.close()


def ask(port, *args):
    """One command on a connection of its own."""
    conn = Resp(port)
    try:
        return conn.call(*args)
    finally:
        conn.close()


def calls(port, name):
    for line in ask(port, "INFO", "commandstats").splitlines():
        if line.startswith(f"cmdstat_{name}:calls="):
            return int(line.split("=", 1)[1].split(",", 1)[0])
    return 0


def wait_for_topology(nodes):
    """Until every node's CLUSTER SLOTS lists the primary and both standbys."""
    deadline = time.time() + 60
    while True:
        try:
            if all(len(ask(port, "CLUSTER", "SLOTS")[0]) == 2 + len(nodes) for _, port, _ in nodes):
                return
        except (OSError, RuntimeError, IndexError, TypeError):
            pass
        if time.time() > deadline:
            raise RuntimeError("the nodes' CLUSTER SLOTS never listed the whole group")
        time.sleep(0.2)


def node_counters(nodes):
    return {name: {"gets": calls(port, "get"), "ticks": sum(cpu_ticks(children(pid)).values())}
            for name, port, pid in nodes}


def read_sample(nodes, variant):
    proc = subprocess.Popen(["node", f"{NODE_DIR}/cluster.js", "--port", str(RESP_PORT), "--replicas",
                             "1" if variant == "replicas" else "0", "--concurrency", str(CONCURRENCY),
                             "--seconds", str(DURATION), "--hot", str(HOT)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if proc.stdout.readline().strip() != "READY":
            raise RuntimeError("the node cluster client did not start")
        before = node_counters(nodes)
        client_before = sum(cpu_ticks(children(proc.pid)).values())
        proc.stdin.write("GO\n")
        proc.stdin.flush()
        result = json.loads(proc.stdout.readline())
        after = node_counters(nodes)
        client_ticks = sum(cpu_ticks(children(proc.pid)).values()) - client_before
        proc.stdin.write("quit\n")
        proc.stdin.flush()
        if proc.wait(timeout=30) != 0:
            raise RuntimeError(f"the node cluster client exited with {proc.returncode}")
    finally:
        if proc.poll() is None:
            proc.kill()
    per_node = {}
    for name, _, _ in nodes:
        gets = after[name]["gets"] - before[name]["gets"]
        cpu_us = (after[name]["ticks"] - before[name]["ticks"]) * 1e6 / CLK
        per_node[name] = {"gets": gets, "server_cpu_us": cpu_us, "server_cpu_us_per_req": cpu_us / gets if gets else None}
    total_cpu = sum(n["server_cpu_us"] for n in per_node.values())
    return {"variant": variant, "requests": result["requests"], "elapsed_s": result["elapsed_s"],
            "rps": result["requests"] / result["elapsed_s"], "latency_us": result["latency_us"], "nodes": per_node,
            "server_cpu_us_per_req": total_cpu / result["requests"] if result["requests"] else None,
            "client_cpu_us_per_req": client_ticks * 1e6 / CLK / result["requests"] if result["requests"] else None}


class Writer:
    """Another connection to the primary writing in a closed loop until stopped."""

    def __init__(self):
        self.stop = threading.Event()
        self.written = 0
        self.error = None
        self.conn = Resp(RESP_PORT, (RESP_WRITER, RESP_WRITER_PASSWORD))
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        try:
            while not self.stop.is_set():
                id_ = 1000 + self.written % 1000
                self.conn.call("SET", f"items:{id_}", json.dumps({"id": id_, "value": f"w{self.written}"}))
                self.written += 1
        except Exception as e:  # reported by finish()
            self.error = e

    def finish(self):
        self.stop.set()
        self.thread.join(timeout=30)
        self.conn.close()
        if self.error:
            raise RuntimeError(f"writer: {self.error}")


def percentiles(values):
    v = sorted(values)
    at = lambda p: v[min(len(v) - 1, int(p / 100 * len(v)))]  # noqa: E731
    return {"p50": at(50), "p90": at(90), "p99": at(99), "max": v[-1]}


def wait_cell(cell):
    writer = Writer() if cell == "writer" else None
    conn = Resp(RESP_PORT, (RESP_WRITER, RESP_WRITER_PASSWORD))
    took, answers = [], {}
    try:
        for i in range(WAIT_ROUNDS):
            id_ = 1 + i % HOT
            conn.call("SET", f"items:{id_}", json.dumps({"id": id_, "value": f"wait{i}"}))
            start = time.perf_counter()
            n = conn.call("WAIT", 2, 1000)
            took.append((time.perf_counter() - start) * 1e6)
            answers[n] = answers.get(n, 0) + 1
    finally:
        conn.close()
        if writer:
            writer.finish()
    return {"cell": cell, "rounds": WAIT_ROUNDS, "timeout_ms": 1000, "wait_us": percentiles(took),
            "answers": {str(k): v for k, v in sorted(answers.items())}, "writer_writes": writer.written if writer else 0}


def run_cluster(doc, save):
    nodes = [("primary", RESP_PORT, PG_PID)] + standbys()
    if len(nodes) != 3:
        raise RuntimeError("the cluster mode needs the two standbys bench/run starts")
    wait_for_topology(nodes)
    cl = doc["cluster"] = {"client": "node-redis v6 createCluster", "concurrency": CONCURRENCY, "hot_rows": HOT,
                           "nodes": [name for name, _, _ in nodes], "samples": [], "wait": []}
    for r in range(REPEATS):
        for variant in (VARIANTS if r % 2 == 0 else VARIANTS[::-1]):
            s = read_sample(nodes, variant)
            s["repeat"] = r
            cl["samples"].append(s)
            save()
            log(f"cluster: {variant}: {s['rps']:.0f} req/s, p99 {s['latency_us']['p99']:.0f} us; GET per node "
                + ", ".join(f"{n} {v['gets']}" for n, v in s["nodes"].items())
                + f"; server {s['server_cpu_us_per_req']:.1f} us/req")
    for cell in ("idle", "writer"):
        w = wait_cell(cell)
        cl["wait"].append(w)
        save()
        log(f"cluster: WAIT 2 ({cell}): p50 {w['wait_us']['p50']:.0f} us, p99 {w['wait_us']['p99']:.0f} us, "
            f"max {w['wait_us']['max']:.0f} us; answers {w['answers']}")
