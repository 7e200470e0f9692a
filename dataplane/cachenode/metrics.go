package cachenode

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/metrics"
)

// registerMetrics registers the node's metrics with reg: the shared request
// and transport metrics (package metrics) and the cache's own gauges and
// counters, all read from the node's counters at scrape time.
func (n *Node) registerMetrics(reg prometheus.Registerer) error {
	var err error
	if n.reqs, err = metrics.NewRequests(reg); err != nil {
		return fmt.Errorf("cannot register cache node metrics: %w", err)
	}
	if err := metrics.RegisterTransport(reg, n.ep); err != nil {
		return fmt.Errorf("cannot register cache node metrics: %w", err)
	}
	gauge, counter := metrics.GaugeFunc, metrics.CounterFunc
	if err := metrics.Register(reg,
		gauge("distcache_cache_items", "Entries cached, placeholders of pending insertions included.",
			func() float64 { return float64(n.store.items.Load()) }),
		gauge("distcache_cache_bytes", "Value bytes cached.",
			func() float64 { return float64(n.store.bytes.Load()) }),
		gauge("distcache_node_load", "Load stamped into replies: decayed queries per load window.",
			func() float64 { return float64(n.loadAt(n.now(time.Now()))) }),
		gauge("distcache_map_version", "Version of the partition map the node uses (0 before the first).",
			func() float64 {
				if v := n.view.Load(); v != nil {
					return float64(v.version)
				}
				return 0
			}),
		counter("distcache_evictions_total", "Cache entries evicted to make room for hotter keys.", n.stats.evictions.Load),
		counter("distcache_insertions_total", "Hot keys inserted into the cache (placeholders added).", n.stats.inserts.Load),
		counter("distcache_coalesced_requests_total", "Misses that joined a pending backend read of the same key.", n.stats.coalesced.Load),
		counter("distcache_parked_requests_total", "Misses that waited for a pending write's phase 2 instead of reading the shim.", n.stats.parked.Load),
		counter("distcache_parked_forwarded_total", "Parked misses sent to the shim after all: the write's phase 2 was late, lost or failed.", n.stats.parkForwarded.Load),
		counter("distcache_park_skipped_total", "Misses during a pending write that did not park: a reader had already waited for its late phase 2.", n.stats.parkSkipped.Load),
		gauge("distcache_lease_valid", "1 while the node holds its serving leases (it serves cached values): the lease of every storage shim whose keys it caches, or without shim leases its map lease; else 0.",
			func() float64 {
				if n.leasedNow() {
					return 1
				}
				return 0
			}),
		counter("distcache_lease_starts_total", "Serving leases started after the previous one had run out (or at start): a node that stops reading its map stops serving.", n.lease.expiries.Load),
		counter("distcache_shim_lease_grants_total", "Leases the storage shims granted the node: it serves a shim's keys from its cache only while it holds that shim's lease.", n.shims.grants.Load),
		counter("distcache_shim_lease_flushes_total", "Times the node dropped a shim's entries for a lease of a new epoch: the shim wrote its keys without the node's acknowledgement once the last lease ended.", n.shims.flushes.Load),
		counter("distcache_shim_lease_failures_total", "Renewals of a shim's lease unanswered or refused; the node serves none of the shim's keys from its cache once the lease ends.", n.shims.failures.Load),
		counter("distcache_shim_lease_map_behind_total", "Grants of a shim's lease not applied because the shim's partition map was newer than the node's; the node reads its map at once.", n.shims.behind.Load),
		counter("distcache_stale_epoch_values_total", "UPDATEs and fills not applied because the shim sent them in an epoch the node no longer (or not yet) holds.", n.shims.staleEpochs.Load),
		counter("distcache_unleased_reads_total", "Reads of a valid copy served from storage because the serving lease had run out.", n.stats.unleased.Load),
		counter("distcache_refused_reads_total", "Reads refused: with not_owner because the node is not Active (Fenced or Failed) in its map, with unavailable while it drains to stop.", n.stats.refused.Load),
		counter("distcache_backend_batches_total", "Backend reads of several misses for one shim sent together (the misses of one receive batch).", n.stats.backendBatches.Load),
		counter("distcache_backend_batched_reads_total", "Misses whose backend read was sent in such a batch.", n.stats.backendBatched.Load),
		counter("distcache_negative_fills_total", "Insertions of keys storage does not hold, cached as negative entries: reads of them are answered not found from the node.", n.stats.negativeFills.Load),
		counter("distcache_untracked_rereads_total", "Coalesced readers sent to storage again: the shim's reply did not promise to keep invalidating this node for the key.", n.stats.untracked.Load),
		counter("distcache_cache_only_misses_total", "Hedged reads (FlagCacheOnly) refused without a valid copy; the backend is not read for them.", n.stats.cacheOnlyRefused.Load),
		counter("distcache_direct_misses_total", "Misses answered at once because the reader reads storage itself (FlagDirect, spec.dataPlane.directReads).", n.stats.directMisses.Load),
		counter("distcache_work_units_total", "Work units taken from the emulated capacity: 1 per hit, 1 per INVALIDATE and per UPDATE of a held key.", n.work.Used),
		gauge("distcache_work_capacity", "Emulated capacity in work units per second (0: unlimited).", n.work.Rate),
		counter("distcache_hotkey_misses_total", "Misses of uncached keys the hot-key detector counted: the candidates it has seen.",
			func() uint64 { return n.det.Stats().Misses }),
		counter("distcache_hotkey_tracked_hits_total", "Hits on cached keys the hot-key detector counted, which decide evictions.",
			func() uint64 { return n.det.Stats().Hits }),
		counter("distcache_hotkey_reports_total", "Uncached keys the detector reported hot (over the threshold in an interval) to the insertion planner.",
			func() uint64 { return n.det.Stats().Reports }),
		counter("distcache_hotkey_reports_dropped_total", "Hot keys not reported because an interval's report list was full.",
			func() uint64 { return n.det.Stats().DroppedReports }),
		counter("distcache_hotkey_intervals_total", "Hot-key detection intervals ended (each insertion interval).",
			func() uint64 { return n.det.Stats().Intervals }),
		gauge("distcache_hotkey_threshold", "Misses of an uncached key in one interval that report it hot: fixed by spec.hotKeys.threshold, else adapted to the node's traffic every interval.",
			func() float64 { return float64(n.det.Stats().Threshold) }),
		gauge("distcache_hotkey_sketch_hot_cells_ratio", "Fraction of the Count-Min sketch's counters at or over the hot threshold when the last interval ended; a growing ratio means keys that are not hot get reported (widen the sketch).",
			n.det.HotCellRatio),
	); err != nil {
		return fmt.Errorf("cannot register cache node metrics: %w", err)
	}
	return nil
}
