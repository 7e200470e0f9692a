package sim

import (
	"errors"
	"fmt"

	"github.com/distcache/distcache/placement/partmap"
)

// Config describes one simulated deployment and workload. Capacities are in
// units of one storage server's throughput T; a cache node's capacity is the
// aggregate throughput of one rack (ServersPerRack·T), as in §6.1 of the
// paper.
type Config struct {
	// Spines is the number of upper-layer cache nodes.
	Spines int
	// Racks is the number of storage racks; each has one lower-layer (leaf)
	// cache node bound to it.
	Racks int
	// ServersPerRack is the number of storage servers per rack.
	ServersPerRack int
	// CachePerNode is the number of hot objects each cache node holds.
	CachePerNode int
	// Keys is the size of the key space.
	Keys uint64
	// Skew is the Zipf exponent of the query distribution (0 is uniform).
	Skew float64
	// WriteRatio is the fraction of queries that are writes.
	WriteRatio float64
	// CoherenceCost is the work, in queries, a storage server spends per
	// cached copy of a key when it runs the two-phase update for a write:
	// sending an invalidation and an update to the copy and receiving both
	// acknowledgements (§4.3). A cache node spends one query's work on each
	// of those two messages.
	CoherenceCost float64
	// ExactKeys is the number of hottest ranks placed individually; the
	// remaining probability mass is spread evenly over the storage servers
	// (0 chooses max(2^20, 64·servers), capped at Keys).
	ExactKeys uint64

	// MaxCopies bounds the copies of one key under the Adaptive strategy
	// (0: one on every spine and the leaf).
	MaxCopies int

	Routing RoutingConfig
	// Map, when set, is the partition map to evaluate instead of the one
	// built from Seed: a real cluster's map, to predict that cluster (the
	// standalone benchmark does). It must have a spine layer of Spines
	// members and a leaf layer bound to Racks racks of ServersPerRack
	// shards; members marked Failed are left out as in the data plane.
	Map *partmap.Map `json:"-"`
	// Seed makes a run reproducible: it seeds the key scrambling, the
	// placement and the query stream.
	Seed uint64
}

// RoutingConfig describes how the simulated senders learn loads. Times are
// counted in query arrivals of the whole system, the simulator's clock.
type RoutingConfig struct {
	// Queries is the length of the sampled query stream that drives the
	// power-of-k router.
	Queries int
	// Warmup is the number of initial queries whose routing is not counted.
	Warmup int
	// Clients is the number of independent senders (client ToRs), each with
	// its own load table learned only from its own replies.
	Clients int
	// TelemetryDelay is the time between a cache node stamping its load into
	// a reply and the sender reading it.
	TelemetryDelay int
	// LoadWindow is the time constant of the load a cache node reports.
	LoadWindow int
	// StaleAfter and HalfLife age loads not refreshed for a while toward
	// zero (0 disables aging).
	StaleAfter int
	HalfLife   int
	// StallAfter is the client's hedge delay (client.Config.HedgeDelay):
	// a read its node has not answered after it is also sent to the key's
	// other candidate, and a node that has answered nothing sent in the
	// last StallAfter is passed over (routing.WithStallAfter). 0 disables
	// both: a read sent to a dead node is lost.
	StallAfter int
	// AttemptTimeout is how long a client counts a read its node never
	// answers as in flight (client.Config.AttemptTimeout).
	AttemptTimeout int
	// Zones spreads the clients over zones "zone-0" … (client c in zone
	// c mod Zones); a read of a node whose map member is in another zone
	// is counted cross-zone. 0: clients have no zone.
	Zones int
	// ZoneMargin is the clients' routing.WithRemoteMargin; negative: the
	// router does not tell zones apart.
	ZoneMargin float64
}

// Default returns the paper's default setup (§6.2): 32 spine nodes, 32 racks
// of 32 servers, 100 hot objects per cache node, Zipf-0.99 over 100 million
// keys, read-only.
func Default() Config {
	return Config{
		Spines:         32,
		Racks:          32,
		ServersPerRack: 32,
		CachePerNode:   100,
		Keys:           100_000_000,
		Skew:           0.99,
		CoherenceCost:  1,
		Routing: RoutingConfig{
			Queries:        4_000_000,
			Warmup:         200_000,
			Clients:        32,
			TelemetryDelay: 64,
			LoadWindow:     16_384,
			StaleAfter:     65_536,
			HalfLife:       65_536,
			// The data plane's ratios: a hedge after 40 round trips (20 ms
			// against 0.5 ms), an attempt timeout 12.5 hedge delays later.
			StallAfter:     2_560,
			AttemptTimeout: 32_000,
		},
		Seed: 1,
	}
}

// Quick shrinks c for a fast but still meaningful run: ten million keys and
// a quarter of the query stream.
func Quick(c Config) Config {
	c.Keys = min(c.Keys, 10_000_000)
	c.Routing.Queries = 1_000_000
	c.Routing.Warmup = 100_000
	return c
}

// Servers is the number of storage servers.
func (c Config) Servers() int { return c.Racks * c.ServersPerRack }

func (c Config) exactKeys() uint64 {
	e := c.ExactKeys
	if e == 0 {
		e = max(1<<20, 64*uint64(c.Servers()))
	}
	return min(e, c.Keys)
}

// Validate reports the first unusable setting.
func (c Config) Validate() error {
	switch {
	case c.Spines < 1 || c.Racks < 1 || c.ServersPerRack < 1:
		return fmt.Errorf("invalid simulation: need at least one spine, rack and server per rack (got %d, %d, %d)", c.Spines, c.Racks, c.ServersPerRack)
	case c.MaxCopies < 0:
		return fmt.Errorf("invalid simulation: max copies %d is negative", c.MaxCopies)
	case c.CachePerNode < 0:
		return fmt.Errorf("invalid simulation: cache per node %d is negative", c.CachePerNode)
	case c.Keys < 1:
		return errors.New("invalid simulation: empty key space")
	case c.WriteRatio < 0 || c.WriteRatio > 1:
		return fmt.Errorf("invalid simulation: write ratio %v outside [0, 1]", c.WriteRatio)
	case c.CoherenceCost < 0:
		return fmt.Errorf("invalid simulation: coherence cost %v is negative", c.CoherenceCost)
	case c.Routing.Queries < 1 || c.Routing.Warmup < 0 || c.Routing.Warmup >= c.Routing.Queries:
		return fmt.Errorf("invalid simulation: query stream of %d with warm-up %d", c.Routing.Queries, c.Routing.Warmup)
	case c.Routing.Clients < 1 || c.Routing.TelemetryDelay < 0 || c.Routing.LoadWindow < 1:
		return fmt.Errorf("invalid simulation: routing needs clients >= 1, delay >= 0, window >= 1 (got %d, %d, %d)",
			c.Routing.Clients, c.Routing.TelemetryDelay, c.Routing.LoadWindow)
	case c.Routing.StallAfter < 0 || (c.Routing.StallAfter > 0 && c.Routing.AttemptTimeout < c.Routing.StallAfter):
		return fmt.Errorf("invalid simulation: stall-after %d needs an attempt timeout at least as long (got %d)", c.Routing.StallAfter, c.Routing.AttemptTimeout)
	case c.Routing.StaleAfter < 0 || (c.Routing.StaleAfter > 0 && c.Routing.HalfLife < 1):
		return fmt.Errorf("invalid simulation: aging stale-after %d needs a positive half-life (got %d)", c.Routing.StaleAfter, c.Routing.HalfLife)
	}
	return c.validateMap()
}

// validateMap checks that Map has the simulated shape.
func (c Config) validateMap() error {
	m := c.Map
	if m == nil {
		return nil
	}
	switch {
	case len(m.Layers) != 2 || m.Layers[0].BoundToRacks || !m.Layers[1].BoundToRacks:
		return errors.New("invalid simulation: the map must have a spine layer and a leaf layer bound to the racks")
	case len(m.Layers[0].Members) != c.Spines:
		return fmt.Errorf("invalid simulation: the map's spine layer has %d members, not %d", len(m.Layers[0].Members), c.Spines)
	case len(m.Storage.Racks) != c.Racks:
		return fmt.Errorf("invalid simulation: the map has %d racks, not %d", len(m.Storage.Racks), c.Racks)
	}
	for _, r := range m.Storage.Racks {
		if len(r.Shards) != c.ServersPerRack {
			return fmt.Errorf("invalid simulation: rack %s has %d shards, not %d", r.Name, len(r.Shards), c.ServersPerRack)
		}
	}
	return nil
}
