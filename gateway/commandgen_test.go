package gateway_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// commandGen draws random commands for TestDifferential over a few keys,
// so that every command meets keys of every type.
type commandGen struct {
	r      *rand.Rand
	prefix string // of every key
	stream int    // the last stream entry id's time part: ids increase
	at     string
	far    []string // times no command but EXPIREAT GT or LT sets
	forms  []func() []string
	queue  [][]string // the rest of a transaction being sent
}

func newCommandGen(r *rand.Rand) *commandGen {
	now := time.Now().Unix()
	g := &commandGen{r: r, at: strconv.FormatInt(now+100000, 10),
		far: []string{strconv.FormatInt(now+50000, 10), strconv.FormatInt(now+200000, 10)}}
	k, f, m, v, n := g.key, g.field, g.member, g.value, g.int
	g.forms = []func() []string{
		// Strings.
		func() []string { return []string{"get", k()} },
		func() []string { return []string{"set", k(), v()} },
		func() []string { return []string{"set", k(), v(), g.pick("NX", "XX", "GET", "KEEPTTL")} },
		func() []string { return []string{"set", k(), v(), "EX", "1000"} },
		func() []string { return []string{"set", k(), v(), "EXAT", g.at} },
		func() []string { return []string{"set", k(), v(), "PXAT", g.at + "000"} },
		func() []string { return []string{"set", k(), v(), "PX", "100000000"} },
		func() []string { return []string{"del", k(), k()} },
		func() []string { return []string{"exists", k(), k()} },
		func() []string { return []string{"touch", k(), k(), k()} },
		func() []string { return []string{"mget", k(), k(), k()} },
		func() []string { return []string{"incr", k()} },
		func() []string { return []string{"incrby", k(), n()} },
		func() []string { return []string{"append", k(), v()} },
		func() []string { return []string{"setnx", k(), v()} },
		func() []string { return []string{"getset", k(), v()} },
		func() []string { return []string{"strlen", k()} },
		func() []string { return []string{"getrange", k(), n(), n()} },
		func() []string { return []string{"setrange", k(), g.pick("0", "2", "5"), v()} },
		func() []string { return []string{"getdel", k()} },
		func() []string {
			return []string{"getex", k(), g.pick("EX", "PX", "PERSIST"), "100000"}[:g.r.IntN(2)*2+2]
		},
		func() []string { return []string{"incrbyfloat", k(), g.pick("1.5", "-2", "0.25", "abc")} },
		func() []string { return []string{"setex", k(), g.pick("1000", "0", "-1"), v()} },
		func() []string { return []string{"psetex", k(), "1000000", v()} },
		// Keys and expiry.
		func() []string { return []string{"expire", k(), g.pick("1000", "2000")} },
		func() []string { return []string{"expire", k(), "1500", g.pick("NX", "XX", "SOON")} },
		// GT and LT compare with an absolute time that no other command
		// sets (far): a relative one, or one a SET with EXAT set (which
		// the gateway makes relative), would compare the servers' clocks.
		func() []string { return []string{"expireat", k(), g.pick(g.far...), g.pick("GT", "LT")} },
		func() []string { return []string{"pexpire", k(), "3000000"} },
		func() []string { return []string{"expireat", k(), g.at} },
		func() []string { return []string{"pexpireat", k(), g.at + "000", g.pick("NX", "XX")} },
		func() []string {
			return []string{g.pick("ttl", "pttl", "expiretime", "pexpiretime", "persist", "type"), k()}
		},
		// Hashes.
		func() []string { return []string{"hset", k(), f(), v(), f(), v()} },
		func() []string { return []string{g.pick("hsetnx", "hmset"), k(), f(), v()} },
		func() []string { return []string{g.pick("hget", "hexists", "hstrlen"), k(), f()} },
		func() []string { return []string{g.pick("hmget", "hdel"), k(), f(), f()} },
		func() []string { return []string{g.pick("hlen", "hkeys", "hvals", "hgetall"), k()} },
		func() []string { return []string{"hincrby", k(), f(), n()} },
		func() []string { return []string{"hincrbyfloat", k(), f(), g.pick("1.5", "x")} },
		func() []string { return []string{"hrandfield", k(), "2", "WITHVALUES"}[:2+2*g.r.IntN(2)] },
		func() []string { return []string{"hscan", k(), "0"} },
		// Lists.
		func() []string { return []string{g.pick("lpush", "rpush", "lpushx", "rpushx"), k(), v(), v()} },
		func() []string { return []string{g.pick("lpop", "rpop"), k()} },
		func() []string { return []string{g.pick("lpop", "rpop"), k(), g.pick("2", "0", "-1")} },
		func() []string { return []string{"llen", k()} },
		func() []string { return []string{"lrange", k(), n(), n()} },
		func() []string { return []string{"lindex", k(), n()} },
		func() []string { return []string{"lset", k(), n(), v()} },
		func() []string { return []string{"lrem", k(), n(), v()} },
		func() []string { return []string{"ltrim", k(), n(), n()} },
		func() []string { return []string{"linsert", k(), g.pick("BEFORE", "AFTER", "AROUND"), v(), v()} },
		func() []string { return []string{"lpos", k(), v()} },
		// Sets.
		func() []string { return []string{g.pick("sadd", "srem"), k(), m(), m()} },
		func() []string { return []string{g.pick("smembers", "scard"), k()} },
		func() []string { return []string{"sismember", k(), m()} },
		func() []string { return []string{"smismember", k(), m(), m()} },
		// SPOP of every member: a random choice would leave the two
		// servers with different sets.
		func() []string { return []string{"spop", k(), "10"} },
		func() []string { return []string{"srandmember", k(), g.pick("1", "3")} },
		// Sorted sets.
		func() []string { return []string{"zadd", k(), g.score(), m(), g.score(), m()} },
		func() []string { return []string{"zadd", k(), g.pick("NX", "XX", "GT", "LT", "CH"), g.score(), m()} },
		func() []string { return []string{"zincrby", k(), g.score(), m()} },
		func() []string { return []string{"zrem", k(), m()} },
		func() []string { return []string{g.pick("zscore", "zrank", "zrevrank"), k(), m()} },
		func() []string { return []string{"zmscore", k(), m(), m()} },
		func() []string { return []string{"zcard", k()} },
		func() []string {
			return []string{g.pick("zrange", "zrevrange"), k(), "0", "-1", "WITHSCORES"}[:4+g.r.IntN(2)]
		},
		func() []string { return []string{"zrangebyscore", k(), "-inf", "+inf", "WITHSCORES"} },
		func() []string { return []string{"zrangebylex", k(), "-", "+"} },
		func() []string { return []string{"zcount", k(), g.score(), "+inf"} },
		func() []string { return []string{g.pick("zpopmin", "zpopmax"), k()} },
		func() []string { return []string{"zremrangebyrank", k(), "0", "0"} },
		func() []string { return []string{"zrandmember", k(), "2", "WITHSCORES"}[:2+g.r.IntN(3)] },
		func() []string { return []string{"zadd", k(), "INCR", g.score(), m()} },
		func() []string { return []string{"zscan", k(), "0"} },
		// HyperLogLog, bitmaps, geo, streams.
		func() []string { return []string{"pfadd", k(), m(), m()} },
		func() []string { return []string{"setbit", k(), strconv.Itoa(g.r.IntN(40)), g.pick("0", "1", "2")} },
		func() []string { return []string{"getbit", k(), strconv.Itoa(g.r.IntN(40))} },
		func() []string { return []string{g.pick("bitcount", "bitpos"), k(), "1"}[:2+g.r.IntN(2)] },
		func() []string { return []string{"bitfield", k(), "INCRBY", "u8", "0", "7", "GET", "u4", "4"} },
		func() []string {
			return []string{"geoadd", k(), g.pick("13.361389", "15.087269"), g.pick("38.115556", "37.502669"), m()}
		},
		func() []string { return []string{"geopos", k(), m(), m()} },
		func() []string { return []string{"geodist", k(), m(), m(), "km"} },
		func() []string { return []string{"geohash", k(), m()} },
		func() []string {
			return []string{"geosearch", k(), "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC"}
		},
		func() []string { g.stream++; return []string{"xadd", k(), strconv.Itoa(g.stream) + "-1", f(), v()} },
		func() []string { return []string{"xlen", k()} },
		func() []string { return []string{g.pick("xrange", "xrevrange"), k(), "-", "+"} },
		func() []string { return []string{"xdel", k(), strconv.Itoa(g.r.IntN(g.stream+1)) + "-1"} },
		func() []string { return []string{"xtrim", k(), "MAXLEN", "2"} },
		func() []string { return []string{"xsetid", k(), strconv.Itoa(g.stream+g.r.IntN(3)) + "-1"} },
		func() []string { return []string{"xpending", k(), "g1"} },
		func() []string { return []string{"xack", k(), "g1", "1-1"} },
		func() []string { return []string{"xclaim", k(), "g1", "c1", "0", "1-1"} },
		func() []string { return []string{"xautoclaim", k(), "g1", "c1", "0", "0"} },
		// DUMP's payload is the same on two servers of one version;
		// RESTORE's is redis-server 7.0's DUMP of the string "a".
		func() []string { return []string{"dump", k()} },
		func() []string {
			return []string{"restore", k(), "0", "\x00\x01a\n\x00\xbf\xfe\xef\x9b\x8f6}\xb4", g.pick("REPLACE", "ABSTTL")}
		},
		// Errors the gateway answers itself, as Redis does.
		func() []string { return []string{"hget", k()} },
		func() []string { return []string{"hsetx", k(), v()} },
	}
	return g
}

// withKeyspace adds the commands on the whole keyspace, for a gateway
// that reaches the shards' Redis. RANDOMKEY and SCAN are left out: the
// key RANDOMKEY picks, and SCAN's cursors and order, differ between two
// servers.
func (g *commandGen) withKeyspace() {
	g.forms = append(g.forms,
		func() []string { return []string{"dbsize"} },
		func() []string { return []string{"keys", g.pick("*", g.prefix+"*", g.prefix+"string:*", g.prefix+"?")} },
		func() []string {
			return []string{g.pick("flushall", "flushdb"), g.pick("async", "sync", "ASYNC")}[:1+g.r.IntN(2)]
		},
	)
}

// withShardCommands adds the commands Redis runs on several keys of one
// shard, scripts and transactions (MULTI, two or three commands, EXEC),
// for a gateway that reaches the shards' Redis; every key shares the
// prefix's hash tag. rules names the commands whose replies differ
// between two servers, which transactions leave out.
func (g *commandGen) withShardCommands(rules map[string]string) {
	single := slices.Clone(g.forms)
	k, m, v := g.key, g.member, g.value
	two := func(name string, extra ...string) func() []string {
		return func() []string { return append([]string{name, k(), k()}, extra...) }
	}
	g.forms = append(g.forms,
		two("rename"), two("renamenx"), two("copy"), two("copy", "REPLACE"), two("lcs"),
		func() []string { return []string{"msetnx", k(), v(), k(), v()} },
		two("sinter"), two("sunion"), two("sdiff"), two("sinterstore", k()), two("sunionstore", k()),
		two("sdiffstore", k()), two("smove", m()),
		func() []string { return []string{"sintercard", "2", k(), k()} },
		func() []string {
			return []string{g.pick("zunion", "zinter", "zdiff"), "2", k(), k(), "WITHSCORES"}[:4+g.r.IntN(2)]
		},
		func() []string {
			return []string{g.pick("zunionstore", "zinterstore", "zdiffstore"), k(), "2", k(), k()}
		},
		two("zrangestore", "0", "-1"),
		func() []string { return []string{"zmpop", "2", k(), k(), g.pick("MIN", "MAX")} },
		two("lmove", "LEFT", "RIGHT"), two("rpoplpush"),
		func() []string { return []string{"lmpop", "2", k(), k(), g.pick("LEFT", "RIGHT")} },
		two("pfcount"), two("pfmerge", k()),
		func() []string { return []string{"bitop", g.pick("AND", "OR", "XOR"), k(), k(), k()} },
		func() []string {
			return []string{"eval", g.pick("return redis.call('GET', KEYS[1])", "return {KEYS[1], ARGV[1], 7}",
				"return redis.call('INCR', KEYS[1])", "return redis.error_reply('MY no')"), "1", k(), v()}
		},
		func() []string {
			return []string{"eval_ro", "return redis.call('SET', KEYS[1], ARGV[1])", "1", k(), v()}
		},
		func() []string {
			g.queue = append(g.queue, []string{"multi"})
			for range 2 + g.r.IntN(2) {
				cmd := single[g.r.IntN(len(single))]()
				for rules[cmd[0]] != "" {
					cmd = single[g.r.IntN(len(single))]()
				}
				g.queue = append(g.queue, cmd)
			}
			return []string{"exec"}
		},
	)
}

// keyless are the commands whose first argument is not a key.
var keyless = map[string]bool{"keys": true, "flushall": true, "flushdb": true, "sintercard": true, "zunion": true,
	"zinter": true, "zdiff": true, "zmpop": true, "lmpop": true, "eval": true, "eval_ro": true, "bitop": true,
	"zunionstore": true, "zinterstore": true, "zdiffstore": true}

// next draws a command. Three times in four its key is one of a few that
// commands of its family use, so that keys grow past one element; else one
// that every command uses, so that types meet.
func (g *commandGen) next() []string {
	if len(g.queue) > 0 {
		args := g.queue[0]
		g.queue = g.queue[1:]
		return args
	}
	args := g.forms[g.r.IntN(len(g.forms))]()
	if len(g.queue) > 0 { // a transaction: its commands, then args (EXEC)
		g.queue = append(g.queue, args)
		return g.next()
	}
	if len(args) > 1 && !keyless[args[0]] && g.r.IntN(4) > 0 {
		args[1] = g.prefix + family(args[0]) + ":" + strconv.Itoa(g.r.IntN(3))
	}
	return args
}

// family names the type a command works on.
func family(name string) string {
	for _, f := range []struct{ prefix, family string }{
		{"h", "hash"}, {"lpush", "list"}, {"rpush", "list"}, {"lpop", "list"}, {"rpop", "list"}, {"l", "list"},
		{"sadd", "set"}, {"srem", "set"}, {"smembers", "set"}, {"scard", "set"}, {"sismember", "set"},
		{"smismember", "set"}, {"spop", "set"}, {"srandmember", "set"}, {"z", "zset"}, {"geo", "geo"},
		{"x", "stream"}, {"pf", "hll"}, {"setbit", "bits"}, {"getbit", "bits"}, {"bit", "bits"},
	} {
		if strings.HasPrefix(name, f.prefix) {
			return f.family
		}
	}
	return "string"
}

func (g *commandGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }
func (g *commandGen) key() string             { return g.prefix + strconv.Itoa(g.r.IntN(6)) }
func (g *commandGen) field() string           { return "f" + strconv.Itoa(g.r.IntN(4)) }
func (g *commandGen) member() string          { return "m" + strconv.Itoa(g.r.IntN(5)) }
func (g *commandGen) int() string             { return strconv.Itoa(g.r.IntN(11) - 4) }
func (g *commandGen) score() string           { return g.pick("1", "2.5", "-1", "3", "+inf", "-inf", "x") }
func (g *commandGen) value() string           { return g.pick("v", "hello", "", "10", "-3", "3.5", "abc") }
