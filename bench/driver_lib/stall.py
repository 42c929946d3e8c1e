"""bench/driver_lib/stall.py: the stall mode (bench/run stall, issue 42): what one role's slow
trigger costs everyone else's reads. The native client's warm RESP reads (GET, at STALL_CONNECTIONS
connections) alone, and while one more connection, as bench_writer, writes one row after the other to
a table whose BEFORE trigger sleeps STALL_TRIGGER_MS; REPEATS rounds, their order alternating. The
result goes to doc["stall"]: each sample (bench/loadgen's latencies and requests/s) and how many slow
writes committed during it."""
import socket
import threading
import time

from driver_lib import clients
from driver_lib.env import DURATION, ENV, REPEATS, RESP_PORT, RESP_WRITER, RESP_WRITER_PASSWORD, log, psql

STALL_CONNECTIONS = int(ENV.get("STALL_CONNECTIONS") or 4)
STALL_TRIGGER_MS = int(ENV.get("STALL_TRIGGER_MS") or 1000)


def command(*args):
    return b"".join([b"*%d\r\n" % len(args)] + [b"$%d\r\n%s\r\n" % (len(a), a) for a in (x.encode() for x in args)])


class SlowWriter:
    """One RESP connection writing stall:1 in a loop until stopped; each write sleeps in the
    trigger. Counts the writes that answered +OK."""

    def __init__(self):
        self.stop = threading.Event()
        self.written = 0
        self.error = None
        self.sock = socket.create_connection(("127.0.0.1", RESP_PORT))
        self.sock.sendall(command("AUTH", RESP_WRITER, RESP_WRITER_PASSWORD))
        if self.reply() != b"+OK":
            raise RuntimeError("the slow writer could not AUTH")
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def reply(self):
        line = b""
        while not line.endswith(b"\r\n"):
            chunk = self.sock.recv(1)
            if not chunk:
                raise RuntimeError("the RESP server closed the slow writer's connection")
            line += chunk
        return line[:-2]

    def run(self):
        try:
            while not self.stop.is_set():
                self.sock.sendall(command("SET", "stall:1", '{"v":"%d"}' % self.written))
                answer = self.reply()
                if answer != b"+OK":
                    raise RuntimeError(f"the slow write answered {answer!r}")
                self.written += 1
        except Exception as e:  # reported by finish()
            self.error = e

    def finish(self):
        self.stop.set()
        self.thread.join(timeout=STALL_TRIGGER_MS / 1000 * 3 + 10)
        self.sock.close()
        if self.error:
            raise RuntimeError(f"slow writer: {self.error}")


def sleeping():
    return int(psql("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")) > 0


def run_stall(doc, save):
    psql(f"""CREATE TABLE IF NOT EXISTS public.stall (id integer PRIMARY KEY, v text);
CREATE OR REPLACE FUNCTION public.stall_slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep({STALL_TRIGGER_MS} / 1000.0); RETURN NEW; END $$;
DROP TRIGGER IF EXISTS stall_slow ON public.stall;
CREATE TRIGGER stall_slow BEFORE INSERT OR UPDATE ON public.stall FOR EACH ROW EXECUTE FUNCTION public.stall_slow();
SELECT local_cache.enable('public.stall') WHERE NOT EXISTS
  (SELECT FROM local_cache.tables WHERE relid = 'public.stall'::regclass);
GRANT SELECT, INSERT, UPDATE ON public.stall TO {RESP_WRITER}""")
    st = doc["stall"] = {"connections": STALL_CONNECTIONS, "trigger_ms": STALL_TRIGGER_MS,
                         "write_workers": psql("SHOW local_cache.resp_write_workers"), "samples": []}
    spec = {"mode": "warm", "client": "native", "path": "resp", "connections": STALL_CONNECTIONS, "batch": 1,
            "variant": None, "pipeline": 1, "keys": "int"}
    for r in range(REPEATS):
        for variant in (("alone", "slow_writer") if r % 2 == 0 else ("slow_writer", "alone")):
            writer = None
            if variant == "slow_writer":
                writer = SlowWriter()
                deadline = time.time() + 10
                while not sleeping():
                    if time.time() > deadline:
                        raise RuntimeError("the slow write never reached its trigger")
                    time.sleep(0.01)
            try:
                s = clients.run_sample(spec)
            finally:
                if writer:
                    writer.finish()
            s["variant"] = variant
            s["repeat"] = r
            s["slow_writes"] = writer.written if writer else 0
            st["samples"].append(s)
            save()
            log(f"stall: {variant} c={STALL_CONNECTIONS}: {s['rps']:.0f} req/s, p50 {s['latency_us']['p50']:.0f} us, "
                f"p99 {s['latency_us']['p99']:.0f} us, p99.9 {s['latency_us']['p999']:.0f} us"
                + (f", {s['slow_writes']} slow writes committed" if writer else ""))
