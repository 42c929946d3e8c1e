"""bench/report_lib/tls.py: the "TLS" section (`--tls`, a bench/run tls result): both RESP servers
with TLS and in plaintext side by side, and issue 28's targets (requests/s with TLS at least 0.9x
redis-server's; server CPU per request, relative to redis-server, no worse with TLS than in
plaintext) with their verdicts."""
from report_lib.data import fmt, judged, ratio, section_start
from report_lib.names import RB
from report_lib.tables import side_by_side

TLS_RPS_TARGET = 0.9
TRANSPORTS = [("tls", "TLS"), ("plain", "plaintext")]


def tls_section(data, doc, src):
    """The section's lines from the tls samples of doc (none without them)."""
    if not any(k[0] == "tls" for k in data.groups):
        return []
    cfg = doc["config"]
    tls_cfg = cfg.get("tls", {})
    conns = sorted({k[4] for k in data.groups if k[0] == "tls"})
    batches = sorted({k[5] for k in data.groups if k[0] == "tls"})
    pipelines = sorted({k[6] for k in data.groups if k[0] == "tls"})
    judged_conns = 16 if 16 in conns else max(conns)
    arg = lambda path, variant, n, b, pl: dict(mode="tls", client=RB, path=path, conns=n, batch=b, variant=variant,
                                               pipeline=pl)
    cmd = lambda b: "GET" if b == 1 else f"MGET of {b}"
    out = section_start("TLS: RESP vs redis-server, both with TLS", doc, src, "tls")
    w = out.append
    w("redis-benchmark (one thread, `--tls --cacert`) sends the same fixed command to both servers (`GET items:1`, "
      "`MGET items:1 … items:N`, the warm mode's rows): to the extension's RESP server with "
      "`local_cache.resp_tls = on` and to redis-server's `--tls-port`, both with the same certificate "
      f"({tls_cfg.get('certificate', 'made for the run')}; {tls_cfg.get('openssl') or 'OpenSSL'}) and no client "
      f"certificates asked (`local_cache.resp_tls_auth_clients = {tls_cfg.get('resp_tls_auth_clients', '?')}`, "
      "`--tls-auth-clients no`). The same cases in plaintext in the same run: `resp_tls` is a restart setting, so "
      "the cluster restarts between a block of TLS samples and a block of plaintext ones, every round runs both, "
      "their order alternating by round; redis-server listens on its plain and its TLS port all along. Each "
      "state's first block starts with the redis-benchmark check of its commands against SQL. Latencies are "
      f"*RESP / redis-server*; medians of {cfg['repeats']} round(s) (min–max). Server CPU: all of PostgreSQL's "
      "processes for RESP, redis-server's for the reference; a fresh connection's handshake is in the window "
      "(redis-benchmark opens its connections once per run).")
    w("")
    w("| transport | command | conns | pipeline | requests/s RESP | requests/s redis-server | RESP / redis "
      "| p50 µs | p99 µs | p99.9 µs | server CPU µs/req RESP | server CPU µs/req redis-server | RESP / redis |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for variant, name in TRANSPORTS:
        for n in conns:
            for b in batches:
                for pl in pipelines:
                    ours, ref = arg("resp", variant, n, b, pl), arg("redis", variant, n, b, pl)
                    if data.get(**ours) and data.get(**ref):
                        w(f"| {name} | {cmd(b)} | {n} | {pl if pl != 1 else 'none'} | "
                          f"{side_by_side(data, ours, ref)[0]} |")
    w("")
    w("What TLS adds to each server (its TLS samples against its plaintext ones):")
    w("")
    w("| server | command | conns | pipeline | requests/s TLS / plaintext | server CPU µs/req TLS | plaintext "
      "| added by TLS |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for path, name in [("resp", "RESP"), ("redis", "redis-server")]:
        for n in conns:
            for b in batches:
                for pl in pipelines:
                    on, off = arg(path, "tls", n, b, pl), arg(path, "plain", n, b, pl)
                    c_on = data.median("server_cpu_us_per_req", **on)
                    c_off = data.median("server_cpu_us_per_req", **off)
                    if c_on is None or c_off is None:
                        continue
                    w(f"| {name} | {cmd(b)} | {n} | {pl if pl != 1 else 'none'} | "
                      f"{fmt(ratio(data.median('rps', **on), data.median('rps', **off)), 2)} | {fmt(c_on, 1)} | "
                      f"{fmt(c_off, 1)} | {c_on - c_off:+.1f} |")
    w("")
    w(f"Targets (issue 28; {judged_conns} connections, no pipelining; ✓/✗). The CPU target holds when RESP's "
      "server CPU per request relative to redis-server's is with TLS at most what it is in plaintext (as shown, two "
      "decimals):")
    w("")
    w("| target | command | value |")
    w("| --- | --- | --- |")
    missed = []
    for b in batches:
        if b not in (1, 16):  # the commands: GET and MGET of 16
            continue
        on = [arg(p, "tls", judged_conns, b, 1) for p in ("resp", "redis")]
        off = [arg(p, "plain", judged_conns, b, 1) for p in ("resp", "redis")]
        r_rps = ratio(*(data.median("rps", **a) for a in on))
        cpu_on = ratio(*(data.median("server_cpu_us_per_req", **a) for a in on))
        cpu_off = ratio(*(data.median("server_cpu_us_per_req", **a) for a in off))
        cpu_ok = None if cpu_on is None or cpu_off is None else round(cpu_on, 2) <= round(cpu_off, 2)
        w(f"| RESP / redis-server requests/s with TLS ≥ {TLS_RPS_TARGET} | {cmd(b)} | {judged(r_rps, TLS_RPS_TARGET)} |")
        w(f"| RESP / redis-server server CPU per request with TLS ≤ the same ratio in plaintext | {cmd(b)} | "
          f"{fmt(cpu_on, 2)} (plaintext {fmt(cpu_off, 2)}){'' if cpu_ok is None else ' ✓' if cpu_ok else ' ✗'} |")
        if r_rps is not None and r_rps < TLS_RPS_TARGET:
            missed.append(f"{cmd(b)} with TLS at {r_rps:.2f}x redis-server's requests/s (target {TLS_RPS_TARGET})")
        if cpu_ok is False:
            missed.append(f"{cmd(b)} with TLS at {cpu_on:.2f}x redis-server's server CPU per request, "
                          f"{cpu_off:.2f}x in plaintext")
    w("")
    if missed:
        w("Targets missed: " + "; ".join(missed) + ".")
        w("")
    return out
