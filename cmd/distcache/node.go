package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/metrics"
)

// emulatedCapacityHelp documents --emulated-capacity of node and shim.
const emulatedCapacityHelp = "work units per second this process may do, emulating a slower server as the paper's testbed does (§6.1); 0 = unlimited"

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
			log, w, err := o.load()
			if err != nil {
				return err
			}
			m := w.Current().Map()
			l, i, ok := m.Member(member)
			if !ok {
				return fmt.Errorf("cannot run node: member %q is not in the partition map %s", member, o.mapFile)
			}
			cfg.Layer, cfg.Member = m.Layers[l].Name, member
			cfg.Transport = o.transport(m.Layers[l].Members[i].Address, log)
			reg, wrapped := metrics.Registry("node", member)
			cfg.Registerer, cfg.Logger = wrapped, log // the node adds its layer and member
			n, err := cachenode.New(cfg)
			if err != nil {
				return err
			}
			return serve(cmd, &o, w, n, reg, nil, log.With("member", member), "addr", n.Addr(), "layer", cfg.Layer)
		},
	}
	o.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&member, "member", "", "this node's member name in the partition map")
	f.IntVar(&cfg.Capacity, "capacity", 10000, "cache capacity in entries")
	f.Int64Var(&cfg.CapacityBytes, "capacity-bytes", 64<<20, "cache capacity in value bytes")
	f.DurationVar(&cfg.Interval, "interval", 0, "hot-key insertion period (default 1s)")
	f.Uint32Var(&cfg.Detector.Threshold, "hot-threshold", 0, "misses in an interval that make a key a candidate (default 128)")
	f.Float64Var(&cfg.EmulatedRate, "emulated-capacity", 0, emulatedCapacityHelp)
	_ = cmd.MarkFlagRequired("member")
	return cmd
}
