package org.distcache.jediscluster;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;

/**
 * Jedis's JedisCluster, unmodified, against DistCache gateways with a
 * cluster face. Run by gateway/jedis_test.go as: java -cp CLASSPATH
 * org.distcache.jediscluster.Check HOST PORT GATEWAYS KEYS, with the
 * address of one gateway, how many the cluster has, and how many keys to
 * write and read back (jedis:spread:0 ...). Prints "ok"; the first wrong
 * result ends it with an error.
 */
public final class Check {
  private Check() {}

  private static void expect(String what, Object got, Object want) {
    if (!Objects.equals(got, want)) {
      throw new AssertionError(what + " = " + got + ", want " + want);
    }
  }

  public static void main(String[] args) {
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    int gateways = Integer.parseInt(args[2]);
    int keys = Integer.parseInt(args[3]);
    // The gateways answer within their own timeouts: the client's only
    // bounds a hang.
    JedisClientConfig config = DefaultJedisClientConfig.builder().socketTimeoutMillis(60_000).build();
    try (JedisCluster jc = new JedisCluster(Set.of(new HostAndPort(host, port)), config)) {
      expect("gateways found", jc.getClusterNodes().size(), gateways);
      expect("SET", jc.set("jedis:a", "1"), "OK");
      expect("GET", jc.get("jedis:a"), "1");
      expect("GET of a missing key", jc.get("jedis:missing"), null);
      expect("INCR", jc.incr("jedis:n"), 1L);
      expect("INCRBY", jc.incrBy("jedis:n", 41), 42L);
      expect("HSET", jc.hset("jedis:h", Map.of("f1", "1", "f2", "2")), 2L);
      expect("HGETALL", jc.hgetAll("jedis:h"), Map.of("f1", "1", "f2", "2"));
      // Jedis refuses multi-key commands across slots: one hash tag.
      expect("MSET", jc.mset("{jedis}x", "1", "{jedis}y", "2"), "OK");
      expect("MGET", jc.mget("{jedis}x", "{jedis}y", "{jedis}z"), Arrays.asList("1", "2", null));
      expect("DEL", jc.del("jedis:a"), 1L);
      expect("GET of a deleted key", jc.get("jedis:a"), null);
      for (int i = 0; i < keys; i++) {
        String k = "jedis:spread:" + i;
        expect("SET " + k, jc.set(k, k), "OK");
        expect("GET " + k, jc.get(k), k);
      }
    }
    System.out.println("ok");
  }
}
