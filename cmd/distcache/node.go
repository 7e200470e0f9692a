package main

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/dataplane/metrics"
)

// emulatedCapacityHelp documents --emulated-capacity of node and shim.
const emulatedCapacityHelp = "work units per second this process may do, emulating a slower server as the paper's testbed does (§6.1); 0 = unlimited"

// servingLeaseHelp documents --serving-lease of node and shim, which must
// agree.
const servingLeaseHelp = "how long a cache node serves a shim's keys from its cache after it asked that shim for a lease (with --shim-leases=false: after a read of its map found it Active); shims stop waiting for a node that left a key, or stopped answering, after it (every node and shim of a cluster must use the same value)"

// A cache node reports the miss-ratio curve of its reads at GET /mrc.
var _ missRatioCurveReporter = (*cachenode.Node)(nil)

func newNodeCommand() *cobra.Command {
	var (
		o      serveOptions
		member string
		cfg    cachenode.Config
	)
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run a cache node: serve hot keys of its partition, forward misses to the storage shims",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, w, err := o.load(cmd.Context())
			if err != nil {
				return err
			}
			m := w.Current().Map()
			l, i, ok := m.Member(member)
			if !ok {
				return fmt.Errorf("cannot run node: member %q is not in the partition map %s", member, w.Source())
			}
			cfg.Layer, cfg.Member = m.Layers[l].Name, member
			cfg.Transport = o.transport(m.Layers[l].Members[i].Address, log)
			cfg.Transport.Sender = "node/" + member // one sender across restarts
			reg, wrapped := metrics.Registry("node", member)
			cfg.Registerer, cfg.Logger = wrapped, log // the node adds its layer and member
			if err := o.key.register(wrapped); err != nil {
				return err
			}
			if !cfg.ShimLeases && o.mapPoll*3 > cfg.Lease {
				return fmt.Errorf("cannot run node: --map-poll %v must be at most a third of --serving-lease %v: without --shim-leases the node renews its lease by reading the map",
					o.mapPoll, cfg.Lease)
			}
			cfg.MapBehind = reloadOnce(w, log)
			n, err := cachenode.New(cfg)
			if err != nil {
				return err
			}
			w.OnRead(func(at time.Time, version int64) { n.Renew(at, version) })
			return serve(cmd, &o, w, n, reg, nil, log.With("member", member), "addr", n.Addr(), "layer", cfg.Layer)
		},
	}
	o.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&member, "member", "", "this node's member name in the partition map")
	f.IntVar(&cfg.Capacity, "capacity", 10000, "cache capacity in entries")
	f.Int64Var(&cfg.CapacityBytes, "capacity-bytes", 64<<20, "cache capacity in value bytes")
	f.DurationVar(&cfg.Interval, "interval", 0, "hot-key insertion period (default 1s)")
	f.Uint32Var(&cfg.Detector.Threshold, "hot-threshold", 0, "misses in an interval that make a key a candidate (default: adapted to the node's traffic every interval)")
	f.Float64Var(&cfg.EmulatedRate, "emulated-capacity", 0, emulatedCapacityHelp)
	f.DurationVar(&cfg.ParkTimeout, "park-timeout", cachenode.DefaultParkTimeout,
		"how long a read of a key whose write is pending waits for the write's phase 2 before the readers parked on it share one storage read")
	f.DurationVar(&cfg.Lease, "serving-lease", cachenode.DefaultLease, servingLeaseHelp)
	f.BoolVar(&cfg.ShimLeases, "shim-leases", true,
		"serve a storage shard's keys from the cache only under a lease its shim grants, so that a shim writes them without this node once the lease ends if the node stops answering")
	f.DurationVar(&o.drain, "drain-timeout", 0,
		"on SIGTERM, refuse reads and keep acknowledging writes' invalidations until the map has shown the node not Active for twice its lease, for at most this long (0: stop at once)")
	f.DurationVar(&cfg.MRCWindow, "mrc-window", cachenode.DefaultMRCWindow,
		"window of the miss-ratio curve GET /mrc reports: the last complete one (negative: the reads since start)")
	_ = cmd.MarkFlagRequired("member")
	return cmd
}

// reloadOnce returns a cachenode.Config.MapBehind that reads w's source
// at once, on a goroutine of its own, one read at a time: a shim granted
// a lease under a map the node has not installed yet.
func reloadOnce(w *mapwatch.Watcher, log *slog.Logger) func(version int64) {
	var reading atomic.Bool
	return func(version int64) {
		if !reading.CompareAndSwap(false, true) {
			return
		}
		go func() {
			defer reading.Store(false)
			if _, err := w.Reload(); err != nil {
				log.Warn("cannot read the partition map a shim already has", "version", version, "err", err)
			}
		}()
	}
}
