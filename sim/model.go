package sim

import (
	"fmt"

	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/workload"
)

// Layer indexes in the simulated partition map.
const (
	spineLayer = 0
	leafLayer  = 1
)

// model is one configuration's key universe placed by the real placement
// core: the hottest ExactKeys ranks individually, the rest as an even
// spread of their total probability over the servers.
type model struct {
	cfg      Config
	zipf     *workload.Zipf
	pmap     *partmap.Map
	place    *partmap.Placement
	keys     []string  // key name of each exact rank
	prob     []float64 // query probability of each exact rank
	server   []int32   // storage server of each exact rank
	spine    []int32   // spine owner of each exact rank
	leaf     []int32   // leaf owner of each exact rank
	tailMass float64   // probability of all ranks >= len(prob)
}

// spec is the topology of cfg as the operator would build it from a
// CacheCluster: a spine layer and a leaf layer bound to the storage racks.
func (c Config) spec() partmap.Spec {
	return partmap.Spec{
		Cluster:       "sim",
		Racks:         c.Racks,
		ShardsPerRack: c.ServersPerRack,
		StorageSeed:   hashing.Derive(c.Seed, "storage"),
		Layers: []partmap.LayerSpec{
			{Name: "spine", Nodes: c.Spines, Seed: hashing.Derive(c.Seed, "spine"), Capacity: float64(c.ServersPerRack)},
			{Name: "leaf", BoundToRacks: true, Seed: hashing.Derive(c.Seed, "leaf"), Capacity: float64(c.ServersPerRack)},
		},
	}
}

func newModel(cfg Config) (*model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	z, err := workload.NewZipf(cfg.Keys, cfg.Skew)
	if err != nil {
		return nil, fmt.Errorf("cannot build simulation model: %w", err)
	}
	scr, err := workload.NewScrambler(cfg.Keys, hashing.Derive(cfg.Seed, "scramble"))
	if err != nil {
		return nil, fmt.Errorf("cannot build simulation model: %w", err)
	}
	pm := cfg.Map
	if pm == nil {
		if pm, err = partmap.Build(cfg.spec(), nil); err != nil {
			return nil, fmt.Errorf("cannot build simulation model: %w", err)
		}
	}
	m := &model{cfg: cfg, zipf: z, pmap: pm}
	n := cfg.exactKeys()
	m.keys = make([]string, n)
	m.prob = make([]float64, n)
	m.server = make([]int32, n)
	for k := range n {
		m.keys[k] = workload.Key(scr.Permute(k))
		m.prob[k] = z.Probability(k)
	}
	m.tailMass = max(0, 1-z.CumulativeTop(n))
	if err := m.setMap(pm); err != nil {
		return nil, err
	}
	for k, key := range m.keys {
		rack, shard := m.place.Shard(key)
		m.server[k] = int32(rack*cfg.ServersPerRack + shard)
	}
	return m, nil
}

// setMap compiles pm and recomputes every exact rank's cache owners, as the
// data plane does when the controller publishes a new map version.
func (m *model) setMap(pm *partmap.Map) error {
	p, err := partmap.Compile(pm)
	if err != nil {
		return fmt.Errorf("cannot place simulated keys: %w", err)
	}
	m.pmap, m.place = pm, p
	if m.spine == nil {
		m.spine = make([]int32, len(m.keys))
		m.leaf = make([]int32, len(m.keys))
	}
	for k, key := range m.keys {
		m.spine[k] = int32(p.Owner(spineLayer, key))
		m.leaf[k] = int32(p.Owner(leafLayer, key))
	}
	return nil
}

// nodes is the number of cache nodes: spines first, then leaves.
func (m *model) nodes() int { return m.cfg.Spines + m.cfg.Racks }

// leafNode is the cache-node index of leaf member i.
func (m *model) leafNode(i int32) int32 { return int32(m.cfg.Spines) + i }

// member is cache node v's entry in the current partition map.
func (m *model) member(v int) *partmap.Member {
	if v < m.cfg.Spines {
		return &m.pmap.Layers[spineLayer].Members[v]
	}
	return &m.pmap.Layers[leafLayer].Members[v-m.cfg.Spines]
}

// hottest returns, for every cache node, the first c exact ranks (the
// hottest keys) it owns according to owner, which gives a rank's node or -1.
// This is the steady state of each node's hot-key detector: it caches the
// hottest keys of its own partition.
func (m *model) hottest(c int, owner func(k int) int32) [][]int32 {
	sets := make([][]int32, m.nodes())
	full := 0
	for k := range m.keys {
		if full == len(sets) {
			break
		}
		v := owner(k)
		if v < 0 || len(sets[v]) >= c {
			continue
		}
		sets[v] = append(sets[v], int32(k))
		if len(sets[v]) == c {
			full++
		}
	}
	return sets
}
