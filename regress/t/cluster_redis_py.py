#!/usr/bin/python3
# regress/t/cluster_redis_py.py: redis-py's RedisCluster against a local_cache cluster-mode shard,
# with its documented cluster option only (read_from_replicas=True), for 017_resp_cluster.pl:
# started from one node, it writes one key and reads others; it prints "OK <write reply>" and each
# read's value, one per line, and the nodes it knows ("node host:port role"). The test counts
# where the requests landed from each node's INFO commandstats.
#
#   cluster_redis_py.py HOST PORT WRITE_KEY WRITE_VALUE READ_KEY...
import sys

from redis.cluster import RedisCluster


def main():
    host, port, write_key, write_value = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    client = RedisCluster(host=host, port=port, read_from_replicas=True, decode_responses=True)
    try:
        for node in client.get_nodes():
            print(f"node {node.host}:{node.port} {node.server_type}")
        print("OK", client.set(write_key, write_value))
        for key in sys.argv[5:]:
            print(client.get(key))
    finally:
        client.close()


if __name__ == "__main__":
    main()
