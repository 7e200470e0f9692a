package client

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
)

// Stats counts a Client's operations. Counters only increase.
type Stats struct {
	Gets     uint64 // Get/GetResult calls
	Hits     uint64 // reads served from a cache node's copy (FlagHit)
	Misses   uint64 // reads served without a cached copy (via a node or the shim)
	NotFound uint64 // reads answered NOT_FOUND
	Puts     uint64 // Put calls
	Deletes  uint64 // Delete calls
	RMWs     uint64 // read-modify-write calls (IncrBy, Append, GetSet, SetNX, SetXX)
	// Retries counts requests sent after the first of an operation: a read
	// trying another candidate or the shim, a write resent with a new
	// sequence number after COHERENCE_TIMEOUT.
	Retries uint64
	// Timeouts counts requests that got no reply in time: read attempts
	// (each marks its node failed for FailBackoff; a request a hedge
	// abandoned counts once its AttemptTimeout passed with no answer from
	// the node to it or to a later one) and writes whose context ended
	// (outcome unknown).
	Timeouts uint64
	// Errors counts operations that returned an error other than
	// ErrNotFound.
	Errors uint64
	// DirectReads counts GETs sent straight to a storage shim.
	DirectReads uint64
	// StorageReads counts reads of a key no cache held, and read-only
	// commands of package rediscmd, that the client sent to its shard's
	// Redis itself (spec.dataPlane.directReads);
	// StorageFailures those whose Redis could not be reached, which asked
	// the shim.
	StorageReads, StorageFailures uint64
	// StorageWrites counts writes (SETs, INCRs, commands of package
	// rediscmd) the client sent to a key's Redis itself
	// (spec.dataPlane.directWrites) and Redis applied; HeldWrites those
	// Redis refused because a cache may hold the key, which went through
	// the shim.
	StorageWrites, HeldWrites uint64
	// Atomics counts transactions, scripts and commands of several keys
	// that Redis ran for the client (atomic.go); Releases the keys their
	// writes took out of the caches first.
	Atomics, Releases uint64
	// Ties counts routing decisions among equally loaded candidates.
	Ties uint64
	// CrossZoneReads counts reads routed to a cache node in another zone
	// than the client's (Config.Zone); 0 while the client's zone is
	// unknown.
	CrossZoneReads uint64
	// Hedges counts reads that also asked a second candidate after
	// HedgeDelay; HedgeWins those the second candidate answered first.
	Hedges, HedgeWins uint64
	// LeafReads counts GETs sent through the client leaf
	// (Config.ClientLeaf); LeafFallbacks those of them the leaf did not
	// answer in time, or answered with a refusal, which the client then
	// read by its own choice.
	LeafReads, LeafFallbacks uint64
	// Refreshes counts reads of Config.Maps: a reply carried a newer map
	// version than the client's.
	Refreshes uint64
	// LayerHits counts hits per cache layer, indexed like the map's
	// layers (as long as the largest map seen).
	LayerHits []uint64
	// Transport is the endpoint's traffic.
	Transport transport.Stats
}

// counters are the live Stats counters.
type counters struct {
	gets, hits, misses, notFound, puts, deletes atomic.Uint64
	rmws                                        atomic.Uint64
	retries, timeouts, errors, directReads      atomic.Uint64
	ties, refreshes, hedges, hedgeWins          atomic.Uint64
	crossZone                                   atomic.Uint64
	leafReads, leafFallbacks                    atomic.Uint64
	storageReads, storageFailures               atomic.Uint64
	storageWrites, heldWrites                   atomic.Uint64
	atomics, releases                           atomic.Uint64
}

// layerHits holds the per-layer hit counters. The counters are pointers, so
// a view built before the list grew still counts into the same counters.
type layerHits struct {
	mu sync.Mutex // guards list (grow only) and metric
	// list[l] counts hits in layer l; it only grows.
	list   []*atomic.Uint64
	metric *prometheus.CounterVec // distcache_client_layer_hits_total{layer}
}

func newLayerHits(reg prometheus.Registerer) (*layerHits, error) {
	h := &layerHits{metric: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "distcache_client_layer_hits_total",
		Help: "Reads served from a cache node's copy, by cache layer (the layer's name in the partition map).",
	}, []string{"layer"})}
	if err := metrics.Register(reg, h.metric); err != nil {
		return nil, err
	}
	return h, nil
}

// layerCounter is a view's handle on one layer's hit counters.
type layerCounter struct {
	n      *atomic.Uint64
	metric prometheus.Counter
}

// forLayers returns the counters of layers named names (by index), growing
// the list as needed.
func (h *layerHits) forLayers(names []string) []layerCounter {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.list) < len(names) {
		h.list = append(h.list, new(atomic.Uint64))
	}
	out := make([]layerCounter, len(names))
	for i, name := range names {
		out[i] = layerCounter{n: h.list[i], metric: h.metric.WithLabelValues(name)}
	}
	return out
}

func (h *layerHits) snapshot() []uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]uint64, len(h.list))
	for i, n := range h.list {
		out[i] = n.Load()
	}
	return out
}

// Stats returns the Client's counters.
func (c *Client) Stats() Stats {
	s := &c.stats
	return Stats{
		Gets: s.gets.Load(), Hits: s.hits.Load(), Misses: s.misses.Load(),
		NotFound: s.notFound.Load(), Puts: s.puts.Load(), Deletes: s.deletes.Load(), RMWs: s.rmws.Load(),
		Retries: s.retries.Load(), Timeouts: s.timeouts.Load(), Errors: s.errors.Load(),
		DirectReads: s.directReads.Load(), Ties: s.ties.Load(), CrossZoneReads: s.crossZone.Load(), Refreshes: s.refreshes.Load(),
		Hedges: s.hedges.Load(), HedgeWins: s.hedgeWins.Load(),
		LeafReads: s.leafReads.Load(), LeafFallbacks: s.leafFallbacks.Load(),
		StorageReads: s.storageReads.Load(), StorageFailures: s.storageFailures.Load(),
		StorageWrites: s.storageWrites.Load(), HeldWrites: s.heldWrites.Load(),
		Atomics: s.atomics.Load(), Releases: s.releases.Load(),
		LayerHits: c.layerHits.snapshot(),
		Transport: c.ep.Stats(),
	}
}

// registerMetrics registers the client's Prometheus metrics with reg. A
// registration conflict (e.g. two clients sharing reg) is an error rather
// than a panic.
func (c *Client) registerMetrics(reg prometheus.Registerer) error {
	var err error
	if c.requests, err = metrics.NewRequests(reg); err != nil {
		return fmt.Errorf("cannot register client metrics: %w", err)
	}
	if c.layerHits, err = newLayerHits(reg); err != nil {
		return fmt.Errorf("cannot register client metrics: %w", err)
	}
	if err := metrics.RegisterTransport(reg, c.ep); err != nil {
		return fmt.Errorf("cannot register client metrics: %w", err)
	}
	if err := metrics.Register(reg,
		metrics.CounterFunc("distcache_client_hedged_reads_total",
			"Reads a cache node had not answered after HedgeDelay, also sent to another candidate for its copy.", c.stats.hedges.Load),
		metrics.CounterFunc("distcache_client_hedge_wins_total",
			"Hedged reads answered by the hedge first.", c.stats.hedgeWins.Load),
		metrics.CounterFunc("distcache_client_cross_zone_reads_total",
			"Reads routed to a cache node in another zone than the client's.", c.stats.crossZone.Load),
		metrics.CounterFunc("distcache_client_leaf_reads_total",
			"GETs sent through the client leaf switch.", c.stats.leafReads.Load),
		metrics.CounterFunc("distcache_client_leaf_fallbacks_total",
			"GETs through the client leaf that it did not answer in time or that were refused, read by the client's own choice.", c.stats.leafFallbacks.Load),
	); err != nil {
		return fmt.Errorf("cannot register client metrics: %w", err)
	}
	return nil
}
