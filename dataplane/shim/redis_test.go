package shim

import (
	"context"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/internal/testing/redistest"
)

func TestRedisDown(t *testing.T) {
	e := newEnv(t, withRedis(redistest.WithAppendOnly()))
	durable, lost := e.key(0, "durable"), e.key(0, "lost")
	ctx := context.Background()
	first := e.mustStatus(wire.OpPut, durable, []byte("acknowledged"), wire.StatusOK)
	if err := e.shim.Healthy(ctx); err != nil {
		t.Fatalf("Healthy with Redis up: %v", err)
	}

	e.redis.Stop()
	e.mustStatus(wire.OpPut, lost, []byte("never"), wire.StatusUnavailable)
	e.mustStatus(wire.OpDel, durable, nil, wire.StatusUnavailable)
	e.mustStatus(wire.OpGet, durable, nil, wire.StatusUnavailable)
	if r := e.callFrom(e.owners(durable)[0].ep, wire.OpFetch, durable, nil); r.Status != wire.StatusUnavailable {
		t.Errorf("FETCH with Redis down: %s", r.Status)
	}
	if err := e.shim.Healthy(ctx); err == nil {
		t.Error("Healthy with Redis down")
	}
	if st := e.shim.Stats(); st.RedisErrors < 4 {
		t.Errorf("RedisErrors = %d, want at least 4", st.RedisErrors)
	}

	e.redis.Restart()
	eventually(t, "the shim reaching Redis again", func() bool { return e.shim.Healthy(ctx) == nil })
	if r := e.mustStatus(wire.OpGet, durable, nil, wire.StatusOK); string(r.Value) != "acknowledged" {
		t.Fatalf("acknowledged value lost: %q", r.Value)
	}
	e.mustStatus(wire.OpGet, lost, nil, wire.StatusNotFound)
	again := e.mustStatus(wire.OpPut, lost, []byte("now"), wire.StatusOK)
	if again.ValueVersion <= first.ValueVersion {
		t.Errorf("version %d after the outage, not above %d", again.ValueVersion, first.ValueVersion)
	}
	if r := e.mustStatus(wire.OpGet, lost, nil, wire.StatusOK); string(r.Value) != "now" {
		t.Errorf("GET after the outage = %q", r.Value)
	}
}
