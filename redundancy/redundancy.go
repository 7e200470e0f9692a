// Package redundancy is the redundancy control of the design brief: from
// what the data plane reports of its hot keys it decides the copies the
// partition map gives each of them (partmap.KeyCopies), by the
// cost-and-benefit rule of package placement/copies — none for a key whose
// writes cost its storage server more than its copies save, fewer than one
// per layer where the coherence work of writes limits a server, more than
// one per layer for a key hotter than half a cache node (DistCache §3.2,
// Theorem 1's precondition). The operator and standalone mode's control
// loop both run it; it imports no Kubernetes package.
//
// A round of reports (Reports) gives, per cache node, the hits of each key
// it caches, and per storage shim the reads and writes of its most
// requested keys and its total work. A key's read rate is the sum of its
// hits at every node and of the reads its shim served (misses and direct
// reads); its write rate is its shim's. Each storage server's load besides
// the reported keys is its shim's work less what those keys cost it under
// the current map. Plan hands these to copies.Decide with the placement's
// owners (and the upper layer's ring successors for extra copies) and
// returns the decision as the copies of the next map version: only the
// keys whose holders differ from one copy per layer on their owners. A
// decision that would only take copies below one per layer keeps the
// map's copies unless it lets the placement carry more than the
// hysteresis more load (keepUnlessBetter), so that the noise of the
// reports does not publish a map version at every round.
package redundancy

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/distcache/distcache/placement/copies"
	"github.com/distcache/distcache/placement/partmap"
)

// Defaults applied to zero fields of Config.
const (
	DefaultCoherenceCost = 1
	DefaultHysteresis    = 0.2
	DefaultMaxKeys       = 1024
	DefaultMinShare      = 0.02
)

// Config is the cost model and the bounds of Plan.
type Config struct {
	// NodeCapacity and ServerCapacity are the requests per second a cache
	// node and a storage server serve.
	NodeCapacity, ServerCapacity float64
	// CoherenceCost is a storage server's work per cached copy of a key
	// and write of it, in requests (default 1).
	CoherenceCost float64
	// MaxCopies bounds one key's copies (default: every member of the
	// upper layer and one per other layer).
	MaxCopies int
	// Slots is the number of keys a cache node holds (0: no limit).
	Slots int
	// Hysteresis is the band around each threshold inside which a key
	// keeps its copies (default 0.2).
	Hysteresis float64
	// MaxKeys bounds the keys considered, hottest first (default 1024, at
	// most partmap.MaxKeyCopies).
	MaxKeys int
	// MinRate is the requests per second below which a key is left with
	// one copy per layer (default DefaultMinShare of ServerCapacity): a key
	// that light costs or saves its server too little to be worth a map
	// version.
	MinRate float64
	// Headroom, when positive, is the growth of the reported load the
	// decision prepares for, at most (copies.Model.MaxRate): copies that
	// only a larger load would need are not made. 0: no bound — the
	// decision makes the copies that the most load the placement can
	// carry needs, so that a burst finds them in place and the decision
	// does not depend on how busy the cluster happens to be.
	Headroom float64
}

func (c Config) withDefaults(p *partmap.Placement) Config {
	if c.CoherenceCost == 0 {
		c.CoherenceCost = DefaultCoherenceCost
	}
	if c.Hysteresis == 0 {
		c.Hysteresis = DefaultHysteresis
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	c.MaxKeys = min(c.MaxKeys, partmap.MaxKeyCopies)
	if c.MinRate == 0 {
		c.MinRate = DefaultMinShare * c.ServerCapacity
	}
	if c.MaxCopies == 0 && p.Layers() > 0 {
		c.MaxCopies = len(p.Map().Layers[0].Members) + p.Layers() - 1
	}
	c.MaxCopies = min(max(c.MaxCopies, 1), partmap.MaxCopiesPerKey)
	return c
}

// KeyRate is a key's requests per second.
type KeyRate struct {
	Key           string
	Reads, Writes float64
}

// ShardReport is what a storage shim reports.
type ShardReport struct {
	// Keys are its most requested keys' rates.
	Keys []KeyRate
	// Load is all the work it did per second, coherence included (0:
	// unknown, taken as the sum of Keys).
	Load float64
}

// Reports is one round of the data plane's reports.
type Reports struct {
	// Hits lists each cache node's report: the hits per second of the
	// keys it caches (KeyRate.Reads).
	Hits [][]KeyRate
	// Shards are the storage shims' reports by shard name.
	Shards map[string]ShardReport
}

// Result is the outcome of Plan.
type Result struct {
	// Copies are the decided copies for the next map version, sorted by
	// key (partmap.Map.WithCopies).
	Copies []partmap.KeyCopies
	// ByCopies counts the keys considered by the number of copies they
	// got: ByCopies[c] keys have c copies.
	ByCopies []int
	// Rate is the factor by which the reported load can grow before a
	// storage server is at capacity under the decision (copies.Decision).
	Rate float64
}

// CopiesBuckets names the buckets of Result.Buckets, as the metrics
// label them.
var CopiesBuckets = [4]string{"0", "1", "2", "3+"}

// Buckets counts the keys considered by their copies: none, one, two,
// three or more.
func (r Result) Buckets() [4]int {
	var by [4]int
	for c, n := range r.ByCopies {
		by[min(c, 3)] += n
	}
	return by
}

// Plan decides the copies of the reported keys under the current
// placement p.
func Plan(cfg Config, p *partmap.Placement, r Reports) (Result, error) {
	if p.Layers() == 0 {
		return Result{}, errors.New("cannot plan copies: the map has no cache layer")
	}
	cfg = cfg.withDefaults(p)
	servers, index := shardIndex(p.Map())
	nodes := newMapNodes(p)
	keys, now := aggregate(p, nodes, r, index, cfg)
	base := baseLoads(r, keys, servers, index, cfg.CoherenceCost)
	model := copies.Model{
		NodeCapacity:   cfg.NodeCapacity,
		ServerCapacity: cfg.ServerCapacity,
		CoherenceCost:  cfg.CoherenceCost,
		NodeWriteCost:  2,
		MaxCopies:      cfg.MaxCopies,
		Slots:          cfg.Slots,
		Hysteresis:     cfg.Hysteresis,
		MaxRate:        cfg.Headroom,
	}
	d, err := copies.Decide(model, keys, base, nodes)
	if err != nil {
		return Result{}, fmt.Errorf("cannot plan copies: %w", err)
	}
	if d, err = keepUnlessBetter(model, keys, base, nodes, now, d); err != nil {
		return Result{}, fmt.Errorf("cannot plan copies: %w", err)
	}
	res := Result{ByCopies: d.Copies(), Rate: d.Rate}
	var owners []partmap.Candidate
	for i, k := range keys {
		owners = p.Owners(k.Name, owners[:0])
		if nodes.same(d.Holders[i], owners) {
			continue
		}
		kc := partmap.KeyCopies{Key: []byte(k.Name)}
		for _, v := range d.Holders[i] {
			kc.Members = append(kc.Members, nodes.name(v))
		}
		res.Copies = append(res.Copies, kc)
	}
	slices.SortFunc(res.Copies, func(a, b partmap.KeyCopies) int { return cmp.Compare(string(a.Key), string(b.Key)) })
	return res, nil
}

// shardIndex numbers the storage shards of m, rack by rack.
func shardIndex(m *partmap.Map) (servers int, index map[string]int) {
	index = map[string]int{}
	for _, rack := range m.Storage.Racks {
		for _, sh := range rack.Shards {
			index[sh.Name] = servers
			servers++
		}
	}
	return servers, index
}

// serverOf is the index of key's storage shard.
func serverOf(p *partmap.Placement, key string, index map[string]int) int {
	r, s := p.Shard(key)
	return index[p.Map().Storage.Racks[r].Shards[s].Name]
}

// aggregate sums every report's rates per key and returns the hottest
// cfg.MaxKeys keys of at least cfg.MinRate, each with its server and its
// number of copies under p, and the nodes that hold those copies.
func aggregate(p *partmap.Placement, nodes *mapNodes, r Reports, index map[string]int, cfg Config) (keys []copies.Key, now [][]int) {
	sum := map[string]*KeyRate{}
	add := func(k KeyRate) {
		if s, ok := sum[k.Key]; ok {
			s.Reads += k.Reads
			s.Writes += k.Writes
			return
		}
		sum[k.Key] = &k
	}
	for _, node := range r.Hits {
		for _, k := range node {
			add(KeyRate{Key: k.Key, Reads: k.Reads})
		}
	}
	for _, sh := range r.Shards {
		for _, k := range sh.Keys {
			add(k)
		}
	}
	var rates []KeyRate
	for _, k := range sum {
		if k.Key != "" && len(k.Key) <= partmap.MaxCopiesKeyLen && k.Reads+k.Writes >= cfg.MinRate {
			rates = append(rates, *k)
		}
	}
	slices.SortFunc(rates, func(a, b KeyRate) int {
		return cmp.Or(cmp.Compare(b.Reads+b.Writes, a.Reads+a.Writes), cmp.Compare(a.Key, b.Key))
	})
	rates = rates[:min(len(rates), cfg.MaxKeys)]
	keys = make([]copies.Key, len(rates))
	now = make([][]int, len(rates))
	var buf []partmap.Candidate
	for i, k := range rates {
		buf = p.Candidates(k.Key, buf[:0])
		for _, c := range buf {
			now[i] = append(now[i], nodes.index(c))
		}
		keys[i] = copies.Key{Name: k.Key, Reads: k.Reads, Writes: k.Writes, Server: serverOf(p, k.Key, index), Now: len(buf)}
	}
	return keys, now
}

// baseLoads is each storage server's load besides keys: its shim's work
// less what keys cost it now (their reads that reached it, and their
// writes with the coherence work of their current copies).
func baseLoads(r Reports, keys []copies.Key, servers int, index map[string]int, gamma float64) []float64 {
	base := make([]float64, servers)
	shimRates := map[string]KeyRate{}
	for name, sh := range r.Shards {
		i, ok := index[name]
		if !ok {
			continue
		}
		load := sh.Load
		if load == 0 {
			for _, k := range sh.Keys {
				load += k.Reads + k.Writes
			}
		}
		base[i] = load
		for _, k := range sh.Keys {
			shimRates[k.Key] = k
		}
	}
	for _, k := range keys {
		seen := shimRates[k.Name]
		base[k.Server] -= seen.Reads + seen.Writes*(1+gamma*float64(k.Now))
	}
	for i := range base {
		base[i] = max(base[i], 0)
	}
	return base
}
