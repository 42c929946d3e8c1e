"""bench/driver_lib/profile.py: the profile mode (issue 30): where each server's CPU goes per request,
side by side with redis-server. For each workload (redis-benchmark at PROFILE_CONNECTIONS
connections: GET, MGET of 16 and 64 keys, GET pipelined 64 deep) and each server, REPEATS
alternating rounds of DURATION_SECONDS of `perf stat` on the server's processes while
redis-benchmark runs (CPU per request from task-clock, system calls and context switches per
request, requests from the server's own total_commands_processed), and in the first round one
`perf record --call-graph dwarf` whose stacks are folded (frame names shortened, the flame
graphs' input) and split into a budget: which system call or which part of the user-space work
each sample was in (SYSCALL_CATEGORIES, USER_CATEGORIES). A third server takes its turn in the
perf stat rounds: bench/io_floor, the RESP worker's ring, parser and batching pause answering
every request with the workers' own reply bytes for the workload and running no command, so its
CPU per request is what the kernel and the loop alone cost for the same traffic (the floor no
change to the commands can go below). Then the write budget (workload "update",
bench/driver_lib/write_profile.py). The result goes to doc["profile"]; bench/report --profile
renders the tables and the flame graphs."""
import re
import socket
import statistics
import subprocess
import tempfile
import time

from driver_lib.env import DURATION, ENV, IO_FLOOR, REDIS_BENCHMARK, REDIS_PID, REDIS_PORT, REPEATS, RESP_PORT, log, psql

SECONDS = DURATION  # of each perf stat and perf record window
CONNECTIONS = int(ENV.get("PROFILE_CONNECTIONS", "64"))
FREQUENCY = int(ENV.get("PROFILE_FREQUENCY", "499"))
# the write budget's windows: longer and denser, its categories being a few percent of the backends' samples
WRITE_SECONDS = float(ENV.get("PROFILE_WRITE_SECONDS", "15"))
WRITE_FREQUENCY = int(ENV.get("PROFILE_WRITE_FREQUENCY", "999"))
WORKLOADS = {  # name: (keys per request, pipeline depth)
    "get": (1, 1), "mget16": (16, 1), "mget64": (64, 1), "get_p64": (1, 64),
}
WRITE_WORKLOAD = "update"  # update_pair's backends (write_profile.py)
SELECTED = [w for w in ENV.get("PROFILE_WORKLOADS", ",".join(list(WORKLOADS) + [WRITE_WORKLOAD])).split(",") if w]
SYSCALLS = ["read", "write", "writev", "epoll_wait", "epoll_pwait", "epoll_ctl", "io_uring_enter", "clock_nanosleep",
            "nanosleep", "poll", "futex"]
MIN_STACK_SAMPLES = 2  # folded stacks seen fewer times are merged into their parent's frame

# The budget: a sample in the kernel belongs to the system call its stack entered by (named by
# a kernel frame, else by the C library's wrapper in the user-space frames), or to "kernel:
# interrupts, softirq" without one; a user-space sample to the first frame, from the leaf up,
# that is a system call's wrapper or matches a category (else "other user space"). Both
# servers' names are here. Inside io_uring_enter, the receives and sends it runs count as
# reading and writing, the rest of it as waiting: the same work as epoll's read, write and wait.
SYSCALL_CATEGORIES = [  # (name, kernel frames, user-space wrapper)
    ("read(2); io_uring receives", r"ksys_read|__x64_sys_read$|__x64_sys_recvfrom|^io_recv", r"^read$|__libc_read|^recv"),
    ("write(2); io_uring sends", r"ksys_write|__x64_sys_write$|__x64_sys_writev|do_writev|__x64_sys_sendto|^io_send",
     r"^write$|__libc_write|^writev$|^send"),
    ("epoll_wait(2), io_uring_enter's wait: sleeping and waking",
     r"do_epoll_wait|__x64_sys_epoll_wait|__x64_sys_epoll_pwait|io_uring_enter", r"epoll_wait|epoll_pwait"),
    ("batching pause (nanosleep)", r"__x64_sys_clock_nanosleep|__x64_sys_nanosleep|hrtimer_nanosleep", r"nanosleep"),
]
OTHER_SYSCALLS = "other system calls"
USER_CATEGORIES = [
    ("clock reads", r"clock_gettime|gettimeofday|^ustime|^mstime|now_microseconds|\[vdso\]"),
    ("request parsing", r"RequestParser|processMultibulkBuffer|processInlineBuffer|processInputBuffer"),
    ("key lookup: shard lock, hash, copy", r"LWLock|Shard::|store_lookup|look_up_hits|hash_entry_key|parse_row_key|"
                                           r"parse_canonical|store_count|count_hits|lookupKey|dictFind|siphash|"
                                           r"getGenericCommand|mgetCommand|dbFind|getKeysFromCommand"),
    ("reply rendering", r"ReplyWriter|reply_hits|RepliedHits|addReply|_addReply|setDeferred"),
    ("memory allocation", r"zmalloc|zfree|malloc|^free$|^je_|MemoryContext|palloc|operator new|operator delete|"
                          r"createStringObject|createEmbeddedStringObject|decrRefCount|freeClientArgv|resetClient"),
    ("statistics and monitoring", r"CommandMonitor|histogram|updateCommandLatencyHistogram|hdr_|"
                                  r"replicationFeedMonitors|slowlogPushCurrentCommand"),
    ("command lookup and dispatch", r"find_command|checked_command|CommandIndex|CommandProcessor|run_command|"
                                    r"lookupCommand|processCommand|^call$"),
    ("event loop", r"^uv_|^uv__|aeProcessEvents|aeMain|beforeSleep|handleClientsWithPendingWrites|"
                   r"connSocket|readQueryFromClient|writeToClient|_writeToClient|process_input|on_read|flush"),
]
OTHER_KERNEL = "kernel: interrupts, softirq"
OTHER_USER = "other user space"
CATEGORY_ORDER = ([c for c, _, _ in SYSCALL_CATEGORIES] + [OTHER_SYSCALLS, OTHER_KERNEL] + [c for c, _ in USER_CATEGORIES]
                  + [OTHER_USER])


def reply_end(data, start=0):
    """Where the RESP reply starting at data[start] ends, or None while it is incomplete."""
    line_end = data.find(b"\r\n", start)
    if line_end < 0:
        return None
    kind, count = data[start:start + 1], int(data[start + 1:line_end]) if data[start:start + 1] in b"$*" else 0
    end = line_end + 2
    if kind == b"$" and count >= 0:
        end += count + 2
        return end if len(data) >= end else None
    for _ in range(count if kind == b"*" else 0):
        end = reply_end(data, end)
        if end is None:
            return None
    return end


def reply_bytes(port, args):
    """The whole reply of the server on port to one command (plain RESP)."""
    request = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in (x.encode() for x in args))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while reply_end(data) is None:
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError(f"port {port} closed before its reply to {args[0]}")
            data += chunk
    return data


def info_commands(port):
    """total_commands_processed of the server on port (INFO stats over plain RESP)."""
    data = reply_bytes(port, ["INFO", "stats"])
    m = re.search(rb"total_commands_processed:(\d+)", data)
    if not m:
        raise RuntimeError(f"no total_commands_processed in INFO of port {port}")
    return int(m.group(1))


def command_of(keys):
    names = [f"items:{i}" for i in range(1, keys + 1)]
    return ["GET"] + names if keys == 1 else ["MGET"] + names


def start_load(port, keys, pipeline):
    """redis-benchmark on port until killed (more requests than any sample can serve)."""
    return subprocess.Popen([REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", str(port), "-c", str(CONNECTIONS),
                             "-n", "2000000000", "-P", str(pipeline), "-q"] + command_of(keys),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_floor(keys):
    """bench/io_floor answering each request with the RESP workers' reply to the workload's
    command, in a session of its own as the other servers are (the kernel's autogroups): the
    process and its port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.NamedTemporaryFile(suffix=".reply") as reply:
        reply.write(reply_bytes(RESP_PORT, command_of(keys)))
        reply.flush()
        proc = subprocess.Popen([IO_FLOOR, str(port), reply.name], stdout=subprocess.PIPE, text=True,
                                start_new_session=True)
        if proc.stdout.readline().strip() != "READY":  # it has read the file by then
            proc.kill()
            raise RuntimeError(f"{IO_FLOOR} did not start (exit {proc.wait()})")
    return proc, port


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def perf_stat(pids, port):
    """One window of SECONDS under load: CPU µs, system calls and context switches per request."""
    events = ["task-clock", "context-switches"] + [f"syscalls:sys_enter_{s}" for s in SYSCALLS]
    before = info_commands(port)
    p = subprocess.run(["perf", "stat", "-x", ",", "-e", ",".join(events), "-p", ",".join(map(str, pids)),
                        "--", "sleep", str(SECONDS)], capture_output=True, text=True)
    requests = info_commands(port) - before - 1  # less our own INFO
    if p.returncode != 0:
        raise RuntimeError(f"perf stat failed: {p.stderr.strip()}")
    counts = {}
    for line in p.stderr.splitlines():
        f = line.split(",")
        if len(f) >= 3 and f[2] in events:
            try:
                counts[f[2]] = float(f[0])
            except ValueError:  # "<not counted>"
                counts[f[2]] = 0.0
    if requests <= 0:
        raise RuntimeError(f"no requests served on port {port} during perf stat")
    per = {s: counts.get(f"syscalls:sys_enter_{s}", 0.0) / requests for s in SYSCALLS}
    return {"requests": requests, "rps": requests / SECONDS,
            "cpu_us_per_req": counts.get("task-clock", 0.0) * 1000 / requests,  # task-clock is in ms
            "context_switches_per_req": counts.get("context-switches", 0.0) / requests,
            "syscalls_per_req": {s: v for s, v in per.items() if v > 0},
            "all_syscalls_per_req": sum(per.values())}


FRAME = re.compile(r"^\s*[0-9a-f]+ (.*) \((.*)\)$")


def short_name(sym, dso):
    """A frame's name for the flame graph: no template arguments, parameters or anonymous
    namespaces; an unknown symbol is named by its object file."""
    if sym.startswith("[unknown]"):
        return f"[{dso.rsplit('/', 1)[-1]}]"
    sym = sym.replace("(anonymous namespace)::", "")
    out, depth = [], 0
    for ch in sym:  # drop <...> and (...) however nested
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip() or sym
    return name.split("+0x")[0]


def fold(script):
    """perf script output -> {folded stack (root first, ';'-joined): samples}, each stack with
    [k] marking kernel frames; inlined frames are left out (their function is the frame)."""
    stacks = {}
    for block in script.split("\n\n"):
        frames = []
        for line in block.splitlines()[1:]:
            if line.endswith("(inlined)"):
                continue
            m = FRAME.match(line)
            if not m:
                continue
            sym, dso = m.group(1), m.group(2)
            if dso == "[unknown]":
                continue
            name = short_name(sym, dso)
            frames.append(name + (" [k]" if dso == "[kernel.kallsyms]" else ""))
        if frames:
            key = ";".join(reversed(frames))
            stacks[key] = stacks.get(key, 0) + 1
    return stacks


def trim(stacks):
    """A stack seen fewer than MIN_STACK_SAMPLES times is cut back to its parent frame (the
    totals stay; the document stays small)."""
    out = {}
    for key, n in stacks.items():
        if n < MIN_STACK_SAMPLES and ";" in key:
            key = key.rsplit(";", 1)[0]
        out[key] = out.get(key, 0) + n
    return out


def syscall_wrapper(frame):
    """The system call whose C library wrapper a user-space frame is, or None."""
    for name, _, wrapper in SYSCALL_CATEGORIES:
        if re.search(wrapper, frame):
            return name
    return None


def category(stack):
    frames = stack.split(";")
    kernel = [f[:-4] for f in frames if f.endswith(" [k]")]
    user = [f for f in reversed(frames) if not f.endswith(" [k]")]  # from the leaf up
    if kernel:
        for name, kernel_pattern, _ in SYSCALL_CATEGORIES:
            if any(re.search(kernel_pattern, f) for f in kernel):
                return name
        for f in user:
            name = syscall_wrapper(f)
            if name:
                return name
        return OTHER_SYSCALLS if any(re.search(r"do_syscall_64|entry_SYSCALL", f) for f in kernel) else OTHER_KERNEL
    for f in user:
        name = syscall_wrapper(f) or next((n for n, pattern in USER_CATEGORIES if re.search(pattern, f)), None)
        if name:
            return name
    return OTHER_USER


def budget(stacks):
    """Each category's share of the samples."""
    total = sum(stacks.values()) or 1
    shares = {}
    for key, n in stacks.items():
        c = category(key)
        shares[c] = shares.get(c, 0) + n / total
    return {c: shares[c] for c in CATEGORY_ORDER if c in shares}


def perf_record(pids):
    """Folded call stacks of the server's processes over SECONDS under load."""
    with tempfile.NamedTemporaryFile(suffix=".perf.data") as data:
        subprocess.run(["perf", "record", "-q", "-F", str(FREQUENCY), "--call-graph", "dwarf,16384", "-o", data.name,
                        "-p", ",".join(map(str, pids)), "--", "sleep", str(SECONDS)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        script = subprocess.run(["perf", "script", "-i", data.name, "-F", "comm,ip,sym,dso"], check=True,
                                capture_output=True, text=True).stdout
    return fold(script)


def servers():
    resp_pids = [int(x) for x in psql("SELECT pid FROM pg_stat_activity WHERE backend_type = "
                                      "'local_cache RESP worker'").split()]
    return {"resp": (RESP_PORT, resp_pids), "redis": (REDIS_PORT, [REDIS_PID])}


def run_profile(doc, save):
    version = subprocess.run(["perf", "--version"], capture_output=True, text=True)
    if version.returncode != 0:
        raise RuntimeError("perf not found (Debian's linux-perf)")
    by_server = servers()
    prof = doc["profile"] = {"connections": CONNECTIONS, "seconds": SECONDS, "frequency": FREQUENCY,
                             "perf_version": version.stdout.strip(), "workloads": []}
    for name in [w for w in SELECTED if w != WRITE_WORKLOAD]:
        keys, pipeline = WORKLOADS[name]
        entry = {"name": name, "keys": keys, "pipeline": pipeline, "command": " ".join(command_of(keys)[:3])
                 + (" ..." if keys > 2 else ""), "stat": {"resp": [], "redis": [], "floor": []}, "stacks": {},
                 "budget": {}}
        prof["workloads"].append(entry)
        floor, floor_port = start_floor(keys)
        by_server["floor"] = (floor_port, [floor.pid])
        try:
            for r in range(REPEATS):
                for server in (("resp", "redis", "floor") if r % 2 == 0 else ("floor", "redis", "resp")):
                    port, pids = by_server[server]
                    load = start_load(port, keys, pipeline)
                    try:
                        time.sleep(1)  # every connection running
                        s = perf_stat(pids, port)
                        entry["stat"][server].append(s)
                        if r == 0 and server != "floor":
                            stacks = perf_record(pids)
                            entry["stacks"][server] = trim(stacks)
                            entry["budget"][server] = budget(stacks)
                    finally:
                        stop(load)
                    log(f"profile {name} {server} round {r + 1}: {s['rps']:.0f} req/s, {s['cpu_us_per_req']:.2f} us "
                        f"CPU and {s['all_syscalls_per_req']:.2f} system calls per request")
                save()
        finally:
            stop(floor)
        med = {sv: statistics.median(x["cpu_us_per_req"] for x in entry["stat"][sv]) for sv in ("resp", "redis", "floor")}
        log(f"profile {name}: CPU per request {med['resp']:.2f} us (ours) against {med['redis']:.2f} us (redis-server), "
            f"{med['resp'] / med['redis']:.2f}x; the I/O floor {med['floor']:.2f} us, {med['floor'] / med['redis']:.2f}x")
    if WRITE_WORKLOAD in SELECTED:
        from driver_lib.write_profile import run_write_profile  # it reads this module's FRAME
        run_write_profile(prof, CONNECTIONS, WRITE_SECONDS, WRITE_FREQUENCY)
        save()
