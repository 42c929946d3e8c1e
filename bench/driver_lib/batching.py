"""bench/driver_lib/batching.py: the tail mode's two batching policies of our RESP workers, the
default pause (`local_cache.resp_batch_delay`) and none (the "no_pause" samples: 0). The setting
is reloadable, so switching is ALTER SYSTEM and pg_reload_conf() between samples; every sample of
the tail mode records how many pauses the workers took during it (INFO's batch_pauses), and a
"no_pause" sample that saw one fails the run rather than report the wrong policy."""
import re
import time

from driver_lib.env import RESP_PORT, log, psql
from driver_lib.redis_benchmark import RespConn

_state = {"no_pause": False}  # bench/run starts the cluster with the default delay


def batch_pauses():
    """The RESP workers' pauses so far, every worker's (INFO stats)."""
    conn = RespConn(RESP_PORT)
    try:
        conn.send([["INFO", "stats"]])
        info = conn.reply()
    finally:
        conn.close()
    m = re.search(r"^batch_pauses:(\d+)", info if isinstance(info, str) else "", re.M)
    if not m:
        raise RuntimeError(f"INFO stats of the RESP server has no batch_pauses: {str(info)[:200]!r}")
    return int(m.group(1))


def switch(no_pause):
    if no_pause == _state["no_pause"]:
        return
    log(f"local_cache.resp_batch_delay = {'0' if no_pause else 'its default'}: reloading")
    psql("ALTER SYSTEM SET local_cache.resp_batch_delay = 0" if no_pause
         else "ALTER SYSTEM RESET local_cache.resp_batch_delay")
    psql("SELECT pg_reload_conf()")
    time.sleep(1)  # each worker rereads the file at its next loop turn; the signal wakes it
    _state["no_pause"] = no_pause


def run_sample(spec, run):
    """run(spec) under the policy of spec's variant, with the pauses taken during it."""
    no_pause = spec.get("variant") == "no_pause"
    switch(no_pause)
    before = batch_pauses()
    sample = run(spec)
    sample["batch_pauses"] = batch_pauses() - before
    if no_pause and sample["batch_pauses"]:
        raise RuntimeError(f"{sample['batch_pauses']} batch pauses during a sample with "
                           "local_cache.resp_batch_delay = 0: the reload did not reach the workers")
    return sample
