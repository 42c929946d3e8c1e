#!/usr/bin/env python3
"""bench/tests/profile_test.py: the profile mode's pure parts without perf or servers: perf script
text folded into stacks, each stack's budget category, the flame graph's SVG, where a RESP reply
ends (how the I/O floor's reply is read), and bench/report --profile on the committed result (its
section, the I/O floor's column, and flame graphs, written under OUTDIR).

    python3 bench/tests/profile_test.py OUTDIR      prints "N passed, M failed"; exit 1 on a failure
"""
import os
import subprocess
import sys
import xml.dom.minidom

sys.dont_write_bytecode = True  # before the first import of the tree: no __pycache__ in it
from harness import BENCH, check, summary  # noqa: E402 (sets up the imports below)

from driver_lib import profile, write_profile  # noqa: E402
from report_lib.flamegraph import flame_svg  # noqa: E402
from report_lib.write_profile import write_budget  # noqa: E402

SCRIPT = """postgres 
\tffffffff8226627a schedule ([kernel.kallsyms])
\tffffffff81753558 do_epoll_wait ([kernel.kallsyms])
\tffffffff8225a101 do_syscall_64 ([kernel.kallsyms])
\t          108f36 epoll_wait (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t            f9e3 uv_run (/usr/lib/x86_64-linux-gnu/libuv.so.1.0.0)

postgres 
\tffffffff8225a101 pvm_irq_enable ([kernel.kallsyms])
\tffffffff8225a101 do_syscall_64 ([kernel.kallsyms])
\t           f838f __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           61ebb local_cache::resp::(anonymous namespace)::flush (/usr/lib/postgresql/15/lib/local_cache.so)

postgres 
\t           7d37b std::vector<Span>::operator[] (inlined)
\t           7d37b local_cache::resp::RequestParser::finish_multibulk(char const*) (/usr/lib/postgresql/15/lib/local_cache.so)
\t           7ddcf local_cache::resp::RequestParser::parse (/usr/lib/postgresql/15/lib/local_cache.so)
\t           1a3a4 [unknown] (/usr/lib/x86_64-linux-gnu/libuv.so.1.0.0)
\tffffffffffffffff [unknown] ([unknown])

postgres 
\t           32b74 LWLockAcquire (/usr/lib/postgresql/15/bin/postgres)
\t           32b00 local_cache::resp::reply_hits (/usr/lib/postgresql/15/lib/local_cache.so)

postgres 
\t           32b74 LWLockAcquire (/usr/lib/postgresql/15/bin/postgres)
\t           32b00 local_cache::resp::reply_hits (/usr/lib/postgresql/15/lib/local_cache.so)
"""


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/profile_test"
    os.makedirs(out, exist_ok=True)
    stacks = profile.fold(SCRIPT)
    want = {
        "uv_run;epoll_wait;do_syscall_64 [k];do_epoll_wait [k];schedule [k]": 1,
        "local_cache::resp::flush;__GI___libc_write;do_syscall_64 [k];pvm_irq_enable [k]": 1,
        "[libuv.so.1.0.0];local_cache::resp::RequestParser::parse;local_cache::resp::RequestParser::finish_multibulk": 1,
        "local_cache::resp::reply_hits;LWLockAcquire": 2,
    }
    check("fold: root first, kernel frames marked, inlined and unknown frames left out, names shortened",
          stacks == want, repr(stacks))
    cats = {k: profile.category(k) for k in stacks}
    check("category: a system call by its kernel frames", cats[list(want)[0]] == "epoll_wait(2), io_uring_enter's wait: sleeping and waking",
          cats[list(want)[0]])
    check("category: a system call by its C library wrapper", cats[list(want)[1]] == "write(2); io_uring sends", cats[list(want)[1]])
    ring = {"syscall;do_syscall_64 [k];__do_sys_io_uring_enter [k];io_submit_sqes [k];io_send [k];tcp_sendmsg [k]":
            "write(2); io_uring sends",
            "syscall;do_syscall_64 [k];__do_sys_io_uring_enter [k];io_cqring_wait [k];io_recv [k];tcp_recvmsg [k]":
            "read(2); io_uring receives",
            "syscall;do_syscall_64 [k];__do_sys_io_uring_enter [k];io_cqring_wait [k];schedule [k]":
            "epoll_wait(2), io_uring_enter's wait: sleeping and waking"}
    check("category: io_uring_enter's sends, receives and wait", {k: profile.category(k) for k in ring} == ring,
          repr({k: profile.category(k) for k in ring}))
    check("category: user space by the first matching frame from the leaf",
          cats[list(want)[2]] == "request parsing" and cats[list(want)[3]] == "key lookup: shard lock, hash, copy",
          repr(cats))
    shares = profile.budget(stacks)
    check("budget: shares of the samples, summing to 1", abs(sum(shares.values()) - 1) < 1e-9 and
          abs(shares["key lookup: shard lock, hash, copy"] - 0.4) < 1e-9, repr(shares))
    check("trim: rare stacks cut back to their parent, totals kept",
          sum(profile.trim(stacks).values()) == sum(stacks.values()) and
          "local_cache::resp::flush;__GI___libc_write;do_syscall_64 [k]" in profile.trim(stacks), repr(profile.trim(stacks)))
    svg = flame_svg(stacks, "test <&>")
    try:
        doc = xml.dom.minidom.parseString(svg)
        rects = doc.getElementsByTagName("rect")
        ok = len(rects) >= 10 and doc.documentElement.tagName == "svg"
    except Exception as e:  # noqa: BLE001
        ok, rects = False, e
    check("flame graph: well-formed SVG, a box per frame", ok, repr(rects))
    replies = {b"$3\r\nabc\r\n": 9, b"$-1\r\n": 5, b"+OK\r\n": 5, b"*2\r\n$1\r\na\r\n$-1\r\n": 16,
               b"*0\r\n": 4, b"$3\r\nab": None, b"*2\r\n$1\r\na\r\n": None, b"*1\r\n*1\r\n:1\r\n": 12}
    ends = {r: profile.reply_end(r) for r in replies}
    check("reply_end: bulk, nil, status, arrays nested, and incomplete replies", ends == replies, repr(ends))
    report = os.path.join(out, "report.md")
    with open(report, "w") as f:
        p = subprocess.run([os.path.join(BENCH, "report"), os.path.join(BENCH, "results", "all-2core.json"), "--profile",
                            os.path.join(BENCH, "results", "profile-2core.json"), "--charts", os.path.join(out, "charts")],
                           stdout=f, stderr=subprocess.PIPE, text=True)
    text = open(report).read()
    graphs = sorted(x for x in os.listdir(os.path.join(out, "charts")) if x.startswith("flame_")) \
        if os.path.isdir(os.path.join(out, "charts")) else []
    check("bench/report --profile: the section, its budget tables and 8 flame graphs",
          p.returncode == 0 and "## Where the CPU goes (perf)" in text and "### GET: budget per request" in text
          and len(graphs) == 8, f"exit {p.returncode}, {len(graphs)} graphs, {p.stderr[-300:]}")
    get_row = next((line.split(" | ") for line in text.splitlines() if line.startswith("| GET | ")), [])
    check("bench/report --profile: the I/O floor's CPU per request and its ratio to redis-server's",
          len(get_row) > 6 and get_row[5][0].isdigit() and get_row[6][0].isdigit(), repr(get_row[:7]))
    many_row = [line for line in text.split("Target of issue 46")[-1].splitlines() if line.startswith("| MGET 64 keys | ")]
    check("bench/report --profile: issue 46's MGET 64 target judged", len(many_row) == 1 and "≤ 0.75" in many_row[0]
          and ("✓" in many_row[0] or "✗" in many_row[0]), repr(many_row))
    check_write_budget()
    return summary()


# perf script -F pid,ip,sym,dso: a cached backend (101) at the capture's commit and in the index
# scan, a not cached one (202) in the scan and receiving
WRITE_SCRIPT = """  101 
\t  1234 local_cache::wal_log_invalidations(unsigned int) (/usr/lib/postgresql/15/lib/local_cache.so)
\t  1235 xact_event (/usr/lib/postgresql/15/lib/local_cache.so)
\t  1236 CommitTransaction (/usr/lib/postgresql/15/bin/postgres)

  101 
\t  2234 _bt_compare (/usr/lib/postgresql/15/bin/postgres)
\t  2235 index_getnext_tid (/usr/lib/postgresql/15/bin/postgres)
\t  2236 ExecModifyTable (/usr/lib/postgresql/15/bin/postgres)
\t  2237 standard_ExecutorRun (/usr/lib/postgresql/15/bin/postgres)

  202 
\t  2234 _bt_compare (/usr/lib/postgresql/15/bin/postgres)
\t  2236 ExecModifyTable (/usr/lib/postgresql/15/bin/postgres)

  202 
\tffffffff8225a101 unix_stream_recvmsg ([kernel.kallsyms])
\t  3236 secure_read (/usr/lib/postgresql/15/bin/postgres)
\t  3237 pq_getbyte (/usr/lib/postgresql/15/bin/postgres)
"""


def check_write_budget():
    samples = write_profile.samples_by_pid(WRITE_SCRIPT)
    check("write profile: samples by backend, frames leaf first, offsets and parameters kept apart",
          [pid for pid, _ in samples] == [101, 101, 202, 202] and samples[0][1][1] == "xact_event", repr(samples))
    share, n = write_profile.shares(samples, {101})
    check("write profile: the capture's WAL record before PostgreSQL's commit, the scan by ExecutorRun",
          n == 2 and share == {"capture: WAL record for standbys (commit)": 0.5,
                               "PostgreSQL: index scan and heap update": 0.5}, repr(share))
    inlined = write_profile.write_category(["XLogInsert", "local_cache::(anonymous namespace)::log_invalidate",
                                            "local_cache::(anonymous namespace)::invalidate_changes", "xact_event"])
    check("write profile: the WAL record by wal.cpp's frame that stays when LTO inlines wal_log_invalidations",
          inlined == "capture: WAL record for standbys (commit)", inlined)
    plain, m = write_profile.shares(samples, {202})
    check("write profile: the client's protocol by its frames", m == 2 and
          plain.get("client protocol: receive, send, wait") == 0.5, repr(plain))
    prof = {"write": {"connections": 4, "seconds": 5, "halves": {
        "cached": {"backends": 2, "updates": 1000, "samples": n, "cpu_us_per_update": 40.0, "budget": share},
        "plain": {"backends": 2, "updates": 1100, "samples": m, "cpu_us_per_update": 38.0, "budget": plain}}}}
    lines = write_budget(prof)
    row = next((line for line in lines if line.startswith("| capture: WAL record")), "")
    check("write budget: a category's µs per UPDATE is its share times the half's CPU per UPDATE",
          row.startswith("| capture: WAL record for standbys (commit) | 20.00 | 0.00 | +20.00 |"), row)
    total = next((line for line in lines if line.startswith("| **total**")), "")
    check("write budget: the totals, their difference and ratio", "| 40.00 | 38.00 | +2.00 (1.05x) |" in total, total)
    check("write budget: none without a write profile", write_budget({}) == [])


if __name__ == "__main__":
    sys.exit(main())
