package gateway_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/wire"
)

// TestGoRedis runs go-redis v9, unmodified, against a gateway in front of
// a real cluster, speaking RESP2 and RESP3: every supported command's
// results, Redis' error texts, binary-safe keys and values, and the size
// limits.
func TestGoRedis(t *testing.T) {
	addr, _ := startGateway(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc := redisClient(t, addr, proto)
			ctx := t.Context()
			k := func(name string) string { return fmt.Sprintf("resp%d:%s", proto, name) }
			expect := func(what string, got, want any, err error) {
				t.Helper()
				if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s = %v (%v), want %v", what, got, err, want)
				}
			}
			expectErr := func(what string, err error, want string) {
				t.Helper()
				if err == nil || err.Error() != want {
					t.Errorf("%s: error %v, want %q", what, err, want)
				}
			}
			hello, err := rc.Do(ctx, "hello", proto).Result()
			expect("HELLO's proto", helloProto(hello), proto, err)
			r1, err := rc.Ping(ctx).Result()
			expect("PING", r1, "PONG", err)
			r1, err = rc.Echo(ctx, "hi there").Result()
			expect("ECHO", r1, "hi there", err)

			r1, err = rc.Set(ctx, k("a"), "1", 0).Result()
			expect("SET", r1, "OK", err)
			r1, err = rc.Get(ctx, k("a")).Result()
			expect("GET", r1, "1", err)
			if _, err := rc.Get(ctx, k("missing")).Result(); !errors.Is(err, redis.Nil) {
				t.Errorf("GET of a missing key: %v, want redis.Nil", err)
			}
			n, err := rc.Exists(ctx, k("a"), k("a"), k("missing")).Result()
			expect("EXISTS a a missing", n, 2, err)
			n, err = rc.Del(ctx, k("a"), k("missing")).Result()
			expect("DEL a missing", n, 1, err)
			n, err = rc.Unlink(ctx, k("a")).Result()
			expect("UNLINK of a deleted key", n, 0, err)

			n, err = rc.Incr(ctx, k("n")).Result()
			expect("INCR of a missing key", n, 1, err)
			n, err = rc.IncrBy(ctx, k("n"), 41).Result()
			expect("INCRBY 41", n, 42, err)
			n, err = rc.Decr(ctx, k("n")).Result()
			expect("DECR", n, 41, err)
			n, err = rc.DecrBy(ctx, k("n"), 50).Result()
			expect("DECRBY 50", n, -9, err)
			r1, err = rc.Get(ctx, k("n")).Result()
			expect("GET of the counter", r1, "-9", err)
			_ = rc.Set(ctx, k("word"), "abc", 0)
			expectErr("INCR of a non-integer", rc.Incr(ctx, k("word")).Err(), "ERR value is not an integer or out of range")
			expectErr("INCRBY of a non-integer delta", rc.Do(ctx, "incrby", k("n"), "x").Err(), "ERR value is not an integer or out of range")
			n, err = rc.Append(ctx, k("word"), "de").Result()
			expect("APPEND", n, 5, err)
			r1, err = rc.Do(ctx, "getset", k("word"), "new").Text()
			expect("GETSET", r1, "abcde", err)
			if _, err := rc.Do(ctx, "getset", k("fresh"), "v").Result(); !errors.Is(err, redis.Nil) {
				t.Errorf("GETSET of a missing key: %v, want redis.Nil", err)
			}
			ok1, err := rc.SetNX(ctx, k("fresh"), "other", 0).Result()
			expect("SETNX of an existing key", ok1, false, err)
			ok1, err = rc.SetNX(ctx, k("nx"), "first", 0).Result()
			expect("SETNX of a missing key", ok1, true, err)
			ok1, err = rc.SetXX(ctx, k("xx"), "v", 0).Result()
			expect("SET XX of a missing key", ok1, false, err)
			ok1, err = rc.SetXX(ctx, k("nx"), "second", 0).Result()
			expect("SET XX of an existing key", ok1, true, err)
			r1, err = rc.SetArgs(ctx, k("nx"), "third", redis.SetArgs{Get: true}).Result()
			expect("SET GET", r1, "second", err)
			r1, err = rc.Get(ctx, k("nx")).Result()
			expect("GET after SET GET", r1, "third", err)
			r1, err = rc.Set(ctx, k("ttl"), "v", time.Minute).Result()
			expect("SET EX", r1, "OK", err)
			r1, err = rc.Get(ctx, k("ttl")).Result()
			expect("GET of a key with an expiry", r1, "v", err)
			r1, err = rc.SetArgs(ctx, k("ttl"), "w", redis.SetArgs{Mode: "XX", Get: true, KeepTTL: true}).Result()
			expect("SET XX GET KEEPTTL", r1, "v", err)
			if _, err := rc.SetArgs(ctx, k("ttl"), "z", redis.SetArgs{Mode: "NX", TTL: time.Minute}).Result(); !errors.Is(err, redis.Nil) {
				t.Errorf("SET NX EX of an existing key: %v, want redis.Nil", err)
			}
			expectErr("SET EX 0", rc.Do(ctx, "set", k("x"), "v", "ex", "0").Err(), "ERR invalid expire time in 'set' command")
			expectErr("SET EX and PX", rc.Do(ctx, "set", k("x"), "v", "ex", "5", "px", "5").Err(), "ERR syntax error")
			expectErr("SET NX XX", rc.Do(ctx, "set", k("x"), "v", "nx", "xx").Err(), "ERR syntax error")
			expectErr("SET with a bad option", rc.Do(ctx, "set", k("x"), "v", "sometimes").Err(), "ERR syntax error")

			r1, err = rc.MSet(ctx, k("x"), "10", k("y"), "20").Result()
			expect("MSET", r1, "OK", err)
			vals, err := rc.MGet(ctx, k("x"), k("missing"), k("y")).Result()
			expect("MGET", vals, []any{"10", nil, "20"}, err)

			binKey, binValue := string(allBytes()[1:]), allBytes()
			_, err = rc.Set(ctx, binKey, binValue, 0).Result()
			got, gerr := rc.Get(ctx, binKey).Bytes()
			if err != nil || gerr != nil || !bytes.Equal(got, binValue) {
				t.Errorf("binary key and value: SET %v, GET %v, %d bytes back, want all 256 byte values", err, gerr, len(got))
			}
			big := bytes.Repeat([]byte("v"), wire.MaxValueLen)
			_, err = rc.Set(ctx, k("big"), big, 0).Result()
			got, gerr = rc.Get(ctx, k("big")).Bytes()
			if err != nil || gerr != nil || !bytes.Equal(got, big) {
				t.Errorf("a value of the largest size: SET %v, GET %v, %d bytes back", err, gerr, len(got))
			}
			expectErr("SET of a value over the limit", rc.Set(ctx, k("big"), append(big, 'x'), 0).Err(),
				"ERR string exceeds maximum allowed size (DistCache values are at most 1048576 bytes)")
			expectErr("SET of a key over the limit", rc.Set(ctx, strings.Repeat("k", wire.MaxKeyLen+1), "v", 0).Err(),
				"ERR invalid key: DistCache keys are 1 to 512 bytes")

			cn := rc.Conn() // the connection commands, on one connection
			defer cn.Close()
			ok, err := cn.ClientSetName(ctx, "shop-frontend").Result()
			expect("CLIENT SETNAME", ok, true, err)
			r1, err = cn.ClientGetName(ctx).Result()
			expect("CLIENT GETNAME", r1, "shop-frontend", err)
			if id, err := cn.ClientID(ctx).Result(); err != nil || id <= 0 {
				t.Errorf("CLIENT ID = %d (%v)", id, err)
			}
			info, err := cn.ClientInfo(ctx).Result()
			if err != nil || info.Name != "shop-frontend" || info.Resp != proto {
				t.Errorf("CLIENT INFO = %+v (%v), want name shop-frontend, resp %d", info, err, proto)
			}
			r1, err = rc.Do(ctx, "select", 0).Text()
			expect("SELECT 0", r1, "OK", err)
			expectErr("SELECT 1", rc.Do(ctx, "select", 1).Err(), "ERR DB index is out of range")
			expectErr("an unknown command", rc.Do(ctx, "frobnicate", "x", "y").Err(),
				"ERR unknown command 'frobnicate', with args beginning with: 'x' 'y' ")
			expectErr("GET without a key", rc.Do(ctx, "get").Err(), "ERR wrong number of arguments for 'get' command")
			expectErr("MSET with a key and no value", rc.Do(ctx, "mset", k("x"), "1", k("y")).Err(),
				"ERR wrong number of arguments for 'mset' command")
			if s, err := rc.Info(ctx, "distcache").Result(); err != nil || !strings.Contains(s, "map_version:1\r\n") || !strings.Contains(s, "layer_names:spine,leaf\r\n") {
				t.Errorf("INFO distcache = %q (%v)", s, err)
			}
			if n, err := rc.Do(ctx, "command", "count").Int(); err != nil || n < 15 {
				t.Errorf("COMMAND COUNT = %d (%v)", n, err)
			}
		})
	}
}

// TestPipelineKeepsOrder sends one pipeline that writes and reads the same
// key several times among other keys: every reply is what running the
// commands one by one gives, in order.
func TestPipelineKeepsOrder(t *testing.T) {
	addr, _ := startGateway(t)
	rc := redisClient(t, addr, 2)
	ctx := t.Context()
	pipe := rc.Pipeline()
	var cmds []redis.Cmder
	cmds = append(cmds, pipe.Set(ctx, "p:k", "1", 0), pipe.Get(ctx, "p:k"), pipe.Get(ctx, "p:other"))
	for i := range 20 {
		cmds = append(cmds, pipe.Set(ctx, fmt.Sprintf("p:%d", i), i, 0))
	}
	cmds = append(cmds, pipe.Set(ctx, "p:k", "2", 0), pipe.Get(ctx, "p:k"), pipe.MGet(ctx, "p:k", "p:3"),
		pipe.Del(ctx, "p:k"), pipe.Get(ctx, "p:k"), pipe.Exists(ctx, "p:k", "p:19"))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cmds {
		switch c := c.(type) {
		case *redis.StatusCmd:
			got = append(got, c.Val())
		case *redis.StringCmd:
			if errors.Is(c.Err(), redis.Nil) {
				got = append(got, "nil")
			} else {
				got = append(got, c.Val())
			}
		case *redis.IntCmd:
			got = append(got, fmt.Sprint(c.Val()))
		case *redis.SliceCmd:
			got = append(got, fmt.Sprint(c.Val()))
		}
	}
	want := "OK 1 nil " + strings.Repeat("OK ", 20) + "OK 2 [2 3] 1 nil 1"
	if strings.Join(got, " ") != want {
		t.Errorf("pipeline replies\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}

// allBytes is every byte value once.
func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// helloProto is the proto field of a HELLO reply (a map in RESP3, a flat
// list in RESP2).
func helloProto(reply any) any {
	switch r := reply.(type) {
	case map[any]any:
		return r["proto"]
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			if r[i] == "proto" {
				return r[i+1]
			}
		}
	}
	return nil
}
