package client

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// getMany runs GetMany over keys.
func getMany(t *testing.T, c *Client, keys []string) ([]Result, []error) {
	t.Helper()
	res, errs := make([]Result, len(keys)), make([]error, len(keys))
	c.GetMany(testCtx(t), keys, res, errs)
	return res, errs
}

// TestGetManyAnswersAsGet checks that each read of GetMany returns what
// GetResult returns for its key: a cache node's copy, the shim's value
// (Bypass), not-found, or a bad key's error.
func TestGetManyAnswersAsGet(t *testing.T) {
	cl := newCluster(t, withNodesPerLayer(2), withShards(1, 2))
	names := map[uint32]string{}
	for _, row := range cl.nodes {
		for _, n := range row {
			names[n.id] = n.name
		}
	}
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("k%d", i))
		if i%3 != 0 {
			cl.store(keys[i], "stored:"+keys[i])
		}
	}
	keys = append(keys, "", strings.Repeat("x", 1000))
	tests := []struct {
		name string
		opts []clientOpt
		want func(key string, r Result) string // "" when r is right
	}{
		{"from the caches", nil, func(_ string, r Result) string {
			if !r.Hit || string(r.Value) != "cached:"+names[r.Node] || r.Layer < 0 {
				return fmt.Sprintf("%q from node %d layer %d (hit %v), want node %d's copy", r.Value, r.Node, r.Layer, r.Hit, r.Node)
			}
			return ""
		}},
		{"bypassing them", []clientOpt{withBypass()}, func(key string, r Result) string {
			if r.Hit || string(r.Value) != "stored:"+key || r.Layer != -1 {
				return fmt.Sprintf("%q from layer %d (hit %v), want the shim's value", r.Value, r.Layer, r.Hit)
			}
			return ""
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, cl.p, tc.opts...)
			res, errs := getMany(t, c, keys)
			for i, key := range keys {
				one, oneErr := c.GetResult(testCtx(t), key)
				switch {
				case oneErr != nil || errs[i] != nil:
					if errs[i] == nil || oneErr == nil || errs[i].Error() != oneErr.Error() {
						t.Errorf("key %q: GetMany error %v, GetResult error %v", key, errs[i], oneErr)
					}
					if errors.Is(oneErr, ErrNotFound) && errs[i] != ErrNotFound { //nolint:errorlint // returned bare, as GetResult does
						t.Errorf("key %q: GetMany error %v, want ErrNotFound itself", key, errs[i])
					}
				case tc.want(key, res[i]) != "":
					t.Errorf("key %q: %s", key, tc.want(key, res[i]))
				case string(one.Value) != string(res[i].Value) && tc.opts != nil:
					t.Errorf("key %q: GetMany %q, GetResult %q", key, res[i].Value, one.Value)
				}
			}
			if s := c.Stats(); s.Gets != uint64(2*len(keys)) {
				t.Errorf("Stats().Gets = %d, want %d", s.Gets, 2*len(keys))
			}
		})
	}
}

// TestGetManyGoesOnAfterFirstAttempt checks that a read whose first
// attempt times out goes on as GetResult's does: here to the shim, the
// only node being silent.
func TestGetManyGoesOnAfterFirstAttempt(t *testing.T) {
	cl := newCluster(t, withLayers(1))
	cl.nodes[0][0].set(nodeSilent(true))
	keys := []string{"a", "b", "c"}
	for _, k := range keys {
		cl.store(k, "stored:"+k)
	}
	c := newTestClient(t, cl.p, withAttemptTimeout(50*time.Millisecond))
	res, errs := getMany(t, c, keys)
	for i, k := range keys {
		if errs[i] != nil || string(res[i].Value) != "stored:"+k || res[i].Layer != -1 {
			t.Errorf("key %q: %q from layer %d, %v; want the shim's value", k, res[i].Value, res[i].Layer, errs[i])
		}
	}
	if s := c.Stats(); s.Timeouts != uint64(len(keys)) || s.Retries < uint64(len(keys)) || s.Errors != 0 {
		t.Errorf("Stats() = %+v, want a timeout and a retry per key", s)
	}
}
