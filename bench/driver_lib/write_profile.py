"""bench/driver_lib/write_profile.py: the profile mode's write budget (issue 46: where each µs of a
one-row UPDATE goes, per statement and per commit, with the table cached and not). bench/loadgen
runs update_pair (bench/loadgen_main.cpp: half the connections update public.items, cached, half
public.items_plain, the same rows never cached) at PROFILE_CONNECTIONS connections, twice for
PROFILE_WRITE_SECONDS: the first window gives each half's exact CPU per UPDATE
(/proc/PID/schedstat), the second runs under `perf record --call-graph dwarf` of both halves'
backends, whose samples are split into WRITE_CATEGORIES; a category's share of its half's samples
times the half's CPU per UPDATE is its µs per UPDATE. The result goes to doc["profile"]["write"];
bench/report --profile renders it."""
import json
import re
import subprocess
import tempfile

from driver_lib.clients import client_cmd, common_args, pair_backends, pair_halves, prepare_table
from driver_lib.env import PAIR_PATH, log
from driver_lib.measure import cpu_ns
from driver_lib.profile import FRAME

# A sample belongs to the first category, in this order, one of whose patterns names a frame of
# its stack (anywhere from the root to the leaf): the capture's parts first, then PostgreSQL's
# phases of the statement. The capture's names are extension/capture_setup.cpp's,
# invalidation.cpp's and wal.cpp's; PostgreSQL's are those of PostgreSQL 15. The library is built
# with LTO, which may inline a function into its caller in another file without leaving an
# "(inlined)" frame: a category names the functions of its file that may stay (wal.cpp's
# log_invalidate under wal_log_invalidations).
WRITE_CATEGORIES = [
    ("capture: WAL record for standbys (commit)", r"wal_log_invalidations|::log_invalidate\b"),
    ("capture: invalidation at commit", r"xact_event|invalidate_changes|forget_changes|tracking_log_changes"),
    ("capture: set-up at ExecutorStart (table marked, WHERE key recorded)", r"set_up_capture"),
    ("capture: row trigger and plan-recorded keys", r"capture_row|ExecAR(Update|Delete|Insert)Triggers"),
    ("capture: planner hook", r"capture_setup_plan"),
    ("PostgreSQL: copy of the table's triggers", r"CopyTriggerDesc"),
    ("PostgreSQL: commit (WAL, CLOG, proc array, locks)", r"CommitTransaction|finish_xact_command"),
    ("PostgreSQL: executor start and end", r"ExecutorStart|ExecutorEnd|ExecInitNode|ExecEndNode|FreeExecutorState"),
    ("PostgreSQL: index scan and heap update", r"ExecutorRun|ExecModifyTable|ExecUpdate|heap_update|index_"),
    ("PostgreSQL: bind, plan cache, portal", r"exec_bind_message|exec_execute_message|GetCachedPlan|PortalStart|"
                                             r"CreatePortal|PortalDrop|exec_parse_message"),
    ("client protocol: receive, send, wait", r"pq_getbyte|pq_getmessage|secure_read|secure_write|pq_flush|"
                                             r"WaitEventSetWait|ReadCommand|pq_putmessage|socket_flush"),
]
OTHER = "other"
WRITE_CATEGORY_ORDER = [c for c, _ in WRITE_CATEGORIES] + [OTHER]


def write_category(frames):
    for name, pattern in WRITE_CATEGORIES:
        if any(re.search(pattern, f) for f in frames):
            return name
    return OTHER


def samples_by_pid(script):
    """perf script output (-F pid,ip,sym,dso) -> [(pid, [frame names, leaf first])]."""
    out = []
    for block in script.split("\n\n"):
        lines = block.strip("\n").splitlines()
        if not lines:
            continue
        try:
            pid = int(lines[0].split()[0])
        except (ValueError, IndexError):
            continue
        frames = [m.group(1).split("+0x")[0] for m in map(FRAME.match, lines[1:]) if m]
        out.append((pid, frames))
    return out


def shares(samples, pids):
    """Each category's share of the samples of `pids`."""
    counts, total = {}, 0
    for pid, frames in samples:
        if pid in pids:
            c = write_category(frames)
            counts[c] = counts.get(c, 0) + 1
            total += 1
    return {c: counts[c] / total for c in WRITE_CATEGORY_ORDER if c in counts}, total


def pair_window(connections, seconds, frequency=None):
    """One update_pair run of `seconds` at `connections`: each half's backends (pids) and its
    pair_halves figures, and with `frequency` the perf script text of its backends over the window."""
    prepare_table({"mode": "write", "variant": "cache_enabled"})
    args = common_args() + ["--path", PAIR_PATH, "--conns", str(connections), "--batch", "1", "--seconds",
                            str(seconds), "--mode", "write"]
    proc = subprocess.Popen(client_cmd("native", "run", args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, bufsize=1)
    script = None
    try:
        if proc.stdout.readline().strip() != "READY":
            raise RuntimeError(f"bench/loadgen did not get ready (exit {proc.wait()})")
        halves = pair_backends()
        pids = [p for ps in halves.values() for p in ps]
        with tempfile.NamedTemporaryFile(suffix=".perf.data") as data:
            before = cpu_ns(pids)
            proc.stdin.write("GO\n")
            proc.stdin.flush()
            if frequency:
                subprocess.run(["perf", "record", "-q", "-F", str(frequency), "--call-graph", "dwarf,16384", "-o",
                                data.name, "-p", ",".join(map(str, pids)), "--", "sleep", str(seconds)],
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            res = json.loads(proc.stdout.readline())
            after = cpu_ns(pids)
            if frequency:
                script = subprocess.run(["perf", "script", "-i", data.name, "-F", "pid,ip,sym,dso"], check=True,
                                        capture_output=True, text=True).stdout
        proc.stdin.write("CLOSE\n")
        proc.stdin.flush()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return halves, pair_halves(connections, halves, before, after, res), script


def run_write_profile(prof, connections, seconds, frequency):
    """Each half's CPU per UPDATE from a window without perf (perf's own work in the sampled backends
    would count), then its budget from a window under perf record: into prof["write"]."""
    _, measured, _ = pair_window(connections, seconds)
    halves, _, script = pair_window(connections, seconds, frequency)
    samples = samples_by_pid(script)
    write = prof["write"] = {"connections": connections, "seconds": seconds, "frequency": frequency, "halves": {}}
    for half, ps in halves.items():
        share, n = shares(samples, set(ps))
        write["halves"][half] = {"backends": len(ps), "updates": measured[half]["updates"], "samples": n,
                                 "cpu_us_per_update": measured[half]["backend_cpu_us_per_update"], "budget": share}
    h = write["halves"]
    log(f"profile update: backend CPU per UPDATE {h['cached']['cpu_us_per_update']:.1f} us cached, "
        f"{h['plain']['cpu_us_per_update']:.1f} us not cached ({h['cached']['samples']} and "
        f"{h['plain']['samples']} samples)")
