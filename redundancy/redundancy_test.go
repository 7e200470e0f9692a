package redundancy

import (
	"fmt"
	"slices"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

// testPlacement is a map of 4 spines over 4 racks of 2 shards with a bound
// leaf layer, with copies decided as given.
func testPlacement(t *testing.T, decided ...partmap.KeyCopies) *partmap.Placement {
	t.Helper()
	m, err := partmap.Build(partmap.Spec{
		Cluster: "t", Racks: 4, ShardsPerRack: 2, StorageSeed: 3,
		Layers: []partmap.LayerSpec{
			{Name: "spine", Nodes: 4, Seed: 1, VirtualNodes: 64},
			{Name: "leaf", BoundToRacks: true, Seed: 2, VirtualNodes: 64},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m, _, err = m.WithCopies(decided); err != nil {
		t.Fatal(err)
	}
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// shardOf names key's storage shard under p.
func shardOf(p *partmap.Placement, key string) string {
	r, s := p.Shard(key)
	return p.Map().Storage.Racks[r].Shards[s].Name
}

// testConfig: nodes serve 1,000 requests a second, servers 100, no
// hysteresis.
func testConfig() Config {
	return Config{NodeCapacity: 1000, ServerCapacity: 100, MinRate: 1}
}

func decidedFor(res Result, key string) (partmap.KeyCopies, bool) {
	i := slices.IndexFunc(res.Copies, func(kc partmap.KeyCopies) bool { return string(kc.Key) == key })
	if i < 0 {
		return partmap.KeyCopies{}, false
	}
	return res.Copies[i], true
}

func TestPlan(t *testing.T) {
	p := testPlacement(t)
	owners := func(key string) []string {
		var out []string
		for _, c := range p.Owners(key, nil) {
			out = append(out, p.Map().Layers[c.Layer].Members[c.Member].Name)
		}
		return out
	}
	tests := []struct {
		name    string
		reports func() Reports
		key     string
		// headroom is Config.Headroom (0: no bound).
		headroom float64
		// want is the key's decided members; nil with decided false: no
		// entry, one copy per layer on its owners.
		decided bool
		want    func() []string
	}{{
		name:     "a moderately read key keeps one copy per layer when twice its load fits",
		key:      "warm",
		headroom: 2,
		reports: func() Reports {
			return Reports{Hits: [][]KeyRate{{{Key: "warm", Reads: 200}}, {{Key: "warm", Reads: 200}}}}
		},
	}, {
		name: "a key whose writes outweigh its reads is not cached",
		key:  "written",
		reports: func() Reports {
			return Reports{Shards: map[string]ShardReport{shardOf(p, "written"): {Keys: []KeyRate{{Key: "written", Reads: 5, Writes: 20}}}}}
		},
		decided: true,
		want:    func() []string { return nil },
	}, {
		name:     "a key read faster than a node serves gets copies on the spine ring",
		key:      "hot",
		headroom: 2,
		reports: func() Reports {
			// 700 reads a second, prepared for twice that: each copy
			// within half of 1,000 needs three copies.
			return Reports{Hits: [][]KeyRate{{{Key: "hot", Reads: 350}}, {{Key: "hot", Reads: 350}}}}
		},
		decided: true,
		want: func() []string {
			o := owners("hot")
			reps := p.Replicas(0, "hot", 2, nil)
			return append(o, p.Map().Layers[0].Members[reps[1]].Name)
		},
	}, {
		name: "without a headroom, the only key that bounds the cluster gets a copy on every spine",
		key:  "warm",
		reports: func() Reports {
			return Reports{Hits: [][]KeyRate{{{Key: "warm", Reads: 200}}, {{Key: "warm", Reads: 200}}}}
		},
		decided: true,
		want: func() []string {
			out := []string{owners("warm")[1]}
			for _, mb := range p.Map().Layers[0].Members {
				out = append(out, mb.Name)
			}
			return out
		},
	}, {
		name: "without a headroom, a busy shard bounds the copies: those its load factor needs",
		key:  "hot",
		reports: func() Reports {
			// A shard at half its capacity: the load can only double,
			// as with a headroom of 2.
			busy := p.Map().Storage.Racks[0].Shards[0].Name
			if busy == shardOf(p, "hot") {
				busy = p.Map().Storage.Racks[1].Shards[0].Name
			}
			return Reports{
				Hits:   [][]KeyRate{{{Key: "hot", Reads: 350}}, {{Key: "hot", Reads: 350}}},
				Shards: map[string]ShardReport{busy: {Load: 50}},
			}
		},
		decided: true,
		want: func() []string {
			o := owners("hot")
			reps := p.Replicas(0, "hot", 2, nil)
			return append(o, p.Map().Layers[0].Members[reps[1]].Name)
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Headroom = tt.headroom
			res, err := Plan(cfg, p, tt.reports())
			if err != nil {
				t.Fatal(err)
			}
			kc, ok := decidedFor(res, tt.key)
			if ok != tt.decided {
				t.Fatalf("decided %v (%+v), want %v; result %+v", ok, kc, tt.decided, res)
			}
			if !ok {
				return
			}
			got, want := slices.Sorted(slices.Values(kc.Members)), slices.Sorted(slices.Values(tt.want()))
			if !slices.Equal(got, want) {
				t.Errorf("members %v, want %v", got, want)
			}
		})
	}
}

// TestPlanKeepsAnUncachedKeyUncachedWithinTheBand: with hysteresis, a key
// the map already keeps uncached stays so while its reads exceed its
// writes' coherence cost by less than the band, and a new key with the
// same rates is cached.
func TestPlanKeepsAnUncachedKeyUncachedWithinTheBand(t *testing.T) {
	rates := func(p *partmap.Placement, key string) Reports {
		return Reports{Shards: map[string]ShardReport{shardOf(p, key): {Keys: []KeyRate{{Key: key, Reads: 11, Writes: 10}}}}}
	}
	cfg := testConfig()
	cfg.Hysteresis = 0.2
	p := testPlacement(t, partmap.KeyCopies{Key: []byte("k")})
	res, err := Plan(cfg, p, rates(p, "k"))
	if err != nil {
		t.Fatal(err)
	}
	if kc, ok := decidedFor(res, "k"); !ok || len(kc.Members) != 0 {
		t.Errorf("uncached key within the band: %+v, %v; want it kept uncached", kc, ok)
	}
	fresh := testPlacement(t)
	res, err = Plan(cfg, fresh, rates(fresh, "k"))
	if err != nil {
		t.Fatal(err)
	}
	if kc, ok := decidedFor(res, "k"); ok && len(kc.Members) == 0 {
		t.Errorf("a new key with the same rates was left uncached: %+v", kc)
	}
}

// TestPlanBounds: keys below MinRate are left alone, and at most MaxKeys
// keys are considered, hottest first.
func TestPlanBounds(t *testing.T) {
	p := testPlacement(t)
	var shards = map[string]ShardReport{}
	for i := range 20 {
		key := fmt.Sprint("w", i)
		sh := shards[shardOf(p, key)]
		sh.Keys = append(sh.Keys, KeyRate{Key: key, Writes: float64(i)}) // write-only: uncached when considered
		shards[shardOf(p, key)] = sh
	}
	cfg := testConfig()
	cfg.MinRate, cfg.MaxKeys = 5, 10
	res, err := Plan(cfg, p, Reports{Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kc := range res.Copies {
		got = append(got, string(kc.Key))
	}
	var want []string
	for i := 10; i < 20; i++ {
		want = append(want, fmt.Sprint("w", i))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("decided keys %v, want the 10 hottest of those at 5/s or more: %v", got, want)
	}
	if len(res.ByCopies) == 0 || res.ByCopies[0] != 10 {
		t.Errorf("ByCopies %v, want 10 keys with no copy", res.ByCopies)
	}
}

func TestPlanNeedsALayer(t *testing.T) {
	m, err := partmap.Build(partmap.Spec{Cluster: "t", Racks: 1, ShardsPerRack: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Plan(testConfig(), p, Reports{}); err == nil {
		t.Fatal("planned copies for a map without cache layers")
	}
}
