package client

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// TestDirectWrites checks writes where the map lets the client write
// Redis itself (Shard.DirectWrites): a key that no cache may hold is
// written in Redis without a request to its shim; a key in the shard's
// set of keys a cache may hold goes to the shim, Redis untouched; an
// INCR of text is ErrNotInteger from Redis; without DirectWrites in the
// map every write goes to the shim.
func TestDirectWrites(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	for k, v := range map[string]string{"held": "7", "text": "abc"} {
		if err := rdb.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.SAdd(ctx, heldkeys.Key, "held").Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		direct    bool // Shard.DirectWrites
		incr      bool // IncrBy 5, else Put "v"
		key       string
		wantErr   error
		wantValue string // in Redis after
		wantShim  int    // requests at the shim
	}{
		{name: "SET of a free key", direct: true, key: "s1", wantValue: "v"},
		{name: "INCR of a free key", direct: true, incr: true, key: "n1", wantValue: "5"},
		{name: "SET of a held key", direct: true, key: "held", wantValue: "7", wantShim: 1},
		{name: "INCR of a held key", direct: true, incr: true, key: "held", wantValue: "7", wantShim: 1},
		{name: "INCR of text", direct: true, incr: true, key: "text", wantErr: ErrNotInteger, wantValue: "abc"},
		{name: "map without direct writes", key: "s2", wantShim: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := directCluster(t, srv.Addr())
			m := c.m.Clone()
			m.Storage.Racks[0].Shards[0].DirectWrites = tt.direct
			c.m, c.p = m, compile(t, m)
			cl := newTestClient(t, c.p, withAttempts(2))
			var err error
			if tt.incr {
				var n int64
				n, err = cl.IncrBy(ctx, tt.key, 5)
				if want := map[int]int64{0: 5, 1: 42}[tt.wantShim]; err == nil && n != want {
					t.Errorf("IncrBy = %d, want %d", n, want)
				}
			} else {
				err = cl.Put(ctx, tt.key, []byte("v"))
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("write: %v, want %v", err, tt.wantErr)
			}
			got, gerr := rdb.Get(ctx, tt.key).Result()
			if errors.Is(gerr, redis.Nil) {
				got = ""
			}
			if got != tt.wantValue {
				t.Errorf("Redis has %s = %q, want %q", tt.key, got, tt.wantValue)
			}
			if n := len(c.shims[0][0].requests()); n != tt.wantShim {
				t.Errorf("the shim got %d requests, want %d", n, tt.wantShim)
			}
			s := cl.Stats()
			if wantHeld := uint64(tt.wantShim); tt.direct && s.HeldWrites != wantHeld {
				t.Errorf("HeldWrites %d, want %d", s.HeldWrites, wantHeld)
			}
		})
	}
}
