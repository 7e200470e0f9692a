package client

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// leafCluster is a map of one shard whose upper layer is two switches and
// lower layer one cache node, with fakes for every member, the shim and a
// client leaf. A fake switch listens on its read port of shard 0 (its
// address's port + 1); the fake leaf answers a GET on its read port as if
// the spine switch it chose had: with that switch's id and load.
type leafCluster struct {
	*cluster
	leaf     *fakeNode
	leafAddr netip.AddrPort // the client's Config.ClientLeaf
}

func newLeafCluster(t *testing.T) *leafCluster {
	t.Helper()
	m, err := partmap.Build(partmap.Spec{Cluster: "test", Racks: 1, ShardsPerRack: 1, Layers: []partmap.LayerSpec{
		{Name: "spine", Nodes: 2, Switch: true}, {Name: "l1", Nodes: 1},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{m: m}
	for l := range m.Layers {
		var row []*fakeNode
		for i := range m.Layers[l].Members {
			mb := &m.Layers[l].Members[i]
			n := startFakeNode(t, mb.Name, mb.ID)
			n.set(nodeLoad(1))
			a := n.ep.Addr()
			if m.Layers[l].Switch {
				a = netip.AddrPortFrom(a.Addr(), a.Port()-1) // its read port of shard 0 is a.Port()+1
			}
			mb.Address = a.String()
			row = append(row, n)
		}
		c.nodes = append(c.nodes, row)
	}
	sh := &m.Storage.Racks[0].Shards[0]
	s := startFakeShim(t, sh.Name)
	sh.Address = s.ep.Addr().String()
	c.shims = [][]*fakeShim{{s}}
	c.p = compile(t, m)
	lc := &leafCluster{cluster: c}
	lc.leaf = startFakeNode(t, "client-leaf", m.Layers[0].Members[0].ID)
	lc.leaf.set(nodeLoad(3))
	a := lc.leaf.ep.Addr()
	lc.leafAddr = netip.AddrPortFrom(a.Addr(), a.Port()-1)
	return lc
}

func (lc *leafCluster) client(t *testing.T, opts ...clientOpt) *Client {
	t.Helper()
	return newTestClient(t, lc.p, append([]clientOpt{func(c *Config) { c.ClientLeaf = lc.leafAddr }}, opts...)...)
}

// switchRequests is the GETs the fake switches received.
func (lc *leafCluster) switchRequests() int {
	return lc.nodes[0][0].requests() + lc.nodes[0][1].requests()
}

// TestReadsThroughTheClientLeaf: a GET of a key a switch can carry goes
// to the leaf's read port of the key's shard and its reply is the read's,
// counted as a hit in the layer of the switch that answered; a longer key,
// and every write, take the client's own path.
func TestReadsThroughTheClientLeaf(t *testing.T) {
	lc := newLeafCluster(t)
	c := lc.client(t)
	spine := lc.m.Layers[0].Members[0].ID
	r, err := c.GetResult(testCtx(t), "short")
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Value) != "cached:client-leaf" || !r.Hit || r.Layer != 0 || r.Node != spine {
		t.Fatalf("GET through the leaf: %+v", r)
	}
	if lc.leaf.requests() != 1 || lc.switchRequests() != 0 {
		t.Fatalf("leaf got %d GETs, the switches %d; want 1 and 0", lc.leaf.requests(), lc.switchRequests())
	}
	if st := c.Stats(); st.LeafReads != 1 || st.LeafFallbacks != 0 || st.Hits != 1 || st.LayerHits[0] != 1 {
		t.Fatalf("stats %+v", st)
	}
	if lf := lc.leaf.lastFlags(); lf != 0 {
		t.Errorf("GET through the leaf with flags %v, want none", lf)
	}

	long := strings.Repeat("k", wire.MaxSwitchKeyLen+1)
	if r, err := c.GetResult(testCtx(t), long); err != nil || r.Layer != 1 {
		t.Fatalf("GET of a %d-byte key: %+v, %v; want the cache node's answer", len(long), r, err)
	}
	if err := c.Put(testCtx(t), "short", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if lc.leaf.requests() != 1 {
		t.Fatalf("the leaf got %d GETs; a long key and a write must not go through it", lc.leaf.requests())
	}

	res, errs := make([]Result, 2), make([]error, 2)
	c.GetMany(testCtx(t), []string{"other", long}, res, errs)
	if errs[0] != nil || string(res[0].Value) != "cached:client-leaf" || errs[1] != nil || res[1].Layer != 1 {
		t.Fatalf("GetMany: %+v %v", res, errs)
	}
	if lc.leaf.requests() != 2 || c.Stats().LeafReads != 2 {
		t.Fatalf("GetMany sent %d GETs through the leaf, want 1", lc.leaf.requests()-1)
	}
}

// TestClientLeafTimeout: a leaf that does not answer within the attempt
// timeout is skipped, as a cache node that timed out, and the read goes
// on at the client's own choice; reads skip the leaf for FailBackoff and
// the first read after it probes the leaf again. GetMany does the same.
func TestClientLeafTimeout(t *testing.T) {
	for _, many := range []bool{false, true} {
		name := "GetResult"
		if many {
			name = "GetMany"
		}
		t.Run(name, func(t *testing.T) {
			lc := newLeafCluster(t)
			lc.leaf.set(nodeSilent(true))
			c := lc.client(t, withAttemptTimeout(50*time.Millisecond), withFailBackoff(time.Minute))
			get := func(key string) Result {
				t.Helper()
				if !many {
					r, err := c.GetResult(testCtx(t), key)
					if err != nil {
						t.Fatal(err)
					}
					return r
				}
				res, errs := make([]Result, 1), make([]error, 1)
				c.GetMany(testCtx(t), []string{key}, res, errs)
				if errs[0] != nil {
					t.Fatal(errs[0])
				}
				return res[0]
			}
			r := get("k1")
			if strings.HasSuffix(string(r.Value), "client-leaf") || lc.leaf.requests() != 1 {
				t.Fatalf("read with a silent leaf: %+v after %d GETs to the leaf", r, lc.leaf.requests())
			}
			if st := c.Stats(); st.LeafReads != 1 || st.LeafFallbacks != 1 || st.Timeouts < 1 {
				t.Fatalf("stats %+v", st)
			}
			get("k2")
			if lc.leaf.requests() != 1 {
				t.Fatalf("the leaf that timed out got %d GETs within its backoff", lc.leaf.requests())
			}
			now := fakeClock(c)
			now.Store(int64(2 * time.Minute))
			lc.leaf.set(nodeSilent(false))
			if r := get("k3"); string(r.Value) != "cached:client-leaf" || lc.leaf.requests() != 2 {
				t.Fatalf("after the backoff: %+v, %d GETs to the leaf; want it probed", r, lc.leaf.requests())
			}
		})
	}
}

// TestClientLeafRefusal: a refusal through the leaf sends the read on at
// the client's own choice, and the leaf is not skipped.
func TestClientLeafRefusal(t *testing.T) {
	lc := newLeafCluster(t)
	lc.leaf.set(nodeStatus(wire.StatusUnavailable))
	c := lc.client(t)
	for i, key := range []string{"k1", "k2"} {
		r, err := c.GetResult(testCtx(t), key)
		if err != nil || strings.HasSuffix(string(r.Value), "client-leaf") {
			t.Fatalf("read %s: %+v, %v", key, r, err)
		}
		if lc.leaf.requests() != i+1 {
			t.Fatalf("read %s: %d GETs to the leaf, want %d", key, lc.leaf.requests(), i+1)
		}
	}
	if st := c.Stats(); st.LeafFallbacks != 2 || st.Timeouts != 0 {
		t.Fatalf("stats %+v", st)
	}
	lc.leaf.set(nodeStatus(wire.StatusNotFound), nodeHit(false))
	if _, err := c.Get(testCtx(t), "k3"); err != ErrNotFound {
		t.Fatalf("NOT_FOUND through the leaf: %v", err)
	}
}

// TestNoClientLeafWithoutASwitch: a key whose switch candidates are all
// Fenced has no route through the leaf; its reads take the client's own
// path.
func TestNoClientLeafWithoutASwitch(t *testing.T) {
	lc := newLeafCluster(t)
	key := "k1"
	owner := lc.p.Owners(key, nil)[0]
	c := lc.client(t)
	c.SetMap(lc.withState(t, owner.Layer, owner.Member, partmap.Fenced))
	if _, err := c.GetResult(testCtx(t), key); err != nil {
		t.Fatal(err)
	}
	if lc.leaf.requests() != 0 {
		t.Fatalf("the leaf got %d GETs for a key whose spine is fenced", lc.leaf.requests())
	}
}
