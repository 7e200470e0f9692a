package shim

import (
	"context"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
)

// commandRMW is the RMW that runs args (the name, then the arguments after
// the key) on a key.
func commandRMW(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return wire.AppendRMW(nil, wire.RMWCommand, wire.CommandArg(b))
}

// readOnly marks TestCommand's read-only commands: no phase at all.
const readOnly wire.Status = 0xff

// TestCommand runs commands of package rediscmd at a shim whose key has
// cached copies: the reply is Redis' own in RESP2; for a command that may
// write, the copies are invalidated before Redis runs it, and afterwards
// they get the key's value only if it is a string without an expiry; a
// read-only command leaves them alone.
func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		name       string
		before     string   // a string value; "" : none
		setup      []string // a command to run on the key first (after before)
		args       []string
		wantResult string
		wantUpdate wire.Status
		wantValue  string
	}{
		{"hset of a missing key", "", nil, []string{"hset", "f", "v", "g", "w"}, ":2\r\n", wire.StatusUncacheable, ""},
		{"hset of a string", "s", nil, []string{"hset", "f", "v"},
			"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", wire.StatusOK, "s"},
		{"hgetall", "", []string{"hset", "k", "f", "v"}, []string{"hgetall"}, "*2\r\n$1\r\nf\r\n$1\r\nv\r\n", readOnly, ""},
		{"hmget with a missing field", "", []string{"hset", "k", "f", "v"}, []string{"hmget", "f", "x"},
			"*2\r\n$1\r\nv\r\n$-1\r\n", readOnly, ""},
		{"type of a string", "s", nil, []string{"type"}, "+string\r\n", readOnly, ""},
		{"type of a missing key", "", nil, []string{"type"}, "+none\r\n", readOnly, ""},
		{"expire", "s", nil, []string{"expire", "100"}, ":1\r\n", wire.StatusUncacheable, ""},
		{"persist", "", []string{"set", "k", "v", "EX", "100"}, []string{"persist"}, ":1\r\n", wire.StatusOK, "v"},
		{"getdel", "s", nil, []string{"getdel"}, "$1\r\ns\r\n", wire.StatusNotFound, ""},
		{"setrange", "hello", nil, []string{"setrange", "0", "J"}, ":5\r\n", wire.StatusOK, "Jello"},
		{"strlen", "hello", nil, []string{"strlen"}, ":5\r\n", readOnly, ""},
		{"incrbyfloat", "1.5", nil, []string{"incrbyfloat", "2"}, "$3\r\n3.5\r\n", wire.StatusOK, "3.5"},
		{"lpush", "", []string{"rpush", "k", "a"}, []string{"lpush", "b"}, ":2\r\n", wire.StatusUncacheable, ""},
		{"an integer of 16 digits", "", []string{"hset", "k", "n", "1234567890123450"}, []string{"hincrby", "n", "1"},
			":1234567890123451\r\n", wire.StatusUncacheable, ""},
		{"restore over a string", "s", nil, []string{"restore", "0", "\x00\x01a\n\x00\xbf\xfe\xef\x9b\x8f6}\xb4", "REPLACE"},
			"+OK\r\n", wire.StatusOK, "a"},
		{"dump", "a", nil, []string{"dump"}, "$13\r\n\x00\x01a\n\x00\xbf\xfe\xef\x9b\x8f6}\xb4\r\n", readOnly, ""},
		{"a syntax error", "s", nil, []string{"expire", "10", "SOON"}, "-ERR Unsupported option SOON\r\n", wire.StatusOK, "s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.key(0, "cmd")
			ctx := context.Background()
			if tc.before != "" {
				put := e.mustStatus(wire.OpPut, key, []byte(tc.before), wire.StatusOK)
				for _, n := range e.owners(key) {
					n.waitFor(t, wire.OpUpdate, key, put.ValueVersion)
				}
			}
			if tc.setup != nil {
				args := []any{tc.setup[0], key}
				for _, a := range tc.setup[2:] {
					args = append(args, a)
				}
				if err := e.rdb.Do(ctx, args...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			earlier := map[string]int{} // INVALIDATEs of each owner before the command
			for _, n := range e.owners(key) {
				n.setHolds(key, true)
				earlier[n.name] = len(n.recorded(wire.OpInvalidate, key))
			}
			r := e.mustStatus(wire.OpRMW, key, commandRMW(tc.args...), wire.StatusOK)
			if r.Op != wire.OpRMWReply || string(r.Value) != tc.wantResult {
				t.Fatalf("reply %s %q, want RMW_REPLY %q", r.Op, r.Value, tc.wantResult)
			}
			for _, n := range e.owners(key) {
				invs := n.recorded(wire.OpInvalidate, key)[earlier[n.name]:]
				if tc.wantUpdate == readOnly {
					if len(invs) > 0 {
						t.Errorf("owner %s: a read-only command invalidated its copy: %+v", n.name, invs)
					}
					continue
				}
				if len(invs) == 0 {
					t.Errorf("owner %s: no INVALIDATE before the command", n.name)
					continue
				}
				up := n.waitFor(t, wire.OpUpdate, key, invs[len(invs)-1].version)
				if up.status != tc.wantUpdate || string(up.value) != tc.wantValue {
					t.Errorf("owner %s: UPDATE %s %q, want %s %q", n.name, up.status, up.value, tc.wantUpdate, tc.wantValue)
				}
			}
		})
	}
}

// TestCommandRefused: a command the table does not list, or with a wrong
// number of arguments, is refused without reaching Redis.
func TestCommandRefused(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "refused")
	e.mustStatus(wire.OpPut, key, []byte("kept"), wire.StatusOK)
	for _, args := range [][]string{{"flushall"}, {"del"}, {"eval", "return 1", "0"}, {"hset", "f"}, {"type", "extra"}} {
		e.mustStatus(wire.OpRMW, key, commandRMW(args...), wire.StatusInternal)
	}
	if got := e.redisValue(key); got != "kept" {
		t.Fatalf("Redis holds %q after refused commands, want kept", got)
	}
}

// TestCommandAppliedOnce: a retransmitted HINCRBY that reaches a
// restarted shim gets the first run's reply; the field moves once. A
// read-only command leaves no mark: sent again, it runs again.
func TestCommandAppliedOnce(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "hcounter")
	raw := newRawConn(t)
	dg := encodeWrite(t, wire.OpRMW, 21, key, string(commandRMW("hincrby", "n", "3")))
	raw.send(e.shim.Addr(), dg)
	if r := raw.receive(); r.Status != wire.StatusOK || string(r.Value) != ":3\r\n" {
		t.Fatalf("HINCRBY 3: %s %q", r.Status, r.Value)
	}
	e.restart()
	raw.send(e.shim.Addr(), dg)
	if r := raw.receive(); r.Status != wire.StatusOK || string(r.Value) != ":3\r\n" {
		t.Fatalf("retransmit after a restart: %s %q, want the first run's :3", r.Status, r.Value)
	}
	if got := e.rdb.HGet(context.Background(), key, "n").Val(); got != "3" {
		t.Fatalf("the field holds %q after one HINCRBY 3 sent twice", got)
	}
	read := encodeWrite(t, wire.OpRMW, 22, key, string(commandRMW("hget", "n")))
	raw.send(e.shim.Addr(), read)
	if r := raw.receive(); string(r.Value) != "$1\r\n3\r\n" {
		t.Fatalf("HGET: %s %q", r.Status, r.Value)
	}
	e.rdb.HSet(context.Background(), key, "n", "4")
	e.restart()
	raw.send(e.shim.Addr(), read)
	if r := raw.receive(); string(r.Value) != "$1\r\n4\r\n" {
		t.Fatalf("HGET sent again after a restart: %s %q, want it run again ($1 4)", r.Status, r.Value)
	}
}

// TestReadsOfAHash: the shim answers a GET of a hash with
// StatusWrongType (Redis' WRONGTYPE) and refuses to fill a cache with it.
func TestReadsOfAHash(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "hash")
	if err := e.rdb.HSet(context.Background(), key, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	e.mustStatus(wire.OpGet, key, nil, wire.StatusWrongType)
	owner := e.owners(key)[0]
	if r := e.callFrom(owner.ep, wire.OpFetch, key, nil); r.Status != wire.StatusUncacheable || len(r.Value) != 0 {
		t.Fatalf("FETCH of a hash: %s %q, want uncacheable", r.Status, r.Value)
	}
	if st := e.shim.Stats(); st.RedisErrors != 0 {
		t.Errorf("stats %+v: a hash counted as a Redis error", st)
	}
}
