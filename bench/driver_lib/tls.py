"""bench/driver_lib/tls.py: the tls mode's two states of our RESP server, with TLS
(`local_cache.resp_tls = on`, bench/run's throwaway certificate) and in plaintext: a PGC_POSTMASTER
setting, so switching is ALTER SYSTEM and a restart of the cluster (tools/cluster.sh restart)
between blocks of samples; redis-server serves both states at once on two ports. Each state's
first block runs the redis-benchmark check in that state first."""
import time

from driver_lib import measure, redis_benchmark
from driver_lib.env import RESP_PORT, log, psql, sh

# bench/run starts the cluster with TLS on and the run's check (CHECK_CLIENTS) runs in that state
_state = {"tls": True, "checked": {True}}


def describe():
    """doc["config"]["tls"]: what the TLS samples ran with."""
    return {"resp_tls_auth_clients": psql("SHOW local_cache.resp_tls_auth_clients"),
            "redis_tls_auth_clients": "no", "certificate": "RSA 2048, signed by a CA made for the run",
            "ssl_min_protocol_version": psql("SHOW ssl_min_protocol_version"),
            "openssl": sh(["openssl", "version"])}


def wait_for_resp(tls):
    """Until our RESP server answers PING in the new state (its workers start after the postmaster)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            conn = redis_benchmark.RespConn(RESP_PORT, tls)
            try:
                conn.send([["PING"]])
                if conn.reply() == ("+", "PONG"):
                    return
            finally:
                conn.close()
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the RESP server does not answer PING {'over TLS' if tls else 'in plaintext'} "
                               "after the restart")
        time.sleep(0.2)


def switch(doc, spec):
    """Puts our RESP server in the state of spec's variant (restarting it when it is in the other)
    and checks a state the run has not checked yet."""
    tls = spec["variant"] == "tls"
    if tls != _state["tls"]:
        word = "on" if tls else "off"
        log(f"local_cache.resp_tls = {word}: restarting the cluster")
        psql(f"ALTER SYSTEM SET local_cache.resp_tls = {word}")
        measure.restart_cluster()
        if psql("SHOW local_cache.resp_tls") != word:
            raise RuntimeError(f"local_cache.resp_tls is not {word} after the restart")
        wait_for_resp(tls)
        _state["tls"] = tls
    if tls not in _state["checked"]:
        doc["checks"].append(redis_benchmark.run_rb_check(tls))
        _state["checked"].add(tls)
