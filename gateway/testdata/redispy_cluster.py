"""redis-py's RedisCluster against DistCache gateways with a cluster face,
with RESP2 and RESP3. Run by gateway/redispy_test.go as:
python redispy_cluster.py HOST PORT GATEWAYS (the address of one gateway
and how many the cluster has)."""

import sys

from redis.cluster import RedisCluster


def check(host, port, gateways, proto):
    rc = RedisCluster(host=host, port=port, protocol=proto)
    nodes = rc.get_nodes()
    assert len(nodes) == gateways, nodes
    k = lambda name: f"pyc{proto}:{name}"
    for name in ("a", "b", "c", "d"):
        assert rc.set(k(name), name) is True
    assert rc.get(k("c")) == b"c"
    assert rc.get(k("missing")) is None
    assert rc.incr(k("n")) == 1
    assert rc.incrby(k("n"), 41) == 42
    assert rc.hset(k("h"), mapping={"f1": "1", "f2": "2"}) == 2
    assert rc.hgetall(k("h")) == {b"f1": b"1", b"f2": b"2"}
    # Keys of one hash tag go to one node in one MGET; keys of different
    # slots go to the node of each, split by the client.
    assert rc.mset({k("{t}x"): "1", k("{t}y"): "2"}) is True
    assert rc.mget(k("{t}x"), k("{t}y")) == [b"1", b"2"]
    assert rc.mget_nonatomic(k("a"), k("b"), k("missing"), k("d")) == [b"a", b"b", None, b"d"]
    pipe = rc.pipeline()
    pipe.set(k("p"), "1")
    pipe.get(k("p"))
    pipe.incr(k("p"))
    pipe.delete(k("p"))
    pipe.get(k("p"))
    assert pipe.execute() == [True, b"1", 2, 1, None]
    # A key of every node's slots, through the node that owns them.
    used = set()
    for i in range(2000):
        key = k(f"spread:{i}")
        node = rc.get_node_from_key(key)
        if node.name in used:
            continue
        used.add(node.name)
        assert rc.set(key, node.name) is True
        assert rc.get(key) == node.name.encode()
    assert len(used) == gateways, used
    assert rc.keyslot("{user1000}.following") == rc.cluster_keyslot("{user1000}.following")
    info = rc.cluster_info()
    assert info["cluster_state"] == "ok", info
    assert int(info["cluster_slots_assigned"]) == 16384, info
    assert int(info["cluster_known_nodes"]) == gateways, info
    rc.close()


if __name__ == "__main__":
    host, port, gateways = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for proto in (2, 3):
        check(host, port, gateways, proto)
    print("ok")
