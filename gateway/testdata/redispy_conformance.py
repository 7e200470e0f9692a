"""redis-py against the DistCache gateway: every supported command, its
result, and Redis' error texts, with RESP2 and RESP3. Run by
gateway/redispy_test.go as: python redispy_conformance.py HOST PORT."""

import sys

import redis


def check(host, port, proto):
    r = redis.Redis(host=host, port=port, protocol=proto)
    k = lambda name: f"py{proto}:{name}"
    assert r.ping() is True
    assert r.echo("hi") == b"hi"
    assert r.set(k("a"), b"1") is True
    assert r.get(k("a")) == b"1"
    assert r.get(k("missing")) is None
    assert r.exists(k("a"), k("a"), k("missing")) == 2
    assert r.incr(k("n")) == 1
    assert r.incrby(k("n"), 41) == 42
    assert r.decr(k("n")) == 41
    assert r.mset({k("x"): "10", k("y"): "20"}) is True
    assert r.mget(k("x"), k("missing"), k("y")) == [b"10", None, b"20"]
    assert r.delete(k("a"), k("missing")) == 1
    assert r.set(k("nx"), "v", nx=True) is True
    assert r.set(k("nx"), "w", nx=True) is None
    assert r.set(k("nx"), "w", xx=True, get=True) == b"v"
    assert r.append(k("nx"), "!") == 2
    assert r.getset(k("nx"), "z") == b"w!"
    assert r.setnx(k("nx"), "q") is False
    assert r.set(k("ttl"), "v", ex=60) is True
    assert r.get(k("ttl")) == b"v"
    value = bytes(range(256))
    assert r.set(k("bin"), value) is True
    assert r.get(k("bin")) == value
    pipe = r.pipeline(transaction=False)
    pipe.set(k("p"), "1").get(k("p")).incr(k("p")).delete(k("p")).get(k("p"))
    assert pipe.execute() == [True, b"1", 2, 1, None]
    try:
        r.incr(k("ttl"))
        raise AssertionError("INCR of a string succeeded")
    except redis.ResponseError as e:
        assert "value is not an integer or out of range" in str(e), str(e)
    try:
        r.execute_command("FROBNICATE", "x")
        raise AssertionError("an unknown command succeeded")
    except redis.ResponseError as e:
        assert "unknown command 'FROBNICATE'" in str(e), str(e)
    info = r.info("distcache")
    assert "map_version" in info and "layer_names" in info, info
    r.close()


if __name__ == "__main__":
    host, port = sys.argv[1], int(sys.argv[2])
    for proto in (2, 3):
        check(host, port, proto)
    print("ok")
