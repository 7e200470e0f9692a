package shim

import (
	"fmt"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/placement/partmap"
)

// TestStoppedNodeReleasedByItsLease checks fencing without the control
// plane, with a real cache node that holds the shim's leases: once the
// node caches a key and stops, a write of the key completes after the
// lease the shim granted it ends, with no map change. A node that holds
// no lease of the shim (ShimLeases off) would keep the write waiting for
// the map until its timeout.
func TestStoppedNodeReleasedByItsLease(t *testing.T) {
	const lease = 200 * time.Millisecond
	name := partmap.MemberName(testCluster, "upper", 0)
	n, err := cachenode.New(cachenode.Config{
		Layer: "upper", Member: name, Transport: transport.Config{Addr: "127.0.0.1:0"},
		Interval: -1, Detector: hotkey.Config{Threshold: 1}, BackendTimeout: patience,
		Lease:      patience, // the map lease: renewed once below, it outlasts the test
		ShimLeases: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	e := newEnv(t, withMemberAddress(name, n.Addr()), withConfig(func(c *Config) {
		c.Lease, c.InvalidateTimeout = lease, patience
	}))
	if err := n.SetMap(e.place); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	n.Renew(time.Now(), e.place.Version())

	var key string
	for i := range 1000 { // a key whose upper owner is the node
		key = e.key(0, fmt.Sprintf("leased%d", i))
		if e.place.Owner(0, key) == 0 {
			break
		}
	}
	if err := e.rdb.Set(t.Context(), key, "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the key cached under the shim's lease", func() bool {
		callNode(t, e, n.Addr(), wire.OpGet, key) // a miss makes it hot
		n.InsertHot(t.Context())                  // the first asks for the grant
		_, _, valid, _ := n.Cached(key)
		return valid
	})
	if st := e.shim.Stats(); st.LeaseGrants == 0 {
		t.Fatalf("shim stats %+v: no lease granted", st)
	}

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if r := e.mustStatus(wire.OpPut, key, []byte("v2"), wire.StatusOK); r.ValueVersion == 0 {
		t.Fatal("PUT acknowledged without a version")
	}
	if st := e.shim.Stats(); st.LeaseReleases != 1 || st.CoherenceFailures != 0 {
		t.Fatalf("%d released by lease, %d refused; want 1, 0", st.LeaseReleases, st.CoherenceFailures)
	}
	if e.m.Layers[0].Members[0].State != partmap.Active {
		t.Fatal("the map changed")
	}
}
