"""bench/driver_lib/measure.py: what a sample measures on the servers: CPU time and memory of
their processes from /proc, and the cache's counters (local_cache.stats_global)."""
import json
import os
import subprocess
import sys
import threading

from driver_lib.env import CLUSTER_SH, MODE, PG_DIR, PG_PID, REDIS_PID, psql


def children(ppid):
    pids = [ppid]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    st = f.read()
                if int(st[st.rindex(")") + 2:].split()[1]) == ppid:
                    pids.append(int(d))
            except (OSError, ValueError):
                pass
    return pids


def restart_cluster():
    """Restarts bench/run's cluster (the tls mode switches TLS so, the tail mode its build) and
    measures the new postmaster's processes from then on."""
    global PG_PID
    subprocess.run([CLUSTER_SH, "restart", PG_DIR], check=True, stdout=sys.stderr)
    with open(f"{PG_DIR}/data/postmaster.pid") as f:
        PG_PID = int(f.readline())


def server_pids(path):
    return [REDIS_PID] if path in ("redis", "redis_set", "redis_mset") else children(PG_PID)


def cpu_ticks(pids):
    out = {}
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read()
            fields = st[st.rindex(")") + 2:].split()
            out[p] = int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, ValueError):
            pass
    return out


def cpu_ns(pids):
    """Each single-threaded process's CPU time in nanoseconds, exact (/proc/PID/schedstat; utime and
    stime are rounded to clock ticks per process, which over a hundred short-lived turns of many
    backends adds up to several percent)."""
    out = {}
    for p in pids:
        try:
            with open(f"/proc/{p}/schedstat") as f:
                out[p] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return out


def memory(pids):
    rss = pss = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1]) * 1024
        except OSError:
            pass
    return rss, pss


class PeakMemory:
    """The peak RSS and PSS of pids, sampled every 0.25 s by a thread until stop(). Not in the tail
    mode (stop() gives [None, None]): reading smaps_rollup walks each process's page tables, for
    every PostgreSQL process (the shared segments mapped in each) four times a second, on the cores
    the servers and clients share; measured, it raised our RESP p99.9 to 1.2x redis-server's (one
    small process) where it was 0.85-1x without it."""

    def __init__(self, pids):
        self.peak = [None, None] if MODE == "tail" else [0, 0]
        self.done = threading.Event()
        self.thread = None
        if MODE == "tail":
            return

        def sample():
            while not self.done.is_set():
                rss, pss = memory(pids)
                self.peak = [max(self.peak[0], rss), max(self.peak[1], pss)]
                self.done.wait(0.25)

        self.thread = threading.Thread(target=sample, daemon=True)
        self.thread.start()

    def stop(self):
        """[peak RSS, peak PSS] in bytes."""
        self.done.set()
        if self.thread is not None:
            self.thread.join()
        return self.peak


def memory_detail(pids):
    """{rss, pss, pss_anon, pss_shmem} in bytes, summed over pids: Pss_Anon is the processes' own
    (heap) memory, Pss_Shmem their share of shared memory (shared_buffers, the cache segment)."""
    fields = {"Rss:": "rss_bytes", "Pss:": "pss_bytes", "Pss_Anon:": "pss_anon_bytes", "Pss_Shmem:": "pss_shmem_bytes"}
    out = {v: 0 for v in fields.values()}
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    k = line.split(None, 1)[0]
                    if k in fields:
                        out[fields[k]] += int(line.split()[1]) * 1024
        except OSError:
            pass
    return out


def stats_global(conninfo=None):
    return json.loads(psql("SELECT row_to_json(s) FROM local_cache.stats_global s", conninfo))


def delta(a, b):
    return {k: b[k] - a[k] for k in b if isinstance(b.get(k), (int, float)) and isinstance(a.get(k), (int, float))}
