"""bench/driver_lib/matrix.py: which samples a run takes, in which order (the modes, clients,
paths, connections, batches and key types; repetitions rotated)."""
from driver_lib.env import (BATCHES, BUILDS_DIR, CACHE_PATHS, CLIENTS, CONNECTIONS, KEY_CLIENT, KEY_CONNECTIONS, KEY_PARAMS,
                            KEY_PATHS, KEY_SQL_PATHS, KEY_TYPES, MISS_PATHS, MODE, PIPELINES, RB_MODES, RB_PATHS,
                            MULTI_ROW_CLIENTS, MULTI_ROW_WRITE_PATHS, PAIR_PATH, READ_PATHS, REPEATS, SERIALIZABLE_PATHS,
                            TLS_VARIANTS, WRITE_PATHS)


def rotated(lst, r):
    if not lst or REPEATS <= 1:
        return lst
    k = (r * len(lst)) // REPEATS
    return lst[k:] + lst[:k]


def key_specs():
    """The warm reads of the key types (native client) and their int baseline, the SQL paths with
    binary key arrays: in the keys mode every path of int, in the warm mode int's SQL paths (the
    matrix has int's RESP samples, and its SQL ones with text key arrays). With redis-benchmark
    among the clients also its unpipelined MGET of every key type on both RESP servers (int's in
    the keys mode; the warm mode's matrix has them): RESP's cost per key without a client of ours."""
    if not KEY_TYPES:
        return []
    specs = []
    for keys in ["int"] + KEY_TYPES:
        paths = []
        if KEY_CLIENT in CLIENTS:
            paths += [(KEY_CLIENT, p) for p in (KEY_PATHS if keys != "int" or MODE == "keys" else KEY_SQL_PATHS)]
        if "redis-benchmark" in CLIENTS and (keys != "int" or MODE == "keys"):
            paths += [("redis-benchmark", p) for p in RB_PATHS]
        for client, path in paths:
            for conns in KEY_CONNECTIONS:
                for batch in BATCHES:
                    spec = {"mode": "warm", "client": client, "path": path, "connections": conns, "batch": batch,
                            "variant": None, "pipeline": 1, "keys": keys}
                    if path in KEY_SQL_PATHS:
                        spec["params"] = KEY_PARAMS
                    specs.append(spec)
    return specs


def tls_specs(r):
    """Round r of the tls mode: redis-benchmark on both RESP servers, one block with TLS and one in
    plaintext (our server restarts between blocks; tls.py), their order alternating by round so
    that neither state always runs first; each block's samples rotated like the other modes'."""
    variants = TLS_VARIANTS if r % 2 == 0 else TLS_VARIANTS[::-1]
    specs = []
    for variant in variants:
        block = [{"mode": "tls", "client": "redis-benchmark", "path": path, "connections": conns, "batch": batch,
                  "variant": variant, "pipeline": pipeline, "keys": "int"}
                 for path in RB_PATHS for conns in CONNECTIONS for batch in BATCHES for pipeline in PIPELINES]
        specs += rotated(block, r)
    return specs


def with_baseline(specs, r):
    """Round r of a tail run with a baseline build (builds.py): the round's samples on this tree's
    build and, in a block of their own, those of every client but redis-benchmark with the pause
    (the paths the "no loss" check holds against the baseline, and redis-server's beside them) on
    the baseline's; the blocks' order alternates by round, like the tls mode's."""
    baseline = [dict(s, build="baseline") for s in specs
                if s["client"] != "redis-benchmark" and s["variant"] != "no_pause"]
    return specs + baseline if r % 2 == 0 else baseline + specs


def write_paths(r):
    """The write mode's (path, variant) pairs in round r: an UPDATE's cached and not cached samples
    trade places every other round, so that neither always runs first (and after the other)."""
    if r % 2 == 0:
        return WRITE_PATHS
    other = {"cache_enabled": "cache_disabled", "cache_disabled": "cache_enabled"}
    return [(p, other[v]) if (p, "cache_disabled") in WRITE_PATHS else (p, v) for p, v in WRITE_PATHS]


def matrix():
    modes = {"all": ["warm", "miss", "mixed", "cold", "write", "serializable"], "keys": ["warm"],
             "tail": ["warm", "write"]}.get(MODE, [MODE])
    specs_by_rep = []
    for r in range(REPEATS):
        specs = []
        for mode in modes:
            group = []
            if mode == "write":
                for client in [c for c in CLIENTS if c != "redis-benchmark"]:
                    for conns in CONNECTIONS:
                        for path, variant in write_paths(r):
                            if ((path in MULTI_ROW_WRITE_PATHS or path == PAIR_PATH) and
                                    (client not in MULTI_ROW_CLIENTS or MODE == "tail")):
                                continue
                            if path == PAIR_PATH and conns < 2:  # a connection per half at least
                                continue
                            group.append({"mode": mode, "client": client, "path": path, "connections": conns,
                                          "batch": 1, "variant": variant, "pipeline": 1, "keys": "int"})
            elif MODE == "keys":
                group = key_specs()
            elif mode == "tls":  # rotated within its blocks already
                group = tls_specs(r)
            else:
                paths = {"warm": READ_PATHS, "miss": MISS_PATHS, "serializable": SERIALIZABLE_PATHS}.get(mode, CACHE_PATHS)
                for client in CLIENTS:
                    rb = client == "redis-benchmark"
                    if rb and mode not in RB_MODES:
                        continue
                    if mode == "serializable" and client != "native":  # bench/loadgen's --mode only
                        continue
                    for path in paths:
                        if rb and path not in RB_PATHS:
                            continue
                        for conns in CONNECTIONS:
                            for batch in BATCHES:
                                for pipeline in (PIPELINES if rb else [1]):
                                    spec = {"mode": mode, "client": client, "path": path, "connections": conns,
                                            "batch": batch, "variant": None, "pipeline": pipeline, "keys": "int"}
                                    group.append(spec)
                                    if MODE == "tail" and path == "resp":  # the same without the batching pause
                                        group.append(dict(spec, variant="no_pause"))
                                if mode == "serializable" and MODE == "serializable":
                                    # the READ COMMITTED lead in the same run, each sample beside
                                    # its SERIALIZABLE one (all: the warm mode's samples)
                                    group.append(dict(group[-1], mode="warm"))
                if mode == "warm":
                    group += key_specs()
            for s in group:
                s["repeat"] = r + 1
            specs += group if mode == "tls" else rotated(group, r)
        if BUILDS_DIR:
            specs = with_baseline(specs, r)
        specs_by_rep.append(specs)
    return [s for rep in specs_by_rep for s in rep]
