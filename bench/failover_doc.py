#!/usr/bin/env python3
"""bench/failover_doc.py: bench/failover's result document from the failover check's JSON: the
conventions of a bench/run result (format, partial, config with its mode, machine, versions, git,
no samples) with the measurements under "failover" (bench/report --failover reads them).

    bench/failover_doc.py environment > ENV.json      (at the start: machine, versions, git)
    bench/failover_doc.py CHECK.json ENV.json STARTED_AT ROUNDS COMMAND > failover.json
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import time

EVENTS = ("switchover", "kill-primary")
TIMINGS = ("promotion_ms", "topology_ms", "first_write_ms", "first_acknowledged_write_ms")
TOPOLOGY_LIMIT_MS = 10000  # issue 47: every surviving node names the new primary within 10 s (the check's bound)
# tools/patroni.sh's dynamic configuration, which sets how fast Patroni notices and promotes
PATRONI = {"ttl_s": 10, "loop_wait_s": 1, "retry_timeout_s": 3, "maximum_lag_on_failover_bytes": 1048576}


def command_output(argv):
    """The first line a command prints, or None when it cannot run."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (p.stdout or p.stderr).strip().splitlines()
    return lines[0] if p.returncode == 0 and lines else None


def summary(failovers):
    """Per event: each timing's median and maximum over the rounds."""
    out = {}
    for event in EVENTS:
        rows = [f for f in failovers if f["event"] == event]
        if rows:
            out[event] = {field: {"median": statistics.median(f[field] for f in rows), "max": max(f[field] for f in rows)}
                          for field in TIMINGS}
    return out


def environment(root):
    """The machine, the versions of what ran, and the commit measured."""
    mem = None
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    pg_config = os.environ.get("PG_CONFIG", "pg_config")
    return {
        "machine": {"cores": os.cpu_count(), "memory_bytes": mem, "kernel": platform.release(),
                    "os": command_output(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"])},
        "versions": {"postgresql": command_output([pg_config, "--version"]),
                     "patroni": command_output(["patroni", "--version"]),
                     "etcd": command_output(["etcd", "--version"]), "node": command_output(["node", "--version"]),
                     "python": platform.python_version()},
        "git": {"head": command_output(["git", "-C", root, "rev-parse", "HEAD"]),
                "dirty": bool(command_output(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"]))},
    }


def document(check, started_at, finished_at, rounds, command, env):
    """The result document of a run whose check passed (its JSON: failovers, stats, counts)."""
    return {"format": "local_cache-bench/1", "partial": False, "error": None, "started_at": started_at,
            "finished_at": finished_at, "command": command,
            "config": {"mode": "failover", "repeats": rounds, "nodes": 3, "topology_limit_ms": TOPOLOGY_LIMIT_MS,
                       "patroni": PATRONI},
            **env, "checks": [], "samples": [],
            "failover": {"rounds": rounds, "failovers": check["failovers"], "summary": summary(check["failovers"]),
                         "clients": check["stats"], "counts": check["counts"]}}


def main():
    if sys.argv[1:] == ["environment"]:  # at the start: the commit and versions measured
        json.dump(environment(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), sys.stdout)
        return
    if len(sys.argv) != 6:
        sys.exit("usage: bench/failover_doc.py environment | CHECK.json ENV.json STARTED_AT ROUNDS COMMAND")
    path, env_path, started_at, rounds, command = sys.argv[1:]
    with open(path) as f:
        check = json.load(f)
    with open(env_path) as f:
        env = json.load(f)
    doc = document(check, started_at, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), int(rounds), command, env)
    json.dump(doc, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
